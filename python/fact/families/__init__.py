"""The kernel families the runtime knows, in one explicit list (docs/05-composition.md,
"Kernel families").

:data:`FAMILIES` is the Python twin of ``src/families/family_list.cpp``: each line is one
``python/fact/families/<name>.py``'s ``FAMILY`` (a :class:`Family`). Nothing registers
itself by being imported. :func:`family_of` gives a manifest entry's family; the runtime
calls, checks, reports and times kernels only through it, and no code outside the family
modules and this list tests a family or rule name.

Adding a family: write ``<name>.py`` (its ctypes structure, a :class:`KernelCall`, a
:class:`Family` subclass and ``FAMILY``), add one line below, and mirror its tests in
``tests/python/families/test_<name>.py``.
"""

from __future__ import annotations

from typing import Mapping

from fact.families import attention, gemm, norm, rope
from fact.families.family import Family, KernelCall

__all__ = ["FAMILIES", "Family", "KernelCall", "UnknownFamily", "family_of", "find_family",
           "LEGACY_DEFAULT"]

#: Every kernel family, one line each.
FAMILIES: tuple[Family, ...] = (
    gemm.FAMILY,
    attention.FAMILY,
    norm.FAMILY,
    rope.FAMILY,
)

#: The family of a manifest entry that names none by ``abi``, problem ``kind`` or ``rule``:
#: manifests written before attention existed held GEMMs only.
LEGACY_DEFAULT: Family = gemm.FAMILY


class UnknownFamily(ValueError):
    """A manifest entry names a kernel family (``"abi"``) this package does not have."""


def _index(key: str, values: Mapping[Family, tuple[str, ...]]) -> dict[str, Family]:
    """value -> family, rejecting a value two families claim (a mistake in the list)."""
    out: dict[str, Family] = {}
    for family, names in values.items():
        for name in names:
            if name in out:
                raise RuntimeError(f"kernel families {out[name].name} and {family.name} both "
                                   f"claim the {key} {name!r}")
            out[name] = family
    return out


_BY_NAME = _index("name", {f: (f.name,) for f in FAMILIES})
_BY_KIND = _index("problem kind", {f: (f.problem_kind,) for f in FAMILIES})
_BY_RULE = _index("rule", {f: f.rules for f in FAMILIES})


def find_family(pattern: Mapping) -> Family | None:
    """The family of a manifest entry, or ``None`` when its ``"abi"`` names no known one.

    The entry's ``"abi"`` decides; an entry without one (written before the key existed) is
    of the family of its problem's ``kind``, else of its ``rule``, else
    :data:`LEGACY_DEFAULT`.
    """
    name = pattern.get("abi")
    if name is not None:
        return _BY_NAME.get(name)
    kind = (pattern.get("problem") or {}).get("kind")
    if kind in _BY_KIND:
        return _BY_KIND[kind]
    return _BY_RULE.get(pattern.get("rule"), LEGACY_DEFAULT)


def family_of(pattern: Mapping) -> Family:
    """:func:`find_family`, for an entry that must be bound.

    Raises:
        UnknownFamily: ``"abi"`` names no family of :data:`FAMILIES` (the message names it
            and the known ones).
    """
    family = find_family(pattern)
    if family is None:
        raise UnknownFamily(f"unknown kernel family {pattern.get('abi')!r} (abi of the "
                            f"manifest entry; known: {', '.join(_BY_NAME)})")
    return family
