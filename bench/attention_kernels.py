"""The fused-attention kernels bench/attention_check.py measures, and their rendering and building:
the sm80 template's configurations ((math, io, D, mask, BM, BN, min blocks) tuples), the sm90
template's (the Sm90 dataclass; sm90_configs, the sm90 variants measured with the sm80 kernels they
are compared with), each rendered from its parts in src/families/attention/templates/ and compiled
into a shared library with nvcc (build).
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import subprocess
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The template's parts, in the order CMakeLists.txt concatenates them (FACT_TPL_ATTENTION_SM80_PARTS).
TEMPLATE_PARTS = [ROOT / f"src/families/attention/templates/{part}.cu.in" for part in
                  ("attention_sm80", "attention_sm80_kernel")]
ABI = ROOT / "src/families/attention/abi.h"
MASKS = {"nomask": 0, "causal": 1, "additive": 2, "keep": 3, "drop": 4}
ELEMENTS = {"f32": "float", "tf32": "float", "bf16": "__nv_bfloat16", "f16": "__half"}


def kernel_name(math_: str, io: str, d: int, mask: str, bm: int, bn: int, mb: int) -> str:
    return f"fact_attn_sm80_{math_}_{io}_d{d}_{mask}_{bm}x{bn}_mb{mb}"


def render(math_: str, io: str, d: int, mask: str, bm: int, bn: int, mb: int) -> tuple[str, str]:
    name = kernel_name(math_, io, d, mask, bm, bn, mb)
    text = "".join(part.read_text() for part in TEMPLATE_PARTS)
    subs = {"NAME": name, "ABI": ABI.read_text(), "ELEMENT": ELEMENTS[io], "MATH": math_,
            "HEAD_DIM": str(d), "MASK": str(MASKS[mask]), "BLOCK_M": str(bm),
            "BLOCK_N": str(bn), "MIN_BLOCKS": str(mb)}
    for k, v in subs.items():
        text = text.replace("{{" + k + "}}", v)
    if "{{" in text:
        raise RuntimeError(f"{name}: unfilled placeholder")
    return name, text


def build(cfg, work: pathlib.Path, nvcc: str) -> tuple[str, pathlib.Path, float, str]:
    sm90 = isinstance(cfg, Sm90)
    name, text = render_sm90(cfg) if sm90 else render(*cfg)
    src = work / f"{name}.cu"
    lib = work / f"lib{name}.so"
    src.write_text(text)
    t0 = time.time()
    cmd = [nvcc, "-std=c++17", "-O3", "-DNDEBUG", "-gencode=arch=compute_90a,code=sm_90a",
           "-Xcompiler=-fPIC", "-shared", "-Xptxas=-v", "-o", str(lib), str(src)]
    if sm90:
        cmd[1:1] = [f"-I{CUTLASS_INCLUDE}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    log = r.stdout + r.stderr
    (work / f"{name}.log").write_text(log)
    if r.returncode != 0:
        raise RuntimeError(f"{name}: nvcc failed:\n{log[-3000:]}")
    return name, lib, time.time() - t0, log


# ------------------------------------------------------------------ sm90 (WGMMA + TMA) kernels

# The template's parts, in the order CMakeLists.txt concatenates them (FACT_TPL_ATTENTION_SM90_PARTS).
TEMPLATE_SM90_PARTS = [ROOT / f"src/families/attention/templates/{part}.cu.in" for part in
                       ("attention_sm90", "attention_sm90_ptx", "attention_sm90_kernel", "attention_sm90_consumer",
                        "attention_sm90_tail", "attention_sm90_launch")]
CUTLASS_INCLUDE = pathlib.Path(os.environ.get("CUTLASS_INCLUDE", ROOT / ".deps/cutlass/include"))


@dataclasses.dataclass(frozen=True)
class Sm90:
    """One configuration of the attention_sm90 template (its placeholders)."""

    io: str            # bf16 | f16: Q/K/V/O element; tf32 (with inp f32): fp32 operands, V transposed
    d: int             # head dim
    mask: str          # nomask | causal
    bn: int            # keys per step (BLOCK_N)
    stages: int = 2    # K/V pipeline depth
    wg: int = 2        # consumer warpgroups; BLOCK_M = 64 * wg
    overlap: int = 1   # next block's Q.K^T issued before this block's softmax
    pingpong: int = 0  # the two consumer warpgroups take turns on the tensor cores
    mb: int = 1        # CTAs per SM the launch bounds ask for
    persistent: int = 0  # a grid of SMs x mb CTAs looping over the tiles
    epilogue: int = 0  # 0 registers -> global; 1 own shared tile + TMA store; 2 through Q's tile
    l2hint: int = 0    # TMA loads: K/V evict-last, Q evict-first
    lazy: int = 0      # O rescaled only when a row's max grows by more than 2^8
    chain: int = 0     # the next tile's first Q.K^T issued with this tile's last P.V (2 Q buffers)
    cluster: int = 1   # 2: pairs of CTAs multicast K/V (no mask)
    preg: int = 24     # registers the producer warpgroup keeps (setmaxnreg)
    inp: str = ""      # f32: fp32 Q/K/V/O, each tile rounded to io in shared memory ("" = io)
    srows: int = 32    # f32: rows of a staging sub-tile
    slots: int = 4     # f32: at most this many staging slots (as many as fit)
    qreg: int = 0      # tf32: Q in registers (Q K^T from registers)
    prefetch: int = 0  # K/V blocks (and the next tile's Q) prefetched this many ahead into L2
    kahead: int = 1    # tf32, 2+ stages: K loaded 1 key block ahead of V's transposition, or 0
    lw: int = 0        # tf32: one producer warp issues the loads, three transpose
    split: int = 0     # no mask, persistent: a last round that leaves most of the grid idle split over its keys
    bt: int = 0        # causal, persistent: the last two rounds dealt longest first to the least-loaded CTA

    @property
    def bm(self) -> int:
        return 64 * self.wg

    @property
    def name(self) -> str:
        return (f"fact_attn_sm90_{self.io}{'_' + self.inp if self.inp else ''}_d{self.d}_{self.mask}_{self.bm}x{self.bn}_s{self.stages}"
                f"_wg{self.wg}{'_ov' if self.overlap else ''}{'_pp' if self.pingpong else ''}_mb{self.mb}"
                f"{'_persist' if self.persistent else ''}{f'_e{self.epilogue}' if self.epilogue else ''}"
                f"{'_l2' if self.l2hint else ''}{'_lazy' if self.lazy else ''}{'_chain' if self.chain else ''}{'_c2' if self.cluster == 2 else ''}"
                f"{'_qr' if self.qreg else ''}{f'_pf{self.prefetch}' if self.prefetch else ''}{'_ka0' if not self.kahead else ''}{'_lw' if self.lw else ''}{'_st' if self.split else ''}{'_bt' if self.bt else ''}"
                f"{f'_r{self.preg}' if self.preg != 24 else ''}"
                f"{f'_sr{self.srows}' if self.srows != 32 else ''}{f'_sl{self.slots}' if self.slots != 4 else ''}")


def render_sm90(c: Sm90) -> tuple[str, str]:
    text = "".join(part.read_text() for part in TEMPLATE_SM90_PARTS)
    subs = {"NAME": c.name, "ABI": ABI.read_text(), "ELEMENT": ELEMENTS[c.io], "INPUT": ELEMENTS[c.inp or c.io],
            "HEAD_DIM": str(c.d),
            "MASK": str(MASKS[c.mask]), "BLOCK_M": str(c.bm), "BLOCK_N": str(c.bn),
            "STAGES": str(c.stages), "CONSUMER_WG": str(c.wg), "OVERLAP": str(c.overlap),
            "PINGPONG": str(c.pingpong), "MIN_BLOCKS": str(c.mb), "PERSISTENT": str(c.persistent),
            "EPILOGUE": str(c.epilogue), "L2HINT": str(c.l2hint),
            "LAZY_RESCALE": str(c.lazy), "CHAIN": str(c.chain),
            "CLUSTER": str(c.cluster), "PRODUCER_REGS": str(c.preg), "STAGE_ROWS": str(c.srows),
            "STAGING_MAX": str(c.slots), "QREG": str(c.qreg),
            "PREFETCH": str(c.prefetch), "K_AHEAD": str(c.kahead), "LOAD_WARP": str(c.lw),
            "SPLIT_TAIL": str(c.split), "BALANCE_TAIL": str(c.bt)}
    for k, v in subs.items():
        text = text.replace("{{" + k + "}}", v)
    if "{{" in text:
        raise RuntimeError(f"{c.name}: unfilled placeholder")
    return c.name, text


def cfg_name(cfg) -> str:
    return cfg.name if isinstance(cfg, Sm90) else kernel_name(*cfg)


def sm90_configs() -> list:
    """The sm90 variants measured, and the sm80 kernels (bf16 model) they are compared with.
    Earlier runs (perf-notes v10a-v10g) also measured the sequential and overlap-only
    variants, 128x64, one consumer warpgroup (also at 2 CTAs per SM), non-persistent grids,
    3 stages, 128x192, the register and Q-tile epilogues, L2 hints, an n128 last block and
    clusters of two; each lost to (or tied with) the persistent overlap + pingpong with its
    own shared-memory epilogue and lazy rescaling (chaining for minGPT)."""
    pp = dict(wg=2, overlap=1, pingpong=1, persistent=1, epilogue=1, lazy=1)
    out = [Sm90("bf16", 128, "nomask", 128, **pp), Sm90("bf16", 128, "nomask", 160, **pp),
           Sm90("bf16", 128, "nomask", 128, **{**pp, "lazy": 0}), ("bf16", "bf16", 128, "nomask", 128, 64, 1),
           Sm90("bf16", 128, "causal", 128, **pp), Sm90("bf16", 128, "causal", 128, chain=1, **pp),
           ("bf16", "bf16", 128, "causal", 128, 64, 1),
           Sm90("bf16", 96, "causal", 128, chain=1, **pp), Sm90("bf16", 96, "causal", 128, **pp),
           ("bf16", "bf16", 96, "causal", 64, 32, 2)]
    for d, mask in ((128, "additive"), (128, "keep"), (96, "drop")):
        out += [Sm90("bf16", d, mask, 128, **pp), Sm90("bf16", d, mask, 128, **{**pp, "lazy": 0}),
                ("bf16", "bf16", d, mask, 128, 64, 1) if d == 128 else ("bf16", "bf16", d, mask, 64, 32, 2)]
    # fp32 inputs under bf16: the converting producer (epilogue 0: O leaves in fp32 from
    # registers), with 56 or 40 producer registers, against the sm80 kernels the blocks chose
    # (perf-notes v14 also measured 8 staging slots, 64-row sub-tiles, 64-key tiles, 1 stage,
    # 64 and 72 producer registers and per-warp slot release).
    cv = dict(inp="f32", wg=2, overlap=1, pingpong=1, persistent=1, epilogue=0, lazy=1)
    out += [Sm90("bf16", 96, "causal", 128, chain=1, preg=56, **cv), Sm90("bf16", 96, "causal", 128, preg=56, **cv),
            Sm90("bf16", 96, "causal", 128, chain=1, preg=40, **cv), ("bf16", "f32", 96, "causal", 128, 32, 1),
            Sm90("bf16", 128, "nomask", 128, preg=56, **cv), Sm90("bf16", 128, "nomask", 128, chain=1, preg=56, **cv),
            ("bf16", "f32", 128, "nomask", 128, 64, 1)]
    # fp32 inputs under tf32: Q and K as they are, V transposed by the producer (v16), against
    # the sm80 tf32 kernels the blocks chose.
    tf = dict(inp="f32", wg=2, overlap=1, pingpong=1, persistent=1, epilogue=0, preg=64)
    out += [Sm90("tf32", 128, "nomask", 64, lazy=1, **tf), Sm90("tf32", 128, "nomask", 64, **tf),
            Sm90("tf32", 128, "causal", 64, lazy=1, **tf), Sm90("tf32", 128, "causal", 64, **tf),
            ("tf32", "f32", 128, "nomask", 64, 64, 1), ("tf32", "f32", 128, "causal", 64, 64, 1),
            Sm90("tf32", 96, "causal", 96, lazy=1, **tf), Sm90("tf32", 96, "causal", 96, **tf),
            Sm90("tf32", 96, "causal", 64, lazy=1, **tf), Sm90("tf32", 96, "causal", 64, **tf),
            Sm90("tf32", 96, "causal", 64, lazy=1, chain=1, **tf), Sm90("tf32", 96, "causal", 64, chain=1, **tf),
            ("tf32", "f32", 96, "causal", 64, 64, 2), ("tf32", "f32", 96, "causal", 64, 32, 1),
            # 128 keys with one K/V stage (the only 128-key tile that fits at head dim 96)
            Sm90("tf32", 96, "causal", 128, stages=1, **tf), Sm90("tf32", 96, "causal", 128, stages=1, chain=1, **tf),
            # Q in registers (not yet in the tuning space)
            Sm90("tf32", 96, "causal", 64, qreg=1, **tf), Sm90("tf32", 96, "causal", 64, chain=1, qreg=1, **tf),
            Sm90("tf32", 128, "causal", 64, qreg=1, **tf), Sm90("tf32", 128, "nomask", 64, qreg=1, **tf),
            # O through shared memory and a TMA store: its own tile (not chained: two Q tiles and
            # the O tile do not fit at head dim 96), or Q's tile with chaining
            Sm90("tf32", 96, "causal", 64, **{**tf, "epilogue": 1}),
            Sm90("tf32", 96, "causal", 64, lazy=1, **{**tf, "epilogue": 1}),
            Sm90("tf32", 96, "causal", 64, chain=1, **{**tf, "epilogue": 2}),
            Sm90("tf32", 96, "causal", 64, lazy=1, chain=1, **{**tf, "epilogue": 2})]
    # 16-bit: 176 keys per step (FlashAttention-3's tile for head dim 128 without a mask; its
    # own O tile does not fit beside two 176-key stages), and chaining through Q's tile
    out += [Sm90("bf16", 128, "nomask", 176, **{**pp, "epilogue": 2}),
            Sm90("bf16", 128, "nomask", 176, **{**pp, "epilogue": 2, "lazy": 0}),
            Sm90("bf16", 96, "causal", 128, chain=1, **{**pp, "epilogue": 2}),
            Sm90("bf16", 128, "causal", 128, chain=1, **{**pp, "epilogue": 2})]
    # L2 prefetch of the K/V blocks 2 (or 4) loads ahead and of the next tile's Q
    out += [Sm90("tf32", 96, "causal", 64, prefetch=2, **{**tf, "epilogue": 1}),
            Sm90("tf32", 96, "causal", 64, prefetch=4, **{**tf, "epilogue": 1}),
            Sm90("tf32", 96, "causal", 64, lazy=1, chain=1, prefetch=2, **tf),
            Sm90("tf32", 128, "nomask", 64, prefetch=2, **tf), Sm90("tf32", 128, "causal", 64, prefetch=2, **tf),
            Sm90("bf16", 128, "nomask", 128, prefetch=2, **pp), Sm90("bf16", 128, "nomask", 160, prefetch=2, **pp),
            Sm90("bf16", 96, "causal", 128, chain=1, prefetch=2, **pp), Sm90("bf16", 128, "causal", 128, prefetch=2, **pp)]
    # tf32: K at the start of each block's transposition (v16's order) against one block ahead
    # (v17; perf-notes v17e: the head-dim-128 kernels 2-6 % slower since)
    out += [Sm90("tf32", 128, "nomask", 64, kahead=0, **tf), Sm90("tf32", 128, "causal", 64, kahead=0, **tf),
            Sm90("tf32", 96, "causal", 64, kahead=0, **{**tf, "epilogue": 1}),
            Sm90("tf32", 96, "causal", 64, lazy=1, chain=1, kahead=0, **tf)]
    # tf32: one producer warp for the loads, three transposing (perf-notes v17: the loads and
    # the transposition serialize in one warpgroup), K one block ahead and not; 104 producer
    # registers (at 64 ptxas spills 124-244 B; the consumers keep 200)
    lw = {**tf, "preg": 104}
    out += [Sm90("tf32", d, mask, 64, lw=1, kahead=ka, **{**lw, "epilogue": 1 if d == 96 else 0})
            for d, mask in ((96, "causal"), (128, "causal"), (128, "nomask")) for ka in (1, 0)]
    out += [Sm90("tf32", 96, "causal", 64, lazy=1, chain=1, lw=1, **lw)]
    # v18b, minGPT's core: the load warp with K at its block's start (v18's fastest) combined
    # with chaining, lazy rescaling, Q in registers, and fewer producer registers
    lw0 = {**lw, "kahead": 0, "lw": 1}
    out += [Sm90("tf32", 96, "causal", 64, lazy=1, chain=1, **lw0), Sm90("tf32", 96, "causal", 64, chain=1, **lw0),
            Sm90("tf32", 96, "causal", 64, lazy=1, **{**lw0, "epilogue": 1}),
            Sm90("tf32", 96, "causal", 64, qreg=1, **{**lw0, "epilogue": 1}),
            Sm90("tf32", 96, "causal", 64, **{**lw0, "epilogue": 1, "preg": 96}),
            Sm90("tf32", 96, "causal", 64, **{**lw0, "epilogue": 1, "preg": 88})]
    # v18c: the load warp with O from registers, so that 4 (or 6) staging slots fit beside
    # the tiles (epilogue 1 leaves 2), eager and lazy; 96-key tiles; three K/V stages
    out += [Sm90("tf32", 96, "causal", 64, **lw0), Sm90("tf32", 96, "causal", 64, slots=6, **lw0),
            Sm90("tf32", 96, "causal", 64, lazy=1, **lw0), Sm90("tf32", 96, "causal", 96, **lw0),
            Sm90("tf32", 96, "causal", 64, stages=3, **lw0)]
    # v20: the unmasked tail round split over its keys (v19's windowed causal order, measured
    # 20-45 % slower, is gone from the template)
    out += [Sm90("bf16", 128, "nomask", 128, split=1, **pp), Sm90("tf32", 128, "nomask", 64, split=1, **tf),
            Sm90("bf16", 128, "nomask", 128, split=1, preg=56, **cv)]
    # v21: the causal kernels' last two rounds dealt longest first (the four causal results rows)
    out += [Sm90("bf16", 128, "causal", 128, chain=1, bt=1, **pp), Sm90("bf16", 96, "causal", 128, chain=1, bt=1, **pp),
            Sm90("tf32", 128, "causal", 64, bt=1, **tf), Sm90("tf32", 96, "causal", 64, bt=1, **{**lw0, "epilogue": 1})]
    # v22, minGPT's core at tf32 with the balanced tail: without pingpong, chained (eager and lazy),
    # O from registers, and 112 producer registers (the balanced tail's 4 B of producer spills)
    bt0 = {**lw0, "bt": 1}
    out += [Sm90("tf32", 96, "causal", 64, **{**bt0, "epilogue": 1, "pingpong": 0}),
            Sm90("tf32", 96, "causal", 64, chain=1, **bt0), Sm90("tf32", 96, "causal", 64, lazy=1, chain=1, **bt0),
            Sm90("tf32", 96, "causal", 64, **bt0), Sm90("tf32", 96, "causal", 64, **{**bt0, "epilogue": 1, "preg": 112}),
            # and the head-dim-128 tf32 kernels at 72 producer registers (at 64 the tails spill 14 B)
            Sm90("tf32", 128, "causal", 64, bt=1, **{**tf, "preg": 72}),
            Sm90("tf32", 128, "nomask", 64, split=1, **{**tf, "preg": 72})]
    # v22c: O from registers at 112 and 120 producer registers (and 6 staging slots); the
    # head-dim-128 tails at 80 and 88
    out += [Sm90("tf32", 96, "causal", 64, **{**bt0, "preg": 112}), Sm90("tf32", 96, "causal", 64, **{**bt0, "preg": 120}),
            Sm90("tf32", 96, "causal", 64, slots=6, **{**bt0, "preg": 112})]
    out += [Sm90("tf32", 128, mask, 64, bt=int(mask == "causal"), split=int(mask == "nomask"), **{**tf, "preg": r})
            for mask in ("causal", "nomask") for r in (80, 88)]
    # v22d: the load warp with O from registers at head dim 128 (the space's first on HF causal)
    # and 64 (128 keys: sdpa_attention's)
    out += [Sm90("tf32", 128, "causal", 64, **{**bt0, "preg": 120}), Sm90("tf32", 128, "nomask", 64, **{**lw0, "preg": 120}),
            Sm90("tf32", 64, "causal", 128, **{**bt0, "preg": 120}), Sm90("tf32", 64, "causal", 128, **{**bt0, "epilogue": 1}),
            Sm90("tf32", 128, "nomask", 64, split=1, **{**lw0, "preg": 120})]
    # v22f: 128 and 136 producer registers (the consumers 184 in both)
    out += [Sm90("tf32", 96, "causal", 64, **{**bt0, "preg": r}) for r in (128, 136)]
    out += [Sm90("tf32", 128, "causal", 64, **{**bt0, "preg": r}) for r in (128, 136)]
    out.append(Sm90("f16", 64, "causal", 128, stages=2, wg=2, overlap=1, pingpong=1))  # compile check only
    if os.environ.get("FACT_ATTN_EXTRA"):  # clusters of two (v10g), persistent and not
        out += [Sm90("bf16", 128, "nomask", 128, cluster=2, preg=40, **pp),
                Sm90("bf16", 128, "nomask", 128, cluster=2, preg=40, **{**pp, "persistent": 0}),
                Sm90("bf16", 128, "nomask", 128, **{**pp, "persistent": 0})]
    return out


def cfg_matches(cfg, d: int, mask: str, f32in: bool = False, tf32: bool = False) -> bool:
    math_ = "tf32" if tf32 else "bf16"
    f32 = f32in or tf32
    if isinstance(cfg, Sm90):
        return cfg.io == math_ and cfg.inp == ("f32" if f32 else "") and cfg.d == d and cfg.mask == mask
    return cfg[0] == math_ and cfg[1] == ("f32" if f32 else "bf16") and cfg[2] == d and cfg[3] == mask
