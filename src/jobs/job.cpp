#include "heft/jobs/job.hpp"

#include <cstdio>
#include <filesystem>
#include <streambuf>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"

namespace heft::jobs {

namespace fs = std::filesystem;

namespace {

// Hands each completed line to the sink.
class LineForwardingBuffer : public std::streambuf {
 public:
  explicit LineForwardingBuffer(Progress::Sink sink) : sink_(std::move(sink)) {}

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    if (c == '\n') {
      sink_(line_);
      line_.clear();
    } else {
      line_.push_back(static_cast<char>(c));
    }
    return c;
  }

 private:
  Progress::Sink sink_;
  std::string line_;
};

class LineForwardingStream : public std::ostream {
 public:
  explicit LineForwardingStream(Progress::Sink sink)
      : std::ostream(nullptr), buffer_(std::move(sink)) {
    rdbuf(&buffer_);
  }

 private:
  LineForwardingBuffer buffer_;
};

}  // namespace

Progress::Progress(Sink sink) : sink_(std::move(sink)) {}

Progress Progress::to(std::ostream& stream) {
  Progress p([&stream](const std::string& line) { stream << line << "\n"; });
  p.direct_ = &stream;
  return p;
}

void Progress::start() { start_ = std::chrono::steady_clock::now(); }

double Progress::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::say(const std::string& text) const {
  if (!sink_) return;
  char stamp[32];  // fixed point: "[0.00 s]", not "[4.68e-06 s]"
  std::snprintf(stamp, sizeof stamp, "[%.2f s] ", seconds());
  sink_(stamp + text);
}

std::ostream* Progress::stream() {
  if (direct_) return direct_;
  if (!sink_) return nullptr;
  if (!forwarding_) forwarding_ = std::make_shared<LineForwardingStream>(sink_);
  return forwarding_.get();
}

OutputFolder::OutputFolder(const std::string& folder, const std::vector<std::string>& file_names,
                           const std::vector<std::string>& input_logs, const WriteOptions& options)
    : folder_(folder) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec || !fs::is_directory(folder))
    throw InputError("--out " + folder + ": cannot create the folder (" + ec.message() + ")");
  for (const std::string& name : file_names) {
    const std::string p = path(name);
    for (const std::string& input_log : input_logs) {
      std::error_code same;
      require(input_log.empty() || !fs::exists(p) || !fs::equivalent(p, input_log, same), p,
              "an output path that is not an input log", "the input log " + input_log);
    }
    if (!options.overwrite && fs::exists(p))
      throw InputError(p + ": exists; pass --overwrite to replace the outputs of " + folder);
  }
}

std::string OutputFolder::path(const std::string& name) const {
  return (fs::path(folder_) / name).string();
}

}  // namespace heft::jobs
