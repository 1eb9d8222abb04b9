// The GEMM family (families/family.h): rule `gemm`, CUTLASS sm90 GEMMs from
// templates/gemm_sm90.cu.in with the elementwise tail after them fused into the epilogue as
// an Epilogue Visitor Tree (epilogue/), cuBLAS and cuBLASLt as the vendor candidates, the
// float64 reference on cuBLAS DGEMM, the C ABI of abi.h.
#include <cstdio>

#include <fmt/format.h>

#include "compose/compose.h"
#include "base/json_format.h"
#include "engine/kernel_library.h"
#include "families/family.h"
#include "families/gemm/codegen.h"
#include "families/gemm/epilogue/epilogue.h"
#include "families/gemm/epilogue/idiom.h"
#include "families/gemm/epilogue/ranges.h"
#include "families/gemm/epilogue/tail_codegen.h"
#include "families/gemm/epilogue/tail_verify.h"
#include "families/gemm/rule.h"
#include "families/gemm/space.h"
#include "families/gemm/swiglu_realize.h"
#include "families/gemm/verify_tune.h"
#include "families/gemm/vetted.h"

using nlohmann::json;

namespace fact::families {
namespace {

using namespace realize;

class GemmPattern final : public PatternRealization {
 public:
  GemmProblem problem;
  std::vector<GemmConfig> configs;  // of `kernels`, in the same order
  std::string tail_kernel;          // of a fused problem: the vendor candidates' tail pass (companions[0])

  json candidate_fields(const std::string& candidate) const override {
    GemmRuntime rt;
    split_candidate_name(candidate, rt);
    if (rt == GemmRuntime{}) return json::object();
    return {{"runtime", {{"splits", rt.splits}, {"raster", rt.raster}, {"swizzle", rt.swizzle}}}};
  }

  json tuning_problem(const json& plan_problem) const override {
    // A fused tail is part of the problem: its tuning never answers the plain GEMM's.
    json key_problem = plan_problem;
    if (problem.fused()) key_problem["epilogue"] = {{"tree", problem.tail_tree}, {"broadcast", problem.tail_broadcast}};
    return key_problem;
  }

  TuneResult tune(const TuneContext& ctx) const override {
    // cuBLAS and cuBLASLt, then every built kernel with its run-time variants.
    TuneResult out;
    std::vector<std::unique_ptr<GemmCandidate>> runnable;
    runnable.push_back(make_cublas_candidate(problem, ctx.policy));
    runnable.push_back(make_cublaslt_candidate(problem, ctx.policy));
    if (problem.fused()) {  // the vendor GEMM, then the tail kernel (else FACT's interpreting pass)
      const BuildResult* tk = tail_kernel.empty() ? nullptr : &ctx.built->at(tail_kernel);
      if (tk && !tk->ok) {
        out.build_failures.push_back({{"kernel", tail_kernel}, {"impl", "cutlass"}, {"status", "quarantined"},
                                      {"reason", "tail kernel: " + tk->reason}, {"key", tk->key}});
      }
      for (auto& r : runnable) {
        std::unique_ptr<GemmCandidate> pass;
        if (tk && tk->ok) pass = load_cutlass_candidate(tail_kernel, tk->library.string(), kernel_symbol(tail_kernel));
        r = make_tail_pass_candidate(std::move(r), problem, std::move(pass));
      }
    }
    for (size_t i = 0; i < kernels.size(); ++i) {
      const auto& name = kernels[i];
      const auto& b = ctx.built->at(name);
      if (!b.ok) {
        out.build_failures.push_back({{"kernel", name}, {"impl", "cutlass"}, {"status", "quarantined"}, {"reason", b.reason}, {"key", b.key}});
        continue;
      }
      // Scheduler options are run-time arguments: each variant is its own candidate.
      for (const auto& rt : gemm_runtime_variants(configs[i], problem, ctx.sm_count)) {
        runnable.push_back(load_cutlass_candidate(name + runtime_suffix(rt), b.library.string(), kernel_symbol(name), rt));
      }
    }
    std::fprintf(stderr, "realize %s: verifying and tuning %zu candidates (M=%lld N=%lld K=%lld L=%lld)\n",
                 ctx.id.c_str(), runnable.size(), (long long)problem.m, (long long)problem.n, (long long)problem.k,
                 (long long)problem.l);
    out.outcomes = verify_and_tune(problem, ctx.policy, runnable, *ctx.gpu, ctx.warmup, ctx.trials, ctx.verbose,
                                   &out.verification);
    return out;
  }

