"""Kernel-level check of the fused-attention templates (src/families/attention/templates/attention_sm80*.cu.in
and, with --sm90, the attention_sm90*.cu.in parts).

Renders a few configurations, compiles each into a shared library with nvcc, then (on a GPU)
verifies each against a float64 PyTorch reference on fresh random inputs laid out as the
problem says (minGPT: q/k/v are strided views of one [B, T, 3C] tensor; the output is the
merged [B, T, C] layout), and times it against eager attention written by hand, SDPA and
torch.compile of the hand-written form, alternating, with an L2 flush before each trial.

    python bench/attention_check.py --build-only            # compile (any machine with nvcc)
    python bench/attention_check.py --out results.json      # compile, verify and time (GPU)
    python bench/attention_check.py --sm90 --out r.json     # the sm90 kernels on the three bf16
                                                            # problems of bench/results/attention-kernels-h200

This exercises the kernel alone; ``factc realize`` is what tunes and chooses kernels.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import ctypes
import dataclasses
import json
import math
import os
import pathlib
import subprocess
import sys
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from fact.families.attention import FactAttentionArgs  # noqa: E402  (the ABI's one Python mirror)
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
                        "attention_sm90_launch")]
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

    @property
    def bm(self) -> int:
        return 64 * self.wg

    @property
    def name(self) -> str:
        return (f"fact_attn_sm90_{self.io}{'_' + self.inp if self.inp else ''}_d{self.d}_{self.mask}_{self.bm}x{self.bn}_s{self.stages}"
                f"_wg{self.wg}{'_ov' if self.overlap else ''}{'_pp' if self.pingpong else ''}_mb{self.mb}"
                f"{'_persist' if self.persistent else ''}{f'_e{self.epilogue}' if self.epilogue else ''}"
                f"{'_l2' if self.l2hint else ''}{'_lazy' if self.lazy else ''}{'_chain' if self.chain else ''}{'_c2' if self.cluster == 2 else ''}"
                f"{'_qr' if self.qreg else ''}"
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
            "STAGING_MAX": str(c.slots), "QREG": str(c.qreg)}
    for k, v in subs.items():
        text = text.replace("{{" + k + "}}", v)
    if "{{" in text:
        raise RuntimeError(f"{c.name}: unfilled placeholder")
    return c.name, text


def cfg_name(cfg) -> str:
    return cfg.name if isinstance(cfg, Sm90) else kernel_name(*cfg)


#: The three bf16 problems of issue 15 (bench/results/attention-kernels-h200.json):
#: name -> (B, Hq, Hkv, T, D, mask, layout). Layout "bthd": q, k, v each [B, T, H, D]
#: transposed to [B, H, T, D] (Llama's projections); "qkv": strided views of one
#: [B, T, 3C] tensor (minGPT). The output is the merged [B, T, H, D] layout in both.
PROBLEMS = {
    "llama3_8b_block_attention": (16, 32, 8, 2048, 128, "nomask", "bthd"),
    "hf_llama_causal_attention": (4, 32, 8, 2048, 128, "causal", "bthd"),
    "mingpt_attention_core": (128, 8, 8, 512, 96, "causal", "qkv"),
}
#: The tensor masks, on smaller shapes: an additive [1, 1, T, T] mask with a row of -inf
#: (NaN, as eager) and a row of finfo.min (finite: eager averages it uniformly); keep and
#: drop masks [B, 1, T, T] with a row that removes every key.
MASK_PROBLEMS = {
    "gqa_additive_mask": (2, 32, 8, 1024, 128, "additive", "bthd"),
    "gqa_keep_mask": (2, 32, 8, 1024, 128, "keep", "bthd"),
    "mingpt_drop_mask": (16, 8, 8, 512, 96, "drop", "qkv"),
}
#: fp32 inputs under the bf16 policy (the model kept in fp32, `--precision bf16`): the same
#: shapes, each tile rounded to bf16 by the kernel; the baselines run under autocast(bf16).
F32IN_PROBLEMS = {"mingpt_attention_core_f32in": PROBLEMS["mingpt_attention_core"],
                  "llama3_8b_block_attention_f32in": PROBLEMS["llama3_8b_block_attention"]}
#: fp32 inputs under the tf32 policy: the same shapes in tf32 math (the sm90 kernel's
#: transposing producer; the baselines with TF32 allowed).
TF32_PROBLEMS = {f"{n}_tf32": PROBLEMS[n] for n in PROBLEMS}
ALL_PROBLEMS = {**PROBLEMS, **MASK_PROBLEMS, **F32IN_PROBLEMS, **TF32_PROBLEMS}


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--work", default="build/attention_check")
    ap.add_argument("--out", default="")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only", default="", help="comma-separated substrings of kernel names to keep")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--sm90", action="store_true",
                    help="the sm90 template on the three problems of PROBLEMS, with sm80 kernels alongside")
    ap.add_argument("--problems", default=",".join(ALL_PROBLEMS), help="--sm90: comma-separated problem names")
    ap.add_argument("--compile", action="store_true",
                    help="--sm90: time torch.compile (default mode) of the hand-written form too, on PROBLEMS")
    ap.add_argument("--results", default="", help="--sm90: also write this BENCH-format JSON (+ .md)")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    nvcc = os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc")
    work = ROOT / opts.work
    work.mkdir(parents=True, exist_ok=True)

    # (math, io, D, mask, BM, BN, min blocks)
    configs = [("tf32", "f32", 96, "causal", 64, 64, 2), ("tf32", "f32", 96, "causal", 64, 32, 2),
               ("tf32", "f32", 96, "causal", 64, 64, 3), ("tf32", "f32", 96, "causal", 64, 32, 3),
               ("tf32", "f32", 96, "causal", 128, 64, 1), ("tf32", "f32", 96, "causal", 128, 32, 1),
               ("bf16", "f32", 96, "causal", 64, 64, 2), ("bf16", "f32", 96, "causal", 64, 32, 2),
               ("bf16", "f32", 96, "causal", 64, 32, 3), ("bf16", "f32", 96, "causal", 128, 32, 1),
               ("tf32", "f32", 64, "nomask", 64, 64, 2), ("tf32", "f32", 64, "nomask", 64, 64, 3),
               ("tf32", "f32", 128, "causal", 64, 64, 1), ("tf32", "f32", 128, "causal", 64, 32, 2),
               ("bf16", "f32", 128, "causal", 128, 64, 1), ("bf16", "f32", 128, "causal", 64, 32, 2),
               ("tf32", "f32", 64, "additive", 64, 64, 2), ("tf32", "f32", 64, "drop", 64, 64, 2),
               ("bf16", "bf16", 64, "causal", 128, 64, 1), ("f16", "f16", 128, "keep", 64, 64, 2),
               ("3xtf32", "f32", 96, "causal", 64, 64, 2), ("3xtf32", "f32", 96, "causal", 64, 32, 2),
               ("3xtf32", "f32", 128, "causal", 64, 32, 1), ("3xtf32", "f32", 64, "nomask", 64, 64, 2)]
    if opts.sm90:
        configs = sm90_configs()
    if opts.only:
        keys = opts.only.split(",")
        configs = [c for c in configs if any(k in cfg_name(c) for k in keys)]
    if opts.child:  # one problem's first run of each kernel, in its own process (see run_sm90)
        return sm90_child(configs, work, opts)
    built = {}
    with cf.ThreadPoolExecutor(max_workers=opts.jobs) as ex:
        futs = {ex.submit(build, c, work, nvcc): c for c in configs}
        for f in cf.as_completed(futs):
            c = futs[f]
            try:
                name, lib, secs, log = f.result()
                regs = [l.strip() for l in log.splitlines() if "registers" in l or "spill" in l]
                warns = [l.strip()[:160] for l in log.splitlines() if "warning" in l.lower() or "(C75" in l]
                print(f"built {name} in {secs:.1f} s; {' | '.join(regs[-2:])}"
                      + (f"; WARNINGS: {' | '.join(warns)}" if warns else ""), flush=True)
                built[c] = lib
            except Exception as e:  # report every failure, keep going
                print(f"FAILED {c}: {e}", flush=True)
    if opts.build_only:
        return 0 if len(built) == len(configs) else 1
    if opts.sm90:
        return run_sm90(configs, built, opts)
    return run_gpu(configs, built, opts)


def run_gpu(configs, built, opts) -> int:
    import torch
    import torch.nn.functional as F

    from fact.bench import time_variants

    torch.manual_seed(0)
    dev = "cuda"
    rows = []

    def problem(cfg):
        math_, io, d, mask, bm, bn, mb = cfg
        if d == 96:
            B, H, T = 128, 8, 512
        elif d == 128:
            B, H, T = 4, 32, 2048
        else:
            B, H, T = 16, 16, 1024
        return B, H, T, d

    ok_all = True
    baselined = set()
    for cfg in configs:
        if cfg not in built:
            ok_all = False
            continue
        math_, io, d, mask, bm, bn, mb = cfg
        name = kernel_name(*cfg)
        lib = ctypes.CDLL(str(built[cfg]))
        run = getattr(lib, f"{name}_run")
        run.argtypes = [ctypes.POINTER(FactAttentionArgs), ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        can = getattr(lib, f"{name}_can_implement")
        can.argtypes = [ctypes.POINTER(FactAttentionArgs)]
        B, H, T, D = problem(cfg)
        HK = 8 if D == 128 else H  # head dim 128: grouped-query attention, 4 query heads per KV head
        C = H * D
        dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[io]
        qkv = torch.randn(B, T, C + 2 * HK * D, device=dev, dtype=torch.float32).to(dt)
        q, k, v = qkv.split([C, HK * D, HK * D], dim=2)
        q = q.view(B, T, H, D).transpose(1, 2)
        k = k.view(B, T, HK, D).transpose(1, 2)
        v = v.view(B, T, HK, D).transpose(1, 2)
        scale = 1.0 / math.sqrt(D) * (0.7 if mask == "additive" else 1.0)
        m_t = None
        if mask == "additive":
            m_t = torch.randn(1, 1, T, T, device=dev, dtype=dt) * 2
            m_t[..., 5, :] = float("-inf")  # every key removed: NaN, as eager
            m_t[..., 6, :] = torch.finfo(dt).min  # finite: eager averages the row uniformly
        elif mask in ("keep", "drop"):
            m_t = (torch.rand(B, 1, T, T, device=dev) > 0.3).to(torch.uint8)
            m_t[:, :, 7, :] = 1 if mask == "drop" else 0  # a row with every key removed
        out = torch.full((B, T, H, D), float("nan"), device=dev, dtype=dt)
        o = out.transpose(1, 2)  # [B, H, T, D] view of the merged layout

        def args_for(mask_t):
            a = FactAttentionArgs(batch=B, heads=H, kv_heads=HK, seq_q=T, seq_k=T, head_dim=D,
                     q=q.data_ptr(), q_batch_stride=q.stride(0), q_head_stride=q.stride(1), q_row_stride=q.stride(2),
                     k=k.data_ptr(), k_batch_stride=k.stride(0), k_head_stride=k.stride(1), k_row_stride=k.stride(2),
                     v=v.data_ptr(), v_batch_stride=v.stride(0), v_head_stride=v.stride(1), v_row_stride=v.stride(2),
                     o=o.data_ptr(), o_batch_stride=o.stride(0), o_head_stride=o.stride(1), o_row_stride=o.stride(2),
                     scale=scale)
            if mask_t is not None:
                a.mask = mask_t.data_ptr()
                a.mask_batch_stride = mask_t.stride(0) if mask_t.size(0) > 1 else 0
                a.mask_head_stride = mask_t.stride(1) if mask_t.size(1) > 1 else 0
                a.mask_row_stride = mask_t.stride(2)
            return a

        a = args_for(m_t)
        rc = can(ctypes.byref(a))
        stream = torch.cuda.current_stream().cuda_stream

        def fact():
            r = run(ctypes.byref(a), None, 0, stream)
            if r != 0:
                raise RuntimeError(f"{name}_run returned {r}")

        if rc != 0:
            print(f"{name}: can_implement {rc}")
            ok_all = False
            continue
        fact()
        torch.cuda.synchronize()

        # float64 reference on a sample of heads (b, h pairs), every element checked for writes
        def ref_att(qq, kk, vv, mm):
            kk = kk.repeat_interleave(H // HK, dim=1)
            vv = vv.repeat_interleave(H // HK, dim=1)
            s = (qq.double() @ kk.double().transpose(-2, -1)) * scale
            if mask == "causal":
                tri = torch.ones(T, T, device=dev, dtype=torch.bool).tril()
                s = s.masked_fill(~tri, float("-inf"))
            elif mask == "additive":
                s = s + mm.double()
            elif mask == "keep":
                s = s.masked_fill(mm == 0, float("-inf"))
            elif mask == "drop":
                s = s.masked_fill(mm != 0, float("-inf"))
            return torch.softmax(s, dim=-1) @ vv.double()

        bs = sorted({0, B - 1, B // 2})
        got = o[bs].double()
        mm = None if m_t is None else m_t[[min(x, m_t.size(0) - 1) for x in bs]]
        ref = ref_att(q[bs], k[bs], v[bs], mm)
        ref_nan = torch.isnan(ref)
        nan_match = bool(torch.equal(ref_nan, torch.isnan(got)))
        finite = ~ref_nan
        err = ((got - ref).abs()[finite].max() / ref.abs()[finite].max()).item()
        fro = (torch.linalg.norm((got - ref)[finite]) / torch.linalg.norm(ref[finite])).item()
        expect_nan_rows = mask in ("keep", "drop") or mask == "additive"
        all_written = (not torch.isnan(o).any().item()) if not expect_nan_rows else True
        tol = {"tf32": 5e-3, "3xtf32": 1e-5}.get(math_, 3e-2)
        ok = nan_match and err < tol and all_written and ref[finite].std().item() > 0
        eager_fp32_err = None
        if math_ == "3xtf32":  # fp32-accurate: compare with eager fp32 on the same inputs
            torch.backends.cuda.matmul.allow_tf32 = False
            kk = k[bs].repeat_interleave(H // HK, dim=1)
            vv = v[bs].repeat_interleave(H // HK, dim=1)
            att = (q[bs] @ kk.transpose(-2, -1)) * scale
            if mask == "causal":
                att = att.masked_fill(~torch.ones(T, T, device=dev, dtype=torch.bool).tril(), float("-inf"))
            e32 = (torch.softmax(att, dim=-1) @ vv).double()
            eager_fp32_err = ((e32 - ref).abs()[finite].max() / ref.abs()[finite].max()).item()
            del kk, vv, att, e32
        ok_all &= ok

        # Timing against eager (hand-written), SDPA and torch.compile, same policy.
        torch.backends.cuda.matmul.allow_tf32 = math_ == "tf32"
        ke = k.repeat_interleave(H // HK, dim=1) if HK != H else k
        ve = v.repeat_interleave(H // HK, dim=1) if HK != H else v

        def eager():
            att = (q @ ke.transpose(-2, -1)) * scale
            if mask == "causal":
                att = att.masked_fill(tri_mask == 0, float("-inf"))
            elif mask == "additive":
                att = att + m_t
            elif mask == "keep":
                att = att.masked_fill(m_t == 0, float("-inf"))
            elif mask == "drop":
                att = att.masked_fill(m_t != 0, float("-inf"))
            att = torch.softmax(att, dim=-1)
            return (att @ ve).transpose(1, 2).contiguous()
        tri_mask = torch.ones(1, 1, T, T, device=dev).tril()
        res = {"kernel": name, "B": B, "H": H, "T": T, "D": D, "mask": mask,
               "max_rel_err": err, "fro_rel_err": fro, "nan_match": nan_match,
               "all_written": all_written, "verified": ok, "eager_fp32_max_rel_err": eager_fp32_err}
        cand = {"fact": fact, "eager": eager}
        key = (B, H, T, D, mask)
        if mask in ("causal", "nomask") and io == "f32" and math_ == "tf32" and key not in baselined:
            baselined.add(key)  # SDPA and torch.compile once per problem (compiling costs ~30 s)
            cand["sdpa"] = lambda: F.scaled_dot_product_attention(q, ke, ve, is_causal=mask == "causal",
                                                                  scale=scale).transpose(1, 2).contiguous()
            cand["compile"] = torch.compile(eager)
        flops = 4 * B * H * T * T * D * (0.5 if mask == "causal" else 1.0)
        # The project's protocol (fact.bench): warm-up, L2 flush, alternating, median.
        for n, t in time_variants(cand, trials=opts.trials).items():
            res[f"{n}_ms"] = t.median_ms
            res[f"{n}_spread_ms"] = t.spread()
        res["fact_tflops"] = flops / res["fact_ms"] / 1e9
        rows.append(res)
        print(json.dumps(res), flush=True)
        del qkv, q, k, v, out, o, ke, ve, cand
        torch.cuda.empty_cache()

    print()
    print(f"{'kernel':52s} {'ok':3s} {'err':>8s} {'fact':>7s} {'TF/s':>6s} {'eager':>7s} {'sdpa':>7s} {'compile':>7s}")
    for r in rows:
        print(f"{r['kernel']:52s} {'y' if r['verified'] else 'N':3s} {r['max_rel_err']:8.1e} {r['fact_ms']:7.3f} "
              f"{r['fact_tflops']:6.0f} {r['eager_ms']:7.3f} {r.get('sdpa_ms', float('nan')):7.3f} "
              f"{r.get('compile_ms', float('nan')):7.3f}")
    if opts.out:
        pathlib.Path(opts.out).write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                                                      "rows": rows}, indent=1))
    return 0 if ok_all else 1


# ------------------------------------------------------------------ sm90 run: smoke, verify, time

def make_problem(pname: str, seed: int = 0, ramp: float = 0.0):
    """Fresh random bf16 inputs of one problem, the NaN-poisoned output and its [B, H, T, D] views.
    ``ramp`` > 0 scales key j by 1 + ramp * j / T, so that a row's max grows block after
    block (by far more than the kernels' lazy-rescale slack): the online softmax's rescaling
    path is exercised, which plain N(0, 1) logits rarely do after the first block."""
    import torch

    B, H, HK, T, D, mask, layout = ALL_PROBLEMS[pname]
    g = torch.Generator(device="cuda").manual_seed(seed)
    dt = torch.float32 if pname in F32IN_PROBLEMS or pname in TF32_PROBLEMS else torch.bfloat16
    if layout == "qkv":
        C = H * D
        qkv = torch.randn(B, T, 3 * C, device="cuda", generator=g).to(dt)
        q, k, v = (x.view(B, T, H, D).transpose(1, 2) for x in qkv.split(C, dim=2))
    else:
        q = torch.randn(B, T, H, D, device="cuda", generator=g).to(dt).transpose(1, 2)
        k = torch.randn(B, T, HK, D, device="cuda", generator=g).to(dt).transpose(1, 2)
        v = torch.randn(B, T, HK, D, device="cuda", generator=g).to(dt).transpose(1, 2)
    if ramp:
        k.mul_((1 + ramp * torch.arange(T, device="cuda") / T).to(dt).view(1, 1, T, 1))
        if dt == torch.float32:  # fp32 inputs: bf16 values, so that rounding them is exact and the
            for x in (q, k, v):  # error left is the rescaling path's (logits up to 21x: bf16's own
                x.copy_(x.bfloat16().float())  # rounding of them would exceed the bf16 tolerance)
    out = torch.full((B, T, H, D), float("nan"), device="cuda", dtype=dt)
    m = None
    if mask == "additive":
        m = (torch.randn(1, 1, T, T, device="cuda", generator=g) * 2).to(dt)
        m[..., 5, :] = float("-inf")  # every key removed: NaN, as eager
        m[..., 6, :] = torch.finfo(dt).min  # finite: eager averages the row uniformly
    elif mask in ("keep", "drop"):
        m = (torch.rand(B, 1, T, T, device="cuda", generator=g) > 0.3).to(torch.uint8)
        m[:, :, 7, :] = 1 if mask == "drop" else 0  # a row with every key removed
    return dict(B=B, H=H, HK=HK, T=T, D=D, mask=mask, q=q, k=k, v=v, out=out, o=out.transpose(1, 2),
                scale=1.0 / math.sqrt(D) * (0.7 if mask == "additive" else 1.0), m=m)


def reference64(P):
    """O in float64 over every (batch, head), in chunks of about 1 GiB of scores."""
    import torch

    B, H, HK, T = P["B"], P["H"], P["HK"], P["T"]
    ref = torch.empty(P["q"].shape, dtype=torch.float64, device="cuda")
    chunk = max(1, (1 << 30) // (H * T * T * 8))
    tri = torch.ones(T, T, device="cuda", dtype=torch.bool).tril()
    for b0 in range(0, B, chunk):
        sl = slice(b0, min(B, b0 + chunk))
        kk = P["k"][sl].double().repeat_interleave(H // HK, dim=1)
        vv = P["v"][sl].double().repeat_interleave(H // HK, dim=1)
        s = (P["q"][sl].double() @ kk.transpose(-2, -1)) * P["scale"]
        m = P.get("m")
        mm = None if m is None else m[sl] if m.size(0) > 1 else m
        if P["mask"] == "causal":
            s.masked_fill_(~tri, float("-inf"))
        elif P["mask"] == "additive":
            s += mm.double()
        elif P["mask"] == "keep":
            s.masked_fill_(mm == 0, float("-inf"))
        elif P["mask"] == "drop":
            s.masked_fill_(mm != 0, float("-inf"))
        ref[sl] = torch.softmax(s, dim=-1) @ vv
        del kk, vv, s
    return ref


def compare(got, ref) -> dict:
    import torch

    got = got.double()
    ref_nan = torch.isnan(ref)
    nan_match = bool(torch.equal(ref_nan, torch.isnan(got)))
    fin = ~ref_nan
    diff = (got - ref).abs()[fin]
    err = (diff.max() / ref.abs()[fin].max()).item()
    fro = (torch.linalg.norm((got - ref)[fin]) / torch.linalg.norm(ref[fin])).item()
    return {"max_rel_err": err, "fro_rel_err": fro, "nan_match": nan_match,
            "all_finite": bool(torch.isfinite(got).all().item()), "ref_std": ref[fin].std().item()}


def load_kernel(lib_path: pathlib.Path, name: str):
    lib = ctypes.CDLL(str(lib_path))
    run = getattr(lib, f"{name}_run")
    run.argtypes = [ctypes.POINTER(FactAttentionArgs), ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    can = getattr(lib, f"{name}_can_implement")
    can.argtypes = [ctypes.POINTER(FactAttentionArgs)]
    return lib, run, can


def attn_args(P) -> FactAttentionArgs:
    q, k, v, o = P["q"], P["k"], P["v"], P["o"]
    a = FactAttentionArgs(
        batch=P["B"], heads=P["H"], kv_heads=P["HK"], seq_q=P["T"], seq_k=P["T"], head_dim=P["D"],
        q=q.data_ptr(), q_batch_stride=q.stride(0), q_head_stride=q.stride(1), q_row_stride=q.stride(2),
        k=k.data_ptr(), k_batch_stride=k.stride(0), k_head_stride=k.stride(1), k_row_stride=k.stride(2),
        v=v.data_ptr(), v_batch_stride=v.stride(0), v_head_stride=v.stride(1), v_row_stride=v.stride(2),
        o=o.data_ptr(), o_batch_stride=o.stride(0), o_head_stride=o.stride(1), o_row_stride=o.stride(2),
        scale=P["scale"])
    m = P.get("m")
    if m is not None:
        a.mask = m.data_ptr()
        a.mask_batch_stride = m.stride(0) if m.size(0) > 1 else 0
        a.mask_head_stride = m.stride(1) if m.size(1) > 1 else 0
        a.mask_row_stride = m.stride(2)
    return a


TOL_BF16 = 3e-2  # the bf16 tolerance of run_gpu (max error over max |ref|)


def check_kernel(P, ref, lib_path, name) -> tuple[dict, Any]:
    """Poison the output, run the kernel once, check every element against float64."""
    import torch

    lib, run, can = load_kernel(lib_path, name)
    a = attn_args(P)
    rc = can(ctypes.byref(a))
    if rc != 0:
        return {"kernel": name, "verified": False, "can_implement": rc}, None
    P["out"].fill_(float("nan"))
    stream = torch.cuda.current_stream().cuda_stream
    r = run(ctypes.byref(a), None, 0, stream)
    torch.cuda.synchronize()  # raises on a launch or kernel error
    if r != 0:
        return {"kernel": name, "verified": False, "run_rc": r}, None
    res = {"kernel": name, **compare(P["o"], ref)}
    dead = P.get("m") is not None  # the mask problems have rows with every key removed
    res["verified"] = (res["nan_match"] and (res["all_finite"] or dead) and res["max_rel_err"] < TOL_BF16
                       and res["ref_std"] > 0)
    if dead:  # again with SDPA's convention: those rows 0, every element written and finite
        a.flags = 1
        P["out"].fill_(float("nan"))
        r = run(ctypes.byref(a), None, 0, stream)
        torch.cuda.synchronize()
        z = compare(P["o"], torch.nan_to_num(ref, nan=0.0))
        res["empty_zero_max_rel_err"] = z["max_rel_err"]
        res["verified"] = res["verified"] and r == 0 and z["all_finite"] and z["max_rel_err"] < TOL_BF16
        a.flags = 0

    def fact():
        rr = run(ctypes.byref(a), None, 0, stream)
        if rr != 0:
            raise RuntimeError(f"{name}_run returned {rr}")

    return res, (fact, lib, a)


def sm90_child(configs, work, opts) -> int:
    """First run of each kernel on one problem, each result printed as it comes: a kernel
    that hangs or faults takes this process with it, not the measuring one."""
    import torch

    P = make_problem(opts.child)
    ref = reference64(P)
    torch.cuda.synchronize()
    for cfg in configs:
        name = cfg_name(cfg)
        print(json.dumps({"start": name}), flush=True)
        res, _ = check_kernel(P, ref, work / f"lib{name}.so", name)
        print(json.dumps({"done": name, "verified": res["verified"],
                          "max_rel_err": res.get("max_rel_err")}), flush=True)
    return 0


def smoke(pname, cfgs, work, opts, log) -> dict:
    """name -> None (ran) or the reason it did not (hang, fault), one child process per try."""
    left = list(cfgs)
    status = {}
    while left:
        cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--child", pname, "--work", opts.work,
               "--only", ",".join(cfg_name(c) for c in left)]
        if opts.sm90:
            cmd.append("--sm90")
        t0 = time.time()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            outp, rc = r.stdout, r.returncode
            err_tail = r.stderr[-2000:]
        except subprocess.TimeoutExpired as e:
            outp = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            rc, err_tail = "timeout", ""
        log.write(f"child {pname} rc={rc} {time.time() - t0:.1f}s\n{outp}\n{err_tail}\n")
        started = None
        for line in outp.splitlines():
            try:
                m = json.loads(line)
            except ValueError:
                continue
            if "start" in m:
                started = m["start"]
            elif "done" in m:
                status[m["done"]] = None
                started = None
        if started is not None:
            status[started] = f"hang or fault on first run (child rc {rc})"
            print(f"  {started}: {status[started]}", flush=True)
        elif rc != 0:
            for c in left:  # the child died before its first kernel
                status.setdefault(cfg_name(c), f"child failed (rc {rc}): {err_tail[-300:]}")
        left = [c for c in left if cfg_name(c) not in status]
    return status


def run_sm90(configs, built, opts) -> int:
    import torch
    import torch.nn.functional as F

    from fact.bench import time_variants

    work = ROOT / opts.work
    log = open(work / "sm90_children.log", "w")
    rows, ok_all = [], True
    for pname in opts.problems.split(","):
        B, H, HK, T, D, mask, layout = ALL_PROBLEMS[pname]
        f32in, tf32 = pname in F32IN_PROBLEMS, pname in TF32_PROBLEMS
        cfgs = [c for c in configs if c in built and cfg_matches(c, D, mask, f32in, tf32)]
        if not cfgs:
            continue
        st = smoke(pname, cfgs, work, opts, log)
        # Growing logits first (a second verification of every kernel), then the timed inputs.
        Ps = make_problem(pname, seed=1, ramp=20.0)
        refs = reference64(Ps)
        stress = {}
        for c in cfgs:
            name = cfg_name(c)
            if not st.get(name):
                stress[name] = check_kernel(Ps, refs, built[c], name)[0]
        del Ps, refs
        P = make_problem(pname)
        ref = reference64(P)
        q, k, v = P["q"], P["k"], P["v"]
        scale, causal = P["scale"], mask == "causal"
        ke = k.repeat_interleave(H // HK, dim=1) if HK != H else k
        ve = v.repeat_interleave(H // HK, dim=1) if HK != H else v
        # SDPA's own error on the same inputs, for scale
        m_t = P.get("m")
        sd_mask = None if m_t is None else (m_t if mask == "additive" else (m_t != 0) if mask == "keep" else (m_t == 0))
        torch.backends.cuda.matmul.allow_tf32 = tf32  # the tf32 policy's baselines: TF32 allowed
        torch.backends.cudnn.allow_tf32 = tf32

        def policy():  # fp32 inputs: the baselines under autocast(bf16), as eager runs the bf16 policy
            return torch.autocast("cuda", dtype=torch.bfloat16, enabled=f32in)

        with policy():
            sd = F.scaled_dot_product_attention(q, ke, ve, attn_mask=sd_mask, is_causal=causal, scale=scale)
        sdpa_err = compare(sd, ref)["max_rel_err"]
        del sd
        cand, results, keep = {}, [], []
        for c in cfgs:
            name = cfg_name(c)
            if st.get(name):
                res = {"kernel": name, "verified": False, "failure": st[name]}
            else:
                res, handle = check_kernel(P, ref, built[c], name)
                sr = stress[name]
                res["ramp_max_rel_err"] = sr.get("max_rel_err")
                res["ramp_verified"] = sr["verified"]
                res["verified"] = res["verified"] and sr["verified"]
                if res["verified"]:
                    cand[name] = handle[0]
                    keep.append(handle)
            res.update(problem=pname, family="sm90" if isinstance(c, Sm90) else "sm80",
                       B=B, H=H, HK=HK, T=T, D=D, mask=mask, sdpa_max_rel_err=sdpa_err)
            ok_all &= res["verified"] or not isinstance(c, Sm90)
            print(json.dumps(res), flush=True)
            results.append(res)
        tri = torch.ones(T, T, device="cuda", dtype=torch.bool).tril()

        def eager():
            with policy():
                att = (q @ ke.transpose(-2, -1)) * scale
                if causal:
                    att = att.masked_fill(~tri, float("-inf"))
                elif sd_mask is not None:
                    att = att + sd_mask if mask == "additive" else att.masked_fill(~sd_mask, float("-inf"))
                return (torch.softmax(att, dim=-1) @ ve).transpose(1, 2).contiguous()

        def sdpa():
            with policy():
                return F.scaled_dot_product_attention(q, ke, ve, attn_mask=sd_mask, is_causal=causal,
                                                      scale=scale).transpose(1, 2).contiguous()

        def sdpa_gqa():
            with policy():
                return F.scaled_dot_product_attention(q, k, v, attn_mask=sd_mask, is_causal=causal, scale=scale,
                                                      enable_gqa=HK != H).transpose(1, 2).contiguous()

        cand["sdpa"], cand["sdpa_gqa"] = sdpa, sdpa_gqa
        cand["eager"] = eager
        if opts.compile and (pname in PROBLEMS or tf32):  # the rows of the results file
            cand["inductor"] = torch.compile(eager)
        times = time_variants(cand, trials=opts.trials)
        flops = 4 * B * H * T * T * D * (0.5 if causal else 1.0)
        base = {n: times[n].median_ms for n in ("sdpa", "sdpa_gqa", "eager", "inductor") if n in times}
        for res in results:
            t = times.get(res["kernel"])
            if t is not None:
                res.update(fact_ms=t.median_ms, fact_spread_ms=t.spread(),
                           fact_tflops=flops / t.median_ms / 1e9)
            res["baselines_ms"] = base
            res["baselines_spread_ms"] = {n: times[n].spread() for n in base}
            rows.append(res)
        del P, ref, ke, ve, cand, keep
        torch.cuda.empty_cache()

    print()
    print(f"{'kernel':66s} {'ok':3s} {'err':>8s} {'ms':>7s} {'TF/s':>5s} {'sdpa':>7s} {'gqa':>7s} {'eager':>7s}")
    for r in rows:
        b = r["baselines_ms"]
        print(f"{r['kernel']:66s} {'y' if r['verified'] else 'N':3s} {r.get('max_rel_err', float('nan')):8.1e} "
              f"{r.get('fact_ms', float('nan')):7.3f} {r.get('fact_tflops', float('nan')):5.0f} "
              f"{b.get('sdpa', float('nan')):7.3f} {b.get('sdpa_gqa', float('nan')):7.3f} "
              f"{b.get('eager', float('nan')):7.3f}" + (f"  {r['failure']}" if "failure" in r else ""))
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    if opts.out:
        pathlib.Path(opts.out).write_text(json.dumps({**meta, "rows": rows}, indent=1))
    if opts.results:
        write_bench(rows, pathlib.Path(opts.results), opts)
    return 0 if ok_all else 1


def md_row(row) -> str:
    """One row of the rendered table, from a row of the BENCH-format JSON."""
    base = row["baselines_ms"]
    nan = float("nan")
    return (f"| {row['problem']} | {row['policy']} | {row['fact_ms']:.3f} | {base['sdpa']:.3f} | "
            f"{base['sdpa'] / row['fact_ms']:.2f}x | {row.get('sdpa_gqa_ms', nan):.3f} | "
            f"{row.get('fact_sm80_ms') or nan:.3f} | {base.get('inductor', nan):.3f} | {base.get('eager', nan):.3f} | "
            f"{row['max_rel_err']:.1e} ({row['sdpa_max_rel_err']:.1e}) | `{row['kernels'][0]}` |")


def write_bench(rows, path: pathlib.Path, opts) -> None:
    """/work/shared/BENCH.md's format: per problem the fastest verified sm90 kernel; the best
    sm80 kernel of the same run alongside (fact_sm80_ms)."""
    import torch

    def sh(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
        except Exception:
            return ""

    ver = (CUTLASS_INCLUDE / "cutlass/version.h").read_text() if (CUTLASS_INCLUDE / "cutlass/version.h").exists() else ""
    cut = ".".join(next((l.split()[-1] for l in ver.splitlines() if f"CUTLASS_{k}" in l and "#define" in l), "?")
                   for k in ("MAJOR", "MINOR", "PATCH"))
    out = {"command": os.environ.get("FACT_COMMAND", "python bench/attention_check.py " + " ".join(sys.argv[1:])),
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "machine": {"gpu": torch.cuda.get_device_name(),
                       "driver": sh(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]),
                       "torch": torch.__version__, "cuda": torch.version.cuda, "cutlass": cut,
                       "fact_commit": os.environ.get("FACT_COMMIT", "")},
           "rows": []}
    md = ["| problem | policy | FACT sm90 ms | SDPA ms | vs SDPA | SDPA `enable_gqa` ms | FACT sm80 ms | torch.compile ms "
          "| eager ms | max rel err (SDPA's) | kernel |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for pname in [*PROBLEMS, *TF32_PROBLEMS]:
        policy = "tf32" if pname in TF32_PROBLEMS else "bf16"
        mine = [r for r in rows if r["problem"] == pname]
        s90 = [r for r in mine if r["family"] == "sm90" and r["verified"] and "fact_ms" in r]
        s80 = [r for r in mine if r["family"] == "sm80" and r["verified"] and "fact_ms" in r]
        if not mine:
            continue
        if not s90:
            out["rows"].append({"problem": pname.removesuffix("_tf32"), "policy": policy, "verified": False,
                                "kernels": [r["kernel"] for r in mine if r["family"] == "sm90"]})
            continue
        best = min(s90, key=lambda r: r["fact_ms"])
        b80 = min(s80, key=lambda r: r["fact_ms"]) if s80 else None
        base = {k: round(v, 4) for k, v in best["baselines_ms"].items() if k in ("sdpa", "eager", "inductor")}
        row = {"problem": pname.removesuffix("_tf32"), "policy": policy, "fact_ms": round(best["fact_ms"], 4),
               "fact_spread_ms": [round(x, 4) for x in best["fact_spread_ms"]], "baselines_ms": base,
               "sdpa_gqa_ms": round(best["baselines_ms"].get("sdpa_gqa", float("nan")), 4),
               "max_rel_err": best["max_rel_err"], "sdpa_max_rel_err": best["sdpa_max_rel_err"],
               "verified": True, "fact_tflops": round(best["fact_tflops"], 1),
               "kernels": [best["kernel"]],
               "fact_sm80_ms": round(b80["fact_ms"], 4) if b80 else None,
               "fact_sm80_kernel": b80["kernel"] if b80 else None}
        out["rows"].append(row)
        md.append(md_row(row))
    path.write_text(json.dumps(out, indent=1) + "\n")
    head = [f"# Attention kernels on the {out['machine']['gpu']} (kernel level, bf16 and tf32)", "",
            f"`{out['command']}` at {out['machine']['fact_commit'] or '?'}, {out['date']}; median of "
            f"{opts.trials} trials, L2 flushed, all variants alternating in one process; every output "
            "element checked against float64 before timing. SDPA: `F.scaled_dot_product_attention` on the "
            "same tensors (K/V heads repeated beforehand; the output made [B, T, H, D] contiguous). tf32 rows: "
            "fp32 inputs, the baselines with TF32 allowed.", ""]
    path.with_suffix(".md").write_text("\n".join(head + md) + "\n")


if __name__ == "__main__":
    sys.exit(main())
