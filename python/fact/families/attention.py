"""The attention family on the Python side: ``FactAttentionArgs``, how a fused-attention
kernel is called, and the checks particular to attention (docs/05-composition.md,
"Attention kernels").

A manifest entry with ``"abi": "attention"`` (rule ``attention``, problem kind ``attention``)
replaces a whole attention subgraph with one kernel taking :class:`FactAttentionArgs`
(``src/families/attention/abi.h``). The custom op's inputs are q, k, v (and the mask tensor)
first, read in place with their actual strides (:meth:`AttentionCall.args`), so the per-call
check is only that their last dimension is contiguous and the mask broadcasts
(:meth:`AttentionCall.check`). Checked once when an artifact loads:

- :func:`check_pattern`: the manifest problem agrees with the graph (q/k/v shapes and
  dtypes, the mask kind and its operand, grouped-query heads, and an output layout
  ``strides.o`` that writes every element of the output value exactly once);
- :func:`causal_buffers` and :func:`tril_mismatch`: a causal pattern whose mask discovery
  proved from a registered buffer (``torch.tril(torch.ones(...))``, marked ``"value":
  "tril"`` in graph.json) is only run as a kernel while the module's buffer still is
  lower-triangular; otherwise the runtime runs the pattern's ATen nodes.

Tests: ``tests/python/families/test_attention.py``.
"""

from __future__ import annotations

import ctypes
import math
from typing import Iterable, Mapping, Sequence

import torch

from fact.export import value_class
from fact.families.family import Family, KernelCall, role_indices

__all__ = ["FactAttentionArgs", "AttentionCall", "Attention", "FAMILY", "check_pattern",
           "causal_buffers", "tril_mismatch", "summary", "mask_strides", "attention_flags",
           "TRIL_VALUE", "ATTENTION_MASKS", "TENSOR_MASKS", "FACT_ATTN_FLAG_EMPTY_ROW_ZERO"]

#: Mask kinds of an attention problem; those in :data:`TENSOR_MASKS` read a mask tensor.
ATTENTION_MASKS = ("none", "causal", "additive", "keep", "drop")
TENSOR_MASKS = ("additive", "keep", "drop")
#: ``FactAttentionArgs.flags`` bit: a row with every key removed gives 0, not NaN.
FACT_ATTN_FLAG_EMPTY_ROW_ZERO = 1


class FactAttentionArgs(ctypes.Structure):
    """``FactAttentionArgs`` of ``src/families/attention/abi.h`` (strides in elements).

    ``O[b, h, i, :] = softmax_j(scale · Q[b, h, i, :]·K[b, g(h), j, :] + mask(b, h, i, j))
    · V[b, g(h), :, :]`` with ``g(h) = h / (heads / kv_heads)``. Q is ``[batch, heads,
    seq_q, head_dim]``, K and V ``[batch, kv_heads, seq_k, head_dim]``, O has Q's logical
    shape; each tensor's last dimension is contiguous and its batch, head and row strides
    are given. ``mask`` is NULL unless the kernel reads a mask tensor (additive: Q's dtype;
    keep/drop: one byte per element); a broadcast mask dimension has stride 0. ``window``
    (causal only): > 0 keeps the keys ``i - window < j <= i``, 0 every ``j <= i``.
    ``mask_affine`` = 1 (additive only) makes the term ``(mask_rsub - M) * mask_scale``,
    each op in fp32 rounded to Q's dtype (Hugging Face's ``(1.0 - mask) * finfo.min``).
    """

    _fields_ = [
        ("batch", ctypes.c_int64), ("heads", ctypes.c_int64), ("kv_heads", ctypes.c_int64),
        ("seq_q", ctypes.c_int64), ("seq_k", ctypes.c_int64), ("head_dim", ctypes.c_int64),
        ("q", ctypes.c_void_p), ("q_batch_stride", ctypes.c_int64),
        ("q_head_stride", ctypes.c_int64), ("q_row_stride", ctypes.c_int64),
        ("k", ctypes.c_void_p), ("k_batch_stride", ctypes.c_int64),
        ("k_head_stride", ctypes.c_int64), ("k_row_stride", ctypes.c_int64),
        ("v", ctypes.c_void_p), ("v_batch_stride", ctypes.c_int64),
        ("v_head_stride", ctypes.c_int64), ("v_row_stride", ctypes.c_int64),
        ("o", ctypes.c_void_p), ("o_batch_stride", ctypes.c_int64),
        ("o_head_stride", ctypes.c_int64), ("o_row_stride", ctypes.c_int64),
        ("mask", ctypes.c_void_p), ("mask_batch_stride", ctypes.c_int64),
        ("mask_head_stride", ctypes.c_int64), ("mask_row_stride", ctypes.c_int64),
        ("scale", ctypes.c_float), ("flags", ctypes.c_int32),
        ("window", ctypes.c_int64),
        # Appended after the fields above (whose offsets do not change): an additive mask's
        # prologue, mask(b, h, i, j) = (mask_rsub - M[...]) * mask_scale when mask_affine is 1.
        ("mask_rsub", ctypes.c_float), ("mask_scale", ctypes.c_float),
        ("mask_affine", ctypes.c_int32),
    ]


