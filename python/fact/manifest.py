"""The shape of manifest.json checked before anything is bound (docs/05-composition.md,
"Manifest JSON (version 1)"; docs/10-bad-inputs.md).

``factc compose`` writes the manifest; a user may edit, truncate or hand-write one. Every
member the runtime reads is checked for its type and range here, so a malformed manifest is
an :class:`ArtifactError` naming the member (``manifest.json: patterns[0].operands: expected
an object of value names, found a list``) and never a ``KeyError`` or ``TypeError`` from deep
inside the loader. Members a family adds (an attention pattern's ``mask_dtype``, a GEMM's
``merged``) are the family's to check when it binds the pattern; unknown members are kept.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Mapping

__all__ = ["check_manifest", "entries", "aten_reasons", "IMPLS", "NARROW_DTYPES"]

# What runs a pattern: its FACT kernel, the vendor path, or its ATen nodes (set by the
# loader when the kernels stay off).
IMPLS = ("cutlass", "vendor", "aten")
#: The dtypes a narrowed value may be stored in (the manifest's ``narrowed[].dtype``).
NARROW_DTYPES = ("bfloat16", "float16")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")  # a pattern id or an FX value name
_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a C symbol prefix
_MAX_BYTES = 1 << 48  # a workspace larger than any GPU's memory is a corrupt value


def entries(manifest: Mapping | None) -> list[dict]:
    """Every entry that says what runs some nodes: each pattern of ``manifest`` and, after
    a vendor pattern whose fused tail is an entry of its own (``"tail": {...}``), that
    tail; the manifest's own dicts, in order."""
    out = []
    for p in (manifest or {}).get("patterns", []):
        out.append(p)
        if isinstance(p.get("tail"), dict):
            out.append(p["tail"])
    return out


def aten_reasons(manifest: Mapping | None) -> dict[str, str]:
    """Entry id -> its ``aten_reason`` ("" when it has none), for the :func:`entries` marked
    ``impl: "aten"``: kernels that run their ATen nodes (handed back, or no GPU here)."""
    return {str(e["id"]): str(e.get("aten_reason") or "") for e in entries(manifest)
            if e.get("impl") == "aten"}


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(v), type(v).__name__)


class _Checker:
    """Raises ArtifactError ``"<path>: <where>: expected <what>, found <kind>"``."""

    def __init__(self, path: str, error: Callable[[str], Exception]):
        self.path, self.error = path, error

    def fail(self, where: str, what: str, found: Any) -> None:
        raise self.error(f"{self.path}: {where}: expected {what}, found {_kind(found)}"
                         + (f" {found!r}" if isinstance(found, (int, float, str))
                            and not isinstance(found, bool) else ""))

    def _value(self, doc: Mapping, key: str, where: str, optional: bool, nullable: bool) -> tuple[bool, Any]:
        """(True, the member) when there is a value to check; (False, None) when the member
        is absent and ``optional``, or null and ``nullable``."""
        if key not in doc:
            if not optional:
                raise self.error(f"{self.path}: {where}: missing \"{key}\"")
            return False, None
        v = doc[key]
        return (False, None) if v is None and nullable else (True, v)

    def string(self, doc: Mapping, key: str, where: str, pattern: re.Pattern | None = None,
               optional: bool = False, nullable: bool = False) -> None:
        present, v = self._value(doc, key, where, optional, nullable)
        if present and (not isinstance(v, str) or (pattern is not None and not pattern.fullmatch(v))):
            self.fail(f"{where}.{key}", "a name" if pattern is not None else "a string", v)

    def number(self, doc: Mapping, key: str, where: str, integer: bool = False,
               lo: float = -math.inf, hi: float = math.inf, optional: bool = True,
               nullable: bool = False) -> None:
        present, v = self._value(doc, key, where, optional, nullable)
        if not present:
            return
        ok_type = isinstance(v, int) if integer else isinstance(v, (int, float))
        if isinstance(v, bool) or not ok_type or not (lo <= v <= hi):
            what = "an integer" if integer else "a finite number"
            self.fail(f"{where}.{key}", f"{what} in [{lo:g}, {hi:g}]", v)

    def obj(self, doc: Mapping, key: str, where: str, optional: bool = False) -> None:
        present, v = self._value(doc, key, where, optional, nullable=False)
        if present and not isinstance(v, dict):
            self.fail(f"{where}.{key}", "an object", v)

    def entry(self, p: Any, where: str, top: bool) -> None:
        """One manifest pattern (``top``), or a bucket or tail entry of one."""
        if not isinstance(p, dict):
            self.fail(where, "an object", p)
        if top:
            self.string(p, "id", where, _NAME)
            # Absent in manifests written before they existed (fact.families.find_family).
            self.string(p, "rule", where, optional=True)
            self.string(p, "abi", where, optional=True)
            self.string(p, "output", where, _NAME)
            nodes = p.get("nodes")
            if not isinstance(nodes, list) or not nodes or not all(isinstance(n, str) for n in nodes):
                self.fail(f"{where}.nodes", "a non-empty list of node names", nodes)
            ops = p.get("operands")
            if not isinstance(ops, dict) or not all(
                    isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in ops.items()):
                self.fail(f"{where}.operands", "an object of value names", ops)
        self.obj(p, "problem", where, optional=not top)
        impl = p.get("impl", "aten")  # an entry without one runs its ATen nodes
        if impl not in IMPLS:
            self.fail(f"{where}.impl", " or ".join(f'"{i}"' for i in IMPLS), impl)
        # A bucketed entry's kernels are its buckets'; its own kernel and symbol are null.
        own = impl == "cutlass" and "buckets" not in p
        self.string(p, "kernel", where, optional=not own, nullable=not own)
        self.string(p, "symbol", where, _SYMBOL, optional=not own, nullable=not own)
        self.number(p, "workspace_bytes", where, integer=True, lo=0, hi=_MAX_BYTES)
        for key in ("time_ms", "vendor_ms"):
            self.number(p, key, where, lo=0, hi=1e12)
        self.number(p, "max_rel_err", where, lo=0, hi=math.inf, nullable=True)
        if "verified" in p and not isinstance(p["verified"], bool):
            self.fail(f"{where}.verified", "a boolean", p["verified"])
        self.obj(p, "runtime", where, optional=True)
        # "module": realize could only bound the ATen path, the loaded module times the two
        # (fact.aten_check; compose copies the field from realized.json).
        if "aten_check" in p and p["aten_check"] != "module":
            self.fail(f"{where}.aten_check", '"module"', p["aten_check"])
        if "tail" in p:
            self.entry(p["tail"], f"{where}.tail", top=True)
        if top and "buckets" in p:
            self.string(p, "size_symbol", where, _SYMBOL)
            buckets = p["buckets"]
            if not isinstance(buckets, list) or not buckets:
                self.fail(f"{where}.buckets", "a non-empty list", buckets)
            for i, b in enumerate(buckets):
                self.entry(b, f"{where}.buckets[{i}]", top=False)
                self.number(b, "lo", f"{where}.buckets[{i}]", integer=True, lo=0, hi=2 ** 62, optional=False)
                self.number(b, "hi", f"{where}.buckets[{i}]", integer=True, lo=b["lo"], hi=2 ** 62,
                            optional=False)


