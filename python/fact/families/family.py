"""What the runtime asks of a kernel family (docs/05-composition.md, "Kernel families").

A :class:`Family` is the Python twin of one ``src/families/<name>/``: its kernels' C ABI
(the ctypes arguments structure), the operand roles that come first among a pattern's
inputs, the load-time check of a manifest entry against the graph, the per-call operand
checks and argument builder (a :class:`KernelCall`, made once per pattern), the meaning of
its return codes, the buffers its proofs rely on, and its report detail. The runtime
(:mod:`fact.runtime`, :mod:`fact.kernels`, :mod:`fact.aten_check`, :mod:`fact.module_report`)
only ever goes through these methods; which family a manifest entry belongs to is decided
by :func:`fact.families.family_of` over the explicit list :data:`fact.families.FAMILIES`.
"""

from __future__ import annotations

import abc
import ctypes
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

import torch

from fact.module_gen import KernelSite, ModuleBuilder, default_emit

__all__ = ["Family", "KernelCall", "KernelIO", "role_indices", "CUDA_ERROR_BASE"]

#: Return codes from this value up are ``10000 + cudaError_t`` in every family's ABI.
CUDA_ERROR_BASE = 10000


def role_indices(pattern: Mapping, input_names: Sequence[str]) -> dict[str, int]:
    """Operand role (``"a"``, ``"q"``, ``"mask"``, ...) -> its index in ``input_names``, for
    the roles of the manifest entry's ``operands`` that are among the inputs."""
    names = list(input_names)
    return {role: names.index(name) for role, name in (pattern.get("operands") or {}).items()
            if name in names}


@dataclass
class KernelIO:
    """What a kernel takes and writes when that is not its pattern's values as they are
    (:meth:`Family.kernel_io`): e.g. a merged projection's GEMM reads a weight concatenated
    once at load and writes one ``[M, N]`` result whose column blocks are the members'
    outputs.

    Attributes:
        inputs: the kernel call's inputs, in order: graph values and the names of tensors the
            family's :meth:`Family.emit` makes once at load
            (:meth:`fact.module_gen.ModuleBuilder.load_time_tensor`).
        types: graph ``type`` (dtype, shape, strides) of each load-time input, checked on
            each call like a graph value's.
        out_type: graph ``type`` of the kernel's result.
        fallback: the ATen ops computing that result from ``inputs`` (same order), run when
            the kernel cannot take them.
        defines: the graph values the family's :meth:`Family.emit` defines from the result.
    """

    inputs: list[str]
    types: dict[str, dict]
    out_type: dict
    fallback: Callable[[Sequence[torch.Tensor]], torch.Tensor]
    defines: list[str] = field(default_factory=list)


class KernelCall(abc.ABC):
    """How one pattern's kernel is called: made by :meth:`Family.bind` when the artifact
    loads, from the manifest entry and the binding's input names, and kept by the
    :class:`fact.kernels.KernelBinding`. It holds everything it reads (sizes, operand
    indices, expected strides); the binding hands it the call's tensors only."""

    @abc.abstractmethod
    def check(self, inputs: Sequence[torch.Tensor]) -> str:
        """Why ``inputs`` cannot be passed to the kernel beyond device, dtype and shape
        (which the binding checks for every family); "" when they can.

        The answer must depend only on what :func:`fact.kernels.signature` holds (shapes,
        strides, dtypes, devices, addresses modulo 16): the binding keeps it per signature.
        The kernel's ``can_implement`` must depend on pointers only through their alignment
        (at most 16 bytes) for the same reason."""

    @abc.abstractmethod
    def args(self, inputs: Sequence[torch.Tensor], out: torch.Tensor) -> ctypes.Structure:
        """The arguments structure for a call on ``inputs`` writing ``out``; only called
        after :meth:`check` accepted ``inputs``."""

    def args_extra(self, inputs: Sequence[torch.Tensor], out: torch.Tensor,
                   extra: Mapping[str, torch.Tensor]) -> ctypes.Structure:
        """:meth:`args` for a pattern whose kernel also writes the values of the manifest
        entry's ``"extra_outputs"`` (role -> value; e.g. the norm family's ``"sum"``):
        ``extra`` maps each role to the tensor the kernel writes it into.

        Raises:
            ValueError: the family's kernels write no extra outputs (the default).
        """
        raise ValueError(f"this family's kernels write no extra outputs "
                         f"({', '.join(extra)} asked for)")


