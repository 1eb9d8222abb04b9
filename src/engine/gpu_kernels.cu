#include "engine/gpu_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "engine/cuda_check.h"
#include "engine/device_util.cuh"

namespace fact::realize {

using namespace device;

namespace {

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

template <class T>
__global__ void compare_kernel(const T* d, const double* ref, int64_t l, int64_t m, int64_t n,
                               int64_t ldd, int64_t bsd, CompareStats* stats) {
  CompareAccumulator acc;
  const double first = to_double(d[0]);
  const int64_t total = l * m * n;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = i % n, row = (i / n) % m, b = i / (n * m);
    const int64_t off = b * bsd + row * ldd + j;
    acc.add(to_double(d[off]), ref[off], first);
  }
  acc.publish(stats, first);
}

__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
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

void broadcast_rows(void* out, bool out_double, const void* bias, DType d, DType bias_d, int64_t l, int64_t m,
                    int64_t n, int64_t ldd, int64_t bsd, cudaStream_t stream) {
  dispatch(bias_d, [&](auto bias_tag) {
    using B = decltype(bias_tag);
    if (out_double) {
      broadcast_kernel<double, B><<<blocks_for(l * m * n), kThreads, 0, stream>>>(
          static_cast<double*>(out), static_cast<const B*>(bias), l, m, n, ldd, bsd);
      return;
    }
    dispatch(d, [&](auto tag) {
      using T = decltype(tag);
      broadcast_kernel<T, B><<<blocks_for(l * m * n), kThreads, 0, stream>>>(
          static_cast<T*>(out), static_cast<const B*>(bias), l, m, n, ldd, bsd);
    });
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
