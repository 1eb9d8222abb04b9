"""The rope kernels on the Llama-3-8B block's shape (B 16, T 2048, 32 q / 8 kv heads, head
dim 128, theta 500000): realized by the engine, then verified and timed against eager RoPE.

1. Writes a plan of two rope patterns per dtype — q [16, 32, 2048, 128] and k [16, 8, 2048,
   128], each the view(B, T, H, D).transpose(1, 2) of its projection, cos/sin [1, 1, T, D]
   buffers, the output in q's (k's) own layout as eager writes it — and runs ``factc realize``
   on it: the rope tuning space is built, every kernel verified against the float64
   reference with its bound (docs/06-verification.md, "Rope") and timed with the vendor
   lower bound (realized.json under --out).
2. Loads each pattern's winning kernel and, on real RoPE inputs (the Llama tables, normal
   q/k), checks its output against float64 eager and times it against eager
   ``q * cos + rotate_half(q) * sin`` and torch.compile of it (default mode), alternating,
   L2 flushed (fact.bench.time_variants).

    FACTC=build/factc python bench/rope_check.py --out /tmp/rope [--dtypes bfloat16 float32]

Writes --out/rope-h200.json (docs/07-bench-format.md's rows) and prints one line per
pattern. Exit status 0 when every pattern's winner is a verified FACT kernel within its
bound on the real inputs, 1 otherwise.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import torch  # noqa: E402

from fact.bench import time_variants  # noqa: E402
from fact.families.rope import FactRopeArgs, leading_strides  # noqa: E402

B, T, HQ, HKV, D, THETA = 16, 2048, 32, 8, 128, 500000.0


def problem(heads: int, dtype: str) -> dict:
    """The rope problem of one projection at the block's shape (q: 32 heads, k: 8)."""
    bthd = [T * heads * D, D, heads * D]  # view(B, T, H, D).transpose(1, 2)
    return {"kind": "rope", "form": "half", "dims": [B, heads, T], "head_dim": D, "dtype": dtype,
            "strides": {"x": bthd, "cos": [0, 0, D], "sin": [0, 0, D], "out": bthd}}


