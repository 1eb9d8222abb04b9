"""The rope family on the Python side: ``FactRopeArgs``, how a rope kernel is called, and
the checks particular to rotary embeddings (docs/05-composition.md, "Rope kernels").

A manifest entry with ``"abi": "rope"`` (rule ``rope``, problem kind ``rope``) replaces
``x * cos + rotate(x) * sin`` of one tensor (q or k) by one kernel taking
:class:`FactRopeArgs` (``src/families/rope/abi.h``). The custom op's inputs are x, cos and
sin first; each is read in place as ``[n0, n1, n2, head_dim]`` with its actual strides (cos
and sin broadcast: stride 0). The output is a new tensor with the strides the graph recorded
for the pattern's output (:attr:`Rope.graph_strided_output`), the layout the attention that
reads it was planned for, so no copy comes between them.

Tests: ``tests/python/families/test_rope.py``.
"""

from __future__ import annotations

import ctypes
import math
from typing import Mapping, Sequence

import torch

from fact.families.family import Family, KernelCall, role_indices

__all__ = ["FactRopeArgs", "RopeCall", "Rope", "FAMILY", "check_pattern", "leading_strides"]


class FactRopeArgs(ctypes.Structure):
    """``FactRopeArgs`` of ``src/families/rope/abi.h`` (strides in elements).

    x, cos, sin and out are ``[n0, n1, n2, head_dim]``; with ``H = head_dim / 2``, the
    half-split form writes ``out[j] = x[j] cos[j] - x[j+H] sin[j]`` for ``j < H`` and
    ``x[j] cos[j] + x[j-H] sin[j]`` after; the pairs form ``x[j] cos[j] - x[j+1] sin[j]``
    for even ``j`` and ``x[j] cos[j] + x[j-1] sin[j]`` for odd.
    """

    _fields_ = [
        ("n0", ctypes.c_int64), ("n1", ctypes.c_int64), ("n2", ctypes.c_int64),
        ("head_dim", ctypes.c_int64),
        ("x", ctypes.c_void_p), ("x_stride0", ctypes.c_int64), ("x_stride1", ctypes.c_int64),
        ("x_stride2", ctypes.c_int64),
        ("cos", ctypes.c_void_p), ("cos_stride0", ctypes.c_int64),
        ("cos_stride1", ctypes.c_int64), ("cos_stride2", ctypes.c_int64),
        ("sin", ctypes.c_void_p), ("sin_stride0", ctypes.c_int64),
        ("sin_stride1", ctypes.c_int64), ("sin_stride2", ctypes.c_int64),
        ("out", ctypes.c_void_p), ("out_stride0", ctypes.c_int64),
        ("out_stride1", ctypes.c_int64), ("out_stride2", ctypes.c_int64),
        ("flags", ctypes.c_int32),
    ]


def leading_strides(t: torch.Tensor, shape: Sequence[int]) -> tuple[int, int, int] | None:
    """The strides of ``t``'s three leading dims seen as ``shape`` (x's, rank <= 4, padded on
    the left to ``[n0, n1, n2, head_dim]``): 0 where ``t`` broadcasts or a dim has size 1.
    None when ``t`` does not broadcast to ``shape`` or its last dim is not unit stride."""
    if t.dim() == 0 or t.dim() > len(shape) or len(shape) > 4 or t.shape[-1] != shape[-1]:
        return None
    if t.shape[-1] > 1 and t.stride(-1) != 1:
        return None
    try:
        view = t.expand(*shape)
    except RuntimeError:
        return None
    out = [0, 0, 0]
    for i in range(len(shape) - 1):
        slot = 3 - (len(shape) - 1 - i)
        out[slot] = int(view.stride(i)) if shape[i] > 1 else 0
    return out[0], out[1], out[2]


_FIELDS = ("form", "dims", "head_dim", "dtype", "strides")


