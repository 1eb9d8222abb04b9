#include "families/attention/verify_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "engine/cuda_check.h"
#include "engine/device_util.cuh"

namespace fact::realize {

using namespace device;

AttentionDims attention_dims(const AttentionProblem& p) {
  AttentionDims d{};
  d.batch = p.batch; d.heads = p.heads; d.kv_heads = p.kv_heads;
  d.seq_q = p.seq_q; d.seq_k = p.seq_k; d.head_dim = p.head_dim;
  auto put = [](int64_t (&dst)[3], const AttentionStrides& s) { dst[0] = s.batch; dst[1] = s.head; dst[2] = s.row; };
  put(d.q, p.q); put(d.k, p.k); put(d.v, p.v); put(d.o, p.o); put(d.m, p.mask_strides);
  d.scale = p.scale;
  d.mask = int32_t(p.mask);
  d.window = p.window;
  d.empty_row_zero = attention_empty_row_zero(p) ? 1 : 0;
  if (p.mask_prologue && p.mask == MaskKind::additive) {
    d.mask_affine = 1;
    d.mask_rsub = float(p.mask_prologue->rsub);  // as make_attention_args passes them
    d.mask_scale = float(p.mask_prologue->scale);
  }
  return d;
}

namespace {

constexpr int kRefThreads = 128;  // >= head_dim: thread d owns output column d
constexpr int kRefWarps = kRefThreads / 32;

// Row i's mask entries (element j at [j]) of head (b, h); null without a mask tensor.
template <class T>
__device__ const void* mask_row(const void* mask, const AttentionDims& d, int64_t b, int64_t h, int64_t i) {
  if (d.mask < 2) return nullptr;
  const int64_t off = b * d.m[0] + h * d.m[1] + i * d.m[2];
  return d.mask == 2 ? static_cast<const void*>(static_cast<const T*>(mask) + off)
                     : static_cast<const void*>(static_cast<const uint8_t*>(mask) + off);
}

// The term an additive mask element m adds: m, or with a prologue (r - m) * c as ATen's
// rsub.Scalar and mul compute it in m's dtype T (each op in fp32, its opmath type, then
// rounded to T; the float value is exact in double, so from_double rounds once).
template <class T>
__device__ double additive_term(const AttentionDims& d, T m) {
  if (!d.mask_affine) return to_double(m);
  const float t = float(to_double(from_double<T>(double(__fsub_rn(d.mask_rsub, float(to_double(m)))))));
  return to_double(from_double<T>(double(__fmul_rn(t, d.mask_scale))));
}

// Whether key j takes part in row i (eager: -inf logits are removed keys), and the
// additive mask's term (0 for other kinds).
template <class T>
__device__ bool takes_part(const AttentionDims& d, const void* mrow, int64_t i, int64_t j, double& add) {
  add = 0;
  switch (d.mask) {
    case 1: return attention_causal_keeps(i, j, d.window);
    case 2: add = additive_term<T>(d, static_cast<const T*>(mrow)[j]); return !(add == -INFINITY);
    case 3: return static_cast<const uint8_t*>(mrow)[j] != 0;
    case 4: return static_cast<const uint8_t*>(mrow)[j] == 0;
    default: return true;
  }
}

__device__ double normal_from(uint64_t h) {  // Box-Muller, as gpu_kernels.cu's fill
  const double u1 = 1.0 - uniform01(splitmix64(h));
  const double u2 = uniform01(splitmix64(h ^ 0x6a09e667f3bcc909ull));
  return sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
}

// An element M of an additive mask with a prologue (r - M) * c whose term is about `term`
// (verify_kernels.h, fill_attention_mask): -inf through an infinite M, 0 through M = r, c
// through M = r - 1, else M = r - term / c.
template <class T>
__device__ T prologue_element(const AttentionDims& d, double term) {
  const double r = d.mask_rsub, c = d.mask_scale;
  if (term == -INFINITY) return from_double<T>(c < 0 ? -INFINITY : c > 0 ? INFINITY : r);
  if (term == 0) return from_double<T>(r);
  if (term == c || c == 0) return from_double<T>(r - 1.0);
  return from_double<T>(r - term / c);
}

template <class T>
__global__ void mask_fill_kernel(void* mask, AttentionDims d, int64_t count, uint64_t seed) {
  const int32_t kind = d.mask;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t h = splitmix64(seed * 0x100000001b3ull ^ uint64_t(i));
    const bool removed = (h & 3u) == 0;
    if (kind == 2 && d.mask_affine) {
      const uint64_t pick = (h >> 2) & 3u;  // 0, 1: term 0; 2: term about N(0, 1); 3: term c
      const double term = removed ? -INFINITY : pick < 2 ? 0.0 : pick == 2 ? normal_from(h) : double(d.mask_scale);
      static_cast<T*>(mask)[i] = prologue_element<T>(d, term);
    } else if (kind == 2) {
      static_cast<T*>(mask)[i] = from_double<T>(removed ? -INFINITY : normal_from(h));
    } else {
      static_cast<uint8_t*>(mask)[i] = uint8_t(kind == 3 ? !removed : removed);
    }
  }
}

// The most negative finite value of T (torch.finfo(T).min): an additive mask of it keeps its
// key (eager's softmax then averages such a row uniformly); only -inf removes a key.
template <class T> __device__ double lowest_finite();
template <> __device__ double lowest_finite<float>() { return -3.4028234663852886e38; }
template <> __device__ double lowest_finite<__half>() { return -65504.0; }
template <> __device__ double lowest_finite<__nv_bfloat16>() { return -3.3895313892515355e38; }

// One row per head with every key removed (-inf, or false/true for keep/drop masks); an
// additive mask also gets a second row of lowest_finite<T>() (HuggingFace's padding value,
// which must not empty the row).
template <class T>
__global__ void dead_rows_kernel(void* mask, AttentionDims d, uint64_t seed) {
  const int64_t total = d.batch * d.heads * d.seq_k;
  for (int64_t x = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; x < total; x += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = x % d.seq_k, bh = x / d.seq_k, h = bh % d.heads, b = bh / d.heads;
    // Heads that share mask memory (stride 0) share their dead row.
    const int64_t b2 = d.m[0] ? b : 0, h2 = d.m[1] ? h : 0;
    const int64_t i = int64_t(splitmix64(seed ^ uint64_t(b2 * d.heads + h2)) % uint64_t(d.seq_q));
    const int64_t off = b * d.m[0] + h * d.m[1] + i * d.m[2] + j;
    if (d.mask == 2) {
      // With a prologue, the row of its padding value c: (r - (r - 1)) * c.
      const bool affine = d.mask_affine;
      static_cast<T*>(mask)[off] = affine ? prologue_element<T>(d, -INFINITY) : from_double<T>(-INFINITY);
      const int64_t i2 = (i + (d.seq_q + 1) / 2) % d.seq_q;
      if (i2 != i)
        static_cast<T*>(mask)[b * d.m[0] + h * d.m[1] + i2 * d.m[2] + j] =
            affine ? prologue_element<T>(d, d.mask_scale) : from_double<T>(lowest_finite<T>());
    } else {
      static_cast<uint8_t*>(mask)[off] = uint8_t(d.mask == 3 ? 0 : 1);
    }
  }
}

// Block-wide reductions over kRefThreads threads; every thread gets the result.
__device__ double block_sum(double v, double* scratch) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  __syncthreads();
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  double s = 0;
  for (int w = 0; w < kRefWarps; ++w) s += scratch[w];
  return s;
}
__device__ double block_max(double v, double* scratch) {
  for (int o = 16; o > 0; o /= 2) v = fmax(v, __shfl_down_sync(0xffffffffu, v, o));
  __syncthreads();
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  double s = scratch[0];
  for (int w = 1; w < kRefWarps; ++w) s = fmax(s, scratch[w]);
  return s;
}
// Largest score, the smallest key index among ties (jm < 0: no key).
__device__ void block_argmax(double& m, long long& jm, double* sd, long long* sj) {
  for (int o = 16; o > 0; o /= 2) {
    const double om = __shfl_down_sync(0xffffffffu, m, o);
    const long long oj = __shfl_down_sync(0xffffffffu, jm, o);
    if (oj >= 0 && (jm < 0 || om > m || (om == m && oj < jm))) { m = om; jm = oj; }
  }
  __syncthreads();
  if (threadIdx.x % 32 == 0) { sd[threadIdx.x / 32] = m; sj[threadIdx.x / 32] = jm; }
  __syncthreads();
  m = sd[0]; jm = sj[0];
  for (int w = 1; w < kRefWarps; ++w) {
    if (sj[w] >= 0 && (jm < 0 || sd[w] > m || (sd[w] == m && sj[w] < jm))) { m = sd[w]; jm = sj[w]; }
  }
}

