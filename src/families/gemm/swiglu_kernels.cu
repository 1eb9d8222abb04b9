#include "families/gemm/swiglu_kernels.h"

#include "engine/cuda_check.h"
#include "engine/device_buffer.h"
#include "engine/device_util.cuh"
#include "families/gemm/swiglu_bound.h"
#include "families/gemm/swiglu_layout.h"

namespace fact::realize {

using namespace device;

namespace {

template <class T>
__global__ void pairs_kernel(const T* acc, int64_t m, int64_t hidden, int64_t ld_acc, T* out, int64_t ldo) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < m * hidden;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = e / hidden, j = e % hidden, c = swiglu_gate_column(j);
    const float g = float(to_double(acc[i * ld_acc + c])), u = float(to_double(acc[i * ld_acc + c + kSwigluInterleave]));
    out[i * ldo + j] = from_double<T>(double(g / (1.0f + expf(-g)) * u));
  }
}

__global__ void max_abs_kernel(const double* x, int64_t count, double* out) {
  double v = 0;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < count; e += int64_t(gridDim.x) * blockDim.x)
    v = fmax(v, fabs(x[e]));
  atomic_max_nonneg(out, v);
}

template <class T>
__global__ void compare_kernel(const T* d, int64_t ldd, const double* acc64, int64_t m, int64_t hidden, double delta,
                               double out_unit, CompareStats* stats) {
  CompareAccumulator sum;
  const double first = to_double(d[0]);
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < m * hidden;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = e / hidden, j = e % hidden, c = swiglu_gate_column(j);
    const double g = acc64[i * 2 * hidden + c], u = acc64[i * 2 * hidden + c + kSwigluInterleave];
    const double ref = g / (1.0 + exp(-g)) * u;
    const double v = to_double(d[i * ldd + j]);
    const double err = sum.add(v, ref, first);
    if (err < 0) continue;
    const double bound = swiglu_error_bound(g, u, delta, out_unit);
    if (err > bound) {
      ++sum.over_bound;
      if (atomicCAS(&stats->witness_taken, 0u, 1u) == 0u) {
        stats->witness_index = static_cast<unsigned long long>(e);
        stats->witness_acc = g;
        stats->witness_ref = ref;
        stats->witness_value = v;
        stats->witness_bound = bound;
      }
    }
  }
  sum.publish(stats, first);
}

}  // namespace

void swiglu_pairs(const void* acc, DType dt, int64_t m, int64_t hidden, int64_t ld_acc, void* out, int64_t ldo,
                  cudaStream_t stream) {
  dispatch(dt, [&](auto t) {
    using T = decltype(t);
    pairs_kernel<T><<<blocks_for(m * hidden), kThreads, 0, stream>>>(static_cast<const T*>(acc), m, hidden, ld_acc,
                                                                    static_cast<T*>(out), ldo);
  });
  FACT_CUDA_LAUNCH();
}

double max_abs_device(const double* x, int64_t count, cudaStream_t stream) {
  DeviceBuffer out(sizeof(double));
  FACT_CUDA(cudaMemsetAsync(out.get(), 0, sizeof(double), stream));
  max_abs_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, count, out.as<double>());
  FACT_CUDA_LAUNCH();
  double v = 0;
  FACT_CUDA(cudaMemcpyAsync(&v, out.get(), sizeof v, cudaMemcpyDeviceToHost, stream));
  FACT_CUDA(cudaStreamSynchronize(stream));
  return v;
}

void swiglu_compare(const void* d, DType dt, int64_t ldd, const double* acc64, int64_t m, int64_t hidden,
                    double delta, double out_unit, CompareStats* stats, cudaStream_t stream) {
  FACT_CUDA(cudaMemsetAsync(stats, 0, sizeof(CompareStats), stream));
  dispatch(dt, [&](auto t) {
    using T = decltype(t);
    compare_kernel<T><<<blocks_for(m * hidden), kThreads, 0, stream>>>(static_cast<const T*>(d), ldd, acc64, m, hidden,
                                                                      delta, out_unit, stats);
  });
  FACT_CUDA_LAUNCH();
}

}  // namespace fact::realize
