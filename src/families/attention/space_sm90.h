// The sm90 member of the attention family (templates/attention_sm90*.cu.in: WGMMA + TMA,
// a producer warpgroup and one or two consumer warpgroups, FlashAttention-3's schedule):
// when it applies, its configurations, their shared memory and registers as the template
// computes them, its cost model and its kernel names. space.h merges it with the sm80
// member; docs/04-realization.md ("Attention") describes both.
//
// Names (bench/attention_kernels.py's Sm90.name, which measured the kernels under them):
//   fact_attn_sm90_<io>_d<D>_<mask>_<BM>x<BN>_s<stages>_wg<wg>[_ov][_pp]_mb<mb>[_persist]
//       [_e<epilogue>][_l2][_lazy][_chain][_c2][_qr][_pf<blocks>][_ka0][_lw][_st][_bt][_r<producer regs>]
//       [_sr<staging rows>][_sl<staging slots>]
// io: bf16 | f16 (the math is the element's own) | bf16_f32 (fp32 inputs and output, bf16
// math: each tile rounded in shared memory by the converting producer) | tf32_f32 (fp32
// inputs and output, tf32 math: V transposed by the producer); _e only for epilogue 1 or 2, _c2 for
// clusters of two, _qr for Q in registers (tf32 only), _st for the split tail, _bt for the balanced tail, _r only when the producer keeps other than 24 registers. E.g.
//   fact_attn_sm90_bf16_d128_causal_128x128_s2_wg2_ov_pp_mb1_persist_e1_lazy
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "families/attention/space.h"

