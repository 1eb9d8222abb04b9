"""Benchmark result files (docs/07-bench-format.md): the machine block, the JSON document, the tables."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
from typing import Any, Iterable, Sequence

import torch

__all__ = ["machine_info", "bench_document", "write_bench", "render_markdown", "render_text",
           "speedup", "git_commit"]

_REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _run_quiet(cmd: Sequence[str], cwd: str | None = None) -> str:
    try:
        out = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def git_commit(repo: str = _REPO) -> str | None:
    """``FACT_COMMIT`` when set, else ``git rev-parse --short HEAD`` of the FACT checkout,
    else ``None``. The variable wins: a copy of the tree (e.g. on a GPU machine) may carry
    a stale ``.git`` or none at all."""
    if os.environ.get("FACT_COMMIT"):
        return os.environ["FACT_COMMIT"]
    if shutil.which("git") is None:
        return None
    return _run_quiet(["git", "rev-parse", "--short", "HEAD"], cwd=repo) or None


def _driver() -> str | None:
    if shutil.which("nvidia-smi") is None:
        return None
    out = _run_quiet(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    return out.splitlines()[0].strip() if out else None


def machine_info(realized: dict | None = None) -> dict:
    """docs/07-bench-format.md's ``machine`` block: gpu, driver, torch, cuda, cutlass, fact_commit.

    ``cutlass`` comes from ``realized.json``; the driver from ``nvidia-smi`` (else from
    ``realized.json``); missing values are ``None``.
    """
    realized = realized or {}
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else realized.get("gpu")
    return {"gpu": gpu, "driver": _driver() or realized.get("driver"),
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "cutlass": realized.get("cutlass"), "fact_commit": git_commit()}


def bench_document(command: str, rows: list[dict], machine: dict) -> dict:
    """The docs/07-bench-format.md JSON document (``command``, ``date`` in UTC, ``machine``, ``rows``)."""
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"command": command, "date": date, "machine": machine, "rows": rows}


def write_bench(path: str, doc: dict, markdown: bool = True) -> None:
    """Write ``doc`` as JSON to ``path`` and, if ``markdown``, its table beside it (``.md``)."""
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    if markdown:
        with open(os.path.splitext(path)[0] + ".md", "w", encoding="utf-8") as f:
            f.write(render_markdown(doc, source=os.path.basename(path)))


def speedup(row: dict, baseline: str | None = None) -> float | None:
    """``baselines_ms[baseline] / fact_ms``; ``None`` for unverified rows (no claim).

    ``baseline`` defaults to ``eager`` (module level), else ``cublas`` (kernel-level rows).
    """
    base_ms = row.get("baselines_ms", {})
    if baseline is None:
        baseline = "eager" if "eager" in base_ms else "cublas"
    base = base_ms.get(baseline)
    if not row.get("verified") or not base or not row.get("fact_ms"):
        return None
    return base / row["fact_ms"]


def _ms(x: Any) -> str:
    return f"{x:.3f}" if isinstance(x, (int, float)) else "—"


def _err(x: Any) -> str:
    return f"{x:.1e}" if isinstance(x, (int, float)) else "—"


_OWN_INPUTS = "own inputs"  # the name fact.optimize.verify gives the problem's own inputs


def _has_inductor(rows: Iterable[dict]) -> bool:
    return any(k in r.get("baselines_ms", {}) for r in rows
               for k in ("inductor", "inductor_max_autotune"))


def _row_name(row: dict) -> str:
    """The row's problem, with " (<dtype> model)" for a model run in its own narrow dtype."""
    problem = row.get("problem", "?")
    if row.get("model_dtype", "float32") != "float32":
        problem += f" ({row['model_dtype']} model)"
    return problem


def _cells(row: dict, inductor: bool = False) -> list[str]:
    s = speedup(row)
    kernels = ", ".join(k for k in row.get("kernels", []) if k) or "—"
    verified = "" if row.get("verified") else " (not verified)"
    base = row.get("baselines_ms", {})
    base_err = row.get("eager_max_rel_err", row.get("cublas_max_rel_err"))
    cells = [_row_name(row), row.get("policy", "?"),
             _ms(base.get("eager_fp32")), _ms(base.get("eager")), _ms(base.get("cublas"))]
    if inductor:  # default mode, and "/ max-autotune" where that was timed too
        tc = _ms(base.get("inductor"))
        if "inductor_max_autotune" in base:
            tc += f" / {_ms(base['inductor_max_autotune'])}"
        cells.append(tc)
    cells += [_ms(row.get("fact_ms")) + verified, f"{s:.2f}x" if s is not None else "—"]
    if inductor:  # against the faster torch.compile mode timed
        modes = [m for m in ("inductor", "inductor_max_autotune") if base.get(m)]
        si = speedup(row, min(modes, key=lambda m: base[m])) if modes else None
        cells.append(f"{si:.2f}x" if si is not None else "—")
    return cells + [
        _err(row.get("max_rel_err")), _err(base_err),
        f"{row['compile_tune_s']:.1f}" if isinstance(row.get("compile_tune_s"),
                                                     (int, float)) else "—",
        kernels, row.get("level", "module (fact optimize)")
        + (f" at {row['fact_commit']}" if row.get("fact_commit") else "")]