  // Fused: the winner computes the tail too (a vendor winner leaves the tail to ATen).
  bool fused(const json& winner_impl) const override { return problem.fused() && winner_impl == "cutlass"; }
};

// Why a plan tail was not fused, or how the fastest candidates compare: the report's status.
std::string tail_status(const json& r, const json& m);

// Adds the tail kernel of w's fused problem (tail_codegen.h) to the build as w's companion.
// A tail it cannot render keeps the interpreting pass; realized.json's epilogue says why.
void plan_tail_kernel(GemmPattern& w, std::map<std::string, BuildRequest>& requests) {
  const GemmProblem& p = w.problem;
  try {
    const std::string name = tail_kernel_name(p.tail_tree, p.tail_broadcast, p.dtype_d);
    if (!requests.count(name)) requests[name] = {name, render_tail_kernel(p.tail_tree, p.tail_broadcast, p.dtype_d)};
    w.tail_kernel = name;
    w.companions.push_back(name);
    w.fields["epilogue"]["tail_kernel"] = name;
  } catch (const Error& e) {
    w.fields["epilogue"]["tail_kernel_reason"] = e.what();
  }
}

// A vendor winner that runs the tail kernel after the vendor GEMM: the manifest entry `m`
// keeps the GEMM's nodes (run as their ATen op) and gets "tail", a manifest pattern of its
// own for the runtime: the tail's nodes as one call of the tail kernel, whose operand "a" is
// the GEMM's output (C of abi.h's tail kernels) and whose problem is D's shape and strides.
void compose_tail_kernel(const std::string& id, const json& pat, const json& w, json& m) {
  const json& e = pat.value("epilogue", json());
  const json& k = w.value("companion", json());
  if (!e.is_object()) throw Error("realized.json pattern " + id + ": the winner runs a tail kernel, but the plan has no epilogue");
  if (!k.is_object() || !k.contains("symbol") || !k.contains("object")) {
    throw Error("realized.json pattern " + id + ": the winner's tail kernel " + k.value("kernel", std::string("?")) +
                " has no build to link");
  }
  const json& p = pat.at("problem");
  const json d = p.at("dtype_d"), ldd = p.at("ldd"), bsd = p.value("batch_stride_d", json(0));
  const json problem{{"kind", "gemm"}, {"m", p.at("m")}, {"n", p.at("n")}, {"k", 0}, {"l", p.value("l", json(1))},
                     {"dtype_a", d}, {"dtype_b", d}, {"dtype_d", d}, {"lda", ldd}, {"ldb", 0}, {"ldd", ldd},
                     {"batch_stride_a", bsd}, {"batch_stride_d", bsd}, {"bias", nullptr}};
  m["tail"] = {{"id", id + "_tail"}, {"rule", m.value("rule", json())}, {"abi", "gemm"}, {"impl", "cutlass"},
               {"kernel", k.at("kernel")}, {"symbol", k.at("symbol")}, {"nodes", e.at("nodes")},
               {"output", e.at("output")}, {"operands", {{"a", pat.at("output")}}}, {"problem", problem},
               {"fused", true}, {"epilogue", e}, {"workspace_bytes", 0}};
}

class GemmFamily final : public Family {
 public:
  std::string_view name() const override { return "gemm"; }
  std::vector<discover::Rule> rules() const override { return {discover::rules::gemm_rule()}; }

  void describe(std::ostream& os) const override {
    os << "epilogue (the elementwise tail after a gemm pattern, fused into its kernel's epilogue as an EVT)\n"
          "  tests: tests/golden/discover/epilogue_*.txt, tests/families/gemm/epilogue/test_evt_codegen.cpp\n  ops:\n";
    for (const discover::EpilogueOp& op : discover::epilogue_ops())
      os << fmt::format("    {:<26} {:<11} {}\n", op.aten, op.name, op.meaning);
    os << "  idioms (written-out forms computed as one op; src/families/gemm/epilogue/idioms/):\n";
    for (const discover::Idiom& i : discover::epilogue_idioms())
      os << fmt::format("    {:<26} -> {:<8} {} (forms: {}; tests: {})\n", i.name, i.op, i.meaning, i.forms.size(), i.tests);
  }

