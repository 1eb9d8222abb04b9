"""The ATen check: a kernel that realize could only compare with a bound of its ATen path is
timed against that path inside the composed module (docs/05-composition.md, "The ATen check").

``factc realize`` cannot run ATen, so for an attention pattern its vendor candidate is a
lower bound (eager's two GEMMs alone) that does not decide; realized.json marks such a
pattern ``"aten_check": "module"``. Here each such pattern's kernel and its ATen nodes (the
binding's fallback, exactly what the module runs without the kernel) are timed on the inputs
the module gives the pattern, alternating, in one process, under the policy's settings
(:func:`fact.precision.fact_precision`). When the ATen nodes are faster, the binding is
disabled with the two times as the reason, so the module runs them.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from fact.bench import time_variants
from fact.families import find_family
from fact.precision import fact_precision

__all__ = ["aten_check_patterns", "check_aten_paths"]


def aten_check_patterns(manifest: dict) -> list[str]:
    """Ids of the manifest's kernel patterns whose ATen path must be timed in the module:
    those realize marked ``"aten_check": "module"``, and, in manifests written before the
    mark existed, those of a family whose kernels realize only compares with a bound
    (:attr:`fact.families.Family.aten_check_by_default`: attention)."""
    return [p["id"] for p in manifest.get("patterns", [])
            if p.get("impl") == "cutlass"
            and (p.get("aten_check") == "module" or _checked_by_default(p))]


def _checked_by_default(pattern: dict) -> bool:
    family = find_family(pattern)
    return family is not None and family.aten_check_by_default


def check_aten_paths(module: torch.nn.Module, inputs: Sequence[Any], policy: str,
                     trials: int = 20) -> dict[str, dict]:
    """Time each :func:`aten_check_patterns` kernel against its ATen nodes; disable the
    kernels that are slower.

    Args:
        module: a :class:`fact.runtime.FactModule` (its ``bindings`` and ``manifest``).
        inputs: the module's forward inputs; one forward pass records each pattern's inputs.
        policy: the precision policy the module runs under.
        trials: timed calls per variant (at least 20).

    Returns:
        Pattern id -> ``{"kernel_ms", "aten_ms", "kernel_spread_ms", "aten_spread_ms",
        "kept"}`` (milliseconds, medians and [min, max]); ``kept`` is False when the ATen
        nodes were faster and the kernel is now disabled. A pattern the forward pass did not
        reach, or whose binding is already disabled, is left out.
    """
    ids = [pid for pid in aten_check_patterns(getattr(module, "manifest", None) or {})
           if pid in module.bindings and not module.bindings[pid].disabled_reason]
    if not ids:
        return {}
    bindings = {pid: module.bindings[pid] for pid in ids}
    for b in bindings.values():
        b.record_inputs = True
    try:
        with torch.no_grad(), fact_precision(policy):
            module(*inputs)
    finally:
        for b in bindings.values():
            b.record_inputs = False
    results: dict[str, dict] = {}
    for pid, b in bindings.items():
        recorded = b.recorded_inputs
        b.recorded_inputs = None
        if recorded is None:
            continue
        if b.mismatch(recorded):  # the kernel would not run on these inputs anyway
            continue
        variants = {"kernel": lambda b=b, x=recorded: b(x), "aten": lambda b=b, x=recorded: b.fallback(x)}
        t = time_variants(variants, trials=trials,
                          contexts={k: (lambda: fact_precision(policy)) for k in variants})
        kept = t["kernel"].median_ms <= t["aten"].median_ms
        results[pid] = {"kernel_ms": t["kernel"].median_ms, "aten_ms": t["aten"].median_ms,
                        "kernel_spread_ms": list(t["kernel"].spread()),
                        "aten_spread_ms": list(t["aten"].spread()), "kept": kept}
        if not kept:
            b.disabled_reason = (f"its ATen nodes measured faster in this module: "
                                 f"{t['aten'].median_ms:.3f} ms against the kernel's "
                                 f"{t['kernel'].median_ms:.3f} ms")
    return results