# ------------------------------------------------------------------ load-time checks

#: graph.json's ``value`` of a buffer export found equal to ``torch.tril(torch.ones(...))``.
TRIL_VALUE = "tril"

_SIZES = ("batch", "heads", "kv_heads", "seq_q", "seq_k", "head_dim")


def _sizes(p: Mapping) -> tuple[int, ...]:
    """The problem's batch, heads, kv_heads, seq_q, seq_k and head_dim, as ints."""
    return tuple(int(p[k]) for k in _SIZES)


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
            problem's dtype, ``strides.o`` does not map ``[B, H, Tq, D]`` one to one
            onto the output value, or the mask prologue (``mask_rsub``, ``mask_scale``) is
            not two finite numbers of an additive mask.
    """
    p = pattern.get("problem") or {}
    missing = [k for k in _SIZES + ("scale", "mask", "strides") if k not in p]
    if missing:
        raise ValueError(f"attention problem lacks {', '.join(missing)}")
    b, h, hkv, tq, tk, d = _sizes(p)
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
    prologue = [p.get(k) for k in ("mask_rsub", "mask_scale") if k in p]
    if prologue and (mask != "additive" or len(prologue) != 2 or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
            for x in prologue)):
        raise ValueError(f"mask_rsub and mask_scale must be two finite numbers of an additive "
                         f"mask, got mask {mask!r} with {prologue}")
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

    E.g. ``"mask causal, 8 heads (MHA), D 96, T 512x512, out bthd"``; a sliding window reads
    ``"mask causal window 4096, ..."``, a mask prologue ``"mask additive (1.0 - M) * -10000.0, ..."``.
    """
    h, hkv = int(problem.get("heads", 0)), int(problem.get("kv_heads", 0) or 1)
    heads = (f"{h} heads (MHA)" if h == hkv else
             f"{h} heads / {hkv} kv heads (GQA {h // hkv}:1)")
    window = f" window {problem['window']}" if problem.get("window") else ""
    if "mask_rsub" in problem and "mask_scale" in problem:
        window += f" ({problem['mask_rsub']!r} - M) * {problem['mask_scale']!r}"
    return (f"mask {problem.get('mask', '?')}{window}, {heads}, D {problem.get('head_dim', '?')}, "
            f"T {problem.get('seq_q', '?')}x{problem.get('seq_k', '?')}, "
            f"out {problem.get('output_layout', '?')}")


# ------------------------------------------------------------------ arguments

def mask_strides(mask: torch.Tensor, batch: int, heads: int, seq_q: int,
                 seq_k: int) -> tuple[int, int, int] | str:
    """The (batch, head, row) strides of an attention mask, or why the ABI cannot read it.

    The mask broadcasts against the scores ``[batch, heads, seq_q, seq_k]`` as PyTorch
    does: its dimensions are aligned from the right, and a missing or size-1 dimension is
    broadcast (stride 0). The key dimension must be ``seq_k`` long and contiguous (the ABI
    has no key stride).

    Returns:
        ``(mask_batch_stride, mask_head_stride, mask_row_stride)`` in elements, or a reason
        (str) when the mask has more than 4 dimensions, a size that neither matches nor
        broadcasts, or a broadcast or strided key dimension.
    """
    if mask.dim() > 4:
        return f"mask has {mask.dim()} dimensions, the scores 4"
    if mask.dim() == 0 or mask.shape[-1] != seq_k:
        return (f"mask shape {list(mask.shape)}: its last dimension must be the {seq_k} keys "
                f"(the kernel reads key positions contiguously)")
    if seq_k > 1 and mask.stride(-1) != 1:
        return f"mask's key dimension has stride {mask.stride(-1)}, the kernel needs 1"
    strides = []
    for axis, size in zip((-4, -3, -2), (batch, heads, seq_q)):
        if mask.dim() < -axis or mask.shape[axis] == 1:
            strides.append(0)
        elif mask.shape[axis] == size:
            strides.append(int(mask.stride(axis)) if size > 1 else 0)
        else:
            return (f"mask shape {list(mask.shape)} does not broadcast to the scores "
                    f"[{batch}, {heads}, {seq_q}, {seq_k}]")
    return strides[0], strides[1], strides[2]


