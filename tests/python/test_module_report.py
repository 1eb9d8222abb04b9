"""The module-level report (fact.module_report): coverage, the appended section, the charts."""

from __future__ import annotations

import builtins
import importlib.util
import json
import os

import pytest
import torch

from fact.bench import Timing
from fact.module_report import (PATTERNS_PNG, PLOTS_SKIPPED_NO_MATPLOTLIB, TIMES_PNG,
                                coverage, pattern_times, write_module_report)
from fact.precision import Check

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None

COMPOSE_REPORT = """# FACT report

- Precision policy: `tf32`

## Patterns

| id | nodes | rule |
|---|---|---|
| p0 | linear | gemm |

## Fused tails

- p1: `relu(add(acc, c0))` (nodes add, relu) — fused into `k1_evt`

## Left to ATen

- pattern p2 runs its ATen op (cuBLAS): the vendor path was fastest
"""

MANIFEST = {
    "format": "fact.manifest", "version": 1, "policy": "tf32",
    "patterns": [
        {"id": "p0", "rule": "gemm", "nodes": ["linear"], "impl": "cutlass", "kernel": "k0",
         "vendor_ms": 2.0, "time_ms": 1.6},
        {"id": "p1", "rule": "gemm", "nodes": ["mm", "add", "relu"], "impl": "cutlass",
         "kernel": "k1_evt", "fused": True, "vendor_ms": 1.0, "time_ms": 0.5},
        {"id": "p2", "rule": "gemm", "nodes": ["bmm"], "impl": "vendor", "kernel": "cublas_tf32",
         "vendor_ms": 0.5, "time_ms": 0.5},
    ],
}


def _timings(eager: float = 5.0, inductor: bool = True) -> dict[str, Timing]:
    t = {"eager_fp32": Timing.of([9.0, 10.0, 11.0]), "eager": Timing.of([eager * 0.96, eager, eager * 1.06]),
         "fact": Timing.of([3.9, 4.0, 4.4])}
    if inductor:
        t["inductor"] = Timing.of([4.4, 4.5, 4.6])
    return t


def _checks(ok: bool = True, draws: list | None = None) -> dict:
    return {"fact": Check(ok, 3.0e-4, 1.2e-3, 5e-3, "" if ok else "too far"),
            "eager": Check(True, 2.0e-4, 9.0e-4, 5e-3),
            "fact_vs_eager": Check(True, 1e-4, 1e-3, float("inf")),
            "draws": draws if draws is not None else [
                {"name": "own inputs", "scale": None, "seed": None, "informative": True,
                 "reason": "", "fact": {}, "eager": {}, "fallbacks": 0}]}


def _row(**kw) -> dict:
    row = {"problem": "mlp", "policy": "tf32", "fact_ms": 4.0, "verified": True,
           "verified_on": ["own inputs"], "max_rel_err": 1.2e-3, "eager_max_rel_err": 9.0e-4,
           "fallbacks": 0}
    row.update(kw)
    return row


def _artifact(tmp_path, report: str | None = COMPOSE_REPORT) -> str:
    art = tmp_path / "artifact"
    art.mkdir()
    (art / "manifest.json").write_text(json.dumps(MANIFEST))
    if report is not None:
        (art / "report.md").write_text(report)
    return str(art)


def test_coverage_is_vendor_time_of_cutlass_patterns_over_eager() -> None:
    # p0 and p1 are cutlass: (2.0 + 1.0) / 5.0; the vendor pattern p2 does not count.
    assert coverage(MANIFEST, 5.0) == pytest.approx(0.6)
    assert coverage(MANIFEST, 2.0) == 1.0  # capped
    assert coverage(MANIFEST, None) == 0.0 and coverage(MANIFEST, 0.0) == 0.0
    assert coverage({"patterns": []}, 5.0) == 0.0
    no_vendor = {"patterns": [dict(MANIFEST["patterns"][0], vendor_ms=None)]}
    assert coverage(no_vendor, 5.0) == 0.0
    # The ATen nodes timed in the module (fact.aten_check) replace realize's vendor time.
    measured = {"patterns": [dict(MANIFEST["patterns"][0], aten_ms=4.0)] + MANIFEST["patterns"][1:]}
    assert coverage(measured, 5.0) == 1.0 and coverage(measured, 10.0) == pytest.approx(0.5)
    assert pattern_times(measured)[0]["before_ms"] == 4.0
    rows = pattern_times(MANIFEST)
    assert [(p["id"], p["before_ms"], p["after_ms"]) for p in rows] == [
        ("p0", 2.0, 1.6), ("p1", 1.0, 0.5), ("p2", 0.5, 0.5)]
    assert rows[0]["speedup"] == pytest.approx(1.25) and rows[1]["speedup"] == 2.0


