"""Verification of a whole FACT module against float64 (docs/06-verification.md, "Module
verification"): on the user's inputs, and, when their float64 reference cannot tell right
from wrong, on drawn inputs and then drawn weights. :func:`fact.optimize.optimize` and the
backend call :func:`verify` before anything is timed."""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import torch

from fact.bench import float64_reference
from fact.precision import (Check, check_output, eager_precision, fact_precision, flat_tensors,
                            model_dtype, tolerance)
from fact.weight_draws import drawn_weights

__all__ = ["verify", "uninformative_reason", "draw_inputs", "inputs_device_type",
           "UNINFORMATIVE_FRACTION", "DRAW_SCALES", "DRAW_SEED", "OWN_INPUTS"]

#: A reference output is uninformative when fewer than this fraction of its elements differ
#: from its most common value (:func:`uninformative_reason`).
UNINFORMATIVE_FRACTION = 0.01
#: Scales of the standard-normal inputs :func:`verify` draws, tried in this order.
DRAW_SCALES = (1.0, 10.0, 100.0)
#: Seed of those draws (input ``i`` uses ``DRAW_SEED + i``; every scale the same draw).
DRAW_SEED = 20251129
OWN_INPUTS = "own inputs"

def inputs_device_type(inputs: Sequence[Any], model: torch.nn.Module) -> str:
    for x in list(inputs) + list(model.parameters()) + list(model.buffers()):
        if isinstance(x, torch.Tensor):
            return x.device.type
    return "cuda" if torch.cuda.is_available() else "cpu"



def uninformative_reason(ref: Any) -> str:
    """Why a float64 reference cannot tell a right output from a wrong one ("" when it can).

    The rule: a floating output of more than one element is *uninformative* when fewer than
    :data:`UNINFORMATIVE_FRACTION` (1 %) of its elements differ from its most common value:
    all zeros, one constant, or a ReLU/clamp saturated almost everywhere. A kernel that
    writes that value everywhere (or garbage only where the few others are) would pass a
    relative-error check on it. The reference is uninformative when any of its outputs is.
    Single-element outputs and integer outputs (compared exactly) are not judged.
    """
    for i, r in enumerate(flat_tensors(ref)):
        n = r.numel()
        if not r.is_floating_point() or n <= 1:
            continue
        flat = r.detach().reshape(-1)
        if bool((flat == flat[0]).all()):
            return f"output {i}: all {n} elements equal {flat[0].item():g}"
        values, counts = torch.unique(flat, return_counts=True)
        top = int(counts.argmax())
        differ = n - int(counts[top])
        if differ < UNINFORMATIVE_FRACTION * n:
            return (f"output {i}: only {differ} of {n} elements ({differ / n:.3%}) differ "
                    f"from {values[top].item():g}")
    return ""


def draw_inputs(inputs: Sequence[Any], scale: float, seed: int = DRAW_SEED) -> list[Any]:
    """``inputs`` with every floating tensor redrawn as ``scale · torch.randn``.

    Each drawn tensor keeps its input's shape, dtype, device and strides (so a FACT module
    still finds the layouts its kernels were planned for); input ``i`` is drawn from a
    generator seeded ``seed + i``, so every scale scales the same draw. The non-finite
    elements of a floating input stay where they are (an additive attention mask keeps its
    ``-inf``: the keys it removes stay removed, fully masked rows included). Other inputs
    (integer indices, boolean attention masks) are passed through.
    """
    out: list[Any] = []
    for i, x in enumerate(inputs):
        if not (isinstance(x, torch.Tensor) and x.is_floating_point()):
            out.append(x)
            continue
        gen = torch.Generator(device=x.device).manual_seed(seed + i)
        fresh = torch.randn(x.shape, dtype=x.dtype, device=x.device, generator=gen) * scale
        fresh = torch.where(torch.isfinite(x), fresh, x)
        y = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
        try:
            y.copy_(fresh)
        except RuntimeError:  # overlapping strides (an expanded input): keep it dense
            y = fresh
        out.append(y)
    return out


def _fallbacks(module: torch.nn.Module) -> int | None:
    """Kernel calls that fell back to ATen so far, but those of kernels disabled on purpose
    (the ATen check, a changed causal buffer): their ATen nodes are what the module runs."""
    counts = getattr(module, "fallback_counts", None)
    if not callable(counts):
        return None
    disabled = module.disabled_patterns() if hasattr(module, "disabled_patterns") else {}
    return sum(n for pid, n in counts().items() if pid not in disabled)


def _check_on(fact_module: torch.nn.Module, model: torch.nn.Module, inputs: Sequence[Any],
              ref: Any, policy: str, device_type: str) -> dict[str, Check]:
    """FACT and eager under ``policy`` on ``inputs`` against their float64 ``ref``."""
    with torch.no_grad():
        with fact_precision(policy):
            out = fact_module(*inputs)
        with eager_precision(policy, device_type, model_dtype(model, inputs)):
            eager_out = model(*inputs)
    eager = check_output(eager_out, ref, policy)
    flat = out if isinstance(out, (list, tuple)) else [out]
    limit = max(tolerance(policy, t.dtype) for t in flat if isinstance(t, torch.Tensor))
    if eager.rel_fro_err == eager.rel_fro_err and eager.rel_fro_err < float("inf"):
        limit = max(limit, 2.0 * eager.rel_fro_err)
    fact = check_output(out, ref, policy, limit=limit)
    vs_eager = check_output(out, eager_out, policy, limit=float("inf"))
    return {"fact": fact, "eager": eager, "fact_vs_eager": vs_eager}


