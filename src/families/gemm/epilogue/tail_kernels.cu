#define FACT_NO_JSON  // the device side needs only the program
#include "families/gemm/epilogue/tail_kernels.h"

#include "engine/cuda_check.h"
#include "engine/device_util.cuh"

namespace fact::realize {

using namespace device;

namespace {

constexpr int kSideWords = 2 * EpilogueProgram::kMaxInstr / 32;

// The inputs' values at element (b, i, j), converted to T.
template <class T, class In>
__device__ void gather(const TailInputs& in, int64_t b, int64_t i, int64_t j, T* out) {
  for (int s = 0; s < 4; ++s) {
    const In* p = static_cast<const In*>(in.ptr[s]);
    switch (in.kind[s]) {
      case TailInputKind::n: out[s] = T(to_double(p[j])); break;
      case TailInputKind::m: out[s] = T(to_double(p[i])); break;
      case TailInputKind::mn: out[s] = T(to_double(p[b * in.bs[s] + i * in.ld[s] + j])); break;
      default: out[s] = T(0); break;
    }
  }
}

// The program (1 KiB) and inputs go to shared memory once per block: indexing a kernel
// parameter with a run-time index makes every thread copy it to local memory first, which
// made a tail pass over 8 M elements take 0.1 ms instead of a memory pass's 0.02.
#define STAGE_PROGRAM_IN_SHARED_MEMORY()                                                       \
  __shared__ alignas(alignof(EpilogueProgram)) unsigned char prog_raw[sizeof(EpilogueProgram)]; \
  __shared__ alignas(alignof(TailInputs)) unsigned char in_raw[sizeof(TailInputs)];            \
  EpilogueProgram& prog = *reinterpret_cast<EpilogueProgram*>(prog_raw);                        \
  TailInputs& in = *reinterpret_cast<TailInputs*>(in_raw);                                      \
  if (threadIdx.x == 0) {                                                                       \
    prog = prog_param;                                                                          \
    in = in_param;                                                                              \
  }                                                                                             \
  __syncthreads()

__global__ void reference_stats_kernel(const double* acc64, EpilogueProgram prog_param, TailInputs in_param, int64_t l,
                                       int64_t m, int64_t n, int64_t ldd, int64_t bsd, TailReferenceStats* stats) {
  STAGE_PROGRAM_IN_SHARED_MEMORY();
  uint32_t sides[kSideWords] = {};
  double max_ref = 0, max_acc = 0;
  unsigned long long differs[3] = {};
  double x[4];
  const int64_t total = l * m * n;
  double probe[3];
  for (int q = 0; q < 3; ++q) {
    const int64_t e = q == 0 ? 0 : q == 1 ? total / 2 : total - 1;
    const int64_t j = e % n, i = (e / n) % m, b = e / (n * m);
    gather<double, double>(in, b, i, j, x);
    probe[q] = eval_epilogue<double>(prog, acc64[b * bsd + i * ldd + j], x);
  }
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = e % n, i = (e / n) % m, b = e / (n * m);
    gather<double, double>(in, b, i, j, x);
    const double acc = acc64[b * bsd + i * ldd + j];
    const double r = eval_epilogue<double>(prog, acc, x, sides);
    max_ref = fmax(max_ref, fabs(r));
    max_acc = fmax(max_acc, fabs(acc));
    for (int q = 0; q < 3; ++q) differs[q] += !(r == probe[q]);
  }
  for (int w = 0; w < kSideWords; ++w) {
    const uint32_t v = __reduce_or_sync(0xffffffffu, sides[w]);
    if (v && (threadIdx.x & 31) == 0) atomicOr(&stats->sides[w], v);
  }
  atomic_max_nonneg(&stats->max_abs_ref, max_ref);
  atomic_max_nonneg(&stats->max_abs_acc, max_acc);
  for (int q = 0; q < 3; ++q) atomicAdd(&stats->differs_from_probe[q], differs[q]);
  if (blockIdx.x == 0 && threadIdx.x == 0) stats->first_value = probe[0];
}

template <class T> __device__ double max_finite();
template <> __device__ double max_finite<float>() { return 3.4028234663852886e38; }
template <> __device__ double max_finite<__half>() { return 65504.0; }
template <> __device__ double max_finite<__nv_bfloat16>() { return 3.3895313892515355e38; }

// Records one element beyond its bound, the first thread to claim it.
__device__ void witness(CompareStats* stats, int64_t e, double acc, double r, double v, double bound) {
  if (atomicCAS(&stats->witness_taken, 0u, 1u) != 0u) return;
  stats->witness_index = static_cast<unsigned long long>(e);
  stats->witness_acc = acc;
  stats->witness_ref = r;
  stats->witness_value = v;
  stats->witness_bound = bound;
}

template <class T>
__global__ void compare_tail_kernel(const T* d, const double* acc64, EpilogueProgram prog_param, TailInputs in_param,
                                    double delta, double out_unit, int64_t l, int64_t m, int64_t n, int64_t ldd,
                                    int64_t bsd, CompareStats* stats) {
  STAGE_PROGRAM_IN_SHARED_MEMORY();
  CompareAccumulator sum;
  const double first = to_double(d[0]);
  double x[4];
  const int64_t total = l * m * n;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = e % n, i = (e / n) % m, b = e / (n * m);
    const int64_t off = b * bsd + i * ldd + j;
    gather<double, double>(in, b, i, j, x);
    const double acc = acc64[off];
    double peak = 0;
    const double r = eval_epilogue<double>(prog, acc, x, nullptr, &peak);
    const double v = to_double(d[off]);
    if (!isfinite(r)) {  // the same NaN or infinity, or wrong (an unwritten NaN included)
      const bool same = isnan(r) ? isnan(v) : v == r;
      sum.over_bound += !same;
      if (!same) witness(stats, e, acc, r, v, 0.0);
      if (!(v == first)) ++sum.differs;
      continue;
    }
    if (fabs(r) > max_finite<T>()) continue;  // beyond D's range: any kernel overflows here
    if (peak > max_finite<float>()) continue;  // an intermediate beyond fp32's: so does any fp32 tail
    const double err = sum.add(v, r, first);
    if (err < 0) continue;
    const double bound = epilogue_error_bound(prog, acc, r, peak, x, delta, out_unit);
    if (err > bound) {
      ++sum.over_bound;
      witness(stats, e, acc, r, v, bound);
    }
  }
  sum.publish(stats, first);
}

