"""The module-level part of an artifact's report (docs/05-composition.md, "The module report").

``factc compose`` writes ``<artifact>/report.md`` pattern by pattern. After ``fact optimize``
has verified and timed the whole module, :func:`write_module_report` appends a ``## Module``
section to it (policy, the narrowed values in one line such as ``stored in bf16: 12 values
(4 parameters converted at load)``, verification, module timings, speedups, coverage,
per-pattern times) and, when matplotlib is importable, two PNG charts beside it:

- ``report_times.png``: median module time per variant (eager fp32, eager under the policy,
  torch.compile when timed, FACT), with the min-max spread as error bars;
- ``report_patterns.png``: per pattern, the vendor time before and the chosen kernel's after.

Plotting never fails a run: without matplotlib (the GPU machine may not have it) the report
says ``plots skipped: matplotlib is not installed``; any other plotting error is reported the
same way with its message. The charts are drawn with the Agg canvas directly (no pyplot, no
change to the process's matplotlib backend).

**Coverage** is the share of the eager module time that now runs in FACT kernels::

    coverage = min(1, sum(vendor_ms of the manifest patterns with impl "cutlass")
                      / eager median ms under the same policy)

``vendor_ms`` is the fastest verified vendor candidate ``factc realize`` measured for the
pattern (for a fused pattern: the vendor GEMM plus its elementwise tail as one pass; for an
attention pattern: cuBLAS's two GEMMs alone, a lower bound of its ATen nodes), i.e. what
that part of the module cost before FACT. Where the ATen check timed a pattern's own ATen
nodes in the module (:mod:`fact.aten_check`, ``aten_ms`` of the pattern), that time is used
instead. It is measured per pattern (L2 flushed, its own
process), not inside the module, so the ratio is an estimate and is capped at 100 %. A
cutlass pattern without ``vendor_ms`` contributes nothing (the report names it), nor does
one whose kernel the module never runs (its ATen nodes run instead, e.g. a causal mask's
buffer that is no longer lower-triangular).

All times are milliseconds; errors are relative (max ``|out − ref|`` / max ``|ref|``).
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Iterable, Mapping, Sequence

from fact.composition import HANDED_BACK, INDUCTOR_FASTER, composition_lines
from fact.families import find_family
from fact.narrowing import narrowed_summary

__all__ = ["write_module_report", "replace_section", "coverage", "pattern_times",
           "SECTION_MARKER",
           "TIMES_PNG", "PATTERNS_PNG", "PLOTS_SKIPPED_NO_MATPLOTLIB", "VARIANT_LABELS"]

TIMES_PNG = "report_times.png"
PATTERNS_PNG = "report_patterns.png"
#: The line the report carries when matplotlib cannot be imported.
PLOTS_SKIPPED_NO_MATPLOTLIB = "plots skipped: matplotlib is not installed"
#: Starts the section this module writes; a second write replaces everything from it on.
SECTION_MARKER = "<!-- fact optimize: module report -->"
#: Timing variant (key of ``timings``) -> label, in the order the report shows them
#: (``{policy}`` is the run's policy).
VARIANT_LABELS = {"eager_fp32": "eager fp32", "eager": "eager {policy}",
                  "inductor": "torch.compile", "fact": "FACT"}


# ------------------------------------------------------------------ numbers

def _get(obj: Any, name: str, default: Any = None) -> Any:
    """``obj.name`` or ``obj[name]``: Timing/Check dataclasses and their ``asdict`` forms."""
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _median_ms(timing: Any) -> float | None:
    return _num(_get(timing, "median_ms")) if timing is not None else None


def pattern_times(manifest: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per manifest pattern: ``id``, ``nodes``, ``impl``, ``kernel``, ``fused``, ``abi``
    (the kernel family's name, :func:`fact.families.find_family`; the entry's own ``abi``
    when no family has it), ``detail`` (the family's
    :meth:`fact.families.Family.report_detail`: for attention the mask kind, heads and GQA
    ratio, head dim; else ""), ``before_ms`` (``aten_ms`` when the ATen check measured the
    pattern's ATen nodes in the module, else ``vendor_ms``), ``after_ms`` (``time_ms``, the
    chosen candidate's) and ``speedup`` (before / after; ``None`` when either time is
    missing or not positive)."""
    out = []
    for p in manifest.get("patterns", []):
        before = _num(p.get("aten_ms", p.get("vendor_ms")))
        after = _num(p.get("time_ms"))
        family = find_family(p)
        out.append({"id": p.get("id", "?"), "nodes": list(p.get("nodes", [])),
                    "impl": p.get("impl", "?"), "kernel": p.get("kernel"),
                    "fused": bool(p.get("fused")),
                    "abi": family.name if family is not None else str(p.get("abi")),
                    "detail": family.report_detail(p) if family is not None else "",
                    "before_ms": before, "after_ms": after,
                    "speedup": before / after if before and after and after > 0 else None})
    return out


