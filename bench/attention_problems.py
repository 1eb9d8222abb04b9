"""The problems bench/attention_check.py verifies and times the attention kernels on, and one
kernel's check: the problem tables (name -> shape, mask and layout), fresh random inputs laid out
as a problem says (make_problem), the float64 reference (reference64), the error measures
(compare), a kernel library's entry points (load_kernel) and arguments (attn_args), and
check_kernel, which runs a kernel once and checks every output element against float64.
"""

from __future__ import annotations

import ctypes
import math
import pathlib
import sys
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from fact.families.attention import FactAttentionArgs  # noqa: E402  (the ABI's one Python mirror)

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
#: The split tail's edges: 64 tiles, at most half of a 132-SM grid, all split (2 parts of 8
#: key blocks of 128, or of 16 of 64), the last query block and the last key block partial
#: (1000 = 7 x 128 + 104).
EDGE_PROBLEMS = {"split_tail_edges": (2, 4, 4, 1000, 128, "nomask", "bthd")}
#: fp32 inputs under the bf16 policy (the model kept in fp32, `--precision bf16`): the same
#: shapes, each tile rounded to bf16 by the kernel; the baselines run under autocast(bf16).
F32IN_PROBLEMS = {"mingpt_attention_core_f32in": PROBLEMS["mingpt_attention_core"],
                  "llama3_8b_block_attention_f32in": PROBLEMS["llama3_8b_block_attention"]}
#: fp32 inputs under the tf32 policy: the same shapes in tf32 math (the sm90 kernel's
#: transposing producer; the baselines with TF32 allowed).
TF32_PROBLEMS = {f"{n}_tf32": shape for n, shape in {**PROBLEMS, **EDGE_PROBLEMS}.items()}
ALL_PROBLEMS = {**PROBLEMS, **MASK_PROBLEMS, **EDGE_PROBLEMS, **F32IN_PROBLEMS, **TF32_PROBLEMS}


# ------------------------------------------------------------------ inputs, float64 reference, one kernel's check

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
    """The library and its ``_run``, ``_can_implement`` and ``_workspace_bytes``."""
    lib = ctypes.CDLL(str(lib_path))
    run = getattr(lib, f"{name}_run")
    run.argtypes = [ctypes.POINTER(FactAttentionArgs), ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    can = getattr(lib, f"{name}_can_implement")
    can.argtypes = [ctypes.POINTER(FactAttentionArgs)]
    ws = getattr(lib, f"{name}_workspace_bytes")
    ws.argtypes, ws.restype = [ctypes.POINTER(FactAttentionArgs)], ctypes.c_size_t
    return lib, run, can, ws


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

    lib, run, can, ws_bytes = load_kernel(lib_path, name)
    a = attn_args(P)
    rc = can(ctypes.byref(a))
    if rc != 0:
        return {"kernel": name, "verified": False, "can_implement": rc}, None
    # The workspace (the split tail's parts), poisoned: the kernel must write what it reads.
    n_ws = int(ws_bytes(ctypes.byref(a)))
    ws = torch.full((n_ws // 4,), float("nan"), device=P["out"].device, dtype=torch.float32) if n_ws else None
    ws_ptr = ws.data_ptr() if ws is not None else None
    P["out"].fill_(float("nan"))
    stream = torch.cuda.current_stream().cuda_stream
    r = run(ctypes.byref(a), ws_ptr, n_ws, stream)
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
        r = run(ctypes.byref(a), ws_ptr, n_ws, stream)
        torch.cuda.synchronize()
        z = compare(P["o"], torch.nan_to_num(ref, nan=0.0))
        res["empty_zero_max_rel_err"] = z["max_rel_err"]
        res["verified"] = res["verified"] and r == 0 and z["all_finite"] and z["max_rel_err"] < TOL_BF16
        a.flags = 0

    def fact():
        rr = run(ctypes.byref(a), ws_ptr, n_ws, stream)
        if rr != 0:
            raise RuntimeError(f"{name}_run returned {rr}")

    res["workspace_bytes"] = n_ws
    if n_ws:  # without the workspace it says so (FACT_ATTN_ERR_WORKSPACE), launching nothing
        res["no_workspace_rc"] = run(ctypes.byref(a), None, 0, stream)
        res["verified"] = res["verified"] and res["no_workspace_rc"] == 5
    return res, (fact, lib, a, ws)
