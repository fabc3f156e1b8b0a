#pragma once
/// \file The `heft import` job: a ROS 2 bag (sqlite3 or MCAP) to a heft log. A mapping file says
/// which topic fills which group (sensor_msgs/JointState -> joints, Imu -> imu, WrenchStamped ->
/// force_torque, nav_msgs/Odometry -> the base pose and twist, PoseStamped or one tf transform ->
/// mocap); rosbags (PyPI, in .deps/venv-tools) reads the messages through python/read_bag.py, and
/// this job assembles, checks and writes the log. docs/guide/import.md documents the mapping.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "heft/io/log.hpp"
#include "heft/jobs/job.hpp"

namespace heft::jobs {

struct ImportBagJob {
  /// Which stamp becomes a sample's time: the message header's (when the sensor measured) or the
  /// bag's receive time (when the recorder got it).
  enum class TimeSource { Header, Receive };

  /// One mapped topic. `frame` is the model frame of the group (empty: the messages' frame_id);
  /// `parent` / `child` pick one transform out of a tf2_msgs/TFMessage topic.
  struct Topic {
    std::string topic;
    std::string frame;
    std::string name;  ///< force/torque sensor name (empty: its frame)
    std::string parent, child;
  };

  struct Config {
    std::string source = "<command line>";  ///< the mapping file, for messages
    std::string robot;                      ///< short name or URDF / MJCF path
    std::string bag;                        ///< the bag folder or its .db3 / .mcap file
    TimeSource time = TimeSource::Header;
    Topic joints;                                             ///< JointState, required
    std::vector<std::pair<std::string, std::string>> rename;  ///< bag joint name -> model's
    std::vector<std::string> ignore;                          ///< bag joints left out
    /// JointState whose effort is the commanded torque (joints/tau_cmd), names as `joints`
    std::optional<Topic> commands;
    std::optional<Topic> imu;                       ///< Imu
    std::vector<Topic> force_torque;                ///< WrenchStamped, one per sensor
    std::optional<double> contact_force_threshold;  ///< contacts from the F/T forces
    std::optional<Topic> base;                      ///< Odometry
    std::optional<Topic> mocap;                     ///< PoseStamped or tf
    /// How the bag is read: the Python of .deps/venv-tools and python/read_bag.py (empty: the
    /// build-time paths, or HEFT_PYTHON and HEFT_PYTHON_DIR).
    std::string python, reader;
    /// \throws InputError naming the field.
    void validate() const;
  };

  /// What one mapped topic gave.
  struct Stream {
    std::string group;  ///< "joints", "imu", "force_torque/<name>", "base", "mocap"
    std::string topic;
    std::string type;
    long messages = 0;
    double median_rate_hz = 0;
    double first = 0, last = 0;  ///< [s] on the log's clock
  };

  struct Result {
    Config config;
    io::Log log;
    std::int64_t origin_ns = 0;  ///< the bag stamp that is time 0 of the log [ns]
    std::vector<Stream> streams;
    std::vector<std::string> notes;  ///< samples dropped and why
    std::string report() const;
  };

  /// Reads a mapping file; relative paths in it (robot) are resolved against its folder. Checks
  /// every name it gives against the robot: errors name the file, the line and the key.
  static void loadMapping(const std::string& path, Config& config);
  static void parseMapping(const std::string& yaml_text, const std::string& source,
                           const std::string& base_dir, Config& config);

  /// \throws InputError for a bag that cannot be read, a mapped topic it lacks or of another type,
  /// joints the model lacks, stamps that go back, or a log that does not validate;
  /// SolveError when the reader cannot be run (.deps/venv-tools is missing).
  static Result run(const Config& config, Progress& progress);
  static Result run(const Config& config) {
    Progress silent;
    return run(config, silent);
  }

  /// Writes the log (HDF5 for .h5 / .hdf5, else a CSV folder) atomically; refuses an existing
  /// file unless options.overwrite, and the bag always.
  static std::vector<std::string> write(const Result& result, const std::string& out_log,
                                        const WriteOptions& options = {});
};

}  // namespace heft::jobs
