#include "engine/realize.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file_io.h"
#include "families/attention/realize.h"
#include "engine/build.h"
#include "families/gemm/codegen.h"
#include "families/gemm/epilogue/ranges.h"
#include "families/gemm/space.h"
#include "families/gemm/verify_tune.h"
#include "engine/gpu_context.h"
#include "families/gemm/epilogue/tail_verify.h"
#include "engine/tuning_records.h"
#include "families/gemm/vetted.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace fact::realize {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A planned pattern as realization sees it.
struct PatternWork {
  std::string id;
  GemmProblem problem;
  std::string unsupported;               // non-empty: problem not realizable by CUTLASS here
  std::string invalid;                   // non-empty: the plan's problem could not be read
  std::vector<std::string> kernels;      // CUTLASS kernel names, cost-model order
  std::vector<GemmConfig> configs;       // their configurations
  std::shared_ptr<const AttentionWork> attention;  // an attention pattern (else a GEMM)
  json out;                              // the pattern's realized.json entry
};

void print_progress(const BuildResult& r, int done, int total) {
  std::fprintf(stderr, "[%d/%d] %s %s (%.1f s%s)%s%s\n", done, total,
               r.ok ? "built" : "QUARANTINED", r.name.c_str(), r.seconds,
               r.cached ? ", cached" : r.rebuilt_corrupt ? ", corrupt cache entry rebuilt" : "",
               r.ok ? "" : ": ", r.ok ? "" : r.reason.c_str());
}

// Checks the plan's envelope (format, version, a patterns list); `source` names it in errors.
void check_plan(const json& plan, const std::string& source) {
  if (plan.is_discarded() || !plan.is_object() || plan.value("format", "") != "fact.plan") {
    throw Error(source + " is not a FACT plan (format \"fact.plan\")");
  }
  if (plan.value("version", 0) != 1) {
    throw Error(source + ": unsupported plan version " + plan.value("version", nlohmann::json()).dump() + " (this build reads 1)");
  }
  if (!plan.contains("patterns") || !plan.at("patterns").is_array()) {
    throw Error(source + ": missing \"patterns\" list");
  }
}

// Step 1 of realization: the candidates of every pattern, from its family's tuning space,
// and their build requests (by kernel name: shared across patterns) into `requests`.
std::vector<PatternWork> plan_patterns(const json& plan, const std::string& source, Precision policy, int tune_budget,
                                       const std::optional<GpuInfo>& gpu,
                                       std::map<std::string, BuildRequest>& requests) {
  const int sm_count = gpu ? gpu->sm_count : 132;  // H200 when no GPU is present
  const AttentionGpuLimits attention_gpu = attention_limits(gpu);
  std::vector<PatternWork> work;
  for (const auto& pat : plan.at("patterns")) {
    if (!pat.is_object()) {
      throw Error(source + ": pattern #" + std::to_string(work.size()) + " is not an object");
    }
    for (const char* f : {"id", "rule"}) {
      if (pat.contains(f) && !pat.at(f).is_string()) {
        throw Error(source + ": pattern #" + std::to_string(work.size()) + ": \"" + f +
                    "\" must be a string, got " + pat.at(f).dump());
      }
    }
    PatternWork w;
    w.id = pat.value("id", std::string("p") + std::to_string(work.size()));
    w.out = {{"id", w.id}, {"rule", pat.value("rule", "")}};
    w.out["problem"] = pat.value("problem", nlohmann::json());
    try {
      if (!pat.contains("problem")) throw Error("pattern " + w.id + " has no \"problem\"");
      if (is_attention_pattern(pat)) {  // the other pattern kind: attention_realize.h
        w.attention = plan_attention_pattern(pat.at("problem"), policy, attention_gpu, tune_budget, requests,
                                             w.kernels, w.unsupported);
        // Its vendor candidate only bounds the ATen path: fact optimize times the two in the
        // module (docs/05-composition.md), whether the winner is tuned now or replayed.
        w.out["aten_check"] = "module";
        work.push_back(std::move(w));
        continue;
      }
      w.problem = gemm_problem_from_json(pat.at("problem"));
      // The elementwise tail discovery found: fused into the kernel's epilogue when it can be.
      if (pat.contains("epilogue") && pat.at("epilogue").is_object()) {
        const json& e = pat.at("epilogue");
        const std::string why_not = attach_tail(w.problem, e);
        w.out["epilogue"] = {{"expr", e.value("expr", "")}, {"nodes", e.value("nodes", json::array())},
                             {"fusable", why_not.empty()}};
        if (!why_not.empty()) w.out["epilogue"]["reason"] = why_not;
        // What the kernel's tail leaves out or computes otherwise, proven by range (evt_ranges.h).
        std::vector<std::string> ranges;
        if (why_not.empty()) simplify_epilogue_by_range(kernel_tail_tree(w.problem), &ranges);
        if (!ranges.empty()) w.out["epilogue"]["ranges"] = ranges;
      }
      std::string why;
      const auto families = gemm_families(w.problem, policy, why);
      if (!families.empty()) {
        // The cost model's ranking, seeded by the nearest vetted example, then the budget.
        auto choices = gemm_kernel_choices(families, w.problem, sm_count, 0);
        for (const auto& f : families) {
          if (auto vetted = nearest_vetted(shipped_vetted(), f, w.problem)) {
            seed_choices(choices, f, vetted->config);
            w.out["vetted_example"] = vetted->name;
          }
        }
        if (tune_budget > 0 && int(choices.size()) > tune_budget) choices.resize(tune_budget);
        for (const auto& ch : choices) {
          const std::string name = gemm_kernel_name(ch.family, ch.config);
          if (!requests.count(name)) requests[name] = {name, render_gemm_sm90(ch.family, ch.config)};
          w.kernels.push_back(name);
          w.configs.push_back(ch.config);
        }
      } else {
        w.unsupported = why;
      }
    } catch (const std::exception& e) {
      // A problem that cannot be read is not realized at all (not even by the vendor path):
      // the pattern stays ATen.
      w.invalid = e.what();
      w.unsupported = e.what();
      std::fprintf(stderr, "realize %s: skipped: %s\n", w.id.c_str(), e.what());
    }
    work.push_back(std::move(w));
  }
  return work;
}

}  // namespace

