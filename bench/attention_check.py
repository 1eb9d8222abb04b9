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

This exercises the kernel alone; ``factc realize`` is what tunes and chooses kernels. The kernel
configurations and their building are in bench/attention_kernels.py, the problems and one kernel's
check against float64 in bench/attention_problems.py; this script runs them (its names re-export theirs).
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

# The kernels and the problems, beside this script (bench/, the script's folder); their names are
# re-exported here (``import attention_check as ac; ac.make_problem(...)``). attention_problems
# puts the repository's python/ on the path and imports the ABI's one Python mirror.
from attention_kernels import (  # noqa: E402
    ROOT, ABI, CUTLASS_INCLUDE, ELEMENTS, MASKS, TEMPLATE_PARTS, TEMPLATE_SM90_PARTS, Sm90, build, cfg_matches,
    cfg_name, kernel_name, render, render_sm90, sm90_configs)
from attention_problems import (  # noqa: E402
    ALL_PROBLEMS, F32IN_PROBLEMS, MASK_PROBLEMS, PROBLEMS, TF32_PROBLEMS, TOL_BF16, FactAttentionArgs, attn_args,
    check_kernel, compare, load_kernel, make_problem, reference64)

__all__ = [
    # attention_kernels
    "ROOT", "ABI", "CUTLASS_INCLUDE", "ELEMENTS", "MASKS", "TEMPLATE_PARTS", "TEMPLATE_SM90_PARTS", "Sm90", "build",
    "cfg_matches", "cfg_name", "kernel_name", "render", "render_sm90", "sm90_configs",
    # attention_problems
    "ALL_PROBLEMS", "F32IN_PROBLEMS", "MASK_PROBLEMS", "PROBLEMS", "TF32_PROBLEMS", "TOL_BF16", "attn_args",
    "FactAttentionArgs", "check_kernel", "compare", "load_kernel", "make_problem", "reference64",
    # this script
    "main", "md_row", "render_md", "run_gpu", "run_sm90", "sm90_child", "smoke", "write_bench"]


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
    ap.add_argument("--render", default="", help="re-render this results JSON's .md (e.g. after merge_results) and exit")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.render:
        doc_path = pathlib.Path(opts.render)
        doc_path.with_suffix(".md").write_text(render_md(json.loads(doc_path.read_text()), opts.trials))
        return 0
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
            return attn_args(dict(B=B, H=H, HK=HK, T=T, D=D, q=q, k=k, v=v, o=o, scale=scale, m=mask_t))

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
            f"{row['max_rel_err']:.1e} ({row['sdpa_max_rel_err']:.1e}) | `{row['kernels'][0]}` | "
            f"{row.get('fact_commit', '')} |")


def render_md(doc: dict, trials: int) -> str:
    """The rendered table of a results file (``doc``: its JSON) at kernel level."""
    md = ["| problem | policy | FACT sm90 ms | SDPA ms | vs SDPA | SDPA `enable_gqa` ms | FACT sm80 ms | torch.compile ms "
          "| eager ms | max rel err (SDPA's) | kernel | measured at |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = [{**r, "fact_commit": r.get("fact_commit") or doc["machine"]["fact_commit"]} for r in doc["rows"]]
    md += [md_row(r) for r in rows if r.get("verified")]
    head = [f"# Attention kernels on the {doc['machine']['gpu']} (kernel level, bf16 and tf32)", "",
            f"`{doc['command']}`, {doc['date']}; median of {trials} trials, L2 flushed, all variants alternating "
            "in one process; every output element checked against float64 before timing (also on logits that "
            "grow block after block). SDPA: `F.scaled_dot_product_attention` on the same tensors (K/V heads "
            "repeated beforehand, or `enable_gqa`; the output made [B, T, H, D] contiguous); torch.compile: "
            "default mode, of the hand-written eager form (runs with `--compile` only). tf32 rows: fp32 inputs, "
            "the baselines with TF32 allowed (SDPA's fp32 kernel computes in fp32, hence its smaller error). "
            "Each row names the commit it was measured at (`bench/merge_results.py --replace`).", ""]
    return "\n".join(head + md) + "\n"


def write_bench(rows, path: pathlib.Path, opts) -> None:
    """The results format of docs/07-bench-format.md: per problem the fastest verified sm90
    kernel; the best sm80 kernel of the same run alongside (fact_sm80_ms)."""
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
    path.write_text(json.dumps(out, indent=1) + "\n")
    path.with_suffix(".md").write_text(render_md(out, opts.trials))


if __name__ == "__main__":
    sys.exit(main())
