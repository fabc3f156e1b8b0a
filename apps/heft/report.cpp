// heft report RESULT_DIR [RESULT_DIR...] --out report.html: one self-contained HTML page of plots
// and tables from heft identify / heft sample runs (docs/guide/report.md).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "command.hpp"
#include "heft/jobs/report_job.hpp"

namespace {

struct ReportArgs {
  std::vector<std::string> folders;
  std::string out;
  bool overwrite = false;
};

std::function<int()> setupReport(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  app.add_option("RESULT_DIR", args->folders,
                 "output folders of heft identify, sample, estimate or filter (one robot); several "
                 "are shown "
                 "side by side")
      ->required();
  app.add_option("--out", args->out, "the HTML page to write")->required();
  app.add_flag("--overwrite", args->overwrite, "replace an existing page");
  return [args] {
    heft::jobs::WriteOptions write;
    write.overwrite = args->overwrite;
    const std::string written = heft::jobs::ReportJob::run(args->folders, args->out, write);
    std::cout << "wrote " << written << "\n";
    return 0;
  };
}

const heft::cli::Registration registration{
    "report",
    "Draw one self-contained HTML page from heft identify / sample / estimate / filter output "
    "folders: torque fits with the held-out range, residuals, parameters with prior / estimate / "
    "std / truth, inertia boxes, correlations, trajectories, filter estimates",
    &setupReport};

}  // namespace
