#include "families/attention/space_sm90.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <queue>
#include <utility>

#include <fmt/format.h>

#include "families/attention/key_sums.h"

namespace fact::realize {

namespace {

// Rates and costs of the sm90 kernel, from its measurements on the H200 (bf16, kernel level,
// docs/perf-notes.md v10; bench/results/logs/attention-sm90-h200-v*.json).
//
// WGMMA rate inside the key steps: 690 TFLOP/s over 132 SMs. Fitted so that this model
// gives the default kernel's measured 1.671 ms on the Llama block (v10h: 658 TFLOP/s over
// the whole problem, ~640 across v10c-v10i) through its own per-tile step and tail (63
// tiles of 16 steps + 1 on the busiest of 132 SMs, lazy rescaling's 3 %); the sm80 kernel's
// mma.sync measured ~220 TFLOP/s on the same block (5.0 ms).
constexpr double kWgmmaFlops = 690e12;
constexpr double kRefSms = 132;
// Per-step overhead (barriers, waits, the softmax's fixed part) as a fraction of a 128-key
// step, spread over BLOCK_N: v10b/v10c, 128x192 2-3 % faster than 128x128 with the same
// epilogue on the Llama block (1.795 vs 1.853, 1.800 vs 1.852 ms).
constexpr double kStepOverhead = 0.15;
// Steps of a tile's own time spent outside the key loop. The lone first Q K^T and softmax
// (v10h, "the per-tile bubble"); chaining removes it but makes each step 12 % slower (v10f:
// Llama 1.675 -> 1.751 ms, minGPT 0.170 -> 0.163, HF causal 0.2495 -> 0.2545).
constexpr double kPrologueSteps = 1.0;
constexpr double kChainStepCost = 1.12;
// tf32: chaining saves less (v17, minGPT's core, eager: 0.348 chained against 0.354 ms).
constexpr double kTf32ChainStepCost = 1.18;
// Epilogue 0 (register stores) and 2 (through Q's tile) against epilogue 1 (v10c, Llama:
// 1.852 and 1.823 against 1.730 ms, 17 steps per tile). tf32: 0.25 steps (v17, minGPT's
// core: 0.354 against 0.342 ms, about 7 steps per tile).
constexpr double kEpilogue0Steps = 1.2;
constexpr double kTf32Epilogue0Steps = 0.25;
constexpr double kEpilogue2Steps = 0.9;
// Without a persistent grid each CTA's start is exposed (v10b: 1.958 vs 1.853 ms).
constexpr double kLaunchSteps = 1.0;
// Lazy rescaling: 3 % faster without a tensor mask (v10e: Llama 1.723 -> 1.672, HF causal
// 0.256 -> 0.248), 2.5 % slower with one (v10i: keep 0.183 vs 0.188, drop 0.108 vs 0.111,
// additive 0.115 vs 0.118 ms).
constexpr double kLazyPlain = 0.97;
constexpr double kLazyTensorMask = 1.025;
// Warpgroup schedules against 2 WG with pingpong: 2 WG without it (v10a: 1.959-1.983 vs
// 1.869 ms), 1 WG at 2 CTAs per SM (v10b, minGPT: 0.230 vs 0.202), 1 WG alone (v10a: 2.684).
constexpr double kNoPingpongRate = 0.94;
constexpr double kOneWgTwoCtasRate = 0.88;
constexpr double kOneWgRate = 0.70;
// fp32 inputs: the producer rounds every tile in shared memory while the consumers run;
// assumed to cost 15 % of a step (a prediction: docs/perf-notes.md v14 measures it).
constexpr double kConvertStepCost = 1.15;
// tf32: dense tf32 WGMMA runs at half the 16-bit rate (H100/H200 datasheets: 495 against
// 989 TFLOP/s), and the producer's V transposition shares shared memory's bandwidth with
// the SS Q K^T: assumed 10 % of a step (a prediction: docs/perf-notes.md v16 measures it).
constexpr double kTf32StepCost = 2.0 * 1.10;
// tf32 with lazy rescaling: 27 % slower on the Llama block (v16: 5.316 against 4.194 ms
// eager), where the 16-bit kernels gain 3 %.
constexpr double kLazyTf32 = 1.27;
// tf32 with a load warp and K at its block's start (LOAD_WARP, K_AHEAD 0): no load waits at
// a tile's boundary, 0.57 of a step a tile (v18, minGPT's core: 0.331 against 0.351 ms,
// about 6 steps a tile), and three warps transposing instead of four, which v18 measured
// 4.5 % a step slower (the Llama block, 4.342 against 4.153 ms, 33 steps a tile) but which,
// with 120 producer registers and O from registers, is 1.5 % a step faster (v22, an H100:
// the Llama block 3.902 against 4.071 ms with the split tail, about 4.6 % against the
// four-warp kernel without it, HF causal 0.553 against 0.580; the four-warp kernels at 72
// producer registers). Measured with O from registers only; taken for the load warp's other
// configurations too (its own O tile at 112 registers, lazy chained at 104), whose per-step
// cost was last measured at 104 registers in v18.
constexpr double kTf32LoadWarpStepCost = 0.985;
constexpr double kTf32LoadWarpTileSteps = 0.57;
// tf32 with the load warp, O from registers against its own O tile: the tile's 48 KiB leave
// 2 staging slots, registers 4, and the loads run further ahead: 0.19 steps a tile saved
// (v22, an H100, the balanced tail: minGPT's core 0.310 against 0.321 ms, about 5.5 steps a
// tile; v18c on an H200 without it measured them level, 0.307 against 0.304). Not chained
// configurations: their O leaves from registers too, and was not measured against a tile.
constexpr double kTf32LoadWarpEpilogue0Steps = -0.19;
// The split tail: its parts' O rows into the workspace (fp32, from registers) and the combine
// kernel that reads them back, about 3 steps (on the Llama block the parts write and the
// combine reads 8 MB), and the second launch, 3 us: docs/perf-notes.md v20, where a problem
// of one short round (64 tiles of 8 blocks) ran 1-2 us slower split at bf16 (1.5 us steps)
// and 10 us faster at tf32 (16 blocks a tile).
constexpr double kSplitCombineSteps = 3.0;
constexpr double kSplitLaunchSeconds = 3e-6;
// The sm80 model's memory terms (space.cpp): K/V re-reads from L2, one DRAM pass.
constexpr double kL2Bytes = 9.0e12;
constexpr double kDramBytes = 3.5e12;

constexpr std::size_t kTemplateSmemLimit = 232448;  // 227 KiB: the template's static_assert
constexpr int64_t kInt32Max = 0x7fffffffLL;

bool valid_schedule(const AttentionFamily& f, const AttentionConfig& c) {
  const AttentionSm90Options& o = *c.sm90;
  const bool bn_ok = c.block_n == 64 || c.block_n == 96 || c.block_n == 128 || c.block_n == 160 || c.block_n == 176 ||
                     c.block_n == 192;
  return (o.consumer_wg == 1 || o.consumer_wg == 2) && c.block_m == 64 * o.consumer_wg && bn_ok && o.stages >= 1 &&
         o.stages <= 4 && (!o.pingpong || (o.consumer_wg == 2 && o.overlap)) &&
         (c.min_blocks == 1 || (c.min_blocks == 2 && o.consumer_wg == 1)) && o.epilogue >= 0 && o.epilogue <= 2 &&
         (!o.chain || (o.overlap && o.persistent)) &&
         (o.cluster == 1 || (o.cluster == 2 && f.mask == MaskKind::none && !o.chain && c.block_n % 16 == 0)) &&
         o.prefetch >= 0 && o.prefetch <= 4 && (o.prefetch == 0 || (o.cluster == 1 && !attention_sm90_converts(f))) &&
         (o.k_ahead == 1 || (o.k_ahead == 0 && attention_sm90_transposes(f) && o.stages > 1)) &&
         (!o.load_warp || attention_sm90_transposes(f)) &&
         (!o.split_tail || (f.mask == MaskKind::none && o.persistent && o.cluster == 1 && o.epilogue != 2)) &&
         (!o.balance_tail || (f.mask == MaskKind::causal && o.persistent && o.cluster == 1));
}

}  // namespace

bool attention_sm90_converts(const AttentionFamily& f) { return f.element == DType::f32 && f.math == "bf16"; }

bool attention_sm90_transposes(const AttentionFamily& f) { return f.element == DType::f32 && f.math == "tf32"; }

namespace {
bool staged(const AttentionFamily& f) { return attention_sm90_converts(f) || attention_sm90_transposes(f); }
}  // namespace

bool attention_sm90_applies(const AttentionFamily& f, const AttentionProblem& p, std::string& why) {
  why.clear();
  const bool own = f.element != DType::f32 && f.math == (f.element == DType::bf16 ? "bf16" : "f16");
  if (!own && !staged(f)) {
    why = "the sm90 attention kernel takes bf16 or fp16 inputs in their own math, or fp32 inputs in bf16 or tf32 "
          "math";
    return false;
  }
  if (staged(f) && f.mask == MaskKind::additive) {
    why = "fp32 inputs with an additive mask: the sm90 kernel reads 16-bit mask pairs (the sm80 kernel takes it)";
    return false;
  }
  const int64_t max_stride = (int64_t(1) << 40) / int64_t(dtype_bytes(f.element));
  for (const AttentionStrides* s : {&p.q, &p.k, &p.v, &p.o}) {
    for (int64_t st : {s->batch, s->head, s->row}) {
      if (st < 0 || st >= max_stride) {
        why = fmt::format("a stride of {} elements is beyond the TMA's 2^40 bytes", st);
        return false;
      }
    }
  }
  if (p.mask_prologue) {
    why = "an additive mask with a prologue ((rsub - M) * scale, mask_rsub and mask_scale): the sm90 attention kernel "
          "reads the mask's values as they are; the sm80 kernel computes the prologue";
    return false;
  }
  if (mask_has_tensor(p.mask)) {
    for (int64_t st : {p.mask_strides.batch, p.mask_strides.head, p.mask_strides.row}) {
      if (st < 0 || st % 2 != 0) {
        why = fmt::format("the mask stride {} is odd: the sm90 kernel reads two keys per load", st);
        return false;
      }
    }
  }
  const int64_t blocks = (p.seq_q + 127) / 128;
  if (p.seq_q > kInt32Max - 192 || p.seq_k > kInt32Max - 192 || p.batch * p.heads > kInt32Max / std::max<int64_t>(1, blocks)) {
    why = "an index of the sm90 kernel would overflow 32 bits";
    return false;
  }
  return true;
}

namespace {
// The template's kOffStage: the Q tiles, the K/V ring and epilogue 1's O tile.
std::size_t tiles_bytes(const AttentionFamily& f, const AttentionConfig& c) {
  const AttentionSm90Options& o = *c.sm90;
  const std::size_t elem = attention_sm90_transposes(f) ? 4 : 2;  // the GEMMs' operands in shared memory
  const std::size_t tile_q = std::size_t(c.block_m) * std::size_t(f.head_dim) * elem;
  const std::size_t tile_kv = std::size_t(c.block_n) * std::size_t(f.head_dim) * elem;
  return (o.chain ? 2 : 1) * tile_q + 2 * std::size_t(o.stages) * tile_kv + (o.epilogue == 1 ? tile_q : 0);
}

// The template's barriers with `slots` staging slots: Q's full and empty (2 each), 4 per K/V
// stage, each slot's full (and, with a load warp, empty) barrier; 8 bytes each.
std::size_t barrier_bytes(const AttentionSm90Options& o, int slots) {
  return 8 * (4 + 4 * std::size_t(o.stages) + (o.load_warp ? 2 : 1) * std::size_t(slots));
}
}  // namespace

int attention_sm90_staging_slots(const AttentionFamily& f, const AttentionConfig& c) {
  if (!staged(f)) return 0;
  const AttentionSm90Options& o = *c.sm90;
  const long long cap = (long long)(kTemplateSmemLimit / std::size_t(c.min_blocks)) - 1024 -
                        (long long)barrier_bytes(o, o.staging_max);
  const long long fit = (cap - (long long)tiles_bytes(f, c)) / (o.stage_rows * 4LL * f.head_dim);
  return int(std::clamp(fit, 0LL, (long long)o.staging_max));
}

std::size_t attention_sm90_smem_bytes(const AttentionFamily& f, const AttentionConfig& c) {
  const int slots = attention_sm90_staging_slots(f, c);
  const std::size_t bars = barrier_bytes(*c.sm90, slots);
  return tiles_bytes(f, c) + std::size_t(slots) * std::size_t(c.sm90->stage_rows) * 4 * std::size_t(f.head_dim) +
         bars + 1024;
}

int attention_sm90_consumer_registers(const AttentionConfig& c, const AttentionGpuLimits& gpu) {
  const AttentionSm90Options& o = *c.sm90;
  const int alloc = (gpu.registers_per_sm / c.min_blocks / (128 * (o.consumer_wg + 1))) / 8 * 8;
  const int raw = alloc + (alloc - o.producer_regs) / o.consumer_wg;
  return std::min(raw, 240) / 8 * 8;
}

bool attention_sm90_config_fits(const AttentionFamily& f, const AttentionConfig& c, const AttentionGpuLimits& gpu) {
  if (!c.sm90 || !valid_schedule(f, c)) return false;
  if (staged(f) && (c.sm90->cluster != 1 || c.block_m % c.sm90->stage_rows != 0 ||
                    c.block_n % c.sm90->stage_rows != 0 || attention_sm90_staging_slots(f, c) < 2))
    return false;
  // Converting: O leaves in fp32 from registers. tf32: O through shared memory in fp32 as
  // well, but through Q's tile only when chained (the template's static_asserts).
  if (attention_sm90_converts(f) && c.sm90->epilogue != 0) return false;
  if (attention_sm90_transposes(f) &&
      (c.sm90->stage_rows != 32 || c.block_n % 32 != 0 || (c.sm90->epilogue == 2 && !c.sm90->chain)))
    return false;
  if (c.sm90->qreg && (!attention_sm90_transposes(f) || c.sm90->epilogue == 2)) return false;
  const std::size_t smem = attention_sm90_smem_bytes(f, c);
  const std::size_t mb = std::size_t(c.min_blocks);
  return smem <= kTemplateSmemLimit / mb && smem <= gpu.smem_per_block &&
         mb * (smem + gpu.smem_reserved_per_block) <= gpu.smem_per_sm && attention_sm90_consumer_registers(c, gpu) >= 160;
}

namespace {
// Causal: every persistent configuration of one CTA per SM deals its last two rounds longest first (v21: 0.3-1.2 %
// faster on the four causal results rows, never slower); the converting kernels were not
// measured with it and keep the plain order.
std::vector<AttentionConfig> with_balanced_tail(const AttentionFamily& f, std::vector<AttentionConfig> configs) {
  if (f.mask != MaskKind::causal) return configs;
  for (AttentionConfig& c : configs)  // one CTA per SM: the template deals at most 160 CTAs
    if (c.sm90->persistent && c.sm90->cluster == 1 && c.min_blocks == 1) c.sm90->balance_tail = true;
  return configs;
}
}  // namespace

std::vector<AttentionConfig> attention_sm90_space(const AttentionFamily& f, const AttentionGpuLimits& gpu) {
  const AttentionSm90Options base{};  // 2 stages, 2 WG, overlap + pingpong, persistent, epilogue 1, lazy
  AttentionSm90Options chain = base, eager = base, eager_chain = base, wide = base, one_wg = base, split = base;
  chain.chain = true;
  split.split_tail = true;  // no mask only (valid_schedule)
  eager.lazy_rescale = false;
  eager_chain.lazy_rescale = false;
  eager_chain.chain = true;
  wide.epilogue = 2;
  one_wg.consumer_wg = 1;
  one_wg.pingpong = false;
  one_wg.epilogue = 0;
  const AttentionConfig all[] = {{128, 128, 1, base}, {128, 128, 1, split}, {128, 128, 1, chain}, {128, 128, 1, eager},
                                 {128, 128, 1, eager_chain}, {128, 192, 1, wide}, {64, 128, 2, one_wg}};
  std::vector<AttentionConfig> out;
  if (attention_sm90_converts(f)) {
    // fp32 inputs: the converting producer needs registers for its float4 groups (56 or 72
    // of them, against the 24 of the TMA-only producer; 40 spills) and O leaves from
    // registers (docs/perf-notes.md v14).
    // Eager rescaling: lazy rescaling's doubled P-rounding error (v10e) on top of the
    // inputs' own bf16 rounding exceeded the bound on the "large" draw (v14).
    AttentionSm90Options cv = base, cv_chain = base, cv72 = base;
    cv.epilogue = cv_chain.epilogue = cv72.epilogue = 0;
    cv.lazy_rescale = cv_chain.lazy_rescale = cv72.lazy_rescale = false;
    cv.producer_regs = cv_chain.producer_regs = 56;
    cv72.producer_regs = 72;
    cv_chain.chain = true;
    // The split tail measured 0.5 % slower on the Llama block (v20): not here.
    for (const AttentionConfig& c : {AttentionConfig{128, 128, 1, cv}, AttentionConfig{128, 128, 1, cv_chain},
                                     AttentionConfig{128, 128, 1, cv72}})
      if (attention_sm90_config_fits(f, c, gpu)) out.push_back(c);
    return out;
  }
  if (attention_sm90_transposes(f)) {
    // tf32: fp32 tiles take twice the shared memory, so 64 or 96 keys per step (128 fits at
    // head dim 64); 72 producer registers (56 spill in the transposition, 64 spill 14-18 B
    // with the tails, and the consumers keep 216 either way; v22: 4-5 % faster than 64 at
    // head dim 128); eager rescaling and lazy, chained and not, O from registers; eager with
    // O through its own shared tile where it fits (head dim 64 and 96 at 64 keys:
    // docs/perf-notes.md v16, v17); and the load warp with K at its block's start, eager
    // with O from registers or its own O tile, and lazy chained (at 64 producer registers
    // the load warp spills, v18; 120, 112 and 104, each the fastest measured without
    // spills, v22).
    AttentionSm90Options tf = base;
    tf.epilogue = 0;
    tf.producer_regs = 72;
    tf.lazy_rescale = false;
    AttentionSm90Options tf_lazy = tf, tf_chain = tf, tf_lazy_chain = tf, tf_e1 = tf, tf_split = tf;
    tf_split.split_tail = true;
    tf_lazy.lazy_rescale = tf_lazy_chain.lazy_rescale = true;
    tf_chain.chain = tf_lazy_chain.chain = true;
    tf_e1.epilogue = 1;
    AttentionSm90Options tf_e1_lw = tf_e1, tf_lw = tf, tf_lazy_chain_lw = tf_lazy_chain;
    for (AttentionSm90Options* o : {&tf_e1_lw, &tf_lw, &tf_lazy_chain_lw}) {
      o->load_warp = true;
      o->k_ahead = 0;
    }
    tf_lw.producer_regs = 120;
    tf_e1_lw.producer_regs = 112;
    tf_lazy_chain_lw.producer_regs = 104;
    AttentionSm90Options tf_lw_split = tf_lw;  // v22: the Llama block 3.862 against 3.925 ms without
    tf_lw_split.split_tail = true;
    for (int bn : {128, 96, 64})
      for (const AttentionSm90Options& o : {tf_e1, tf, tf_split, tf_lazy, tf_chain, tf_lazy_chain, tf_e1_lw, tf_lw,
                                            tf_lw_split, tf_lazy_chain_lw})
        if (const AttentionConfig c{128, bn, 1, o}; attention_sm90_config_fits(f, c, gpu)) out.push_back(c);
    return with_balanced_tail(f, out);
  }
  for (const auto& c : all) {
    if (attention_sm90_config_fits(f, c, gpu)) out.push_back(c);
  }
  return with_balanced_tail(f, out);
}

AttentionSplitPlan attention_sm90_split_plan(int64_t n_tiles, int64_t n_blocks, int64_t slots) {
  const AttentionSplitPlan none{n_tiles, 1};
  if (slots <= 0) return none;
  const int64_t tail = n_tiles % slots;
  if (tail == 0 || 2 * tail > slots) return none;
  const int64_t parts = std::min(n_blocks, slots / tail);
  return parts < 2 ? none : AttentionSplitPlan{n_tiles - tail, parts};
}

double attention_sm90_balanced_steps(const std::vector<int64_t>& class_blocks, double fixed_steps, int64_t n_tiles,
                                     int64_t slots) {
  constexpr double kNone = std::numeric_limits<double>::infinity();
  const int64_t n_qb = int64_t(class_blocks.size());
  const int64_t grid = std::min(n_tiles, slots);
  if (n_qb == 0 || grid <= 0 || grid > 160 || n_tiles > kAttentionSm90MaxBalancedTiles) return kNone;
  const int64_t rounds = (n_tiles + grid - 1) / grid;
  if (rounds < 2) return kNone;
  const int64_t r0 = rounds - 2, first = r0 * grid;
  const auto blocks = [&](int64_t tile) { return class_blocks[size_t(tile % n_qb)]; };
  // The deal weighs a tile as the template does, key blocks + 1; the estimate adds this
  // configuration's fixed steps a tile to its blocks.
  using Slot = std::pair<int64_t, int64_t>;  // (the deal's load, CTA)
  std::vector<Slot> loads(static_cast<size_t>(grid));
  std::vector<int64_t> cta_blocks(static_cast<size_t>(grid), 0), cta_tiles(static_cast<size_t>(grid), r0);
  for (int64_t x = 0; x < grid; ++x) loads[size_t(x)] = {0, x};
  for (int64_t r = 0; r < r0; ++r)
    for (int64_t x = 0; x < grid; ++x) {
      const int64_t b = blocks(r * grid + ((r & 1) ? grid - 1 - x : x));
      loads[size_t(x)].first += b + 1;
      cta_blocks[size_t(x)] += b;
    }
  std::vector<int64_t> order(size_t(n_tiles - first));
  std::iota(order.begin(), order.end(), first);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return blocks(a) > blocks(b); });
  std::priority_queue<Slot, std::vector<Slot>, std::greater<Slot>> least(std::greater<Slot>(), loads);
  for (const int64_t tile : order) {
    const Slot s = least.top();
    least.pop();
    if (cta_tiles[size_t(s.second)] - r0 == 4) return kNone;  // the template's kBalanceDepth: the plain order
    ++cta_tiles[size_t(s.second)];
    cta_blocks[size_t(s.second)] += blocks(tile);
    least.push({s.first + blocks(tile) + 1, s.second});
  }
  double busiest = 0;
  for (int64_t x = 0; x < grid; ++x)
    busiest = std::max(busiest, double(cta_blocks[size_t(x)]) + double(cta_tiles[size_t(x)]) * fixed_steps);
  return busiest;
}

