#include "engine/realize.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file_io.h"
#include "base/json_format.h"
#include "base/version.h"
#include "engine/build.h"
#include "engine/buckets.h"
#include "engine/gpu_context.h"
#include "engine/tuning_records.h"
#include "families/family.h"

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
  std::string invalid;  // non-empty: the plan's problem could not be read
  const families::Family* family = nullptr;
  std::unique_ptr<families::PatternRealization> realization;  // null when invalid
  json out;             // the pattern's realized.json entry (a bucket's, for a bucket)
  std::string symbol;   // a bucket of a symbolic pattern: its symbol, and sizes lo..hi
  Bucket bucket;
  const std::vector<std::string>& kernels() const {
    static const std::vector<std::string> none;
    return realization ? realization->kernels : none;
  }
  const std::vector<std::string>& companions() const {
    static const std::vector<std::string> none;
    return realization ? realization->companions : none;
  }
};

void print_progress(const BuildResult& r, int done, int total) {
  std::fprintf(stderr, "[%d/%d] %s %s (%.1f s%s)%s%s\n", done, total,
               r.ok ? "built" : "QUARANTINED", r.name.c_str(), r.seconds,
               r.cached ? ", cached" : r.rebuilt_corrupt ? ", corrupt cache entry rebuilt" : "",
               r.ok ? "" : ": ", r.ok ? "" : r.reason.c_str());
}

// Checks the plan's envelope (format, version, a patterns list); `source` names it in errors.
// Throws fact::Error, naming what was wrong, for anything else (a field of the wrong type too).
void check_plan(const json& plan, const std::string& source) {
  if (plan.is_discarded() || !plan.is_object() || !plan.contains("format") || plan.at("format") != "fact.plan") {
    throw Error(source + " is not a FACT plan (format \"fact.plan\")");
  }
  const json version = plan.value("version", json());
  if (!version.is_number_integer() ||
      (version != kPlanFormatVersion && version != kSymbolicPlanFormatVersion)) {
    throw Error(source + ": unsupported plan version " + version.dump() + " (this build reads the integers 1 and 2)");
  }
  if (!plan.contains("patterns") || !plan.at("patterns").is_array()) {
    throw Error(source + ": missing \"patterns\" list");
  }
}

// A plan pattern as realization takes it: itself (static), or one copy per bucket of its
// symbol with the problem at the bucket's upper size. A problem over two symbols or more is
// marked "unbucketed" with why (buckets are over one symbol): it stays ATen.
struct BucketPattern {
  json pattern;
  std::string symbol;
  Bucket bucket;
};
std::vector<BucketPattern> bucket_patterns(const json& pat, const std::string& id,
                                           const std::vector<graph::Symbol>& symbols) {
  const json problem = pat.value("problem", json());
  const std::vector<std::string> named = problem_symbols(problem, symbols);
  if (named.empty()) return {{pat, "", {}}};
  if (named.size() > 1) {
    json p = pat;
    p["unbucketed"] = fmt::format("its problem depends on {} and {}: buckets are over one symbol", named[0], named[1]);
    return {{p, "", {}}};
  }
  const graph::Symbol& s = *std::find_if(symbols.begin(), symbols.end(), [&](const auto& d) { return d.name == named[0]; });
  std::vector<BucketPattern> out;
  for (const Bucket& b : buckets_of(s)) {
    json p = pat;
    p["problem"] = specialize_problem(problem, symbols, {{s.name, b.hi}});
    out.push_back({std::move(p), s.name, b});
  }
  std::fprintf(stderr, "realize %s: %zu buckets of %s up to %lld\n", id.c_str(), out.size(), s.name.c_str(),
               static_cast<long long>(out.back().bucket.hi));
  return out;
}

