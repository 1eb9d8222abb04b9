"""The norm family on the Python side: ``FactNormArgs``, how a norm kernel is called, and
the checks particular to norms (docs/05-composition.md, "Norm kernels").

A manifest entry with ``"abi": "norm"`` (rule ``norm``, problem kind ``norm``) replaces a
LayerNorm or RMSNorm over the last dimension — with the residual add before it, for add &
norm — by one kernel taking :class:`FactNormArgs` (``src/families/norm/abi.h``). The custom
op's inputs are x, the residual, the weight and the bias first (those the problem names);
x and the residual are read in place as ``[rows, cols]`` with their actual row stride, the
output is a new contiguous tensor. When the graph reads the sum after the pattern, the
manifest entry lists ``"extra_outputs": {"sum": <value>}`` and the kernel writes the sum
into a second new tensor (:meth:`NormCall.args_extra`); otherwise ``sum`` is NULL.

Tests: ``tests/python/families/test_norm.py``.
"""

from __future__ import annotations

import ctypes
import math
from typing import Mapping, Sequence

import torch

from fact.families.family import Family, KernelCall, role_indices

__all__ = ["FactNormArgs", "NormCall", "Norm", "FAMILY", "check_pattern", "row_stride"]


class FactNormArgs(ctypes.Structure):
    """``FactNormArgs`` of ``src/families/norm/abi.h`` (strides in elements).

    For each row ``r < rows`` of ``cols`` elements: ``s = x[r] + residual[r]`` (rounded to
    x's dtype; ``s = x`` without a residual), ``out[r] = (s - mu) / sqrt(var + eps) * weight
    + bias`` (RMSNorm: ``mu = 0``, ``var = mean(s^2)``), ``sum[r] = s`` when ``sum`` is not
    NULL. ``residual``, ``weight``, ``bias`` and ``sum`` are NULL when absent.
    """

    _fields_ = [
        ("rows", ctypes.c_int64), ("cols", ctypes.c_int64),
        ("x", ctypes.c_void_p), ("x_row_stride", ctypes.c_int64),
        ("residual", ctypes.c_void_p), ("residual_row_stride", ctypes.c_int64),
        ("weight", ctypes.c_void_p), ("bias", ctypes.c_void_p),
        ("out", ctypes.c_void_p), ("out_row_stride", ctypes.c_int64),
        ("sum", ctypes.c_void_p), ("sum_row_stride", ctypes.c_int64),
        ("eps", ctypes.c_float), ("flags", ctypes.c_int32),
    ]


def row_stride(t: torch.Tensor) -> int | None:
    """The stride between the rows of ``t`` seen as ``[rows, t.shape[-1]]``, or None when its
    last dim is not unit stride or its leading dims are not one evenly strided run (size-1
    dims have any stride). A tensor of one row gives its last dim's size."""
    shape, strides = list(t.shape), list(t.stride())
    if not shape:
        return None
    if shape[-1] != 1 and strides[-1] != 1:
        return None
    dims = [(n, s) for n, s in zip(shape[:-1], strides[:-1]) if n != 1]
    if not dims:
        return shape[-1]
    for (n_outer, s_outer), (n_inner, s_inner) in zip(dims, dims[1:]):
        if s_outer != s_inner * n_inner:
            return None
    return dims[-1][1]


_FIELDS = ("norm", "rows", "cols", "dtype", "out_dtype", "eps", "weight", "bias", "residual",
           "strides")


def check_pattern(pattern: Mapping, types: Mapping[str, dict | None]) -> None:
    """Check a norm manifest pattern against the graph's value types.

    Raises:
        ValueError: a problem field is missing, rows or cols are not positive, the norm is
            neither ``layer`` nor ``rms``, an operand the problem names is missing (or one it
            does not name is present), x or the residual is not ``rows x cols`` of the
            problem's dtype, weight or bias is not a ``[cols]`` vector, or the extra output
            ``sum`` is listed without a residual or differs from the problem's
            ``sum_output``.
    """
    p = pattern.get("problem") or {}
    missing = [k for k in _FIELDS if k not in p]
    if missing:
        raise ValueError(f"norm problem lacks {', '.join(missing)}")
    rows, cols = int(p["rows"]), int(p["cols"])
    if rows <= 0 or cols <= 0:
        raise ValueError(f"norm problem has rows {rows}, cols {cols}: both must be positive")
    if p["norm"] not in ("layer", "rms"):
        raise ValueError(f"unknown norm {p['norm']!r} (known: layer, rms)")
    operands = pattern.get("operands") or {}
    if "x" not in operands:
        raise ValueError("operand x is missing")
    for role in ("residual", "weight", "bias"):
        if bool(p[role]) != (role in operands):
            raise ValueError(f"operand {role} {'is missing' if p[role] else 'is not in the problem'}")
    for role in ("x", "residual"):
        t = types.get(operands.get(role, ""))
        if t is None:
            continue
        if math.prod(t["shape"]) != rows * cols or t["shape"][-1] != cols or t["dtype"] != p["dtype"]:
            raise ValueError(f"operand {role} {operands[role]} is {t['dtype']}{t['shape']}, not "
                             f"{rows} rows of {cols} {p['dtype']} elements")
    for role in ("weight", "bias"):
        t = types.get(operands.get(role, ""))
        if t is not None and t["shape"] != [cols]:
            raise ValueError(f"operand {role} {operands[role]} has shape {t['shape']}, not [{cols}]")
    extra = pattern.get("extra_outputs") or {}
    if set(extra) - {"sum"}:
        raise ValueError(f"norm kernels write no extra outputs {sorted(set(extra) - {'sum'})}")
    if "sum" in extra and (not p["residual"] or extra["sum"] != p.get("sum_output")):
        raise ValueError(f"extra output sum = {extra['sum']} but the problem's sum_output is "
                         f"{p.get('sum_output')!r} (residual {p['residual']})")


