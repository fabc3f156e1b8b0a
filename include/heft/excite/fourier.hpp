#pragma once
/// \file Finite Fourier series joint trajectories (Swevers, Ganseman, Tukel, De Schutter and Van
/// Brussel 1997, "Optimal robot excitation and identification"): periodic, band-limited, with
/// analytic rates and accelerations, so the excitation of every harmonic is known exactly and the
/// identification data can be averaged over periods.
#include <Eigen/Core>

namespace heft::excite {

/// One joint's series, period 1 / base_frequency:
///   q(t) = q0 + sum_{l=1..L} [ a_l / (w l) sin(w l t) - b_l / (w l) cos(w l t) ],
///   qd(t) = sum_l [ a_l cos(w l t) + b_l sin(w l t) ],
///   qdd(t) = sum_l w l [ -a_l sin(w l t) + b_l cos(w l t) ],   w = 2 pi base_frequency.
/// a and b hold L entries each [rad/s] (prismatic joints: [m/s]); L = 0 holds the joint at q0.
struct FourierSeries {
  double q0 = 0;                ///< [rad] or [m]
  double base_frequency = 0.1;  ///< [Hz]
  Eigen::VectorXd a, b;
  int harmonics() const { return static_cast<int>(a.size()); }
  /// \throws InputError when a and b differ in length, a value is not finite or the base
  /// frequency is not positive.
  void validate() const;
};

/// Position, rate and acceleration of one joint at one time.
struct JointState {
  double q = 0, qd = 0, qdd = 0;
};

/// The series at time t [s] with an envelope: q(t) = q0 + e(t) (q_F(t) - q0) where q_F is the
/// series above and e rises from 0 to 1 over `ramp` seconds along the quintic smoothstep
/// e(x) = 10 x^3 - 15 x^4 + 6 x^5, x = t / ramp (ramp = 0: e = 1). The envelope makes the
/// trajectory start at rest at q0 (a robot starts from standstill) and keeps it twice
/// continuously differentiable; rates and accelerations include its derivatives exactly.
JointState evaluate(const FourierSeries& series, double t, double ramp);

}  // namespace heft::excite