namespace fact::realize {

/// True for fp32 inputs in bf16 math (the bf16 policy on an fp32 model): the template's
/// INPUT is float, its ELEMENT bf16, and the producer rounds each fp32 tile the TMA stages.
bool attention_sm90_converts(const AttentionFamily& f);

/// True for fp32 inputs in tf32 math (the tf32 policy on an fp32 model): the template's
/// ELEMENT and INPUT are float; Q and K go to the WGMMA as the TMA brings them, and the
/// producer warpgroup transposes each staged V sub-tile into a K-major V^T tile (tf32 WGMMA
/// takes K-major operands only).
bool attention_sm90_transposes(const AttentionFamily& f);

/// Staging slots of 32 x D fp32 the converting or transposing producer gets (the template's kStagingSlots:
/// as many as fit beside the tiles, at most 4); 0 when `f` does not convert.
int attention_sm90_staging_slots(const AttentionFamily& f, const AttentionConfig& c);

/// True when the sm90 member can implement `p` under family `f`: bf16 or fp16 elements with
/// the math of their own dtype, or fp32 inputs in bf16 or tf32 math without an additive mask
/// (the template's ELEMENT and INPUT; fp32 inputs under the fp32 policy, 3xtf32, are sm80
/// only), every
/// Q/K/V/O stride below 2^40 bytes (the TMA's limit; the
/// multiples of 16 bytes are attention_family's check already), a mask tensor's strides
/// even (two keys per load), no mask prologue (AttentionProblem::mask_prologue: the sm90
/// template reads the mask's values as they are), and batch x heads x query blocks of 128 rows, seq_q and seq_k
/// within 32 bits (the template's can_implement, FACT_ATTN_ERR_RANGE). Sets `why` otherwise.
bool attention_sm90_applies(const AttentionFamily& f, const AttentionProblem& p, std::string& why);

/// Dynamic shared memory of one CTA in bytes, as the template's kSmemBytes: (1 + CHAIN) Q
/// tiles of BLOCK_M x D, 2 x STAGES K/V tiles of BLOCK_N x D, an O tile of BLOCK_M x D with
/// EPILOGUE 1 (2-byte elements), the staging slots (attention_sm90_staging_slots, 32 x D
/// x 4 bytes each; tf32: every tile of 4-byte elements), 8 x (4 + 4 x STAGES + slots) bytes of mbarriers and 1 KiB of alignment
/// slack.
std::size_t attention_sm90_smem_bytes(const AttentionFamily& f, const AttentionConfig& c);

/// Registers per consumer thread after setmaxnreg, as the template's kRegsConsumer: the
/// launch allocation A = registers_per_sm / MIN_BLOCKS / threads (a multiple of 8: 168 for
/// 2 WG, 128 for 1 WG at 2 CTAs) plus (A - PRODUCER_REGS) / CONSUMER_WG, at most 240, a
/// multiple of 8 (the template asserts >= 160). More than the producer frees hangs
/// setmaxnreg.inc (measured: 64 producer registers with 224 per consumer, docs/perf-notes.md v14).
int attention_sm90_consumer_registers(const AttentionConfig& c, const AttentionGpuLimits& gpu);

/// True when `c` is a valid sm90 configuration (the template's static_asserts: BLOCK_M =
/// 64 x WG, BLOCK_N in {64, 96, 128, 160, 176, 192}, pingpong with 2 WG and overlap, MIN_BLOCKS 2
/// only with 1 WG, chain with overlap + persistent, clusters of 2 without a mask or chain,
/// L2 prefetch 0-4 without clusters nor converting, K ahead 0 and a load warp only for tf32 (K ahead 0 with 2+ stages), the split tail only
/// without a mask, persistent, without clusters and not with epilogue 2; converting: epilogue 0, no cluster, at
/// least 2 staging slots; tf32: epilogue 2 only chained, 32-row staging) that fits:
/// shared memory <= 232448 / MIN_BLOCKS bytes (227 KiB, the
/// template's assert) and <= smem_per_block, MIN_BLOCKS x (smem + reserved) <= smem_per_sm,
/// and at least 160 consumer registers.
bool attention_sm90_config_fits(const AttentionFamily& f, const AttentionConfig& c, const AttentionGpuLimits& gpu);

/// The sm90 configurations tried, made of options docs/perf-notes.md v10a-v10i measured on
/// the H200 (not measured as such: chaining without lazy rescaling, and 128x192 and one WG
/// with lazy rescaling):
/// the default 128x128, 2 stages, 2 WG, overlap + pingpong, persistent, epilogue 1, lazy
/// rescaling; it with the split tail (no mask only), with chaining, without lazy rescaling, and with both changes; 128x192 with
/// epilogue 2 (epilogue 1 does not fit at head dim 128); one WG of 64x128 at 2 CTAs per SM
/// (epilogue 0). fp32 inputs (attention_sm90_converts) get their own three: the default
/// with epilogue 0, eager rescaling and 56 producer registers, it with chaining, and with 72. tf32 (attention_sm90_transposes): 128 x {128, 96, 64}
/// keys, epilogue 0, 72 producer registers, each eager and lazy, chained and not, eager with
/// the split tail (no mask); eager with its own O tile; the load warp with K at its block's
/// start: eager with O from registers (120 producer registers), it with the split tail (no
/// mask), eager with its own O tile (112) and lazy chained (104) (space_sm90.cpp).
/// Causal: every persistent configuration of one CTA per SM without clusters has the balanced
/// tail (bf16 and tf32).
/// Those that do not fit (attention_sm90_config_fits) are left out, unranked.
std::vector<AttentionConfig> attention_sm90_space(const AttentionFamily& f, const AttentionGpuLimits& gpu);

/// The split tail of a persistent grid (the template's split_plan, attention_sm90_tail.cu.in,
/// its twin): n_tiles equal tiles of n_blocks key blocks on `slots` CTAs leave a last round of
/// tail = n_tiles % slots tiles; when 0 < tail <= slots / 2 each of those tiles runs as
/// parts = min(n_blocks, slots / tail) parts over its key blocks (first = n_tiles - tail),
/// combined afterwards; otherwise, or with parts < 2, nothing is split (first = n_tiles,
/// parts = 1). E.g. the Llama-3-8B block, 8192 tiles of 16 blocks on 132 SMs: the last 8
/// tiles in 16 parts each.
struct AttentionSplitPlan {
  int64_t first;
  int64_t parts;
  bool operator==(const AttentionSplitPlan&) const = default;
};
AttentionSplitPlan attention_sm90_split_plan(int64_t n_tiles, int64_t n_blocks, int64_t slots);

/// The most tiles the balanced tail deals (balance_plan's 2^22 in attention_sm90_tail.cu.in):
/// past it the template keeps the plain order, and the cost model does not deal them.
inline constexpr int64_t kAttentionSm90MaxBalancedTiles = int64_t(1) << 22;

/// The balanced tail (the template's balance_plan, attention_sm90_tail.cu.in, its twin): the
/// busiest CTA's steps when n_tiles tiles, tile t with class_blocks[t % n_qb] key blocks
/// (n_qb = class_blocks.size(), class 0 a head's last query block) and fixed_steps more, run
/// on min(n_tiles, slots) persistent CTAs in the plain alternating rounds except the last two,
/// whose tiles go heaviest first to the least-loaded CTA, loads counted as the template counts
/// them (key blocks + 1 a tile). Infinity where the template keeps the plain order: fewer than
/// two rounds, more than 160 CTAs or 2^22 tiles, a CTA dealt more than 4 tiles. E.g. minGPT's
/// core at tf32 (4096 tiles of 2-8 key blocks, 1 fixed step, 132 SMs): 189 against the plain
/// order's 192 (the cost model's plain estimate is ceil(tiles / SMs) mean tiles, 192 here too).
double attention_sm90_balanced_steps(const std::vector<int64_t>& class_blocks, double fixed_steps, int64_t n_tiles,
                                     int64_t slots);

/// Estimated seconds of sm90 configuration `c` on `p` (a ranking key, not a prediction).
/// A CTA's tile of BLOCK_M query rows takes one step of BLOCK_M x BLOCK_N x D x 4 flops per
/// key block it sees (attention_tile_keys: causal, up to its last row; with a window, from
/// its first row's window on), plus per tile one step for the lone first Q K^T and softmax
/// (none with chaining), 1.2 steps for epilogue 0 and 0.9 for epilogue 2 (0 for epilogue 1),
/// and one more without a persistent grid. A step runs at
/// 690 TFLOP/s over 132 SMs scaled to gpu.sm_count, times a per-step overhead of 15 % of a
/// 128-key step spread over BLOCK_N; see space_sm90.cpp for each factor's measurement.
/// Persistent: ceil(tiles / (SMs x MIN_BLOCKS)) mean tiles on the busiest CTA (the split tail:
/// the whole rounds, then one part's blocks and fixed steps plus 3 steps for the parts' stores
/// and the combine, plus 3 us for its launch; the balanced tail: the lesser of that and
/// attention_sm90_balanced_steps); otherwise
/// waves of the longest tile (causal: the larger of the balanced total and the longest).
/// Never below the sm80 model's memory terms (K/V reads at 9 TB/s, one DRAM pass at 3.5 TB/s).
double attention_sm90_estimate_seconds(const AttentionFamily& f, const AttentionConfig& c, const AttentionProblem& p,
                                       const AttentionGpuLimits& gpu);

/// The compute part of attention_sm90_estimate_seconds (the tiles on the busiest CTA, no
/// memory terms): the sm90 ranking's tie-break, since a memory-bound problem (minGPT's core)
/// ties every configuration at its memory terms.
double attention_sm90_compute_seconds(const AttentionFamily& f, const AttentionConfig& c, const AttentionProblem& p,
                                      const AttentionGpuLimits& gpu);

/// The procedural name of an sm90 configuration (header comment). `c.sm90` must be set.
std::string attention_sm90_kernel_name(const AttentionFamily& f, const AttentionConfig& c);

}  // namespace fact::realize
