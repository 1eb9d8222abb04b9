"""The GEMM family on the Python side: ``FactGemmArgs`` and how a GEMM kernel is called.

A manifest entry with ``"abi": "gemm"`` (rule ``gemm``, problem kind ``gemm``) is a GEMM,
possibly with a fused elementwise tail (``"fused": true``, docs/05-composition.md, "Fused
epilogues"). Its kernels take :class:`FactGemmArgs` (``src/families/gemm/abi.h``); the
custom op's inputs are a, b, bias first, then the tail's inputs; a vendor pattern's ``"tail"`` entry
(its tail kernel, D = tail(C)) is bound the same way with operand a = C only. Arguments come from the
manifest problem's sizes and leading dimensions, so every operand must have the plan's
strides exactly and be 16-byte aligned (:meth:`GemmCall.check`); the tail's input ``cN``
goes in ``epi[N]`` (:func:`epilogue_slots`). Tests: ``tests/python/families/test_gemm.py``.
"""

from __future__ import annotations

import ctypes
from typing import Mapping, Sequence

import torch

from fact.families.family import Family, KernelCall, KernelIO, role_indices
from fact.families.gemm_merged import emit_merged, merged_io, merged_members, merged_tensor_names
from fact.families.gemm_swiglu import emit_swiglu, swiglu_io, swiglu_of, swiglu_tensor_name
from fact.module_gen import KernelSite, ModuleBuilder, default_emit

__all__ = ["FactGemmArgs", "GemmCall", "Gemm", "FAMILY", "epilogue_slots",
           "MAX_EPILOGUE_INPUTS", "FACT_ERR_EPILOGUE_INPUT", "FACT_ERR_PROBLEM", "STATUS_BASE"]

#: External inputs a fused tail may read (``epi[4]`` of ``FactGemmArgs``).
MAX_EPILOGUE_INPUTS = 4
#: Return code of a fused kernel called with a NULL ``epi[i]`` it reads.
FACT_ERR_EPILOGUE_INPUT = 5
#: Return code of a tail kernel called with a NULL C or D, or M, N, L out of range.
FACT_ERR_PROBLEM = 6
#: Return codes from this value up (below the CUDA ones) are ``100 + cutlass::Status``.
STATUS_BASE = 100


class FactGemmArgs(ctypes.Structure):
    """``FactGemmArgs`` of ``src/families/gemm/abi.h`` (sizes and strides in elements).

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


def epilogue_slots(epilogue: Mapping, input_names: Sequence[str]) -> list[tuple[int, int, str]]:
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


def _check_fused(pattern: Mapping) -> None:
    """A fused pattern's epilogue must name its output and be among its nodes."""
    epi = pattern.get("epilogue")
    if not isinstance(epi, dict):
        raise ValueError("fused, but it has no epilogue")
    if epi.get("output") != pattern["output"]:
        raise ValueError(f"fused, but its output {pattern['output']} is not the epilogue's "
                         f"({epi.get('output')})")
    missing = [n for n in epi.get("nodes", []) if n not in pattern["nodes"]]
    if missing or not epi.get("nodes"):
        raise ValueError(f"fused, but epilogue nodes {missing or '[]'} are not among its "
                         f"nodes {pattern['nodes']}")