class Family(abc.ABC):
    """One kernel family, as the runtime sees it.

    Attributes:
        name: the manifest entry's ``"abi"`` (and the family's name in ``src/families/``).
        rules: the discovery rules whose patterns it implements (the manifest's ``"rule"``).
        problem_kind: its problem descriptor's ``"kind"``.
        args_type: the ctypes mirror of the C arguments structure every entry point takes a
            pointer to.
        roles: operand roles that come first among the custom op's inputs, in this order
            (absent roles are skipped).
        errors: return code -> meaning, for the family's own codes.
        aten_check_by_default: realize compares its kernels with a bound of their ATen path
            only, so the module times them against their ATen nodes (:mod:`fact.aten_check`)
            even when the manifest entry predates the ``"aten_check"`` mark.
        graph_strided_output: the kernel writes its output with the strides the graph
            recorded for it (the runtime allocates it so), not contiguously: the layout the
            pattern reading it was planned for.
        load_time_roles: operand roles whose values the generated module computes once at
            load when they depend only on constants of the export (:mod:`fact.load_time`).
    """

    name: str
    rules: tuple[str, ...]
    problem_kind: str
    args_type: type[ctypes.Structure]
    roles: tuple[str, ...]
    errors: Mapping[int, str]
    aten_check_by_default: bool = False
    graph_strided_output: bool = False
    load_time_roles: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"<kernel family {self.name}>"

    def check_pattern(self, pattern: Mapping, types: Mapping[str, dict | None]) -> None:
        """Check a manifest entry against the graph's value types when an artifact loads.

        Raises:
            ValueError: the entry cannot be bound; the message says what is wrong.
        """

    @abc.abstractmethod
    def bind(self, pattern: Mapping, input_names: Sequence[str],
             expected: Mapping[str, dict]) -> KernelCall:
        """The :class:`KernelCall` of a manifest entry whose custom op takes ``input_names``
        (``expected``: value name -> the graph ``type`` the plan assumed).

        Raises:
            ValueError: the entry asks for something the ABI cannot pass.
        """

    def error_text(self, code: int) -> str:
        """A readable meaning of a nonzero return ``code`` ("" when unknown)."""
        if code in self.errors:
            return self.errors[code]
        if code >= CUDA_ERROR_BASE:
            return f"CUDA error {code - CUDA_ERROR_BASE}"
        return ""

    def proven_buffers(self, pattern: Mapping, read: Iterable[str],
                       params: Mapping[str, Mapping]) -> list[str]:
        """The registered buffers whose values discovery relied on for this pattern, to be
        re-checked with :meth:`buffer_reason` (``read``: the graph values the pattern's
        nodes read; ``params``: placeholder name -> graph ``params`` entry)."""
        return []

    def buffer_reason(self, name: str, value: torch.Tensor) -> str:
        """Why buffer ``name`` (one of :meth:`proven_buffers`) no longer holds what the
        pattern was proven from, so that its ATen nodes must run; "" when it still does."""
        return ""

    def report_detail(self, pattern: Mapping) -> str:
        """One line the module report adds to the pattern's kernel ("" for none)."""
        return ""

    def kernel_io(self, pattern: Mapping, input_names: Sequence[str],
                  types: Mapping[str, dict | None]) -> KernelIO | None:
        """How the kernel's call differs from the pattern's values, or ``None`` (the
        default) when the kernel takes ``input_names`` (the graph values the pattern's nodes
        read, operand roles first) and writes the pattern's output and extra outputs. A
        family that returns a :class:`KernelIO` also overrides :meth:`emit` to make its
        load-time inputs and define ``defines`` from the result.

        Raises:
            ValueError: the entry asks for something the family cannot bind.
        """
        return None

    def emit(self, builder: "ModuleBuilder", site: "KernelSite") -> None:
        """Write the pattern's kernel into the generated module (:mod:`fact.module_gen`).

        The default is one call of the kernel module, ``self.<site.target>(*inputs)``,
        defining the pattern's output (and its extra outputs, as items of the call's
        result). A family whose kernel's results are not the pattern's values as they are
        overrides it: e.g. a merged projection defines each original output as a strided
        view of the one result (``builder.call_function(torch.ops.aten.slice.Tensor, ...)``
        then ``builder.define(value, view)``), and a kernel reading a weight re-laid out
        once at load takes ``builder.load_time_tensor(name, compute, sources)`` among its
        inputs. Every value in ``site.defines`` must be defined when it returns."""
        default_emit(builder, site)
