#include "families/gemm/problem.h"

#include "families/gemm/epilogue/program.h"
#include "families/gemm/epilogue/evt_codegen.h"

#include <limits>
#include <type_traits>

#include "base/checked_int.h"
#include "base/error.h"

namespace fact::realize {

namespace {
// Extent of one matrix of `rows` x `cols` stored with unit stride along `cols` and leading
// stride `ld`, plus the batch offset of the last batch. Throws fact::Error past int64.
int64_t extent(int64_t rows, int64_t cols, int64_t ld, int64_t batch_stride, int64_t l) {
  constexpr const char* what = "plan problem: an operand's extent (L-1)*batch_stride + (rows-1)*ld + cols";
  return checked_add(checked_add(checked_mul(l - 1, batch_stride, what), checked_mul(rows - 1, ld, what), what),
                     cols, what);
}
}  // namespace

int64_t GemmProblem::extent_a() const {
  return layout_a == Layout::Row ? extent(m, k, lda, batch_stride_a, l)
                                 : extent(k, m, lda, batch_stride_a, l);
}
int64_t GemmProblem::extent_b() const {
  return layout_b == Layout::Row ? extent(k, n, ldb, batch_stride_b, l)
                                 : extent(n, k, ldb, batch_stride_b, l);
}
int64_t GemmProblem::extent_d() const { return extent(m, n, ldd, batch_stride_d, l); }

namespace {
template <class T>
T field(const nlohmann::json& j, const char* name) {
  if (!j.contains(name)) throw Error(std::string("plan problem: missing field '") + name + "'");
  if constexpr (std::is_integral_v<T>) {
    if (!j.at(name).is_number_integer()) {
      throw Error(std::string("plan problem: field '") + name + "' must be an integer, got " + j.at(name).dump());
    }
  }
  try {
    return j.at(name).get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("plan problem: field '") + name + "': " + e.what());
  }
}
Layout parse_layout(const std::string& s, const char* which) {
  if (s == "row") return Layout::Row;
  if (s == "col") return Layout::Col;
  throw Error(std::string("plan problem: ") + which + " must be 'row' or 'col', got '" + s + "'");
}
}  // namespace

GemmProblem gemm_problem_from_json(const nlohmann::json& j) {
  if (field<std::string>(j, "kind") != "gemm") throw Error("plan problem: kind is not 'gemm'");
  GemmProblem p;
  p.m = field<int64_t>(j, "m");
  p.n = field<int64_t>(j, "n");
  p.k = field<int64_t>(j, "k");
  p.l = j.contains("l") ? field<int64_t>(j, "l") : 1;
  p.dtype_a = parse_dtype(field<std::string>(j, "dtype_a"));
  p.dtype_b = parse_dtype(field<std::string>(j, "dtype_b"));
  p.dtype_d = parse_dtype(field<std::string>(j, "dtype_d"));
  p.dtype_epi = j.contains("dtype_epi") ? parse_dtype(field<std::string>(j, "dtype_epi")) : p.dtype_d;
  p.layout_a = parse_layout(field<std::string>(j, "layout_a"), "layout_a");
  p.layout_b = parse_layout(field<std::string>(j, "layout_b"), "layout_b");
  p.lda = field<int64_t>(j, "lda");
  p.ldb = field<int64_t>(j, "ldb");
  p.ldd = field<int64_t>(j, "ldd");
  auto optional_stride = [&](const char* name) { return j.contains(name) ? field<int64_t>(j, name) : int64_t{0}; };
  p.batch_stride_a = optional_stride("batch_stride_a");
  p.batch_stride_b = optional_stride("batch_stride_b");
  p.batch_stride_d = optional_stride("batch_stride_d");
  const auto& bias = j.contains("bias") ? j.at("bias") : nlohmann::json();
  if (bias.is_string() && bias.get<std::string>() == "n") {
    p.bias_n = true;
  } else if (!bias.is_null()) {
    throw Error("plan problem: bias '" + bias.dump() + "' is not realized (only null or \"n\")");
  }
  // FACT's GEMMs accumulate in float32 (docs/00-design.md §4); a plan asking for another
  // accumulator is refused rather than built with float32 silently.
  if (j.contains("dtype_acc") && j.at("dtype_acc") != "float32") {
    throw Error("plan problem: dtype_acc " + j.at("dtype_acc").dump() +
                " is not realized (FACT's GEMM kernels and cuBLAS paths accumulate in float32)");
  }
  p.alpha = j.value("alpha", 1.0);
  p.beta = j.value("beta", 1.0);
  if (p.m <= 0 || p.n <= 0 || p.k <= 0 || p.l <= 0) throw Error("plan problem: non-positive size");
  // CUTLASS's and cuBLAS's problem sizes are 32-bit, as the GEMM rule requires of a graph.
  constexpr int64_t kMaxDim = std::numeric_limits<int32_t>::max();
  if (p.m > kMaxDim || p.n > kMaxDim || p.k > kMaxDim || p.l > kMaxDim) {
    throw Error("plan problem: M=" + std::to_string(p.m) + " N=" + std::to_string(p.n) + " K=" + std::to_string(p.k) +
                " L=" + std::to_string(p.l) + ": a size exceeds the 32-bit range CUTLASS and cuBLAS take");
  }
  // A leading dimension spans at least the contiguous extent; batch strides are >= 0 and
  // D's batches do not overlap.
  const int64_t a_extent = p.layout_a == Layout::Row ? p.k : p.m;
  const int64_t b_extent = p.layout_b == Layout::Row ? p.n : p.k;
  auto check_ld = [](const char* name, int64_t ld, int64_t extent, int64_t other) {
    if (ld < extent && other > 1) {
      throw Error(std::string("plan problem: ") + name + " = " + std::to_string(ld) +
                  " is smaller than the contiguous extent " + std::to_string(extent));
    }
  };
  check_ld("lda", p.lda, a_extent, p.layout_a == Layout::Row ? p.m : p.k);
  check_ld("ldb", p.ldb, b_extent, p.layout_b == Layout::Row ? p.k : p.n);
  check_ld("ldd", p.ldd, p.n, p.m);
  if (p.lda <= 0 || p.ldb <= 0 || p.ldd <= 0) throw Error("plan problem: a leading dimension is not positive");
  if (p.batch_stride_a < 0 || p.batch_stride_b < 0 || p.batch_stride_d < 0) {
    throw Error("plan problem: negative batch stride");
  }
  const int64_t d_batch = checked_mul(p.m, p.ldd, "plan problem: M * ldd");
  if (p.l > 1 && p.batch_stride_d < d_batch) {
    throw Error("plan problem: batch_stride_d " + std::to_string(p.batch_stride_d) +
                " overlaps D's batches (M * ldd = " + std::to_string(d_batch) + ")");
  }
  if (p.l == 1) p.batch_stride_a = p.batch_stride_b = p.batch_stride_d = 0;  // unused
  // No stride or operand past 2^48 bytes: what realization and the space compute from them
  // (extents, byte offsets, alignments) stays exact in int64 (throws otherwise).
  for (auto [name, v] : {std::pair{"lda", p.lda}, {"ldb", p.ldb}, {"ldd", p.ldd}, {"batch_stride_a", p.batch_stride_a},
                         {"batch_stride_b", p.batch_stride_b}, {"batch_stride_d", p.batch_stride_d}})
    check_below_span(v, std::string("plan problem: ") + name);
  check_span_bytes(p.extent_a(), int64_t(dtype_bytes(p.dtype_a)), "plan problem: A");
  check_span_bytes(p.extent_b(), int64_t(dtype_bytes(p.dtype_b)), "plan problem: B");
  // M * N * L fits int64 after this: D's extent bounds it (ldd >= N, batch_stride_d >= M * ldd,
  // checked above), except at M = 1, where N * L < 2^62 with both below 2^31.
  check_span_bytes(p.extent_d(), int64_t(dtype_bytes(p.dtype_d)), "plan problem: D");
  return p;
}

