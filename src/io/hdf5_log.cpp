// HDF5 reader and writer of heft logs (layout in docs/log-format.md). Every HDF5 call is checked;
// the library's own error printing is silenced and its messages end up in the InputError.
#include <hdf5.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <new>

#include "heft/common/error.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/io/log_io.hpp"

namespace heft::io {

namespace {

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowFlags = Eigen::Matrix<std::uint8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr int kFormatVersion = 1;

/// HDF5 1.10 leaks an object header (about 0.5 KB) when a metadata checksum fails, and its exit
/// handler then prints "infinite loop closing library" after the program's own error message.
/// heft closes every file it opens, so the exit handler has nothing to flush: opt out of it, once,
/// before the library initializes (a no-op if something else initialized HDF5 first).
void skipHdf5ExitHandler() {
  static const bool done = [] {
    H5dont_atexit();
    return true;
  }();
  (void)done;
}

/// Silences HDF5's automatic error printing for the lifetime of the object (and restores it).
class SilenceHdf5 {
 public:
  SilenceHdf5() {
    skipHdf5ExitHandler();
    H5Eget_auto2(H5E_DEFAULT, &function_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~SilenceHdf5() { H5Eset_auto2(H5E_DEFAULT, function_, data_); }
  SilenceHdf5(const SilenceHdf5&) = delete;
  SilenceHdf5& operator=(const SilenceHdf5&) = delete;

 private:
  H5E_auto2_t function_ = nullptr;
  void* data_ = nullptr;
};

/// The innermost message of the current HDF5 error stack (where the problem was detected), cleared.
std::string hdf5Message() {
  std::string message;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* error, void* out) -> herr_t {
        auto* text = static_cast<std::string*>(out);
        if (n == 0 && error->desc) *text = error->desc;
        return 0;
      },
      &message);
  H5Eclear2(H5E_DEFAULT);
  return message.empty() ? "HDF5 error" : message;
}

/// Owns one hid_t and closes it with the matching H5*close.
class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(Handle&& other) noexcept : id_(other.id_), close_(other.close_) { other.id_ = -1; }
  Handle& operator=(Handle&& other) noexcept {
    std::swap(id_, other.id_);
    std::swap(close_, other.close_);
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    if (id_ >= 0 && close_) close_(id_);
  }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

// ---- reading ------------------------------------------------------------------------------------

class Hdf5Reader {
 public:
  explicit Hdf5Reader(const std::string& path) : path_(path) {
    Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    // close every object of the file with it, even those a failed read left open
    if (!fapl.valid() || H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG) < 0)
      fail("", "file access");
    file_ = Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
    if (!file_.valid()) fail("", "cannot open as HDF5");
    hsize_t size = 0;
    if (H5Fget_filesize(file_.get(), &size) < 0) fail("", "file size");
    file_size_ = size;
  }

  [[noreturn]] void fail(const std::string& object, const std::string& what) const {
    throw InputError(path_ + (object.empty() ? "" : ": " + object) + ": " + what + " (" +
                     hdf5Message() + ")");
  }
  [[noreturn]] void bad(const std::string& object, const std::string& what) const {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(path_ + ": " + object + ": " + what);
  }

  /// Whether `object` ("/joints/q") exists, checking each path component.
  bool exists(const std::string& object) const {
    std::size_t slash = 0;
    while ((slash = object.find('/', slash + 1)) != std::string::npos) {
      if (!linkExists(object.substr(0, slash))) return false;
    }
    return linkExists(object);
  }

  bool isGroup(const std::string& object) const {
    if (!exists(object)) return false;
    H5O_info_t info;
    if (H5Oget_info_by_name(file_.get(), object.c_str(), &info, H5P_DEFAULT) < 0)
      fail(object, "info");
    if (info.type != H5O_TYPE_GROUP) bad(object, "expected a group, found another kind of object");
    return true;
  }