// Step 1 of realization: the candidates of every pattern, from its family's tuning space,
// and their build requests (by kernel name: shared across patterns) into `requests`.
// A pattern whose problem cannot be read is kept, marked invalid (it stays ATen).
std::vector<PatternWork> read_patterns(const json& plan, const std::string& source, Precision policy, int tune_budget,
                                       const std::optional<GpuInfo>& gpu,
                                       std::map<std::string, BuildRequest>& requests) {
  const families::PlanContext ctx{policy, tune_budget, &gpu, gpu ? gpu->sm_count : 132};  // H200 without a GPU
  std::vector<PatternWork> work;
  const std::vector<graph::Symbol> symbols = plan_symbols(plan);
  size_t index = 0;
  for (const auto& given : plan.at("patterns")) {
    if (!given.is_object()) {
      throw Error(source + ": pattern #" + std::to_string(index) + " is not an object");
    }
    for (const char* f : {"id", "rule"}) {
      if (given.contains(f) && !given.at(f).is_string()) {
        throw Error(source + ": pattern #" + std::to_string(index) + ": \"" + f +
                    "\" must be a string, got " + given.at(f).dump());
      }
    }
    const std::string id = given.value("id", std::string("p") + std::to_string(index++));
    for (auto& [pat, sym, bucket] : bucket_patterns(given, id, symbols)) {
    PatternWork w;
    w.id = sym.empty() ? id : fmt::format("{}[{}<={}]", id, sym, bucket.hi);
    w.symbol = sym;
    w.bucket = bucket;
    w.out = {{"id", id}, {"rule", pat.value("rule", "")}};
    if (!sym.empty()) w.out = {{"lo", bucket.lo}, {"hi", bucket.hi}};
    w.out["problem"] = pat.value("problem", nlohmann::json());
    try {
      if (pat.contains("unbucketed")) throw Error(pat.at("unbucketed").get<std::string>());
      if (!pat.contains("problem")) throw Error("pattern " + w.id + " has no \"problem\"");
      w.family = families::family_of_pattern(pat);
      if (!w.family) {
        throw Error("pattern " + w.id + ": no kernel family realizes rule " + pat.value("rule", json()).dump() +
                    " or problem kind " + pat.at("problem").value("kind", json()).dump());
      }
      w.realization = w.family->plan(pat, ctx, requests);
      w.out.update(w.realization->fields);
      if (!w.realization->unsupported.empty()) w.out["cutlass_unavailable"] = w.realization->unsupported;
    } catch (const std::exception& e) {
      // A problem that cannot be read is not realized at all (not even by the vendor path):
      // the pattern stays ATen.
      w.invalid = e.what();
      w.realization.reset();
      w.out["cutlass_unavailable"] = e.what();
      std::fprintf(stderr, "realize %s: skipped: %s\n", w.id.c_str(), e.what());
    }
    work.push_back(std::move(w));
    }
  }
  return work;
}

// read_patterns after check_plan; a plan whose envelope cannot be read (its version, its
// symbols, a pattern that is not an object) throws fact::Error naming `source`.
std::vector<PatternWork> plan_patterns(const json& plan, const std::string& source, Precision policy, int tune_budget,
                                       const std::optional<GpuInfo>& gpu,
                                       std::map<std::string, BuildRequest>& requests) {
  check_plan(plan, source);
  try {
    return read_patterns(plan, source, policy, tune_budget, gpu, requests);
  } catch (const json::exception& e) {
    // A hand-edited plan's field of the wrong type: name the file rather than abort.
    throw Error(source + ": malformed plan: " + e.what());
  }
}

}  // namespace

std::vector<PlannedPattern> plan_candidates(const json& plan, Precision policy, int tune_budget,
                                            const std::optional<GpuInfo>& gpu,
                                            std::map<std::string, BuildRequest>& requests) {
  std::vector<PlannedPattern> out;
  for (auto& w : plan_patterns(plan, "plan", policy, tune_budget, gpu, requests)) {
    if (w.realization) {
      out.push_back({w.id, std::move(w.realization->kernels), std::move(w.realization->companions),
                     std::move(w.realization->unsupported)});
    } else {
      out.push_back({w.id, {}, {}, w.invalid});
    }
  }
  return out;
}

