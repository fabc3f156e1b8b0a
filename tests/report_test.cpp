// heft report: the pages drawn from real runs (the bundled panda-friction and go2 identify
// examples, the go2 estimate example, the TALOS forearm filter example) open in headless Chromium
// (Debian's; scripts/bootstrap.sh installs it) without a script error and with every plot; bad
// input is one line and exit 2.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "heft/jobs/report_job.hpp"
#include "support/heft_cli.hpp"
#include "support/scratch.hpp"

namespace fs = std::filesystem;

namespace {

std::string text(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (std::size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1))
    ++n;
  return n;
}

// The DOM after the page loaded and its scripts ran, from headless Chromium.
std::string renderedDom(const fs::path& page, const fs::path& dom) {
  const std::string command = "chromium --headless --no-sandbox --disable-gpu --dump-dom file://" +
                              fs::absolute(page).string() + " > " + dom.string() + " 2>/dev/null";
  const int status = std::system(command.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "chromium failed (scripts/bootstrap.sh installs Debian's chromium)";
  return text(dom);
}

fs::path identify(const fs::path& dir, const std::string& example) {
  const fs::path out = dir / example;
  EXPECT_EQ(heft::test::runHeft("identify " + std::string(HEFT_SOURCE_DIR) + "/data/examples/" +
                                    example + " --out " + out.string() + " --quiet",
                                dir / "identify.err"),
            0)
      << text(dir / "identify.err");
  return out;
}

}  // namespace

TEST(Report, PagesOfEveryKindOfRunRenderInHeadlessChromium) {
  const fs::path dir = heft::test::scratchPath("report", "render-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string examples = std::string(HEFT_SOURCE_DIR) + "/data/examples/";
  // heft estimate on the go2 example; heft filter on 3 s of talos-forearm-step
  const fs::path estimate = dir / "go2-estimate";
  ASSERT_EQ(heft::test::runHeft("estimate " + examples + "go2_payload_estimate.yaml --out " +
                                    estimate.string() + " --quiet",
                                dir / "estimate.err"),
            0)
      << text(dir / "estimate.err");
  const fs::path forearm_log = dir / "talos-forearm-step.h5";
  ASSERT_EQ(heft::test::runHeft("simulate talos-forearm-step --duration 3 --force-torque --out " +
                                    forearm_log.string() + " --quiet",
                                dir / "simulate.err"),
            0);
  const fs::path filter = dir / "forearm-filter";
  ASSERT_EQ(heft::test::runHeft("filter " + examples + "talos_forearm_filter.yaml --log " +
                                    forearm_log.string() + " --out " + filter.string() + " --quiet",
                                dir / "filter.err"),
            0)
      << text(dir / "filter.err");
  struct Case {
    std::string name;
    fs::path result;
    std::vector<std::string> expected;  // text the page must show
    int min_plots;
  };
  const std::vector<Case> cases{
      {"panda identify",
       identify(dir, "panda_friction_identify.yaml"),
       {"heft report: panda", "(heft identify)", "panda_link7", "Held-out prediction",
        "identified RMSE", "<b>all</b>", "Equivalent inertia boxes", "Coulomb"},
       5},
      {"go2 identify",
       identify(dir, "go2_payload_identify.yaml"),
       {"heft report: go2", "10.277", "projected[0]", "Correlation of the identified"},
       5},
      {"go2 estimate",
       estimate,
       {"(heft estimate)", "10.277", "Joint positions: estimated and measured", "FL_calf_joint",
        "joint_position_rad"},
       3},
      {"talos filter",
       filter,
       {"heft report: talos", "(heft filter)", "mass with its 2-sigma band", "truth",
        "log-cholesky-ekf", "linear-pi-kf"},
       1}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path page = dir / (c.result.filename().string() + ".html");
    ASSERT_EQ(heft::jobs::ReportJob::run({c.result.string()}, page.string()), page.string());
    const std::string html = text(page);
    for (const std::string& t : c.expected) EXPECT_NE(html.find(t), std::string::npos) << t;
    EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org"))
        << "no network at view time (only SVG namespaces)";
    EXPECT_EQ(html.find("https://"), std::string::npos);
    const int plots = count(html, "<svg");
    EXPECT_GE(plots, c.min_plots);
    const std::string dom = renderedDom(page, dir / (c.result.filename().string() + ".dom.html"));
    EXPECT_NE(dom.find("data-rendered=\"ok\""), std::string::npos) << dom.substr(0, 400);
    EXPECT_NE(dom.find("data-svgs=\"" + std::to_string(plots) + "\""), std::string::npos)
        << "every plot in the rendered page";
  }
}

TEST(Report, BadInputIsOneLineNamingItAndExitTwo) {
  const fs::path dir = heft::test::scratchPath("report", "bad-" + std::to_string(::getpid()));
  fs::create_directories(dir / "empty");
  fs::create_directories(dir / "other-job");
  std::ofstream(dir / "other-job" / "result.json") << "{\"schema_version\": 1, \"method\": "
                                                      "\"batch-map\"}\n";
  const fs::path panda = identify(dir, "panda_friction_identify.yaml");
  const fs::path go2 = identify(dir, "go2_payload_identify.yaml");
  std::ofstream(dir / "existing.html") << "keep me\n";
  struct Case {
    std::string arguments, expected;
  };
  const std::string out = " --out " + (dir / "out.html").string();
  const std::vector<Case> cases{
      {panda.string() + " " + go2.string() + out, "different robots: panda"},
      {(dir / "empty").string() + out, "empty: expected an output folder"},
      {(dir / "other-job").string() + out, "result.json: expected the result of heft identify"},
      {panda.string() + " --out " + (dir / "existing.html").string(), "existing one"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.arguments);
    EXPECT_EQ(heft::test::runHeft("report " + c.arguments, dir / "err.txt"), 2);
    const std::string err = text(dir / "err.txt");
    EXPECT_NE(err.find(c.expected), std::string::npos) << err;
    EXPECT_EQ(count(err, "\n"), 1) << err;
    EXPECT_FALSE(fs::exists(dir / "out.html"));
  }
  EXPECT_EQ(text(dir / "existing.html"), "keep me\n");
}
