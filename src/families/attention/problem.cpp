#include "families/attention/problem.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "base/checked_int.h"
#include "base/error.h"

using nlohmann::json;

namespace fact::realize {

namespace {

// The offset of the last element + 1. Throws fact::Error past int64.
int64_t extent(int64_t b, int64_t h, int64_t t, int64_t cols, const AttentionStrides& s) {
  constexpr const char* what = "plan problem (attention): an operand's extent";
  int64_t e = cols;
  for (auto [n, stride] : {std::pair{b, s.batch}, {h, s.head}, {t, s.row}})
    e = checked_add(e, checked_mul(n - 1, stride, what), what);
  return e;
}

[[noreturn]] void bad(const std::string& field, const std::string& what) {
  throw Error("plan problem (attention): field '" + field + "' " + what);
}

const json& required(const json& j, const std::string& name, const std::string& path) {
  if (!j.is_object() || !j.contains(name)) bad(path, "is missing");
  return j.at(name);
}

int64_t integer(const json& v, const std::string& path) {
  if (!v.is_number_integer()) bad(path, "must be an integer, got " + v.dump());
  return v.get<int64_t>();
}

// A size: 1 .. 2^31 - 1, the range the kernels index with (their launchers answer
// FACT_ATTN_ERR_RANGE past it, abi.h).
int64_t positive(const json& j, const char* name) {
  const int64_t v = integer(required(j, name, name), name);
  if (v <= 0) bad(name, "must be positive, got " + std::to_string(v));
  if (v > std::numeric_limits<int32_t>::max())
    bad(name, "= " + std::to_string(v) + " exceeds 2^31 - 1, the 32-bit range the attention kernels index with");
  return v;
}

std::string string_field(const json& j, const char* name) {
  const json& v = required(j, name, name);
  if (!v.is_string()) bad(name, "must be a string, got " + v.dump());
  return v.get<std::string>();
}

AttentionStrides strides_of(const json& v, const std::string& path) {
  if (!v.is_array() || v.size() != 3) bad(path, "must be [batch, head, row] strides, got " + v.dump());
  AttentionStrides s;
  int64_t* out[3] = {&s.batch, &s.head, &s.row};
  for (int i = 0; i < 3; ++i) {
    *out[i] = integer(v.at(i), path + "[" + std::to_string(i) + "]");
    if (*out[i] < 0) bad(path, "has a negative stride: " + v.dump());
    if (*out[i] > kMaxSpanBytes) bad(path, "has a stride past 2^48: " + v.dump());
  }
  return s;
}

// No two elements of a tensor of `sizes` with `strides` share memory: ordered by stride,
// each dimension of size > 1 steps past everything the smaller ones span.
bool non_overlapping(const std::vector<std::pair<int64_t, int64_t>>& size_stride) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (auto [size, stride] : size_stride) if (size > 1) dims.push_back({stride, size});
  std::sort(dims.begin(), dims.end());
  int64_t span = 0;  // largest offset the smaller dimensions reach
  for (auto [stride, size] : dims) {
    if (stride <= span) return false;
    span = checked_add(span, checked_mul(size - 1, stride, "plan problem (attention): the span of O"),
                       "plan problem (attention): the span of O");
  }
  return true;
}

// The optional fields of spellings the kernels do not compute yet (problem.h).
void read_spelled_extras(const json& j, AttentionProblem& p) {
  if (j.contains("extra_masks")) {
    if (!j.at("extra_masks").is_array()) bad("extra_masks", "must be an array, got " + j.at("extra_masks").dump());
    p.extra_masks = static_cast<int64_t>(j.at("extra_masks").size());
  }
  if (j.contains("mask_key_stride")) {
    p.mask_key_stride = integer(j.at("mask_key_stride"), "mask_key_stride");
    if (p.mask_key_stride < 1 || !mask_has_tensor(p.mask))
      bad("mask_key_stride", "must be an integer >= 1 with a mask tensor, got " + j.at("mask_key_stride").dump());
  }
  if (j.contains("window")) {
    p.window = integer(j.at("window"), "window");
    if (p.window < 1 || p.mask != MaskKind::causal) bad("window", "must be an integer >= 1 with mask causal, got " + j.at("window").dump());
  }
  if (j.contains("fill")) {
    const json& f = j.at("fill");
    if (!f.is_number() || !std::isfinite(f.get<double>()) || (p.mask != MaskKind::keep && p.mask != MaskKind::drop && p.extra_masks == 0))
      bad("fill", "must be a finite number with a keep or drop mask, got " + f.dump());
    p.fill = f.get<double>();
  }
  if (j.contains("mask_dtype")) {
    if (!j.at("mask_dtype").is_string() || p.mask != MaskKind::additive)
      bad("mask_dtype", "must be a dtype name with mask additive, got " + j.at("mask_dtype").dump());
    p.mask_dtype = j.at("mask_dtype").get<std::string>();
  }
  if (j.contains("mask_rsub") || j.contains("mask_scale")) {
    auto number = [&](const char* name) {
      const json& v = j.contains(name) ? j.at(name) : json();
      if (!v.is_number() || !std::isfinite(v.get<double>()) || p.mask != MaskKind::additive)
        bad(name, "must be a finite number with mask additive, given with mask_rsub and mask_scale both, got " + v.dump());
      return v.get<double>();
    };
    p.mask_prologue = AttentionMaskPrologue{number("mask_rsub"), number("mask_scale")};
  }
}

}  // namespace

