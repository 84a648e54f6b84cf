// The few HIP runtime names our GPU sources use, for both toolchains. hipcc and clang -x hip see
// ROCm's own header; nvcc, which compiles the same .hip sources as CUDA (-x cu), gets a thin
// mapping onto the CUDA runtime here, because HIP's own NVIDIA headers do not build with CUDA 13.
// Only what the runner and kernels call is mapped: a missing name is a compile error, not a guess.
#pragma once

#include <cstddef>

#if defined(__HIP__) || defined(__HIPCC__)
#include <hip/hip_runtime.h>
#define MQA_GPU_RUNTIME_NAME "HIP"
#elif defined(__CUDACC__)
#include <cuda_runtime.h>
#define MQA_GPU_RUNTIME_NAME "CUDA"

using hipError_t = cudaError_t;
using hipEvent_t = cudaEvent_t;
using hipStream_t = cudaStream_t;
using hipDeviceProp_t = cudaDeviceProp;
using hipMemcpyKind = cudaMemcpyKind;
inline constexpr hipError_t hipSuccess = cudaSuccess;
inline constexpr hipMemcpyKind hipMemcpyHostToDevice = cudaMemcpyHostToDevice;
inline constexpr hipMemcpyKind hipMemcpyDeviceToHost = cudaMemcpyDeviceToHost;
inline constexpr hipMemcpyKind hipMemcpyDeviceToDevice = cudaMemcpyDeviceToDevice;

inline hipError_t hipGetDeviceCount(int* count) { return cudaGetDeviceCount(count); }
inline hipError_t hipGetDevice(int* device) { return cudaGetDevice(device); }
inline hipError_t hipSetDevice(int device) { return cudaSetDevice(device); }
inline hipError_t hipGetDeviceProperties(hipDeviceProp_t* prop, int device) {
  return cudaGetDeviceProperties(prop, device);
}
inline hipError_t hipMalloc(void** p, std::size_t bytes) { return cudaMalloc(p, bytes); }
template <class T>
hipError_t hipMalloc(T** p, std::size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(p), bytes);
}
inline hipError_t hipFree(void* p) { return cudaFree(p); }
inline hipError_t hipMemcpy(void* dst, const void* src, std::size_t bytes, hipMemcpyKind kind) {
  return cudaMemcpy(dst, src, bytes, kind);
}
inline hipError_t hipMemset(void* p, int value, std::size_t bytes) { return cudaMemset(p, value, bytes); }
inline hipError_t hipMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes) {
  return cudaMemGetInfo(free_bytes, total_bytes);
}
inline hipError_t hipDeviceSynchronize() { return cudaDeviceSynchronize(); }
inline hipError_t hipGetLastError() { return cudaGetLastError(); }
inline const char* hipGetErrorString(hipError_t e) { return cudaGetErrorString(e); }
inline hipError_t hipEventCreate(hipEvent_t* e) { return cudaEventCreate(e); }
inline hipError_t hipEventDestroy(hipEvent_t e) { return cudaEventDestroy(e); }
inline hipError_t hipEventRecord(hipEvent_t e) { return cudaEventRecord(e); }
inline hipError_t hipEventSynchronize(hipEvent_t e) { return cudaEventSynchronize(e); }
inline hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop) {
  return cudaEventElapsedTime(ms, start, stop);
}
inline hipError_t hipEventRecord(hipEvent_t e, hipStream_t s) { return cudaEventRecord(e, s); }
inline hipError_t hipStreamCreate(hipStream_t* s) { return cudaStreamCreate(s); }
inline hipError_t hipStreamDestroy(hipStream_t s) { return cudaStreamDestroy(s); }
inline hipError_t hipStreamSynchronize(hipStream_t s) { return cudaStreamSynchronize(s); }
inline hipError_t hipMemcpyAsync(void* dst, const void* src, std::size_t bytes, hipMemcpyKind kind, hipStream_t s) {
  return cudaMemcpyAsync(dst, src, bytes, kind, s);
}
inline constexpr unsigned hipHostMallocPortable = cudaHostAllocPortable;
inline hipError_t hipHostMalloc(void** p, std::size_t bytes, unsigned flags) { return cudaHostAlloc(p, bytes, flags); }
inline hipError_t hipHostFree(void* p) { return cudaFreeHost(p); }
#else
#error "hip_compat.hpp is for GPU translation units: compile with hipcc/clang -x hip or nvcc -x cu"
#endif

// Device-side spellings that differ between the two: none of our kernels uses warp shuffles or
// the warp size (AMD wavefronts have 64 lanes, NVIDIA warps 32), so thread groups of 32 are
// logical groups that communicate through shared memory only.
