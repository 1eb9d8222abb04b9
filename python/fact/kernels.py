"""Calling FACT kernels: the C ABI of docs/05-composition.md through ctypes, as custom ops.

Each kernel in ``libfact_kernels.so`` exports ``<symbol>_can_implement``,
``<symbol>_workspace_bytes``, ``<symbol>_run`` and ``<symbol>_name``. A pattern with
``impl: "cutlass"`` is called through the ``torch.library`` custom op ``fact::<pattern id>``
whose schema is ``(Tensor[] inputs, int handle) -> Tensor``: ``inputs`` are the pattern's
external tensor values (in :attr:`KernelBinding.input_names` order) and ``handle`` selects
the :class:`KernelBinding` (so two artifacts that both have a pattern ``p0`` coexist in one
process). A pattern whose kernel also computes the elementwise tail after the GEMM
(manifest ``"fused": true``) passes the tail's external inputs ``c0``.. in ``epi``.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Callable, Sequence

import torch

from fact.export import DTYPE_NAMES

__all__ = ["FactGemmArgs", "KernelLibrary", "KernelBinding", "register_binding",
           "fact_op", "epilogue_slots", "error_text", "DTYPE_BY_NAME", "MAX_EPILOGUE_INPUTS",
           "FACT_ERR_EPILOGUE_INPUT"]

DTYPE_BY_NAME: dict[str, torch.dtype] = {v: k for k, v in DTYPE_NAMES.items()}

#: External inputs a fused tail may read (``epi[4]`` of ``FactGemmArgs``).
MAX_EPILOGUE_INPUTS = 4
#: Return code of a fused kernel called with a NULL ``epi[i]`` it reads.
FACT_ERR_EPILOGUE_INPUT = 5


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


class KernelLibrary:
    """A loaded ``libfact_kernels.so``; :meth:`kernel` gives one kernel's three entry points.

    Raises:
        OSError: the library cannot be loaded (from ``ctypes.CDLL``).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._lib = ctypes.CDLL(path)

    def kernel(self, symbol: str) -> "KernelFunctions":
        """The entry points of kernel ``symbol``.

        Raises:
            RuntimeError: the library does not export one of them.
        """
        return KernelFunctions(self._lib, symbol, self.path)


class KernelFunctions:
    """``can_implement``, ``workspace_bytes``, ``run`` and ``name`` of one kernel symbol."""

    def __init__(self, lib: ctypes.CDLL, symbol: str, path: str) -> None:
        args_p = ctypes.POINTER(FactGemmArgs)
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


# What the FACT_ERR_* return codes of kernel_abi.h mean, for error messages.
_ERROR_TEXT = {
    1: "FACT_ERR_BIAS_MISMATCH: bias given to a kernel without bias, or missing",
    2: "FACT_ERR_BETA: this kernel adds the bias with beta == 1 only",
    3: "FACT_ERR_WORKSPACE: workspace smaller than _workspace_bytes",
    4: "FACT_ERR_SCHEDULER: splits/raster/swizzle out of range",
    FACT_ERR_EPILOGUE_INPUT: "FACT_ERR_EPILOGUE_INPUT: an input the fused tail reads is NULL",
}


def error_text(code: int) -> str:
    """A readable meaning of a kernel's nonzero return ``code`` ("" when unknown)."""
    if code in _ERROR_TEXT:
        return _ERROR_TEXT[code]
    if code >= 10000:
        return f"CUDA error {code - 10000}"
    if code >= 100:
        return f"cutlass::Status {code - 100}"
    return ""


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


