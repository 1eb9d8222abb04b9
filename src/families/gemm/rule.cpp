// Rule `gemm`: one ATen matrix product becomes one CUTLASS GEMM,
//   D[L,M,N] = alpha * A[L,M,K] · B[L,K,N] + beta * bias.
//
// Matches  aten.mm.default, aten.bmm.default, aten.addmm.default, aten.matmul.default,
//          aten.linear.default: the forms in gemm_forms(), written as patterns
//          (discover/pattern.h; table and constraints: docs/03-rules.md).
// Meaning  torch.mm / torch.bmm / torch.addmm / torch.matmul / F.linear.
// Family   gemm (src/families/gemm/): CUTLASS universal GEMM, fp32 accumulate, the elementwise
//          tail after it fused into its epilogue (epilogue/).
// Tests    tests/golden/discover/gemm_*.txt -> *.plan (run by tests/discover/golden_plan_test.cpp).
//
// Operands are read in place: a transposed or permuted operand (e.g. the output of
// aten.t) is a column-major layout with its leading stride, never a copy. The strides are
// those the graph records for the operand value itself.
#include <algorithm>
#include <limits>
#include <array>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "discover/pattern.h"
#include "discover/plan.h"
#include "graph/text.h"
#include "families/gemm/rule.h"
#include "families/gemm/epilogue/through_views.h"
#include "families/gemm/merge.h"

