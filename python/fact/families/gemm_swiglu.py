"""SwiGLU in the runtime (docs/03-rules.md and docs/05-composition.md, "SwiGLU"):
``silu(x @ Wg.T) * (x @ Wu.T)`` as one GEMM over the gate/up weight interleaved in blocks of
8 rows (the problem's ``"swiglu"``: ``gate`` and ``up`` with their ``output`` and weight
``b``, ``hidden`` H, ``interleave`` 8).

The generated module makes the interleaved weight ``[2H, K]`` once, when it is built, as a
buffer of the module (rows 16b..16b+7 are Wg's rows 8b..8b+7, rows 16b+8..16b+15 Wu's); the
kernel is the GEMM with N = 2H whose epilogue writes ``silu(g) * u``, ``[..., H]``: the
pattern's output (the mul's). The ATen fallback on the same inputs is ``linear`` over the
interleaved weight, its columns paired back by a view. Used by
:class:`fact.families.gemm.Gemm`. Tests: ``tests/python/families/test_gemm_swiglu.py``.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import torch

from fact.families.family import KernelIO
from fact.families.gemm_merged import contiguous_type
from fact.module_gen import KernelSite, ModuleBuilder

__all__ = ["INTERLEAVE", "swiglu_of", "swiglu_tensor_name", "interleave", "swiglu_io", "emit_swiglu"]

#: Rows of Wg, then of Wu, in each block of the interleaved weight (src/families/gemm/swiglu_layout.h).
INTERLEAVE = 8


def swiglu_of(pattern: Mapping) -> dict | None:
    """The problem's ``"swiglu"`` object, or ``None`` for a GEMM that is not SwiGLU."""
    s = (pattern.get("problem") or {}).get("swiglu")
    return s if isinstance(s, dict) else None


def swiglu_tensor_name(pattern: Mapping) -> str:
    """The load-time interleaved weight's name: ``fact_<id>_w``."""
    return f"fact_{pattern['id']}_w"


def interleave(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """The ``[2H, K]`` interleaved weight of two ``[H, K]`` weights (H a multiple of 8): a new
    contiguous tensor outside autograd.

    Raises:
        ValueError: the weights differ in shape or H is not a multiple of 8.
    """
    if gate.shape != up.shape or gate.dim() != 2 or gate.shape[0] % INTERLEAVE:
        raise ValueError(f"SwiGLU weights of shapes {list(gate.shape)} and {list(up.shape)}: both must be "
                         f"[H, K] with H a multiple of {INTERLEAVE}")
    h, k = gate.shape
    with torch.no_grad():
        blocks = torch.stack([gate.detach().reshape(h // INTERLEAVE, INTERLEAVE, k),
                              up.detach().reshape(h // INTERLEAVE, INTERLEAVE, k)], 1)
        return blocks.reshape(2 * h, k).contiguous()


def _pairs(y: torch.Tensor, h: int) -> torch.Tensor:
    """silu(g) * u from the ``[..., 2H]`` GEMM over the interleaved weight."""
    blocks = y.unflatten(-1, (h // INTERLEAVE, 2, INTERLEAVE))
    return (torch.nn.functional.silu(blocks.select(-2, 0)) * blocks.select(-2, 1)).flatten(-2)


def swiglu_io(pattern: Mapping, types: Mapping[str, dict | None]) -> KernelIO:
    """The SwiGLU GEMM's call: inputs A and the interleaved weight
    (:func:`swiglu_tensor_name`), result the pattern's output ``[..., H]`` (contiguous).

    Raises:
        ValueError: the weights or the output do not have the problem's sizes.
    """
    s = swiglu_of(pattern) or {}
    p = pattern["problem"]
    h, k = int(s.get("hidden", 0)), int(p["k"])
    if int(s.get("interleave", 0)) != INTERLEAVE or h % INTERLEAVE or int(p["n"]) != 2 * h:
        raise ValueError(f"SwiGLU problem with interleave {s.get('interleave')}, hidden {h}, n {p['n']}: "
                         f"the runtime interleaves in blocks of {INTERLEAVE}, n = 2 * hidden")
    for role in ("gate", "up"):
        w = types.get((s.get(role) or {}).get("b", "")) or {}
        if list(w.get("shape") or []) != [h, k]:
            raise ValueError(f"SwiGLU {role} weight {(s.get(role) or {}).get('b')} has shape "
                             f"{w.get('shape')}, not [{h}, {k}]")
    out = types.get(pattern["output"]) or {}
    if list(out.get("shape") or [])[-1:] != [h]:
        raise ValueError(f"SwiGLU output {pattern['output']} has shape {out.get('shape')}, not [..., {h}]")
    w_name = swiglu_tensor_name(pattern)
    w_type = types.get(s["gate"]["b"]) or {}

    def fallback(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
        return _pairs(torch.nn.functional.linear(tensors[0], tensors[1]), h)

    return KernelIO([pattern["operands"]["a"], w_name],
                    {w_name: contiguous_type(w_type.get("dtype", p.get("dtype_b")), [2 * h, k])},
                    contiguous_type(out.get("dtype", p.get("dtype_d")), out["shape"]), fallback,
                    [pattern["output"]])


def emit_swiglu(builder: ModuleBuilder, site: KernelSite) -> None:
    """The SwiGLU GEMM in the generated module: the interleaved weight as a load-time tensor
    (made once, when the module is built) and one call of the kernel defining the pattern's
    output."""
    s = swiglu_of(site.pattern) or {}
    w_name = swiglu_tensor_name(site.pattern)
    builder.load_time_tensor(w_name, interleave, [s["gate"]["b"], s["up"]["b"]])
    out = site.pattern["output"]
    builder.define(out, builder.call_module(site.target, site.module,
                                            [site.pattern["operands"]["a"], w_name], name=out))
