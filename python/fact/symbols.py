"""Size expressions of graphs with symbols (docs/02-graph-format.md, "Symbols").

A size, stride or size argument of a version-2 graph is an int or a *monomial* in the
graph's symbols, written as text: the integer coefficient first (left out when 1), then
each symbol as often as its power, in name order, joined by ``*`` (``"512*B"``,
``"B*B*T"``). This module parses, formats and evaluates them, and finds, for each symbol,
an input dimension its value is read from at run time. The engine's twin is
``src/graph/symbolic.h``.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

__all__ = ["SymbolError", "format_size", "parse_size", "size_value", "specialize",
           "symbol_sources", "read_symbols"]


class SymbolError(ValueError):
    """A size expression that is not a monomial, or a symbol without a value or source."""


def format_size(coeff: int, powers: Mapping[str, int]) -> str | int:
    """The canonical text of ``coeff * prod(symbol**power)``; the int when no symbol."""
    if not any(powers.values()):
        return int(coeff)
    factors = [s for s in sorted(powers) for _ in range(powers[s])]
    return "*".join(([str(coeff)] if coeff != 1 else []) + factors)


def parse_size(text: str, symbols: Any = None) -> tuple[int, dict[str, int]] | None:
    """``"512*B"`` -> ``(512, {"B": 1})``; None when ``text`` is not a monomial, or (with
    ``symbols``, a container of names) names a symbol not among them (so ``"float32"`` or
    ``"row"`` in a problem are not sizes)."""
    if not isinstance(text, str) or not text:
        return None
    coeff, powers = 1, {}
    for f in text.split("*"):
        f = f.strip()
        if f.isdigit() and int(f) >= 1:
            coeff *= int(f)
        elif f.isidentifier() and (symbols is None or f in symbols):
            powers[f] = powers.get(f, 0) + 1
        else:
            return None
    return (coeff, powers) if powers else None


def size_value(size: Any, values: Mapping[str, Any]) -> Any:
    """The value of an int or monomial text at ``values`` (symbol -> int or SymInt).

    Raises:
        SymbolError: not a monomial, or a symbol without a value.
    """
    if isinstance(size, int):
        return size
    parsed = parse_size(size)
    if parsed is None:
        raise SymbolError(f"size {size!r} is not a product of integers and symbols")
    coeff, powers = parsed
    out: Any = coeff
    for s, p in powers.items():
        if s not in values:
            raise SymbolError(f"size {size!r}: no value for symbol {s}")
        for _ in range(p):
            out = out * values[s]
    return out


def specialize(obj: Any, values: Mapping[str, Any]) -> Any:
    """``obj`` (a problem, a type, a manifest entry: dicts, lists, scalars) with every
    string that is a monomial over the symbols of ``values`` replaced by its value, and
    every ``{"sym": expr}`` by its value."""
    if isinstance(obj, dict):
        if len(obj) == 1 and "sym" in obj:
            return size_value(obj["sym"], values)
        return {k: specialize(v, values) for k, v in obj.items()}
    if isinstance(obj, list):
        return [specialize(v, values) for v in obj]
    if isinstance(obj, str) and parse_size(obj, values) is not None:
        return size_value(obj, values)
    return obj


def symbol_sources(names: Sequence[str], types: Sequence[dict | None],
                   symbols: Any) -> dict[str, tuple[int, int, int]]:
    """Where each symbol's value is read from: symbol -> ``(input index, dim, coefficient)``
    for the first input (of ``names``/``types``) with a dim whose size is ``coefficient *
    symbol`` (the symbol alone, power 1). Symbols no dim gives are left out."""
    out: dict[str, tuple[int, int, int]] = {}
    for i, t in enumerate(types):
        for d, size in enumerate((t or {}).get("shape", [])):
            parsed = parse_size(size, symbols) if isinstance(size, str) else None
            if parsed and len(parsed[1]) == 1:
                (s, p), = parsed[1].items()
                if p == 1 and s not in out:
                    out[s] = (i, d, parsed[0])
    return out


def read_symbols(sources: Mapping[str, tuple[int, int, int]], inputs: Sequence[Any]) -> dict[str, int]:
    """Symbol -> its value in this call: ``inputs[i].shape[dim] // coefficient``."""
    return {s: inputs[i].shape[d] // c for s, (i, d, c) in sources.items()}
