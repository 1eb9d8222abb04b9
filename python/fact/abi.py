"""The kernel C ABIs (docs/05-composition.md) as ctypes structures, and how to fill them.

Two ABIs, one per kernel family, each named by the manifest pattern's ``"abi"``:

- ``"gemm"`` (``src/realize/kernel_abi.h``): :class:`FactGemmArgs`, built by
  :func:`gemm_args` from the manifest problem's sizes and leading dimensions;
- ``"attention"`` (``src/realize/attention_abi.h``): :class:`FactAttentionArgs`, built by
  :func:`attention_args` from the actual strides of the q/k/v (and mask) tensors.

An :class:`Abi` bundles what :class:`fact.kernels.KernelBinding` needs to call a kernel of
one family: the arguments structure, the operand roles that come first among the custom
op's inputs, the checks the operands must pass before the arguments are built (the ATen
fallback runs otherwise), the function that builds the arguments, and the meaning of the
family's return codes. The structures mirror the C headers field by field;
``tests/python/test_runtime.py`` compiles the headers and compares sizes and offsets.
"""

from __future__ import annotations

import ctypes
import dataclasses
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import torch

if TYPE_CHECKING:
    from fact.kernels import KernelBinding

__all__ = ["FactGemmArgs", "FactAttentionArgs", "Abi", "ABIS", "GEMM", "ATTENTION",
           "abi_of", "gemm_args", "attention_args", "mask_strides", "epilogue_slots",
           "error_text", "MAX_EPILOGUE_INPUTS", "FACT_ERR_EPILOGUE_INPUT",
           "ATTENTION_MASKS", "TENSOR_MASKS"]

#: External inputs a fused tail may read (``epi[4]`` of ``FactGemmArgs``).
MAX_EPILOGUE_INPUTS = 4
#: Return code of a fused kernel called with a NULL ``epi[i]`` it reads.
FACT_ERR_EPILOGUE_INPUT = 5

#: Mask kinds of an attention problem; those in :data:`TENSOR_MASKS` read a mask tensor.
ATTENTION_MASKS = ("none", "causal", "additive", "keep", "drop")
TENSOR_MASKS = ("additive", "keep", "drop")


# ------------------------------------------------------------------ structures