class KernelBinding:
    """One cutlass pattern of a loaded artifact, ready to call.

    Attributes:
        pattern: the manifest's pattern entry (``id``, ``operands``, ``problem``, ...).
        input_names: external tensor values of the pattern, the custom op's ``inputs``.
        expected: value name -> graph ``type`` (dtype/shape/strides) the plan assumed.
        out_type: graph ``type`` of the pattern output (shape and dtype of D).
        fallback: runs the pattern's ATen nodes on ``inputs`` (same order) -> output.
        device_type: where the kernel's operands live (``"cuda"``; tests of the ABI use a
            host-memory library and ``"cpu"``).
        fallbacks: how many calls ran ``fallback`` instead of the kernel.
        last_fallback_reason: why the latest fallback happened.
        epilogue: the manifest's ``epilogue`` when the kernel computes the elementwise
            tail too (``"fused": true``), else ``None``.
    """

    def __init__(self, pattern: dict, functions: KernelFunctions | None,
                 input_names: Sequence[str], expected: dict[str, dict],
                 out_type: dict, fallback: Callable[[Sequence[torch.Tensor]], torch.Tensor]
                 ) -> None:
        self.pattern = pattern
        self.functions = functions
        self.input_names = list(input_names)
        self.expected = expected
        self.out_type = out_type
        self.fallback = fallback
        self.device_type = "cuda"
        self.fallbacks = 0
        self.last_fallback_reason = ""
        self.kernel_name = pattern.get("kernel", pattern["id"])
        self.epilogue = pattern.get("epilogue") if pattern.get("fused") else None
        self._epi_slots = (epilogue_slots(self.epilogue, self.input_names)
                           if self.epilogue else [])
        # The last arguments can_implement accepted, with their workspace size: both are
        # functions of the arguments alone, so a repeated call (same pointers under the
        # caching allocator) skips the two ABI calls.
        self._accepted: tuple[bytes, int] | None = None

    # ----------------------------------------------------------------- checks
    def mismatch(self, inputs: Sequence[torch.Tensor]) -> str:
        """Why ``inputs`` do not fit the kernel ("" when they do)."""
        if self.functions is None:
            return "no kernel library loaded"
        for name, t in zip(self.input_names, inputs):
            want = self.expected.get(name)
            if want is None:
                continue
            if t.device.type != self.device_type:
                return f"{name} is on {t.device}, the kernel runs on {self.device_type}"
            if DTYPE_NAMES.get(t.dtype) != want["dtype"]:
                return f"{name} has dtype {t.dtype}, the plan assumed {want['dtype']}"
            if list(t.shape) != want["shape"]:
                return f"{name} has shape {list(t.shape)}, the plan assumed {want['shape']}"
            if list(t.stride()) != want["strides"]:
                return (f"{name} has strides {list(t.stride())}, the plan assumed "
                        f"{want['strides']}")
            if t.data_ptr() % 16:
                return f"{name} is not 16-byte aligned"
        return ""

    def _operand(self, inputs: Sequence[torch.Tensor], role: str) -> torch.Tensor | None:
        name = self.pattern.get("operands", {}).get(role)
        if name is None:
            return None
        return inputs[self.input_names.index(name)]

    def gemm_args(self, inputs: Sequence[torch.Tensor], d: torch.Tensor) -> FactGemmArgs:
        """``FactGemmArgs`` for a call on ``inputs`` writing ``d`` (per the manifest problem).

        For a fused tail, ``epi[N]`` points at the tensor bound to ``cN``; an input of D's
        shape (``"mn"``) also gets its row stride (``epi_ld``) and, when the problem is
        batched (``l > 1``), its batch stride; vectors along N or M and one-element inputs
        leave both 0.
        """
        p = self.pattern["problem"]
        a, b, bias = (self._operand(inputs, r) for r in ("a", "b", "bias"))
        assert a is not None and b is not None
        beta_default = 1.0 if bias is not None else 0.0
        rt = self.pattern.get("runtime") or {}
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
        for i, index, kind in self._epi_slots:
            t = inputs[index]
            args.epi[i] = t.data_ptr()
            if kind == "mn":  # D's shape: rows epi_ld apart, batches epi_batch_stride apart
                args.epi_ld[i] = t.stride(-2) if t.dim() >= 2 else 0
                args.epi_batch_stride[i] = t.stride(-3) if batched and t.dim() >= 3 else 0
        return args

    # ------------------------------------------------------------------- call
    def __call__(self, inputs: Sequence[torch.Tensor]) -> torch.Tensor:
        """Run the kernel on ``inputs`` (or the ATen fallback, counted).

        Raises:
            RuntimeError: the kernel's ``run`` returned nonzero (names kernel and code).
        """
        reason = self.mismatch(inputs)
        if not reason:
            device = inputs[0].device
            d = torch.empty(self.out_type["shape"], dtype=DTYPE_BY_NAME[self.out_type["dtype"]],
                            device=device)
            args = self.gemm_args(inputs, d)
            fns = self.functions
            assert fns is not None
            key = bytes(args)
            if self._accepted is not None and self._accepted[0] == key:
                ws_bytes = self._accepted[1]
            elif fns.can_implement(ctypes.byref(args)) != 0:
                reason = "can_implement rejected the arguments"
            else:
                ws_bytes = max(int(fns.workspace_bytes(ctypes.byref(args))),
                               int(self.pattern.get("workspace_bytes", 0) or 0))
                self._accepted = (key, ws_bytes)
            if not reason:
                ws = (torch.empty(ws_bytes, dtype=torch.uint8, device=device)
                      if ws_bytes > 0 else None)
                stream = (torch.cuda.current_stream(device).cuda_stream
                          if device.type == "cuda" else 0)
                code = fns.run(ctypes.byref(args),
                               ws.data_ptr() if ws is not None else None,
                               ws_bytes, ctypes.c_void_p(stream))
                if code != 0:
                    meaning = error_text(code)
                    raise RuntimeError(f"FACT kernel {self.kernel_name} (pattern "
                                       f"{self.pattern['id']}) failed with code {code}"
                                       + (f" ({meaning})" if meaning else ""))
                return d
        self.fallbacks += 1
        self.last_fallback_reason = reason
        out = self.fallback(inputs)
        # A custom op's output may not alias its inputs.
        storage = out.untyped_storage().data_ptr()
        if any(t.untyped_storage().data_ptr() == storage for t in inputs):
            out = out.clone()
        return out


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
    returns an empty tensor of the pattern output's shape and dtype.
    """
    if not pattern_id.isidentifier():
        raise ValueError(f"pattern id {pattern_id!r} is not a valid op name")
    with _lock:
        if pattern_id in _ops:
            return _ops[pattern_id]

        @torch.library.custom_op(f"fact::{pattern_id}", mutates_args=())
        def _op(inputs: list[torch.Tensor], handle: int) -> torch.Tensor:
            return _bindings[handle](inputs)

        @_op.register_fake
        def _fake(inputs: list[torch.Tensor], handle: int) -> torch.Tensor:
            t = _bindings[handle].out_type
            return inputs[0].new_empty(t["shape"], dtype=DTYPE_BY_NAME[t["dtype"]])

        _ops[pattern_id] = _op
        return _op