std::vector<PlannedPattern> plan_candidates(const json& plan, Precision policy, int tune_budget,
                                            const std::optional<GpuInfo>& gpu,
                                            std::map<std::string, BuildRequest>& requests) {
  check_plan(plan, "plan");
  std::vector<PlannedPattern> out;
  for (auto& w : plan_patterns(plan, "plan", policy, tune_budget, gpu, requests)) {
    out.push_back({w.id, std::move(w.kernels), std::move(w.unsupported)});
  }
  return out;
}

int run_realize(const RealizeOptions& opt) {
  const json plan = json::parse(read_file(opt.plan), nullptr, false);
  check_plan(plan, opt.plan.string());
  const Toolchain tc = find_toolchain(opt.nvcc, opt.cutlass_dir);
  const fs::path cache = opt.cache_dir.empty() ? default_cache_dir() : opt.cache_dir;
  const int jobs = opt.jobs > 0 ? opt.jobs : default_jobs();
  const std::optional<GpuInfo> gpu = opt.no_gpu ? std::nullopt : probe_gpu();
  const int sm_count = gpu ? gpu->sm_count : 132;  // H200 when no GPU is present

  // 1. Candidates per pattern, from the family's tuning space.
  std::map<std::string, BuildRequest> requests;  // by kernel name: shared across patterns
  std::vector<PatternWork> work = plan_patterns(plan, opt.plan.string(), opt.policy, opt.tune_budget, gpu, requests);

  // 2. Build everything at once, in parallel, through the cache.
  std::vector<BuildRequest> reqs;
  for (auto& [name, r] : requests) reqs.push_back(r);
  std::fprintf(stderr, "realize: %zu kernels for %zu patterns, %d nvcc jobs, cache %s\n",
               reqs.size(), work.size(), jobs, cache.c_str());
  const auto t_build = std::chrono::steady_clock::now();
  std::map<std::string, BuildResult> built;
  for (auto& r : build_kernels(reqs, tc, cache, jobs, print_progress)) built[r.name] = r;
  const double build_wall = seconds_since(t_build);

  json result{{"format", "fact.realized"}, {"version", 1}, {"policy", std::string(precision_name(opt.policy))},
              {"plan", fs::absolute(opt.plan).string()}, {"nvcc", tc.nvcc_version},
              {"cutlass", tc.cutlass_version}, {"cache", cache.string()},
              {"build_wall_s", build_wall}, {"gpu", nullptr}};
  if (gpu) {
    result["gpu"] = gpu->name;
    result["cc"] = fmt::format("{}.{}", gpu->cc_major, gpu->cc_minor);
    result["sm_count"] = gpu->sm_count;
    result["driver"] = gpu->driver;
    result["cuda_runtime"] = gpu->runtime;
  }
  // Created on first use: a run the registry answers entirely never allocates tuning
  // buffers or a cuBLAS handle.
  std::unique_ptr<GpuContext> ctx;
  // The registry only saves time: if it cannot be opened, realization tunes as usual.
  std::unique_ptr<registry::Registry> reg;
  if (gpu && opt.use_registry) {
    try {
      reg = std::make_unique<registry::Registry>(registry::default_registry_path(cache));
      if (reg->rebuilt()) std::fprintf(stderr, "realize: the registry was damaged; rebuilt it empty\n");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "realize: registry unavailable (%s): tuning without it\n", e.what());
    }
  }

  // Each kernel once, however many patterns share it.
  int compiled = 0, cached = 0, quarantined = 0;
  for (const auto& [name, b] : built) b.ok ? (b.cached ? ++cached : ++compiled) : ++quarantined;
  for (auto& w : work) {
    json cands = json::array();
    double compile_s = 0;
    for (const auto& name : w.kernels) {
      const auto& b = built.at(name);
      if (!b.cached) compile_s += b.seconds;
    }
    w.out["compile_s"] = compile_s;
    if (!w.unsupported.empty()) w.out["cutlass_unavailable"] = w.unsupported;

    if (!w.invalid.empty()) {
      w.out["candidates"] = cands;
      w.out["winner"] = nullptr;
      w.out["winner_impl"] = nullptr;
      continue;
    }
    if (!gpu) {  // no GPU: report the builds only
      for (const auto& name : w.kernels) {
        const auto& b = built.at(name);
        json c{{"kernel", name}, {"impl", "cutlass"}, {"status", b.ok ? "built" : "quarantined"},
               {"cached", b.cached}};
        set_build_fields(c, b);
        if (!b.ok) c["reason"] = b.reason;
        cands.push_back(c);
      }
      w.out["candidates"] = cands;
      w.out["winner"] = nullptr;
      continue;
    }

    // A pattern tuned before on this GPU, driver and toolchain under this policy is replayed.
    std::optional<registry::RecordKey> key;
    if (reg) {
      try {
        // A fused tail is part of the problem: its tuning never answers the plain GEMM's.
        json key_problem = w.out.at("problem");
        if (w.problem.fused()) key_problem["epilogue"] = {{"tree", w.problem.tail_tree}, {"broadcast", w.problem.tail_broadcast}};
        key = tuning_key(key_problem, *gpu, tc, opt.policy);
        if (auto hit = reg->get(*key); hit && replay_record(*hit, built, w.kernels, w.out)) {
          std::fprintf(stderr, "realize %s: registry hit, winner %s (tuned %s)\n", w.id.c_str(),
                       hit->winner.c_str(), hit->created.c_str());
          continue;
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "realize %s: registry lookup failed (%s): tuning\n", w.id.c_str(), e.what());
      }
    }

    // 3-4. Verify and tune on the GPU: the vendor paths first, then every built kernel.
    const auto t_tune = std::chrono::steady_clock::now();
    if (!ctx) ctx = std::make_unique<GpuContext>(*gpu);
    json verification, build_failures = json::array();
    std::vector<CandidateOutcome> outcomes;
    if (w.attention) {
      outcomes = tune_attention_pattern(w.id, *w.attention, w.kernels, built, opt.policy, *ctx, opt.warmup, opt.trials,
                                        opt.verbose, verification, build_failures);
    } else {
      // GEMM: cuBLAS and cuBLASLt, then every built kernel with its run-time variants.
      std::vector<std::unique_ptr<GemmCandidate>> runnable;
      runnable.push_back(make_cublas_candidate(w.problem, opt.policy));
      runnable.push_back(make_cublaslt_candidate(w.problem, opt.policy));
      if (w.problem.fused()) {  // the vendor GEMM, then the tail (verify_and_tune models its ATen ops)
        for (auto& r : runnable) r = make_tail_pass_candidate(std::move(r), w.problem);
      }
      for (size_t i = 0; i < w.kernels.size(); ++i) {
        const auto& name = w.kernels[i];
        const auto& b = built.at(name);
        if (!b.ok) {
          build_failures.push_back({{"kernel", name}, {"impl", "cutlass"}, {"status", "quarantined"}, {"reason", b.reason}, {"key", b.key}});
          continue;
        }
        // Scheduler options are run-time arguments: each variant is its own candidate.
        for (const auto& rt : gemm_runtime_variants(w.configs[i], w.problem, sm_count)) {
          runnable.push_back(load_cutlass_candidate(name + runtime_suffix(rt), b.library.string(), kernel_symbol(name), rt));
        }
      }
      std::fprintf(stderr, "realize %s: verifying and tuning %zu candidates (M=%lld N=%lld K=%lld L=%lld)\n",
                   w.id.c_str(), runnable.size(), (long long)w.problem.m, (long long)w.problem.n,
                   (long long)w.problem.k, (long long)w.problem.l);
      outcomes = verify_and_tune(w.problem, opt.policy, runnable, *ctx, opt.warmup, opt.trials, opt.verbose, &verification);
    }
    w.out["verification"] = verification;
    // The attention vendor candidate is a lower bound of the ATen path (its two GEMMs), not
    // the path itself, which factc cannot run: it wins only when no kernel verified. The
    // kernel is timed against the pattern's ATen nodes in the module (fact optimize, docs/05).
    const CandidateOutcome* best = nullptr;
    const CandidateOutcome* bound = nullptr;
    for (const auto& o : outcomes) {
      if (w.attention && o.impl == std::string("vendor")) {
        if (o.status == "ok") bound = &o;
        continue;
      }
      if (o.status == "ok" && (!best || o.median_ms < best->median_ms)) best = &o;
    }
    if (!best) best = bound;
    for (const auto& o : outcomes) {
      // A candidate timed only (the attention vendor bound) has no error figures.
      auto figure = [&](double x) { return o.verified ? json(x) : json(nullptr); };
      json c{{"kernel", o.kernel}, {"impl", o.impl}, {"status", o.status}, {"max_rel_err", figure(o.max_rel_err)},
             {"fro_rel_err", figure(o.fro_rel_err)}, {"tolerance", figure(o.tolerance)}};
      if (!o.note.empty()) c["note"] = o.note;
      if (o.status == "ok") {
        c["median_ms"] = o.median_ms; c["min_ms"] = o.min_ms; c["max_ms"] = o.max_ms;
        c["trials"] = o.trials; c["workspace_bytes"] = o.workspace_bytes;
      } else {
        c["reason"] = o.reason;
        std::fprintf(stderr, "  quarantined %s: %s\n", o.kernel.c_str(), o.reason.c_str());
      }
      if (o.impl == std::string("cutlass")) set_candidate_build_fields(c, built);
      cands.push_back(c);
    }
    for (auto& f : build_failures) cands.push_back(f);
    w.out["candidates"] = cands;
    w.out["tune_s"] = seconds_since(t_tune);
    w.out["winner"] = best ? json(best->kernel) : json(nullptr);
    w.out["winner_impl"] = best ? json(best->impl) : json(nullptr);
    if (best) {
      std::fprintf(stderr, "realize %s: winner %s %.4f ms\n", w.id.c_str(), best->kernel.c_str(), best->median_ms);
      if (reg && key) {
        try {
          reg->put(make_record(*key, w.out));
        } catch (const std::exception& e) {
          std::fprintf(stderr, "realize %s: not recorded in the registry: %s\n", w.id.c_str(), e.what());
        }
      }
    }
  }
  json pats = json::array();
  for (auto& w : work) {
    // Fused: the winner computes the tail too (a vendor winner leaves the tail to ATen).
    // Null until a GPU has chosen (kernels are only built then; an "evt" name is fused).
    w.out["fused"] = !gpu ? json(nullptr) : json(w.problem.fused() && w.out.value("winner_impl", json()) == "cutlass");
    pats.push_back(w.out);
  }
  result["patterns"] = pats;
  fs::create_directories(fs::absolute(opt.output).parent_path());
  write_file(opt.output, result.dump(2) + "\n");

  std::printf("realize: %zu patterns; kernels: %d compiled, %d from cache, %d quarantined at build (%.1f s)\n",
              work.size(), compiled, cached, quarantined, build_wall);
  if (gpu) {
    int checked = 0, failed = 0, no_winner = 0;
    for (const auto& w : work) {
      for (const auto& c : w.out.value("candidates", json::array())) {
        ++checked;
        failed += c.value("status", "") == "quarantined";
      }
      no_winner += w.out.value("winner", json()).is_null();
    }
    std::printf("realize: %d candidates, %d quarantined (build, verification or run); %d patterns without a winner\n",
                checked, failed, no_winner);
  }
  if (!gpu) {
    std::printf("realize: no CUDA GPU found: verification and tuning need a GPU, so no kernel "
                "was chosen. Built kernels stay in %s.\n", cache.c_str());
  }
  return 0;
}

}  // namespace fact::realize
