#pragma once
// MuJoCo spec helpers of the sim module (internal): inertials between Pinocchio and MuJoCo, an
// owned spec, compiling with errors as heft errors.
#include <mujoco/mujoco.h>

#include <memory>
#include <string>

#include <Eigen/Core>
#include <pinocchio/spatial/inertia.hpp>

namespace heft::sim {

struct SpecDeleter {
  void operator()(mjSpec* s) const { mj_deleteSpec(s); }
};
using SpecPtr = std::unique_ptr<mjSpec, SpecDeleter>;

// MuJoCo's [w x y z] of a rotation.
void setQuat(double out[4], const Eigen::Matrix3d& R);

// The inertial of a MuJoCo body: principal axes and moments computed here (Eigen, to machine
// precision) instead of MuJoCo's `fullinertia`, whose compiler-side eigensolver leaves relative
// errors near 1e-7 in the reconstructed inertia.
void setInertial(mjsBody* body, const pinocchio::Inertia& inertia);

// Inertia of MuJoCo body `b` about its own frame (body_ipos, body_iquat, body_inertia).
pinocchio::Inertia mujocoInertia(const mjModel* m, int b);

// The compiled model (the caller owns it); compiler errors and warnings throw InputError naming
// `name`.
mjModel* compileSpec(mjSpec* spec, const std::string& name);

// Where the value of attribute `attribute` (between its quotes) sits inside [begin, end) of the
// MJCF text `xml`; false when the element has no such attribute.
bool findAttribute(const std::string& xml, std::size_t begin, std::size_t end,
                   const std::string& attribute, std::size_t& value_begin, std::size_t& value_end);

// `n` numbers separated by spaces at 17 significant digits (they read back to the same doubles).
std::string fullPrecision(const double* values, int n);

// The compiled spec as MJCF text: MuJoCo's writer (6 significant digits), with every body's pos
// and quat written again at 17 digits; a failure throws SolveError naming `name`.
std::string saveSpecXml(const mjSpec* spec, const std::string& name);

}  // namespace heft::sim
