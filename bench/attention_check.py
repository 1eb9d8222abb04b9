"""Kernel-level check of the fused-attention template (src/families/attention/templates/attention_sm80.cu.in).

Renders a few configurations, compiles each into a shared library with nvcc, then (on a GPU)
verifies each against a float64 PyTorch reference on fresh random inputs laid out as the
problem says (minGPT: q/k/v are strided views of one [B, T, 3C] tensor; the output is the
merged [B, T, C] layout), and times it against eager attention written by hand, SDPA and
torch.compile of the hand-written form, alternating, with an L2 flush before each trial.

    python bench/attention_check.py --build-only            # compile (any machine with nvcc)
    python bench/attention_check.py --out results.json      # compile, verify and time (GPU)

This exercises the kernel alone; ``factc realize`` is what tunes and chooses kernels.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import ctypes
import json
import math
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from fact.abi import FactAttentionArgs  # noqa: E402  (the ABI's one Python mirror)
TEMPLATE = ROOT / "src/families/attention/templates/attention_sm80.cu.in"
ABI = ROOT / "src/families/attention/abi.h"
MASKS = {"nomask": 0, "causal": 1, "additive": 2, "keep": 3, "drop": 4}
ELEMENTS = {"f32": "float", "bf16": "__nv_bfloat16", "f16": "__half"}


def kernel_name(math_: str, io: str, d: int, mask: str, bm: int, bn: int, mb: int) -> str:
    return f"fact_attn_sm80_{math_}_{io}_d{d}_{mask}_{bm}x{bn}_mb{mb}"


def render(math_: str, io: str, d: int, mask: str, bm: int, bn: int, mb: int) -> tuple[str, str]:
    name = kernel_name(math_, io, d, mask, bm, bn, mb)
    text = TEMPLATE.read_text()
    subs = {"NAME": name, "ABI": ABI.read_text(), "ELEMENT": ELEMENTS[io], "MATH": math_,
            "HEAD_DIM": str(d), "MASK": str(MASKS[mask]), "BLOCK_M": str(bm),
            "BLOCK_N": str(bn), "MIN_BLOCKS": str(mb)}
    for k, v in subs.items():
        text = text.replace("{{" + k + "}}", v)
    if "{{" in text:
        raise RuntimeError(f"{name}: unfilled placeholder")
    return name, text


def build(cfg: tuple, work: pathlib.Path, nvcc: str) -> tuple[str, pathlib.Path, float, str]:
    name, text = render(*cfg)
    src = work / f"{name}.cu"
    lib = work / f"lib{name}.so"
    src.write_text(text)
    t0 = time.time()
    cmd = [nvcc, "-std=c++17", "-O3", "-DNDEBUG", "-gencode=arch=compute_90a,code=sm_90a",
           "-Xcompiler=-fPIC", "-shared", "-Xptxas=-v", "-o", str(lib), str(src)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    log = r.stdout + r.stderr
    (work / f"{name}.log").write_text(log)
    if r.returncode != 0:
        raise RuntimeError(f"{name}: nvcc failed:\n{log[-3000:]}")
    return name, lib, time.time() - t0, log


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--work", default="build/attention_check")
    ap.add_argument("--out", default="")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only", default="", help="comma-separated substrings of kernel names to keep")
    ap.add_argument("--trials", type=int, default=20)
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
    if opts.only:
        keys = opts.only.split(",")
        configs = [c for c in configs if any(k in kernel_name(*c) for k in keys)]
    built = {}
    with cf.ThreadPoolExecutor(max_workers=opts.jobs) as ex:
        futs = {ex.submit(build, c, work, nvcc): c for c in configs}
        for f in cf.as_completed(futs):
            c = futs[f]
            try:
                name, lib, secs, log = f.result()
                regs = [l.strip() for l in log.splitlines() if "registers" in l or "spill" in l]
                print(f"built {name} in {secs:.1f} s; {' | '.join(regs[-2:])}", flush=True)
                built[c] = lib
            except Exception as e:  # report every failure, keep going
                print(f"FAILED {c}: {e}", flush=True)
    if opts.build_only:
        return 0 if len(built) == len(configs) else 1
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


if __name__ == "__main__":
    sys.exit(main())