namespace fact::discover::rules {
namespace {

using graph::Arg;
using graph::DType;
using graph::Node;
using graph::TensorType;

// An operand as a batch of matrices [batch..., rows, cols] over a graph value's memory.
struct MatrixView {
  std::string value;  // graph value name
  const TensorType* type = nullptr;
  std::vector<int64_t> batch_shape = {}, batch_strides = {};
  int64_t rows = 0, cols = 0, row_stride = 0, col_stride = 0;
};

MatrixView view_of(const std::string& value, const TensorType& t) {
  const size_t r = t.shape.size();  // callers check r >= 2
  MatrixView v{value, &t};
  v.batch_shape.assign(t.shape.begin(), t.shape.end() - 2);
  v.batch_strides.assign(t.strides.begin(), t.strides.end() - 2);
  v.rows = t.shape[r - 2];
  v.cols = t.shape[r - 1];
  v.row_stride = t.strides[r - 2];
  v.col_stride = t.strides[r - 1];
  return v;
}

// The transpose of a 2-D view, read in place (linear's B = wᵀ).
MatrixView transposed(MatrixView v) {
  std::swap(v.rows, v.cols);
  std::swap(v.row_stride, v.col_stride);
  return v;
}

struct Layout {
  bool row = true;  // row-major (unit stride along columns) or column-major
  int64_t ld = 0;   // leading dimension: the stride between rows (row) or columns (col)
};

// The CUTLASS layout that reads `v` without a copy. A size-1 dimension takes any stride.
Layout layout_of(const MatrixView& v, const char* operand) {
  const bool unit_cols = v.cols == 1 || v.col_stride == 1;
  const bool unit_rows = v.rows == 1 || v.row_stride == 1;
  const int64_t row_ld = v.rows == 1 ? v.cols : v.row_stride;
  const int64_t col_ld = v.cols == 1 ? v.rows : v.col_stride;
  if (unit_cols && row_ld >= v.cols) return {true, row_ld};
  if (unit_rows && col_ld >= v.rows) return {false, col_ld};
  const std::string strides = fmt::format("[{}]", fmt::join(v.type->strides, ", "));
  if (!unit_cols && !unit_rows)
    reject(fmt::format("operand {} has strides {}: no unit stride, no CUTLASS layout expresses it",
                             operand, strides));
  reject(fmt::format(
      "operand {} has strides {}: leading stride {} is smaller than the contiguous extent {}, "
      "no CUTLASS layout expresses it",
      operand, strides, unit_cols ? row_ld : col_ld, unit_cols ? v.cols : v.rows));
}

// Broadcast batch shape of two operands (numpy rules, right-aligned).
std::vector<int64_t> broadcast_batch(const MatrixView& a, const MatrixView& b) {
  const auto& x = a.batch_shape.size() >= b.batch_shape.size() ? a.batch_shape : b.batch_shape;
  const auto& y = a.batch_shape.size() >= b.batch_shape.size() ? b.batch_shape : a.batch_shape;
  std::vector<int64_t> out = x;
  const size_t off = x.size() - y.size();
  for (size_t i = 0; i < y.size(); ++i) {
    if (y[i] == out[off + i] || y[i] == 1) continue;
    if (out[off + i] != 1)
      reject(fmt::format("batch shapes [{}] and [{}] do not broadcast",
                               fmt::join(a.batch_shape, ", "), fmt::join(b.batch_shape, ", ")));
    out[off + i] = y[i];
  }
  return out;
}

// The one stride between consecutive matrices of `v` over the flattened batch `out`
// (0 when v is broadcast over it). Throws when no single stride walks v's batch.
int64_t batch_stride(const MatrixView& v, const std::vector<int64_t>& out, const char* operand) {
  std::vector<int64_t> strides(out.size(), 0);  // v's strides expanded to `out`; broadcast = 0
  const size_t off = out.size() - v.batch_shape.size();
  for (size_t i = 0; i < v.batch_shape.size(); ++i)
    strides[off + i] = v.batch_shape[i] == 1 ? 0 : v.batch_strides[i];
  int64_t stride = 0, extent = 0;  // extent 0: no dimension of size > 1 seen yet
  for (size_t i = out.size(); i-- > 0;) {
    if (out[i] == 1) continue;
    if (extent == 0) {
      stride = strides[i];
      extent = out[i];
    } else if (strides[i] == stride * extent) {
      extent *= out[i];
    } else {
      reject(fmt::format(
          "operand {} has batch strides [{}] over batch shape [{}]: no single batch stride, "
          "no CUTLASS batched layout expresses it",
          operand, fmt::join(strides, ", "), fmt::join(out, ", ")));
    }
  }
  return stride;
}

// What an op contributes: A and B as matrix views, the bias value and the scalars.
struct GemmInputs {
  MatrixView a, b;
  std::optional<std::string> bias = {};
  double alpha = 1.0, beta = 1.0;
};

double scalar_kwarg(const Node& n, const char* key) {
  const Arg* a = n.kwarg(key);
  if (!a) return 1.0;
  if (std::optional<double> v = a->number()) return *v;
  reject(fmt::format("{} is not a number", key));
}

MatrixView matrix(const graph::GraphIndex& g, const std::string& value, const char* operand,
                  int64_t min_rank, int64_t max_rank) {
  const TensorType& t = g.type(value);
  if (t.rank() < min_rank || t.rank() > max_rank) {
    if (t.rank() == 1)
      reject(fmt::format("operand {} is 1-D (a matrix-vector product): the gemm rule takes "
                               "operands of rank >= 2", operand));
    reject(fmt::format("operand {} has rank {}, expected {}", operand, t.rank(),
                             min_rank == max_rank ? std::to_string(min_rank)
                                                  : fmt::format("{} to {}", min_rank, max_rank)));
  }
  return view_of(value, t);
}

constexpr int64_t kAnyRank = 64;

// The forms the rule matches, as patterns (discover/pattern.h): which arguments are A, B
// and bias, the ranks each takes, and whether B is read transposed (docs/03-rules.md, the
// op table). addmm's alpha and beta are keyword arguments, read by inputs_of.
struct GemmForm {
  PatternExpr pattern;  // captures "a", "b" and optionally "bias"
  int64_t a_min, a_max, b_min, b_max;
  bool b_transposed;  // linear: w [N, K] read transposed is B [K, N]
};

const std::vector<GemmForm>& gemm_forms() {
  static const std::vector<GemmForm> forms = [] {
    const PatternExpr a = capture("a"), b = capture("b"), bias = capture("bias");
    return std::vector<GemmForm>{
        {op({"aten.mm.default"}, {a, b}), 2, 2, 2, 2, false},
        {op({"aten.bmm.default"}, {a, b}), 3, 3, 3, 3, false},
        {op({"aten.matmul.default"}, {a, b}), 2, kAnyRank, 2, kAnyRank, false},
        {op({"aten.addmm.default"}, {bias, a, b}).allowing("alpha").allowing("beta"), 2, 2, 2, 2, false},
        // x [..., K] is A with its leading dims as batch (folded into M when possible).
        // The bias as a third argument (or None), or as the kwarg `bias` (read by inputs_of).
        {op({"aten.linear.default"}, {a, b, any_of({bias, none_arg()})}), 2, kAnyRank, 2, 2, true},
        {op({"aten.linear.default"}, {a, b}).allowing("bias"), 2, kAnyRank, 2, 2, true},
    };
  }();
  return forms;
}

const std::set<std::string>& gemm_ops() {
  static const std::set<std::string> ops = [] {
    std::set<std::string> s;
    for (const GemmForm& f : gemm_forms()) s.insert(f.pattern.ops.begin(), f.pattern.ops.end());
    return s;
  }();
  return ops;
}

// A, B and bias of `n` by the first form that matches it; nullopt for another op.
std::optional<GemmInputs> inputs_of(const graph::GraphIndex& g, const Node& n) {
  if (!gemm_ops().count(n.op)) return std::nullopt;
  for (const GemmForm& f : gemm_forms()) {
    std::optional<PatternMatch> m = match_first(g, f.pattern, n);
    if (!m) continue;
    MatrixView b = matrix(g, m->values.at("b"), "b", f.b_min, f.b_max);
    GemmInputs in{matrix(g, m->values.at("a"), "a", f.a_min, f.a_max), f.b_transposed ? transposed(b) : b};
    if (auto it = m->values.find("bias"); it != m->values.end()) in.bias = it->second;
    if (const Arg* kw = n.kwarg("bias"); kw && !kw->is<graph::None>()) {
      if (!kw->ref()) reject("bias is not a tensor");
      in.bias = *kw->ref();
    }
    in.alpha = scalar_kwarg(n, "alpha");
    in.beta = scalar_kwarg(n, "beta");
    return in;
  }
  for (size_t i = 0; i < n.args.size(); ++i) {
    if (!n.args[i].ref() && !n.args[i].is<graph::None>()) {
      reject(fmt::format("argument {} of {} is not a tensor: {}", i, n.op, graph::format_arg(n.args[i])));
    }
  }
  reject(fmt::format("the arguments of {} are not the tensors its forms take (docs/03-rules.md)", n.op));
}

bool gemm_dtype(DType d) { return d == DType::f32 || d == DType::f16 || d == DType::bf16; }

std::string_view dname(DType d) { return graph::torch_name(d); }

// Bias shape -> which dimension it runs along: [N], [1,N] -> "n"; [M,1] -> "m".
std::string bias_mode(const TensorType& t, int64_t m, int64_t n) {
  const auto& s = t.shape;
  const bool unit = [&] {  // the vector's elements are adjacent
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] != 1 && t.strides[i] != 1) return false;
    return true;
  }();
  if (unit && s.size() == 1 && s[0] == n) return "n";
  if (unit && s.size() == 2 && s[0] == 1 && s[1] == n) return "n";
  if (unit && s.size() == 2 && s[0] == m && s[1] == 1) return "m";
  reject(fmt::format("bias shape [{}] strides [{}]: the gemm rule takes a unit-stride bias of "
                           "shape [N], [1, N] or [M, 1] (M={}, N={})",
                           fmt::join(s, ", "), fmt::join(t.strides, ", "), m, n));
}

