// The norm family (families/family.h): rule `norm`, FACT's row-norm kernels from
// templates/norm.cu.in (docs/04-realization.md, "Norm"), a copy of the fused kernel's bytes
// as the vendor lower bound, the float64 reference of reference.cpp with the bound of
// bound.h, the C ABI of abi.h. The vendor candidate only bounds the ATen path: fact
// optimize times the kernel against the pattern's ATen nodes in the module (docs/05).
#include <cstdio>

#include <fmt/format.h>

#include "base/error.h"
#include "base/json_format.h"
#include "families/family.h"
#include "families/norm/codegen.h"
#include "families/norm/rule.h"
#include "families/norm/verify_tune.h"
#include "engine/library_candidate.h"

using nlohmann::json;

namespace fact::families {
namespace {

using namespace realize;

class NormPattern final : public PatternRealization {
 public:
  NormProblem problem;

  // The sum's graph value names where it goes, not what is computed: tuning is keyed by
  // whether the sum is written.
  json tuning_problem(const json& plan_problem) const override {
    json key = plan_problem;
    key["sum_output"] = problem.writes_sum();
    return key;
  }

  TuneResult tune(const TuneContext& ctx) const override {
    TuneResult out;
    std::vector<std::unique_ptr<NormCandidate>> runnable;
    runnable.push_back(make_norm_vendor_bound(problem));
    load_built_kernels(kernels, *ctx.built, &load_norm_candidate, runnable, out.build_failures);
    std::fprintf(stderr, "realize %s: verifying and tuning %zu norm candidates (%s rows=%lld cols=%lld %s)\n", ctx.id.c_str(),
                 runnable.size(), norm_kind_name(problem.norm).c_str(), (long long)problem.rows, (long long)problem.cols,
                 to_string(problem.dtype).c_str());
    out.outcomes = verify_and_tune_norm(problem, runnable, *ctx.gpu, ctx.warmup, ctx.trials, ctx.verbose, &out.verification);
    return out;
  }

  // The vendor candidate is a lower bound of the ATen path, not the path: it wins only
  // when no kernel verified.
  const CandidateOutcome* winner(const std::vector<CandidateOutcome>& outcomes) const override {
    return fastest_kernel_else_bound(outcomes);
  }
};

std::string norm_text(const json& p) {
  std::string extras;
  if (p.value("residual", false)) extras += p.value("sum_output", json()).is_string() ? " +residual(sum out)" : " +residual";
  if (p.value("weight", false)) extras += " +weight";
  if (p.value("bias", false)) extras += " +bias";
  return fmt::format("{} rows={} cols={} {}->{}{}", p.value("norm", "?") == "layer" ? "layernorm" : "rmsnorm",
                     integer_or(p, "rows", 0), integer_or(p, "cols", 0), p.value("dtype", "?"), p.value("out_dtype", "?"), extras);
}

class NormFamily final : public Family {
 public:
  std::string_view name() const override { return "norm"; }
  std::vector<discover::Rule> rules() const override { return {discover::rules::norm_rule()}; }

  std::unique_ptr<PatternRealization> plan(const json& pat, const PlanContext& ctx,
                                           std::map<std::string, BuildRequest>& requests) const override {
    auto w = std::make_unique<NormPattern>();
    w->problem = norm_problem_from_json(pat.at("problem"));
    const NormKernel k = norm_kernel(w->problem);
    for (const auto& c : norm_tuning_space(k, w->problem, ctx.sm_count, ctx.tune_budget)) {
      const std::string name = norm_kernel_name(k, c);
      if (!requests.count(name)) requests[name] = {name, render_norm_kernel(k, c), name};
      w->kernels.push_back(name);
    }
    if (w->kernels.empty()) {
      w->unsupported = fmt::format("no configuration of the norm kernels fits cols {} with row strides x {}{}: the vector "
                                   "loads need both to be multiples of 4 bytes' worth of elements",
                                   w->problem.cols, w->problem.x_stride,
                                   w->problem.residual ? fmt::format(", residual {}", w->problem.residual_stride) : "");
    }
    w->fields["aten_check"] = "module";
    return w;
  }

  // What the runtime binds (docs/05-composition.md, "Norm kernels"): the problem as realize
  // reads it, an x operand and exactly the residual, weight and bias operands the problem
  // names, the sum's value when the kernel writes it; no fused tail; an object to link.
  void compose_winner(const std::string& id, const json& pat, const json& r, const json& w, json& m) const override {
    const auto bad = [&](const std::string& what) { return Error("plan pattern " + id + " (norm): " + what); };
    NormProblem p;
    try {
      p = norm_problem_from_json(pat.at("problem"));
    } catch (const Error& e) {
      throw bad(e.what());
    }
    const json& ops = pat.at("operands");
    if (!ops.contains("x")) throw bad("operand x is missing");
    for (auto [role, wanted] : {std::pair{"residual", p.residual}, std::pair{"weight", p.weight}, std::pair{"bias", p.bias}}) {
      if (ops.contains(role) != wanted) throw bad(std::string("operand ") + role + (wanted ? " is missing" : " is not in the problem"));
    }
    compose_tailless_winner(name(), id, r, w, m);  // a kernel's symbol is its name unless realize says otherwise
    if (p.writes_sum()) m["extra_outputs"] = {{"sum", p.sum_output}};
  }

  std::string problem_text(const json& p) const override { return norm_text(p); }

  std::string table_note() const override { return copy_bound_table_note(name()); }

  std::string report_section(const json&, const json& realized, const json& manifest, bool mine) const override {
    return mine ? copy_bound_report_section(name(), "Norms", realized, manifest, &norm_text) : std::string();
  }

  std::string vendor_text(const json& m) const override {
    return fmt::format("its {} ATen nodes", m.at("nodes").size());
  }
};

}  // namespace

const Family& norm() {
  static const NormFamily family;
  return family;
}

}  // namespace fact::families