// One block per (sampled head, query row): thread t scores keys t, t + 128, ...; output
// column d belongs to thread d. Two passes over the keys: the max (and its key), then the
// weights exp(s - max) and their sums against V.
template <class T>
__global__ void __launch_bounds__(kRefThreads) reference_kernel(const T* q, const T* k, const T* v, const void* mask,
                                                                AttentionDims d, AttentionErrorTerms e,
                                                                const int64_t* pairs, double* ref, double* bound) {
  __shared__ double sq[kRefThreads];
  __shared__ double sw[kRefThreads];
  __shared__ double scratch[kRefWarps];
  __shared__ long long scratch_j[kRefWarps];
  const int tid = threadIdx.x;
  const int64_t pair = pairs[blockIdx.x];
  const int64_t b = pair / d.heads, h = pair % d.heads, hk = h / (d.heads / d.kv_heads);
  const int64_t D = d.head_dim, Tk = d.seq_k;
  const T* qh = q + b * d.q[0] + h * d.q[1];
  const T* kh = k + b * d.k[0] + hk * d.k[1];
  const T* vh = v + b * d.v[0] + hk * d.v[1];
  auto score = [&](int64_t j, double add, double* abs_sum) {
    const T* kr = kh + j * d.k[2];
    double dot = 0, adot = 0;
    for (int64_t x = 0; x < D; ++x) {
      const double p = sq[x] * to_double(kr[x]);
      dot += p;
      adot += fabs(p);
    }
    if (abs_sum) *abs_sum = adot;
    return d.scale * dot + add;
  };

  for (int64_t i = blockIdx.y; i < d.seq_q; i += gridDim.y) {
    __syncthreads();  // the previous row is done with sq and sw
    if (tid < D) sq[tid] = to_double(qh[i * d.q[2] + tid]);
    __syncthreads();
    const void* mrow = mask_row<T>(mask, d, b, h, i);
    const int64_t out = (int64_t(blockIdx.x) * d.seq_q + i) * D + tid;

    // Pass 1: the max score and its key; for the bound, the largest sum of |q_d k_d| over
    // the keys that take part.
    double m = -INFINITY, amax = 0, mmax = 0, parts = 0;
    long long jm = -1;
    for (int64_t j = tid; j < Tk; j += kRefThreads) {
      double add, adot;
      if (!takes_part<T>(d, mrow, i, j, add)) continue;
      const double s = score(j, add, &adot);
      if (jm < 0 || s > m) { m = s; jm = j; }
      amax = fmax(amax, adot);
      parts += 1;
    }
    block_argmax(m, jm, scratch, scratch_j);
    amax = block_max(amax, scratch);
    parts = block_sum(parts, scratch);
    if (jm < 0) {  // every key removed: an explicit softmax gives NaN, SDPA 0
      if (tid < D) { ref[out] = d.empty_row_zero ? 0.0 : NAN; bound[out] = 0; }
      continue;
    }

    // Pass 2: weights w_j = exp(s_j - m) of a chunk of keys in shared memory (-1: the key
    // does not take part), then column d's sums over the chunk.
    const double vstar = tid < D ? to_double(vh[jm * d.v[2] + tid]) : 0;
    double acc = 0, acc_abs = 0, acc_dev = 0, vmin = INFINITY, vmax = -INFINITY, vabs = 0, lsum = 0;
    for (int64_t j0 = 0; j0 < Tk; j0 += kRefThreads) {
      const int64_t j = j0 + tid;
      double w = -1, add;
      if (j < Tk && takes_part<T>(d, mrow, i, j, add)) {
        const double sj = score(j, add, nullptr);
        w = exp(sj - m);
        lsum += w;
        // The bound's largest |additive mask| M, over the keys that take part less those far
        // below the max (m - s >= 2^20 and >= 2^-10 |m|: a torch.finfo.min padding key next
        // to kept ones), whose weight is 0 in the reference and, their kernel score being
        // off by far less than m - s, in the kernel too (attention_bound.h).
        if (!(m - sj >= 0x1p20 && m - sj >= 0x1p-10 * fabs(m))) mmax = fmax(mmax, fabs(add));
      }
      __syncthreads();  // the previous chunk's readers are done
      sw[tid] = w;
      __syncthreads();
      if (tid < D) {
        const int n = Tk - j0 < kRefThreads ? int(Tk - j0) : kRefThreads;
        for (int jj = 0; jj < n; ++jj) {
          const double wj = sw[jj];
          if (wj < 0) continue;
          const double vj = to_double(vh[(j0 + jj) * d.v[2] + tid]);
          acc += wj * vj;
          acc_abs += wj * fabs(vj);
          acc_dev += wj * fabs(vj - vstar);
          vmin = fmin(vmin, vj);
          vmax = fmax(vmax, vj);
          vabs = fmax(vabs, fabs(vj));
        }
      }
    }
    const double l = block_sum(lsum, scratch);
    mmax = block_max(mmax, scratch);
    if (tid < D) {
      AttentionElementFacts f;
      f.abs_scale = fabs(d.scale);
      f.head_dim = double(D);
      f.seq_k = double(Tk);
      f.max_qk_abs = amax;
      f.max_mask_abs = mmax;
      f.keys = parts;
      f.l = l;
      f.w0 = acc_abs / l;
      f.w1 = acc_dev / l;
      f.v_range = vmax - vmin;
      f.v_abs = vabs;
      f.o = acc / l;
      ref[out] = f.o;
      bound[out] = attention_element_bound(e, f);
    }
  }
}