def coverage(manifest: Mapping[str, Any], eager_ms: float | None,
             aten: Iterable[str] = ()) -> float:
    """The share of eager module time now in FACT kernels, in [0, 1] (module docstring).

    Args:
        manifest: the artifact's manifest.json dict (its ``patterns``).
        eager_ms: the module's eager median time under the run's policy, milliseconds.
        aten: ids of cutlass patterns whose ATen nodes the module runs instead of the kernel
            (:meth:`fact.runtime.FactModule.disabled_patterns`); they do not count.

    Returns:
        ``min(1, Σ vendor_ms of the counted cutlass patterns / eager_ms)``; 0 when none has a
        vendor time or ``eager_ms`` is missing or not positive.
    """
    eager = _num(eager_ms)
    skip = set(aten)
    covered = sum(p["before_ms"] for p in pattern_times(manifest)
                  if p["impl"] == "cutlass" and p["id"] not in skip
                  and p["before_ms"] is not None and p["before_ms"] > 0)
    if not eager or eager <= 0 or not math.isfinite(eager) or covered <= 0:
        return 0.0
    return min(1.0, covered / eager)


# ------------------------------------------------------------------ text

def _ms(x: Any) -> str:
    x = _num(x)
    return f"{x:.4f}" if x is not None else "—"


def _err(x: Any) -> str:
    x = _num(x)
    return f"{x:.2e}" if x is not None else "—"


def _x(x: float | None) -> str:
    return f"{x:.2f}x" if x is not None else "—"


def _cell(s: str) -> str:
    return s.replace("|", "\\|")


def _label(key: str, policy: str) -> str:
    return VARIANT_LABELS.get(key, key).format(policy=policy)


def _variants(timings: Mapping[str, Any]) -> list[str]:
    known = [k for k in VARIANT_LABELS if k in timings]
    return known + sorted(k for k in timings if k not in VARIANT_LABELS)


