// The tail kernel of a GEMM pattern whose GEMM the vendor library runs: the pattern's
// elementwise tail (discovery's epilogue tree) rendered as one plain CUDA elementwise kernel
// over D (templates/tail_elementwise.cu.in), so that a vendor winner keeps its tail fused
// instead of running one ATen kernel per node. The kernel evaluates the tail's epilogue
// program (program.h, compile_epilogue) in fp32, the evaluator verification uses; it takes
// FactGemmArgs (abi.h: D = tail(C), C in `a`), and is built, cached and loaded like a GEMM
// kernel.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "engine/kernel_dtype.h"

namespace fact::realize {

/// "fact_tail_<f32|bf16|f16>_evt<8 hex>": D's dtype and the first 8 hex digits of SHA-256 of
/// the tree and its inputs' broadcast kinds (epilogue_token, as GEMM kernel names spell a tail).
std::string tail_kernel_name(const nlohmann::json& tree, const nlohmann::json& broadcast, DType dtype);

/// The kernel's complete .cu source (the text alone determines the object). `tree` is over
/// acc = the GEMM's result as the vendor wrote it; `broadcast` maps c0..c3 to "n", "m" or
/// "mn". Throws fact::Error when the tree does not compile to a program (compile_epilogue),
/// names an input other than c0..c3, or a kind other than n, m, mn; or for a dtype other
/// than fp32, bf16, fp16.
std::string render_tail_kernel(const nlohmann::json& tree, const nlohmann::json& broadcast, DType dtype);

}  // namespace fact::realize