namespace {

// The plan pattern whose id is `id` (null when none).
json compose_find(const json& patterns, const std::string& id) {
  for (const auto& p : patterns)
    if (p.value("id", "") == id) return p;
  return nullptr;
}

// realized.json's header: the run's policy, plan, toolchain, cache and GPU.
json realized_header(const RealizeOptions& opt, const Toolchain& tc, const fs::path& cache, double build_wall,
                     const std::optional<GpuInfo>& gpu) {
  json result{{"format", "fact.realized"}, {"version", 1}, {"policy", std::string(precision_name(opt.policy))},
              {"plan", fs::absolute(opt.plan).string()}, {"nvcc", tc.nvcc_version},
              {"cutlass", tc.cutlass_version}, {"cutlass_headers", tc.cutlass_headers_sha256},
              {"cache", cache.string()},
              {"build_wall_s", build_wall}, {"gpu", nullptr}};
  if (gpu) {
    result["gpu"] = gpu->name;
    result["cc"] = fmt::format("{}.{}", gpu->cc_major, gpu->cc_minor);
    result["sm_count"] = gpu->sm_count;
    result["driver"] = gpu->driver;
    result["cuda_runtime"] = gpu->runtime;
  }
  return result;
}

// The registry, if it opens: it only saves time, so realization tunes as usual without it.
std::unique_ptr<registry::Registry> open_registry(const fs::path& cache) {
  try {
    auto reg = std::make_unique<registry::Registry>(registry::default_registry_path(cache));
    if (reg->rebuilt()) std::fprintf(stderr, "realize: the registry was damaged; rebuilt it empty\n");
    return reg;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "realize: registry unavailable (%s): tuning without it\n", e.what());
    return nullptr;
  }
}

// Without a GPU: each kernel's build, nothing chosen.
void report_builds(PatternWork& w, const std::map<std::string, BuildResult>& built) {
  json cands = json::array();
  for (const auto& name : w.kernels()) {
    const auto& b = built.at(name);
    json c{{"kernel", name}, {"impl", "cutlass"}, {"status", b.ok ? "built" : "quarantined"}, {"cached", b.cached}};
    set_build_fields(c, b);
    if (!b.ok) c["reason"] = b.reason;
    cands.push_back(c);
  }
  w.out["candidates"] = cands;
  w.out["winner"] = nullptr;
}

// A realized.json candidate from a tuning outcome.
json candidate_entry(const CandidateOutcome& o, const families::PatternRealization& r,
                     const std::map<std::string, BuildResult>& built) {
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
  if (o.impl == std::string("cutlass")) {
    set_candidate_build_fields(c, built);
    c.update(r.candidate_fields(o.kernel));
  }
  if (!o.companion.empty()) {
    json k{{"kernel", o.companion}};
    if (auto it = built.find(o.companion); it != built.end()) set_build_fields(k, it->second);
    c["companion"] = k;
  }
  return c;
}

// What the GPU stage shares across patterns.
struct GpuStage {
  const RealizeOptions& opt;
  const Toolchain& tc;
  const GpuInfo& gpu;
  const std::map<std::string, BuildResult>& built;
  registry::Registry* reg;                // null: no registry
  std::unique_ptr<GpuContext>& ctx;       // created on first use
};