_HEADER = ["problem", "policy", "eager fp32 ms", "eager same-policy ms", "cuBLAS ms",
           "FACT ms", "speedup (vs eager, else cuBLAS)", "max rel err",
           "baseline max rel err", "compile+tune s", "kernel", "measured at"]


def _header(inductor: bool) -> list[str]:
    """The table's columns; with ``inductor``, torch.compile's time after cuBLAS's and FACT's
    speedup over it after the eager speedup (only documents that measured it have them)."""
    if not inductor:
        return list(_HEADER)
    h = list(_HEADER)
    h.insert(h.index("cuBLAS ms") + 1, "torch.compile ms")
    h.insert(h.index("speedup (vs eager, else cuBLAS)") + 1, "speedup vs torch.compile")
    return h


def render_markdown(doc: dict, source: str | None = None) -> str:
    """A markdown table of a bench document, with the machine in every row's last columns.

    ``source`` names the JSON file the table is rendered from. When any row was measured
    against ``torch.compile`` (``baselines_ms.inductor``), the table has its time and FACT's
    speedup over it as columns (default mode, same policy).
    """
    m = doc.get("machine", {})
    rows = doc.get("rows", [])
    inductor = _has_inductor(rows)
    header = _header(inductor) + ["GPU", "torch/CUDA/CUTLASS"]
    stack = f"{m.get('torch') or '?'} / {m.get('cuda') or '?'} / {m.get('cutlass') or '?'}"
    lines = [f"<!-- rendered from {source or 'the JSON file beside this one'} -->",
             f"Command: `{doc.get('command', '')}`  ",
             f"Date: {doc.get('date', '')}, FACT commit {m.get('fact_commit') or '?'}, "
             f"driver {m.get('driver') or '?'}",
             "",
             "| " + " | ".join(header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    for row in rows:
        cells = _cells(row, inductor) + [m.get("gpu") or "?", stack]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    if inductor:
        lines += ["", "torch.compile: default mode, under the row's policy, timed alternating "
                  "with FACT on the same inputs."]
        if any("inductor_max_autotune" in r.get("baselines_ms", {}) for r in rows):
            lines[-1] += (" `A / B`: default mode / `mode=\"max-autotune\"`; the speedup is "
                          "against the faster of the two.")
        spent = [f"{_row_name(r)} {r.get('policy', '?')}: "
                 + ", ".join(f"{k} {v:.0f} s" for k, v in r["baseline_compile_s"].items())
                 for r in rows if r.get("baseline_compile_s")]
        if spent:
            lines += ["", "torch.compile's compile seconds (first call): " + "; ".join(spent) + "."]
    graphs = [f"{_row_name(r)} {r.get('policy', '?')}: {r['cuda_graph']['replay_ms']:.3f} / "
              f"{r['cuda_graph']['plain_ms']:.3f}" + (" (replay kept)" if r["cuda_graph"].get("kept") else "")
              for r in rows if isinstance(r.get("cuda_graph"), dict)
              and isinstance(r["cuda_graph"].get("replay_ms"), (int, float))
              and isinstance(r["cuda_graph"].get("plain_ms"), (int, float))]
    if graphs:
        lines += ["", "CUDA-graph replay / plain calls, ms (the module timed both ways, alternating; "
                  "the faster is kept, plain unless marked): " + "; ".join(graphs) + "."]
    drawn = [f"{r.get('problem', '?')} {r.get('policy', '?')} "
             f"({', '.join(r['verified_on']) or 'none informative'})"
             for r in rows if "verified_on" in r and _OWN_INPUTS not in r["verified_on"]]
    if drawn:
        lines += ["", "Verified on drawn inputs (the float64 reference on the problem's own "
                  "inputs cannot tell right from wrong, e.g. all zeros): " + "; ".join(drawn)
                  + "."]
    return "\n".join(lines) + "\n"


def render_text(rows: Iterable[dict]) -> str:
    """A plain-text table of rows for the terminal (the columns of the markdown table)."""
    rows = list(rows)
    inductor = _has_inductor(rows)
    header = _header(inductor)
    table = [header] + [_cells(r, inductor) for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
                     for r in table) + "\n"
