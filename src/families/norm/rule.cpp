// Rule `norm`: LayerNorm or RMSNorm over the last dimension, with or without its affine
// weight and bias, and the residual add that feeds it (add & norm), becomes one norm kernel:
//   s = x + residual                       (add & norm only; written when read after)
//   y[r, :] = (s[r, :] - mu_r) * rstd_r * w + b      LayerNorm: mu_r = mean, var_r = mean((s - mu)^2)
//   y[r, :] = s[r, :] * rstd_r * w                   RMSNorm:   mu_r = 0,    var_r = mean(s^2)
//   rstd_r = 1 / sqrt(var_r + eps)
//
// Matches  aten.layer_norm.default, aten.native_layer_norm.default (mean and rstd unread),
//          aten.rms_norm.default, and the written forms (match.h): x * rsqrt(mean(x^2) + eps)
//          (LLaMA, Hugging Face), (x - mean) * rsqrt(mean((x - mean)^2) + eps) and
//          (x - mean) / sqrt(var(x, unbiased=False) + eps), with the casts around them
//          (.float(), .type_as(x), .to(dtype), _assert_tensor_metadata), then * weight and
//          + bias; a residual add feeding the norm is taken with it.
// Meaning  F.layer_norm / F.rms_norm over the last dim (+ the add before it).
// Family   norm (src/families/norm/abi.h).
// Tests    tests/golden/discover/norm_*.txt -> *.plan, tests/python/test_block_examples.py.
#include "families/norm/rule.h"
#include "discover/plan.h"

#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "discover/pattern.h"
#include "families/norm/match.h"