  /// Whether `object` is a group holding at least one link.
  bool isNonEmptyGroup(const std::string& object) const {
    if (!isGroup(object)) return false;
    H5G_info_t info;
    if (H5Gget_info_by_name(file_.get(), object.c_str(), &info, H5P_DEFAULT) < 0)
      fail(object, "group info");
    return info.nlinks > 0;
  }

  Eigen::VectorXd readVector(const std::string& object) const {
    std::vector<hsize_t> dims;
    std::vector<double> values = readNumbers(object, 1, dims);
    return Eigen::Map<Eigen::VectorXd>(values.data(), static_cast<Eigen::Index>(dims[0]));
  }

  Eigen::MatrixXd readMatrix(const std::string& object) const {
    std::vector<hsize_t> dims;
    std::vector<double> values = readNumbers(object, 2, dims);
    return Eigen::Map<RowMatrix>(values.data(), static_cast<Eigen::Index>(dims[0]),
                                 static_cast<Eigen::Index>(dims[1]));
  }

  Eigen::VectorXd readOptionalVector(const std::string& object) const {
    return exists(object) ? readVector(object) : Eigen::VectorXd();
  }

  Eigen::MatrixXd readOptionalMatrix(const std::string& object) const {
    return exists(object) ? readMatrix(object) : Eigen::MatrixXd();
  }

  /// Flags stored as any numeric type; every value must be 0 or 1.
  FlagMatrix readFlags(const std::string& object) const {
    return readSmallIntegers(object, 1, "a flag 0 or 1");
  }

  /// Integers 0 .. max stored as any numeric type (a status code, a flag).
  FlagMatrix readSmallIntegers(const std::string& object, int max,
                               const std::string& expected) const {
    const Eigen::MatrixXd values = readMatrix(object);
    FlagMatrix integers(values.rows(), values.cols());
    for (Eigen::Index r = 0; r < values.rows(); ++r) {
      for (Eigen::Index c = 0; c < values.cols(); ++c) {
        const double x = values(r, c);
        if (!(x >= 0 && x <= max && x == std::floor(x))) {
          bad(object, "row " + std::to_string(r) + " column " + std::to_string(c) + ": expected " +
                          expected + ", got " + std::to_string(x));
        }
        integers(r, c) = static_cast<std::uint8_t>(x);
      }
    }
    return integers;
  }

  /// A rank-1 dataset of fixed- or variable-length strings.
  std::vector<std::string> readStrings(const std::string& object) const {
    Handle dataset = openDataset(object);
    Handle type(H5Dget_type(dataset.get()), H5Tclose);
    if (!type.valid()) fail(object, "type");
    if (H5Tget_class(type.get()) != H5T_STRING) bad(object, "expected a dataset of strings");
    const std::vector<hsize_t> dims = dimensions(dataset, object, 1);
    const std::size_t n = dims[0];
    std::vector<std::string> names(n);
    if (n == 0) return names;
    const htri_t variable = H5Tis_variable_str(type.get());
    if (variable < 0) fail(object, "string type");
    Handle memory(H5Tcopy(H5T_C_S1), H5Tclose);
    if (variable) {
      if (n > file_size_) bad(object, "claims more strings than the file has bytes");
      std::vector<char*> pointers(n, nullptr);
      if (H5Tset_size(memory.get(), H5T_VARIABLE) < 0) fail(object, "string type");
      Handle space(H5Dget_space(dataset.get()), H5Sclose);
      if (H5Dread(dataset.get(), memory.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()) <
          0) {
        fail(object, "cannot read strings");
      }
      for (std::size_t i = 0; i < n; ++i) names[i] = pointers[i] ? pointers[i] : "";
      H5Dvlen_reclaim(memory.get(), space.get(), H5P_DEFAULT, pointers.data());
    } else {
      const std::size_t size = H5Tget_size(type.get());
      if (size == 0 || size > 4096)
        bad(object, "expected strings of 1 to 4096 bytes, got " + std::to_string(size));
      if (n * size > file_size_ + 1024) bad(object, "claims more string bytes than the file holds");
      std::vector<char> buffer(n * size);
      if (H5Tset_size(memory.get(), size) < 0 || H5Tset_strpad(memory.get(), H5T_STR_NULLPAD) < 0) {
        fail(object, "string type");
      }
      if (H5Dread(dataset.get(), memory.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()) < 0) {
        fail(object, "cannot read strings");
      }
      for (std::size_t i = 0; i < n; ++i) {
        std::string s(buffer.data() + i * size, size);
        s = s.substr(0, s.find('\0'));
        while (!s.empty() && s.back() == ' ') s.pop_back();  // space-padded strings
        names[i] = s;
      }
    }
    return names;
  }