def _render(row: Mapping[str, Any], checks: Mapping[str, Any], timings: Mapping[str, Any],
            manifest: Mapping[str, Any], cov: float, plots: list[str],
            graph: Mapping[str, Any] | None = None) -> str:
    policy = row.get("policy", "?")
    verified = bool(row.get("verified"))
    fact_check, eager_check = checks.get("fact"), checks.get("eager")
    lines = [SECTION_MARKER, "## Module", "",
             f"Written by `fact optimize` after verifying and timing the whole module "
             f"(`{row.get('problem', '?')}`). Times are medians of alternating trials in "
             f"milliseconds; errors are max |out − ref| / max |ref| against float64.", "",
             f"- Policy: `{policy}`"]
    narrowed = narrowed_summary(manifest, graph)
    if narrowed:  # the manifest's "narrowed" values (fact.narrowing)
        lines.append(f"- Narrowed: {narrowed}")

    # Verification.
    on = row.get("verified_on")
    if on is None:
        on = [d.get("name", "?") for d in checks.get("draws", []) or []
              if d.get("informative") and "fact" in d]
    on_text = ", ".join(on) if on else "no informative inputs"
    if verified:
        lines.append(f"- Verified: yes, on {on_text}")
    else:
        reason = _get(fact_check, "reason", "") if fact_check is not None else ""
        lines.append(f"- Verified: **no** ({reason or 'see the checks'}); checked on {on_text}")
    skipped = [d for d in checks.get("draws", []) or [] if not d.get("informative")]
    if skipped:
        lines.append("  - inputs whose float64 reference could not tell right from wrong: "
                     + "; ".join(f"{d.get('name', '?')} ({d.get('reason', '')})"
                                 for d in skipped))
    fact_err = row.get("max_rel_err", _get(fact_check, "max_rel_err"))
    eager_err = row.get("eager_max_rel_err", _get(eager_check, "max_rel_err"))
    lines.append(f"- Max rel err vs float64: FACT {_err(fact_err)}, eager under `{policy}` "
                 f"{_err(eager_err)}")
    fro, limit = _get(fact_check, "rel_fro_err"), _get(fact_check, "limit")
    if fro is not None:
        lines.append(f"- Relative Frobenius error: FACT {_err(fro)} (limit {_err(limit)}), "
                     f"eager {_err(_get(eager_check, 'rel_fro_err'))}")
    if row.get("fallbacks"):
        lines.append(f"- Kernel calls that fell back to ATen: {row['fallbacks']}")
        for pid, reasons in sorted((row.get("fallback_reasons") or {}).items()):
            for reason, calls in reasons.items():
                lines.append(f"  - {pid}, {calls} call{'s' if calls != 1 else ''}: {reason}")
    for pid, reason in sorted((row.get("aten_patterns") or {}).items()):
        if reason not in (HANDED_BACK, INDUCTOR_FASTER):  # those: the composition's table
            lines.append(f"- Pattern {pid} runs its ATen nodes, not its kernel: {reason}")
    lines += composition_lines(row)

    # Timings.
    lines += ["", "| variant | median ms | min ms | max ms | trials |", "|---|---|---|---|---|"]
    for key in _variants(timings):
        t = timings[key]
        trials = _get(t, "trials_ms")
        lines.append(f"| {_label(key, policy)} | {_ms(_get(t, 'median_ms'))} | "
                     f"{_ms(_get(t, 'min_ms'))} | {_ms(_get(t, 'max_ms'))} | "
                     f"{len(trials) if isinstance(trials, Sequence) else '—'} |")
    lines.append("")
    fact_ms = _median_ms(timings.get("fact"))
    for key, label in (("eager", f"eager under `{policy}`"), ("eager_fp32", "eager fp32"),
                       ("inductor", "torch.compile (default mode, same policy)")):
        base = _median_ms(timings.get(key))
        if base is None:
            continue
        if not verified:
            value = "— (not verified: no speedup claimed)"
        else:
            value = _x(base / fact_ms if fact_ms and fact_ms > 0 else None)
        lines.append(f"- Speedup vs {label}: {value}")

    # Coverage and patterns.
    pats = pattern_times(manifest)
    eager_ms = _median_ms(timings.get("eager"))
    aten = set(row.get("aten_patterns") or {})
    cut = [p for p in pats if p["impl"] == "cutlass" and p["id"] not in aten]
    counted = [p for p in cut if p["before_ms"] is not None and p["before_ms"] > 0]
    covered = sum(p["before_ms"] for p in counted)
    ids = ", ".join(p["id"] for p in counted) or "none"
    text = (f"- Coverage: {cov:.1%} of the eager time under `{policy}` is now in FACT kernels: "
            f"the time before FACT of the cutlass patterns ({ids}: {_ms(covered)} ms) over the "
            f"eager module time ({_ms(eager_ms)} ms)")
    if eager_ms and covered > eager_ms:
        text += ", capped at 100 % (per-pattern times are measured outside the module)"
    lines.append(text)
    missing = [p["id"] for p in cut if p not in counted]
    if missing:
        lines.append(f"  - cutlass patterns without a vendor time, not counted: "
                     f"{', '.join(missing)}")
    if pats:
        lines += ["", "Per pattern: before is the fastest verified vendor candidate `factc "
                  "realize` measured (for a fused pattern, the vendor GEMM plus its tail as ATen "
                  "ops, one pass over D per node at the copy bandwidth), or, for a pattern the "
                  "ATen check timed in the module (attention), its own ATen nodes there; after "
                  "is the chosen candidate's time.", "",
                  "| pattern | nodes | impl | kernel | before ms | after ms (chosen) "
                  "| speedup |", "|---|---|---|---|---|---|---|"]
        for p in pats:
            kernel = f"`{p['kernel']}`" if p["kernel"] else "ATen"
            if p["fused"]:
                kernel += " (fused tail)"
            if p["detail"]:
                kernel += f" ({p['abi']}: {p['detail']})"
            if p["id"] in aten:
                kernel += " — not run: its ATen nodes run (see above)"
            lines.append("| " + " | ".join(_cell(c) for c in (
                p["id"], ", ".join(p["nodes"]), p["impl"], kernel, _ms(p["before_ms"]),
                _ms(p["after_ms"]), _x(p["speedup"]))) + " |")
    else:
        lines += ["", "No patterns: the whole module runs as ATen ops."]

    lines += ["", "### Plots", ""] + plots
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ plots

