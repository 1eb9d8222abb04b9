// The fused-attention problem a plan pattern describes (rule "attention", docs/03-rules.md,
// "problem"; the kernels' C ABI is attention_abi.h):
//
//   O[b, h, i, :] = softmax_j(scale * Q[b, h, i, :] . K[b, g(h), j, :] + mask(b, h, i, j)) @ V[b, g(h), :, :]
//
// b < batch, h < heads, g(h) = h / (heads / kv_heads), i < seq_q, j < seq_k, head dim D.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "families/attention/mask_kind.h"
#include "engine/kernel_dtype.h"

namespace fact::realize {

/// How the mask removes or weights keys, its plan spelling (mask_name, mask_from_name) and
/// mask_has_tensor: one definition with discovery's (families/attention/mask_kind.h).
using fact::MaskKind;
using fact::mask_has_tensor;
using fact::mask_name;

/// Strides in elements of one operand's (batch, head, row) dimensions; its last dimension
/// (head dim D for Q/K/V/O, key j for the mask) is contiguous. A stride may be 0 (the
/// operand is broadcast along that dimension), except O's.
struct AttentionStrides {
  int64_t batch = 0, head = 0, row = 0;
};

struct AttentionProblem {
  int64_t batch = 1, heads = 1, kv_heads = 1, seq_q = 1, seq_k = 1, head_dim = 64;
  DType dtype = DType::f32;   // Q, K, V, O (and an additive mask)
  double scale = 1.0;         // multiplies q.k before the mask and the softmax
  MaskKind mask = MaskKind::none;
  AttentionStrides q, k, v, o, mask_strides;  // mask_strides only for a mask tensor
  std::string output_layout = "bhtd";         // O's dims outermost first: "bhtd", "bthd", "tbhd", ...
  std::string form;  // optional: how the graph wrote it, "matmul" | "sdpa" (docs/03-rules.md); "" if absent

  /// Elements each allocation spans (largest offset + 1): Q and O over (batch, heads,
  /// seq_q, D), K and V over (batch, kv_heads, seq_k, D), the mask over (batch, heads,
  /// seq_q, seq_k) (0 without a mask tensor).
  int64_t extent_q() const;
  int64_t extent_k() const;
  int64_t extent_v() const;
  int64_t extent_o() const;
  int64_t extent_mask() const;
  /// Bytes of one mask element: Q's dtype for additive, 1 (uint8) for keep/drop, 0 else.
  std::size_t mask_bytes() const;
  /// Q heads per K/V head (heads / kv_heads).
  int64_t group() const { return heads / kv_heads; }
  /// Multiply-adds of Q K^T and P V, counting every (i, j) pair (causal: only j <= i), x 2.
  double flops() const;
};

/// Reads a plan pattern's "problem" object of kind "attention": batch, heads, kv_heads,
/// seq_q, seq_k, head_dim (positive integers, heads a multiple of kv_heads), dtype
/// ("float32" | "bfloat16" | "float16"), scale (a finite number), mask, strides
/// {"q", "k", "v", "o": [batch, head, row] integers >= 0; "mask": the same, or null when
/// the mask kind reads no tensor}, output_layout (an order of b, h, t, then d: "bhtd", "bthd",
/// "tbhd", ...; strides.o is authoritative) and, optionally, form (a
/// string, how eager computes it: "matmul" or "sdpa"). O's strides must
/// not make two of its elements share memory, and Q/K/V rows must not overlap (row stride
/// >= head_dim). Throws fact::Error naming the missing or bad field.
AttentionProblem attention_problem_from_json(const nlohmann::json& j);

/// True when `layout` names an order of b, h and t followed by d ("bhtd", "bthd", "tbhd",
/// ...): the dims of O in the pattern's output, outermost first (strides.o says where).
bool valid_output_layout(const std::string& layout);

/// True when a row whose keys are all removed must give 0 rather than NaN: attention written
/// with F.scaled_dot_product_attention (form "sdpa": torch's safe softmax), for which the
/// runtime sets FACT_ATTN_FLAG_EMPTY_ROW_ZERO (docs/05-composition.md, "Fully masked rows");
/// an explicit softmax over a row of -inf (form "matmul") gives NaN.
inline bool attention_empty_row_zero(const AttentionProblem& p) { return p.form == "sdpa"; }

}  // namespace fact::realize
