// The GEMM problem a plan pattern describes (docs/03-rules.md, "problem"), and the
// precision policy it is realized under (docs/00-design.md §4).
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "base/precision.h"
#include "engine/kernel_dtype.h"

namespace fact::realize {

enum class Layout { Row, Col };

/// D[l] (M x N, row-major, ldd) = alpha * A[l] (M x K) * B[l] (K x N) + beta * bias.
/// Strides are in elements; a batch stride of 0 broadcasts the operand over L.
struct GemmProblem {
  int64_t m = 0, n = 0, k = 0, l = 1;
  DType dtype_a = DType::f32, dtype_b = DType::f32, dtype_d = DType::f32;
  /// The bias's and the fused tail's inputs' element type: dtype_d, unless D is narrowed
  /// to bf16 while they stay fp32 (the plan's "dtype_epi", discover/narrow.h).
  DType dtype_epi = DType::f32;
  Layout layout_a = Layout::Row, layout_b = Layout::Row;
  int64_t lda = 0, ldb = 0, ldd = 0;
  int64_t batch_stride_a = 0, batch_stride_b = 0, batch_stride_d = 0;
  bool bias_n = false;  // bias vector of length N, broadcast along M
  double alpha = 1.0, beta = 1.0;
  /// A fused elementwise tail (docs/03-rules.md, "Epilogues"): discovery's expression tree
  /// over acc = alpha * A * B + beta * bias, and its inputs' broadcast kinds ({"c0": "n"});
  /// null when the pattern computes the GEMM alone.
  nlohmann::json tail_tree = nullptr, tail_broadcast = nullptr;
  int tail_nodes = 0;  // the ATen ops the tail replaces (each one elementwise kernel in eager)
  bool fused() const { return !tail_tree.is_null(); }

  /// Elements each operand's allocation spans (largest offset + 1).
  int64_t extent_a() const;
  int64_t extent_b() const;
  int64_t extent_d() const;
  double flops() const { return 2.0 * double(m) * double(n) * double(k) * double(l); }
};

/// Reads a plan pattern's "problem" object. Throws fact::Error naming the missing or bad
/// field (only kind "gemm", bias null or "n", and dtype_acc absent or "float32" are realized
/// by this family). M, N, K or L past 2^31 - 1, strides past 2^48 elements, an operand past
/// 2^48 bytes (kMaxSpanBytes) and an extent past int64 are refused the same way.
GemmProblem gemm_problem_from_json(const nlohmann::json& j);

/// Attaches a plan pattern's "epilogue" object (discovery's tail: "tree", "broadcast") to
/// `p`. Returns "" when the tail can be fused, else why not (then `p` is left unfused):
/// the tree does not compile to a float64 program, or has no EVT (evt_codegen.h).
std::string attach_tail(GemmProblem& p, const nlohmann::json& epilogue);

/// The tail as a fused kernel computes it: the tree with acc replaced by alpha * acc (when
/// alpha != 1) plus the GEMM's bias along N (input "bias", when it has one), and the
/// matching broadcast kinds. Null when `p` is not fused.
nlohmann::json kernel_tail_tree(const GemmProblem& p);
nlohmann::json kernel_tail_broadcast(const GemmProblem& p);

}  // namespace fact::realize
