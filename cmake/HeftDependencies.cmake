# Finds every third-party dependency. The wheels' locations come from .deps/paths.cmake, written by
# scripts/bootstrap.sh; -DHEFT_CMEEL_PREFIX=... and -DHEFT_MUJOCO_DIR=... override them (docs/install.md).
# Under pip (scikit-build-core, SKBUILD) they come from pip's build environment instead, whose
# wheels pyproject.toml pins: a package is built against what its own dependencies install.
set(_heft_paths ${CMAKE_SOURCE_DIR}/.deps/paths.cmake)
if(SKBUILD)
  if(NOT HEFT_CMEEL_PREFIX)
    execute_process(COMMAND ${Python_EXECUTABLE} -m cmeel cmake OUTPUT_VARIABLE HEFT_CMEEL_PREFIX
                    OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
  endif()
  if(NOT HEFT_MUJOCO_DIR)
    execute_process(COMMAND ${Python_EXECUTABLE} -c "import mujoco, os; print(os.path.dirname(mujoco.__file__))"
                    OUTPUT_VARIABLE HEFT_MUJOCO_DIR OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
  endif()
elseif(EXISTS ${_heft_paths} AND NOT HEFT_CMEEL_PREFIX)
  include(${_heft_paths})
endif()
if(HEFT_CMEEL_PREFIX)
  list(PREPEND CMAKE_PREFIX_PATH ${HEFT_CMEEL_PREFIX})
endif()

find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(pinocchio 4.1 CONFIG REQUIRED)
find_package(example-robot-data CONFIG REQUIRED)
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
if(HEFT_BUILD_CLI)
  find_package(CLI11 REQUIRED)
endif()
if(HEFT_BUILD_TESTS)
  find_package(GTest REQUIRED)
  find_package(benchmark REQUIRED)
endif()
find_package(Threads REQUIRED)

# example-robot-data: where the robot descriptions are, compiled into heft as the default search root.
if(HEFT_CMEEL_PREFIX AND EXISTS ${HEFT_CMEEL_PREFIX}/share/example-robot-data/robots)
  set(HEFT_ROBOTS_DIR ${HEFT_CMEEL_PREFIX}/share/example-robot-data/robots)
elseif(DEFINED EXAMPLE_ROBOT_DATA_MODEL_DIR)
  set(HEFT_ROBOTS_DIR ${EXAMPLE_ROBOT_DATA_MODEL_DIR})
else()
  message(FATAL_ERROR "heft: cannot locate example-robot-data's robots/ folder; set HEFT_CMEEL_PREFIX")
endif()
message(STATUS "heft: robot descriptions in ${HEFT_ROBOTS_DIR}")

# MuJoCo from the PyPI wheel: libmujoco.so.X.Y.Z and include/ sit in the python package folder.
if(NOT HEFT_MUJOCO_DIR)
  message(FATAL_ERROR "heft: HEFT_MUJOCO_DIR is not set (run scripts/bootstrap.sh or pass -DHEFT_MUJOCO_DIR)")
endif()
file(GLOB _heft_mujoco_lib ${HEFT_MUJOCO_DIR}/libmujoco.so.*)
if(NOT _heft_mujoco_lib OR NOT EXISTS ${HEFT_MUJOCO_DIR}/include/mujoco/mujoco.h)
  message(FATAL_ERROR "heft: no libmujoco.so.* and include/mujoco/mujoco.h under ${HEFT_MUJOCO_DIR}")
endif()
list(GET _heft_mujoco_lib 0 _heft_mujoco_lib)
add_library(mujoco::mujoco SHARED IMPORTED GLOBAL)
set_target_properties(mujoco::mujoco PROPERTIES
  IMPORTED_LOCATION ${_heft_mujoco_lib}
  INTERFACE_INCLUDE_DIRECTORIES ${HEFT_MUJOCO_DIR}/include)
message(STATUS "heft: MuJoCo ${_heft_mujoco_lib}")

# The wheels' libraries pull in each other (liburdfdom, libcoal, boost) without RPATHs of their own:
# every heft binary carries the wheel folders in its RPATH, so nothing needs LD_LIBRARY_PATH.
set(CMAKE_BUILD_RPATH ${HEFT_CMEEL_PREFIX}/lib ${HEFT_MUJOCO_DIR})
set(CMAKE_INSTALL_RPATH ${HEFT_CMEEL_PREFIX}/lib ${HEFT_MUJOCO_DIR})
# DT_RPATH (not RUNPATH) so that the path also serves the wheels' own libraries' dependencies.
add_link_options(-Wl,--disable-new-dtags)