template <class T>
__global__ void compare_kernel(const T* o, AttentionDims d, const int64_t* pairs, int64_t n_pairs, const double* ref,
                               const double* bound, AttentionCompareStats* stats) {
  CompareAccumulator acc;
  unsigned long long nan_expected = 0, nan_mismatch = 0, varies = 0;
  double max_ratio = 0, max_bound = 0;
  const int64_t D = d.head_dim, total = n_pairs * d.seq_q * D;
  for (int64_t x = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; x < total; x += int64_t(gridDim.x) * blockDim.x) {
    const int64_t col = x % D, row = x / D, i = row % d.seq_q, p = row / d.seq_q;
    const int64_t pair = pairs[p], b = pair / d.heads, h = pair % d.heads;
    const T* orow = o + b * d.o[0] + h * d.o[1] + i * d.o[2];
    const double ov = to_double(orow[col]), r = ref[x], bnd = bound[x];
    if (isnan(r)) {
      ++nan_expected;
      if (!isnan(ov)) ++nan_mismatch;
      continue;
    }
    if (!(r == ref[x - col])) ++varies;
    const double err = acc.add(ov, r, to_double(orow[0]));  // differs: within the row
    if (err < 0) continue;
    if (err > bnd) ++acc.over_bound;
    max_ratio = fmax(max_ratio, bnd > 0 ? err / bnd : (err > 0 ? INFINITY : 0.0));
    max_bound = fmax(max_bound, bnd);
  }
  acc.publish(stats, 0.0);
  atomicAdd(&stats->nan_expected, nan_expected);
  atomicAdd(&stats->nan_mismatch, nan_mismatch);
  atomicAdd(&stats->ref_varies, varies);
  atomic_max_nonneg(&stats->max_bound_ratio, max_ratio);
  atomic_max_nonneg(&stats->max_bound, max_bound);
}

