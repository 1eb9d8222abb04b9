"""Replaying a FACT module as one CUDA graph (docs/05-composition.md, "CUDA graph replay").

A FACT graph has static shapes, and its kernels take their sizes from the plan, so a whole
forward pass can be captured once (``torch.cuda.CUDAGraph``) and replayed: one launch of
the captured work instead of a Python call per kernel and ATen op. :class:`GraphReplay` does
this for a module's ``run(inputs)``:

- it is on by default when :func:`replay_blocker` finds nothing against it (no symbolic
  size, no op that waits for the device or makes a tensor off the GPU); ``mode=False``
  turns it off, ``mode=True`` asks for it even then (a capture that fails still falls
  back);
- a call replays only on CUDA tensors, outside ``torch.compile`` tracing and outside another
  capture, and without autograd (grad mode off, or nothing requiring grad); other calls run
  plainly;
- the first call of a kind of inputs (shapes, strides, dtypes, devices, the matmul precision,
  the bindings' state: :func:`fact.kernels.state_version`) runs plainly, as warm-up (lazy
  initialization, cuBLAS workspaces, the bindings' per-signature checks); the second captures
  (the inputs copied into static tensors) and every later one copies the inputs in and
  replays. One capture is kept: inputs of another kind replace it;
- outputs are copies of the captured outputs unless ``share_outputs`` (then the next call
  overwrites them);
- a capture that raises is logged once with its reason, and the module runs plainly from
  then on (:attr:`GraphReplay.failed`);
- kernels that fell back to ATen during the capture are counted again at each replay
  (the captured graph runs their ATen nodes), so fallback counts stay true.

Moving the module (``.to``) drops the capture (:meth:`GraphReplay.reset`); so does a change
of a binding's state. A tensor replaced by another (``p.data = t``) needs a reset by hand.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import torch

from fact.kernels import KernelBinding, state_version
from fact.log import logger, warn_once
from fact.module_gen import decode_arg

__all__ = ["GraphReplay", "replay_blocker", "HOST_SYNC_OPS", "CudaCapture"]

#: ATen ops that wait for the device (their result is read on the host, or sizes its
#: output), so a graph containing one cannot be captured.
HOST_SYNC_OPS = frozenset({
    "aten._local_scalar_dense.default", "aten.item.default", "aten.nonzero.default",
    "aten.nonzero_numpy.default", "aten.argwhere.default", "aten.masked_select.default",
    "aten.unique_dim.default", "aten._unique.default", "aten._unique2.default",
    "aten.unique_consecutive.default", "aten.repeat_interleave.Tensor",
    "aten.repeat_interleave.self_Tensor", "aten.bincount.default", "aten.equal.default",
    "aten.is_nonzero.default", "aten.allclose.default", "aten.histc.default",
})


def _devices(arg: Any) -> list[torch.device]:
    if isinstance(arg, torch.device):
        return [arg]
    if isinstance(arg, list):
        return [d for a in arg for d in _devices(a)]
    return []


def replay_blocker(graph: Mapping) -> str:
    """Why ``graph`` (docs/02) cannot be replayed as one CUDA graph; "" when it can.

    Checked: every input size is a number (no symbolic size), no node is one of
    :data:`HOST_SYNC_OPS`, an ``index`` with a boolean index (its output size depends on the
    data), or an op that makes a tensor on a device other than CUDA.
    """
    types = {v["name"]: v.get("type") for v in graph["inputs"] + graph["params"]}
    for v in graph["inputs"]:
        shape = (v.get("type") or {}).get("shape") or []
        if any(not isinstance(s, int) for s in shape):
            return f"input {v['name']} has a symbolic size ({shape})"
    for n in graph["nodes"]:
        for o in n["outputs"]:
            types[o["name"]] = o.get("type")
    for n in graph["nodes"]:
        op = n["op"]
        if op in HOST_SYNC_OPS:
            return f"node {n['name']} ({op}) waits for the device"
        args = [decode_arg(a) for a in n["args"]] + [decode_arg(v) for v in n["kwargs"].values()]
        if op.startswith("aten.index.Tensor") and any(
                (types.get(getattr(i, "name", "")) or {}).get("dtype") == "bool"
                for i in (args[1] if len(args) > 1 and isinstance(args[1], list) else [])):
            return f"node {n['name']} ({op}) indexes with a boolean mask (a data-dependent size)"
        off = [d for d in _devices(args) if d.type != "cuda"]
        if off:
            return f"node {n['name']} ({op}) makes a tensor on {off[0]}"
    return ""


class CudaCapture:
    """One captured ``torch.cuda.CUDAGraph`` of ``fn`` on static inputs."""

    def __init__(self, fn: Callable[[list[torch.Tensor]], Any], inputs: list[torch.Tensor]) -> None:
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.outputs = fn(inputs)

    def replay(self) -> None:
        self.graph.replay()


def _flat(out: Any) -> tuple[list[torch.Tensor], type | None]:
    if isinstance(out, (tuple, list)):
        return list(out), type(out)
    return [out], None


class GraphReplay:
    """CUDA-graph replay of ``run`` (see the module docstring).

    Args:
        run: the plain forward, ``run(inputs) -> output or tuple``.
        bindings: the module's kernel bindings (their fallbacks during a capture are counted
            again at each replay).
        blocker: :func:`replay_blocker` of the module's graph.
        mode: ``None`` (on unless ``blocker``), ``True`` (on even so), ``False`` (off).
        requires_grad: whether any of the module's tensors requires grad.
        device_types: device types whose tensors replay (tests add ``"cpu"``).
        capture: makes a capture object of ``(fn, static_inputs)`` with ``outputs`` and
            ``replay()`` (:class:`CudaCapture`; tests pass a stand-in).
        share_outputs: return the captured output tensors themselves (overwritten by the
            next call) instead of copies.

    Attributes:
        failed: why the capture failed ("" while it has not); the module then runs plainly.
        replays: how many calls replayed.
    """

    def __init__(self, run: Callable[[Sequence[torch.Tensor]], Any],
                 bindings: Mapping[str, KernelBinding], blocker: str, mode: bool | None = None,
                 requires_grad: bool = False, device_types: tuple[str, ...] = ("cuda",),
                 capture: Callable[..., Any] = CudaCapture, share_outputs: bool = False) -> None:
        self.run, self.bindings, self.blocker = run, bindings, blocker
        self.mode, self.requires_grad = mode, requires_grad
        self.device_types, self.capture, self.share_outputs = device_types, capture, share_outputs
        self.failed = ""
        self.replays = 0
        self._warm: tuple | None = None  # the key of the last plain (warm-up) call
        self._captured: tuple | None = None  # (key, capture, static inputs, structure, counts)
        if mode is True and blocker:
            logger.info("CUDA graph replay asked for although %s", blocker)

    @property
    def enabled(self) -> bool:
        """Whether calls may replay (mode and blocker allow it, and no capture failed)."""
        return self.mode is not False and (self.mode is True or not self.blocker) and not self.failed

    def reset(self) -> None:
        """Drop the capture (the next call warms up again)."""
        self._warm = self._captured = None

    def _key(self, inputs: Sequence[torch.Tensor]) -> tuple | None:
        """The kind of a call, or None when it must run plainly."""
        if torch.compiler.is_compiling() or not inputs:
            return None
        for t in inputs:
            if not isinstance(t, torch.Tensor) or t.device.type not in self.device_types:
                return None
        if torch.is_grad_enabled() and (self.requires_grad or any(t.requires_grad for t in inputs)):
            return None
        if inputs[0].device.type == "cuda" and torch.cuda.is_current_stream_capturing():
            return None
        return (tuple((t.shape, t.stride(), t.dtype, t.device) for t in inputs),
                torch.get_float32_matmul_precision(), state_version())

    def __call__(self, inputs: Sequence[torch.Tensor]) -> Any:
        key = self._key(inputs) if self.enabled else None
        if key is None:
            return self.run(inputs)
        cap = self._captured
        if cap is None or cap[0] != key:
            if self._warm != key:  # first call of its kind: warm-up
                self._warm, self._captured = key, None
                return self.run(inputs)
            cap = self._capture(inputs, key)
            if cap is None:
                return self.run(inputs)
        _, graph, static, structure, counts = cap
        for s, x in zip(static, inputs):
            s.copy_(x)
        graph.replay()
        self.replays += 1
        for binding, reason, n in counts:
            binding.fallbacks += n
            binding.fallback_reasons[reason] = binding.fallback_reasons.get(reason, 0) + n
            binding.last_fallback_reason = reason
        if self.share_outputs:
            return graph.outputs
        outs = [o.clone() for o in _flat(graph.outputs)[0]]
        return outs[0] if structure is None else structure(outs)

    def _capture(self, inputs: Sequence[torch.Tensor], key: tuple) -> tuple | None:
        """Capture ``run`` on static copies of ``inputs``; None (logged, replay off) when the
        capture raises."""
        static = [torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
                  for x in inputs]
        for s, x in zip(static, inputs):
            s.copy_(x)
        before = {pid: (b.fallbacks, dict(b.fallback_reasons), b.last_fallback_reason)
                  for pid, b in self.bindings.items()}
        try:
            graph = self.capture(self.run, static)
        except Exception as exc:  # any failure of the capture leaves the plain calls
            self.failed = f"{type(exc).__name__}: {exc}"
            self._captured = None
            warn_once(f"cuda-graph:{id(self)}", f"fact: CUDA graph capture failed "
                      f"({self.failed}); the module runs its calls one by one")
            return None
        # A capture computes nothing: the fallbacks it went through count at each replay.
        counts = []
        for pid, b in self.bindings.items():
            n0, reasons0, last0 = before[pid]
            for reason, n in b.fallback_reasons.items():
                if n - reasons0.get(reason, 0):
                    counts.append((b, reason, n - reasons0.get(reason, 0)))
            b.fallbacks, b.fallback_reasons, b.last_fallback_reason = n0, reasons0, last0
        structure = _flat(graph.outputs)[1]
        self._captured = (key, graph, static, structure, counts)
        return self._captured