  /// A string attribute of `object` ("/" or a group), if present.
  std::optional<std::string> readStringAttribute(const std::string& object,
                                                 const std::string& name) const {
    Handle attribute = openAttribute(object, name);
    if (!attribute.valid()) return std::nullopt;
    const std::string where = object + " attribute " + name;
    Handle type(H5Aget_type(attribute.get()), H5Tclose);
    if (!type.valid()) fail(where, "type");
    if (H5Tget_class(type.get()) != H5T_STRING) bad(where, "expected a string");
    Handle space(H5Aget_space(attribute.get()), H5Sclose);
    if (!space.valid() || H5Sget_simple_extent_npoints(space.get()) != 1)
      bad(where, "expected one string");
    const htri_t variable = H5Tis_variable_str(type.get());
    if (variable < 0) fail(where, "string type");
    Handle memory(H5Tcopy(H5T_C_S1), H5Tclose);
    if (variable) {
      char* pointer = nullptr;
      if (H5Tset_size(memory.get(), H5T_VARIABLE) < 0 ||
          H5Aread(attribute.get(), memory.get(), &pointer) < 0) {
        fail(where, "cannot read");
      }
      std::string value = pointer ? pointer : "";
      H5Dvlen_reclaim(memory.get(), space.get(), H5P_DEFAULT, &pointer);
      return value;
    }
    const std::size_t size = H5Tget_size(type.get());
    if (size == 0 || size > 65536)
      bad(where, "expected at most 65536 bytes, got " + std::to_string(size));
    std::vector<char> buffer(size);
    if (H5Tset_size(memory.get(), size) < 0 || H5Tset_strpad(memory.get(), H5T_STR_NULLPAD) < 0 ||
        H5Aread(attribute.get(), memory.get(), buffer.data()) < 0) {
      fail(where, "cannot read");
    }
    std::string value(buffer.data(), size);
    value = value.substr(0, value.find('\0'));
    while (!value.empty() && value.back() == ' ') value.pop_back();
    return value;
  }

  std::optional<std::int64_t> readIntegerAttribute(const std::string& object,
                                                   const std::string& name) const {
    Handle attribute = openAttribute(object, name);
    if (!attribute.valid()) return std::nullopt;
    const std::string where = object + " attribute " + name;
    Handle type(H5Aget_type(attribute.get()), H5Tclose);
    if (!type.valid()) fail(where, "type");
    if (H5Tget_class(type.get()) != H5T_INTEGER) bad(where, "expected an integer");
    Handle space(H5Aget_space(attribute.get()), H5Sclose);
    if (!space.valid() || H5Sget_simple_extent_npoints(space.get()) != 1)
      bad(where, "expected one integer");
    long long value = 0;
    if (H5Aread(attribute.get(), H5T_NATIVE_LLONG, &value) < 0) fail(where, "cannot read");
    return static_cast<std::int64_t>(value);
  }

 private:
  bool linkExists(const std::string& object) const {
    const htri_t found = H5Lexists(file_.get(), object.c_str(), H5P_DEFAULT);
    if (found < 0) fail(object, "cannot look up");
    return found > 0;
  }

