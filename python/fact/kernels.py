"""Calling FACT kernels: the C ABIs of docs/05-composition.md through ctypes, as custom ops.

Each kernel in ``libfact_kernels.so`` exports ``<symbol>_can_implement``,
``<symbol>_workspace_bytes``, ``<symbol>_run`` and ``<symbol>_name``, all taking a pointer to
the arguments structure of its family's ABI (:attr:`fact.families.Family.args_type`; the
manifest entry's ``"abi"`` names the family, :func:`fact.families.family_of`). A pattern
with ``impl: "cutlass"`` is called through the ``torch.library`` custom op
``fact::<pattern id>`` whose schema is ``(Tensor[] inputs, int handle) -> Tensor`` (``->
Tensor[]``, the output then the extra outputs, for a pattern whose manifest entry lists
``"extra_outputs"``):
``inputs`` are the pattern's external tensor values (in :attr:`KernelBinding.input_names`
order: the family's operand roles first) and ``handle`` selects the :class:`KernelBinding`
(so two artifacts that both have a pattern ``p0`` coexist in one process).
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from typing import Any, Callable, Sequence

import torch

from fact.export import DTYPE_NAMES
from fact.families import Family

__all__ = ["KernelLibrary", "KernelFunctions", "KernelBinding", "FactKernel", "register_binding",
           "fact_op", "fact_multi_op", "signature", "state_version", "unaliased", "as_declared",
           "declared_strides", "DTYPE_BY_NAME"]

DTYPE_BY_NAME: dict[str, torch.dtype] = {v: k for k, v in DTYPE_NAMES.items()}


class KernelLibrary:
    """A loaded ``libfact_kernels.so``; :meth:`kernel` gives one kernel's entry points.

    Raises:
        OSError: the library cannot be loaded (from ``ctypes.CDLL``).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._lib = ctypes.CDLL(path)

    def kernel(self, symbol: str, args_type: type[ctypes.Structure]) -> "KernelFunctions":
        """The entry points of kernel ``symbol``, taking a pointer to ``args_type`` (the
        family's :attr:`fact.families.Family.args_type`).

        Raises:
            RuntimeError: the library does not export one of them.
        """
        return KernelFunctions(self._lib, symbol, self.path, args_type)


