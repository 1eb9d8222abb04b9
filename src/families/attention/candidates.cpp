#include "families/attention/candidates.h"

#include <fmt/format.h>

#include "families/attention/verify_kernels.h"
#include "engine/cuda_check.h"
#include "engine/device_buffer.h"
#include "engine/library_candidate.h"

namespace fact::realize {

FactAttentionArgs make_attention_args(const AttentionProblem& p, const void* q, const void* k, const void* v,
                                      void* o, const void* mask) {
  FactAttentionArgs a{};
  a.batch = p.batch; a.heads = p.heads; a.kv_heads = p.kv_heads;
  a.seq_q = p.seq_q; a.seq_k = p.seq_k; a.head_dim = p.head_dim;
  a.q = q; a.q_batch_stride = p.q.batch; a.q_head_stride = p.q.head; a.q_row_stride = p.q.row;
  a.k = k; a.k_batch_stride = p.k.batch; a.k_head_stride = p.k.head; a.k_row_stride = p.k.row;
  a.v = v; a.v_batch_stride = p.v.batch; a.v_head_stride = p.v.head; a.v_row_stride = p.v.row;
  a.o = o; a.o_batch_stride = p.o.batch; a.o_head_stride = p.o.head; a.o_row_stride = p.o.row;
  if (mask_has_tensor(p.mask)) {
    a.mask = mask;
    a.mask_batch_stride = p.mask_strides.batch;
    a.mask_head_stride = p.mask_strides.head;
    a.mask_row_stride = p.mask_strides.row;
  }
  a.scale = float(p.scale);
  a.flags = attention_empty_row_zero(p) ? FACT_ATTN_FLAG_EMPTY_ROW_ZERO : 0;
  a.window = p.window;
  if (p.mask_prologue && p.mask == MaskKind::additive) {
    a.mask_rsub = float(p.mask_prologue->rsub);  // ATen casts the scalars to fp32 (its opmath type)
    a.mask_scale = float(p.mask_prologue->scale);
    a.mask_affine = 1;
  }
  return a;
}

namespace {

std::string return_code_text(int rc) {
  switch (rc) {
    case FACT_ATTN_ERR_SHAPE: return "shape: head_dim, a size or the head grouping";
    case FACT_ATTN_ERR_STRIDE: return "a stride or pointer breaks 16-byte vector loads";
    case FACT_ATTN_ERR_MASK: return "mask given to a kernel without one, or missing, or a window without causal, or a mask prologue without an additive mask";
    case FACT_ATTN_ERR_RANGE: return "an index would overflow 32 bits";
    case FACT_ATTN_ERR_WORKSPACE: return "the workspace is missing, unaligned or smaller than _workspace_bytes";
    default: break;
  }
  if (rc >= FACT_ATTN_ERR_CUDA_BASE) return cudaGetErrorName(cudaError_t(rc - FACT_ATTN_ERR_CUDA_BASE));
  return "unknown code";
}

cublasComputeType_t vendor_compute(const AttentionProblem& p, Precision policy) {
  return p.dtype == DType::f32 && policy != Precision::fp32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

class VendorBound final : public AttentionCandidate {
 public:
  VendorBound(const AttentionProblem& p, Precision policy)
      : p_(p), name_("vendor"), note_(attention_vendor_note(p, policy)), compute_(vendor_compute(p, policy)) {}
  const std::string& name() const override { return name_; }
  const char* impl() const override { return "vendor"; }
  bool verifiable() const override { return false; }
  std::string note() const override { return note_; }

  std::string prepare(const FactAttentionArgs& a, GpuContext& gpu) override {
    const int64_t bh = p_.batch * p_.heads;
    const int64_t limit = 0x7fffffff;
    if (bh > limit || p_.seq_q > limit || p_.seq_k > limit) {
      return "the batched GEMMs' sizes exceed cuBLAS's 32-bit arguments";
    }
    const size_t e = dtype_bytes(p_.dtype);
    const size_t q_bytes = size_t(bh * p_.seq_q * p_.head_dim) * e, kv_bytes = size_t(bh * p_.seq_k * p_.head_dim) * e;
    const size_t s_bytes = size_t(bh) * size_t(p_.seq_q) * size_t(p_.seq_k) * e;
    size_t free_bytes = 0, total_bytes = 0;
    FACT_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    const size_t need = 2 * q_bytes + 2 * kv_bytes + s_bytes;
    if (double(need) > 0.8 * double(free_bytes)) {
      return fmt::format("the scores S = Q K^T need {:.1f} GiB (with the copies {:.1f} GiB) of the {:.1f} GiB free",
                         double(s_bytes) / (1 << 30), double(need) / (1 << 30), double(free_bytes) / (1 << 30));
    }
    q_ = DeviceBuffer(q_bytes);
    k_ = DeviceBuffer(kv_bytes);
    v_ = DeviceBuffer(kv_bytes);
    s_ = DeviceBuffer(s_bytes);
    o_ = DeviceBuffer(q_bytes);
    const int64_t qs[3] = {a.q_batch_stride, a.q_head_stride, a.q_row_stride};
    const int64_t ks[3] = {a.k_batch_stride, a.k_head_stride, a.k_row_stride};
    const int64_t vs[3] = {a.v_batch_stride, a.v_head_stride, a.v_row_stride};
    cudaStream_t s = gpu.stream();
    gather_heads(a.q, p_.dtype, qs, p_.batch, p_.heads, 1, p_.seq_q, p_.head_dim, q_.get(), s);
    gather_heads(a.k, p_.dtype, ks, p_.batch, p_.heads, p_.group(), p_.seq_k, p_.head_dim, k_.get(), s);
    gather_heads(a.v, p_.dtype, vs, p_.batch, p_.heads, p_.group(), p_.seq_k, p_.head_dim, v_.get(), s);
    gpu.sync();
    return "";
  }

  // Row-major [T, D] tensors are column-major [D, T]: S^T (Tk x Tq, ld Tk) = K (op T of the
  // D x Tk buffer) * Q^T (D x Tq); O^T (D x Tq, ld D) = V^T (D x Tk) * S^T (Tk x Tq).
  void run(const FactAttentionArgs&, GpuContext& gpu) override {
    const int bh = int(p_.batch * p_.heads), tq = int(p_.seq_q), tk = int(p_.seq_k), d = int(p_.head_dim);
    const cudaDataType_t type = cuda_data_type(p_.dtype);
    const float scale = float(p_.scale), one = 1.0f, zero = 0.0f;
    FACT_CUBLAS(cublasGemmStridedBatchedEx(gpu.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, tk, tq, d, &scale, k_.get(), type, d,
                                           int64_t(tk) * d, q_.get(), type, d, int64_t(tq) * d, &zero, s_.get(), type,
                                           tk, int64_t(tq) * tk, bh, compute_, CUBLAS_GEMM_DEFAULT));
    FACT_CUBLAS(cublasGemmStridedBatchedEx(gpu.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, d, tq, tk, &one, v_.get(), type, d,
                                           int64_t(tk) * d, s_.get(), type, tk, int64_t(tq) * tk, &zero, o_.get(), type,
                                           d, int64_t(tq) * d, bh, compute_, CUBLAS_GEMM_DEFAULT));
  }

 private:
  AttentionProblem p_;
  std::string name_, note_;
  cublasComputeType_t compute_;
  DeviceBuffer q_, k_, v_, s_, o_;
};

}  // namespace

std::unique_ptr<AttentionCandidate> load_attention_candidate(const std::string& name, const std::string& library,
                                                             const std::string& symbol) {
  return std::make_unique<LibraryCandidate<FactAttentionArgs>>(name, library, symbol, LibraryCandidate<FactAttentionArgs>::Adjust{},
                                                                &return_code_text);
}

std::unique_ptr<AttentionCandidate> make_attention_vendor_bound(const AttentionProblem& p, Precision policy) {
  return std::make_unique<VendorBound>(p, policy);
}

std::string attention_vendor_note(const AttentionProblem& p, Precision policy) {
  const bool tf32 = vendor_compute(p, policy) == CUBLAS_COMPUTE_32F_FAST_TF32;
  return fmt::format(
      "a lower bound of the ATen path: its two batched GEMMs alone (S = scale * Q K^T, then S V), cuBLAS "
      "strided-batched on contiguous [{} x {}, T, {}] {} copies, {}; the softmax, mask and scale passes and the "
      "copies are not charged",
      p.batch, p.heads, p.head_dim, to_string(p.dtype), tf32 ? "TF32 compute" : "fp32 compute") +
         (p.form == "sdpa" ? "; eager runs this pattern as scaled_dot_product_attention, whose fused kernels this "
                             "bound does not describe (they may run below it)"
                           : "");
}

}  // namespace fact::realize