def tables(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The Llama block's cos/sin buffers, [1, 1, T, D] (examples/blocks/llama3_8b_block.py)."""
    inv_freq = 1.0 / (THETA ** (torch.arange(0, D, 2).float() / D))
    freqs = torch.outer(torch.arange(T).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return (emb.cos()[None, None].to("cuda", dtype), emb.sin()[None, None].to("cuda", dtype))


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def eager_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return x * cos + rotate_half(x) * sin


def run_kernel(lib: ctypes.CDLL, symbol: str, x, cos, sin, out) -> None:
    a = FactRopeArgs(n0=x.shape[0], n1=x.shape[1], n2=x.shape[2], head_dim=x.shape[3], flags=0)
    for role, t in (("x", x), ("cos", cos), ("sin", sin), ("out", out)):
        setattr(a, role, t.data_ptr())
        for i, s in enumerate(leading_strides(t, list(x.shape))):
            setattr(a, f"{role}_stride{i}", s)
    rc = getattr(lib, f"{symbol}_run")(ctypes.byref(a), None, ctypes.c_size_t(0),
                                       ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
    if rc:
        raise RuntimeError(f"{symbol}_run returned {rc}")


def check_pattern(pat: dict, trials: int) -> dict:
    """Verify and time the winner of one realized pattern on real RoPE inputs."""
    p = pat["problem"]
    heads, dtype = p["dims"][1], getattr(torch, p["dtype"])
    winner = next((c for c in pat["candidates"] if c["kernel"] == pat.get("winner")), None)
    row = {"problem": f"llama3_8b_rope_{'q' if heads == HQ else 'k'}_{p['dtype']}",
           "policy": "fp32" if dtype == torch.float32 else "bf16",
           "model_dtype": p["dtype"], "verified": False, "kernels": [pat.get("winner")],
           "compile_tune_s": pat.get("compile_s", 0) + pat.get("tune_s", 0),
           "realize_median_ms": {c["kernel"]: c.get("median_ms") for c in pat["candidates"]},
           "worst_bound_ratio": (pat.get("verification") or {}).get("worst_bound_ratio")}
    if not winner or winner.get("impl") == "vendor" or "library" not in winner:
        row["why"] = "no verified FACT kernel won"
        return row
    lib = ctypes.CDLL(winner["library"])
    symbol = winner.get("symbol", winner["kernel"])
    getattr(lib, f"{symbol}_run").restype = ctypes.c_int
    torch.manual_seed(0)
    proj = torch.randn(B, T, heads * D, device="cuda", dtype=dtype)
    x = proj.view(B, T, heads, D).transpose(1, 2)
    cos, sin = tables(dtype)
    want = eager_rope(x, cos, sin)
    out = torch.empty_strided(want.shape, want.stride(), dtype=dtype, device="cuda").fill_(float("nan"))
    run_kernel(lib, symbol, x, cos, sin, out)
    ref = eager_rope(x.double(), cos.double(), sin.double())
    err = (out.double() - ref).abs().max().item() / ref.abs().max().item()
    eager_err = (want.double() - ref).abs().max().item() / ref.abs().max().item()
    row.update(max_rel_err=err, eager_max_rel_err=eager_err, out_strides=list(out.stride()),
               verified=bool(torch.isfinite(out).all().item()) and err <= max(2 * eager_err, 1e-6))
    compiled = torch.compile(eager_rope)
    times = time_variants({"fact": lambda: run_kernel(lib, symbol, x, cos, sin, out),
                           "eager": lambda: eager_rope(x, cos, sin),
                           "inductor": lambda: compiled(x, cos, sin)}, trials=trials)
    row.update(fact_ms=times["fact"].median_ms, fact_spread_ms=times["fact"].spread(),
               baselines_ms={"eager": times["eager"].median_ms, "inductor": times["inductor"].median_ms})
    moved = 2 * x.numel() * x.element_size() + 2 * cos.numel() * cos.element_size()
    row["fact_tb_s"] = moved / (times["fact"].median_ms * 1e-3) / 1e12
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="work directory (plan, realized.json, results)")
    ap.add_argument("--dtypes", nargs="+", default=["bfloat16", "float32"])
    ap.add_argument("--tune-budget", type=int, default=0, help="kernels per pattern (0: the family's default)")
    ap.add_argument("--trials", type=int, default=50)
    opts = ap.parse_args()
    out = pathlib.Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    factc = os.environ.get("FACTC", str(ROOT / "build" / "factc"))
    patterns = [{"id": f"p{i}", "rule": "rope", "problem": problem(h, d)}
                for i, (d, h) in enumerate((d, h) for d in opts.dtypes for h in (HQ, HKV))]
    (out / "plan.json").write_text(json.dumps({"format": "fact.plan", "version": 1, "patterns": patterns}))
    cmd = [factc, "realize", str(out / "plan.json"), "-o", str(out / "realized.json"), "--no-registry"]
    if opts.tune_budget:
        cmd += ["--tune-budget", str(opts.tune_budget)]
    t0 = time.time()
    subprocess.run(cmd, check=True)
    realized = json.loads((out / "realized.json").read_text())
    if not torch.cuda.is_available():
        print("no CUDA GPU: the kernels are built (realized.json), nothing verified or timed")
        return 1
    rows = [check_pattern(pat, opts.trials) for pat in realized["patterns"]]
    doc = {"command": " ".join(["python", "bench/rope_check.py", *sys.argv[1:]]),
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "machine": {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "cuda": torch.version.cuda, "realize_wall_s": time.time() - t0},
           "rows": rows}
    (out / "rope-h200.json").write_text(json.dumps(doc, indent=1))
    for r in rows:
        b = r.get("baselines_ms", {})
        print(f"{r['problem']:28s} {'ok' if r['verified'] else 'FAIL':4s} {r['kernels'][0]} "
              f"fact {r.get('fact_ms', float('nan')):.3f} ms ({r.get('fact_tb_s', float('nan')):.2f} TB/s) "
              f"eager {b.get('eager', float('nan')):.3f} inductor {b.get('inductor', float('nan')):.3f} "
              f"err {r.get('max_rel_err', float('nan')):.1e} (eager {r.get('eager_max_rel_err', float('nan')):.1e})")
    return 0 if all(r["verified"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