__device__ unsigned long long warp_sum(unsigned long long v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

// One warp per row of O; then every thread counts its share of the whole allocation.
template <class T>
__global__ void coverage_kernel(const T* buffer, int64_t buffer_elems, int64_t guard, const void* mask, AttentionDims d,
                                AttentionCoverageStats* stats) {
  const T* o = buffer + guard;
  const int lane = threadIdx.x % 32;
  const int64_t thread = blockIdx.x * int64_t(blockDim.x) + threadIdx.x, threads = int64_t(gridDim.x) * blockDim.x;
  const int64_t rows_total = d.batch * d.heads * d.seq_q;
  unsigned long long rows = 0, dead = 0, unwritten = 0, infinite = 0, dead_not_nan = 0, written = 0, not_nan = 0;
  for (int64_t r = thread / 32; r < rows_total; r += threads / 32) {  // warp-uniform
    const int64_t i = r % d.seq_q, bh = r / d.seq_q, h = bh % d.heads, b = bh / d.heads;
    // A causal row has a key unless its window begins past the last key; a tensor mask's row
    // is searched for one.
    bool alive = d.mask != 1 || attention_causal_first_key(i, d.window) < d.seq_k;
    if (d.mask >= 2) {
      const void* mrow = mask_row<T>(mask, d, b, h, i);
      alive = false;
      for (int64_t j0 = 0; j0 < d.seq_k; j0 += 32) {
        double add;
        const bool part = j0 + lane < d.seq_k && takes_part<T>(d, mrow, i, j0 + lane, add);
        if (__any_sync(0xffffffffu, part)) { alive = true; break; }
      }
    }
    if (lane == 0) { ++rows; if (!alive) ++dead; }
    const T* orow = o + b * d.o[0] + h * d.o[1] + i * d.o[2];
    for (int64_t x = lane; x < d.head_dim; x += 32) {
      const double val = to_double(orow[x]);
      if (!isnan(val)) ++written;
      if (!alive) {
        if (d.empty_row_zero ? !(val == 0.0) : !isnan(val)) ++dead_not_nan;
      } else if (isnan(val)) {
        ++unwritten;
      } else if (isinf(val)) {
        ++infinite;
      }
    }
  }
  for (int64_t x = thread; x < buffer_elems; x += threads) not_nan += !isnan(to_double(buffer[x]));
  rows = warp_sum(rows); dead = warp_sum(dead); unwritten = warp_sum(unwritten); infinite = warp_sum(infinite);
  dead_not_nan = warp_sum(dead_not_nan); written = warp_sum(written); not_nan = warp_sum(not_nan);
  if (lane == 0) {
    atomicAdd(&stats->rows, rows);
    atomicAdd(&stats->dead_rows, dead);
    atomicAdd(&stats->unwritten, unwritten);
    atomicAdd(&stats->infinite, infinite);
    atomicAdd(&stats->dead_not_nan, dead_not_nan);
    atomicAdd(&stats->written, written);
    atomicAdd(&stats->buffer_not_nan, not_nan);
  }
}

template <class T>
__global__ void gather_kernel(const T* src, int64_t s0, int64_t s1, int64_t s2, int64_t heads, int64_t group,
                              int64_t rows, int64_t dim, int64_t total, T* dst) {
  for (int64_t x = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; x < total; x += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = x % dim, t = (x / dim) % rows, bh = x / (dim * rows), h = bh % heads, b = bh / heads;
    dst[x] = src[b * s0 + (h / group) * s1 + t * s2 + c];
  }
}

}  // namespace