  std::unique_ptr<PatternRealization> plan(const json& pat, const PlanContext& ctx,
                                           std::map<std::string, BuildRequest>& requests) const override {
    // SwiGLU over the interleaved gate/up weight: its own kernels (swiglu_realize.h).
    if (pat.at("problem").contains("swiglu")) return plan_swiglu(pat, ctx, requests);
    auto w = std::make_unique<GemmPattern>();
    w->problem = gemm_problem_from_json(pat.at("problem"));
    // The elementwise tail discovery found: fused into the kernel's epilogue when it can be.
    if (pat.contains("epilogue") && pat.at("epilogue").is_object()) {
      const json& e = pat.at("epilogue");
      const std::string why_not = attach_tail(w->problem, e);
      w->fields["epilogue"] = {{"expr", e.value("expr", "")}, {"nodes", e.value("nodes", json::array())},
                               {"fusable", why_not.empty()}};
      if (!why_not.empty()) w->fields["epilogue"]["reason"] = why_not;
      // A narrowed output (discover/narrow.h) is the tail's: unfused, the kernel writes its
      // own output in the tail's input type and the tail's ATen nodes round the result.
      if (!why_not.empty()) w->problem.dtype_d = w->problem.dtype_epi;
      // What the kernel's tail leaves out or computes otherwise, proven by range (ranges.h).
      std::vector<std::string> ranges;
      if (why_not.empty()) simplify_epilogue_by_range(kernel_tail_tree(w->problem), &ranges);
      if (!ranges.empty()) w->fields["epilogue"]["ranges"] = ranges;
      // The tail as one elementwise kernel over D, for when the vendor GEMM wins.
      if (why_not.empty() && w->problem.dtype_d == w->problem.dtype_epi) plan_tail_kernel(*w, requests);
      else if (why_not.empty())
        w->fields["epilogue"]["tail_kernel_reason"] = "D is narrowed to " + to_string(w->problem.dtype_d) +
                                                       " while the tail reads " + to_string(w->problem.dtype_epi) +
                                                       ": a vendor winner runs the tail's ATen nodes";
    }
    std::string why;
    const auto families = gemm_families(w->problem, ctx.policy, why);
    if (families.empty()) {
      w->unsupported = why;
      return w;
    }
    // The cost model's ranking, seeded by the nearest vetted example, then the budget.
    auto choices = gemm_kernel_choices(families, w->problem, ctx.sm_count, 0);
    for (const auto& f : families) {
      if (auto vetted = nearest_vetted(shipped_vetted(), f, w->problem)) {
        seed_choices(choices, f, vetted->config);
        w->fields["vetted_example"] = vetted->name;
      }
    }
    if (ctx.tune_budget > 0 && int(choices.size()) > ctx.tune_budget) choices.resize(ctx.tune_budget);
    for (const auto& ch : choices) {
      const std::string name = gemm_kernel_name(ch.family, ch.config);
      if (!requests.count(name)) requests[name] = {name, render_gemm_sm90(ch.family, ch.config)};
      w->kernels.push_back(name);
      w->configs.push_back(ch.config);
    }
    return w;
  }

  void compose_winner(const std::string& id, const json& pat, const json& r, const json& w, json& m) const override {
    if (w.value("impl", "") == "vendor") return compose_tail_kernel(id, pat, w, m);
    // A fused winner computes the tail too: the pattern then spans the tail's nodes and
    // writes the tail's output, and the runtime passes the tail's inputs.
    if (r.value("fused", false)) {
      const json& e = pat.at("epilogue");
      if (!e.is_object()) throw Error("realized.json fused pattern " + id + ", but the plan has no epilogue for it");
      for (const auto& n : e.at("nodes")) m["nodes"].push_back(n);
      m["output"] = e.at("output");
      m["epilogue"] = e;
      m["fused"] = true;
    }
    m["symbol"] = w.at("symbol");
  }

  // "M=.. N=.. K=.. L=.. dtype A:.. B:.. +bias[n]", then for a merged GEMM (merge.h) each
  // member's output and N: " merged(%linear N=128, %linear_1 N=64)".
  std::string problem_text(const json& p) const override {
    std::string merged;
    for (const auto& m : p.value("merged", json::array()))
      merged += fmt::format("{}%{} N={}", merged.empty() ? " merged(" : ", ", m.value("output", "?"), integer_or(m, "n", 0));
    if (!merged.empty()) merged += ")";
    if (const json& s = p.value("swiglu", json()); s.is_object())  // swiglu.h: silu(gate) * up, H columns
      merged += fmt::format(" swiglu(%{}, %{} H={})", s.value("gate", json::object()).value("output", "?"),
                            s.value("up", json::object()).value("output", "?"), integer_or(s, "hidden", 0));
    return fmt::format("M={} N={} K={} L={} {} A:{} B:{}{}{}", integer_or(p, "m", 0), integer_or(p, "n", 0), integer_or(p, "k", 0),
                       integer_or(p, "l", 1), p.value("dtype_a", "?"), p.value("layout_a", "?"), p.value("layout_b", "?"),
                       p.contains("bias") && !p.at("bias").is_null() ? " +bias[" + p.at("bias").get<std::string>() + "]" : "",
                       merged);
  }