int64_t AttentionProblem::extent_q() const { return extent(batch, heads, seq_q, head_dim, q); }
int64_t AttentionProblem::extent_k() const { return extent(batch, kv_heads, seq_k, head_dim, k); }
int64_t AttentionProblem::extent_v() const { return extent(batch, kv_heads, seq_k, head_dim, v); }
int64_t AttentionProblem::extent_o() const { return extent(batch, heads, seq_q, head_dim, o); }
int64_t AttentionProblem::extent_mask() const {
  return mask_has_tensor(mask) ? extent(batch, heads, seq_q, seq_k, mask_strides) : 0;
}
std::size_t AttentionProblem::mask_bytes() const {
  return mask == MaskKind::additive ? dtype_bytes(dtype) : mask_has_tensor(mask) ? 1 : 0;
}

namespace {
using Wide = __int128;  // holds every product of two int64 sizes below

// The sum over s in [lo, hi] of clamp(s, 0, c), c >= 0.
Wide sum_clamped(Wide lo, Wide hi, Wide c) {
  Wide sum = 0;
  const Wide full_from = std::max(lo, c);  // s >= c count c each
  if (hi >= full_from) sum += (hi - full_from + 1) * c;
  const Wide x = std::max<Wide>(lo, 1), y = std::min(hi, c - 1);  // 0 < s < c count s
  if (y >= x) sum += (x + y) * (y - x + 1) / 2;
  return sum;
}
}  // namespace

int64_t attention_kept_pairs(int64_t seq_q, int64_t seq_k, MaskKind mask, int64_t window) {
  const Wide q = seq_q, k = seq_k;
  Wide pairs = q * k;
  if (mask == MaskKind::causal) {
    // Closed form of the count attention_causal_keeps gives row by row. Without a window, w is
    // wider than any row. Rows i < min(q, k) keep min(i + 1, w) keys: 1, 2, ..., w, w, ...
    const Wide w = window > 0 ? Wide(window) : q + k;
    const Wide rows = std::min(q, k), ramp = std::min(rows, w);
    pairs = ramp * (ramp + 1) / 2 + (rows - ramp) * w;
    // Rows k <= i < q keep the keys [max(0, i - w + 1), k - 1]: clamp(k + w - 1 - i, 0, k).
    if (q > k) pairs += sum_clamped(k + w - q, w - 1, k);
  }
  if (pairs > Wide(std::numeric_limits<int64_t>::max()))
    throw Error("attention: the kept (query, key) pairs of " + std::to_string(seq_q) + " x " + std::to_string(seq_k) +
                " overflow int64");
  return int64_t(pairs);
}

double AttentionProblem::flops() const {
  return 4.0 * double(attention_kept_pairs(seq_q, seq_k, mask, window)) * double(head_dim) * double(batch) *
         double(heads);
}

AttentionKeyRange attention_tile_keys(const AttentionProblem& p, int64_t q0, int64_t rows, int64_t block_n) {
  if (p.mask != MaskKind::causal) return {0, p.seq_k};
  const int64_t end = std::min(p.seq_k, q0 + rows);
  if (end <= 0) return {0, 0};
  const int64_t last_block = (end - 1) / block_n;
  return {std::min(attention_causal_first_key(q0, p.window) / block_n, last_block) * block_n, end};
}

bool valid_output_layout(const std::string& layout) {
  if (layout.size() != 4 || layout[3] != 'd') return false;
  std::string outer = layout.substr(0, 3);
  std::sort(outer.begin(), outer.end());
  return outer == "bht";
}

