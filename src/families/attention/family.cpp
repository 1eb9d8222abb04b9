// The attention family (families/family.h): rule `attention`, FACT's fused attention kernels
// from templates/attention_sm80*.cu.in and, on sm_90 for bf16/fp16 inputs,
// templates/attention_sm90*.cu.in (docs/04-realization.md, "Attention"), the vendor
// path's lower bound (cuBLAS's two GEMMs) as the vendor candidate, the float64 reference of
// verify_kernels.cu, the C ABI of abi.h. The vendor candidate only bounds the ATen path:
// fact optimize times the kernel against the pattern's ATen nodes in the module (docs/05).
#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "base/error.h"
#include "base/json_format.h"
#include "compose/compose.h"
#include "families/attention/codegen.h"
#include "families/attention/realize.h"
#include "families/attention/rule.h"
#include "families/attention/verify_tune.h"
#include "families/family.h"

using nlohmann::json;

namespace fact::families {
namespace {

using namespace realize;

class AttentionPattern final : public PatternRealization {
 public:
  AttentionWork work;

  TuneResult tune(const TuneContext& ctx) const override {
    TuneResult out;
    out.outcomes = tune_attention_pattern(ctx.id, work, kernels, *ctx.built, ctx.policy, *ctx.gpu, ctx.warmup,
                                          ctx.trials, ctx.verbose, out.verification, out.build_failures);
    return out;
  }

  // The vendor candidate is a lower bound of the ATen path (its two GEMMs), not the path
  // itself, which factc cannot run: it wins only when no kernel verified.
  const CandidateOutcome* winner(const std::vector<CandidateOutcome>& outcomes) const override {
    return fastest_kernel_else_bound(outcomes);
  }
};

// The mask kind, with its window ("causal window=4096") or its prologue ("additive (1.0 - M) *
// -10000.0").
std::string mask_text(const json& p) {
  const std::string kind = p.value("mask", "?");
  if (p.contains("mask_rsub") && p.contains("mask_scale"))
    return fmt::format("{} ({} - M) * {}", kind, p.at("mask_rsub").dump(), p.at("mask_scale").dump());
  return p.contains("window") ? fmt::format("{} window={}", kind, p.at("window").dump()) : kind;
}

std::string attention_text(const json& p) {
  const int64_t h = integer_or(p, "heads", 0), kv = std::max<int64_t>(1, integer_or(p, "kv_heads", 1));
  const std::string heads = h == kv ? fmt::format("H={} (MHA)", h) : fmt::format("H={} Hkv={} (GQA {}:1)", h, kv, h / kv);
  return fmt::format("attention B={} {} Tq={} Tk={} D={} {} mask:{} out:{}", integer_or(p, "batch", 0), heads,
                     integer_or(p, "seq_q", 0), integer_or(p, "seq_k", 0), integer_or(p, "head_dim", 0), p.value("dtype", "?"),
                     mask_text(p), p.value("output_layout", "?"));
}

// The report's line for one attention pattern `m` (manifest entry) of realization `r`.
std::string attention_status(const json& m, const json& r) {
  if (m.value("impl", "") == "cutlass") {
    std::string status = fmt::format("`{}` replaces its {} nodes", m.value("kernel", std::string()), m.at("nodes").size());
    if (m.contains("time_ms")) status += fmt::format(": {:.4f} ms", m.at("time_ms").get<double>());
    if (m.contains("vendor_ms")) status += fmt::format(", the ATen nodes at least {:.4f} ms (cuBLAS's GEMMs alone)", m.at("vendor_ms").get<double>());
    return status;
  }
  if (r.is_object() && r.contains("cutlass_unavailable")) {
    return "left to ATen: no FACT kernel for this problem (" + r.at("cutlass_unavailable").get<std::string>() + ")";
  }
  const compose::Outcome o = r.is_object() ? compose::outcome_of(r) : compose::Outcome{};
  if (o.cutlass == 0) return "left to ATen: no FACT kernel was a candidate";
  if (!o.best_cutlass) {
    return "left to ATen: every FACT kernel was quarantined" + (o.first_reason.empty() ? std::string() : " (" + o.first_reason + ")");
  }
  if (o.best_vendor) {
    return fmt::format("left to ATen: cuBLAS's GEMMs alone (`{}`, a lower bound of the ATen nodes) took {:.4f} ms, the best FACT kernel {:.4f} ms",
                       o.best_vendor->value("kernel", ""), o.best_vendor->at("median_ms").get<double>(),
                       o.best_cutlass->at("median_ms").get<double>());
  }
  return "left to ATen: no verified candidate";
}

class AttentionFamilyDef final : public Family {
 public:
  std::string_view name() const override { return "attention"; }
  std::vector<discover::Rule> rules() const override { return {discover::rules::attention_rule()}; }

