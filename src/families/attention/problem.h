// The fused-attention problem a plan pattern describes (rule "attention", docs/03-rules.md,
// "problem"; the kernels' C ABI is attention_abi.h):
//
//   O[b, h, i, :] = softmax_j(scale * Q[b, h, i, :] . K[b, g(h), j, :] + mask(b, h, i, j)) @ V[b, g(h), :, :]
//
// b < batch, h < heads, g(h) = h / (heads / kv_heads), i < seq_q, j < seq_k, head dim D.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "families/attention/mask_kind.h"
#include "engine/host_device.h"
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

/// The affine prologue of an additive mask: the term is (rsub - M) * scale (problem fields
/// mask_rsub, mask_scale; docs/03-rules.md, "Masks").
struct AttentionMaskPrologue {
  double rsub = 0.0, scale = 1.0;
};

struct AttentionProblem {
  int64_t batch = 1, heads = 1, kv_heads = 1, seq_q = 1, seq_k = 1, head_dim = 64;
  DType dtype = DType::f32;   // Q, K, V, O (and an additive mask)
  double scale = 1.0;         // multiplies q.k before the mask and the softmax
  MaskKind mask = MaskKind::none;
  AttentionStrides q, k, v, o, mask_strides;  // mask_strides only for a mask tensor
  std::string output_layout = "bhtd";         // O's dims outermost first: "bhtd", "bthd", "tbhd", ...
  std::string form;  // optional: how the graph wrote it, "matmul" | "sdpa" (docs/03-rules.md); "" if absent
  // Optional fields a spelling asks for. The window the kernels compute; the others they do
  // not yet (attention_family says why and the ATen path runs; docs/03-rules.md, "Problem
  // descriptor"):
  int64_t window = 0;          // > 0 with a causal mask: key j takes part iff i - window < j <= i
                               // (the kernels skip the key blocks left of it: attention_tile_keys)
  std::optional<double> fill;  // a finite fill of a keep/drop mask (eager averages V over an emptied row)
  std::string mask_dtype;      // an additive mask's dtype when it is not Q's ("" = Q's)
  int64_t extra_masks = 0;     // masks beyond the first (problem.extra_masks)
  int64_t mask_key_stride = 1; // the mask's stride along the keys (the kernels read 1)
  // An additive mask computed from the mask operand M by an affine prologue (Hugging Face's
  // (1.0 - mask) * torch.finfo(dtype).min): the term added is (rsub - M) * scale, each op
  // rounded to the mask's dtype as ATen's rsub.Scalar and mul do. Absent: the term is M
  // itself. The sm80 kernel computes it (FactAttentionArgs.mask_affine), the float64
  // reference too (verify_kernels.cu); the sm90 kernel does not (attention_sm90_applies).
  std::optional<AttentionMaskPrologue> mask_prologue;

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
  /// Multiply-adds of Q K^T and P V, counting every (i, j) pair that takes part (causal: only
  /// j <= i; with a window only i - window < j <= i: attention_causal_keeps), x 2.
  double flops() const;
};

/// Whether key j takes part in query row i under a causal mask (top-left aligned) with
/// `window` (0: none): j <= i and, for window W > 0, j > i - W (Mistral's sliding window,
/// `kv_pos > q_pos - W`; docs/03-rules.md, "Mask proofs"). The float64 reference, the
/// coverage check and the cost model read this one rule; the kernel templates spell it in
/// their masking (attention_sm80_kernel.cu.in, attention_sm90_kernel.cu.in).
FACT_HD inline bool attention_causal_keeps(int64_t i, int64_t j, int64_t window) {
  return j <= i && (window <= 0 || j > i - window);
}
/// The first key row i keeps under attention_causal_keeps: max(0, i - window + 1), or 0 with
/// no window. The row keeps the keys [first, min(i, seq_k - 1)], none when first >= seq_k.
FACT_HD inline int64_t attention_causal_first_key(int64_t i, int64_t window) {
  return window > 0 && i - window + 1 > 0 ? i - window + 1 : 0;
}

/// The (i, j) pairs of one head that take part, i < seq_q, j < seq_k: all of them, or for a
/// causal mask those attention_causal_keeps keeps (window 0: none). Discovery's estimate and
/// AttentionProblem::flops count these.
int64_t attention_kept_pairs(int64_t seq_q, int64_t seq_k, MaskKind mask, int64_t window);

/// The keys [begin, end) a kernel visits for the query rows [q0, q0 + rows) of `p`, in blocks
/// of `block_n` from `begin` (a multiple of block_n): every key without a causal mask; with
/// one, up to the tile's last row (end = min(seq_k, q0 + rows)) and, with a window, from the
/// block holding the tile's first row's first key, max(0, q0 - window + 1), on. Blocks wholly
/// left of every row's window are skipped; the partial ones are masked key by key. At least
/// one block (begin < end when seq_k > 0): a tile whose rows see no key still runs one block,
/// fully masked, so that its rows are written as empty. The sm80 and sm90 kernels compute
/// the same range (their decode of a tile); the cost models count it.
struct AttentionKeyRange {
  int64_t begin = 0, end = 0;
  int64_t blocks(int64_t block_n) const { return (end - begin + block_n - 1) / block_n; }
};
AttentionKeyRange attention_tile_keys(const AttentionProblem& p, int64_t q0, int64_t rows, int64_t block_n);

/// Reads a plan pattern's "problem" object of kind "attention": batch, heads, kv_heads,
/// seq_q, seq_k, head_dim (positive integers, heads a multiple of kv_heads), dtype
/// ("float32" | "bfloat16" | "float16"), scale (a finite number), mask, strides
/// {"q", "k", "v", "o": [batch, head, row] integers >= 0; "mask": the same, or null when
/// the mask kind reads no tensor}, output_layout (an order of b, h, t, then d: "bhtd", "bthd",
/// "tbhd", ...; strides.o is authoritative) and, optionally, form (a
/// string, how eager computes it: "matmul" or "sdpa"), window (an integer >= 1, with mask
/// causal), fill (a finite number, with mask keep or drop), mask_dtype (a dtype name, with
/// mask additive), extra_masks (an array), mask_key_stride (an integer >= 1, with a mask tensor)
/// and mask_rsub with mask_scale (finite numbers, both or neither, with mask additive: the
/// mask prologue). O's strides must
/// not make two of its elements share memory, and Q/K/V rows must not overlap (row stride
/// >= head_dim). Throws fact::Error naming the missing or bad field.
/// Sizes past 2^31 - 1, strides past 2^48 elements, an operand past
/// 2^48 bytes (kMaxSpanBytes) and an extent past int64 are refused the same way.
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
