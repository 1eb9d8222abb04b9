#include "families/norm/candidates.h"

#include <fmt/format.h>

#include "engine/copy_bound.h"
#include "engine/cuda_check.h"
#include "engine/library_candidate.h"

namespace fact::realize {

FactNormArgs make_norm_args(const NormProblem& p, const void* x, const void* residual, const void* weight,
                            const void* bias, void* out, void* sum) {
  FactNormArgs a{};
  a.rows = p.rows;
  a.cols = p.cols;
  a.x = x;
  a.x_row_stride = p.x_stride;
  if (p.residual) {
    a.residual = residual;
    a.residual_row_stride = p.residual_stride;
  }
  a.weight = p.weight ? weight : nullptr;
  a.bias = p.bias ? bias : nullptr;
  a.out = out;
  a.out_row_stride = p.cols;
  if (p.writes_sum()) {
    a.sum = sum;
    a.sum_row_stride = p.cols;
  }
  a.eps = float(p.eps);
  return a;
}

std::string norm_return_code_text(int rc) {
  switch (rc) {
    case FACT_NORM_ERR_SHAPE: return "shape: cols differs from the kernel's, or no rows";
    case FACT_NORM_ERR_STRIDE: return "a stride or pointer breaks the kernel's vector loads";
    case FACT_NORM_ERR_OPERAND: return "residual, weight, bias or sum given to a kernel without it, or missing";
    case FACT_NORM_ERR_RANGE: return "more rows than the grid holds";
    default: break;
  }
  if (rc >= FACT_NORM_ERR_CUDA_BASE) return cudaGetErrorName(cudaError_t(rc - FACT_NORM_ERR_CUDA_BASE));
  return "unknown code";
}

double norm_bytes(const NormProblem& p) {
  const double cells = double(p.rows) * double(p.cols), e = double(dtype_bytes(p.dtype));
  double b = cells * (e * (p.residual ? 2 : 1) + double(dtype_bytes(p.out_dtype)));
  if (p.writes_sum()) b += cells * e;
  if (p.param_dtype) b += double(p.cols) * double(dtype_bytes(*p.param_dtype)) * ((p.weight ? 1 : 0) + (p.bias ? 1 : 0));
  return b;
}

std::unique_ptr<NormCandidate> load_norm_candidate(const std::string& name, const std::string& library,
                                                   const std::string& symbol) {
  return std::make_unique<LibraryCandidate<FactNormArgs>>(name, library, symbol, LibraryCandidate<FactNormArgs>::Adjust{},
                                                          &norm_return_code_text);
}

std::unique_ptr<NormCandidate> make_norm_vendor_bound(const NormProblem& p) {
  return std::make_unique<CopyBound<FactNormArgs>>(norm_bytes(p));
}

}  // namespace fact::realize