def check_manifest(doc: Mapping, path: str, error: Callable[[str], Exception]) -> None:
    """Checks a manifest read from ``path`` (its format and version already checked).

    Args:
        doc: the parsed manifest.json.
        path: named in every message.
        error: the exception type to raise (fact.runtime.ArtifactError).

    Raises:
        ``error``: a member the runtime reads is missing, of another type, out of range
            (a workspace over 2^48 bytes, a negative time, an unknown ``impl``), two
            patterns share an id, or ``narrowed`` is not a list of ``{"value": name,
            "dtype": "bfloat16" | "float16"}`` naming each value once; the message names the
            member. (Whether a narrowed value fits the graph is the runtime's to check:
            :func:`fact.narrowing.narrowed_values`.)
    """
    c = _Checker(path, error)
    c.string(doc, "policy", "manifest")
    c.string(doc, "graph", "manifest", optional=True)
    c.string(doc, "library", "manifest", optional=True, nullable=True)
    patterns = doc.get("patterns")
    if not isinstance(patterns, list):
        c.fail("patterns", "a list", patterns)
    seen: set[str] = set()
    for i, p in enumerate(patterns):
        c.entry(p, f"patterns[{i}]", top=True)
        if p["id"] in seen:
            raise error(f"{path}: patterns[{i}].id: \"{p['id']}\" is the id of an earlier pattern")
        seen.add(p["id"])
    dropped = doc.get("dropped", [])
    if not isinstance(dropped, list) or not all(
            isinstance(d, dict) and isinstance(d.get("node"), str) and isinstance(d.get("same_as"), str)
            for d in dropped):
        c.fail("dropped", "a list of {\"node\": name, \"same_as\": name}", dropped)
    _check_narrowed(c, doc.get("narrowed", []), error, path)


def _check_narrowed(c: _Checker, narrowed: Any, error: Callable[[str], Exception], path: str) -> None:
    """The manifest's ``"narrowed"``: absent, empty, or a list of ``{"value", "dtype"}``."""
    if not isinstance(narrowed, list):
        c.fail("narrowed", 'a list of {"value": name, "dtype": name}', narrowed)
    seen: set[str] = set()
    for i, e in enumerate(narrowed):
        where = f"narrowed[{i}]"
        if not isinstance(e, dict):
            c.fail(where, 'an object {"value": name, "dtype": name}', e)
        c.string(e, "value", where, _NAME)
        if e.get("dtype") not in NARROW_DTYPES:
            c.fail(f"{where}.dtype", " or ".join(f'"{d}"' for d in NARROW_DTYPES), e.get("dtype"))
        if e["value"] in seen:
            raise error(f"{path}: {where}.value: \"{e['value']}\" is narrowed twice")
        seen.add(e["value"])
