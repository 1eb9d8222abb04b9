// Device helpers shared by FACT's verification kernels (gpu_kernels.cu, tail_kernels.cu):
// grid sizing, dtype conversions through double, a lock-free max and dtype dispatch.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "base/dtype.h"

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
__device__ inline double to_double(double v) { return v; }
__device__ inline double to_double(float v) { return double(v); }
__device__ inline double to_double(__half v) { return double(__half2float(v)); }
__device__ inline double to_double(__nv_bfloat16 v) { return double(__bfloat162float(v)); }

// Non-negative doubles order like their bit patterns, so atomicMax on the bits is a max.
__device__ inline void atomic_max_nonneg(double* addr, double v) {
  atomicMax(reinterpret_cast<unsigned long long*>(addr), __double_as_longlong(v));
}

// One thread's share of a CompareStats (gpu_kernels.h): accumulated element by element,
// then published with one atomic per field.
struct CompareAccumulator {
  double max_err = 0, max_ref = 0, sq_err = 0, sq_ref = 0;
  unsigned long long nonfinite = 0, differs = 0, over_bound = 0;

  // Adds output v against reference r (`first` is the output's first element): returns
  // |v - r|, or -1 when v is NaN/Inf where r is finite (counted as nonfinite).
  __device__ double add(double v, double r, double first) {
    max_ref = fmax(max_ref, fabs(r));
    sq_ref += r * r;
    if (!isfinite(v) && isfinite(r)) {
      ++nonfinite;
      return -1.0;
    }
    if (!(v == first)) ++differs;
    const double e = fabs(v - r);
    max_err = fmax(max_err, e);
    sq_err += e * e;
    return e;
  }

  template <class Stats>
  __device__ void publish(Stats* stats, double first) const {
    atomic_max_nonneg(&stats->max_abs_err, max_err);
    atomic_max_nonneg(&stats->max_abs_ref, max_ref);
    atomicAdd(&stats->sum_sq_err, sq_err);
    atomicAdd(&stats->sum_sq_ref, sq_ref);
    atomicAdd(&stats->nonfinite, nonfinite);
    atomicAdd(&stats->differs_from_first, differs);
    atomicAdd(&stats->over_bound, over_bound);
    if (blockIdx.x == 0 && threadIdx.x == 0) stats->first_value = first;
  }
};

template <class F>
inline void dispatch(DType dt, F&& f) {
  switch (dt) {
    case DType::f32: f(float{}); break;
    case DType::f16: f(__half{}); break;
    case DType::bf16: f(__nv_bfloat16{}); break;
    default: break;  // no kernel computes in another dtype
  }
}


}  // namespace fact::realize::device
