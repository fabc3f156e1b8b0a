#pragma once
// go2 and TALOS as free-flyer Pinocchio models straight from example-robot-data's URDFs (no heft
// model layer), loaded once per test program.
#include <string>

#include <pinocchio/multibody/joint/joint-free-flyer.hpp>
#include <pinocchio/multibody/model.hpp>
#include <pinocchio/parsers/urdf.hpp>

namespace heft_test {

inline pinocchio::Model loadFreeFlyer(const std::string& relative_path) {
  pinocchio::Model model;
  pinocchio::urdf::buildModel(std::string(HEFT_ROBOTS_DIR_FOR_TESTS) + "/" + relative_path,
                              pinocchio::JointModelFreeFlyer(), model);
  return model;
}

inline const pinocchio::Model& go2() {
  static const pinocchio::Model model = loadFreeFlyer("go2_description/urdf/go2.urdf");
  return model;
}

inline const pinocchio::Model& talos() {
  static const pinocchio::Model model = loadFreeFlyer("talos_data/robots/talos_reduced.urdf");
  return model;
}

}  // namespace heft_test
