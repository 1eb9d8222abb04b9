// merge_gemms (merge.h): one GEMM for the projections that read the same A.
#include "families/gemm/merge.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "base/json_format.h"
#include "discover/canonical/passes.h"
#include "families/gemm/swiglu_merge.h"

namespace fact::discover::rules {
namespace {

// The problem fields the members of one merge must share (n, ldb, ldd and B may differ).
constexpr const char* kShared[] = {"m",       "k",          "l",         "dtype_a", "dtype_b", "dtype_d",
                                   "dtype_acc", "layout_a", "lda",       "layout_b", "batch_stride_a",
                                   "bias",    "alpha",      "beta"};

std::string operand(const Pattern& p, const std::string& role) {
  for (const auto& [r, v] : p.operands)
    if (r == role) return v;
  return "";
}

// Why `p` cannot be merged at all ("" when it can).
std::string alone(const graph::GraphIndex& g, const Pattern& p) {
  if (p.epilogue) return "it has an epilogue of its own";
  if (integer_or(p.problem, "l", 1) != 1) return "it is batched";
  if (p.problem.value("bias", nlohmann::ordered_json()) == "m")
    return "its bias is a column along M (one GEMM adds one bias per row, not one per member)";
  if (p.problem.value("layout_b", "") != "col" || integer_or(p.problem, "ldb", 0) != integer_or(p.problem, "k", -1))
    return "its B is not a [N, K] weight read in place (layout_b col, ldb = K)";
  const graph::Placeholder* b = g.placeholder(operand(p, "b"));
  if (!b || b->kind == graph::PlaceholderKind::user_input) return "its B is not a parameter (concatenated once at load)";
  return "";
}

// The first field of kShared on which `p` and `q` differ, as "layout_b row (p1: col)"; "".
std::string differs(const Pattern& p, const Pattern& q) {
  for (const char* f : kShared)
    if (p.problem.value(f, nlohmann::ordered_json()) != q.problem.value(f, nlohmann::ordered_json()))
      return fmt::format("{} {} ({}: {})", f, p.problem.value(f, nlohmann::ordered_json()).dump(), q.id,
                         q.problem.value(f, nlohmann::ordered_json()).dump());
  return "";
}

// The first node of another pattern that reads `value` or a view of it, as a reason; "".
std::string read_by_pattern(const graph::GraphIndex& g, const std::string& value,
                            const std::map<std::string, std::string>& owner, const std::string& self) {
  std::vector<std::string> todo{value};
  while (!todo.empty()) {
    const std::string v = todo.back();
    todo.pop_back();
    for (const graph::Node* u : g.users(v)) {
      if (auto it = owner.find(u->name); it != owner.end() && it->second != self)
        return fmt::format("its output %{} is read, through views, by %{} of {}, which assumed its strides", value,
                           u->name, it->second);
      if (canonical::aliases_first_arg(u->op))
        for (const auto& o : u->outputs) todo.push_back(o.name);
    }
  }
  return "";
}

// Why a view of `p`'s output could not read the merged result ("" when every one can):
// the output becomes a view with row stride N, so a `view` that splits the last dim stays
// a view, but one whose trailing dims do not multiply to N_i exactly would cross rows.
std::string view_crosses_rows(const graph::GraphIndex& g, const Pattern& p) {
  const int64_t ni = integer_or(p.problem, "n", 0);
  for (const graph::Node* u : g.users(p.output)) {
    if (u->op != "aten.view.default" && u->op != "aten._unsafe_view.default") continue;
    if (u->outputs.empty() || !u->outputs[0].type) continue;
    const std::vector<int64_t>& shape = u->outputs[0].type->shape;
    int64_t suffix = 1;
    bool split = ni == 1;
    for (auto it = shape.rbegin(); it != shape.rend() && suffix < ni; ++it)
      if ((suffix *= *it) == ni) split = true;
    if (!split)
      return fmt::format("%{} views its output %{} across rows, which a strided view of the merged result cannot be",
                         u->name, p.output);
  }
  return "";
}

void merge_into(const graph::GraphIndex& g, Pattern& first, std::vector<const Pattern*> members) {
  std::sort(members.begin(), members.end(), [&](const Pattern* a, const Pattern* b) {
    return g.position(*g.producer(a->output)) < g.position(*g.producer(b->output));
  });
  const int64_t a_bytes = tensor_bytes(g.type(operand(first, "a")));
  nlohmann::ordered_json problem = members[0]->problem, merged = nlohmann::ordered_json::array();
  std::vector<std::pair<std::string, std::string>> operands{{"a", operand(first, "a")}};
  std::vector<std::string> nodes, extra;
  Estimate e = members[0]->estimate;
  int64_t n = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    const Pattern& p = *members[i];
    const std::string suffix = i ? std::to_string(i) : "", bias = operand(p, "bias");
    const int64_t ni = integer_or(p.problem, "n", 0);
    merged.push_back({{"output", p.output}, {"b", operand(p, "b")},
                      {"bias", bias.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(bias)},
                      {"n", ni}, {"offset", n}});
    operands.emplace_back("b" + suffix, operand(p, "b"));
    if (!bias.empty()) operands.emplace_back("bias" + suffix, bias);
    nodes.insert(nodes.end(), p.nodes.begin(), p.nodes.end());
    if (i) {
      extra.push_back(p.output);
      // A is read once for all: its bytes leave the kernel and count as gain.
      e.flops += p.estimate.flops;
      e.bytes += p.estimate.bytes - a_bytes;
      e.time_us += p.estimate.time_us - double(a_bytes) / kH200.hbm_bytes_per_s * 1e6;
      e.gain_us += p.estimate.gain_us + double(a_bytes) / kH200.hbm_bytes_per_s * 1e6;
    }
    n += ni;
  }
  problem["n"] = n;
  problem["ldd"] = n;
  problem["merged"] = std::move(merged);
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < g.graph().nodes.size(); ++i) position[g.graph().nodes[i].name] = i;
  std::sort(nodes.begin(), nodes.end(), [&](const auto& a, const auto& b) { return position.at(a) < position.at(b); });
  first.nodes = std::move(nodes);
  first.output = members[0]->output;
  first.extra_outputs = std::move(extra);
  first.operands = std::move(operands);
  first.problem = std::move(problem);
  first.estimate = std::move(e);
}

}  // namespace

