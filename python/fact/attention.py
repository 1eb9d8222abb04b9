"""Load-time checks of fused-attention patterns (docs/05-composition.md, "Attention kernels").

The kernel call itself goes through the shared :class:`fact.kernels.KernelBinding` with the
attention ABI (:data:`fact.abi.ATTENTION`). What is particular to attention, and checked once
when an artifact is loaded:

- :func:`check_pattern`: the manifest problem agrees with the graph (q/k/v shapes and
  dtypes, the mask kind and its operand, grouped-query heads, and an output layout
  ``strides.o`` that writes every element of the output value exactly once);
- :func:`causal_buffers` and :func:`tril_mismatch`: a causal pattern whose mask discovery
  proved from a registered buffer (``torch.tril(torch.ones(...))``, marked ``"value":
  "tril"`` in graph.json) is only run as a kernel while the module's buffer still is
  lower-triangular; otherwise the runtime runs the pattern's ATen nodes.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping

import torch

from fact.abi import ATTENTION_MASKS, TENSOR_MASKS
from fact.export import value_class

__all__ = ["check_pattern", "causal_buffers", "tril_mismatch", "TRIL_VALUE", "summary"]

#: graph.json's ``value`` of a buffer export found equal to ``torch.tril(torch.ones(...))``.
TRIL_VALUE = "tril"

_SIZES = ("batch", "heads", "kv_heads", "seq_q", "seq_k", "head_dim")


def _output_writes_each_element_once(strides: list[int], extents: list[int],
                                     numel: int) -> bool:
    """Whether offsets ``sum(i_d * strides[d])`` over ``0 <= i_d < extents[d]`` cover
    ``range(numel)`` exactly once (no overlap, no gap, nothing out of range)."""
    if math.prod(extents) != numel:
        return False
    dims = sorted((s, n) for s, n in zip(strides, extents) if n > 1)
    reach = 0  # the largest offset the inner dimensions reach
    for s, n in dims:
        if s <= reach:
            return False  # overlaps an inner dimension's offsets
        reach += s * (n - 1)
    return reach == numel - 1


def check_pattern(pattern: Mapping, types: Mapping[str, dict | None]) -> None:
    """Check an attention manifest pattern against the graph's value types.

    Args:
        pattern: the manifest entry (``problem``, ``operands``, ``output``).
        types: graph value name -> ``type`` (``dtype``, ``shape``, ``strides``).

    Raises:
        ValueError: a size is missing or not positive, ``heads % kv_heads != 0``, the mask
            kind is unknown or its ``mask`` operand is missing (or present without a mask
            tensor kind), q/k/v are not ``[B, H, T, D]`` / ``[B, Hkv, Tk, D]`` values of the
            problem's dtype, or ``strides.o`` does not map ``[B, H, Tq, D]`` one to one
            onto the output value.
    """
    p = pattern.get("problem") or {}
    missing = [k for k in _SIZES + ("scale", "mask", "strides") if k not in p]
    if missing:
        raise ValueError(f"attention problem lacks {', '.join(missing)}")
    b, h, hkv, tq, tk, d = (int(p[k]) for k in _SIZES)
    if min(b, h, hkv, tq, tk, d) <= 0:
        raise ValueError(f"attention problem has a size <= 0: {[b, h, hkv, tq, tk, d]}")
    if h % hkv:
        raise ValueError(f"heads {h} is not a multiple of kv_heads {hkv}")
    mask = p["mask"]
    if mask not in ATTENTION_MASKS:
        raise ValueError(f"unknown mask kind {mask!r} (known: {', '.join(ATTENTION_MASKS)})")
    operands = pattern.get("operands") or {}
    for role in ("q", "k", "v"):
        if role not in operands:
            raise ValueError(f"operand {role} is missing")
    if (mask in TENSOR_MASKS) != ("mask" in operands):
        raise ValueError(f"mask kind {mask!r} {'needs' if mask in TENSOR_MASKS else 'takes no'}"
                         f" mask operand")
    want_shape = {"q": [b, h, tq, d], "k": [b, hkv, tk, d], "v": [b, hkv, tk, d]}
    dtype = p.get("dtype")
    for role, shape in want_shape.items():
        t = types.get(operands[role])
        if t is None:
            continue
        # The bmm form reads 3-D [N, T, D] operands: one head (docs/03-rules.md).
        if t["shape"] != shape and not (shape[1] == 1 and t["shape"] == [shape[0]] + shape[2:]):
            raise ValueError(f"{role} = {operands[role]} has shape {t['shape']}, the problem "
                             f"says {shape}")
        if dtype is not None and t["dtype"] != dtype:
            raise ValueError(f"{role} = {operands[role]} has dtype {t['dtype']}, the problem "
                             f"says {dtype}")
    so = (p["strides"] or {}).get("o")
    out = types.get(pattern.get("output", ""))
    if not isinstance(so, list) or len(so) != 3:
        raise ValueError(f"strides.o must be [batch, head, row] strides, got {so!r}")
    if out is not None:
        numel = math.prod(out["shape"])
        if not _output_writes_each_element_once([int(s) for s in so] + [1], [b, h, tq, d],
                                                numel):
            raise ValueError(f"strides.o {so} does not map O [{b}, {h}, {tq}, {d}] one to one "
                             f"onto the output {pattern.get('output')} of shape {out['shape']}")


def causal_buffers(problem: Mapping, read: Iterable[str],
                   params: Mapping[str, Mapping]) -> list[str]:
    """The buffers a causal pattern's mask was proven from, to re-check when loading.

    Args:
        problem: the manifest problem (only ``mask == "causal"`` patterns have any).
        read: the graph values the pattern's nodes read.
        params: placeholder name -> graph ``params`` entry (``kind``, ``target``, ``value``).

    Returns:
        ``problem["causal_buffer"]``, the buffer discovery proved the mask from, when the plan
        names one (whether or not the pattern's nodes read it: a mask chain shared by two
        attentions stays outside both). Otherwise, for attention written by hand (``form``
        other than ``"sdpa"``, whose ``is_causal`` needs no buffer): the params among ``read``
        marked ``"value": "tril"``, or, when none is marked (a graph exported before the
        marker existed), every buffer or constant among ``read`` (such a pattern's mask chain
        slices and compares the buffer).
    """
    if problem.get("mask") != "causal":
        return []
    if problem.get("causal_buffer"):
        return [str(problem["causal_buffer"])]
    if problem.get("form") == "sdpa":
        return []
    names = [n for n in dict.fromkeys(read) if n in params]
    marked = [n for n in names if params[n].get("value") == TRIL_VALUE]
    return marked or [n for n in names if params[n].get("kind") in ("buffer", "constant")]


def tril_mismatch(t: torch.Tensor) -> str:
    """Why ``t`` is not of the value class ``"tril"``, "" when it is.

    The class is :func:`fact.export.value_class`'s, the one export records and discovery
    proves the causal mask from: rank >= 2, every leading dimension of size 1, the last two
    ``[R, C]`` equal to ``torch.tril(torch.ones(R, C))`` exactly (1 or ``True`` on and below
    the diagonal, 0 above it). One comparison on ``t``'s device; the reason says what differs.
    """
    if value_class(t) == TRIL_VALUE:
        return ""
    if t.dim() < 2:
        return f"it has {t.dim()} dimension(s)"
    if any(s != 1 for s in t.shape[:-2]):
        return f"its shape {list(t.shape)} has leading dimensions larger than 1"
    if t.device.type == "meta":
        return "it is on the meta device, so its values cannot be checked"
    rows, cols = t.shape[-2], t.shape[-1]
    want = torch.ones(rows, cols, dtype=torch.bool, device=t.device).tril().to(t.dtype)
    wrong = int((t.reshape(rows, cols) != want).sum())
    if wrong == 0:
        return f"it has {t.numel()} elements, more than export inspects"
    return f"{wrong} of its {t.numel()} elements differ from tril(ones({rows}, {cols}))"


def summary(problem: Mapping) -> str:
    """One line naming an attention problem: mask kind, heads (GQA ratio), head dim, layout.

    E.g. ``"mask causal, 8 heads (MHA), D 96, T 512x512, out bthd"``.
    """
    h, hkv = int(problem.get("heads", 0)), int(problem.get("kv_heads", 0) or 1)
    heads = (f"{h} heads (MHA)" if h == hkv else
             f"{h} heads / {hkv} kv heads (GQA {h // hkv}:1)")
    return (f"mask {problem.get('mask', '?')}, {heads}, D {problem.get('head_dim', '?')}, "
            f"T {problem.get('seq_q', '?')}x{problem.get('seq_k', '?')}, "
            f"out {problem.get('output_layout', '?')}")