Match make_match(const MatchContext& ctx, const Node& node, GemmInputs in) {
  const graph::GraphIndex& g = ctx.graph;
  if (node.outputs.size() != 1 || !node.outputs[0].type) reject("expected one tensor output");
  const TensorType& d = *node.outputs[0].type;

  // Dtypes: A and B of one gemm dtype; D and bias alike.
  for (const auto& [name, v] : {std::pair{"a", &in.a}, std::pair{"b", &in.b}})
    if (!gemm_dtype(v->type->dtype))
      reject(fmt::format("operand {} dtype {}: the gemm rule takes float32, float16 or bfloat16",
                               name, dname(v->type->dtype)));
  const DType dtype = in.a.type->dtype;
  if (in.b.type->dtype != dtype)
    reject(fmt::format("mixed operand dtypes: a is {}, b is {}; the gemm rule takes A and B of one dtype",
                             dname(dtype), dname(in.b.type->dtype)));
  if (d.dtype != dtype)
    reject(fmt::format("output dtype {} differs from operand dtype {}", dname(d.dtype), dname(dtype)));
  if (in.bias && g.type(*in.bias).dtype != dtype)
    reject(fmt::format("bias dtype {} differs from output dtype {}", dname(g.type(*in.bias).dtype),
                             dname(dtype)));

  // Problem size and layouts.
  int64_t m = in.a.rows, n = in.b.cols, k = in.a.cols;
  if (in.b.rows != k) reject(fmt::format("K mismatch: a has K={}, b has K={}", k, in.b.rows));
  if (m == 0 || n == 0 || k == 0) reject(fmt::format("empty problem M={} N={} K={}", m, n, k));
  const Layout la = layout_of(in.a, "a"), lb = layout_of(in.b, "b");

  // Batch: flatten the broadcast batch dims to one mode L with one stride per operand.
  const std::vector<int64_t> batch = broadcast_batch(in.a, in.b);
  std::vector<int64_t> expected = batch;
  expected.insert(expected.end(), {m, n});
  if (d.shape != expected)
    reject(fmt::format("output shape [{}] is not [batch..., M, N] = [{}]", fmt::join(d.shape, ", "),
                             fmt::join(expected, ", ")));
  if (!d.is_contiguous())
    reject(fmt::format("output strides [{}] are not contiguous: the kernel writes a row-major D",
                             fmt::join(d.strides, ", ")));
  int64_t l = 1;
  for (int64_t s : batch) l *= s;
  // A batch dimension of 0 leaves no matrix to multiply, like M, N or K = 0.
  if (l == 0) reject(fmt::format("empty problem: batch [{}] holds no matrix (L=0)", fmt::join(batch, ", ")));
  int64_t bsa = batch_stride(in.a, batch, "a"), bsb = batch_stride(in.b, batch, "b");
  // B shared by every batch and A's batches stacked row after row: one [L*M, K] matrix.
  if (l > 1 && bsb == 0 && la.row && bsa == m * la.ld) {
    m *= l;
    l = 1;
  }
  if (l == 1) bsa = bsb = 0;
  // CUTLASS's and cuBLAS's problem sizes are 32-bit; 2*M*N*K*L must fit the plan's int64.
  constexpr int64_t kMaxDim = std::numeric_limits<int32_t>::max();
  if (m > kMaxDim || n > kMaxDim || k > kMaxDim || l > kMaxDim)
    reject(fmt::format("M={} N={} K={} L={}: a size exceeds the 32-bit range CUTLASS and cuBLAS take", m, n, k, l));
  int64_t flops = 2;
  for (int64_t f : {m, n, k, l})
    if (__builtin_mul_overflow(flops, f, &flops))
      reject(fmt::format("M={} N={} K={} L={}: 2*M*N*K*L overflows 64 bits", m, n, k, l));

  // Bias and scalars. beta = 0 drops the bias (PyTorch ignores it, NaNs included).
  if (in.beta == 0.0) in.bias.reset();
  std::optional<std::string> bias;
  if (in.bias) bias = bias_mode(g.type(*in.bias), m, n);
  if (!in.bias) in.beta = 0.0;

  Match match;
  match.nodes = {node.name};
  match.output = node.outputs[0].name;
  match.operands = {{"a", in.a.value}, {"b", in.b.value}};
  if (in.bias) match.operands.emplace_back("bias", *in.bias);
  match.problem = {
      {"kind", "gemm"}, {"m", m}, {"n", n}, {"k", k}, {"l", l},
      {"dtype_a", dname(dtype)}, {"dtype_b", dname(dtype)}, {"dtype_d", dname(dtype)},
      {"dtype_acc", "float32"},
      {"layout_a", la.row ? "row" : "col"}, {"layout_b", lb.row ? "row" : "col"},
      {"lda", la.ld}, {"ldb", lb.ld}, {"ldd", n},
      {"batch_stride_a", bsa}, {"batch_stride_b", bsb}, {"batch_stride_d", l > 1 ? m * n : 0},
      {"bias", bias ? nlohmann::ordered_json(*bias) : nlohmann::ordered_json(nullptr)},
      {"alpha", in.alpha}, {"beta", in.beta}};

  int64_t bytes = tensor_bytes(*in.a.type) + tensor_bytes(*in.b.type) + tensor_bytes(d);
  if (in.bias) bytes += tensor_bytes(g.type(*in.bias));
  match.work = {flops, bytes, matmul_unit(dtype, ctx.precision)};
  return match;
}

