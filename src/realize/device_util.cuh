// Device helpers shared by FACT's verification kernels (gpu_kernels.cu, tail_kernels.cu):
// grid sizing, dtype conversions through double, a lock-free max and dtype dispatch.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "realize/gemm_problem.h"

namespace fact::realize::device {

constexpr int kThreads = 256;

inline int blocks_for(int64_t count) {
  const int64_t b = (count + kThreads - 1) / kThreads;
  return int(b < 65536 ? (b > 0 ? b : 1) : 65536);
}

// splitmix64 (Steele, Lea, Flood: "Fast splittable pseudorandom number generators", 2014).
__device__ inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__device__ inline double uniform01(uint64_t bits) { return double(bits >> 11) * (1.0 / 9007199254740992.0); }

template <class T> __device__ T from_double(double v);
template <> __device__ inline float from_double<float>(double v) { return float(v); }
template <> __device__ inline __half from_double<__half>(double v) { return __double2half(v); }
template <> __device__ inline __nv_bfloat16 from_double<__nv_bfloat16>(double v) {
  return __float2bfloat16(float(v));
}
template <> __device__ inline double from_double<double>(double v) { return v; }
__device__ inline double to_double(float v) { return double(v); }
__device__ inline double to_double(__half v) { return double(__half2float(v)); }
__device__ inline double to_double(__nv_bfloat16 v) { return double(__bfloat162float(v)); }

// Non-negative doubles order like their bit patterns, so atomicMax on the bits is a max.
__device__ inline void atomic_max_nonneg(double* addr, double v) {
  atomicMax(reinterpret_cast<unsigned long long*>(addr), __double_as_longlong(v));
}

template <class F>
inline void dispatch(DType dt, F&& f) {
  switch (dt) {
    case DType::F32: f(float{}); break;
    case DType::F16: f(__half{}); break;
    case DType::BF16: f(__nv_bfloat16{}); break;
  }
}


}  // namespace fact::realize::device
