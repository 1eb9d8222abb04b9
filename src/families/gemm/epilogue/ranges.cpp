#include "families/gemm/epilogue/ranges.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include "base/error.h"
#include "families/gemm/epilogue/bounded_math.h"
#include "families/gemm/epilogue/program.h"

using nlohmann::json;

namespace fact::realize {
namespace {

// Every input leaf as slot c0, whose interval is [-inf, inf]: interval arithmetic treats
// each use of a value as independent anyway, so one unbounded slot stands for all of them.
json inputs_as_c0(const json& t) {
  if (t.contains("input")) return {{"input", "c0"}};
  if (!t.contains("op")) return t;
  json out = t;
  for (auto& a : out.at("args")) if (!a.is_null()) a = inputs_as_c0(a);
  return out;
}

// v is below / above the bound b by more than the margin for fp32 rounding of v.
double margin(double b) { return 1e-5 * std::max(1.0, std::fabs(b)); }
bool safely_below(double v, double b) { return v <= b - margin(b); }
bool safely_above(double v, double b) { return v >= b + margin(b); }

std::string interval_text(std::pair<double, double> r) { return fmt::format("[{:.3g}, {:.3g}]", r.first, r.second); }

// [lo, hi] of the top of the stack after the first `count` instructions of `prog` (all of
// them for -1), every input unbounded; [-inf, inf] where a bound is NaN.
std::pair<double, double> range_over_unbounded(const EpilogueProgram& prog, int count) {
  double in_lo[4], in_hi[4];
  for (int i = 0; i < 4; ++i) in_lo[i] = -INFINITY, in_hi[i] = INFINITY;
  double lo = -INFINITY, hi = INFINITY;
  eval_epilogue_range(prog, -INFINITY, INFINITY, in_lo, &lo, &hi, in_hi, count);
  if (lo != lo || hi != hi) return {-INFINITY, INFINITY};
  return {lo, hi};
}

struct Simplifier {
  std::vector<std::string>* notes;

  void note(const std::string& s) {
    if (notes) notes->push_back(s);
  }

  json run(const json& t) {
    if (!t.contains("op")) return t;
    const std::string op = t.at("op");
    json out = t;
    for (auto& a : out.at("args")) if (!a.is_null() && a.contains("op")) a = run(a);
    // Whether the node's own branch sides can occur: its trailing instructions (relu; a
    // clamp's clamp_lo then clamp_hi, which acts on max(x, lo)) in the program of the node
    // as discovered, as verification judges them (epilogue_branch_reach).
    auto own_reach = [&](int k) {
      const std::vector<BranchReach> all = epilogue_branch_reach(compile_epilogue(inputs_as_c0(t)));
      return std::vector<BranchReach>(all.end() - k, all.end());
    };
    // The op's range rule (op_table.h's `rule`): drop it (a CLAMP row: a bound) where its
    // argument never leaves the side it passes through, or its bounded variant.
    const EpilogueTreeOp* rule = epilogue_tree_op(op);
    if (!rule || rule->range == EpilogueTreeOp::Range::keep) return out;
    if (rule->range == EpilogueTreeOp::Range::drop && rule->form == EpilogueTreeOp::Form::bounds) {
      json& args = out.at("args");
      const bool has_lo = !args.at(1).is_null(), has_hi = !args.at(2).is_null();
      const std::vector<BranchReach> r = own_reach(int(has_lo) + int(has_hi));
      if (r.empty()) return out;
      // A bound goes when no input takes its other side. With lo > hi (torch.clamp: hi
      // everywhere) the upper bound always stays, since max(x, lo) >= lo > hi; a NaN bound
      // is never cleared.
      const bool drop_lo = has_lo && !r.front().other, drop_hi = has_hi && !r.back().other;
      if (!drop_lo && !drop_hi) return out;
      const bool none_left = (drop_lo || !has_lo) && (drop_hi || !has_hi);
      note(fmt::format("{}: the argument lies in {}; {}", op, interval_text({r.front().lo, r.front().hi}),
                       none_left ? "the op is dropped" : drop_lo ? "its lower bound is dropped" : "its upper bound is dropped"));
      if (none_left) return args.at(0);
      return json{{"op", "clamp"}, {"args", {args.at(0), drop_lo ? json(nullptr) : args.at(1), drop_hi ? json(nullptr) : args.at(2)}}};
    }
    if (rule->range == EpilogueTreeOp::Range::drop) {
      const BranchReach r = own_reach(1).front();
      if (r.other) return out;
      note(fmt::format("{}: the argument lies in {}; the op is dropped", op, interval_text({r.lo, r.hi})));
      return out.at("args").at(0);
    }
    // Ranges come from the argument as discovered: the rewrites keep its values.
    const auto r = epilogue_tree_range(t.at("args").at(0));
    const double reach = std::max(std::fabs(r.first), std::fabs(r.second));
    if (safely_below(reach * rule->scale, FACT_ERF_BOUNDED_LIMIT)) {
      note(fmt::format("{}: the argument lies in {}; {}", op, interval_text(r), rule->note));
      out["op"] = rule->variant;
    }
    return out;
  }
};

}  // namespace

std::pair<double, double> epilogue_tree_range(const json& t) {
  return range_over_unbounded(compile_epilogue(inputs_as_c0(t)), -1);
}

std::vector<BranchReach> epilogue_branch_reach(const EpilogueProgram& prog) {
  std::vector<BranchReach> out(size_t(std::max(prog.size, 0)));
  for (int i = 0; i < prog.size; ++i) {
    const EpiInstr in = prog.code[i];
    if (!epilogue_op_branches(in.op)) continue;
    BranchReach& r = out[size_t(i)];
    std::tie(r.lo, r.hi) = range_over_unbounded(prog, i);
    const double c = epilogue_breakpoint(in);
    if (epilogue_branch_direction(in.op) < 0) {
      r.through = !safely_above(r.lo, c);  // x < c somewhere
      r.other = !safely_below(r.hi, c);    // x >= c somewhere
    } else {
      r.through = !safely_below(r.hi, c);  // x > c somewhere
      r.other = !safely_above(r.lo, c);    // x <= c somewhere
    }
  }
  return out;
}

json simplify_epilogue_by_range(const json& tree, std::vector<std::string>* notes) {
  try {
    compile_epilogue(inputs_as_c0(tree));
  } catch (const Error&) {
    return tree;
  }
  Simplifier s{notes};
  return s.run(tree);
}

}  // namespace fact::realize