namespace {
nlohmann::json replace_acc(const nlohmann::json& t, const nlohmann::json& with) {
  if (t.contains("acc")) return with;
  if (!t.contains("op")) return t;
  nlohmann::json out = t;
  for (auto& a : out.at("args")) if (!a.is_null()) a = replace_acc(a, with);
  return out;
}
}  // namespace

std::string attach_tail(GemmProblem& p, const nlohmann::json& epilogue) {
  if (!epilogue.is_object()) return "no tail";
  if (!epilogue.contains("tree") || !epilogue.at("tree").is_object()) return "the epilogue has no \"tree\"";
  GemmProblem q = p;
  q.tail_tree = epilogue.at("tree");
  q.tail_nodes = epilogue.contains("nodes") && epilogue.at("nodes").is_array() ? int(epilogue.at("nodes").size()) : 1;
  q.tail_broadcast = epilogue.value("broadcast", nlohmann::json::object());
  if (!q.tail_broadcast.is_object()) return "the epilogue's \"broadcast\" is not an object";
  for (const auto& [slot, kind] : q.tail_broadcast.items()) {
    if (kind == "m" && p.l > 1) return "input " + slot + " along M differs per batch: not generated (the kernel reads one vector for all batches)";
  }
  try {
    compile_epilogue(q.tail_tree);
    render_evt(kernel_tail_tree(q), kernel_tail_broadcast(q));
  } catch (const std::exception& e) {
    return e.what();
  }
  p = std::move(q);
  return "";
}

nlohmann::json kernel_tail_tree(const GemmProblem& p) {
  if (!p.fused()) return nullptr;
  nlohmann::json acc = {{"acc", true}};
  if (p.alpha != 1.0) acc = {{"op", "mul"}, {"args", {acc, {{"scalar", p.alpha}}}}};
  if (p.bias_n) acc = {{"op", "add"}, {"args", {acc, {{"input", "bias"}}}}};
  return replace_acc(p.tail_tree, acc);
}

nlohmann::json kernel_tail_broadcast(const GemmProblem& p) {
  if (!p.fused()) return nullptr;
  nlohmann::json b = p.tail_broadcast.is_object() ? p.tail_broadcast : nlohmann::json::object();
  if (p.bias_n) b["bias"] = "n";
  return b;
}

}  // namespace fact::realize
