// Every heft job from Python: a config (YAML text, or a file) in, the job's result object out.
// The package's __init__.py turns a dict into JSON text (YAML reads JSON), so a dict, a YAML string
// and a config file all go through the same parser and validation as the CLI's, and a result is
// the very object the CLI writes: result.write() gives the CLI's files.
#include <nanobind/eigen/dense.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "heft/jobs/base_state_job.hpp"
#include "heft/jobs/estimate_job.hpp"
#include "heft/jobs/excite_job.hpp"
#include "heft/jobs/explore_job.hpp"
#include "heft/jobs/filter_job.hpp"
#include "heft/jobs/fuse_job.hpp"
#include "heft/jobs/identify_job.hpp"
#include "heft/jobs/import_bag_job.hpp"
#include "heft/jobs/mjcf_export.hpp"
#include "heft/jobs/predict_job.hpp"
#include "heft/jobs/report_job.hpp"
#include "heft/jobs/sample_job.hpp"
#include "heft/jobs/simulate_job.hpp"

namespace heft::python {

namespace {

jobs::WriteOptions writeOptions(bool overwrite) {
  jobs::WriteOptions options;
  options.overwrite = overwrite;
  return options;
}

/// Result.write(out, overwrite=False): the job's own write(), whatever `out` is (a folder or a
/// log).
template <class Job>
void addWrite(nb::class_<typename Job::Result>& cls, const char* doc) {
  cls.def(
      "write",
      [](const typename Job::Result& r, const std::string& out, bool overwrite) {
        return Job::write(r, out, writeOptions(overwrite));
      },
      nb::arg("out"), nb::kw_only(), nb::arg("overwrite") = false, doc);
}

/// Where a job's result.json keeps its status: summary.status (identify, estimate, sample),
/// status (explore), optimizer.status (excite).
std::string recordedStatus(const nlohmann::json& j) {
  for (const char* group : {"summary", "optimizer"}) {
    const auto it = j.find(group);
    if (it != j.end() && it->is_object() && it->contains("status") && (*it)["status"].is_string())
      return (*it)["status"].get<std::string>();
  }
  const auto status = j.find("status");
  return status != j.end() && status->is_string() ? status->get<std::string>()
                                                  : std::string("completed");
}

template <class Job>
typename Job::Result runJob(const typename Job::Config& config, nb::object progress) {
  jobs::Progress sink = progressTo(std::move(progress));
  nb::gil_scoped_release release;  // long runs; progress lines re-take the GIL
  return Job::run(config, sink);
}

/// A job of the common shape: parse / load, run, write, report, toJson. Registers
/// _<name>_text(text, source, base_dir, progress) and _<name>_file(path, progress).
template <class Job>
nb::class_<typename Job::Result> bindJob(nb::module_& m, const std::string& name,
                                         const char* result_class) {
  using Result = typename Job::Result;
  auto cls = nb::class_<Result>(m, result_class)
                 .def("report", &Result::report, "the report a person reads (what the CLI prints)")
                 .def(
                     "to_dict", [](const Result& r) { return toPython(r.toJson()); },
                     "result.json as a dict")
                 .def_prop_ro(
                     "status", [](const Result& r) { return recordedStatus(r.toJson()); },
                     "the status result.json records (summary.status, status or optimizer.status); "
                     "'completed' for a job that records none (filter, predict)");
  addWrite<Job>(
      cls, "writes the CLI's output files into the folder `out` atomically; returns their paths");
  m.def(("_" + name + "_text").c_str(),
        [](const std::string& text, const std::string& source, const std::string& base_dir,
           nb::object progress) {
          return runJob<Job>(Job::parse(text, source, base_dir), std::move(progress));
        },
        nb::arg("text"), nb::arg("source"), nb::arg("base_dir"), nb::arg("progress").none());
  m.def(("_" + name + "_file").c_str(),
        [](const std::string& path, nb::object progress) {
          return runJob<Job>(Job::load(path), std::move(progress));
        },
        nb::arg("path"), nb::arg("progress").none());
  return cls;
}

/// Measured and predicted torque per row of an identify problem, as numpy arrays.
nb::dict torqueRows(const jobs::IdentifyJob::Result& r) {
  using Rows = jobs::IdentifyJob::Result::TorqueRows;
  const Rows& t = r.torques;
  const auto vec = [](const std::vector<double>& v) {
    return Eigen::VectorXd(Eigen::Map<const Eigen::VectorXd>(v.data(), Eigen::Index(v.size())));
  };
  const auto ints = [](const auto& v) {
    Eigen::VectorXi out(Eigen::Index(v.size()));
    for (std::size_t i = 0; i < v.size(); ++i) out[Eigen::Index(i)] = int(v[i]);
    return out;
  };
  nb::dict d;
  d["recording"] = ints(t.recording);
  d["time"] = vec(t.time);
  d["channel"] = ints(t.channel);
  d["held_out"] = ints(t.held_out);
  d["measured"] = vec(t.measured);
  d["nominal"] = vec(t.nominal);
  d["identified"] = vec(t.identified);
  return d;
}

void bindIdentify(nb::module_& m) {
  using R = jobs::IdentifyJob::Result;
  bindJob<jobs::IdentifyJob>(m, "identify", "IdentifyResult")
      .def_prop_ro("writable", &R::writable, "a URDF may be written (converged and consistent)")
      .def_prop_ro("refusal", &R::refusal, "why no URDF is written ('' when writable)")
      .def_ro("message", &R::message)
      .def_ro("iterations", &R::iterations)
      .def_ro("names", &R::names, "names of the entries of `linear`")
      .def_ro("linear", &R::linear, "the identified vector: pi_S, friction, armature")
      .def_ro("covariance", &R::covariance, "covariance of `linear`")
      .def_prop_ro(
          "std", [](const R& r) { return Eigen::VectorXd(r.covariance.diagonal().cwiseSqrt()); },
          "one-sigma of `linear`")
      .def_ro("channel_names", &R::channel_names)
      .def_ro("rms_before", &R::rms_before, "torque residual RMS per channel, nominal model")
      .def_ro("rms_after", &R::rms_after, "torque residual RMS per channel, identified model")
      .def_ro("rank", &R::rank)
      .def_ro("dimension", &R::dimension)
      .def_ro("condition_number", &R::condition_number)
      .def_ro("base_parameters", &R::base_parameters)
      .def_ro("warnings", &R::warnings)
      .def_prop_ro("torques", &torqueRows,
                   "measured and predicted torque per row (torques.csv's columns)");
}

void bindFilterJob(nb::module_& m) {
  nb::class_<filter::FilterTrace>(m, "FilterTrace", "one filter's estimates over a replay")
      .def_ro("estimator", &filter::FilterTrace::estimator)
      .def_ro("series", &filter::FilterTrace::series)
      .def_ro("update_median_us", &filter::FilterTrace::update_median_us)
      .def_ro("update_max_us", &filter::FilterTrace::update_max_us);
  bindJob<jobs::FilterJob>(m, "filter", "FilterResult")
      .def_ro("bodies", &jobs::FilterJob::Result::bodies)
      .def_ro("traces", &jobs::FilterJob::Result::traces, "the main filter, then the baseline");
}

void bindSimulate(nb::module_& m) {
  using Job = jobs::SimulateJob;
  nb::class_<Job::Result> simulate(m, "SimulateResult");
  simulate.def("report", &Job::Result::report)
      .def_prop_ro("ok", &Job::Result::ok, "ran to its end: the log may be written")
      .def_prop_ro(
          "log", [](const Job::Result& r) { return r.simulation.log; },
          "the simulated log (a copy), truth group included");
  addWrite<Job>(simulate, "writes the log (.h5: HDF5, else a CSV folder); SolveError when not ok");
  m.def(
      "_simulate",
      [](const std::string& scenario, bool is_file, std::optional<double> duration,
         std::optional<std::uint64_t> seed, std::optional<std::string> noise, bool force_torque,
         nb::object progress) {
        Job::Config config = is_file ? Job::load(scenario) : Job::builtIn(scenario);
        if (duration) config.options.duration = *duration;
        if (seed) config.options.seed = *seed;
        if (noise) config.options.noise = *noise;
        config.options.force_torque = config.options.force_torque || force_torque;
        config.validate();
        return runJob<Job>(config, std::move(progress));
      },
      nb::arg("scenario"), nb::arg("is_file"), nb::arg("duration").none(), nb::arg("seed").none(),
      nb::arg("noise").none(), nb::arg("force_torque"), nb::arg("progress").none());
  m.def("scenarios", &Job::list, "the built-in scenarios, one line each");
}

void bindLogJobs(nb::module_& m) {
  using Import = jobs::ImportBagJob;
  nb::class_<Import::Result> imported(m, "ImportResult");
  imported.def("report", &Import::Result::report)
      .def_ro("log", &Import::Result::log)
      .def_ro("origin_ns", &Import::Result::origin_ns, "the bag stamp that is time 0 [ns]");
  addWrite<Import>(imported, "writes the log (.h5: HDF5, else a CSV folder) atomically");
  m.def(
      "_import_bag",
      [](const std::string& bag, const std::string& text, const std::string& source,
         const std::string& base_dir, nb::object progress) {
        Import::Config config;
        Import::parseMapping(text, source, base_dir, config);
        config.bag = bag;
        return runJob<Import>(config, std::move(progress));
      },
      nb::arg("bag"), nb::arg("text"), nb::arg("source"), nb::arg("base_dir"),
      nb::arg("progress").none());

  using Base = jobs::BaseStateJob;
  nb::class_<Base::Result> base(m, "BaseStateResult");
  base.def("report", &Base::Result::report)
      .def("to_dict", [](const Base::Result& r) { return toPython(r.toJson()); })
      .def_ro("log", &Base::Result::log, "the input log with joints.base_pose / base_twist filled");
  addWrite<Base>(base, "writes the log with the base state, and result.json beside it");
  m.def(
      "_base_state",
      [](const std::string& robot, const std::string& log, const std::string& text,
         const std::string& source, nb::object progress) {
        Base::Config config;
        config.robot = robot;
        config.log = log;
        if (!text.empty()) Base::parseOptions(text, source, config);
        return runJob<Base>(config, std::move(progress));
      },
      nb::arg("robot"), nb::arg("log"), nb::arg("text"), nb::arg("source"),
      nb::arg("progress").none());
}

void bindOutputs(nb::module_& m) {
  m.def(
      "report",
      [](const std::vector<std::string>& folders, const std::string& out, bool overwrite) {
        nb::gil_scoped_release release;
        return jobs::ReportJob::run(folders, out, writeOptions(overwrite));
      },
      nb::arg("folders"), nb::arg("out"), nb::kw_only(), nb::arg("overwrite") = false,
      "heft report: one offline HTML page over result folders of one robot; returns its path");
  m.def(
      "export_mjcf",
      [](const std::string& result_json, const std::string& model, const std::string& out,
         bool overwrite) {
        return jobs::MjcfExport::write(result_json, model, out, writeOptions(overwrite));
      },
      nb::arg("result_json"), nb::arg("model"), nb::arg("out"), nb::kw_only(),
      nb::arg("overwrite") = false,
      "heft mjcf: an identify / estimate result.json patched into a MuJoCo model; returns the "
      "notes (what MJCF has no field for)");
  m.def(
      "export_simulation_model",
      [](const std::string& robot, const std::string& out, const std::string& result_json,
         bool overwrite) {
        return jobs::MjcfExport::writeSimulationModel(robot, result_json, out,
                                                      writeOptions(overwrite));
      },
      nb::arg("robot"), nb::arg("out"), nb::kw_only(), nb::arg("result_json") = "",
      nb::arg("overwrite") = false,
      "heft mjcf --robot: heft's own MuJoCo model of a robot (what heft simulate and heft sample "
      "roll out), with an identify / estimate result.json patched in when given; returns the "
      "notes");
}

}  // namespace

void bindJobs(nb::module_& m) {
  bindIdentify(m);
  bindFilterJob(m);
  bindJob<jobs::EstimateJob>(m, "estimate", "EstimateResult");
  bindJob<jobs::SampleJob>(m, "sample", "SampleResult");
  bindJob<jobs::PredictJob>(m, "predict", "PredictResult");
  bindJob<jobs::FuseJob>(m, "fuse", "FuseResult");
  bindJob<jobs::ExciteJob>(m, "excite", "ExciteResult");
  bindJob<jobs::ExploreJob>(m, "explore", "ExploreResult");
  bindSimulate(m);
  bindLogJobs(m);
  bindOutputs(m);
}

}  // namespace heft::python