  // Every plan tail: fused, or why not; the range rewrites in the kernel; the draws and
  // branches verification could not use.
  std::string report_section(const json& plan, const json& realized, const json& manifest, bool) const override {
    std::string s = "## Fused tails\n\n";
    bool tails = false;
    for (const auto& pat : plan.at("patterns")) {
      const json& e = pat.value("epilogue", json());
      if (!e.is_object()) continue;
      tails = true;
      const json r = compose::find_by_id(realized.at("patterns"), pat.value("id", ""));
      const json m = compose::find_by_id(manifest.at("patterns"), pat.value("id", ""));
      std::string ops;
      for (const auto& n : e.at("nodes")) ops += (ops.empty() ? "" : ", ") + n.get<std::string>();
      s += fmt::format("- {}: `{}` (nodes {}) — {}\n", pat.value("id", ""), e.value("expr", ""), ops, tail_status(r, m));
      if (m.value("fused", false) && r.is_object() && r.contains("epilogue")) {
        for (const auto& n : r.at("epilogue").value("ranges", json::array())) s += "  - by range, in the kernel: " + n.get<std::string>() + "\n";
      }
      if (r.is_object() && r.contains("verification")) {
        const json& v = r.at("verification");
        std::string skipped;
        for (const auto& d : v.value("draws", json::array())) {
          if (!d.value("informative", true)) skipped += (skipped.empty() ? "" : "; ") + d.value("draw", std::string()) + ": " + d.value("reason", std::string());
        }
        if (!skipped.empty()) s += "  - draws that could not tell right from wrong, skipped: " + skipped + "\n";
        if (!v.value("unexercised", std::string()).empty()) s += "  - branches never exercised: " + v.at("unexercised").get<std::string>() + "\n";
        if (!v.value("unreachable", std::string()).empty()) s += "  - branches no input can take (by range): " + v.at("unreachable").get<std::string>() + "\n";
      }
    }
    if (!tails) s += "None: no GEMM here is followed by an elementwise tail.\n";
    return s;
  }

  std::string left_to_aten(const json& plan, const json& manifest) const override {
    std::string s;
    for (const auto& pat : plan.at("patterns")) {
      const json& e = pat.value("epilogue", json());
      if (!e.is_object()) continue;
      const json m = compose::find_by_id(manifest.at("patterns"), pat.value("id", ""));
      if (m.is_object() && (m.value("fused", false) || m.contains("tail"))) continue;
      for (const auto& n : e.at("nodes")) s += fmt::format("- `{}`: in {}'s tail, not fused (see Fused tails)\n", n.get<std::string>(), pat.value("id", ""));
    }
    return s;
  }

  std::string vendor_text(const json& m) const override {
    if (m.contains("tail")) return "its ATen op (cuBLAS), then its tail as one kernel, `" + m.at("tail").value("kernel", std::string()) + "`";
    return "its ATen op (cuBLAS)";
  }
};

std::string tail_status(const json& r, const json& m) {
  if (m.value("fused", false)) {
    // A pattern with buckets has a kernel per bucket (the report's Buckets table).
    return m.contains("buckets") ? std::string("fused into its buckets' kernels (see Buckets)")
                                 : "fused into `" + m.value("kernel", std::string()) + "`";
  }
  if (m.is_object() && m.contains("tail")) {
    return fmt::format("after the vendor GEMM `{}`, one elementwise kernel over D: `{}` ({:.4f} ms in all)",
                       m.value("kernel", std::string()), m.at("tail").value("kernel", std::string()),
                       m.value("time_ms", 0.0));
  }
  if (r.is_object() && r.contains("epilogue") && !r.at("epilogue").value("fusable", true)) {
    return "left to ATen: " + r.at("epilogue").value("reason", std::string());
  }
  if (r.is_object() && r.contains("cutlass_unavailable")) {
    return "left to ATen: no CUTLASS kernel for this problem (" + r.at("cutlass_unavailable").get<std::string>() + ")";
  }
  // Why the fused kernels lost: all quarantined, or the vendor path was faster.
  const compose::Outcome o = compose::outcome_of(r);
  if (!o.best_cutlass) {
    return "left to ATen: every fused kernel was quarantined" + (o.first_reason.empty() ? std::string() : " (" + o.first_reason + ")");
  }
  if (o.best_vendor) {
    return fmt::format("left to ATen: `{}` (the vendor GEMM, then the tail as ATen ops, one pass over D per node) took {:.4f} ms, the best fused kernel {:.4f} ms",
                       o.best_vendor->value("kernel", ""), o.best_vendor->at("median_ms").get<double>(),
                       o.best_cutlass->at("median_ms").get<double>());
  }
  return "left to ATen: not realized on a GPU";
}

}  // namespace

const Family& gemm() {
  static const GemmFamily family;
  return family;
}

}  // namespace fact::families
