#include "families/attention/realize.h"

#include <cstdio>

#include "families/attention/codegen.h"
#include "engine/library_candidate.h"
#include "families/attention/verify_tune.h"

using nlohmann::json;

namespace fact::realize {

AttentionGpuLimits attention_limits(const std::optional<GpuInfo>& gpu) {
  AttentionGpuLimits l;
  if (!gpu) return l;
  if (gpu->sm_count > 0) l.sm_count = gpu->sm_count;
  if (gpu->smem_per_block_optin > 0) l.smem_per_block = gpu->smem_per_block_optin;
  if (gpu->smem_per_sm > 0) {
    l.smem_per_sm = gpu->smem_per_sm;
    l.smem_reserved_per_block = gpu->smem_reserved_per_block;
  }
  if (gpu->registers_per_sm > 0) l.registers_per_sm = gpu->registers_per_sm;
  l.sm90 = gpu->cc_major == 9 && gpu->cc_minor == 0;  // sm_90a code runs on cc 9.0 only
  return l;
}

AttentionWork plan_attention_pattern(const json& problem, Precision policy, const AttentionGpuLimits& limits,
                                     int tune_budget, std::map<std::string, BuildRequest>& requests,
                                     std::vector<std::string>& kernels, std::string& unsupported) {
  AttentionWork w;
  w.problem = attention_problem_from_json(problem);
  w.family = attention_family(w.problem, policy, unsupported);
  if (!w.family) return w;
  for (const auto& c : attention_tuning_space(*w.family, w.problem, limits, tune_budget)) {
    const std::string name = attention_kernel_name(*w.family, c);
    if (!requests.count(name)) requests[name] = {name, render_attention_kernel(*w.family, c), name};
    kernels.push_back(name);
  }
  if (kernels.empty()) unsupported = "no configuration of the attention kernels fits this GPU's shared memory";
  return w;
}

std::vector<CandidateOutcome> tune_attention_pattern(const std::string& id, const AttentionWork& w,
                                                     const std::vector<std::string>& kernels,
                                                     const std::map<std::string, BuildResult>& built, Precision policy,
                                                     GpuContext& gpu, int warmup, int trials, bool verbose,
                                                     json& verification, json& build_failures) {
  std::vector<std::unique_ptr<AttentionCandidate>> runnable;
  runnable.push_back(make_attention_vendor_bound(w.problem, policy));
  load_built_kernels(kernels, built, &load_attention_candidate, runnable, build_failures);
  const AttentionProblem& p = w.problem;
  std::fprintf(stderr, "realize %s: verifying and tuning %zu attention candidates (B=%lld Hq=%lld Hkv=%lld Tq=%lld Tk=%lld D=%lld %s, mask %s)\n",
               id.c_str(), runnable.size(), (long long)p.batch, (long long)p.heads, (long long)p.kv_heads, (long long)p.seq_q,
               (long long)p.seq_k, (long long)p.head_dim, to_string(p.dtype).c_str(), std::string(mask_name(p.mask)).c_str());
  return verify_and_tune_attention(p, w.family ? &*w.family : nullptr, runnable, gpu, warmup, trials, verbose, &verification);
}

}  // namespace fact::realize
