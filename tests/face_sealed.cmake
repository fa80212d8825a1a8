# The face is sealed (STYLE.md #20): front-ends compile against include/ alone. Fails when a file
# under apps/ or python/, or a bench that is not a kernel micro-bench, includes a header of src/
# (a quoted include that names a file under src/, or a path that climbs out with "..").
# Run as: cmake -DROOT=<source dir> -P face_sealed.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT ROOT)
  message(FATAL_ERROR "face_sealed.cmake: pass -DROOT=<source dir>")
endif()

# Kernel micro-benches time one kernel on raw buffers: they keep their private target (issue 37
# allows it). bench_batched_decode is one of them: the roofline of one batched forward step
# (the weights' shapes give its FLOPs and bytes) beside the machine's read bandwidth on the
# thread pool, numbers the public face does not and should not expose; bench_moe_ffn times one
# mixture-of-experts block (layer_ffn_moe.cpp) at the real shapes on raw buffers;
# bench_deltanet one Gated DeltaNet layer (layer_deltanet.cpp) and the delta rule alone;
# bench_mamba2 one Mamba2 layer (layer_mamba2.cpp) and the selective scan alone; layer_bench.h
# is what those three layer benches share (random weight matrices, their grid, main);
# bench_verify_step times one forward step of n tokens at a depth (the verify step of
# speculative decoding) per SIMD target, through runtime::ForwardBatch and the model directly, so
# that the step alone is timed (no sampler, no session bookkeeping).
set(kernel_benches bench/bench_attention.cpp bench/bench_matmul.cpp bench/bench_fma_peak.cpp
                   bench/bench_weight_stream.cpp bench/bench_batched_decode.cpp
                   bench/bench_moe_ffn.cpp bench/bench_deltanet.cpp bench/bench_mamba2.cpp
                   bench/bench_verify_step.cpp
                   bench/simd_env.h bench/layer_bench.h)

file(GLOB_RECURSE files RELATIVE ${ROOT} ${ROOT}/apps/*.h ${ROOT}/apps/*.cpp ${ROOT}/python/*.h
     ${ROOT}/python/*.cpp ${ROOT}/bench/*.h ${ROOT}/bench/*.cpp)
set(faults "")
foreach(f ${files})
  if(f IN_LIST kernel_benches)
    continue()
  endif()
  file(STRINGS ${ROOT}/${f} includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  set(private "")
  foreach(line ${includes})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" path "${line}")
    if(EXISTS ${ROOT}/src/${path} OR path MATCHES "(^|/)src/" OR path MATCHES "\\.\\./")
      string(APPEND private "\n  ${f}: #include \"${path}\"")
    endif()
  endforeach()
  string(APPEND faults "${private}")
endforeach()
if(faults)
  message(FATAL_ERROR "front-ends include private headers of src/ (use include/tova/):${faults}")
endif()
list(LENGTH files n)
message(STATUS "face: ${n} front-end files checked, none reaches into src/")