class GemmCall(KernelCall):
    """The call of one GEMM pattern's kernel.

    Attributes:
        epilogue: the manifest's ``epilogue`` when the kernel computes the elementwise tail
            too (``"fused": true``), else ``None``.
        epi_slots: where the tail's inputs go (:func:`epilogue_slots`).
    """

    def __init__(self, pattern: Mapping, input_names: Sequence[str],
                 expected: Mapping[str, dict]) -> None:
        """Raises ValueError: a fused tail input the ABI cannot place."""
        self.epilogue = pattern.get("epilogue") if pattern.get("fused") else None
        self.epi_slots = epilogue_slots(self.epilogue, input_names) if self.epilogue else []
        index = role_indices(pattern, input_names)
        self._a, self._b, self._bias = (index.get(r) for r in ("a", "b", "bias"))
        # A merged GEMM reads the weight and bias concatenated at load (gemm_merged.py), a
        # SwiGLU GEMM the gate/up weight interleaved at load (gemm_swiglu.py).
        self._merged = bool(merged_members(pattern)) or swiglu_of(pattern) is not None
        b_at_load, bias_at_load = (merged_tensor_names(pattern) if merged_members(pattern)
                                   else (swiglu_tensor_name(pattern), None))
        self._merged_bound = self._merged and b_at_load in input_names
        if self._merged_bound:
            names = list(input_names)
            self._b = names.index(b_at_load)
            self._bias = names.index(bias_at_load) if bias_at_load in names else None
        # (input index, name, the plan's strides) of every input the plan has a type for.
        self._strides = [(i, name, expected[name]["strides"])
                         for i, name in enumerate(input_names) if name in expected]
        self._problem = pattern.get("problem") or {}
        self._runtime = pattern.get("runtime") or {}

    def check(self, inputs: Sequence[torch.Tensor]) -> str:
        """GEMM arguments come from the plan's leading dimensions: every input must have the
        plan's strides exactly, and be 16-byte aligned. A merged GEMM (the problem's
        ``"merged"``) or a SwiGLU one (``"swiglu"``) runs only when bound with its weight made
        at load (:meth:`Gemm.kernel_io`; not with buckets): otherwise its nodes run as ATen,
        with that reason."""
        if self._merged and not self._merged_bound:
            return ("a merged or SwiGLU GEMM with buckets: the runtime passes the weight made "
                    "at load only to an unbucketed pattern, so its ATen nodes run")
        for i, name, want in self._strides:
            t = inputs[i]
            if list(t.stride()) != want:
                return f"{name} has strides {list(t.stride())}, the plan assumed {want}"
            if t.data_ptr() % 16:
                return f"{name} is not 16-byte aligned"
        return ""

    def args(self, inputs: Sequence[torch.Tensor], d: torch.Tensor) -> FactGemmArgs:
        """``FactGemmArgs`` for a call on ``inputs`` writing ``d`` (per the manifest problem).

        A tail kernel's entry (the ``"tail"`` of a vendor pattern) has operand ``a`` only: the
        GEMM's output, which the kernel reads as C; ``b`` is then NULL.

        Sizes, leading dimensions and batch strides are the problem's (the inputs were
        checked to have the plan's strides). For a fused tail, ``epi[N]`` points at the
        tensor bound to ``cN``; an input of D's shape (``"mn"``) also gets its row stride
        (``epi_ld``) and, when the problem is batched (``l > 1``), its batch stride; vectors
        along N or M and one-element inputs leave both 0.
        """
        p, rt = self._problem, self._runtime
        assert self._a is not None
        a = inputs[self._a]
        b = inputs[self._b] if self._b is not None else None
        bias = inputs[self._bias] if self._bias is not None else None
        beta_default = 1.0 if bias is not None else 0.0
        args = FactGemmArgs(
            m=int(p["m"]), n=int(p["n"]), k=int(p["k"]), l=int(p.get("l", 1)),
            a=a.data_ptr(), lda=int(p["lda"]), batch_stride_a=int(p.get("batch_stride_a", 0)),
            b=b.data_ptr() if b is not None else None, ldb=int(p["ldb"]),
            batch_stride_b=int(p.get("batch_stride_b", 0)),
            bias=bias.data_ptr() if bias is not None else None,
            d=d.data_ptr(), ldd=int(p["ldd"]), batch_stride_d=int(p.get("batch_stride_d", 0)),
            alpha=float(p.get("alpha", 1.0)), beta=float(p.get("beta", beta_default)),
            splits=int(rt.get("splits", 0)), raster=int(rt.get("raster", 0)),
            swizzle=int(rt.get("swizzle", 0)))
        batched = int(p.get("l", 1)) > 1
        for i, index, kind in self.epi_slots:
            t = inputs[index]
            args.epi[i] = t.data_ptr()
            if kind == "mn":  # D's shape: rows epi_ld apart, batches epi_batch_stride apart
                args.epi_ld[i] = t.stride(-2) if t.dim() >= 2 else 0
                args.epi_batch_stride[i] = t.stride(-3) if batched and t.dim() >= 3 else 0
        return args


class Gemm(Family):
    """GEMM kernels (``src/families/gemm/``), with or without a fused elementwise tail."""

    name = "gemm"
    rules = ("gemm",)
    problem_kind = "gemm"
    args_type = FactGemmArgs
    roles = ("a", "b", "bias")
    errors = {1: "FACT_ERR_BIAS_MISMATCH: bias given to a kernel without bias, or missing",
              2: "FACT_ERR_BETA: this kernel adds the bias with beta == 1 only",
              3: "FACT_ERR_WORKSPACE: workspace smaller than _workspace_bytes",
              4: "FACT_ERR_SCHEDULER: splits/raster/swizzle out of range",
              FACT_ERR_EPILOGUE_INPUT: "FACT_ERR_EPILOGUE_INPUT: an input the fused tail "
                                       "reads is NULL",
              FACT_ERR_PROBLEM: "FACT_ERR_PROBLEM: a tail kernel's C or D is NULL, or M, N, "
                                "L out of range"}

    def check_pattern(self, pattern: Mapping, types: Mapping[str, dict | None]) -> None:
        """A fused entry's epilogue must name its output and be among its nodes."""
        if pattern.get("fused"):
            _check_fused(pattern)

    def bind(self, pattern: Mapping, input_names: Sequence[str],
             expected: Mapping[str, dict]) -> GemmCall:
        return GemmCall(pattern, input_names, expected)

    def kernel_io(self, pattern: Mapping, input_names: Sequence[str],
                  types: Mapping[str, dict | None]) -> KernelIO | None:
        """A merged GEMM reads its weights concatenated at load and writes ``[..., N]``, of
        which the members' outputs are views (:func:`fact.families.gemm_merged.merged_io`); a
        SwiGLU GEMM reads the gate/up weight interleaved at load
        (:func:`fact.families.gemm_swiglu.swiglu_io`)."""
        if merged_members(pattern):
            return merged_io(pattern, types)
        return swiglu_io(pattern, types) if swiglu_of(pattern) is not None else None

    def emit(self, builder: ModuleBuilder, site: KernelSite) -> None:
        """One call; a merged GEMM's also makes the concatenated weight at load and views, a
        SwiGLU GEMM's the interleaved weight."""
        if site.pattern.get("buckets"):
            default_emit(builder, site)
        elif merged_members(site.pattern):
            emit_merged(builder, site)
        elif swiglu_of(site.pattern) is not None:
            emit_swiglu(builder, site)
        else:
            default_emit(builder, site)

    def error_text(self, code: int) -> str:
        """The family's codes, CUDA errors, and ``100 + cutlass::Status``."""
        text = super().error_text(code)
        if not text and code >= STATUS_BASE:
            return f"cutlass::Status {code - STATUS_BASE}"
        return text


#: The GEMM family (one line of :data:`fact.families.FAMILIES`).
FAMILY = Gemm()