def _bht_strides(t: torch.Tensor) -> tuple[int, int, int]:
    """(batch, head, row) strides of a q/k/v operand: ``[B, H, T, D]``, or the 3-D
    ``[N, T, D]`` of the bmm form (one head: head stride 0)."""
    if t.dim() == 3:
        return int(t.stride(0)), 0, int(t.stride(1))
    return int(t.stride(0)), int(t.stride(1)), int(t.stride(2))


def _scores_mask(mask: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """The mask as it broadcasts against 4-D scores: the bmm form's scores are ``[N, Tq, Tk]``,
    so a mask of rank >= 3 gets a head dimension (of size 1) before its rows."""
    return mask.unsqueeze(-3) if q.dim() == 3 and mask.dim() >= 3 else mask


def attention_flags(problem: Mapping) -> int:
    """``FactAttentionArgs.flags`` for an attention ``problem``: attention written with
    ``F.scaled_dot_product_attention`` (``form: "sdpa"``) gives 0 for a query row whose keys
    the mask removes entirely (torch's safe softmax), attention written by hand NaN."""
    return FACT_ATTN_FLAG_EMPTY_ROW_ZERO if problem.get("form") == "sdpa" else 0


class AttentionCall(KernelCall):
    """The call of one attention pattern's kernel (sizes and ``scale`` from the manifest
    problem, q/k/v/mask strides from the tensors of each call)."""

    def __init__(self, pattern: Mapping, input_names: Sequence[str]) -> None:
        self._problem = pattern["problem"]
        self._index = role_indices(pattern, input_names)

    def _operand(self, inputs: Sequence[torch.Tensor], role: str) -> torch.Tensor | None:
        i = self._index.get(role)
        return inputs[i] if i is not None else None

    def check(self, inputs: Sequence[torch.Tensor]) -> str:
        """q, k, v need a contiguous last dimension (other strides are free: they are
        passed); the mask must broadcast to the scores with contiguous keys, in the dtype of
        its kind."""
        p = self._problem
        batch, heads, kv_heads, seq_q, seq_k, _ = _sizes(p)
        for role in ("q", "k", "v"):
            t = self._operand(inputs, role)
            assert t is not None
            if t.dim() != 4 and not (t.dim() == 3 and heads == 1 and kv_heads == 1):
                return (f"{role} has {t.dim()} dimensions, the kernel reads [B, H, T, D] "
                        f"(or [N, T, D] with one head)")
            if t.shape[-1] > 1 and t.stride(-1) != 1:
                return (f"{role}'s last dimension has stride {t.stride(-1)}: the kernel reads "
                        f"head_dim contiguously")
        mask = self._operand(inputs, "mask")
        if p.get("mask") in TENSOR_MASKS:
            if mask is None:
                return f"the {p['mask']} mask tensor is missing"
            q = self._operand(inputs, "q")
            assert q is not None
            if p["mask"] == "additive":
                ok, what = mask.dtype == q.dtype, f"q's dtype ({q.dtype})"
            else:
                ok, what = mask.dtype in (torch.bool, torch.uint8), "bool or uint8"
            if not ok:
                return f"the {p['mask']} mask has dtype {mask.dtype}, the kernel reads {what}"
            layout = mask_strides(_scores_mask(mask, q), batch, heads, seq_q, seq_k)
            if isinstance(layout, str):
                return layout
        return ""

    def args(self, inputs: Sequence[torch.Tensor], o: torch.Tensor) -> FactAttentionArgs:
        """``FactAttentionArgs`` for a call on ``inputs`` writing ``o``.

        ``inputs`` hold q ``[B, H, Tq, D]``, k and v ``[B, Hkv, Tk, D]`` (the problem's
        dtype, last dimension contiguous) and, for a mask tensor kind, the mask; ``o`` is a
        new contiguous tensor of the output value's graph shape and dtype. Only called after
        :meth:`check` accepted ``inputs`` (an AssertionError otherwise names what is
        missing). Sizes and ``scale`` are the manifest problem's. Q, K and V are passed with
        the actual tensors' strides of dimensions 0, 1, 2 (batch, head, row; the bmm form's
        3-D ``[N, T, D]`` operands have one head, head stride 0): they are views (of the QKV
        projection's output, say) read in place. O's strides are the problem's
        ``strides.o``: ``o`` is the pattern output (contiguous, its graph shape), in which
        ``O[b, h, t, :]`` starts at ``b·so_b + h·so_h + t·so_t``. A mask tensor
        (additive/keep/drop) gets the strides :func:`mask_strides` gives (0 for a broadcast
        dimension); otherwise ``mask`` is NULL and its strides 0. ``window`` is the problem's
        (a causal mask's sliding window, 0 without one). An additive problem with
        ``mask_rsub`` and ``mask_scale`` (the mask prologue) sets ``mask_affine = 1`` and
        passes them as fp32, as ATen casts its scalars; otherwise all three are 0.
        """
        p = self._problem
        batch, heads, kv_heads, seq_q, seq_k, head_dim = _sizes(p)
        q, k, v, mask = (self._operand(inputs, r) for r in ("q", "k", "v", "mask"))
        assert q is not None and k is not None and v is not None
        so = [int(s) for s in p["strides"]["o"]]
        args = FactAttentionArgs(
            batch=batch, heads=heads, kv_heads=kv_heads, seq_q=seq_q, seq_k=seq_k,
            head_dim=head_dim,
            q=q.data_ptr(), k=k.data_ptr(), v=v.data_ptr(),
            o=o.data_ptr(), o_batch_stride=so[0], o_head_stride=so[1], o_row_stride=so[2],
            scale=float(p["scale"]), flags=attention_flags(p), window=int(p.get("window", 0)))
        (args.q_batch_stride, args.q_head_stride, args.q_row_stride) = _bht_strides(q)
        (args.k_batch_stride, args.k_head_stride, args.k_row_stride) = _bht_strides(k)
        (args.v_batch_stride, args.v_head_stride, args.v_row_stride) = _bht_strides(v)
        if mask is not None and p.get("mask") in TENSOR_MASKS:
            layout = mask_strides(_scores_mask(mask, q), batch, heads, seq_q, seq_k)
            assert not isinstance(layout, str), layout
            args.mask = mask.data_ptr()
            args.mask_batch_stride, args.mask_head_stride, args.mask_row_stride = layout
            if p["mask"] == "additive" and "mask_rsub" in p and "mask_scale" in p:
                args.mask_rsub, args.mask_scale = float(p["mask_rsub"]), float(p["mask_scale"])
                args.mask_affine = 1
        return args


# ------------------------------------------------------------------ the family

class Attention(Family):
    """Fused attention kernels (``src/families/attention/``)."""

    name = "attention"
    rules = ("attention",)
    problem_kind = "attention"
    args_type = FactAttentionArgs
    roles = ("q", "k", "v", "mask")
    errors = {1: "FACT_ATTN_ERR_SHAPE: head_dim differs from the kernel's, heads % kv_heads "
                 "!= 0, or a size <= 0",
              2: "FACT_ATTN_ERR_STRIDE: a stride or pointer breaks the kernel's 16-byte "
                 "vector loads",
              3: "FACT_ATTN_ERR_MASK: mask given to a kernel without one, or missing",
              4: "FACT_ATTN_ERR_RANGE: an index would overflow 32 bits where the kernel uses "
                 "them",
              5: "FACT_ATTN_ERR_WORKSPACE: the workspace is missing, unaligned or smaller than "
                 "_workspace_bytes says"}
    # Realize times a vendor bound (eager's two GEMMs alone), not the ATen nodes.
    aten_check_by_default = True

    def check_pattern(self, pattern: Mapping, types: Mapping[str, dict | None]) -> None:
        check_pattern(pattern, types)

    def bind(self, pattern: Mapping, input_names: Sequence[str],
             expected: Mapping[str, dict]) -> AttentionCall:
        return AttentionCall(pattern, input_names)

    def proven_buffers(self, pattern: Mapping, read: Iterable[str],
                       params: Mapping[str, Mapping]) -> list[str]:
        return causal_buffers(pattern.get("problem") or {}, read, params)

    def buffer_reason(self, name: str, value: torch.Tensor) -> str:
        why = tril_mismatch(value)
        return (f"buffer {name} is no longer lower-triangular ({why}): the causal mask was "
                f"proven from it, so the ATen nodes run") if why else ""

    def report_detail(self, pattern: Mapping) -> str:
        return summary(pattern.get("problem") or {})


#: The attention family (one line of :data:`fact.families.FAMILIES`).
FAMILY = Attention()
