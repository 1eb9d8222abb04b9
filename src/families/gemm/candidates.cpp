#include "families/gemm/candidates.h"

#include "engine/cuda_check.h"
#include "engine/gpu_kernels.h"
#include "engine/library_candidate.h"

namespace fact::realize {

FactGemmArgs make_gemm_args(const GemmProblem& p, const void* a, const void* b, const void* bias,
                            void* d) {
  FactGemmArgs args{};
  args.m = p.m; args.n = p.n; args.k = p.k; args.l = p.l;
  args.a = a; args.lda = p.lda; args.batch_stride_a = p.batch_stride_a;
  args.b = b; args.ldb = p.ldb; args.batch_stride_b = p.batch_stride_b;
  args.bias = bias;
  args.d = d; args.ldd = p.ldd; args.batch_stride_d = p.batch_stride_d;
  args.alpha = float(p.alpha);
  args.beta = float(p.beta);
  return args;
}

namespace {

// Row-major D = A*B is column-major D^T = B^T * A^T: cuBLAS sees B first. A row-major
// operand read column-major is already transposed (op N); a column-major one needs op T.
struct CublasMapping {
  cublasOperation_t op_first, op_second;  // for B, then A
};
CublasMapping cublas_mapping(const GemmProblem& p) {
  return {p.layout_b == Layout::Row ? CUBLAS_OP_N : CUBLAS_OP_T,
          p.layout_a == Layout::Row ? CUBLAS_OP_N : CUBLAS_OP_T};
}


class CublasCandidate final : public GemmCandidate {
 public:
  CublasCandidate(const GemmProblem& p, Precision policy)
      : p_(p), name_(vendor_candidate_name("cublas", p, policy)), compute_(vendor_compute_type(p, policy)) {}
  const std::string& name() const override { return name_; }
  const char* impl() const override { return "vendor"; }
  std::string prepare(const FactGemmArgs&, GpuContext&) override { return ""; }
  void run(const FactGemmArgs& a, GpuContext& gpu) override {
    float beta = 0.0f;
    if (a.bias) {
      broadcast_rows(a.d, false, a.bias, p_.dtype_d, p_.dtype_epi, a.l, a.m, a.n, a.ldd, a.batch_stride_d, gpu.stream());
      beta = a.beta;
    }
    const auto map = cublas_mapping(p_);
    const float alpha = a.alpha;
    FACT_CUBLAS(cublasGemmStridedBatchedEx(
        gpu.cublas(), map.op_first, map.op_second, int(a.n), int(a.m), int(a.k), &alpha,
        a.b, cuda_data_type(p_.dtype_b), int(a.ldb), a.batch_stride_b,
        a.a, cuda_data_type(p_.dtype_a), int(a.lda), a.batch_stride_a, &beta,
        a.d, cuda_data_type(p_.dtype_d), int(a.ldd), a.batch_stride_d, int(a.l), compute_,
        CUBLAS_GEMM_DEFAULT));
  }

 private:
  GemmProblem p_;
  std::string name_;
  cublasComputeType_t compute_;
};

}  // namespace

cublasComputeType_t vendor_compute_type(const GemmProblem& p, Precision policy) {
  if (p.dtype_a == DType::f32 && policy == Precision::tf32) return CUBLAS_COMPUTE_32F_FAST_TF32;
  if (p.dtype_a == DType::f32 && policy == Precision::bf16) return CUBLAS_COMPUTE_32F_FAST_16BF;
  return CUBLAS_COMPUTE_32F;
}

std::unique_ptr<GemmCandidate> load_cutlass_candidate(const std::string& name,
                                                      const std::string& library,
                                                      const std::string& symbol,
                                                      const GemmRuntime& runtime) {
  // Scheduler options are run-time arguments: every call carries this variant's.
  auto with_runtime = [runtime](FactGemmArgs args) {
    args.splits = runtime.splits;
    args.raster = runtime.raster;
    args.swizzle = runtime.swizzle;
    return args;
  };
  return std::make_unique<LibraryCandidate<FactGemmArgs>>(name, library, symbol, with_runtime);
}

std::string vendor_candidate_name(const std::string& library, const GemmProblem& p, Precision policy) {
  return library + "_" + (p.dtype_a != DType::f32 ? to_string(p.dtype_a) : std::string(precision_name(policy)));
}

std::unique_ptr<GemmCandidate> make_cublas_candidate(const GemmProblem& p, Precision policy) {
  return std::make_unique<CublasCandidate>(p, policy);
}

void reference_gemm(const GemmProblem& p, const double* a64, const double* b64, double* d64,
                    GpuContext& gpu) {
  const auto map = cublas_mapping(p);
  const double alpha = p.alpha, beta = p.bias_n ? p.beta : 0.0;
  FACT_CUBLAS(cublasDgemmStridedBatched(
      gpu.cublas(), map.op_first, map.op_second, int(p.n), int(p.m), int(p.k), &alpha,
      b64, int(p.ldb), p.batch_stride_b, a64, int(p.lda), p.batch_stride_a, &beta,
      d64, int(p.ldd), p.batch_stride_d, int(p.l)));
}

}  // namespace fact::realize
