"""Precision policies (docs/00-design.md §4) and the module-level accuracy check (docs/00-design.md §5).

A run has one policy: ``fp32``, ``tf32`` or ``bf16``. By default it follows PyTorch's own
switch, ``torch.get_float32_matmul_precision()``: ``highest`` -> ``fp32``; ``high`` and
``medium`` -> ``tf32``. ``bf16`` is never chosen silently.

Eager PyTorch "under a policy" means:

- ``fp32``: ``torch.set_float32_matmul_precision("highest")``;
- ``tf32``: ``torch.set_float32_matmul_precision("high")``;
- ``bf16``: ``torch.autocast(device_type, dtype=torch.bfloat16)`` with matmul precision
  ``"high"``: autocast runs matmul-like ops (GEMM, attention, linear) on bf16 operands with
  fp32 accumulation and keeps elementwise ops, softmax and norms in fp32, which is the
  policy's meaning for an fp32 model.

fp16/bf16 models run in their own dtype under every policy.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Iterator

import torch

__all__ = ["POLICIES", "TOLERANCE", "NARROW_DTYPES", "default_policy", "resolve_policy",
           "matmul_precision", "model_dtype", "eager_precision", "fact_precision", "tolerance",
           "Check", "check_output"]

POLICIES = ("fp32", "tf32", "bf16")

#: Relative Frobenius error vs float64 allowed for a whole module's output, by policy.
TOLERANCE: dict[str, float] = {"fp32": 1e-5, "tf32": 5e-3, "bf16": 2e-2}

# An output stored in a narrow dtype cannot be closer to float64 than its rounding allows,
# whatever the policy: the limit is at least this much for such an output.
_DTYPE_TOLERANCE: dict[torch.dtype, float] = {torch.bfloat16: 2e-2, torch.float16: 5e-3}

_MATMUL_PRECISION = {"fp32": "highest", "tf32": "high", "bf16": "high"}

#: Floating dtypes a model may be written in that run as they are under every policy.
NARROW_DTYPES = (torch.bfloat16, torch.float16)


def model_dtype(model: torch.nn.Module, inputs=()) -> torch.dtype:
    """The model's own floating dtype: bf16 or fp16 when every floating parameter, buffer and
    tensor input is that one dtype (a model converted with ``.to(torch.bfloat16)``), else
    float32 (mixed or fp32 models are the policy's to lower)."""
    seen = {x.dtype for x in [*model.parameters(), *model.buffers(), *inputs]
            if isinstance(x, torch.Tensor) and x.is_floating_point()}
    return seen.pop() if len(seen) == 1 and next(iter(seen)) in NARROW_DTYPES else torch.float32


def default_policy() -> str:
    """The policy PyTorch's current setting implies: ``"fp32"`` or ``"tf32"`` (never bf16)."""
    return "fp32" if torch.get_float32_matmul_precision() == "highest" else "tf32"


def resolve_policy(precision: str | None) -> str:
    """``precision`` checked (``fp32|tf32|bf16``), or :func:`default_policy` when ``None``.

    Raises:
        ValueError: ``precision`` is not one of the three policy names.
    """
    if precision is None:
        return default_policy()
    if precision not in POLICIES:
        raise ValueError(f"unknown precision policy {precision!r}: expected one of "
                         f"{', '.join(POLICIES)}")
    return precision


def matmul_precision(policy: str) -> str:
    """The ``torch.set_float32_matmul_precision`` value for ``policy``."""
    return _MATMUL_PRECISION[resolve_policy(policy)]


@contextlib.contextmanager
def _float32_matmul_precision(value: str) -> Iterator[None]:
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(value)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(previous)


@contextlib.contextmanager
def eager_precision(policy: str, device_type: str = "cuda",
                    model_dtype: torch.dtype = torch.float32) -> Iterator[None]:
    """Run eager PyTorch under ``policy`` inside the block (restores the previous state).

    Args:
        policy: ``fp32``, ``tf32`` or ``bf16`` (see the module docstring for each meaning).
        device_type: ``"cuda"`` or ``"cpu"``: the device autocast applies to under bf16.
        model_dtype: the model's own floating dtype (:func:`model_dtype`). A bf16/fp16 model
            runs in its own dtype under every policy (docs/00-design.md §4): no autocast, so
            its baseline is its own eager, not the slower autocast run of it.
    """
    policy = resolve_policy(policy)
    with _float32_matmul_precision(_MATMUL_PRECISION[policy]):
        if policy == "bf16" and model_dtype not in NARROW_DTYPES:
            with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
                yield
        else:
            yield


@contextlib.contextmanager
def fact_precision(policy: str) -> Iterator[None]:
    """The setting a FACT module runs under for ``policy``.

    FACT's kernels fix their own precision; the ATen ops the module still runs (everything
    outside a pattern, and vendor patterns) use the policy's matmul precision. No autocast:
    the graph's dtypes are the ones the kernels were built for.
    """
    with _float32_matmul_precision(matmul_precision(policy)):
        yield


def tolerance(policy: str, dtype: torch.dtype = torch.float32) -> float:
    """Allowed relative Frobenius error vs float64 for an output of ``dtype`` under ``policy``."""
    return max(TOLERANCE[resolve_policy(policy)], _DTYPE_TOLERANCE.get(dtype, 0.0))


@dataclasses.dataclass
class Check:
    """Result of :func:`check_output`.

    Attributes:
        ok: the output passes.
        rel_fro_err: ``‖out − ref‖_F / ‖ref‖_F`` over all outputs (float64).
        max_rel_err: ``max |out − ref| / max |ref|`` over all outputs.
        limit: the relative Frobenius limit applied.
        reason: why it failed ("" when ok).
    """

    ok: bool
    rel_fro_err: float
    max_rel_err: float
    limit: float
    reason: str = ""


def flat_tensors(outputs: object) -> list[torch.Tensor]:
    """The tensors of a (nested) output structure — tuples, lists, dict values — in order,
    as :func:`check_output` counts them."""
    if isinstance(outputs, torch.Tensor):
        return [outputs]
    if isinstance(outputs, (list, tuple)):
        return [t for o in outputs for t in flat_tensors(o)]
    if isinstance(outputs, dict):
        return [t for o in outputs.values() for t in flat_tensors(o)]
    return []


def check_output(out: object, ref: object, policy: str, limit: float | None = None) -> Check:
    """Check a module's output against its float64 reference under ``policy``.

    Fails on: a different number of tensors or a shape mismatch; NaN or Inf in the output
    where the reference is finite, a non-NaN where the reference is NaN (NaNs are equal only
    where the reference is NaN: a fully masked attention row is NaN in eager and float64
    alike), an element that is not the reference's infinity where it has one; a trivially
    wrong output (all elements equal, e.g. all zeros) when the reference is not constant; a
    relative Frobenius error above ``limit`` (default :func:`tolerance` of the policy and the
    output's dtype) over the elements where the reference is finite.

    Args:
        out: a tensor or a (nested) tuple/list of tensors, any float dtype, any device.
        ref: the same structure, usually float64.
        policy: ``fp32``, ``tf32`` or ``bf16``.
        limit: override of the relative Frobenius limit.
    """
    outs, refs = flat_tensors(out), flat_tensors(ref)
    if len(outs) != len(refs) or not outs:
        return Check(False, math.inf, math.inf, limit or 0.0,
                     f"{len(outs)} output tensors, reference has {len(refs)}")
    if limit is None:
        limit = max(tolerance(policy, o.dtype) for o in outs)
    num = den = 0.0
    max_err = max_ref = 0.0
    for i, (o, r) in enumerate(zip(outs, refs)):
        if tuple(o.shape) != tuple(r.shape):
            return Check(False, math.inf, math.inf, limit,
                         f"output {i} has shape {tuple(o.shape)}, reference "
                         f"{tuple(r.shape)}")
        o64 = o.detach().to(device=r.device, dtype=torch.float64)
        r64 = r.detach().to(torch.float64)
        if not o.is_floating_point():
            if not torch.equal(o64, r64):
                return Check(False, math.inf, math.inf, limit,
                             f"output {i} ({o.dtype}) differs from the reference")
            continue
        # Non-finite values are compared element by element: NaN matches NaN only where
        # the reference is NaN (e.g. an attention row whose keys are all masked), ±Inf
        # only the same infinity, and a finite reference needs a finite output.
        ref_finite = torch.isfinite(r64)
        bad = int((ref_finite & ~torch.isfinite(o64)).sum())
        if bad:
            return Check(False, math.inf, math.inf, limit,
                         f"output {i} has {bad} NaN/Inf elements where the float64 reference "
                         f"is finite")
        ref_nan = torch.isnan(r64)
        bad = int((ref_nan & ~torch.isnan(o64)).sum())
        if bad:
            return Check(False, math.inf, math.inf, limit,
                         f"output {i} has {bad} elements that are not NaN where the float64 "
                         f"reference is NaN")
        bad = int((torch.isinf(r64) & (o64 != r64)).sum())
        if bad:
            return Check(False, math.inf, math.inf, limit,
                         f"output {i} has {bad} elements that differ from the float64 "
                         f"reference's infinities")
        if o64.numel() > 1:
            ref_constant = bool((r64 == r64.reshape(-1)[0]).all())
            out_constant = bool((o64 == o64.reshape(-1)[0]).all())
            if out_constant and not ref_constant:
                return Check(False, math.inf, math.inf, limit,
                             f"output {i} is constant ({o64.reshape(-1)[0].item()}) but the "
                             f"reference is not: trivially wrong")
        mask = torch.isfinite(r64)
        diff = torch.where(mask, o64 - r64, torch.zeros_like(r64))
        rr = torch.where(mask, r64, torch.zeros_like(r64))
        num += float((diff * diff).sum())
        den += float((rr * rr).sum())
        if diff.numel():
            max_err = max(max_err, float(diff.abs().max()))
            max_ref = max(max_ref, float(rr.abs().max()))
    rel_fro = math.sqrt(num) / math.sqrt(den) if den > 0 else (0.0 if num == 0 else math.inf)
    max_rel = max_err / max_ref if max_ref > 0 else (0.0 if max_err == 0 else math.inf)
    if not rel_fro <= limit:
        return Check(False, rel_fro, max_rel, limit,
                     f"relative Frobenius error {rel_fro:.3e} exceeds the {policy} limit "
                     f"{limit:.1e}")
    return Check(True, rel_fro, max_rel, limit)
