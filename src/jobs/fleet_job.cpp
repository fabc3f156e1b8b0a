#include "heft/jobs/fleet_job.hpp"

#include "python_tool.hpp"

namespace heft::jobs {

std::vector<std::string> FleetJob::commandLine(const Args& args, const std::string& heft) {
  const PythonTool tool = pythonTool("fleet.py");
  std::vector<std::string> argv{tool.python, tool.script, args.manifest,
                                "--out",     args.out,    "--heft",
                                heft,        "--workers", std::to_string(args.workers)};
  if (!args.report) argv.push_back("--no-report");
  if (!args.scheduler.empty()) {
    argv.push_back("--scheduler");
    argv.push_back(args.scheduler);
  }
  return argv;
}

}  // namespace heft::jobs
