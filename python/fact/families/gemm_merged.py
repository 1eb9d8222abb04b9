"""Merged projections in the runtime (docs/03-rules.md and docs/05-composition.md, "Merged
projections"): GEMM patterns that read the same A, which discovery merged into one GEMM over
their weights concatenated along N (the problem's ``"merged"``).

The generated module makes the concatenated weight ``[N, K]`` (and bias ``[N]``) once, when
it is built, as buffers of the module; the kernel is one GEMM with N = sum N_i writing one
contiguous ``[..., N]`` result; each member's output is the view
``result[..., offset:offset + N_i]`` (row stride N), never a copy. Used by
:class:`fact.families.gemm.Gemm`. Tests: ``tests/python/families/test_gemm_merged.py``.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import torch

from fact.families.family import KernelIO
from fact.module_gen import KernelSite, ModuleBuilder

__all__ = ["merged_members", "merged_tensor_names", "merged_io", "emit_merged",
           "weight_rows", "contiguous_type"]


def merged_members(pattern: Mapping) -> list[dict]:
    """The problem's ``"merged"`` list (each member's ``output``, ``b``, ``bias``, ``n``,
    ``offset``), empty for a GEMM that is not merged."""
    return list((pattern.get("problem") or {}).get("merged") or [])


def merged_tensor_names(pattern: Mapping) -> tuple[str, str | None]:
    """The load-time tensors' names: the concatenated weight ``fact_<id>_b`` and bias
    ``fact_<id>_bias`` (``None`` without a bias)."""
    pid = pattern["id"]
    has_bias = (pattern.get("problem") or {}).get("bias") is not None
    return f"fact_{pid}_b", (f"fact_{pid}_bias" if has_bias else None)


def contiguous_type(dtype: str, shape: Sequence[int]) -> dict:
    """A graph ``type`` of a contiguous tensor."""
    strides, step = [], 1
    for size in reversed(list(shape)):
        strides.append(step)
        step *= max(int(size), 1)
    return {"dtype": dtype, "shape": [int(s) for s in shape], "strides": strides[::-1]}


def weight_rows(t: Mapping | None, n: int, k: int, what: str) -> bool:
    """Whether a B operand (column-major K×n, ldb = K) of graph type ``t`` — or of a tensor's
    ``{"shape", "strides"}`` — is held as B itself, ``[k, n]`` with unit stride along K
    (True: it is transposed before concatenation), rather than as the ``[n, k]`` matrix Bᵀ
    (an ``nn.Linear`` weight: False). A square one is B when its last stride is not 1.

    Raises:
        ValueError: ``t`` is neither, naming ``what``.
    """
    shape = list((t or {}).get("shape") or [])
    strides = list((t or {}).get("strides") or [])
    if shape == [n, k] and (shape != [k, n] or strides[-1:] == [1]):
        return False
    if shape == [k, n]:
        return True
    raise ValueError(f"{what} has shape {shape}: a merged GEMM member's B is [{n}, {k}] "
                     f"(a linear weight) or its column-major [{k}, {n}] transpose")


def _concat(sizes: Sequence[tuple[int, int]] | None) -> Callable[..., torch.Tensor]:
    """``compute(*tensors)``: the members' weights as ``[n_i, K]`` blocks (``sizes``: their
    ``(n_i, K)``), or without ``sizes`` their biases flattened, concatenated into one new
    contiguous tensor, outside autograd."""
    def compute(*tensors: torch.Tensor) -> torch.Tensor:
        parts = []
        for i, t in enumerate(tensors):
            t = t.detach()
            if sizes is None:
                parts.append(t.reshape(-1))
                continue
            n, k = sizes[i]
            held = {"shape": list(t.shape), "strides": list(t.stride())}
            parts.append(t.t() if weight_rows(held, n, k, f"weight {i}") else t)
        with torch.no_grad():
            return torch.cat(parts, 0).contiguous()
    return compute


def merged_io(pattern: Mapping, types: Mapping[str, dict | None]) -> KernelIO:
    """The merged GEMM's call: inputs A, the concatenated weight ``[N, K]`` and bias ``[N]``
    (:func:`merged_tensor_names`), result ``[..., N]`` (the first member's leading dims,
    contiguous), defining every member's output (:func:`emit_merged`). The fallback is
    ATen's GEMM on the same inputs, ``alpha * (A @ Bᵀ) + beta * bias`` — one ``linear``.

    Raises:
        ValueError: a member's weight, bias or output does not have the problem's sizes.
    """
    p = pattern["problem"]
    members = merged_members(pattern)
    n, k = int(p["n"]), int(p["k"])
    b_name, bias_name = merged_tensor_names(pattern)
    a = (pattern.get("operands") or {}).get("a")
    if not a:
        raise ValueError("merged GEMM without operand a")
    if p.get("bias") not in (None, "n") or (bias_name and any(not m.get("bias") for m in members)):
        raise ValueError(f"merged GEMM with bias {p.get('bias')!r}: the members' biases must "
                         f"all be vectors along N")
    first = types.get(members[0]["output"]) or {}
    lead = list(first.get("shape") or [])[:-1]
    offset = 0
    for m in members:
        out = types.get(m["output"]) or {}
        if list(out.get("shape") or []) != lead + [int(m["n"])] or int(m["offset"]) != offset:
            raise ValueError(f"merged GEMM member {m['output']}: shape {out.get('shape')} at "
                             f"offset {m['offset']} does not follow {lead} + [{m['n']}] at "
                             f"offset {offset}")
        weight_rows(types.get(m["b"]), int(m["n"]), k, f"weight {m['b']}")
        offset += int(m["n"])
    if offset != n:
        raise ValueError(f"merged GEMM: the members' N sum to {offset}, the problem's N is {n}")
    w_type = types.get(members[0]["b"]) or {}
    io_types = {b_name: contiguous_type(w_type.get("dtype", p.get("dtype_b")), [n, k])}
    inputs = [a, b_name]
    if bias_name:
        bias_type = types.get(members[0]["bias"]) or {}
        io_types[bias_name] = contiguous_type(bias_type.get("dtype", p.get("dtype_d")), [n])
        inputs.append(bias_name)
    alpha = float(p.get("alpha", 1.0))
    beta = float(p.get("beta", 1.0 if bias_name else 0.0))

    def fallback(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
        d = torch.nn.functional.linear(tensors[0], tensors[1])
        if alpha != 1.0:
            d = d * alpha
        return d + beta * tensors[2] if bias_name else d

    return KernelIO(inputs, io_types, contiguous_type(first.get("dtype", p.get("dtype_d")),
                                                       lead + [n]),
                    fallback, [m["output"] for m in members])


def emit_merged(builder: ModuleBuilder, site: KernelSite) -> None:
    """The merged GEMM in the generated module: the concatenated weight and bias as
    load-time tensors (made once, when the module is built), one call of the kernel, and each
    member's output as ``aten.slice`` of the result along its last dim (a strided view)."""
    members = merged_members(site.pattern)
    k = int(site.pattern["problem"]["k"])
    b_name, bias_name = merged_tensor_names(site.pattern)
    builder.load_time_tensor(b_name, _concat([(int(m["n"]), k) for m in members]),
                             [m["b"] for m in members])
    inputs = [site.pattern["operands"]["a"], b_name]
    if bias_name:
        builder.load_time_tensor(bias_name, _concat(None), [m["bias"] for m in members])
        inputs.append(bias_name)
    result = builder.call_module(site.target, site.module, inputs, name=site.target)
    for m in members:
        lo = int(m["offset"])
        view = builder.call_function(torch.ops.aten.slice.Tensor,
                                     (result, -1, lo, lo + int(m["n"])), name=m["output"])
        builder.define(m["output"], view)
