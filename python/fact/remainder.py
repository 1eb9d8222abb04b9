"""What runs the nodes outside FACT's kernels: Inductor (default) or ATen op by op
(docs/05-composition.md, "The remainder through Inductor").

A FACT module's generated ``torch.fx.GraphModule`` calls each FACT kernel as an opaque custom
op (``fact::<pattern id>``, with a fake implementation) and every other node as its ATen op.
With ``remainder="inductor"`` that GraphModule is compiled by ``torch.compile`` (Inductor,
default mode) on its first call, so the elementwise ops, reductions and norms FACT does not
cover are fused around the kernels, as ``torch.compile`` of the model would fuse them. With
``remainder="aten"`` it runs as it is, one ATen call per node (for debugging, and where
Inductor cannot run: no Triton, no C++ compiler).

:func:`handed_back` makes the manifest of a module whose chosen patterns run their ATen
nodes instead of their kernels, so that under Inductor those nodes are fused with the rest
(the measured composition, :mod:`fact.composition`, times such variants).
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Iterable, Mapping

import torch

from fact.log import warn_once

__all__ = ["REMAINDERS", "check_remainder", "RemainderRunner", "handed_back"]

#: The remainder modes, the default first.
REMAINDERS = ("inductor", "aten")


def check_remainder(mode: str) -> str:
    """``mode`` when it is one of :data:`REMAINDERS`.

    Raises:
        ValueError: any other value (the message lists the modes).
    """
    if mode not in REMAINDERS:
        raise ValueError(f"remainder {mode!r}: expected one of {', '.join(REMAINDERS)}")
    return mode


class RemainderRunner:
    """Runs a generated module under ``mode``.

    ``"inductor"``: ``torch.compile(generated)`` (default mode, compiled on the first call;
    a new shape recompiles as ``torch.compile`` does). A call made while something else is
    compiling or exporting (the FACT module itself traced by ``torch.compile``) runs the
    GraphModule as it is, so the outer compile sees its ATen ops and custom ops. When
    Inductor fails (raises while compiling or running its code), the failure is said once
    (:attr:`failed`) and every later call runs op by op: a module never stops working
    because Inductor cannot compile it.

    Args:
        generated: the generated GraphModule (inputs, then the module's tensors).
        mode: one of :data:`REMAINDERS`.
        compile_fn: what compiles ``generated`` (``torch.compile``; tests pass a stand-in).

    Attributes:
        failed: why Inductor is not used ("" while it is, or in ``"aten"`` mode).
    """

    def __init__(self, generated: torch.fx.GraphModule, mode: str,
                 compile_fn: Callable[[torch.nn.Module], Callable[..., Any]] | None = None
                 ) -> None:
        self.generated, self.mode = generated, check_remainder(mode)
        self._compile = compile_fn or torch.compile
        self._compiled: Callable[..., Any] | None = None
        self.failed = ""

    @property
    def inductor(self) -> bool:
        """Whether calls go through Inductor (the mode is ``"inductor"`` and it has not failed)."""
        return self.mode == "inductor" and not self.failed

    def __call__(self, *args: Any) -> Any:
        if not self.inductor or torch.compiler.is_compiling():
            return self.generated(*args)
        if self._compiled is None:
            self._compiled = self._compile(self.generated)
        try:
            return self._compiled(*args)
        except Exception as exc:  # Dynamo/Inductor errors have no common base class
            self.failed = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
            self._compiled = None
            warn_once(f"remainder:{id(self)}", f"fact: Inductor failed on the module's "
                      f"remainder ({self.failed}); its nodes run one ATen op at a time")
            return self.generated(*args)


def handed_back(manifest: Mapping | None, pattern_ids: Iterable[str],
                reason: str | Mapping[str, str]) -> dict | None:
    """A copy of ``manifest`` where the kernel patterns named in ``pattern_ids`` (a kernel
    pattern's id, or a vendor pattern's fused tail's ``<id>_tail``) are marked
    ``impl: "aten"`` with ``aten_reason`` = ``reason`` (one for all, or id -> reason): a
    module built from it runs their ATen nodes as part of the remainder. ``None`` stays
    ``None``.

    Raises:
        ValueError: an id names no kernel pattern of the manifest.
    """
    if manifest is None:
        return None
    out = copy.deepcopy(dict(manifest))
    wanted = set(pattern_ids)
    found: set[str] = set()
    for p in out.get("patterns", []):
        for entry in (p, p.get("tail") if isinstance(p.get("tail"), dict) else None):
            if entry is not None and entry.get("impl") == "cutlass" and entry.get("id") in wanted:
                why = reason if isinstance(reason, str) else reason[entry["id"]]
                entry.update(impl="aten", aten_reason=why)
                found.add(entry["id"])
    missing = sorted(wanted - found)
    if missing:
        raise ValueError(f"no kernel pattern {', '.join(missing)} in the manifest")
    return out
