"""Run-time choice of a symbolic pattern's bucket (docs/05-composition.md, "Buckets").

A manifest entry whose problem has symbolic sizes (``"m": "4*B"``) lists ``"buckets"``:
sorted ranges ``[lo, hi]`` of its ``"size_symbol"``, each with the configuration tuned at
``hi`` (``impl``, ``kernel``, ``symbol``, ``runtime``, ``workspace_bytes``).
:class:`BucketedBinding` is the binding the generated module's kernel call
(:class:`fact.kernels.FactKernel`, made by :mod:`fact.runtime`) calls in place of one
:class:`fact.kernels.KernelBinding`: per call it reads the symbol from an input's shape,
finds the bucket with one :func:`bisect.bisect_left` over the upper bounds (no loop over
buckets), and calls that bucket's binding for this size, made once per size and cached.

A size above every bucket runs the largest bucket's kernel (its ``can_implement`` decides;
discovery proved the pattern for the symbol's whole range), else the ATen ops; either way
the ``fact`` logger says so once per pattern.
"""

from __future__ import annotations

import bisect
import logging
from typing import Any, Callable, Mapping, Sequence

from fact.kernels import unaliased
from fact.symbols import read_symbols, specialize, symbol_sources

__all__ = ["BucketedBinding", "select_bucket"]

_log = logging.getLogger("fact")


def select_bucket(upper: Sequence[int], size: int) -> tuple[int, bool]:
    """The bucket serving ``size``: ``(index, outside)`` for sorted upper bounds ``upper``
    (bucket i serves ``(upper[i-1], upper[i]]``, the first everything up to ``upper[0]``).
    A size above every bound gives the last index and ``outside`` True."""
    i = bisect.bisect_left(upper, size)
    return (i, False) if i < len(upper) else (len(upper) - 1, True)


class BucketedBinding:
    """The kernel call of a manifest entry with ``"buckets"``, for any kernel family.

    Args:
        pattern: the manifest entry (symbolic ``problem``, ``size_symbol``, ``buckets``).
        input_names: the custom op's inputs (as :class:`fact.kernels.KernelBinding` takes).
        types: value name -> graph ``type`` (symbolic sizes as text) of the graph.
        make_binding: ``(static entry, {value: static type}) -> KernelBinding`` for one size:
            the runtime's own binding factory (library, family, fallback).
        fallback: runs the pattern's ATen nodes on the inputs.
        family: the entry's :class:`fact.families.Family`.

    Raises:
        ValueError: no input dim gives the symbol's value, or the buckets are not sorted.
    """

    def __init__(self, pattern: Mapping, input_names: Sequence[str],
                 types: Mapping[str, dict | None],
                 make_binding: Callable[[dict, dict], Any],
                 fallback: Callable[[Sequence[Any]], Any], family: Any = None) -> None:
        self.pattern = dict(pattern)
        self.family = family
        self.extra_outputs: dict[str, str] = dict(pattern.get("extra_outputs") or {})
        self.kernel_name = pattern["id"]
        self.out_type = types[pattern["output"]]
        self.symbol = pattern["size_symbol"]
        self.buckets = list(pattern["buckets"])
        self.upper = [int(b["hi"]) for b in self.buckets]
        if self.upper != sorted(set(self.upper)):
            raise ValueError(f"buckets of {self.symbol} are not increasing: {self.upper}")
        self.input_names = list(input_names)
        self.types = dict(types)
        sources = symbol_sources(self.input_names, [types.get(n) for n in self.input_names],
                                 {self.symbol})
        if self.symbol not in sources:
            raise ValueError(f"no input of the pattern has a dim of size {self.symbol}")
        self._sources = {self.symbol: sources[self.symbol]}
        self._make = make_binding
        self.fallback = fallback
        self._by_size: dict[int, tuple[int, Any]] = {}  # size -> (bucket index, binding)
        self.outside_said = False
        self.calls_per_bucket = [0] * len(self.buckets)
        self.disabled_reason = ""
        # fact.aten_check: the next call keeps its inputs (it times the kernel against the
        # ATen nodes at that call's size; a slower kernel disables every bucket).
        self.record_inputs = False
        self.recorded_inputs: list[Any] | None = None
        #: Where the kernels' operands live, as :attr:`fact.kernels.KernelBinding.device_type`
        #: (set before the first call; each size's binding takes it).
        self.device_type = "cuda"

    # ----------------------------------------------------------- per size
    def size_of(self, inputs: Sequence[Any]) -> Any:
        """The symbol's value in this call (from the input dim that has it)."""
        return read_symbols(self._sources, inputs)[self.symbol]

    def binding_for(self, size: int) -> tuple[int, Any]:
        """``(bucket index, binding)`` for ``size``: cached, else one bisect and a binding
        of the bucket's configuration at this size (None when the bucket runs ATen)."""
        hit = self._by_size.get(size)
        if hit is not None:
            return hit
        index, outside = select_bucket(self.upper, size)
        bucket = self.buckets[index]
        if outside and not self.outside_said:
            self.outside_said = True
            _log.warning("fact: pattern %s: %s=%d is above every tuned bucket (largest %d..%d): "
                         "running that bucket's %s when its kernel accepts the size, else the "
                         "ATen ops", self.pattern["id"], self.symbol, size, bucket["lo"],
                         bucket["hi"], bucket.get("kernel") or "ATen ops")
        binding = None
        if bucket.get("impl") == "cutlass":
            values = {self.symbol: size}
            entry = {k: v for k, v in self.pattern.items() if k != "buckets"}
            entry.update({k: v for k, v in bucket.items() if k not in ("lo", "hi", "problem")})
            entry["problem"] = specialize(self.pattern["problem"], values)
            types = {n: specialize(t, values) for n, t in self.types.items() if t is not None}
            binding = self._make(entry, types)
            binding.device_type = self.device_type
        self._by_size[size] = (index, binding)
        return index, binding

    def __call__(self, inputs: Sequence[Any]) -> Any:
        """The bucket's kernel on ``inputs`` (its binding falls back to ATen with the reason
        when the kernel refuses them), or the ATen ops for a bucket the vendor path won."""
        if self.record_inputs:
            self.recorded_inputs, self.record_inputs = list(inputs), False
        index, binding = self.binding_for(int(self.size_of(inputs)))
        self.calls_per_bucket[index] += 1
        if self.disabled_reason or binding is None:
            return unaliased(self.fallback(inputs), inputs, bool(self.extra_outputs))
        return binding(inputs)

    def mismatch(self, inputs: Sequence[Any]) -> str:
        """Why ``inputs`` would not run a kernel ("" when they would): the bucket's binding's
        reason, or that the bucket runs the ATen ops."""
        if self.disabled_reason:
            return self.disabled_reason
        index, binding = self.binding_for(int(self.size_of(inputs)))
        if binding is None:
            b = self.buckets[index]
            return f"the {b['lo']}..{b['hi']} bucket runs the ATen ops (the vendor path won)"
        return binding.mismatch(inputs)

    def out_shape(self, inputs: Sequence[Any]) -> list:
        """The output's shape for ``inputs`` (ints, or SymInts while tracing)."""
        values = read_symbols(self._sources, inputs)
        return specialize(self.types[self.pattern["output"]]["shape"], values)

    # ---------------------------------------------------- what the module reports
    @property
    def fallbacks(self) -> int:
        return sum(b.fallbacks for _, b in self._by_size.values() if b is not None)

    @property
    def fallback_reasons(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for _, b in self._by_size.values():
            for reason, n in (b.fallback_reasons if b is not None else {}).items():
                out[reason] = out.get(reason, 0) + n
        return out
