# Suite tests that take one GPU each. In a build with GPU kernels `mqacheck run` runs
# the GPU variants on every suite, so each suite test declares RESOURCE_GROUPS "gpus:1": with
#     ctest -j N --resource-spec-file FILE
# CTest itself runs at most one suite per GPU at a time and tells each test its GPU, which
# ctest_gpu.sh makes the only one the test sees. FILE lists the host's GPUs (ci/ctest-gpus.sh
# writes it; ci/ctest-gpus.example.json is one for four). Without a spec file CTest ignores the
# groups. No scheduler of our own.
set(MQA_CTEST_GPU_WRAPPER ${CMAKE_CURRENT_LIST_DIR}/ctest_gpu.sh)

# mqa_add_suite_test(NAME COMMAND ARGS...): a CPU test, or with MQA_SUITES_TAKE_GPUS one that takes
# a GPU (label gpu-suite). COMMAND must be a path ($<TARGET_FILE:mqacheck>), not a target name.
function(mqa_add_suite_test name)
  if(MQA_SUITES_TAKE_GPUS)
    add_test(NAME ${name} COMMAND ${MQA_CTEST_GPU_WRAPPER} ${ARGN})
    set_tests_properties(${name} PROPERTIES RESOURCE_GROUPS "gpus:1" LABELS gpu-suite)
  else()
    add_test(NAME ${name} COMMAND ${ARGN})
  endif()
endfunction()