// 3-4. One pattern on the GPU: replayed from the registry when tuned before on this GPU,
// driver and toolchain under this policy; else verified and tuned by its family (the vendor
// paths first, then every built kernel) and recorded.
void tune_pattern(PatternWork& w, const GpuStage& g) {
  std::optional<registry::RecordKey> key;
  if (g.reg) {
    try {
      key = tuning_key(w.realization->tuning_problem(w.out.at("problem")), g.gpu, g.tc, g.opt.policy);
      std::vector<std::string> kernels = w.kernels();
      kernels.insert(kernels.end(), w.companions().begin(), w.companions().end());
      if (auto hit = g.reg->get(*key); hit && replay_record(*hit, g.built, kernels, w.out)) {
        std::fprintf(stderr, "realize %s: registry hit, winner %s (tuned %s)\n", w.id.c_str(), hit->winner.c_str(),
                     hit->created.c_str());
        return;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "realize %s: registry lookup failed (%s): tuning\n", w.id.c_str(), e.what());
    }
  }
  const auto t_tune = std::chrono::steady_clock::now();
  if (!g.ctx) g.ctx = std::make_unique<GpuContext>(g.gpu);
  const families::TuneContext tctx{w.id, &g.built, g.opt.policy, g.ctx.get(), g.gpu.sm_count,
                                   g.opt.warmup, g.opt.trials, g.opt.verbose};
  families::TuneResult t = w.realization->tune(tctx);
  w.out["verification"] = t.verification;
  const CandidateOutcome* best = w.realization->winner(t.outcomes);
  json cands = json::array();
  for (const auto& o : t.outcomes) cands.push_back(candidate_entry(o, *w.realization, g.built));
  for (auto& f : t.build_failures) cands.push_back(f);
  w.out["candidates"] = cands;
  w.out["tune_s"] = seconds_since(t_tune);
  w.out["winner"] = best ? json(best->kernel) : json(nullptr);
  w.out["winner_impl"] = best ? json(best->impl) : json(nullptr);
  if (!best) return;
  std::fprintf(stderr, "realize %s: winner %s %.4f ms\n", w.id.c_str(), best->kernel.c_str(), best->median_ms);
  if (g.reg && key) {
    try {
      g.reg->put(make_record(*key, w.out));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "realize %s: not recorded in the registry: %s\n", w.id.c_str(), e.what());
    }
  }
}

// A pattern whose tuning problem an earlier pattern of this run had: that one's candidates,
// verification and winner, tuned once.
void take_tuning(PatternWork& w, const PatternWork& first) {
  for (const char* f : {"candidates", "verification", "winner", "winner_impl", "registry"})
    if (first.out.contains(f)) w.out[f] = first.out.at(f);
  w.out["tune_s"] = 0.0;
  w.out["tuned_with"] = first.id;
  std::fprintf(stderr, "realize %s: the problem of %s, tuned once\n", w.id.c_str(), first.id.c_str());
}

void print_summary(const std::vector<PatternWork>& work, const std::map<std::string, BuildResult>& built,
                   double build_wall, bool gpu, const fs::path& cache) {
  // Each kernel once, however many patterns share it.
  int compiled = 0, cached = 0, quarantined = 0;
  for (const auto& [name, b] : built) b.ok ? (b.cached ? ++cached : ++compiled) : ++quarantined;
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
  } else {
    std::printf("realize: no CUDA GPU found: verification and tuning need a GPU, so no kernel "
                "was chosen. Built kernels stay in %s.\n", cache.c_str());
  }
}

}  // namespace