void merge_gemms(const graph::GraphIndex& g, Plan& plan) {
  merge_swiglu(g, plan);  // first: it takes the gate's tail and the up GEMM (swiglu_merge.h)
  std::map<std::string, std::string> owner;  // node -> pattern id (its nodes and its tail's)
  for (const auto& p : plan.patterns) {
    for (const auto& n : p.nodes) owner[n] = p.id;
    if (p.epilogue)
      for (const auto& n : p.epilogue->nodes) owner[n] = p.id;
  }
  std::map<std::string, std::vector<Pattern*>> by_a;  // A value -> the rule's patterns, priority order
  for (auto& p : plan.patterns)
    if (p.rule == "gemm" && !operand(p, "a").empty()) by_a[operand(p, "a")].push_back(&p);
  std::set<std::string> gone;  // ids merged into another
  for (auto& [a, group] : by_a) {
    if (group.size() < 2) continue;
    std::vector<Pattern*> open;
    for (Pattern* p : group) {
      std::string why = alone(g, *p);
      if (why.empty()) why = read_by_pattern(g, p->output, owner, p->id);
      if (why.empty()) why = view_crosses_rows(g, *p);
      if (why.empty() && !open.empty()) why = differs(*p, *open[0]);
      if (why.empty()) {
        open.push_back(p);
      } else if (p->merge_stop.empty()) {  // SwiGLU's reason (merge_swiglu), when it has one, stays
        p->merge_stop = fmt::format("reads %{} as other GEMMs do, not merged: {}", a, why);
      }
    }
    if (open.size() < 2) continue;
    std::vector<const Pattern*> members(open.begin(), open.end());
    std::vector<Pattern> copies;  // merge_into reads the members while it writes the first
    for (const Pattern* p : members) copies.push_back(*p);
    std::vector<const Pattern*> from;
    for (const auto& c : copies) from.push_back(&c);
    merge_into(g, *open[0], from);
    for (size_t i = 1; i < open.size(); ++i) gone.insert(open[i]->id);
  }
  std::erase_if(plan.patterns, [&](const Pattern& p) { return gone.contains(p.id); });
}

}  // namespace fact::discover::rules