MatchResult match_gemm(const MatchContext& ctx, const Node& node) {
  std::optional<GemmInputs> in = inputs_of(ctx.graph, node);
  if (!in) return NotApplicable{};
  return make_match(ctx, node, std::move(*in));
}

// Narrowing (discover/narrow.h): under bf16 the kernel rounds fp32 A and B to bf16 in
// its staging copy, so both may arrive in bf16 instead (together: one element type for
// the MMA); its epilogue can write D in bf16. A SwiGLU GEMM (one element type for A, both
// weights, which the runtime interleaves at load from the narrowed parameters, and D)
// narrows all of them or none; a merged GEMM, whose members' outputs are views of one D,
// narrows nothing.
std::vector<std::vector<std::string>> gemm_narrow_groups(const Pattern& p, Precision precision) {
  const auto& pr = p.problem;
  if (precision != Precision::bf16 || pr.contains("merged")) return {};
  for (const char* f : {"dtype_a", "dtype_b", "dtype_d"})
    if (pr.value(f, "") != "float32") return {};
  if (pr.contains("swiglu")) return {{"a", "b", "b1", ""}};
  std::vector<std::vector<std::string>> groups{{"a", "b"}};
  if (p.extra_outputs.empty()) groups.push_back({""});
  return groups;
}