double attention_sm90_compute_seconds(const AttentionFamily& f, const AttentionConfig& c, const AttentionProblem& p,
                                      const AttentionGpuLimits& gpu) {
  const AttentionSm90Options& o = *c.sm90;
  double rate = kWgmmaFlops / kRefSms;  // flop/s of one SM
  if (o.consumer_wg == 1) rate *= c.min_blocks == 2 ? kOneWgTwoCtasRate : kOneWgRate;
  else if (!o.pingpong) rate *= kNoPingpongRate;
  double step_s = 4.0 * c.block_m * c.block_n * double(f.head_dim) / rate;
  step_s *= (1.0 + kStepOverhead * 128.0 / c.block_n) / (1.0 + kStepOverhead);
  if (o.lazy_rescale)
    step_s *= attention_sm90_transposes(f) ? kLazyTf32 : mask_has_tensor(f.mask) ? kLazyTensorMask : kLazyPlain;
  if (o.chain) step_s *= attention_sm90_transposes(f) ? kTf32ChainStepCost : kChainStepCost;
  if (attention_sm90_converts(f)) step_s *= kConvertStepCost;
  if (attention_sm90_transposes(f)) step_s *= kTf32StepCost;
  if (o.load_warp) step_s *= kTf32LoadWarpStepCost;
  const double fixed_steps = (o.chain ? 0.0 : kPrologueSteps) + (o.persistent ? 0.0 : kLaunchSteps) +
                             (o.epilogue == 0   ? (o.load_warp && !o.chain        ? kTf32LoadWarpEpilogue0Steps
                                                  : attention_sm90_transposes(f) ? kTf32Epilogue0Steps
                                                                                 : kEpilogue0Steps)
                              : o.epilogue == 2 ? kEpilogue2Steps
                                                : 0.0) -
                             (o.load_warp ? kTf32LoadWarpTileSteps : 0.0);

  const AttentionKeySums sums = attention_key_sums(p, c.block_m, c.block_n);
  const int64_t n_qb = sums.query_blocks;
  const double total_steps = double(sums.blocks) + double(n_qb) * fixed_steps;
  const double max_steps = double(sums.max_blocks) + fixed_steps;
  const double heads = double(p.batch) * double(p.heads);
  const double tiles = double(n_qb) * heads;
  // CTAs of one SM share its rate: a tile on one of MIN_BLOCKS co-resident CTAs takes
  // MIN_BLOCKS times its steps.
  const double cta_step_s = step_s * c.min_blocks;
  const double slots = double(gpu.sm_count) * c.min_blocks;
  if (o.persistent) {
    const double mean_steps = total_steps / double(n_qb);
    if (o.split_tail && p.mask == MaskKind::none) {
      const int64_t n_blocks = attention_tile_keys(p, 0, c.block_m, c.block_n).blocks(c.block_n);
      const AttentionSplitPlan sp = attention_sm90_split_plan(int64_t(tiles), n_blocks, int64_t(slots));
      if (sp.parts > 1) {
        const double part_steps = double((n_blocks + sp.parts - 1) / sp.parts) + fixed_steps + kSplitCombineSteps;
        return (std::floor(tiles / slots) * mean_steps + part_steps) * cta_step_s + kSplitLaunchSeconds;
      }
    }
    const double plain = std::ceil(tiles / slots) * mean_steps;
    if (o.balance_tail && p.mask == MaskKind::causal && tiles <= double(kAttentionSm90MaxBalancedTiles)) {
      std::vector<int64_t> class_blocks(static_cast<size_t>(n_qb));  // tile % n_qb = c: query block n_qb - 1 - c
      for (int64_t cl = 0; cl < n_qb; ++cl)
        class_blocks[size_t(cl)] = attention_tile_keys(p, (n_qb - 1 - cl) * c.block_m, c.block_m, c.block_n).blocks(c.block_n);
      const double balanced = attention_sm90_balanced_steps(class_blocks, fixed_steps, int64_t(tiles), int64_t(slots));
      return std::min(plain, balanced) * cta_step_s;
    }
    return plain * cta_step_s;
  }
  if (p.mask == MaskKind::causal) return std::max(total_steps * heads / slots, max_steps) * cta_step_s;
  return std::ceil(tiles / slots) * max_steps * cta_step_s;
}