class NormCall(KernelCall):
    """One norm pattern's call: operand indices and the problem's sizes, held once."""

    def __init__(self, pattern: Mapping, input_names: Sequence[str]) -> None:
        p = pattern["problem"]
        self._rows, self._cols, self._eps = int(p["rows"]), int(p["cols"]), float(p["eps"])
        self._ix = role_indices(pattern, input_names)
        self._writes_sum = "sum" in (pattern.get("extra_outputs") or {})

    def check(self, inputs: Sequence[torch.Tensor]) -> str:
        """x and the residual must be evenly strided rows with a unit-stride last dim;
        weight and bias contiguous."""
        for role in ("x", "residual"):
            if role in self._ix and row_stride(inputs[self._ix[role]]) is None:
                t = inputs[self._ix[role]]
                return (f"{role} has strides {list(t.stride())}: not rows of unit-stride "
                        f"elements the kernel can read")
        for role in ("weight", "bias"):
            if role in self._ix and not inputs[self._ix[role]].is_contiguous():
                return f"{role} is not contiguous"
        return ""

    def _fill(self, inputs: Sequence[torch.Tensor], out: torch.Tensor,
              sum_out: torch.Tensor | None) -> FactNormArgs:
        x = inputs[self._ix["x"]]
        a = FactNormArgs(rows=self._rows, cols=self._cols, x=x.data_ptr(), x_row_stride=row_stride(x),
                         out=out.data_ptr(), out_row_stride=self._cols, eps=self._eps, flags=0)
        if "residual" in self._ix:
            r = inputs[self._ix["residual"]]
            a.residual, a.residual_row_stride = r.data_ptr(), row_stride(r)
        if "weight" in self._ix:
            a.weight = inputs[self._ix["weight"]].data_ptr()
        if "bias" in self._ix:
            a.bias = inputs[self._ix["bias"]].data_ptr()
        if sum_out is not None:
            a.sum, a.sum_row_stride = sum_out.data_ptr(), self._cols
        return a

    def args(self, inputs: Sequence[torch.Tensor], out: torch.Tensor) -> FactNormArgs:
        """The arguments for a call writing ``out`` (contiguous) and no sum.

        Raises:
            ValueError: the manifest entry asks for the sum (use :meth:`args_extra`).
        """
        if self._writes_sum:
            raise ValueError("this norm pattern writes the sum: args_extra gives its tensor")
        return self._fill(inputs, out, None)

    def args_extra(self, inputs: Sequence[torch.Tensor], out: torch.Tensor,
                   extra: Mapping[str, torch.Tensor]) -> FactNormArgs:
        """The arguments for a call writing ``out`` and ``extra["sum"]`` (both contiguous).

        Raises:
            ValueError: ``extra`` holds another role than ``sum``.
        """
        if set(extra) != {"sum"}:
            raise ValueError(f"norm kernels write the sum only, not {sorted(extra)}")
        return self._fill(inputs, out, extra["sum"])


class Norm(Family):
    """LayerNorm / RMSNorm kernels (``src/families/norm/``), with the residual add."""

    name = "norm"
    rules = ("norm",)
    problem_kind = "norm"
    args_type = FactNormArgs
    roles = ("x", "residual", "weight", "bias")
    errors = {1: "FACT_NORM_ERR_SHAPE: cols differs from the kernel's, or no rows",
              2: "FACT_NORM_ERR_STRIDE: a stride or pointer breaks the kernel's vector loads",
              3: "FACT_NORM_ERR_OPERAND: residual, weight, bias or sum given to a kernel "
                 "without it, or missing",
              4: "FACT_NORM_ERR_RANGE: more rows than the grid holds"}
    aten_check_by_default = True

    def check_pattern(self, pattern: Mapping, types: Mapping[str, dict | None]) -> None:
        check_pattern(pattern, types)

    def bind(self, pattern: Mapping, input_names: Sequence[str],
             expected: Mapping[str, dict]) -> NormCall:
        return NormCall(pattern, input_names)

    def report_detail(self, pattern: Mapping) -> str:
        p = pattern.get("problem") or {}
        parts = [f"{'LayerNorm' if p.get('norm') == 'layer' else 'RMSNorm'} over {p.get('cols')}"]
        if p.get("residual"):
            parts.append("with the residual add" + (" (writes the sum)"
                                                    if pattern.get("extra_outputs") else ""))
        return ", ".join(parts)


#: The norm family (one line of :data:`fact.families.FAMILIES`).
FAMILY = Norm()
