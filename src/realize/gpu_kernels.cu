#include "realize/gpu_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "realize/cuda_check.h"

namespace fact::realize {

namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t count) {
  const int64_t b = (count + kThreads - 1) / kThreads;
  return int(b < 65536 ? (b > 0 ? b : 1) : 65536);
}

// splitmix64 (Steele, Lea, Flood: "Fast splittable pseudorandom number generators", 2014).
__device__ uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__device__ double uniform01(uint64_t bits) { return double(bits >> 11) * (1.0 / 9007199254740992.0); }

template <class T> __device__ T from_double(double v);
template <> __device__ float from_double<float>(double v) { return float(v); }
template <> __device__ __half from_double<__half>(double v) { return __double2half(v); }
template <> __device__ __nv_bfloat16 from_double<__nv_bfloat16>(double v) {
  return __float2bfloat16(float(v));
}
template <> __device__ double from_double<double>(double v) { return v; }
__device__ double to_double(float v) { return double(v); }
__device__ double to_double(__half v) { return double(__half2float(v)); }
__device__ double to_double(__nv_bfloat16 v) { return double(__bfloat162float(v)); }

template <class T>
__global__ void fill_kernel(T* dst, int64_t count, uint64_t seed, int normal, double scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t h = splitmix64(seed * 0x100000001b3ull ^ uint64_t(i));
    double v;
    if (normal) {  // Box-Muller from two independent uniforms
      const double u1 = 1.0 - uniform01(h);
      const double u2 = uniform01(splitmix64(h));
      v = sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
    } else {
      v = uniform01(h);
    }
    dst[i] = from_double<T>(v * scale);
  }
}

template <class T>
__global__ void to_double_kernel(const T* src, double* dst, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    dst[i] = to_double(src[i]);
  }
}

template <class TOut, class TBias>
__global__ void broadcast_kernel(TOut* out, const TBias* bias, int64_t l, int64_t m, int64_t n,
                                 int64_t ldd, int64_t bsd) {
  const int64_t total = l * m * n;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = i % n, row = (i / n) % m, b = i / (n * m);
    const double v = bias ? to_double(bias[j]) : 0.0;
    out[b * bsd + row * ldd + j] = from_double<TOut>(v);
  }
}

// Non-negative doubles order like their bit patterns, so atomicMax on the bits is a max.
__device__ void atomic_max_nonneg(double* addr, double v) {
  atomicMax(reinterpret_cast<unsigned long long*>(addr), __double_as_longlong(v));
}

template <class T>
__global__ void compare_kernel(const T* d, const double* ref, int64_t l, int64_t m, int64_t n,
                               int64_t ldd, int64_t bsd, CompareStats* stats) {
  double max_err = 0, max_ref = 0, sq_err = 0, sq_ref = 0;
  unsigned long long nonfinite = 0, differs = 0;
  const double first = to_double(d[0]);
  const int64_t total = l * m * n;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = i % n, row = (i / n) % m, b = i / (n * m);
    const int64_t off = b * bsd + row * ldd + j;
    const double v = to_double(d[off]), r = ref[off];
    max_ref = fmax(max_ref, fabs(r));
    sq_ref += r * r;
    if (!isfinite(v) && isfinite(r)) {
      ++nonfinite;
      continue;
    }
    if (!(v == first)) ++differs;
    const double e = fabs(v - r);
    max_err = fmax(max_err, e);
    sq_err += e * e;
  }
  atomic_max_nonneg(&stats->max_abs_err, max_err);
  atomic_max_nonneg(&stats->max_abs_ref, max_ref);
  atomicAdd(&stats->sum_sq_err, sq_err);
  atomicAdd(&stats->sum_sq_ref, sq_ref);
  atomicAdd(&stats->nonfinite, nonfinite);
  atomicAdd(&stats->differs_from_first, differs);
  if (blockIdx.x == 0 && threadIdx.x == 0) stats->first_value = first;
}

__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

template <class F>
void dispatch(DType dt, F&& f) {
  switch (dt) {
    case DType::F32: f(float{}); break;
    case DType::F16: f(__half{}); break;
    case DType::BF16: f(__nv_bfloat16{}); break;
  }
}

}  // namespace

void fill_random(void* dst, DType d, int64_t count, uint64_t seed, Distribution dist,
                 double scale, cudaStream_t stream) {
  dispatch(d, [&](auto tag) {
    using T = decltype(tag);
    fill_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<T*>(dst), count, seed, dist == Distribution::Normal, scale);
  });
  FACT_CUDA_LAUNCH();
}

void gpu_spin(int microseconds, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(1000ull * unsigned(microseconds));
  FACT_CUDA_LAUNCH();
}

void convert_to_double(const void* src, DType d, double* dst, int64_t count, cudaStream_t stream) {
  dispatch(d, [&](auto tag) {
    using T = decltype(tag);
    to_double_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(src), dst, count);
  });
  FACT_CUDA_LAUNCH();
}

void broadcast_rows(void* out, bool out_double, const void* bias, DType d, int64_t l, int64_t m,
                    int64_t n, int64_t ldd, int64_t bsd, cudaStream_t stream) {
  dispatch(d, [&](auto tag) {
    using T = decltype(tag);
    if (out_double) {
      broadcast_kernel<double, T><<<blocks_for(l * m * n), kThreads, 0, stream>>>(
          static_cast<double*>(out), static_cast<const T*>(bias), l, m, n, ldd, bsd);
    } else {
      broadcast_kernel<T, T><<<blocks_for(l * m * n), kThreads, 0, stream>>>(
          static_cast<T*>(out), static_cast<const T*>(bias), l, m, n, ldd, bsd);
    }
  });
  FACT_CUDA_LAUNCH();
}

void compare_to_reference(const void* d, DType dtype, const double* ref, int64_t l, int64_t m,
                          int64_t n, int64_t ldd, int64_t bsd, CompareStats* stats,
                          cudaStream_t stream) {
  FACT_CUDA(cudaMemsetAsync(stats, 0, sizeof(CompareStats), stream));
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    compare_kernel<T><<<std::min(blocks_for(l * m * n), 1024), kThreads, 0, stream>>>(
        static_cast<const T*>(d), ref, l, m, n, ldd, bsd, stats);
  });
  FACT_CUDA_LAUNCH();
}

}  // namespace fact::realize