  std::unique_ptr<PatternRealization> plan(const json& pat, const PlanContext& ctx,
                                           std::map<std::string, BuildRequest>& requests) const override {
    auto w = std::make_unique<AttentionPattern>();
    w->work = plan_attention_pattern(pat.at("problem"), ctx.policy, attention_limits(*ctx.gpu), ctx.tune_budget,
                                     requests, w->kernels, w->unsupported);
    // Its vendor candidate only bounds the ATen path: fact optimize times the two in the
    // module (docs/05-composition.md), whether the winner is tuned now or replayed.
    w->fields["aten_check"] = "module";
    return w;
  }

  // What the runtime binds (docs/05-composition.md, "Attention kernels"): the problem as
  // realization reads it (attention_problem_from_json: sizes, grouped heads, dtype, scale,
  // mask kind, strides, output layout), the q/k/v operands and a mask operand exactly when
  // the mask kind reads a tensor; no fused tail; an object to link.
  void compose_winner(const std::string& id, const json& pat, const json& r, const json& w, json& m) const override {
    const auto bad = [&](const std::string& what) { return Error("plan pattern " + id + " (attention): " + what); };
    AttentionProblem p;
    try {
      p = attention_problem_from_json(pat.at("problem"));
    } catch (const Error& e) {
      throw bad(e.what());
    }
    const json& ops = pat.at("operands");
    for (const char* o : {"q", "k", "v"}) {
      if (!ops.contains(o)) throw bad(std::string("operand ") + o + " is missing");
    }
    const std::string mask(mask_name(p.mask));
    if (mask_has_tensor(p.mask) != ops.contains("mask")) {
      throw bad("mask kind " + mask + (mask_has_tensor(p.mask) ? " needs a mask operand" : " takes no mask operand"));
    }
    compose_tailless_winner(name(), id, r, w, m);  // a kernel's symbol is its name unless realize says otherwise
  }

  std::string problem_text(const json& p) const override { return attention_text(p); }

  std::string table_note() const override {
    return "\nFor attention patterns, vendor ms is cuBLAS's two GEMMs alone (QK^T and PV; the scale, mask, softmax "
           "and copies the ATen nodes also run are not counted): a lower bound of the time the kernel replaces, so "
           "the speedup shown is a lower bound too.\n";
  }

  std::string report_section(const json&, const json& realized, const json& manifest, bool mine) const override {
    if (!mine) return {};
    std::string s = "\n## Attention\n\n";
    for (const auto& m : manifest.at("patterns")) {
      if (m.value("abi", "") != name()) continue;
      const json& p = m.at("problem");
      const json r = compose::find_by_id(realized.at("patterns"), m.value("id", ""));
      const int64_t h = integer_or(p, "heads", 0), kv = std::max<int64_t>(1, integer_or(p, "kv_heads", 1));
      s += fmt::format("- {}: mask {}, {} heads{}, head dim {}, Tq x Tk {}x{}, {}, output {} — {}\n", m.value("id", ""),
                       mask_text(p), h, h == kv ? std::string(" (MHA)") : fmt::format(" over {} K/V heads (GQA ratio {})", kv, h / kv),
                       integer_or(p, "head_dim", 0), integer_or(p, "seq_q", 0), integer_or(p, "seq_k", 0), p.value("dtype", "?"),
                       p.value("output_layout", "?"), attention_status(m, r));
    }
    return s;
  }

  std::string vendor_text(const json& m) const override {
    return fmt::format("its {} ATen nodes (the matmuls on cuBLAS)", m.at("nodes").size());
  }
};

}  // namespace

const Family& attention() {
  static const AttentionFamilyDef family;
  return family;
}

}  // namespace fact::families