std::vector<CompileCharge> charge_compile(
    const std::vector<std::pair<std::string, std::vector<std::string>>>& patterns,
    const std::map<std::string, BuildResult>& built) {
  std::map<std::string, std::string> first;  // kernel -> the pattern charged for it
  std::vector<CompileCharge> out;
  for (const auto& [id, kernels] : patterns) {
    CompileCharge c;
    for (const auto& name : kernels) {
      const auto [it, fresh] = first.emplace(name, id);
      if (fresh) {
        const auto b = built.find(name);
        if (b != built.end() && !b->second.cached) c.seconds += b->second.seconds;
      } else if (std::find(c.shares_with.begin(), c.shares_with.end(), it->second) == c.shares_with.end()) {
        c.shares_with.push_back(it->second);
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

int run_realize(const RealizeOptions& given) {
  const json plan = parse_json_document<json>(read_file(given.plan), given.plan.string());
  check_plan(plan, given.plan.string());  // before the toolchain and the GPU are looked for
  // The policy: the plan's own unless --policy names one; a different one is said, since a
  // plan discovered under fp32 and realized under tf32 was once built as tf32 silently.
  RealizeOptions opt = given;
  const std::string planned = plan.contains("precision") && plan.at("precision").is_string()
                                  ? plan.at("precision").get<std::string>() : std::string();
  if (!given.policy_given && !planned.empty()) {
    opt.policy = precision_from_name(planned);
  } else if (given.policy_given && !planned.empty() && planned != precision_name(given.policy)) {
    std::fprintf(stderr, "realize: --policy %s differs from the plan's precision %s (discovered under %s); realizing under %s\n",
                 std::string(precision_name(given.policy)).c_str(), planned.c_str(), planned.c_str(),
                 std::string(precision_name(given.policy)).c_str());
  }
  const Toolchain tc = find_toolchain(opt.nvcc, opt.cutlass_dir);
  const fs::path cache = opt.cache_dir.empty() ? default_cache_dir() : opt.cache_dir;
  const int jobs = opt.jobs > 0 ? opt.jobs : default_jobs();
  const std::optional<GpuInfo> gpu = opt.no_gpu ? std::nullopt : probe_gpu();

  // 1. Candidates per pattern, from its family's tuning space.
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
  json result = realized_header(opt, tc, cache, build_wall, gpu);

  // 3-4. On a GPU, verify and tune (or replay) each pattern. A run the registry answers
  // entirely never allocates tuning buffers or a cuBLAS handle.
  std::unique_ptr<GpuContext> ctx;
  std::unique_ptr<registry::Registry> reg = gpu && opt.use_registry ? open_registry(cache) : nullptr;
  // A kernel's compile seconds go to the first pattern that asked for it; a pattern with the
  // problem of an earlier one (q, k and v projections of one width) takes that one's tuning.
  std::vector<std::pair<std::string, std::vector<std::string>>> asked;
  for (const auto& w : work) {  // a vendor tail's kernel counts with its pattern's
    std::vector<std::string> names = w.kernels();
    names.insert(names.end(), w.companions().begin(), w.companions().end());
    asked.emplace_back(w.id, std::move(names));
  }
  const std::vector<CompileCharge> charges = charge_compile(asked, built);
  std::map<std::string, size_t> tuned_by_problem;  // tuning problem -> index into `work`
  for (size_t i = 0; i < work.size(); ++i) {
    PatternWork& w = work[i];
    w.out["compile_s"] = charges[i].seconds;
    if (!charges[i].shares_with.empty()) w.out["shares_kernels_with"] = charges[i].shares_with;
    if (!w.invalid.empty()) {
      w.out["candidates"] = json::array();
      w.out["winner"] = nullptr;
      w.out["winner_impl"] = nullptr;
      continue;
    }
    const std::string problem = w.realization->tuning_problem(w.out.at("problem")).dump();
    const auto [first, inserted] = tuned_by_problem.emplace(problem, i);
    if (!inserted && gpu) {
      take_tuning(w, work[first->second]);
    } else if (!gpu) {
      report_builds(w, built);
    } else {
      tune_pattern(w, GpuStage{opt, tc, *gpu, built, reg.get(), ctx});
    }
  }
  json pats = json::array();
  for (auto& w : work) {
    // Null until a GPU has chosen (kernels are only built then).
    w.out["fused"] = !gpu ? json(nullptr)
                          : json(w.realization && w.realization->fused(w.out.value("winner_impl", json())));
    if (w.symbol.empty()) {
      pats.push_back(w.out);
      continue;
    }
    // A bucket: into its pattern's entry, which has the plan's symbolic problem and no
    // winner of its own (docs/04, "Buckets").
    const std::string id = w.id.substr(0, w.id.find('['));
    if (pats.empty() || pats.back().value("id", "") != id || !pats.back().contains("buckets")) {
      const json planned = compose_find(plan.at("patterns"), id);
      pats.push_back({{"id", id}, {"rule", planned.value("rule", "")}, {"problem", planned.at("problem")},
                      {"symbol", w.symbol}, {"buckets", json::array()}, {"candidates", json::array()},
                      {"winner", nullptr}, {"winner_impl", nullptr}, {"compile_s", 0.0}, {"fused", nullptr}});
    }
    json& entry = pats.back();
    entry["compile_s"] = entry["compile_s"].get<double>() + w.out.value("compile_s", 0.0);
    entry["buckets"].push_back(w.out);
  }
  result["patterns"] = pats;
  fs::create_directories(fs::absolute(opt.output).parent_path());
  write_file(opt.output, result.dump(2) + "\n");
  print_summary(work, built, build_wall, bool(gpu), cache);
  return 0;
}

}  // namespace fact::realize