def verify(fact_module: torch.nn.Module, model: torch.nn.Module, inputs: Sequence[Any],
           policy: str) -> dict[str, Any]:
    """Check the FACT module against float64 (and eager) under ``policy``.

    The FACT limit is the policy's (:func:`fact.precision.tolerance`), or twice eager's own
    error under the same policy when that is larger (what the vendor library reaches on the
    same data, docs/00-design.md §4).

    The check runs on ``inputs`` first. When their float64 reference is uninformative
    (:func:`uninformative_reason`: e.g. Linear, ``x - 2``, ReLU on ``torch.rand`` inputs
    is all zeros, which a kernel writing zeros would match), it runs again on drawn inputs
    (:func:`draw_inputs`: ``randn`` at the scales :data:`DRAW_SCALES`), stopping at the
    first draw whose reference is informative. Drawn inputs whose reference is
    uninformative too are recorded but not checked.

    When no input draw is informative either and the model holds parameters whose elements
    are all equal (a zero-initialized classifier head, :mod:`fact.weight_draws`), those are
    drawn for one more check on ``randn x1`` inputs (the draw named ``"randn x1, drawn
    weights (...)"``), and restored afterwards.

    Verdict (``fact.ok``): on informative own inputs, exactly the check on them. Otherwise
    the check on own inputs must pass *and* FACT must pass on the informative draw; when no
    draw is informative, verification fails and says so.

    Returns:
        ``{"fact": Check, "eager": Check, "fact_vs_eager": Check, "draws": [...]}``.
        ``fact``, ``eager`` and ``fact_vs_eager`` are the checks on the deciding inputs (own
        inputs when informative, else the informative draw; ``fact.ok`` is the verdict).
        ``draws`` lists each set of inputs tried, in order: ``name`` ("own inputs",
        "randn x10", ...), ``scale`` and ``seed`` (``None`` for own inputs),
        ``informative``, ``reason`` (why not), and, where FACT ran, ``fact`` and ``eager``
        (the checks as dicts) and ``fallbacks`` (kernel calls that fell back to ATen).
    """
    device_type = inputs_device_type(inputs, model)
    draws: list[dict[str, Any]] = []

    def record(name: str, scale: float | None, why: str,
               checks: dict[str, Check] | None, fallbacks: int | None) -> None:
        entry: dict[str, Any] = {"name": name, "scale": scale,
                                 "seed": None if scale is None else DRAW_SEED,
                                 "informative": not why, "reason": why}
        if checks is not None:
            entry["fact"] = dataclasses.asdict(checks["fact"])
            entry["eager"] = dataclasses.asdict(checks["eager"])
            entry["fallbacks"] = fallbacks
        draws.append(entry)

    def run(draw_inputs_: Sequence[Any], ref: Any) -> tuple[dict[str, Check], int | None]:
        before = _fallbacks(fact_module)
        checks = _check_on(fact_module, model, draw_inputs_, ref, policy, device_type)
        after = _fallbacks(fact_module)
        return checks, (after - before if before is not None and after is not None else None)

    ref = float64_reference(model, inputs)
    own_why = uninformative_reason(ref)
    own, fallbacks = run(inputs, ref)
    del ref
    record(OWN_INPUTS, None, own_why, own, fallbacks)
    if not own_why:
        return {**own, "draws": draws}

    def decide(name: str, scale: float | None, drawn: Sequence[Any]) -> dict[str, Any] | None:
        """The verdict on ``drawn`` when its reference is informative, else None."""
        ref = float64_reference(model, drawn)
        why = uninformative_reason(ref)
        if why:
            record(name, scale, why, None, None)
            return None
        checks, fallbacks = run(drawn, ref)
        record(name, scale, "", checks, fallbacks)
        fact = checks["fact"]
        reasons = []
        if not own["fact"].ok:
            reasons.append(f"{OWN_INPUTS}: {own['fact'].reason}")
        if not fact.ok:
            reasons.append(f"{name}: {fact.reason}")
        if fallbacks:
            # The kernels did not run on these inputs (e.g. their strides differ from the
            # plan's): ATen passing proves nothing about them.
            reasons.append(f"{name}: {fallbacks} kernel call(s) fell back to ATen, so the "
                           f"kernels were not checked on these inputs")
        verdict = dataclasses.replace(fact, ok=not reasons, reason="; ".join(reasons))
        return {**checks, "fact": verdict, "draws": draws}

    for scale in DRAW_SCALES:
        result = decide(f"randn x{scale:g}", scale, draw_inputs(inputs, scale))
        if result is not None:
            return result
    # No input tells right from wrong: the model's constant parameters (a zero-initialized
    # head) are drawn for one check, on drawn inputs (fact.weight_draws).
    with drawn_weights(model, fact_module) as names:
        if names:
            shown = ", ".join(names[:3]) + (f" (+{len(names) - 3})" if len(names) > 3 else "")
            result = decide(f"randn x1, drawn weights ({shown})", 1.0,
                            draw_inputs(inputs, 1.0))
            if result is not None:
                return result
    whys = "; ".join(f"{d['name']}: {d['reason']}" for d in draws)
    reason = (f"the float64 reference cannot tell right from wrong on any input tried "
              f"(fewer than {UNINFORMATIVE_FRACTION:.0%} of an output's elements differ from "
              f"its most common value): {whys}")
    if not own["fact"].ok:
        reason = f"{OWN_INPUTS}: {own['fact'].reason}; {reason}"
    return {**own, "fact": dataclasses.replace(own["fact"], ok=False, reason=reason),
            "draws": draws}
