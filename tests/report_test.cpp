// heft report: the page drawn from real heft identify outputs (the bundled panda-friction and go2
// examples) opens in headless Chromium (Debian's; scripts/bootstrap.sh installs it) without a
// script error and with every plot; bad input is one line and exit 2.
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

TEST(Report, PagesOfThePandaAndGo2ExamplesRenderInHeadlessChromium) {
  const fs::path dir = heft::test::scratchPath("report", "render-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  struct Case {
    std::string example;
    std::vector<std::string> expected;  // text the page must show
  };
  const std::vector<Case> cases{
      {"panda_friction_identify.yaml",
       {"heft report: panda", "panda_link7", "Held-out prediction", "identified RMSE", "<b>all</b>",
        "Equivalent inertia boxes", "Coulomb"}},
      {"go2_payload_identify.yaml",
       {"heft report: go2", "10.277", "projected[0]", "Correlation of the identified"}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.example);
    const fs::path result = identify(dir, c.example);
    const fs::path page = dir / (c.example + ".html");
    ASSERT_EQ(heft::jobs::ReportJob::run({result.string()}, page.string()), page.string());
    const std::string html = text(page);
    for (const std::string& t : c.expected) EXPECT_NE(html.find(t), std::string::npos) << t;
    EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org"))
        << "no network at view time (only SVG namespaces)";
    EXPECT_EQ(html.find("https://"), std::string::npos);
    const int plots = count(html, "<svg");
    EXPECT_GE(plots, 5);
    const std::string dom = renderedDom(page, dir / (c.example + ".dom.html"));
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