void fill_attention_mask(void* mask, DType dtype, const AttentionDims& d, uint64_t seed, bool dead_rows,
                         cudaStream_t stream) {
  if (d.mask < 2) return;
  const int64_t count = (d.batch - 1) * d.m[0] + (d.heads - 1) * d.m[1] + (d.seq_q - 1) * d.m[2] + d.seq_k;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    mask_fill_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(mask, d, count, seed);
    FACT_CUDA_LAUNCH();
    if (dead_rows) {
      dead_rows_kernel<T><<<blocks_for(d.batch * d.heads * d.seq_k), kThreads, 0, stream>>>(mask, d, seed ^ 0xdead);
      FACT_CUDA_LAUNCH();
    }
  });
}

void attention_reference(const void* q, const void* k, const void* v, const void* mask, DType dtype,
                         const AttentionDims& d, const AttentionErrorTerms& terms, const int64_t* pairs, int n_pairs,
                         double* ref, double* bound, cudaStream_t stream) {
  if (d.head_dim > kRefThreads) throw Error("attention reference: head_dim " + std::to_string(d.head_dim) + " > 128");
  if (n_pairs <= 0) return;
  const dim3 grid(unsigned(n_pairs), unsigned(std::min<int64_t>(d.seq_q, 65535)));
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    reference_kernel<T><<<grid, kRefThreads, 0, stream>>>(static_cast<const T*>(q), static_cast<const T*>(k),
                                                         static_cast<const T*>(v), mask, d, terms, pairs, ref, bound);
  });
  FACT_CUDA_LAUNCH();
}