// One row (b, i) of D per blockIdx.y step, kTailColumns columns per thread: the row's
// batch and index are computed once per row, not per element (64-bit division is a long
// instruction sequence), and the program runs out of registers.
constexpr int kTailColumns = 4;

template <class T, class E>
__global__ void apply_tail_kernel(T* d, EpilogueProgram prog_param, TailInputs in_param, int64_t l, int64_t m, int64_t n,
                                  int64_t ldd, int64_t bsd) {
  STAGE_PROGRAM_IN_SHARED_MEMORY();
  float x[4];
  for (int64_t row = blockIdx.y; row < l * m; row += gridDim.y) {
    const int64_t b = row / m, i = row - b * m;
    T* out = d + b * bsd + i * ldd;
    const int64_t j0 = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * kTailColumns;
#pragma unroll
    for (int c = 0; c < kTailColumns; ++c) {
      const int64_t j = j0 + c;
      if (j >= n) break;
      gather<float, E>(in, b, i, j, x);
      out[j] = from_double<T>(double(eval_epilogue<float>(prog, float(to_double(out[j])), x)));
    }
  }
}

}  // namespace

void tail_reference_stats(const double* acc64, const EpilogueProgram& prog, const TailInputs& inputs64, int64_t l,
                          int64_t m, int64_t n, int64_t ldd, int64_t bsd, TailReferenceStats* stats,
                          cudaStream_t stream) {
  FACT_CUDA(cudaMemsetAsync(stats, 0, sizeof(TailReferenceStats), stream));
  reference_stats_kernel<<<std::min(blocks_for(l * m * n), 1024), kThreads, 0, stream>>>(acc64, prog, inputs64, l, m,
                                                                                        n, ldd, bsd, stats);
  FACT_CUDA_LAUNCH();
}

void compare_to_tail_reference(const void* d, DType dtype, const double* acc64, const EpilogueProgram& prog,
                               const TailInputs& inputs64, double delta, double out_unit, int64_t l, int64_t m,
                               int64_t n, int64_t ldd, int64_t bsd, CompareStats* stats, cudaStream_t stream) {
  FACT_CUDA(cudaMemsetAsync(stats, 0, sizeof(CompareStats), stream));
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    compare_tail_kernel<T><<<std::min(blocks_for(l * m * n), 1024), kThreads, 0, stream>>>(
        static_cast<const T*>(d), acc64, prog, inputs64, delta, out_unit, l, m, n, ldd, bsd, stats);
  });
  FACT_CUDA_LAUNCH();
}

void apply_tail(void* d, DType dtype, DType in_dtype, const EpilogueProgram& prog, const TailInputs& inputs, int64_t l,
                int64_t m, int64_t n, int64_t ldd, int64_t bsd, cudaStream_t stream) {
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    dispatch(in_dtype, [&](auto in_tag) {
      using E = decltype(in_tag);
      const int64_t per_block = int64_t(kThreads) * kTailColumns;
      const dim3 grid(unsigned((n + per_block - 1) / per_block), unsigned(std::min<int64_t>(l * m, 65535)));
      apply_tail_kernel<T, E><<<grid, kThreads, 0, stream>>>(static_cast<T*>(d), prog, inputs, l, m, n, ldd, bsd);
    });
  });
  FACT_CUDA_LAUNCH();
}

}  // namespace fact::realize