namespace fact::discover::rules {
namespace {

using graph::DType;
using graph::TensorType;
using norm::NormParts;
bool io_dtype(DType d) { return d == DType::f32 || d == DType::bf16 || d == DType::f16; }

// The stride between rows of `t` seen as [rows, cols] (the last dim unit stride, the
// leading dims one evenly strided run), or the Rejection naming `role`.
int64_t row_stride(const std::string& role, const std::string& value, const TensorType& t) {
  const int64_t r = t.rank();
  if (r == 0) reject(fmt::format("{} %{} is a scalar: a norm needs rows", role, value));
  if (t.shape[r - 1] != 1 && t.strides[r - 1] != 1)
    reject(fmt::format("{} %{} has strides {}: the last dim is not unit stride (the kernel reads rows with 16-byte "
                       "vectors)", role, value, t.strides));
  int64_t stride = t.shape[r - 1];  // the stride of a lone row
  bool have = false;
  for (int64_t i = r - 2; i >= 0; --i) {
    if (t.shape[i] == 1) continue;
    if (!have) {
      stride = t.strides[i];
      have = true;
    } else {
      // Dim i must step over dim i+1's whole extent (sizes 1 between are skipped).
      int64_t inner = i + 1;
      while (t.shape[inner] == 1) ++inner;
      if (t.strides[i] != t.strides[inner] * t.shape[inner])
        reject(fmt::format("{} %{} of shape {} strides {}: its rows are not evenly strided", role, value, t.shape,
                           t.strides));
    }
  }
  return stride;
}

void check_param(const std::string& role, const std::string& value, const TensorType& t, int64_t cols) {
  if (t.rank() != 1 || t.shape[0] != cols)
    reject(fmt::format("{} %{} has shape {}: the norm takes a [{}] vector", role, value, t.shape, cols));
  if (!io_dtype(t.dtype))
    reject(fmt::format("{} %{} dtype {}: the norm kernels take float32, bfloat16 or float16", role, value,
                       graph::torch_name(t.dtype)));
  if (cols != 1 && t.strides[0] != 1) reject(fmt::format("{} %{} is not contiguous", role, value));
}

// Adds the asserts that read the interior values, then the single-use check.
void close_over(const graph::GraphIndex& g, NormParts& p) {
  std::set<std::string> inside(p.nodes.begin(), p.nodes.end());
  std::set<std::string> interior;
  std::set<const graph::Node*> nodes;
  for (const graph::Node& n : g.graph().nodes) {
    if (!inside.contains(n.name)) continue;
    nodes.insert(&n);
    for (const auto& v : n.outputs) {
      if (!v.type || v.name == p.output || v.name == p.sum_output) continue;
      interior.insert(v.name);
      for (const graph::Node* u : g.users(v.name)) {
        if (u->op != "aten._assert_tensor_metadata.default" || !inside.insert(u->name).second) continue;
        p.nodes.push_back(u->name);
        nodes.insert(u);
      }
    }
  }
  const std::string why = read_outside(g, interior, nodes, "be computed inside the norm kernel only",
                                       "outside the norm");
  if (!why.empty()) reject(why);
}

// The norm at `p`'s core, extended (with its residual add when `with_residual`); an add &
// norm match carries the plain norm over the sum as Match::smaller, for a GEMM whose
// epilogue can take the add instead.
Match make_match(const MatchContext& ctx, const NormParts& core, bool with_residual = true) {
  const graph::GraphIndex& g = ctx.graph;
  NormParts p = core;
  norm::extend_norm(g, p, with_residual);
  close_over(g, p);
  const TensorType& tx = g.type(p.x);
  const TensorType& to = g.type(p.output);
  if (!io_dtype(tx.dtype) || !io_dtype(to.dtype))
    reject(fmt::format("input %{} dtype {}, output dtype {}: the norm kernels take float32, bfloat16 or float16",
                       p.x, graph::torch_name(tx.dtype), graph::torch_name(to.dtype)));
  if (to.shape != tx.shape) reject(fmt::format("the output shape {} is not the input's {}", to.shape, tx.shape));
  const int64_t cols = tx.rank() ? tx.shape.back() : 1;
  const int64_t rows = cols ? tx.numel() / cols : 0;
  if (rows == 0 || cols == 0) reject(fmt::format("empty rows: input shape {}", tx.shape));
  if (cols > (int64_t(1) << 24)) reject(fmt::format("rows of {} elements: the norm kernels take at most 2^24", cols));
  if (!(p.eps >= 0)) reject(fmt::format("eps {} is negative", p.eps));
  const int64_t x_stride = row_stride("input", p.x, tx);
  if (!p.weight.empty()) check_param("weight", p.weight, g.type(p.weight), cols);
  if (!p.bias.empty()) check_param("bias", p.bias, g.type(p.bias), cols);
  if (!p.weight.empty() && !p.bias.empty() && g.type(p.weight).dtype != g.type(p.bias).dtype)
    reject(fmt::format("weight dtype {} and bias dtype {} differ", graph::torch_name(g.type(p.weight).dtype),
                       graph::torch_name(g.type(p.bias).dtype)));
  nlohmann::ordered_json res_stride = nullptr;
  if (!p.residual.empty()) res_stride = row_stride("residual", p.residual, g.type(p.residual));

  Match m;
  const std::set<std::string> replaced(p.nodes.begin(), p.nodes.end());
  for (const auto& n : g.graph().nodes)
    if (replaced.contains(n.name)) m.nodes.push_back(n.name);
  m.output = p.output;
  if (!p.sum_output.empty()) m.extra_outputs = {p.sum_output};
  m.operands = {{"x", p.x}};
  if (!p.residual.empty()) m.operands.emplace_back("residual", p.residual);
  if (!p.weight.empty()) m.operands.emplace_back("weight", p.weight);
  if (!p.bias.empty()) m.operands.emplace_back("bias", p.bias);
  const std::string param_dtype =
      !p.weight.empty() ? std::string(graph::torch_name(g.type(p.weight).dtype))
                        : !p.bias.empty() ? std::string(graph::torch_name(g.type(p.bias).dtype)) : "";
  m.problem = {{"kind", "norm"},
               {"norm", p.kind},
               {"rows", rows},
               {"cols", cols},
               {"dtype", graph::torch_name(tx.dtype)},
               {"out_dtype", graph::torch_name(to.dtype)},
               {"param_dtype", param_dtype.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(param_dtype)},
               {"eps", p.eps},
               {"weight", !p.weight.empty()},
               {"bias", !p.bias.empty()},
               {"residual", !p.residual.empty()},
               {"sum_output", p.sum_output.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(p.sum_output)},
               {"strides", {{"x", x_stride}, {"residual", res_stride}}},
               {"form", p.form}};
  int64_t bytes = tensor_bytes(tx) + tensor_bytes(to);
  if (!p.residual.empty()) bytes += tensor_bytes(g.type(p.residual));
  if (!p.sum_output.empty()) bytes += tensor_bytes(g.type(p.sum_output));
  for (const auto* v : {&p.weight, &p.bias})
    if (!v->empty()) bytes += tensor_bytes(g.type(*v));
  m.work = {8 * rows * cols, bytes, MathUnit::fp32_simt};
  if (!p.residual.empty()) {
    try {
      m.smaller.push_back(make_match(ctx, core, false));
    } catch (const Rejection&) {  // the norm alone fails a constraint: the add & norm stands alone
    }
  }
  return m;
}

MatchResult match_norm(const MatchContext& ctx, const graph::Node& node) {
  std::optional<NormParts> parts = norm::match_norm_op(ctx.graph, node);
  if (!parts) parts = norm::match_written_norm(ctx.graph, node);
  if (!parts) return NotApplicable{};
  return make_match(ctx, std::move(*parts));
}

}  // namespace

namespace {
// Narrowing (discover/narrow.h): the kernel computes in fp32 and can write its output in
// bf16 (out_dtype), rounded as a bf16 reader would round it.
std::vector<std::vector<std::string>> norm_narrow_groups(const Pattern& p, Precision precision) {
  if (precision != Precision::bf16 || p.problem.value("out_dtype", "") != "float32") return {};
  return {{""}};
}
void norm_narrow(Pattern& p, const std::vector<std::string>&) { p.problem["out_dtype"] = "bfloat16"; }
}  // namespace

Rule norm_rule() {
  return Rule{
      .name = "norm",
      .meaning = "F.layer_norm / F.rms_norm over the last dim, aten or written out (mean/var, mean/sub/pow/rsqrt, "
                 "x * rsqrt(mean(x^2) + eps) with its casts), * weight, + bias, and the residual add feeding it",
      .kernel_family = "norm",
      .tests = "tests/golden/discover/norm_*.txt, tests/python/test_block_examples.py",
      .match = &match_norm,
      .narrow_groups = &norm_narrow_groups,
      .narrow = &norm_narrow,
  };
}

}  // namespace fact::discover::rules
