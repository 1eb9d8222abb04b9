"""What runs the nodes outside FACT's kernels: Inductor (default) or ATen op by op
(docs/05-composition.md, "The remainder through Inductor").

A FACT module's generated ``torch.fx.GraphModule`` calls each FACT kernel as an opaque custom
op (``fact::<pattern id>``, with a fake implementation) and every other node as its ATen op.
With ``remainder="inductor"`` that GraphModule is compiled by Inductor (``compile_fx``,
default mode) on its first call, so the elementwise ops, reductions and norms FACT does not
cover are fused around the kernels, as ``torch.compile`` of the model would fuse them. Not
through Dynamo: the GraphModule is already one graph, and Dynamo does not compile a frame
called from a Dynamo backend's own code (the backend's callable runs under
``torch._dynamo.disable``), where FACT's modules run. With
``remainder="aten"`` it runs as it is, one ATen call per node (for debugging, and where
Inductor cannot run: no Triton, no C++ compiler).

:func:`handed_back` makes the manifest of a module whose chosen patterns run their ATen
nodes instead of their kernels, so that under Inductor those nodes are fused with the rest
(the measured composition, :mod:`fact.composition`, times such variants).
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Iterable, Mapping, Sequence

import torch

from fact.log import warn_once
from fact.manifest import entries

__all__ = ["REMAINDERS", "MAX_KINDS", "check_remainder", "inductor_compile", "RemainderRunner",
           "handed_back"]

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


#: Shapes (per input: shape, strides, dtype, device) one runner compiles for; a call of
#: another kind past this many runs op by op (as ``torch.compile``'s recompile limit, 8).
MAX_KINDS = 8


def inductor_compile(gm: torch.fx.GraphModule, args: Sequence[Any]) -> Callable[..., Any]:
    """``gm`` compiled by Inductor for ``args`` (``torch._inductor.compile_fx.compile_fx``,
    default mode) on a copy of its graph (compile_fx rewrites the graph it is given; the
    submodules, FACT's kernels among them, are shared). The result takes ``gm``'s
    arguments and returns its outputs. Inductor traces the kernels' modules into their
    custom ops (:class:`fact.kernels.FactKernel`: fake tensors take the op)."""
    from torch._inductor.compile_fx import compile_fx
    fn = compile_fx(torch.fx.GraphModule(gm, copy.deepcopy(gm.graph)), list(args))

    def run(*call_args: Any) -> Any:  # several outputs come back as a list: gm's tuple
        out = fn(*call_args)
        return tuple(out) if isinstance(out, list) else out
    return run


def _kind(args: Sequence[Any]) -> tuple:
    return tuple((a.shape, a.stride(), a.dtype, a.device) if isinstance(a, torch.Tensor)
                 else a for a in args)


class RemainderRunner:
    """Runs a generated module under ``mode``.

    ``"inductor"``: the GraphModule compiled by Inductor (:func:`inductor_compile`, no
    Dynamo: the module's Python is already one graph) on the first call of each kind of
    arguments (shapes, strides, dtypes, devices), at most :data:`MAX_KINDS` kinds; calls of
    further kinds run op by op (said once). A call that needs autograd (grad mode on and an
    argument requiring grad) runs op by op: FACT's kernels have no backward. A call made while something traces the FACT module (it is
    compiled or exported itself) runs the GraphModule as it is, so the outer trace sees its
    ATen ops and custom ops. When Inductor fails (raises while compiling or running its
    code), the failure is said once (:attr:`failed`) and every later call runs op by op: a
    module never stops working because Inductor cannot compile it.

    Args:
        generated: the generated GraphModule (inputs, then the module's tensors).
        mode: one of :data:`REMAINDERS`.
        compile_fn: ``compile_fn(generated, args)`` -> a callable of ``generated``'s
            arguments (:func:`inductor_compile`; tests pass a stand-in).
        keyed: how many leading arguments decide the kind of a call (the module's inputs;
            its tensors after them keep their shapes); ``None``: all.

    Attributes:
        failed: why Inductor is not used ("" while it is, or in ``"aten"`` mode).
        compiles: how many kinds of arguments were compiled.
    """

    def __init__(self, generated: torch.fx.GraphModule, mode: str,
                 compile_fn: Callable[[torch.fx.GraphModule, Sequence[Any]],
                                      Callable[..., Any]] | None = None,
                 keyed: int | None = None) -> None:
        self.generated, self.mode = generated, check_remainder(mode)
        self._compile = compile_fn or inductor_compile
        self._keyed = keyed
        self._compiled: dict[tuple, Callable[..., Any]] = {}
        self.failed = ""

    @property
    def inductor(self) -> bool:
        """Whether calls go through Inductor (the mode is ``"inductor"`` and it has not failed)."""
        return self.mode == "inductor" and not self.failed

    @property
    def compiles(self) -> int:
        return len(self._compiled)

    def __call__(self, *args: Any) -> Any:
        if not self.inductor or torch.compiler.is_compiling() or (
                torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad
                                                for a in args)):
            return self.generated(*args)  # (FACT's kernels have no backward: op by op)
        kind = _kind(args[:self._keyed] if self._keyed is not None else args)
        fn = self._compiled.get(kind)
        try:
            if fn is None:
                if len(self._compiled) >= MAX_KINDS:
                    warn_once(f"remainder-kinds:{id(self)}", f"fact: the module's remainder was "
                              f"compiled for {MAX_KINDS} kinds of inputs; calls of further "
                              f"kinds run one ATen op at a time")
                    return self.generated(*args)
                fn = self._compiled[kind] = self._compile(self.generated, args)
            return fn(*args)
        except Exception as exc:  # Dynamo/Inductor errors have no common base class
            self.failed = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
            self._compiled.clear()
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
    for entry in entries(out):
        if entry.get("impl") == "cutlass" and entry.get("id") in wanted:
            why = reason if isinstance(reason, str) else reason[entry["id"]]
            entry.update(impl="aten", aten_reason=why)
            found.add(entry["id"])
    missing = sorted(wanted - found)
    if missing:
        raise ValueError(f"no kernel pattern {', '.join(missing)} in the manifest")
    return out