double attention_sm90_estimate_seconds(const AttentionFamily& f, const AttentionConfig& c, const AttentionProblem& p,
                                       const AttentionGpuLimits& gpu) {
  const double kv_rows = double(attention_key_sums(p, c.block_m, c.block_n).keys);
  const double heads = double(p.batch) * double(p.heads);
  const double compute = attention_sm90_compute_seconds(f, c, p, gpu);
  const double elem = double(dtype_bytes(p.dtype));
  const double kv_reads = kv_rows * heads * 2.0 * f.head_dim * elem;
  const double unique = (2.0 * heads * double(p.seq_q) + 2.0 * double(p.batch) * double(p.kv_heads) * double(p.seq_k)) *
                        f.head_dim * elem;
  return std::max({compute, kv_reads / kL2Bytes, unique / kDramBytes});
}

std::string attention_sm90_kernel_name(const AttentionFamily& f, const AttentionConfig& c) {
  const AttentionSm90Options& o = *c.sm90;
  const std::string io = attention_sm90_converts(f)     ? std::string("bf16_f32")
                         : attention_sm90_transposes(f) ? std::string("tf32_f32")
                                                        : attention_io_token(f.element);
  std::string s = fmt::format("fact_attn_sm90_{}_d{}_{}_{}x{}_s{}_wg{}", io, f.head_dim,
                              attention_mask_token(f.mask), c.block_m, c.block_n, o.stages, o.consumer_wg);
  if (o.overlap) s += "_ov";
  if (o.pingpong) s += "_pp";
  s += fmt::format("_mb{}", c.min_blocks);
  if (o.persistent) s += "_persist";
  if (o.epilogue != 0) s += fmt::format("_e{}", o.epilogue);
  if (o.l2hint) s += "_l2";
  if (o.lazy_rescale) s += "_lazy";
  if (o.chain) s += "_chain";
  if (o.cluster == 2) s += "_c2";
  if (o.qreg) s += "_qr";
  if (o.prefetch != 0) s += fmt::format("_pf{}", o.prefetch);
  if (o.k_ahead == 0) s += "_ka0";
  if (o.load_warp) s += "_lw";
  if (o.split_tail) s += "_st";
  if (o.balance_tail) s += "_bt";
  if (o.producer_regs != 24) s += fmt::format("_r{}", o.producer_regs);
  if (o.stage_rows != 32) s += fmt::format("_sr{}", o.stage_rows);
  if (o.staging_max != 4) s += fmt::format("_sl{}", o.staging_max);
  return s;
}

}  // namespace fact::realize