  Handle openDataset(const std::string& object) const {
    if (!exists(object)) bad(object, "dataset missing");
    Handle dataset(H5Dopen2(file_.get(), object.c_str(), H5P_DEFAULT), H5Dclose);
    if (!dataset.valid()) fail(object, "cannot open as a dataset");
    return dataset;
  }

  Handle openAttribute(const std::string& object, const std::string& name) const {
    const htri_t found = H5Aexists_by_name(file_.get(), object.c_str(), name.c_str(), H5P_DEFAULT);
    if (found < 0) fail(object + " attribute " + name, "cannot look up");
    if (found == 0) return Handle();
    Handle attribute(
        H5Aopen_by_name(file_.get(), object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
        H5Aclose);
    if (!attribute.valid()) fail(object + " attribute " + name, "cannot open");
    return attribute;
  }

  std::vector<hsize_t> dimensions(const Handle& dataset, const std::string& object,
                                  int rank) const {
    Handle space(H5Dget_space(dataset.get()), H5Sclose);
    if (!space.valid()) fail(object, "dataspace");
    const int found = H5Sget_simple_extent_ndims(space.get());
    if (found < 0) fail(object, "dataspace");
    if (found != rank) {
      bad(object, "expected a " + std::to_string(rank) + "-dimensional dataset, got " +
                      std::to_string(found) + " dimensions");
    }
    std::vector<hsize_t> dims(rank);
    if (H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0) fail(object, "dataspace");
    return dims;
  }

  /// Numbers of any integer or float type, converted to double, row-major.
  std::vector<double> readNumbers(const std::string& object, int rank,
                                  std::vector<hsize_t>& dims) const {
    Handle dataset = openDataset(object);
    Handle type(H5Dget_type(dataset.get()), H5Tclose);
    if (!type.valid()) fail(object, "type");
    const H5T_class_t type_class = H5Tget_class(type.get());
    if (type_class != H5T_FLOAT && type_class != H5T_INTEGER)
      bad(object, "expected a numeric dataset");
    dims = dimensions(dataset, object, rank);
    // a corrupted header may claim any size: bound it by what the file can hold before allocating
    hsize_t count = 1;
    for (hsize_t d : dims) {
      if (d != 0 && count > std::numeric_limits<hsize_t>::max() / d)
        bad(object, "dimensions overflow");
      count *= d;
    }
    const std::size_t element = H5Tget_size(type.get());
    Handle dcpl(H5Dget_create_plist(dataset.get()), H5Pclose);
    const int filters = dcpl.valid() ? H5Pget_nfilters(dcpl.get()) : 0;
    const double bytes =
        static_cast<double>(count) * static_cast<double>(element == 0 ? 1 : element);
    const double ceiling = static_cast<double>(file_size_) * (filters > 0 ? 1000.0 : 1.0) + 4096.0;
    if (bytes > ceiling || count > (hsize_t{1} << 32)) {
      bad(object, "claims " + std::to_string(count) + " values but the file holds " +
                      std::to_string(file_size_) + " bytes");
    }
    std::vector<double> values(static_cast<std::size_t>(count));
    if (count > 0 && H5Dread(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                             values.data()) < 0) {
      fail(object, "cannot read");
    }
    return values;
  }

  std::string path_;
  Handle file_;
  hsize_t file_size_ = 0;
};

Log readHdf5(const std::string& path) {
  Hdf5Reader in(path);
  Log log;
  if (const auto version = in.readIntegerAttribute("/", "heft_log_version")) {
    if (*version != kFormatVersion) {
      in.bad("/ attribute heft_log_version",
             "expected " + std::to_string(kFormatVersion) + ", got " + std::to_string(*version));
    }
  }
  log.meta.robot = in.readStringAttribute("/", "robot").value_or("");
  if (const auto base = in.readStringAttribute("/", "base_type")) {
    try {
      log.meta.base_type = parseBaseType(*base);
    } catch (const InputError& e) {
      in.bad("/ attribute base_type", e.what());
    }
  }
  log.meta.units = in.readStringAttribute("/", "units").value_or("SI");
  log.meta.noise_profile = in.readStringAttribute("/", "noise_profile").value_or("");
  log.meta.scenario = in.readStringAttribute("/", "scenario").value_or("");
  log.meta.seed = in.readIntegerAttribute("/", "seed");

  // an estimates-only log has no (or an empty) /joints group; validation checks it holds nothing
  // else
  const bool estimates = in.isGroup("/estimates");
  if (!estimates && !in.isGroup("/joints")) in.bad("/joints", "group missing (required)");
  if (!estimates || in.isNonEmptyGroup("/joints")) {
    JointSeries& j = log.joints;
    j.time = in.readVector("/joints/time");
    j.names = in.readStrings("/joints/names");
    j.q = in.readMatrix("/joints/q");
    j.v = in.readMatrix("/joints/v");
    j.tau = in.readMatrix("/joints/tau");
    j.tau_cmd = in.readOptionalMatrix("/joints/tau_cmd");
    j.base_pose = in.readOptionalMatrix("/joints/base_pose");
    j.base_twist = in.readOptionalMatrix("/joints/base_twist");
  }

  if (in.isGroup("/imu")) {
    ImuSeries imu;
    imu.frame = in.readStringAttribute("/imu", "frame").value_or("");
    imu.time = in.readVector("/imu/time");
    imu.gyro = in.readMatrix("/imu/gyro");
    imu.accel = in.readMatrix("/imu/accel");
    imu.orientation = in.readOptionalMatrix("/imu/orientation");
    log.imu = std::move(imu);
  }
  if (in.isGroup("/mocap")) {
    MocapSeries mocap;
    mocap.frame = in.readStringAttribute("/mocap", "frame").value_or("");
    mocap.time = in.readVector("/mocap/time");
    mocap.position = in.readMatrix("/mocap/position");
    mocap.orientation = in.readMatrix("/mocap/orientation");
    log.mocap = std::move(mocap);
  }
  if (in.isGroup("/contacts")) {
    ContactSeries contacts;
    contacts.time = in.readVector("/contacts/time");
    contacts.names = in.readStrings("/contacts/names");
    contacts.flags = in.readFlags("/contacts/flags");
    if (in.exists("/contacts/frames")) contacts.frames = in.readStrings("/contacts/frames");
    if (in.exists("/contacts/offsets")) contacts.offsets = in.readMatrix("/contacts/offsets");
    log.contacts = std::move(contacts);
  }
  if (in.isGroup("/truth")) {
    TruthSeries t;
    if (in.exists("/truth/time")) {
      t.time = in.readVector("/truth/time");
      t.q = in.readMatrix("/truth/q");
      t.v = in.readMatrix("/truth/v");
      t.a = in.readMatrix("/truth/a");
      t.base_pose = in.readOptionalMatrix("/truth/base_pose");
      t.base_twist = in.readOptionalMatrix("/truth/base_twist");
      t.base_acceleration = in.readOptionalMatrix("/truth/base_acceleration");
      if (in.exists("/truth/contact_names")) {
        t.contact_names = in.readStrings("/truth/contact_names");
        t.contact_forces = in.readMatrix("/truth/contact_forces");
        if (in.exists("/truth/contact_flags"))
          t.contact_flags = in.readFlags("/truth/contact_flags");
      }
      if (in.exists("/truth/varying_body_names")) {
        t.varying_body_names = in.readStrings("/truth/varying_body_names");
        t.varying_body_pi = in.readMatrix("/truth/varying_body_pi");
      }
    }
    if (in.isGroup("/truth/bodies")) {
      t.body_names = in.readStrings("/truth/bodies/names");
      t.body_pi = in.readMatrix("/truth/bodies/pi");
    }
    log.truth = std::move(t);
  }
  if (estimates) {
    EstimateSeries e;
    e.estimator = in.readStringAttribute("/estimates", "estimator").value_or("");
    e.time = in.readVector("/estimates/time");
    e.body_names = in.readStrings("/estimates/body_names");
    e.body_pi = in.readMatrix("/estimates/body_pi");
    e.body_pi_std = in.readOptionalMatrix("/estimates/body_pi_std");
    e.nis = in.readOptionalVector("/estimates/nis");
    if (in.exists("/estimates/status"))
      e.status = in.readSmallIntegers("/estimates/status", 255, "an integer 0 to 255");
    log.estimates = std::move(e);
  }
  return log;
}

// ---- writing ------------------------------------------------------------------------------------

class Hdf5Writer {
 public:
  Hdf5Writer(const std::string& path, const std::string& destination) : destination_(destination) {
    Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    // newest format: checksummed metadata, so a reader detects corruption instead of misreading
    if (!fapl.valid() ||
        H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST) < 0) {
      fail("", "file access properties");
    }
    // the root group is created with the file: its modification times are off through the file
    // creation properties (the other objects' below)
    Handle fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
    if (!fcpl.valid() || H5Pset_obj_track_times(fcpl.get(), false) < 0) {
      fail("", "file creation properties");
    }
    file_ = Handle(H5Fcreate(path.c_str(), H5F_ACC_EXCL, fcpl.get(), fapl.get()), H5Fclose);
    if (!file_.valid()) fail("", "cannot create " + path);
    // Object headers carry modification times by default; without them the same log always gives
    // the same bytes (reproducible simulations, diffable fixtures).
    group_properties_ = Handle(H5Pcreate(H5P_GROUP_CREATE), H5Pclose);
    dataset_properties_ = Handle(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    if (!group_properties_.valid() || !dataset_properties_.valid() ||
        H5Pset_obj_track_times(group_properties_.get(), false) < 0 ||
        H5Pset_obj_track_times(dataset_properties_.get(), false) < 0) {
      fail("", "object creation properties");
    }
  }