void compare_attention(const void* o, DType dtype, const AttentionDims& d, const int64_t* pairs, int n_pairs,
                       const double* ref, const double* bound, AttentionCompareStats* stats, cudaStream_t stream) {
  FACT_CUDA(cudaMemsetAsync(stats, 0, sizeof(AttentionCompareStats), stream));
  const int64_t total = int64_t(n_pairs) * d.seq_q * d.head_dim;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    compare_kernel<T><<<std::min(blocks_for(total), 1024), kThreads, 0, stream>>>(static_cast<const T*>(o), d, pairs,
                                                                                 n_pairs, ref, bound, stats);
  });
  FACT_CUDA_LAUNCH();
}

void check_attention_coverage(const void* buffer, int64_t buffer_elems, int64_t guard, const void* mask, DType dtype,
                              const AttentionDims& d, AttentionCoverageStats* stats, cudaStream_t stream) {
  FACT_CUDA(cudaMemsetAsync(stats, 0, sizeof(AttentionCoverageStats), stream));
  const int64_t work = std::max(d.batch * d.heads * d.seq_q * 32, buffer_elems);
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    coverage_kernel<T><<<std::min(blocks_for(work), 8192), kThreads, 0, stream>>>(static_cast<const T*>(buffer),
                                                                                 buffer_elems, guard, mask, d, stats);
  });
  FACT_CUDA_LAUNCH();
}

void gather_heads(const void* src, DType dtype, const int64_t strides[3], int64_t batch, int64_t heads, int64_t group,
                  int64_t rows, int64_t dim, void* dst, cudaStream_t stream) {
  const int64_t total = batch * heads * rows * dim;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    gather_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(static_cast<const T*>(src), strides[0], strides[1],
                                                                strides[2], heads, group, rows, dim, total,
                                                                static_cast<T*>(dst));
  });
  FACT_CUDA_LAUNCH();
}

}  // namespace fact::realize