class FactGemmArgs(ctypes.Structure):
    """``FactGemmArgs`` of ``src/realize/kernel_abi.h`` (sizes and strides in elements).

    D = alpha·(A·B) + beta·bias; pointers are device pointers, ``bias`` may be NULL.
    ``epi[i]`` is the external input ``c{i}`` of a fused elementwise tail (NULL when unused);
    ``epi_ld[i]`` / ``epi_batch_stride[i]`` are its row and batch strides when it has D's
    shape (broadcast ``"mn"``), 0 for vectors along N or M.
    """

    _fields_ = [
        ("m", ctypes.c_int64), ("n", ctypes.c_int64), ("k", ctypes.c_int64),
        ("l", ctypes.c_int64),
        ("a", ctypes.c_void_p), ("lda", ctypes.c_int64), ("batch_stride_a", ctypes.c_int64),
        ("b", ctypes.c_void_p), ("ldb", ctypes.c_int64), ("batch_stride_b", ctypes.c_int64),
        ("bias", ctypes.c_void_p),
        ("d", ctypes.c_void_p), ("ldd", ctypes.c_int64), ("batch_stride_d", ctypes.c_int64),
        ("alpha", ctypes.c_float), ("beta", ctypes.c_float),
        ("splits", ctypes.c_int32), ("raster", ctypes.c_int32), ("swizzle", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
        ("epi", ctypes.c_void_p * MAX_EPILOGUE_INPUTS),
        ("epi_ld", ctypes.c_int64 * MAX_EPILOGUE_INPUTS),
        ("epi_batch_stride", ctypes.c_int64 * MAX_EPILOGUE_INPUTS),
    ]


class FactAttentionArgs(ctypes.Structure):
    """``FactAttentionArgs`` of ``src/realize/attention_abi.h`` (strides in elements).

    ``O[b, h, i, :] = softmax_j(scale · Q[b, h, i, :]·K[b, g(h), j, :] + mask(b, h, i, j))
    · V[b, g(h), :, :]`` with ``g(h) = h / (heads / kv_heads)``. Q is ``[batch, heads,
    seq_q, head_dim]``, K and V ``[batch, kv_heads, seq_k, head_dim]``, O has Q's logical
    shape; each tensor's last dimension is contiguous and its batch, head and row strides
    are given. ``mask`` is NULL unless the kernel reads a mask tensor (additive: Q's dtype;
    keep/drop: one byte per element); a broadcast mask dimension has stride 0.
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
    ]


# ------------------------------------------------------------------ the table

@dataclasses.dataclass(frozen=True)
class Abi:
    """How kernels of one C ABI are called.

    Attributes:
        name: the manifest's ``"abi"`` (``"gemm"`` or ``"attention"``).
        args_type: the ctypes structure every entry point takes a pointer to.
        roles: operand roles (keys of the pattern's ``operands``) that come first among the
            custom op's inputs, in this order; absent roles are skipped.
        check: ``(binding, inputs) -> reason`` checks of the operands beyond device, dtype and
            shape (which the binding checks for every ABI); ``""`` when the kernel may run.
        make_args: ``(binding, inputs, out) -> args`` the structure for a call on ``inputs``
            writing ``out``; only called after ``check`` passed.
        errors: return code -> meaning (codes of 10000 and up are CUDA errors for both).
    """

    name: str
    args_type: type
    roles: tuple[str, ...]
    check: Callable[["KernelBinding", Sequence[torch.Tensor]], str]
    make_args: Callable[["KernelBinding", Sequence[torch.Tensor], torch.Tensor],
                        ctypes.Structure]
    errors: Mapping[int, str]

    def error_text(self, code: int) -> str:
        """A readable meaning of a nonzero return ``code`` ("" when unknown)."""
        if code in self.errors:
            return self.errors[code]
        if code >= 10000:
            return f"CUDA error {code - 10000}"
        if self.name == "gemm" and code >= 100:
            return f"cutlass::Status {code - 100}"
        return ""


# ------------------------------------------------------------------ GEMM

def epilogue_slots(epilogue: dict, input_names: Sequence[str]) -> list[tuple[int, int, str]]:
    """Where each external input of a fused tail goes in ``FactGemmArgs``.

    Args:
        epilogue: the manifest pattern's ``epilogue`` (``inputs``: ``cN`` -> graph value,
            ``broadcast``: ``cN`` -> ``"n"``, ``"m"``, ``"mn"`` or ``"scalar"``).
        input_names: the binding's input names (every ``inputs`` value must be one).

    Returns:
        ``(N, index into input_names, broadcast kind)`` per input, ordered by ``N``.

    Raises:
        ValueError: a name is not ``c0`` .. ``c3``, or a value is not among ``input_names``.
    """
    slots = []
    broadcast = epilogue.get("broadcast") or {}
    for cname, value in (epilogue.get("inputs") or {}).items():
        if not (cname[:1] == "c" and cname[1:].isdigit()
                and int(cname[1:]) < MAX_EPILOGUE_INPUTS):
            raise ValueError(f"epilogue input {cname!r}: the ABI passes c0..c"
                             f"{MAX_EPILOGUE_INPUTS - 1}")
        if value not in input_names:
            raise ValueError(f"epilogue input {cname} = {value} is not an input of the pattern")
        slots.append((int(cname[1:]), list(input_names).index(value),
                      str(broadcast.get(cname, ""))))
    return sorted(slots)


def _gemm_check(binding: "KernelBinding", inputs: Sequence[torch.Tensor]) -> str:
    """GEMM arguments come from the plan's leading dimensions: every input must have the
    plan's strides exactly, and be 16-byte aligned."""
    for name, t in zip(binding.input_names, inputs):
        want = binding.expected.get(name)
        if want is None:
            continue
        if list(t.stride()) != want["strides"]:
            return f"{name} has strides {list(t.stride())}, the plan assumed {want['strides']}"
        if t.data_ptr() % 16:
            return f"{name} is not 16-byte aligned"
    return ""


def gemm_args(binding: "KernelBinding", inputs: Sequence[torch.Tensor],
              d: torch.Tensor) -> FactGemmArgs:
    """``FactGemmArgs`` for a call on ``inputs`` writing ``d`` (per the manifest problem).

    Sizes, leading dimensions and batch strides are the problem's (the inputs were checked
    to have the plan's strides). For a fused tail, ``epi[N]`` points at the tensor bound to
    ``cN``; an input of D's shape (``"mn"``) also gets its row stride (``epi_ld``) and, when
    the problem is batched (``l > 1``), its batch stride; vectors along N or M and
    one-element inputs leave both 0.
    """
    p = binding.pattern["problem"]
    a, b, bias = (binding.operand(inputs, r) for r in ("a", "b", "bias"))
    assert a is not None and b is not None
    beta_default = 1.0 if bias is not None else 0.0
    rt = binding.pattern.get("runtime") or {}
    args = FactGemmArgs(
        m=int(p["m"]), n=int(p["n"]), k=int(p["k"]), l=int(p.get("l", 1)),
        a=a.data_ptr(), lda=int(p["lda"]), batch_stride_a=int(p.get("batch_stride_a", 0)),
        b=b.data_ptr(), ldb=int(p["ldb"]), batch_stride_b=int(p.get("batch_stride_b", 0)),
        bias=bias.data_ptr() if bias is not None else None,
        d=d.data_ptr(), ldd=int(p["ldd"]), batch_stride_d=int(p.get("batch_stride_d", 0)),
        alpha=float(p.get("alpha", 1.0)), beta=float(p.get("beta", beta_default)),
        splits=int(rt.get("splits", 0)), raster=int(rt.get("raster", 0)),
        swizzle=int(rt.get("swizzle", 0)))
    batched = int(p.get("l", 1)) > 1
    for i, index, kind in binding.epi_slots:
        t = inputs[index]
        args.epi[i] = t.data_ptr()
        if kind == "mn":  # D's shape: rows epi_ld apart, batches epi_batch_stride apart
            args.epi_ld[i] = t.stride(-2) if t.dim() >= 2 else 0
            args.epi_batch_stride[i] = t.stride(-3) if batched and t.dim() >= 3 else 0
    return args


# ------------------------------------------------------------------ attention

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


def _attention_sizes(p: Mapping) -> tuple[int, int, int, int, int, int]:
    return (int(p["batch"]), int(p["heads"]), int(p["kv_heads"]), int(p["seq_q"]),
            int(p["seq_k"]), int(p["head_dim"]))


def _attention_check(binding: "KernelBinding", inputs: Sequence[torch.Tensor]) -> str:
    """q, k, v need a contiguous last dimension (other strides are free: they are passed);
    the mask must broadcast to the scores with contiguous keys, in the dtype of its kind."""
    p = binding.pattern["problem"]
    batch, heads, kv_heads, seq_q, seq_k, _ = _attention_sizes(p)
    for role in ("q", "k", "v"):
        t = binding.operand(inputs, role)
        assert t is not None
        if t.dim() != 4 and not (t.dim() == 3 and heads == 1 and kv_heads == 1):
            return (f"{role} has {t.dim()} dimensions, the kernel reads [B, H, T, D] "
                    f"(or [N, T, D] with one head)")
        if t.shape[-1] > 1 and t.stride(-1) != 1:
            return (f"{role}'s last dimension has stride {t.stride(-1)}: the kernel reads "
                    f"head_dim contiguously")
    mask = binding.operand(inputs, "mask")
    if p.get("mask") in TENSOR_MASKS:
        if mask is None:
            return f"the {p['mask']} mask tensor is missing"
        q = binding.operand(inputs, "q")
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


#: ``FactAttentionArgs.flags`` bit: a row with every key removed gives 0, not NaN.
FACT_ATTN_FLAG_EMPTY_ROW_ZERO = 1


def attention_flags(problem: dict) -> int:
    """``FactAttentionArgs.flags`` for an attention ``problem``: attention written with
    ``F.scaled_dot_product_attention`` (``form: "sdpa"``) gives 0 for a query row whose keys
    the mask removes entirely (torch's safe softmax), attention written by hand NaN."""
    return FACT_ATTN_FLAG_EMPTY_ROW_ZERO if problem.get("form") == "sdpa" else 0


def attention_args(binding: "KernelBinding", inputs: Sequence[torch.Tensor],
                   o: torch.Tensor) -> FactAttentionArgs:
    """``FactAttentionArgs`` for a call on ``inputs`` writing ``o``.

    ``inputs`` hold q ``[B, H, Tq, D]``, k and v ``[B, Hkv, Tk, D]`` (the problem's dtype,
    last dimension contiguous) and, for a mask tensor kind, the mask; ``o`` is a new
    contiguous tensor of the output value's graph shape and dtype. Only called after
    :attr:`Abi.check` accepted ``inputs`` (an AssertionError otherwise names what is missing).
    Sizes and ``scale`` are the manifest problem's. Q, K and V are passed with the actual
    tensors' strides of dimensions 0, 1, 2 (batch, head, row; the bmm form's 3-D ``[N, T, D]``
    operands have one head, head stride 0): they are views (of the QKV projection's output,
    say) read in place. O's strides are the problem's ``strides.o``:
    ``o`` is the pattern output (contiguous, its graph shape), in which ``O[b, h, t, :]``
    starts at ``b·so_b + h·so_h + t·so_t``. A mask tensor (additive/keep/drop) gets the
    strides :func:`mask_strides` gives (0 for a broadcast dimension); otherwise ``mask`` is
    NULL and its strides 0.
    """
    p = binding.pattern["problem"]
    batch, heads, kv_heads, seq_q, seq_k, head_dim = _attention_sizes(p)
    q, k, v, mask = (binding.operand(inputs, r) for r in ("q", "k", "v", "mask"))
    assert q is not None and k is not None and v is not None
    so = [int(s) for s in p["strides"]["o"]]
    args = FactAttentionArgs(
        batch=batch, heads=heads, kv_heads=kv_heads, seq_q=seq_q, seq_k=seq_k,
        head_dim=head_dim,
        q=q.data_ptr(), k=k.data_ptr(), v=v.data_ptr(),
        o=o.data_ptr(), o_batch_stride=so[0], o_head_stride=so[1], o_row_stride=so[2],
        scale=float(p["scale"]), flags=attention_flags(p))
    (args.q_batch_stride, args.q_head_stride, args.q_row_stride) = _bht_strides(q)
    (args.k_batch_stride, args.k_head_stride, args.k_row_stride) = _bht_strides(k)
    (args.v_batch_stride, args.v_head_stride, args.v_row_stride) = _bht_strides(v)
    if mask is not None and p.get("mask") in TENSOR_MASKS:
        layout = mask_strides(_scores_mask(mask, q), batch, heads, seq_q, seq_k)
        assert not isinstance(layout, str), layout
        args.mask = mask.data_ptr()
        args.mask_batch_stride, args.mask_head_stride, args.mask_row_stride = layout
    return args


# ------------------------------------------------------------------ the ABIs

GEMM = Abi(
    name="gemm", args_type=FactGemmArgs, roles=("a", "b", "bias"), check=_gemm_check,
    make_args=gemm_args,
    errors={1: "FACT_ERR_BIAS_MISMATCH: bias given to a kernel without bias, or missing",
            2: "FACT_ERR_BETA: this kernel adds the bias with beta == 1 only",
            3: "FACT_ERR_WORKSPACE: workspace smaller than _workspace_bytes",
            4: "FACT_ERR_SCHEDULER: splits/raster/swizzle out of range",
            FACT_ERR_EPILOGUE_INPUT: "FACT_ERR_EPILOGUE_INPUT: an input the fused tail reads "
                                     "is NULL"})

ATTENTION = Abi(
    name="attention", args_type=FactAttentionArgs, roles=("q", "k", "v", "mask"),
    check=_attention_check, make_args=attention_args,
    errors={1: "FACT_ATTN_ERR_SHAPE: head_dim differs from the kernel's, heads % kv_heads "
               "!= 0, or a size <= 0",
            2: "FACT_ATTN_ERR_STRIDE: a stride or pointer breaks the kernel's 16-byte "
               "vector loads",
            3: "FACT_ATTN_ERR_MASK: mask given to a kernel without one, or missing",
            4: "FACT_ATTN_ERR_RANGE: an index would overflow 32 bits where the kernel uses "
               "them"})

#: The manifest's ``"abi"`` -> :class:`Abi`.
ABIS: dict[str, Abi] = {a.name: a for a in (GEMM, ATTENTION)}


def abi_of(pattern: Mapping) -> Abi:
    """The :class:`Abi` of a manifest pattern: its ``"abi"``, else its problem's ``kind``
    (``"attention"``), else GEMM (manifests written before attention existed).

    Raises:
        ValueError: ``"abi"`` names no known ABI.
    """
    name = pattern.get("abi")
    if name is None:
        kind = (pattern.get("problem") or {}).get("kind")
        name = "attention" if kind == "attention" else "gemm"
    if name not in ABIS:
        raise ValueError(f"unknown kernel ABI {name!r} (known: {', '.join(ABIS)})")
    return ABIS[name]


def error_text(code: int, abi: Abi = GEMM) -> str:
    """A readable meaning of a kernel's nonzero return ``code`` under ``abi`` ("" when
    unknown)."""
    return abi.error_text(code)

