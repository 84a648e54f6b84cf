# Chooses how the GPU sources (reference/exact/gpu, kernels/gpu) are built, from MQA_GPU:
#   AUTO  CUDA when CMake finds nvcc, else HIP when ROCm (hipconfig) is installed, else no GPU build
#   CUDA  nvcc compiles the .hip sources as CUDA (hip_compat.hpp maps the runtime calls)
#   HIP   ROCm's clang compiles them for CMAKE_HIP_ARCHITECTURES (default gfx942;gfx950)
#   OFF   no GPU build
# Sets MQA_GPU_LANGUAGE to CUDA, HIP or "" and enables that language. The CPU build never needs
# a GPU toolchain: AUTO without one is OFF.
set(MQA_GPU_LANGUAGE "")
set(_mqa_gpu_off_reason "")
if(MQA_GPU STREQUAL "AUTO" AND MQA_SANITIZE)
  # Sanitizer builds are CPU builds: nvcc does not take -fsanitize, and the sanitizers do not
  # see into device code.
  set(_mqa_gpu_off_reason ", a sanitizer build")
elseif(MQA_GPU STREQUAL "AUTO")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(MQA_GPU_LANGUAGE CUDA)
  else()
    # Debian's clang + libamdhip64-dev can compile HIP device code but not link a ROCm program:
    # only a ROCm installation (which ships hipconfig) counts as a HIP toolchain here.
    find_program(MQA_HIPCONFIG hipconfig HINTS /opt/rocm/bin)
    if(MQA_HIPCONFIG)
      check_language(HIP)
      if(CMAKE_HIP_COMPILER)
        set(MQA_GPU_LANGUAGE HIP)
      endif()
    endif()
  endif()
elseif(MQA_GPU STREQUAL "CUDA" OR MQA_GPU STREQUAL "HIP")
  set(MQA_GPU_LANGUAGE ${MQA_GPU})
elseif(NOT MQA_GPU STREQUAL "OFF")
  message(FATAL_ERROR "MQA_GPU is '${MQA_GPU}'; accepted: AUTO, OFF, CUDA, HIP")
endif()

if(MQA_GPU_LANGUAGE STREQUAL "CUDA")
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)  # H100/H200; add others with -DCMAKE_CUDA_ARCHITECTURES=...
  endif()
  enable_language(CUDA)
  # CMake < 3.26 does not know nvcc's C++20 flag; nvcc >= 12 takes -std=c++20.
  if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
elseif(MQA_GPU_LANGUAGE STREQUAL "HIP")
  if(NOT DEFINED CMAKE_HIP_ARCHITECTURES)
    # MI300 and MI350. gfx950 needs a clang that knows it: ROCm 6.4 or later, or upstream clang 20
    # or later; Debian 12's clang 19 does not (kernels/gpu/README.md, "gfx950"). With an older
    # ROCm, pass -DCMAKE_HIP_ARCHITECTURES=gfx942.
    set(CMAKE_HIP_ARCHITECTURES gfx942 gfx950)
  endif()
  enable_language(HIP)
endif()
if(MQA_GPU_LANGUAGE)
  message(STATUS "mqacheck GPU kernels: ${MQA_GPU_LANGUAGE}")
else()
  message(STATUS "mqacheck GPU kernels: off (MQA_GPU=${MQA_GPU}${_mqa_gpu_off_reason})")
endif()

# A static library of portable device code (.hip), compiled by nvcc as CUDA or by ROCm's clang as
# HIP, with the host code's warnings (as errors under MQA_WERROR). The oracle (reference/exact/gpu)
# and the kernels under test (kernels/gpu) each build theirs with it.
function(mqa_gpu_device_library target)
  set_source_files_properties(${ARGN} PROPERTIES LANGUAGE ${MQA_GPU_LANGUAGE})
  add_library(${target} STATIC ${ARGN})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR})
  set_target_properties(${target} PROPERTIES
    ${MQA_GPU_LANGUAGE}_STANDARD 20
    ${MQA_GPU_LANGUAGE}_STANDARD_REQUIRED ON
    ${MQA_GPU_LANGUAGE}_EXTENSIONS OFF
    POSITION_INDEPENDENT_CODE ON)
  if(MQA_GPU_LANGUAGE STREQUAL "CUDA")
    # nvcc treats a .hip file as CUDA only when told.
    target_compile_options(${target} PRIVATE -x cu -Xcompiler=-Wall,-Wextra
                           $<$<BOOL:${MQA_WERROR}>:--Werror=all-warnings -Xcompiler=-Werror>)
  else()
    target_compile_options(${target} PRIVATE -Wall -Wextra $<$<BOOL:${MQA_WERROR}>:-Werror>)
  endif()
endfunction()

# A static library of CUDA sources for Hopper's wgmma (NVIDIA only): wgmma exists only in the
# architecture-specific sm_90a target, so these are compiled for exactly that, whatever
# CMAKE_CUDA_ARCHITECTURES says for the rest; the host uses them only on an sm_90 device.
function(mqa_sm90a_library target)
  add_library(${target} STATIC ${ARGN})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR})
  set_target_properties(${target} PROPERTIES
    CUDA_ARCHITECTURES OFF
    CUDA_STANDARD 20
    CUDA_STANDARD_REQUIRED ON
    POSITION_INDEPENDENT_CODE ON)
  target_compile_options(${target} PRIVATE -gencode=arch=compute_90a,code=sm_90a -Xcompiler=-Wall,-Wextra
                         $<$<BOOL:${MQA_WERROR}>:--Werror=all-warnings -Xcompiler=-Werror>)
endfunction()