def test_module_section_is_appended_after_compose_content(tmp_path) -> None:
    art = _artifact(tmp_path)
    write_module_report(art, _row(), _checks(), _timings())
    md = open(os.path.join(art, "report.md"), encoding="utf-8").read()
    # Compose's report is kept, first and whole.
    assert md.startswith(COMPOSE_REPORT.rstrip("\n") + "\n\n")
    module = md[md.index("## Module"):]
    assert md.count("## Module") == 1 and md.index("## Left to ATen") < md.index("## Module")
    assert "- Policy: `tf32`" in module
    assert "- Verified: yes, on own inputs" in module
    assert "- Max rel err vs float64: FACT 1.20e-03, eager under `tf32` 9.00e-04" in module
    assert "| variant | median ms | min ms | max ms | trials |" in module
    assert "| eager fp32 | 10.0000 | 9.0000 | 11.0000 | 3 |" in module
    assert "| eager tf32 | 5.0000 | 4.8000 | 5.3000 | 3 |" in module
    assert "| torch.compile | 4.5000 | 4.4000 | 4.6000 | 3 |" in module
    assert "| FACT | 4.0000 | 3.9000 | 4.4000 | 3 |" in module
    assert "- Speedup vs eager under `tf32`: 1.25x" in module
    assert "- Speedup vs torch.compile (default mode, same policy): 1.12x" in module
    assert ("- Coverage: 60.0% of the eager time under `tf32` is now in FACT kernels: the "
            "time before FACT of the cutlass patterns (p0, p1: 3.0000 ms) over the eager module "
            "time (5.0000 ms)\n") in module
    assert "| p0 | linear | cutlass | `k0` | 2.0000 | 1.6000 | 1.25x |" in module
    assert "| p1 | mm, add, relu | cutlass | `k1_evt` (fused tail) | 1.0000 | 0.5000 | 2.00x |" \
        in module
    assert "| p2 | bmm | vendor | `cublas_tf32` | 0.5000 | 0.5000 | 1.00x |" in module
    if HAVE_MATPLOTLIB:
        for name in (TIMES_PNG, PATTERNS_PNG):
            with open(os.path.join(art, name), "rb") as f:
                assert f.read(8) == b"\x89PNG\r\n\x1a\n"
            assert f"]({name})" in module
        assert "plots skipped" not in module
    else:
        assert PLOTS_SKIPPED_NO_MATPLOTLIB in module


def test_second_write_replaces_the_section(tmp_path) -> None:
    art = _artifact(tmp_path)
    write_module_report(art, _row(), _checks(), _timings())
    write_module_report(art, _row(), _checks(), _timings(eager=10.0, inductor=False))
    md = open(os.path.join(art, "report.md"), encoding="utf-8").read()
    assert md.count("## Module") == 1 and md.count("## Left to ATen") == 1
    assert "Coverage: 30.0%" in md and "torch.compile" not in md
    write_module_report(art, _row(), _checks(), _timings(eager=2.0))
    md = open(os.path.join(art, "report.md"), encoding="utf-8").read()
    assert "Coverage: 100.0%" in md and "capped at 100 %" in md


def test_unverified_row_claims_no_speedup_and_drawn_inputs_are_named(tmp_path) -> None:
    draws = [{"name": "own inputs", "scale": None, "seed": None, "informative": False,
              "reason": "output 0: all 2048 elements equal 0", "fact": {}, "eager": {},
              "fallbacks": 0},
             {"name": "randn x1", "scale": 1.0, "seed": 1, "informative": True, "reason": "",
              "fact": {}, "eager": {}, "fallbacks": 0}]
    art = _artifact(tmp_path, report=None)  # compose wrote none: the file is created
    write_module_report(art, _row(verified=False, verified_on=["randn x1"]),
                        _checks(ok=False, draws=draws), _timings(), manifest=MANIFEST)
    md = open(os.path.join(art, "report.md"), encoding="utf-8").read()
    assert md.startswith("# FACT report\n\n")
    assert "- Verified: **no** (too far); checked on randn x1" in md
    assert "own inputs (output 0: all 2048 elements equal 0)" in md
    assert "- Speedup vs eager under `tf32`: — (not verified: no speedup claimed)" in md


def test_missing_matplotlib_skips_plots_without_failing(tmp_path, monkeypatch) -> None:
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    art = _artifact(tmp_path)
    write_module_report(art, _row(), _checks(), dict(_timings()))
    md = open(os.path.join(art, "report.md"), encoding="utf-8").read()
    assert PLOTS_SKIPPED_NO_MATPLOTLIB in md
    assert "Coverage: 60.0%" in md
    assert not os.path.exists(os.path.join(art, TIMES_PNG))
    assert not os.path.exists(os.path.join(art, PATTERNS_PNG))


def test_timings_and_checks_as_dicts(tmp_path) -> None:
    """``module.report`` keeps them as dicts; the writer takes those too."""
    import dataclasses
    art = _artifact(tmp_path)
    checks = {k: (dataclasses.asdict(v) if isinstance(v, Check) else v)
              for k, v in _checks().items()}
    write_module_report(art, _row(), checks,
                        {k: dataclasses.asdict(t) for k, t in _timings().items()})
    md = open(os.path.join(art, "report.md"), encoding="utf-8").read()
    assert "| FACT | 4.0000 | 3.9000 | 4.4000 | 3 |" in md and "Coverage: 60.0%" in md


# ------------------------------------------------------------------ through fact optimize

class _Small(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):
        return torch.relu(self.fc(x))


def test_optimize_writes_the_module_report_and_coverage(tmp_path, fake_factc, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_FACTC_GPU", "Fake GPU")
    from fact.optimize import optimize
    before = torch.get_float32_matmul_precision()
    try:
        module = optimize(_Small(), [torch.randn(8, 16)], precision="fp32",
                          out_dir=str(tmp_path / "w"))
    finally:
        torch.set_float32_matmul_precision(before)
    row = module.report["row"]
    assert row["coverage"] == 0.0  # the stand-in engine composes vendor patterns only
    md = (tmp_path / "w" / "artifact" / "report.md").read_text()
    assert "## Module" in md and "- Verified: yes, on own inputs" in md
    assert "- Coverage: 0.0% of the eager time under `fp32`" in md
    assert "| FACT |" in md
    if HAVE_MATPLOTLIB:
        assert (tmp_path / "w" / "artifact" / TIMES_PNG).exists()
