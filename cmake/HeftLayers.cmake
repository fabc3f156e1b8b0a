# The layer rule, checked at configure time and by the test `layers` (cmake -P this file):
#  - a module includes only the heft modules below it (the table), so no estimator (identify,
#    estimation, filter) includes another's headers;
#  - only io (CSV metadata), results (result.json) and jobs (configs) include YAML or JSON.
# Usage as a script: cmake -DHEFT_SOURCE_DIR=<repo> -P cmake/HeftLayers.cmake
cmake_minimum_required(VERSION 3.22)
set(_heft_layers
    "common:common"
    "inertia:common,inertia"
    "model:common,inertia,model"
    "dynamics:common,inertia,model,dynamics"
    "io:common,inertia,model,io"
    "state:common,inertia,model,state"
    "basestate:common,inertia,model,io,state,basestate"
    "excite:common,inertia,model,excite"
    "sim:common,inertia,model,dynamics,io,excite,sim"
    "sampling:common,inertia,model,dynamics,io,excite,sim,sampling"
    "results:common,inertia,model,io,results"
    "identify:common,inertia,model,dynamics,io,state,basestate,results,identify"
    "estimation:common,inertia,model,dynamics,io,state,results,estimation"
    "filter:common,inertia,model,dynamics,io,state,results,filter"
    "jobs:common,inertia,model,dynamics,io,state,basestate,excite,sim,sampling,results,identify,estimation,filter,jobs")
set(_heft_json_yaml_allowed io results jobs)

function(heft_check_layers source_dir)
  set(_errors "")
  set(_known "")
  foreach(_entry ${_heft_layers})
    string(REPLACE ":" ";" _pair "${_entry}")
    list(GET _pair 0 _module)
    list(APPEND _known ${_module})
  endforeach()
  # every module folder must have a row
  file(GLOB _dirs LIST_DIRECTORIES true ${source_dir}/src/* ${source_dir}/include/heft/*)
  foreach(_dir ${_dirs})
    if(IS_DIRECTORY ${_dir})
      get_filename_component(_name ${_dir} NAME)
      if(NOT _name IN_LIST _known)
        list(APPEND _errors "module ${_name} has no row in cmake/HeftLayers.cmake")
      endif()
    endif()
  endforeach()
  foreach(_entry ${_heft_layers})
    string(REPLACE ":" ";" _pair "${_entry}")
    list(GET _pair 0 _module)
    list(GET _pair 1 _allowed)
    string(REPLACE "," ";" _allowed "${_allowed}")
    file(GLOB_RECURSE _files ${source_dir}/src/${_module}/*.cpp ${source_dir}/src/${_module}/*.hpp
         ${source_dir}/include/heft/${_module}/*.hpp)
    foreach(_file ${_files})
      file(STRINGS ${_file} _lines REGEX "^[ \t]*#[ \t]*include")
      file(RELATIVE_PATH _rel ${source_dir} ${_file})
      foreach(_line ${_lines})
        if(_line MATCHES "heft/([a-z_]+)/")
          set(_target ${CMAKE_MATCH_1})
          if(NOT _target IN_LIST _allowed)
            list(APPEND _errors "${_rel}: module ${_module} may not include heft/${_target}/")
          endif()
        endif()
        if(_line MATCHES "(yaml-cpp/|nlohmann/)" AND NOT _module IN_LIST _heft_json_yaml_allowed)
          list(APPEND _errors "${_rel}: module ${_module} may not include ${CMAKE_MATCH_1} (YAML and JSON belong to io, results and jobs)")
        endif()
      endforeach()
    endforeach()
  endforeach()
  if(_errors)
    list(JOIN _errors "\n  " _text)
    message(FATAL_ERROR "heft layer rule broken:\n  ${_text}")
  endif()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE)
  heft_check_layers(${HEFT_SOURCE_DIR})
  message(STATUS "heft layer rule: ok")
endif()