class KernelFunctions:
    """``can_implement``, ``workspace_bytes``, ``run`` and ``name`` of one kernel symbol, with
    ctypes signatures over the ABI's arguments structure ``args_type``."""

    def __init__(self, lib: ctypes.CDLL, symbol: str, path: str,
                 args_type: type[ctypes.Structure]) -> None:
        args_p = ctypes.POINTER(args_type)
        self.args_type = args_type
        try:
            self.can_implement = getattr(lib, f"{symbol}_can_implement")
            self.workspace_bytes = getattr(lib, f"{symbol}_workspace_bytes")
            self.run = getattr(lib, f"{symbol}_run")
            self._name = getattr(lib, f"{symbol}_name")
        except AttributeError as exc:
            raise RuntimeError(f"{path} does not export kernel {symbol}: {exc}") from exc
        self.can_implement.argtypes, self.can_implement.restype = [args_p], ctypes.c_int
        self.workspace_bytes.argtypes, self.workspace_bytes.restype = [args_p], ctypes.c_size_t
        self.run.argtypes = [args_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        self.run.restype = ctypes.c_int
        self._name.argtypes, self._name.restype = [], ctypes.c_char_p

    def name(self) -> str:
        """The kernel's procedural name, as the library reports it."""
        return self._name().decode()


#: Bumped whenever a binding's state that decides its calls changes (``disabled_reason``,
#: ``record_inputs``): a captured CUDA graph of older state is stale (:mod:`fact.cuda_graph`).
_state = [0]


def state_version() -> int:
    """A number that changes whenever any binding's ``disabled_reason`` or ``record_inputs``
    is set."""
    return _state[0]


def signature(inputs: Sequence[torch.Tensor]) -> tuple:
    """What a call's checks depend on: per input its shape, strides, dtype, device and
    address modulo 16 (the largest alignment a FACT kernel requires)."""
    return tuple((t.shape, t.stride(), t.dtype, t.device, t.data_ptr() & 15) for t in inputs)


class KernelBinding:
    """One cutlass pattern of a loaded artifact, ready to call, for any kernel family.

    What differs between families (the arguments structure, the operand checks, how the
    arguments are filled, the return codes) is the :class:`fact.families.Family` in
    :attr:`family` and the :class:`fact.families.KernelCall` it made for this pattern
    (:attr:`call`); the call itself (checks, output allocation, ``can_implement``,
    workspace, ``run`` on the current CUDA stream, fallback) is shared.

    The checks of a call (device, dtype, shape, the family's :meth:`KernelCall.check`, the
    kernel's ``can_implement``) are functions of the inputs' :func:`signature` alone, so
    their answer (and the workspace size) is kept per signature: a call whose signature was
    seen costs one dict lookup before the launch.

    Attributes:
        pattern: the manifest's pattern entry (``id``, ``operands``, ``problem``, ...).
        family: the kernel's family (:func:`fact.families.family_of` of the pattern).
        call: the family's :class:`fact.families.KernelCall` for this pattern.
        input_names: external tensor values of the pattern, the custom op's ``inputs``.
        expected: value name -> graph ``type`` (dtype/shape/strides) the plan assumed (a
            narrowed value's with its narrow dtype, :mod:`fact.narrowing`).
        out_type: graph ``type`` of the pattern output (shape and dtype of the result; a
            narrowed output's narrow dtype).
        fallback: runs the pattern's ATen nodes on ``inputs`` (same order) -> output (a
            list: the output, then the extra outputs, when there are extra outputs).
        extra_outputs: role -> graph value the kernel writes besides the output (the
            manifest entry's ``"extra_outputs"``; empty for most patterns).
        extra_types: role -> graph ``type`` of each extra output.
        device_type: where the kernel's operands live (``"cuda"``; tests of the ABI use a
            host-memory library and ``"cpu"``).
        fallbacks: how many calls ran ``fallback`` instead of the kernel.
        fallback_reasons: reason -> how many fallbacks it caused.
        last_fallback_reason: why the latest fallback happened.
        disabled_reason: when not empty, every call runs ``fallback`` for this reason (e.g.
            the buffer a causal mask was proven from is no longer lower-triangular, or the
            ATen nodes measured faster: :mod:`fact.aten_check`).
        record_inputs: when True, the next call keeps its inputs in ``recorded_inputs``.
    """

    def __init__(self, pattern: dict, functions: KernelFunctions | None,
                 input_names: Sequence[str], expected: dict[str, dict],
                 out_type: dict, fallback: Callable[[Sequence[torch.Tensor]], torch.Tensor],
                 family: Family, extra_types: dict[str, dict] | None = None) -> None:
        """Raises ValueError: the family cannot call the pattern (e.g. a fused tail input
        the GEMM ABI cannot place)."""
        self.pattern = pattern
        self.family = family
        self.functions = functions
        self.input_names = list(input_names)
        self.expected = expected
        self.out_type = out_type
        self.fallback = fallback
        self.extra_outputs: dict[str, str] = dict(pattern.get("extra_outputs") or {})
        self.extra_types: dict[str, dict] = dict(extra_types or {})
        self.device_type = "cuda"
        self.fallbacks = 0
        self.fallback_reasons: dict[str, int] = {}
        self.last_fallback_reason = ""
        self._disabled_reason = ""
        # fact.aten_check: the next call keeps its inputs in recorded_inputs.
        self._record_inputs = False
        self.recorded_inputs: list[torch.Tensor] | None = None
        self.kernel_name = pattern.get("kernel", pattern["id"])
        self.call = family.bind(pattern, self.input_names, expected)
        # signature -> (reason the kernel cannot take such inputs or "", workspace bytes).
        self._checked: dict[tuple, tuple[str, int]] = {}

    @property
    def disabled_reason(self) -> str:
        return self._disabled_reason

    @disabled_reason.setter
    def disabled_reason(self, reason: str) -> None:
        self._disabled_reason = reason
        _state[0] += 1

    @property
    def record_inputs(self) -> bool:
        return self._record_inputs

    @record_inputs.setter
    def record_inputs(self, on: bool) -> None:
        self._record_inputs = on
        _state[0] += 1

    @property
    def device_type(self) -> str:
        return self._device_type

    @device_type.setter
    def device_type(self, device_type: str) -> None:  # the checks' answers change with it
        self._device_type = device_type
        self._checked = {}

    # ----------------------------------------------------------------- checks
    def mismatch(self, inputs: Sequence[torch.Tensor]) -> str:
        """Why ``inputs`` do not fit the kernel ("" when they do): the binding is disabled,
        no library is loaded, an input is on another device or has another dtype or shape
        than the plan assumed, or the family's own checks fail
        (:meth:`fact.families.KernelCall.check`). Not cached (see :meth:`__call__`)."""
        if self.disabled_reason:
            return self.disabled_reason
        if self.functions is None:
            return "no kernel library loaded"
        for name, t in zip(self.input_names, inputs):
            want = self.expected.get(name)
            if want is None:
                continue
            if t.device.type != self.device_type:
                return f"{name} is on {t.device}, the kernel runs on {self.device_type}"
            if t.device != inputs[0].device:
                return f"{name} is on {t.device}, {self.input_names[0]} on {inputs[0].device}"
            if DTYPE_NAMES.get(t.dtype) != want["dtype"]:
                return f"{name} has dtype {t.dtype}, the plan assumed {want['dtype']}"
            if list(t.shape) != want["shape"]:
                return f"{name} has shape {list(t.shape)}, the plan assumed {want['shape']}"
        return self.call.check(inputs)

    def args(self, inputs: Sequence[torch.Tensor], out: torch.Tensor) -> ctypes.Structure:
        """The family's arguments structure for a call on ``inputs`` writing ``out``
        (:meth:`fact.families.KernelCall.args`)."""
        return self.call.args(inputs, out)

    def _check(self, inputs: Sequence[torch.Tensor], sig: tuple) -> tuple[str, int]:
        """The answer for a signature not seen yet: :meth:`mismatch`, then
        ``can_implement`` on arguments for these inputs, and the workspace size; kept."""
        reason, ws_bytes = self.mismatch(inputs), 0
        if not reason:
            args = self._arguments(inputs)[0]
            fns = self.functions
            assert fns is not None
            code = fns.can_implement(ctypes.byref(args))
            if code != 0:
                meaning = self.family.error_text(code)
                reason = (f"can_implement rejected the arguments (code {code}"
                          + (f": {meaning})" if meaning else ")"))
            else:
                ws_bytes = max(int(fns.workspace_bytes(ctypes.byref(args))),
                               int(self.pattern.get("workspace_bytes", 0) or 0))
        self._checked[sig] = (reason, ws_bytes)
        return reason, ws_bytes

    # ------------------------------------------------------------------- call
    def __call__(self, inputs: Sequence[torch.Tensor]) -> torch.Tensor | list[torch.Tensor]:
        """Run the kernel on ``inputs`` (or the ATen fallback, counted with its reason).

        Returns:
            A new tensor of the pattern output's graph shape and dtype (:func:`new_output`:
            contiguous unless the family writes the graph's strides); with
            extra outputs, a list: that tensor, then one per extra output (role order).

        Raises:
            RuntimeError: the kernel's ``run`` returned nonzero (names kernel, code and its
                meaning).
        """
        if self._record_inputs:
            self.recorded_inputs, self.record_inputs = list(inputs), False
        reason = self._disabled_reason
        if not reason:
            sig = signature(inputs)
            entry = self._checked.get(sig)
            reason, ws_bytes = entry if entry is not None else self._check(inputs, sig)
            if not reason:
                # Launch on the inputs' GPU, whichever is current (the kernels use the
                # current device, as CUDA does).
                device = inputs[0].device
                with torch.cuda.device(device) if device.type == "cuda" \
                        else contextlib.nullcontext():
                    return self._launch(inputs, ws_bytes)
        return self.run_fallback(inputs, reason)

    def run_fallback(self, inputs: Sequence[torch.Tensor], reason: str
                     ) -> torch.Tensor | list[torch.Tensor]:
        """The pattern's ATen nodes on ``inputs``, counted as a fallback for ``reason``;
        results that alias an input or each other are copied (a custom op's may not)."""
        self.fallbacks += 1
        self.fallback_reasons[reason] = self.fallback_reasons.get(reason, 0) + 1
        self.last_fallback_reason = reason
        return unaliased(self.fallback(inputs), inputs, bool(self.extra_outputs))

    def out_shape(self, inputs: Sequence[torch.Tensor]) -> list[int]:
        """The output's shape (the plan's; the same for every call)."""
        return self.out_type["shape"]

    def _arguments(self, inputs: Sequence[torch.Tensor]
                   ) -> tuple[ctypes.Structure, torch.Tensor, dict[str, torch.Tensor]]:
        """New output tensors (the output, the extra outputs by role) on the inputs' device
        and the family's arguments structure writing them."""
        device = inputs[0].device
        out = new_output(self.out_type, self.family, device)
        if not self.extra_types:
            return self.args(inputs, out), out, {}
        extra = {role: torch.empty(t["shape"], dtype=DTYPE_BY_NAME[t["dtype"]], device=device)
                 for role, t in self.extra_types.items()}
        return self.call.args_extra(inputs, out, extra), out, extra

    def _launch(self, inputs: Sequence[torch.Tensor], ws_bytes: int) -> Any:
        """Runs the kernel on ``inputs`` (accepted for their signature, on the current
        device) and returns its output(s). Raises RuntimeError as :meth:`__call__` does."""
        args, out, extra = self._arguments(inputs)
        device = out.device
        ws = torch.empty(ws_bytes, dtype=torch.uint8, device=device) if ws_bytes > 0 else None
        stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
        fns = self.functions
        assert fns is not None
        code = fns.run(ctypes.byref(args), ws.data_ptr() if ws is not None else None,
                       ws_bytes, ctypes.c_void_p(stream))
        if code != 0:
            meaning = self.family.error_text(code)
            raise RuntimeError(f"FACT kernel {self.kernel_name} (pattern "
                               f"{self.pattern['id']}) failed with code {code}"
                               + (f" ({meaning})" if meaning else ""))
        return [out, *extra.values()] if extra else out


#: Tensor types an eager call passes; any other (FakeTensor, FunctionalTensor) is a trace.
_PLAIN = (torch.Tensor, torch.nn.Parameter, torch.nn.Buffer)


class FactKernel(torch.nn.Module):
    """The module a generated FACT module calls for one kernel (``self.fact_p0(a, b)``):
    its binding directly, or, while ``torch.compile``/``torch.export``/Inductor's
    ``compile_fx`` trace it, the custom op ``fact::<id>`` (``fact::<id>_multi`` with extra outputs), whose fake kernel gives the
    output's shape and dtype.

    Returns what :meth:`KernelBinding.__call__` returns.
    """

    def __init__(self, binding: KernelBinding, handle: int) -> None:
        super().__init__()
        self.binding = binding
        self.handle = handle
        self.op = (fact_multi_op if binding.extra_outputs else fact_op)(binding.pattern["id"])

    def forward(self, *inputs: torch.Tensor) -> Any:
        # Traced (Dynamo, export, or Inductor's own AOT trace, whose tensors are fake or
        # functional subclasses): the custom op; real tensors: the binding itself.
        if torch.compiler.is_compiling() or any(type(t) not in _PLAIN for t in inputs):
            return self.op(list(inputs), self.handle)
        return self.binding(inputs)

    def extra_repr(self) -> str:
        b = self.binding
        return (f"fact::{b.pattern['id']}, {b.family.name} kernel {b.kernel_name}, "
                f"inputs {', '.join(b.input_names)}")


def declared_strides(t: dict, family: Family, shape: Sequence[Any]) -> list[Any]:
    """The strides of a pattern's output of graph type ``t`` and this call's ``shape``: the
    graph's ``t["strides"]`` when ``family.graph_strided_output`` and they are numbers (the
    layout the pattern reading it was planned for), else contiguous ones."""
    strides = t.get("strides")
    if family.graph_strided_output and strides is not None \
            and all(isinstance(x, int) for x in strides):
        return list(strides)
    out, step = [], 1
    for size in reversed(list(shape)):
        out.append(step)
        step = step * size
    return out[::-1]


def new_output(t: dict, family: Family, device: torch.device,
               shape: Sequence[Any] | None = None) -> torch.Tensor:
    """An empty tensor of graph type ``t`` on ``device`` with :func:`declared_strides`.
    ``shape`` is this call's shape when the type's is symbolic (a bucketed pattern's,
    :meth:`fact.buckets.BucketedBinding.out_shape`); strides that are not numbers then give
    way to a contiguous tensor."""
    shape = t["shape"] if shape is None else shape
    return torch.empty_strided(shape, declared_strides(t, family, shape),
                               dtype=DTYPE_BY_NAME[t["dtype"]], device=device)


def as_declared(out: torch.Tensor, t: dict, family: Family,
                shape: Sequence[Any] | None = None) -> torch.Tensor:
    """``out`` with the strides the custom op's fake kernel declares (:func:`new_output`):
    the kernel's own output has them; a fallback's ATen result may not (a permuted view),
    and a compiler that planned for the declared layout (Inductor reads the fake kernel's
    strides) must get it, so such a result is copied into it."""
    shape = list(out.shape) if shape is None else shape
    want = declared_strides(t, family, shape)
    if list(out.stride()) == want or out.numel() <= 1:
        return out
    fixed = torch.empty_strided(out.shape, want, dtype=out.dtype, device=out.device)
    fixed.copy_(out)
    return fixed


def unaliased(result: Any, inputs: Sequence[torch.Tensor], multi: bool) -> Any:
    """ATen nodes' ``result`` (a tensor, or with ``multi`` a list of them) as a custom op may
    return it: an output that shares storage with an input or an earlier output is cloned."""
    outs = list(result) if multi else [result]
    seen = {t.untyped_storage().data_ptr() for t in inputs}
    for i, o in enumerate(outs):
        if o.untyped_storage().data_ptr() in seen:
            outs[i] = o = o.clone()
        seen.add(o.untyped_storage().data_ptr())
    return outs if multi else outs[0]


# ------------------------------------------------------------ custom op registry

_lock = threading.Lock()
_bindings: dict[int, KernelBinding] = {}
_ops: dict[str, Callable] = {}


def register_binding(binding: KernelBinding) -> int:
    """Keep ``binding`` alive for the custom ops; returns its handle."""
    with _lock:
        handle = len(_bindings)
        _bindings[handle] = binding
    return handle


def fact_op(pattern_id: str) -> Callable:
    """The custom op ``fact::<pattern_id>``, defined on first use.

    Its schema is ``(Tensor[] inputs, int handle) -> Tensor``; its fake implementation
    returns an empty tensor of the pattern output's shape and dtype (:func:`new_output`).
    """
    if not pattern_id.isidentifier():
        raise ValueError(f"pattern id {pattern_id!r} is not a valid op name")
    with _lock:
        if pattern_id in _ops:
            return _ops[pattern_id]

        @torch.library.custom_op(f"fact::{pattern_id}", mutates_args=())
        def _op(inputs: list[torch.Tensor], handle: int) -> torch.Tensor:
            b = _bindings[handle]
            return as_declared(b(inputs), b.out_type, b.family, b.out_shape(inputs))

        @_op.register_fake
        def _fake(inputs: list[torch.Tensor], handle: int) -> torch.Tensor:
            b = _bindings[handle]
            return new_output(b.out_type, b.family, inputs[0].device, b.out_shape(inputs))

        _ops[pattern_id] = _op
        return _op


_multi_ops: dict[str, Callable] = {}


def fact_multi_op(pattern_id: str) -> Callable:
    """The custom op ``fact::<pattern_id>_multi`` of a pattern with extra outputs, defined on
    first use: ``(Tensor[] inputs, int handle) -> Tensor[]`` (the output, then the extra
    outputs in :attr:`KernelBinding.extra_outputs` order); its fake implementation returns
    empty tensors of their graph shapes and dtypes."""
    if not pattern_id.isidentifier():
        raise ValueError(f"pattern id {pattern_id!r} is not a valid op name")
    with _lock:
        if pattern_id in _multi_ops:
            return _multi_ops[pattern_id]

        @torch.library.custom_op(f"fact::{pattern_id}_multi", mutates_args=())
        def _op(inputs: list[torch.Tensor], handle: int) -> list[torch.Tensor]:
            return [o if o.is_contiguous() else o.contiguous() for o in _bindings[handle](inputs)]

        @_op.register_fake
        def _fake(inputs: list[torch.Tensor], handle: int) -> list[torch.Tensor]:
            b = _bindings[handle]
            types = [b.out_type, *b.extra_types.values()]
            return [inputs[0].new_empty(t["shape"], dtype=DTYPE_BY_NAME[t["dtype"]]) for t in types]

        _multi_ops[pattern_id] = _op
        return _op