def _plot(artifact_dir: str, row: Mapping[str, Any], timings: Mapping[str, Any],
          manifest: Mapping[str, Any]) -> list[str]:
    """Write the PNGs; return the report's lines about them (links, or why skipped)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return [PLOTS_SKIPPED_NO_MATPLOTLIB]
    title = f"{row.get('problem', '?')} ({row.get('policy', '?')})"
    lines: list[str] = []
    try:
        keys = [k for k in _variants(timings) if _median_ms(timings[k]) is not None]
        if keys:
            med = [_median_ms(timings[k]) for k in keys]
            lo = [max(0.0, m - (_num(_get(timings[k], "min_ms")) or m)) for k, m in zip(keys, med)]
            hi = [max(0.0, (_num(_get(timings[k], "max_ms")) or m) - m) for k, m in zip(keys, med)]
            fig = Figure(figsize=(6.4, 4.0), dpi=100)
            FigureCanvasAgg(fig)
            ax = fig.add_subplot()
            colors = ["tab:orange" if k == "fact" else "tab:gray" for k in keys]
            bars = ax.bar([_label(k, str(row.get("policy", "?"))) for k in keys], med,
                          color=colors, yerr=[lo, hi], capsize=4)
            ax.bar_label(bars, labels=[f"{m:.3g}" for m in med], label_type="center",
                         color="white", fontweight="bold")
            ax.set_ylabel("median time (ms), bars: min-max")
            ax.set_title(f"Module time: {title}")
            ax.margins(y=0.15)
            fig.tight_layout()
            fig.savefig(os.path.join(artifact_dir, TIMES_PNG))
            lines.append(f"![module times]({TIMES_PNG})")
        pats = [p for p in pattern_times(manifest)
                if p["before_ms"] is not None or p["after_ms"] is not None]
        if pats:
            fig = Figure(figsize=(max(6.4, 1.1 * len(pats) + 2), 4.0), dpi=100)
            FigureCanvasAgg(fig)
            ax = fig.add_subplot()
            x = list(range(len(pats)))
            w = 0.38
            before = [p["before_ms"] or 0.0 for p in pats]
            after = [p["after_ms"] or 0.0 for p in pats]
            b1 = ax.bar([i - w / 2 for i in x], before, w, label="before: vendor",
                        color="tab:gray")
            b2 = ax.bar([i + w / 2 for i in x], after, w, label="after: chosen",
                        color="tab:orange")
            ax.bar_label(b1, labels=[f"{v:.3g}" if v else "" for v in before], padding=2,
                         fontsize=8)
            ax.bar_label(b2, labels=[f"{v:.3g}" if v else "" for v in after], padding=2,
                         fontsize=8)
            ax.set_xticks(x, [f"{p['id']} ({p['impl']})" for p in pats])
            ax.set_ylabel("time (ms)")
            ax.set_title(f"Patterns, before and after: {title}")
            ax.legend()
            ax.margins(y=0.15)
            fig.tight_layout()
            fig.savefig(os.path.join(artifact_dir, PATTERNS_PNG))
            lines.append(f"![patterns before and after]({PATTERNS_PNG})")
        else:
            lines.append("pattern plot skipped: no pattern has a time")
    except Exception as exc:  # noqa: BLE001 - a chart must never fail the run
        lines.append(f"plots skipped: {type(exc).__name__}: {exc}")
    return lines


# ------------------------------------------------------------------ entry point

def write_module_report(artifact_dir: str | os.PathLike, row: Mapping[str, Any],
                        checks: Mapping[str, Any], timings: Mapping[str, Any],
                        manifest: Mapping[str, Any] | None = None) -> None:
    """Append the ``## Module`` section to ``<artifact_dir>/report.md`` and write the PNGs.

    Compose's content is kept; a ``## Module`` section from an earlier call (it starts with
    :data:`SECTION_MARKER`) is replaced. A missing report.md is created with a title.

    Args:
        artifact_dir: the artifact directory (``factc compose -o``).
        row: the docs/07-bench-format.md row :func:`fact.optimize.optimize` built (uses
            ``problem``, ``policy``, ``verified``, ``verified_on``, ``max_rel_err``,
            ``eager_max_rel_err``, ``fallbacks``, ``fallback_reasons`` and ``aten_patterns``
            when present).
        checks: :func:`fact.optimize.verify`'s result: ``fact`` and ``eager``
            (:class:`fact.precision.Check` or its dict) and ``draws``.
        timings: variant -> :class:`fact.bench.Timing` (or its dict), milliseconds:
            ``eager_fp32``, ``eager``, ``fact`` and optionally ``inductor``.
        manifest: the manifest dict; ``None`` reads ``<artifact_dir>/manifest.json``.
    """
    artifact_dir = os.fspath(artifact_dir)
    if manifest is None:
        with open(os.path.join(artifact_dir, "manifest.json"), encoding="utf-8") as f:
            manifest = json.load(f)
    cov = coverage(manifest, _median_ms(timings.get("eager")), aten=row.get("aten_patterns") or {})
    for name in (TIMES_PNG, PATTERNS_PNG):  # no stale chart from an earlier run
        path = os.path.join(artifact_dir, name)
        if os.path.exists(path):
            os.remove(path)
    plots = _plot(artifact_dir, row, timings, manifest)
    section = _render(row, checks, timings, manifest, cov, plots, _graph(artifact_dir, manifest))
    replace_section(os.path.join(artifact_dir, "report.md"), SECTION_MARKER, section)


def _graph(artifact_dir: str, manifest: Mapping[str, Any]) -> dict | None:
    """The artifact's graph.json when the manifest narrows values (to count the parameters
    among them), else or when unreadable ``None``."""
    if not manifest.get("narrowed"):
        return None
    try:
        with open(os.path.join(artifact_dir, str(manifest.get("graph", "graph.json"))),
                  encoding="utf-8") as f:
            graph = json.load(f)
    except (OSError, ValueError):
        return None
    return graph if isinstance(graph, dict) else None


def replace_section(path: str, marker: str, section: str) -> str:
    """Write ``section`` (starting with ``marker``) at the end of the markdown file ``path``,
    in place of everything from an earlier ``marker`` on; a missing file starts with the
    title ``# FACT report``. Returns the file's new text."""
    head = "# FACT report\n"
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            head = f.read()
        if marker in head:
            head = head[:head.index(marker)]
    text = head.rstrip("\n") + "\n\n" + section
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return text
