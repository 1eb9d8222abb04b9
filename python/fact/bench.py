"""Timing (docs/00-design.md §6, docs/07-bench-format.md) and the float64 reference.

On CUDA each trial is: a write of twice the L2 size (so no operand is cached), then CUDA
events around the call. Variants of one problem alternate within each trial round, in one
process, on the same inputs. Without CUDA the same protocol runs with
``time.perf_counter`` and no L2 flush (useful for tests only; not a benchmark).
"""

from __future__ import annotations

import contextlib
import dataclasses
import statistics
import time
from typing import Any, Callable, ContextManager, Mapping, Sequence

import torch

from fact.precision import Check, check_output

__all__ = ["Timing", "time_variants", "time_fn", "l2_flush_bytes", "float64_reference",
           "Float64ReferenceError", "rel_errors", "to_float64"]

MIN_TRIALS = 20


@dataclasses.dataclass
class Timing:
    """Times of one variant in milliseconds: ``median_ms``, ``min_ms``, ``max_ms``, all trials."""

    median_ms: float
    min_ms: float
    max_ms: float
    trials_ms: list[float]

    @classmethod
    def of(cls, trials_ms: Sequence[float]) -> "Timing":
        t = list(trials_ms)
        return cls(statistics.median(t), min(t), max(t), t)

    def spread(self) -> list[float]:
        """``[min_ms, max_ms]``, as docs/07-bench-format.md's ``*_spread_ms`` fields."""
        return [self.min_ms, self.max_ms]


def l2_flush_bytes(device: torch.device | int | None = None) -> int:
    """Twice the GPU's L2 size in bytes (``L2_cache_size`` of the device properties)."""
    props = torch.cuda.get_device_properties(device if device is not None
                                             else torch.cuda.current_device())
    l2 = int(getattr(props, "L2_cache_size", 0) or 0) or 64 * 2**20
    return 2 * l2


def time_variants(variants: Mapping[str, Callable[[], Any]], trials: int = MIN_TRIALS,
                  warmup: int = 3,
                  contexts: Mapping[str, Callable[[], ContextManager[Any]]] | None = None,
                  device: torch.device | str | None = None) -> dict[str, Timing]:
    """Time each variant ``trials`` times, alternating variants within each round.

    Args:
        variants: name -> a callable taking no arguments (it calls the module on fixed
            inputs). Its result is discarded.
        trials: timed calls per variant (at least 20 are run whatever is asked).
        warmup: untimed calls per variant first (compilation, autotuning, caches).
        contexts: name -> a factory of a context manager entered around that variant's
            calls, outside the timed region's kernels (e.g. a precision policy).
        device: the CUDA device; CPU timing when CUDA is unavailable.

    Returns:
        name -> :class:`Timing` in milliseconds.
    """
    trials = max(trials, MIN_TRIALS)
    contexts = contexts or {}
    use_cuda = torch.cuda.is_available() and (device is None or
                                              torch.device(device).type == "cuda")

    def ctx(name: str) -> ContextManager[Any]:
        return contexts[name]() if name in contexts else contextlib.nullcontext()

    with torch.no_grad():
        for name, fn in variants.items():
            with ctx(name):
                for _ in range(warmup):
                    fn()
        if not use_cuda:
            return _time_cpu(variants, trials, ctx)
        dev = torch.device(device) if device is not None else torch.device("cuda")
        flush = torch.empty(l2_flush_bytes(dev), dtype=torch.uint8, device=dev)
        events = {name: [(torch.cuda.Event(enable_timing=True),
                          torch.cuda.Event(enable_timing=True)) for _ in range(trials)]
                  for name in variants}
        torch.cuda.synchronize(dev)
        for i in range(trials):
            for name, fn in variants.items():
                with ctx(name):
                    flush.fill_(i & 0xFF)
                    start, end = events[name][i]
                    start.record()
                    fn()
                    end.record()
        torch.cuda.synchronize(dev)
    return {name: Timing.of([s.elapsed_time(e) for s, e in ev]) for name, ev in events.items()}


def _time_cpu(variants: Mapping[str, Callable[[], Any]], trials: int,
              ctx: Callable[[str], ContextManager[Any]]) -> dict[str, Timing]:
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(trials):
        for name, fn in variants.items():
            with ctx(name):
                t0 = time.perf_counter()
                fn()
                times[name].append((time.perf_counter() - t0) * 1e3)
    return {name: Timing.of(t) for name, t in times.items()}


def time_fn(fn: Callable[[], Any], trials: int = MIN_TRIALS, warmup: int = 3) -> Timing:
    """Time one callable (see :func:`time_variants`)."""
    return time_variants({"fn": fn}, trials=trials, warmup=warmup)["fn"]


# ---------------------------------------------------------------- float64 reference

def to_float64(x: Any, device: torch.device | str | None = None) -> Any:
    """A copy of ``x`` with every floating tensor as float64 (others copied as they are),
    moved to ``device`` when given. Tuples, lists and dicts are followed."""
    if isinstance(x, torch.Tensor):
        y = x.detach().to(device) if device is not None else x.detach()
        return y.to(torch.float64) if y.is_floating_point() else y.clone()
    if isinstance(x, (list, tuple)):
        return type(x)(to_float64(v, device) for v in x)
    if isinstance(x, dict):
        return {k: to_float64(v, device) for k, v in x.items()}
    return x


class Float64ReferenceError(RuntimeError):
    """The model could not be run in float64, so FACT has nothing to verify against."""


def float64_reference(model: torch.nn.Module, inputs: Sequence[Any],
                      device: torch.device | str | None = None) -> Any:
    """The model's output computed in float64.

    The model itself runs (``torch.func.functional_call``) with float64 copies of its
    floating parameters and buffers (others as they are) and of ``inputs``, on ``device``
    (default: CUDA when available, else CPU). Running the model the user gave, rather than
    a converted deep copy, also reaches submodules its forward calls through a closure
    (KernelBench level 3 #44 keeps ``lambda x: m.c_proj(m.act(m.c_fc(x)))``), which a copy
    would leave in float32. The model's own tensors are untouched.

    Returns:
        The output structure of ``model``, with float64 tensors.
    Raises:
        Float64ReferenceError: the forward fails in float64 (e.g. it builds float32 tensors
        itself and mixes them with its parameters), naming the error.
    """
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    # One float64 copy per tensor, under each of its names: a tied weight (GPT-2's lm_head
    # and wte, T5's shared embedding) stays one tensor, so no name is left in float32 and
    # functional_call is not handed two values for tied keys.
    copies: dict[int, Any] = {}
    state = {name: copies.setdefault(id(t), to_float64(t, device))
             for name, t in (*model.named_parameters(remove_duplicate=False),
                             *model.named_buffers(remove_duplicate=False))}
    try:
        with torch.no_grad():
            return torch.func.functional_call(model, state, tuple(to_float64(list(inputs), device)),
                                              tie_weights=False)
    except Exception as exc:  # any failure of the user's forward in float64
        raise Float64ReferenceError(
            f"the float64 reference could not be computed: the model's forward failed with float64 "
            f"parameters, buffers and inputs ({type(exc).__name__}: {exc})") from exc
    finally:
        del state


def rel_errors(out: Any, ref: Any, policy: str = "fp32") -> Check:
    """Max relative error (``max |out − ref| / max |ref|``) and relative Frobenius error
    (``‖out − ref‖ / ‖ref‖``) of ``out`` vs ``ref``, with the policy's pass/fail."""
    return check_output(out, ref, policy)