// The narrowed roles become bf16 (SwiGLU's second weight b1 is B's). The bias, the tail's
// inputs and the tail's own arithmetic stay fp32 (dtype_epi): written for a GEMM that
// reads a bias or tail inputs, and for a tail whose output is narrowed (unfused, the
// GEMM then writes its own output in fp32, and no bf16 tail kernel reads it).
void gemm_narrow(Pattern& p, const std::vector<std::string>& roles) {
  auto& pr = p.problem;
  const bool narrowed_d = std::find(roles.begin(), roles.end(), "") != roles.end();
  const bool reads_epi = pr.value("bias", nlohmann::ordered_json()).is_string() ||
                         (p.epilogue && (!p.epilogue->inputs.empty() || narrowed_d));
  if (reads_epi && !pr.contains("dtype_epi")) pr["dtype_epi"] = pr.at("dtype_d");
  for (const auto& r : roles) pr[r.empty() ? "dtype_d" : r == "b1" ? "dtype_b" : "dtype_" + r] = "bfloat16";
}

}  // namespace

Rule gemm_rule() {
  return Rule{
      .name = "gemm",
      .meaning = "torch.mm / bmm / addmm / matmul (rank >= 2) / F.linear: "
                 "D = alpha * (A @ B) + beta * bias, batch broadcast, operands read in place",
      .kernel_family = "gemm",
      .tests = "tests/golden/discover/gemm_*.txt",
      .match = &match_gemm,
      .find_tail = &find_epilogue_through_views,
      .merge = &merge_gemms,
      .narrow_groups = &gemm_narrow_groups,
      .narrow = &gemm_narrow,
  };
}

}  // namespace fact::discover::rules
