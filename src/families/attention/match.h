// Graph walking of the `attention` rule (src/families/attention/rule.cpp): the forms of
// attention it recognizes (attention_match.cpp), the mask proof (attention_mask.cpp), K/V
// repeats and the head-merge absorption (attention_heads.cpp).
// docs/03-rules.md, "The attention rule".
//
//   O = softmax(scale * q @ k^T + mask) @ v      q [B,Hq,Tq,D], k, v [B,Hkv,Tk,D]
//
// Two entry points find the same Parts in two spellings: match_written (anchored at the
// softmax of a hand-written attention) and match_sdpa (aten.scaled_dot_product_attention).
// Both return nullopt when the node is not one the rule is about and throw a Rejection (reject) when it
// is but a constraint fails (the reason names the values).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discover/rule.h"
#include "families/attention/mask_kind.h"
#include "graph/graph.h"

namespace fact::discover::attention {

/// A failed constraint is thrown as a Rejection (discover::reject, rule.h).
using fact::discover::reject;

/// The mask kinds and the plan's problem.mask spelling (mask_name), one definition with
/// realization's (families/attention/mask_kind.h).
using fact::MaskKind;
using fact::mask_name;

/// What a matcher found.
struct Parts {
  std::string form;        // "matmul" (written by hand) or "sdpa"
  std::string q, k, v;     // values the kernel reads; k before its transpose, un-repeated for GQA
  bool kv_repeat_swallowed = false;  // k, v are the un-repeated values of a repeat_interleave / expand
  bool grouped_allowed = false;      // k/v may have fewer heads than q (swallowed repeat, enable_gqa)
  MaskKind mask = MaskKind::none;
  std::string mask_value;  // the mask operand (additive, keep, drop); empty otherwise
  std::string causal_buffer;  // the buffer/constant a causal mask was proven from ("" if none)
  double scale = 1.0;      // multiplies q.k
  std::string core;        // the value of `@ v` (or of the SDPA node): O in [B,H,Tq,D] order
  std::vector<std::string> nodes;  // nodes replaced so far, any order
};

/// A hand-written attention anchored at `softmax` (aten.softmax.int / aten._softmax):
///   [q * c]  @  [repeat](k)[* c].transpose(-2, -1)   (aten.matmul / aten.bmm)
///   then any of: * c, / c (c > 0), masked_fill(mask, -inf), + mask   (in an order that
///   keeps scale * scores + mask), softmax(dim=-1), [dropout(p=0 or train=False)], @ [repeat](v).
/// nullopt: the softmax is not between two products (not attention at all).
/// Throws a Rejection: it is, but a part is not what the kernel computes.
std::optional<Parts> match_written(const graph::GraphIndex& g, const graph::Node& softmax);

/// aten.scaled_dot_product_attention.default(q, k, v, attn_mask, dropout_p, is_causal,
/// scale=, enable_gqa=): nullopt for any other op; throws a Rejection on dropout_p > 0, a mask of
/// another dtype, both a mask and is_causal, a non-finite scale.
std::optional<Parts> match_sdpa(const graph::GraphIndex& g, const graph::Node& sdpa);

/// Grouped-query attention: when p.k and p.v (read by k_consumer / v_consumer; nullptr: not
/// swallowable) are both [B, Hkv*n, T, D] repeats of [B, Hkv, T, D] values by
/// repeat_interleave(n, dim=1) or [:, :, None].expand(B, Hkv, n, T, D).reshape(B, Hkv*n, T, D),
/// each step read only by the next, replaces them by the un-repeated values and adds the
/// repeat nodes to p.nodes. Both repeat query head h from kv head h / n. Otherwise no change.
void swallow_repeats(const graph::GraphIndex& g, Parts& p, const graph::Node* k_consumer,
                     const graph::Node* v_consumer);

/// Where O[b, h, t, :] lands in the pattern's output value.
struct OutputLayout {
  std::string value;                 // the pattern's output (contiguous)
  std::array<int64_t, 3> strides{};  // elements between consecutive b, h, t; d is unit stride
  std::vector<std::string> nodes;    // the head-merge nodes absorbed after `core`
};

/// Follows `core` ([B,H,T,D] or [N,T,D], `rank` 4 or 3) through single-use transpose /
/// permute / contiguous / clone / view / reshape nodes and stops at the last contiguous value
/// (so `y.transpose(1, 2).contiguous().view(B, T, C)` is written directly as [B,T,H*D]).
/// Throws a Rejection when no contiguous value with a unit-stride head dim is reached.
OutputLayout absorb_output(const graph::GraphIndex& g, const std::string& core, int64_t rank);

/// What a mask value provably holds over its last two dims [R, C] (its leading dims do not
/// matter), followed back through the ops that build masks: a buffer or constant with value
/// class "tril", aten.ones, tril(x, 0) / triu(x, 1) of ones, slices from 0 with step 1,
/// views and expands that keep the last two dims, eq(x, 0) / logical_not / bitwise_not
/// (negation), ne(x, 0) and dtype casts (truthiness kept).
struct MaskProof {
  enum class Pattern { unknown, lower, strict_upper };  // true iff j <= i / true iff j > i
  Pattern pattern = Pattern::unknown;
  std::vector<const graph::Node*> chain;  // the nodes followed, from the mask's producer back
  std::string source;  // the placeholder the chain starts from ("" for aten.ones or a node)
  bool from_buffer = false;  // source is a buffer or constant
  std::string why;           // for unknown: why nothing is proven
};
MaskProof prove_mask(const graph::GraphIndex& g, const std::string& mask);

// ---- small graph helpers shared by the attention files -------------------------------

/// True when `value` is one of the graph's outputs.
bool is_graph_output(const graph::GraphIndex& g, std::string_view value);
/// The one node reading `value` when exactly one does and it is not a graph output; else nullptr.
const graph::Node* only_user(const graph::GraphIndex& g, const std::string& value);
/// "[2, 4, 8, 8]".
std::string dims(const std::vector<int64_t>& v);
/// A dim index with negatives counted from the end (-1 of rank 4 is 3); not range-checked.
int64_t normalized_dim(int64_t d, int64_t rank);

}  // namespace fact::discover::attention
