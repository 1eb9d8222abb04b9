// The rope family (families/family.h): rule `rope`, FACT's rotary-embedding kernels from
// templates/rope.cu.in (docs/04-realization.md, "Rope"), a copy of the fused kernel's bytes
// as the vendor lower bound, the float64 reference and bound of reference.h, the C ABI of
// abi.h. The vendor candidate only bounds the ATen path: fact optimize times the kernel
// against the pattern's ATen nodes in the module (docs/05).
#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "base/json_format.h"
#include "engine/library_candidate.h"
#include "families/family.h"
#include "families/rope/codegen.h"
#include "families/rope/rule.h"
#include "families/rope/verify_tune.h"

using nlohmann::json;

namespace fact::families {
namespace {

using namespace realize;

class RopePattern final : public PatternRealization {
 public:
  RopeProblem problem;

  TuneResult tune(const TuneContext& ctx) const override {
    TuneResult out;
    std::vector<std::unique_ptr<RopeCandidate>> runnable;
    runnable.push_back(make_rope_vendor_bound(problem));
    load_built_kernels(kernels, *ctx.built, &load_rope_candidate, runnable, out.build_failures);
    std::fprintf(stderr, "realize %s: verifying and tuning %zu rope candidates (%s rows=%lld head_dim=%lld %s)\n",
                 ctx.id.c_str(), runnable.size(), rope_form_name(problem.form).c_str(), (long long)problem.rows(),
                 (long long)problem.head_dim, to_string(problem.dtype).c_str());
    out.outcomes = verify_and_tune_rope(problem, runnable, *ctx.gpu, ctx.warmup, ctx.trials, ctx.verbose, &out.verification);
    return out;
  }

  // The vendor candidate is a lower bound of the ATen path, not the path: it wins only
  // when no kernel verified.
  const CandidateOutcome* winner(const std::vector<CandidateOutcome>& outcomes) const override {
    return fastest_kernel_else_bound(outcomes);
  }
};

std::string rope_text(const json& p) {
  const json dims = p.value("dims", json::array());
  std::string shape;
  for (const auto& d : dims) shape += (d.is_number_integer() ? std::to_string(d.get<int64_t>()) : d.dump()) + "x";
  return fmt::format("rope {} [{}{}] {}", p.value("form", "?"), shape, integer_or(p, "head_dim", 0), p.value("dtype", "?"));
}

class RopeFamily final : public Family {
 public:
  std::string_view name() const override { return "rope"; }
  std::vector<discover::Rule> rules() const override { return {discover::rules::rope_rule()}; }

  std::unique_ptr<PatternRealization> plan(const json& pat, const PlanContext& ctx,
                                           std::map<std::string, BuildRequest>& requests) const override {
    auto w = std::make_unique<RopePattern>();
    w->problem = rope_problem_from_json(pat.at("problem"));
    const RopeKernel k = rope_kernel(w->problem);
    for (const auto& c : rope_tuning_space(k, w->problem, ctx.sm_count, ctx.tune_budget)) {
      const std::string name = rope_kernel_name(k, c);
      if (!requests.count(name)) requests[name] = {name, render_rope_kernel(k, c), name};
      w->kernels.push_back(name);
    }
    if (w->kernels.empty()) {
      w->unsupported = fmt::format("no configuration of the rope kernels fits head_dim {} with strides x {}, cos {}, "
                                   "sin {}, out {}: the vector loads need 8-byte-aligned rows",
                                   w->problem.head_dim, w->problem.x, w->problem.cos, w->problem.sin, w->problem.out);
    }
    w->fields["aten_check"] = "module";
    return w;
  }

  // What the runtime binds (docs/05-composition.md, "Rope kernels"): the problem as realize
  // reads it, the x, cos and sin operands; no fused tail; an object to link.
  void compose_winner(const std::string& id, const json& pat, const json& r, const json& w, json& m) const override {
    const auto bad = [&](const std::string& what) { return Error("plan pattern " + id + " (rope): " + what); };
    try {
      rope_problem_from_json(pat.at("problem"));
    } catch (const Error& e) {
      throw bad(e.what());
    }
    const json& ops = pat.at("operands");
    for (const char* role : {"x", "cos", "sin"})
      if (!ops.contains(role)) throw bad(std::string("operand ") + role + " is missing");
    compose_tailless_winner(name(), id, r, w, m);
  }

  std::string problem_text(const json& p) const override { return rope_text(p); }

  std::string table_note() const override { return copy_bound_table_note(name()); }

  std::string report_section(const json&, const json& realized, const json& manifest, bool mine) const override {
    return mine ? copy_bound_report_section(name(), "Rotary embeddings", realized, manifest, &rope_text) : std::string();
  }

  std::string vendor_text(const json& m) const override { return fmt::format("its {} ATen nodes", m.at("nodes").size()); }
};

}  // namespace

const Family& rope() {
  static const RopeFamily family;
  return family;
}

}  // namespace fact::families
