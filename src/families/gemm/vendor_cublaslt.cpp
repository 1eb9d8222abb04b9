// The cuBLASLt vendor candidate (see gemm_candidates.h).
#include <cublasLt.h>

#include "engine/cuda_check.h"
#include "families/gemm/candidates.h"
#include "engine/gpu_kernels.h"

namespace fact::realize {

namespace {

#define FACT_LT(call) FACT_CUBLAS(call)

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

class CublasLtCandidate final : public GemmCandidate {
 public:
  CublasLtCandidate(const GemmProblem& p, Precision policy)
      : p_(p), policy_(policy), name_(vendor_candidate_name("cublaslt", p, policy)) {}
  ~CublasLtCandidate() override {
    if (layout_d_) cublasLtMatrixLayoutDestroy(layout_d_);
    if (layout_a_) cublasLtMatrixLayoutDestroy(layout_a_);
    if (layout_b_) cublasLtMatrixLayoutDestroy(layout_b_);
    if (desc_) cublasLtMatmulDescDestroy(desc_);
    if (lt_) cublasLtDestroy(lt_);
  }
  const std::string& name() const override { return name_; }
  const char* impl() const override { return "vendor"; }
  size_t workspace_bytes() const override { return workspace_.bytes(); }

  // Row-major D = A*B is column-major D^T (N x M) = B^T * A^T: cuBLASLt's first operand is
  // the B buffer (op N when B is row-major, T when column-major), its second the A buffer.
  std::string prepare(const FactGemmArgs& a, GpuContext&) override {
    FACT_LT(cublasLtCreate(&lt_));
    FACT_LT(cublasLtMatmulDescCreate(&desc_, vendor_compute_type(p_, policy_), CUDA_R_32F));
    const cublasOperation_t op_b = p_.layout_b == Layout::Row ? CUBLAS_OP_N : CUBLAS_OP_T;
    const cublasOperation_t op_a = p_.layout_a == Layout::Row ? CUBLAS_OP_N : CUBLAS_OP_T;
    FACT_LT(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &op_b, sizeof op_b));
    FACT_LT(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &op_a, sizeof op_a));
    use_bias_epilogue_ = a.bias && a.beta == 1.0f;
    if (use_bias_epilogue_) {
      const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
      FACT_LT(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
      const cudaDataType_t bias_type = cuda_data_type(p_.dtype_epi);
      FACT_LT(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type));
    }
    auto make_layout = [&](cublasLtMatrixLayout_t* l, DType d, int64_t rows, int64_t cols, int64_t ld, int64_t bs) {
      FACT_LT(cublasLtMatrixLayoutCreate(l, cuda_data_type(d), uint64_t(rows), uint64_t(cols), ld));
      const int32_t count = int32_t(a.l);
      FACT_LT(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
      FACT_LT(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &bs, sizeof bs));
    };
    if (op_b == CUBLAS_OP_N) make_layout(&layout_b_, p_.dtype_b, a.n, a.k, a.ldb, a.batch_stride_b);
    else make_layout(&layout_b_, p_.dtype_b, a.k, a.n, a.ldb, a.batch_stride_b);
    if (op_a == CUBLAS_OP_N) make_layout(&layout_a_, p_.dtype_a, a.k, a.m, a.lda, a.batch_stride_a);
    else make_layout(&layout_a_, p_.dtype_a, a.m, a.k, a.lda, a.batch_stride_a);
    make_layout(&layout_d_, p_.dtype_d, a.n, a.m, a.ldd, a.batch_stride_d);

    cublasLtMatmulPreference_t pref = nullptr;
    FACT_LT(cublasLtMatmulPreferenceCreate(&pref));
    FACT_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &kWorkspaceBytes, sizeof kWorkspaceBytes));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt_, desc_, layout_b_, layout_a_, layout_d_, layout_d_,
                                                       pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) return "cuBLASLt heuristic found no algorithm";
    algo_ = result.algo;
    workspace_ = DeviceBuffer(std::max(result.workspaceSize, size_t(1)));
    return "";
  }

  void run(const FactGemmArgs& a, GpuContext& gpu) override {
    float beta = 0.0f;
    if (a.bias && use_bias_epilogue_) {
      FACT_LT(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &a.bias, sizeof a.bias));
    } else if (a.bias) {
      broadcast_rows(a.d, false, a.bias, p_.dtype_d, p_.dtype_epi, a.l, a.m, a.n, a.ldd, a.batch_stride_d, gpu.stream());
      beta = a.beta;
    }
    const float alpha = a.alpha;
    FACT_LT(cublasLtMatmul(lt_, desc_, &alpha, a.b, layout_b_, a.a, layout_a_, &beta, a.d, layout_d_,
                           a.d, layout_d_, &algo_, workspace_.get(), workspace_.bytes(), gpu.stream()));
  }

 private:
  GemmProblem p_;
  Precision policy_;
  std::string name_;
  cublasLtHandle_t lt_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t layout_a_ = nullptr, layout_b_ = nullptr, layout_d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  bool use_bias_epilogue_ = false;
  DeviceBuffer workspace_;
};

}  // namespace

std::unique_ptr<GemmCandidate> make_cublaslt_candidate(const GemmProblem& p, Precision policy) {
  return std::make_unique<CublasLtCandidate>(p, policy);
}

}  // namespace fact::realize