  void close() {
    if (H5Fflush(file_.get(), H5F_SCOPE_GLOBAL) < 0) fail("", "cannot flush");
    file_ = Handle();
  }

  void group(const std::string& name) {
    Handle g(
        H5Gcreate2(file_.get(), name.c_str(), H5P_DEFAULT, group_properties_.get(), H5P_DEFAULT),
        H5Gclose);
    if (!g.valid()) fail(name, "cannot create group");
  }

  void vector(const std::string& name, const Eigen::VectorXd& values) {
    const hsize_t dims[1] = {static_cast<hsize_t>(values.size())};
    write(name, 1, dims, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values.data());
  }

  void matrix(const std::string& name, const Eigen::MatrixXd& values) {
    const RowMatrix row_major = values;
    const hsize_t dims[2] = {static_cast<hsize_t>(values.rows()),
                             static_cast<hsize_t>(values.cols())};
    write(name, 2, dims, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, row_major.data());
  }

  void optionalVector(const std::string& name, const Eigen::VectorXd& values) {
    if (values.size() > 0) vector(name, values);
  }

  void optionalMatrix(const std::string& name, const Eigen::MatrixXd& values) {
    if (values.size() > 0) matrix(name, values);
  }

  void flags(const std::string& name, const FlagMatrix& values) {
    const RowFlags row_major = values;
    const hsize_t dims[2] = {static_cast<hsize_t>(values.rows()),
                             static_cast<hsize_t>(values.cols())};
    write(name, 2, dims, H5T_STD_U8LE, H5T_NATIVE_UINT8, row_major.data());
  }