def check_pattern(pattern: Mapping, types: Mapping[str, dict | None]) -> None:
    """Check a rope manifest pattern against the graph's value types.

    Raises:
        ValueError: a problem field is missing, the form is neither ``half`` nor ``pairs``,
            head_dim is not even and positive, an operand (x, cos, sin) is missing, x is not
            ``dims x head_dim`` of the problem's dtype, or cos/sin have another dtype or a
            last dim other than head_dim.
    """
    p = pattern.get("problem") or {}
    missing = [k for k in _FIELDS if k not in p]
    if missing:
        raise ValueError(f"rope problem lacks {', '.join(missing)}")
    if p["form"] not in ("half", "pairs"):
        raise ValueError(f"unknown rope form {p['form']!r} (known: half, pairs)")
    d = int(p["head_dim"])
    if d <= 0 or d % 2:
        raise ValueError(f"rope problem has head_dim {d}: it must be positive and even")
    operands = pattern.get("operands") or {}
    for role in ("x", "cos", "sin"):
        if role not in operands:
            raise ValueError(f"operand {role} is missing")
    rows = math.prod(int(n) for n in p["dims"])
    for role in ("x", "cos", "sin"):
        t = types.get(operands[role])
        if t is None:
            continue
        if t["dtype"] != p["dtype"] or t["shape"][-1:] != [d]:
            raise ValueError(f"operand {role} {operands[role]} is {t['dtype']}{t['shape']}, not "
                             f"{p['dtype']} with a last dim of {d}")
        if role == "x" and math.prod(t["shape"]) != rows * d:
            raise ValueError(f"operand x {operands['x']} has shape {t['shape']}, not "
                             f"{p['dims']} x {d}")


class RopeCall(KernelCall):
    """One rope pattern's call: operand indices and x's shape, held once."""

    def __init__(self, pattern: Mapping, input_names: Sequence[str]) -> None:
        p = pattern["problem"]
        self._dims = [int(n) for n in p["dims"]]
        self._d = int(p["head_dim"])
        self._ix = role_indices(pattern, input_names)

    def _strides(self, inputs: Sequence[torch.Tensor]) -> dict[str, tuple[int, int, int] | None]:
        shape = list(inputs[self._ix["x"]].shape)
        return {role: leading_strides(inputs[self._ix[role]], shape) for role in ("x", "cos", "sin")}

    def check(self, inputs: Sequence[torch.Tensor]) -> str:
        """x, cos and sin need a unit-stride last dim; cos and sin must broadcast to x."""
        x = inputs[self._ix["x"]]
        if x.dim() > 4:
            return f"x has {x.dim()} dimensions, the kernel reads at most [n0, n1, n2, head_dim]"
        for role, s in self._strides(inputs).items():
            if s is None:
                t = inputs[self._ix[role]]
                return (f"{role} of shape {list(t.shape)} strides {list(t.stride())} does not "
                        f"broadcast to x {list(x.shape)} with a unit-stride last dim")
        return ""

    def args(self, inputs: Sequence[torch.Tensor], out: torch.Tensor) -> FactRopeArgs:
        """The arguments for a call writing ``out`` (any strides, last dim unit stride)."""
        s = self._strides(inputs)
        o = leading_strides(out, list(out.shape))
        assert o is not None, "out has a unit-stride last dim"
        a = FactRopeArgs(n0=self._dims[0], n1=self._dims[1], n2=self._dims[2], head_dim=self._d,
                         flags=0)
        for role in ("x", "cos", "sin"):
            setattr(a, role, inputs[self._ix[role]].data_ptr())
            for i, v in enumerate(s[role]):
                setattr(a, f"{role}_stride{i}", v)
        a.out = out.data_ptr()
        a.out_stride0, a.out_stride1, a.out_stride2 = o
        return a


class Rope(Family):
    """Rotary position embedding kernels (``src/families/rope/``)."""

    name = "rope"
    rules = ("rope",)
    problem_kind = "rope"
    args_type = FactRopeArgs
    roles = ("x", "cos", "sin")
    errors = {1: "FACT_ROPE_ERR_SHAPE: head_dim differs from the kernel's, or an empty dim",
              2: "FACT_ROPE_ERR_STRIDE: a stride or pointer breaks the kernel's vector loads",
              3: "FACT_ROPE_ERR_OPERAND: x, cos, sin or out is null",
              4: "FACT_ROPE_ERR_RANGE: more rows than the grid indexes"}
    aten_check_by_default = True
    graph_strided_output = True
    load_time_roles = ("cos", "sin")  # tables from inv_freq and constant positions

    def check_pattern(self, pattern: Mapping, types: Mapping[str, dict | None]) -> None:
        check_pattern(pattern, types)

    def bind(self, pattern: Mapping, input_names: Sequence[str],
             expected: Mapping[str, dict]) -> RopeCall:
        return RopeCall(pattern, input_names)

    def report_detail(self, pattern: Mapping) -> str:
        p = pattern.get("problem") or {}
        form = "half-split" if p.get("form") == "half" else "interleaved pairs"
        return f"rotary embedding ({form}) over head dim {p.get('head_dim')}"


#: The rope family (one line of :data:`fact.families.FAMILIES`).
FAMILY = Rope()
