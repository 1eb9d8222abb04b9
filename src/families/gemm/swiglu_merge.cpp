// merge_swiglu (swiglu_merge.h): the gate GEMM whose tail is mul(silu(acc), up), and the up
// GEMM, become one SwiGLU GEMM over the interleaved weight (swiglu.h).
#include "families/gemm/swiglu_merge.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "base/json_format.h"
#include "families/gemm/swiglu_layout.h"

namespace fact::discover::rules {
namespace {

using Json = nlohmann::ordered_json;

std::string operand(const Pattern& p, const std::string& role) {
  for (const auto& [r, v] : p.operands)
    if (r == role) return v;
  return "";
}

// The up value of a gate tail mul(silu(acc), c0) or mul(c0, silu(acc)) with c0 of D's
// shape; "" for any other tail.
std::string up_value(const Epilogue& e) {
  if (e.inputs.size() != 1 || e.broadcast.size() != 1 || e.broadcast[0] != "mn") return "";
  const Json silu = {{"op", "silu"}, {"args", Json::array({{{"acc", true}}})}};
  const Json c0 = {{"input", "c0"}};
  const Json& t = e.tree;
  if (t.value("op", "") != "mul" || t.at("args").size() != 2) return "";
  const Json& a = t.at("args")[0];
  const Json& b = t.at("args")[1];
  return (a == silu && b == c0) || (a == c0 && b == silu) ? e.inputs[0].second : "";
}

// Why gate `g` and up `u` (the pattern making the tail's c0, or null) are not one SwiGLU
// GEMM; "" when they are.
std::string why_not(const graph::GraphIndex& graph, const Pattern& g, const Pattern* u, const std::string& up,
                    const std::string& mul) {
  if (!u) return fmt::format("%{} is not the output of a GEMM pattern", up);
  if (u->epilogue) return fmt::format("%{}'s GEMM has a tail of its own", up);
  const auto readers = graph.users(up);
  const auto& outs = graph.graph().outputs;
  if (readers.size() != 1 || readers[0]->name != mul || std::find(outs.begin(), outs.end(), up) != outs.end())
    return fmt::format("%{} is read by another node than %{}, or returned", up, mul);
  if (operand(*u, "a") != operand(g, "a")) return fmt::format("%{} reads %{}, not %{}", up, operand(*u, "a"), operand(g, "a"));
  for (const char* f : {"m", "n", "k", "l", "dtype_a", "dtype_b", "dtype_d", "layout_a", "lda", "layout_b", "ldb",
                        "ldd", "bias", "alpha", "beta"})
    if (g.problem.value(f, Json()) != u->problem.value(f, Json()))
      return fmt::format("{} {} (up: {})", f, g.problem.value(f, Json()).dump(), u->problem.value(f, Json()).dump());
  const Json& p = g.problem;
  if (integer_or(p, "l", 1) != 1) return "it is batched";
  if (!p.value("bias", Json()).is_null()) return "the projections have a bias";
  if (p.value("alpha", 1.0) != 1.0 || p.value("beta", 0.0) != 0.0) return "alpha or beta is not 1 and 0";
  if (p.value("layout_a", "") != "row" || p.value("layout_b", "") != "col" || integer_or(p, "ldb", 0) != integer_or(p, "k", -1))
    return "A is not row-major or the weights are not [H, K] linear weights (layout_b col, ldb = K)";
  const int64_t h = integer_or(p, "n", 0);
  if (h % realize::kSwigluInterleave)
    return fmt::format("H = {} is not a multiple of {} (the interleave)", h, realize::kSwigluInterleave);
  for (const Pattern* q : {&g, u}) {
    const graph::Placeholder* w = graph.placeholder(operand(*q, "b"));
    if (!w || w->kind == graph::PlaceholderKind::user_input)
      return fmt::format("weight %{} is not a parameter (interleaved once at load)", operand(*q, "b"));
  }
  return "";
}

void merge_into(const graph::GraphIndex& graph, Pattern& g, const Pattern& u) {
  const Epilogue e = *g.epilogue;
  const int64_t h = integer_or(g.problem, "n", 0);
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < graph.graph().nodes.size(); ++i) position[graph.graph().nodes[i].name] = i;
  std::vector<std::string> nodes = g.nodes;
  nodes.insert(nodes.end(), u.nodes.begin(), u.nodes.end());
  nodes.insert(nodes.end(), e.nodes.begin(), e.nodes.end());
  std::sort(nodes.begin(), nodes.end(), [&](const auto& a, const auto& b) { return position.at(a) < position.at(b); });
  // A is read once, and neither projection's output is written and read back.
  const int64_t a_bytes = tensor_bytes(graph.type(operand(g, "a")));
  const int64_t mid_bytes = tensor_bytes(graph.type(g.output)) + tensor_bytes(graph.type(u.output));
  const int64_t saved = a_bytes + 2 * mid_bytes;
  Estimate est = g.estimate;
  est.flops += u.estimate.flops;
  est.bytes = std::max<int64_t>(0, est.bytes + u.estimate.bytes - saved);
  est.time_us += u.estimate.time_us - double(saved) / kH200.hbm_bytes_per_s * 1e6;
  est.gain_us += u.estimate.gain_us + g.epilogue_gain_us + double(saved) / kH200.hbm_bytes_per_s * 1e6;
  Json problem = g.problem;
  problem["n"] = 2 * h;
  problem["ldd"] = h;
  problem["swiglu"] = {{"gate", {{"output", g.output}, {"b", operand(g, "b")}}},
                       {"up", {{"output", u.output}, {"b", operand(u, "b")}}},
                       {"hidden", h},
                       {"interleave", realize::kSwigluInterleave}};
  g.operands = {{"a", operand(g, "a")}, {"b", operand(g, "b")}, {"b1", operand(u, "b")}};
  g.nodes = std::move(nodes);
  g.output = e.output;
  g.problem = std::move(problem);
  g.estimate = std::move(est);
  g.epilogue.reset();
  g.epilogue_gain_us = 0;
  g.epilogue_stop.clear();
}

}  // namespace

void merge_swiglu(const graph::GraphIndex& graph, Plan& plan) {
  std::map<std::string, Pattern*> by_output;
  for (auto& p : plan.patterns)
    if (p.rule == "gemm") by_output[p.output] = &p;
  std::set<std::string> gone;
  for (auto& g : plan.patterns) {
    if (g.rule != "gemm" || !g.epilogue || gone.contains(g.id)) continue;
    const std::string up = up_value(*g.epilogue);
    if (up.empty()) continue;
    const auto it = by_output.find(up);
    Pattern* u = it == by_output.end() || gone.contains(it->second->id) ? nullptr : it->second;
    const std::string mul = g.epilogue->nodes.back();
    if (const std::string why = why_not(graph, g, u, up, mul); !why.empty()) {
      g.merge_stop = fmt::format("silu(%{}) * %{} is not one SwiGLU GEMM: {}", g.output, up, why);
      continue;
    }
    u->merge_stop.clear();
    merge_into(graph, g, *u);
    gone.insert(u->id);
  }
  std::erase_if(plan.patterns, [&](const Pattern& p) { return gone.contains(p.id); });
}

}  // namespace fact::discover::rules