  /// Fixed-length, NUL-terminated strings (readable by h5py as bytes and by any C reader).
  void strings(const std::string& name, const std::vector<std::string>& values) {
    std::size_t size = 1;
    for (const auto& s : values) size = std::max(size, s.size() + 1);
    std::vector<char> buffer(values.size() * size, '\0');
    for (std::size_t i = 0; i < values.size(); ++i)
      values[i].copy(buffer.data() + i * size, size - 1);
    Handle type = stringType(size);
    const hsize_t dims[1] = {values.size()};
    write(name, 1, dims, type.get(), type.get(), buffer.data());
  }

  void stringAttribute(const std::string& object, const std::string& name,
                       const std::string& value) {
    Handle type = stringType(value.size() + 1);
    Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    Handle attribute(H5Acreate_by_name(file_.get(), object.c_str(), name.c_str(), type.get(),
                                       space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                     H5Aclose);
    if (!attribute.valid() || H5Awrite(attribute.get(), type.get(), value.c_str()) < 0) {
      fail(object + " attribute " + name, "cannot write");
    }
  }

  void integerAttribute(const std::string& object, const std::string& name, std::int64_t value) {
    Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    Handle attribute(H5Acreate_by_name(file_.get(), object.c_str(), name.c_str(), H5T_STD_I64LE,
                                       space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                     H5Aclose);
    const long long v = value;
    if (!attribute.valid() || H5Awrite(attribute.get(), H5T_NATIVE_LLONG, &v) < 0) {
      fail(object + " attribute " + name, "cannot write");
    }
  }

 private:
  [[noreturn]] void fail(const std::string& object, const std::string& what) const {
    throw InputError(destination_ + (object.empty() ? "" : ": " + object) + ": " + what + " (" +
                     hdf5Message() + ")");
  }

  Handle stringType(std::size_t size) {
    Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    if (!type.valid() || H5Tset_size(type.get(), size) < 0 ||
        H5Tset_strpad(type.get(), H5T_STR_NULLTERM) < 0) {
      fail("", "string type");
    }
    return type;
  }

  void write(const std::string& name, int rank, const hsize_t* dims, hid_t file_type,
             hid_t memory_type, const void* data) {
    Handle space(H5Screate_simple(rank, dims, nullptr), H5Sclose);
    if (!space.valid()) fail(name, "cannot create dataspace");
    Handle dataset(H5Dcreate2(file_.get(), name.c_str(), file_type, space.get(), H5P_DEFAULT,
                              dataset_properties_.get(), H5P_DEFAULT),
                   H5Dclose);
    if (!dataset.valid()) fail(name, "cannot create dataset");
    hsize_t count = 1;
    for (int i = 0; i < rank; ++i) count *= dims[i];
    if (count > 0 &&
        H5Dwrite(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
      fail(name, "cannot write");
    }
  }

  std::string destination_;
  Handle file_;
  Handle group_properties_, dataset_properties_;
};

void writeHdf5(const Log& log, const std::string& path, const std::string& destination) {
  Hdf5Writer out(path, destination);
  out.integerAttribute("/", "heft_log_version", kFormatVersion);
  out.stringAttribute("/", "robot", log.meta.robot);
  out.stringAttribute("/", "base_type", toString(log.meta.base_type));
  out.stringAttribute("/", "units", log.meta.units);
  out.stringAttribute("/", "noise_profile", log.meta.noise_profile);
  out.stringAttribute("/", "scenario", log.meta.scenario);
  if (log.meta.seed) out.integerAttribute("/", "seed", *log.meta.seed);

  const JointSeries& j = log.joints;
  if (!j.empty()) {  // empty only in an estimates-only log
    out.group("/joints");
    out.vector("/joints/time", j.time);
    out.strings("/joints/names", j.names);
    out.matrix("/joints/q", j.q);
    out.matrix("/joints/v", j.v);
    out.matrix("/joints/tau", j.tau);
    out.optionalMatrix("/joints/tau_cmd", j.tau_cmd);
    out.optionalMatrix("/joints/base_pose", j.base_pose);
    out.optionalMatrix("/joints/base_twist", j.base_twist);
  }
  if (log.imu) {
    out.group("/imu");
    out.stringAttribute("/imu", "frame", log.imu->frame);
    out.vector("/imu/time", log.imu->time);
    out.matrix("/imu/gyro", log.imu->gyro);
    out.matrix("/imu/accel", log.imu->accel);
    out.optionalMatrix("/imu/orientation", log.imu->orientation);
  }
  if (log.mocap) {
    out.group("/mocap");
    out.stringAttribute("/mocap", "frame", log.mocap->frame);
    out.vector("/mocap/time", log.mocap->time);
    out.matrix("/mocap/position", log.mocap->position);
    out.matrix("/mocap/orientation", log.mocap->orientation);
  }
  if (log.contacts) {
    out.group("/contacts");
    out.vector("/contacts/time", log.contacts->time);
    out.strings("/contacts/names", log.contacts->names);
    out.flags("/contacts/flags", log.contacts->flags);
    if (!log.contacts->frames.empty()) out.strings("/contacts/frames", log.contacts->frames);
    if (log.contacts->offsets.size() > 0) out.matrix("/contacts/offsets", log.contacts->offsets);
  }
  if (log.truth) {
    const TruthSeries& t = *log.truth;
    out.group("/truth");
    if (t.time.size() > 0) {
      out.vector("/truth/time", t.time);
      out.matrix("/truth/q", t.q);
      out.matrix("/truth/v", t.v);
      out.matrix("/truth/a", t.a);
      out.optionalMatrix("/truth/base_pose", t.base_pose);
      out.optionalMatrix("/truth/base_twist", t.base_twist);
      out.optionalMatrix("/truth/base_acceleration", t.base_acceleration);
      if (!t.contact_names.empty()) {
        out.strings("/truth/contact_names", t.contact_names);
        out.matrix("/truth/contact_forces", t.contact_forces);
        if (t.contact_flags.size() > 0) out.flags("/truth/contact_flags", t.contact_flags);
      }
      if (!t.varying_body_names.empty()) {
        out.strings("/truth/varying_body_names", t.varying_body_names);
        out.matrix("/truth/varying_body_pi", t.varying_body_pi);
      }
    }
    if (!t.body_names.empty() || t.body_pi.size() > 0) {
      out.group("/truth/bodies");
      out.strings("/truth/bodies/names", t.body_names);
      out.matrix("/truth/bodies/pi", t.body_pi);
    }
  }
  if (log.estimates) {
    const EstimateSeries& e = *log.estimates;
    out.group("/estimates");
    out.stringAttribute("/estimates", "estimator", e.estimator);
    out.vector("/estimates/time", e.time);
    out.strings("/estimates/body_names", e.body_names);
    out.matrix("/estimates/body_pi", e.body_pi);
    out.optionalMatrix("/estimates/body_pi_std", e.body_pi_std);
    out.optionalVector("/estimates/nis", e.nis);
    if (e.status.size() > 0) out.flags("/estimates/status", e.status);
  }
  out.close();
}

}  // namespace

Log readLogHdf5(const std::string& path, const ReadOptions& options) {
  options.validate();
  Log log;
  {
    SilenceHdf5 silence;
    try {
      log = readHdf5(path);
    } catch (const InputError&) {
      throw;
    } catch (const std::bad_alloc&) {
      throw InputError(path + ": out of memory while reading (corrupted sizes?)");
    } catch (const std::exception& e) {
      throw InputError(path + ": " + e.what());
    }
  }
  if (options.check_log) requireValid(validateLog(log, options.validation), path);
  return log;
}

void writeLogHdf5(const Log& log, const std::string& path, const WriteOptions& options) {
  options.validate();
  if (options.check_log)
    requireValid(validateLog(log, options.validation), path + " (log to write)");
  SilenceHdf5 silence;
  writeAtomically(path, options.overwrite,
                  [&](const std::string& temporary) { writeHdf5(log, temporary, path); });
}

}  // namespace heft::io