AttentionProblem attention_problem_from_json(const json& j) {
  if (!j.is_object()) throw Error("plan problem (attention): not an object: " + j.dump());
  if (string_field(j, "kind") != "attention") bad("kind", "is not 'attention'");
  AttentionProblem p;
  p.batch = positive(j, "batch");
  p.heads = positive(j, "heads");
  p.kv_heads = positive(j, "kv_heads");
  p.seq_q = positive(j, "seq_q");
  p.seq_k = positive(j, "seq_k");
  p.head_dim = positive(j, "head_dim");
  if (p.heads % p.kv_heads != 0) {
    bad("kv_heads", "= " + std::to_string(p.kv_heads) + " does not divide heads = " + std::to_string(p.heads));
  }
  const std::string dtype = string_field(j, "dtype");
  if (dtype == "float32") p.dtype = DType::f32;
  else if (dtype == "bfloat16") p.dtype = DType::bf16;
  else if (dtype == "float16") p.dtype = DType::f16;
  else bad("dtype", "must be float32, bfloat16 or float16, got '" + dtype + "'");
  const json& scale = required(j, "scale", "scale");
  if (!scale.is_number() || !std::isfinite(scale.get<double>())) bad("scale", "must be a finite number, got " + scale.dump());
  p.scale = scale.get<double>();
  const std::string mask = string_field(j, "mask");
  const std::optional<MaskKind> mask_kind = mask_from_name(mask);
  if (!mask_kind) bad("mask", "must be none, causal, additive, keep or drop, got '" + mask + "'");
  p.mask = *mask_kind;
  p.output_layout = string_field(j, "output_layout");
  if (!valid_output_layout(p.output_layout)) {
    bad("output_layout", "must be an order of b, h, t followed by d (bhtd, bthd, tbhd, ...), got '" + p.output_layout + "'");
  }

  if (j.contains("form")) {
    if (!j.at("form").is_string()) bad("form", "must be a string, got " + j.at("form").dump());
    p.form = j.at("form").get<std::string>();
  }

  read_spelled_extras(j, p);

  const json& strides = required(j, "strides", "strides");
  if (!strides.is_object()) bad("strides", "must be an object, got " + strides.dump());
  p.q = strides_of(required(strides, "q", "strides.q"), "strides.q");
  p.k = strides_of(required(strides, "k", "strides.k"), "strides.k");
  p.v = strides_of(required(strides, "v", "strides.v"), "strides.v");
  p.o = strides_of(required(strides, "o", "strides.o"), "strides.o");
  const json mask_strides = strides.contains("mask") ? strides.at("mask") : json();
  if (mask_has_tensor(p.mask)) {
    if (mask_strides.is_null()) bad("strides.mask", "is null, but mask '" + mask + "' reads a tensor");
    p.mask_strides = strides_of(mask_strides, "strides.mask");
  } else if (!mask_strides.is_null()) {
    bad("strides.mask", "must be null for mask '" + mask + "' (no mask tensor), got " + mask_strides.dump());
  }

  // Rows of Q, K and V do not overlap; O's elements are distinct.
  auto check_rows = [&](const AttentionStrides& s, int64_t rows, const char* name) {
    if (rows > 1 && s.row < p.head_dim) {
      bad(std::string("strides.") + name, "row stride " + std::to_string(s.row) +
                                              " is smaller than head_dim " + std::to_string(p.head_dim));
    }
  };
  check_rows(p.q, p.seq_q, "q");
  check_rows(p.k, p.seq_k, "k");
  check_rows(p.v, p.seq_k, "v");
  if (!non_overlapping({{p.batch, p.o.batch}, {p.heads, p.o.head}, {p.seq_q, p.o.row}, {p.head_dim, 1}})) {
    bad("strides.o", "make elements of O share memory (batch, head, row strides " + std::to_string(p.o.batch) + ", " +
                         std::to_string(p.o.head) + ", " + std::to_string(p.o.row) + ")");
  }
  // What realization sizes buffers by and the cost model counts fits int64 (each throws otherwise).
  const int64_t e = int64_t(dtype_bytes(p.dtype));
  check_span_bytes(p.extent_q(), e, "plan problem (attention): Q");
  check_span_bytes(p.extent_k(), e, "plan problem (attention): K");
  check_span_bytes(p.extent_v(), e, "plan problem (attention): V");
  check_span_bytes(p.extent_o(), e, "plan problem (attention): O");
  if (mask_has_tensor(p.mask)) check_span_bytes(p.extent_mask(), int64_t(p.mask_bytes()), "plan problem (attention): the mask");
  // The vendor path's [B * H, Tk, D] K and V (repeated per query head); its [B * H, Tq, D] Q
  // has O's element count, which O's extent bounds (its elements are distinct, above).
  check_span_bytes(checked_mul(checked_mul(p.batch, p.heads, "plan problem (attention): B * H * T * D"),
                               checked_mul(p.seq_k, p.head_dim, "plan problem (attention): B * H * T * D"),
                               "plan problem (attention): B * H * T * D"),
                   e, "plan problem (attention): the vendor path's [B * H, T, D] operands");
  (void)attention_kept_pairs(p.seq_q, p.seq_k, p.mask, p.window);
  return p;
}

}  // namespace fact::realize
