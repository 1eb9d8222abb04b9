#include "families/rope/candidates.h"

#include "engine/copy_bound.h"
#include "engine/cuda_check.h"
#include "engine/library_candidate.h"

namespace fact::realize {

FactRopeArgs make_rope_args(const RopeProblem& p, const void* x, const void* cos, const void* sin, void* out) {
  FactRopeArgs a{};
  a.n0 = p.dims[0];
  a.n1 = p.dims[1];
  a.n2 = p.dims[2];
  a.head_dim = p.head_dim;
  a.x = x;
  a.x_stride0 = p.x[0], a.x_stride1 = p.x[1], a.x_stride2 = p.x[2];
  a.cos = cos;
  a.cos_stride0 = p.cos[0], a.cos_stride1 = p.cos[1], a.cos_stride2 = p.cos[2];
  a.sin = sin;
  a.sin_stride0 = p.sin[0], a.sin_stride1 = p.sin[1], a.sin_stride2 = p.sin[2];
  a.out = out;
  a.out_stride0 = p.out[0], a.out_stride1 = p.out[1], a.out_stride2 = p.out[2];
  return a;
}

std::string rope_return_code_text(int rc) {
  switch (rc) {
    case FACT_ROPE_ERR_SHAPE: return "shape: head_dim differs from the kernel's, or an empty dim";
    case FACT_ROPE_ERR_STRIDE: return "a stride or pointer breaks the kernel's vector loads";
    case FACT_ROPE_ERR_OPERAND: return "x, cos, sin or out is null";
    case FACT_ROPE_ERR_RANGE: return "more rows than the grid indexes";
    default: break;
  }
  if (rc >= FACT_ROPE_ERR_CUDA_BASE) return cudaGetErrorName(cudaError_t(rc - FACT_ROPE_ERR_CUDA_BASE));
  return "unknown code";
}

double rope_bytes(const RopeProblem& p) {
  const double e = double(dtype_bytes(p.dtype)), cells = double(p.rows()) * double(p.head_dim);
  return e * (2.0 * cells + double(p.extent(p.cos)) + double(p.extent(p.sin)));
}

std::unique_ptr<RopeCandidate> load_rope_candidate(const std::string& name, const std::string& library,
                                                   const std::string& symbol) {
  return std::make_unique<LibraryCandidate<FactRopeArgs>>(name, library, symbol, LibraryCandidate<FactRopeArgs>::Adjust{},
                                                          &rope_return_code_text);
}

std::unique_ptr<RopeCandidate> make_rope_vendor_bound(const RopeProblem& p) {
  return std::make_unique<CopyBound<FactRopeArgs>>(rope_bytes(p));
}

}  // namespace fact::realize
