"""The family list (python/fact/families/__init__.py): every family module is on it, a
manifest entry finds its family (an unknown one is named), each family's ctypes structure,
return codes and constants match the C header that declares them. (That no code outside the
family modules compares a family or rule name as a string is scripts/check_family_names.py's
check, tests/scripts/.)"""

from __future__ import annotations

import ctypes
import importlib
import os
import re
import sys

import pytest
import torch
import torch.nn as nn

import fact.families as families
from fact.export import export
from fact.families import FAMILIES, UnknownFamily, family_of, find_family
from fact.families.family import CUDA_ERROR_BASE
from fact.runtime import ArtifactError, FactModule
from sources import PACKAGE, ROOT

FAMILY_DIR = os.path.join(PACKAGE, "families")
# The modules of python/fact/families/ that are not families.
NOT_FAMILIES = {"__init__", "family"}


def test_every_family_module_is_listed_once() -> None:
    """A module is a family's (``<name>.py``) or a part of one (``<name>_<part>.py``, e.g.
    gemm_merged.py), never a module of no family."""
    files = [f[:-3] for f in os.listdir(FAMILY_DIR) if f.endswith(".py") and f[:-3] not in NOT_FAMILIES]
    names = {f.name for f in FAMILIES}
    parts = [m for m in files if m not in names]
    assert all(m.split("_")[0] in names for m in parts), parts
    modules = sorted(m for m in files if m in names)
    assert modules == sorted(f.name for f in FAMILIES)
    for name in modules:
        assert importlib.import_module(f"fact.families.{name}").FAMILY in FAMILIES
    assert len({f.name for f in FAMILIES}) == len(FAMILIES)


def test_a_name_two_families_claim_is_rejected() -> None:
    gemm, attention = FAMILIES[:2]
    with pytest.raises(RuntimeError, match="both claim the rule 'x'"):
        families._index("rule", {gemm: ("x",), attention: ("y", "x")})


def test_entries_find_their_family_by_abi_then_kind_then_rule() -> None:
    for f in FAMILIES:
        assert family_of({"abi": f.name}) is f
        assert family_of({"problem": {"kind": f.problem_kind}}) is f
        for rule in f.rules:
            assert family_of({"rule": rule}) is f
        # The abi decides over the rest.
        other = next(g for g in FAMILIES if g is not f)
        assert family_of({"abi": f.name, "rule": other.rules[0],
                          "problem": {"kind": other.problem_kind}}) is f
    # Entries that name no family were written when GEMM was the only one.
    assert family_of({"problem": {}}) is families.LEGACY_DEFAULT
    assert family_of({"rule": "no_such_rule", "problem": {"kind": "no_such_kind"}}) \
        is families.LEGACY_DEFAULT


def test_an_unknown_family_is_named() -> None:
    assert find_family({"abi": "softmax"}) is None
    known = ", ".join(f.name for f in FAMILIES)
    with pytest.raises(UnknownFamily, match=rf"unknown kernel family 'softmax' .*known: {known}"):
        family_of({"abi": "softmax", "rule": FAMILIES[0].rules[0]})


class _Mm(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.mm(a, b)


class _NoLibrary:
    """Stands in for the kernel library: the family is looked up before any kernel is."""

    def kernel(self, symbol: str, args_type: type) -> None:
        raise AssertionError(f"kernel {symbol} looked up for an unknown family")


def test_a_manifest_entry_of_an_unknown_family_is_an_artifact_error() -> None:
    graph = export(_Mm(), [torch.randn(4, 8), torch.randn(8, 4)])
    (node,) = [n["name"] for n in graph["nodes"]]
    manifest = {"patterns": [{"id": "p0", "rule": "softmax", "abi": "softmax", "nodes": [node],
                              "output": node, "operands": {}, "problem": {"kind": "softmax"},
                              "impl": "cutlass", "kernel": "k", "symbol": "k"}]}
    with pytest.raises(ArtifactError, match="pattern p0: unknown kernel family 'softmax'"):
        FactModule(graph, {}, manifest, _NoLibrary())


def test_error_codes_of_cuda_mean_the_same_in_every_family() -> None:
    for f in FAMILIES:
        assert f.error_text(10000 + 700) == "CUDA error 700"
        assert f.error_text(1) == f.errors[1]


# ------------------------------------------------------------------ structures vs headers

_C_SCALARS = {"int64_t": ctypes.c_int64, "int32_t": ctypes.c_int32, "float": ctypes.c_float}


def _header_declaring(struct: str) -> str:
    """The text of the one header under src/ that declares ``typedef struct <struct>``."""
    found = []
    for dirpath, _, files in os.walk(os.path.join(ROOT, "src")):
        for f in files:
            if f.endswith(".h"):
                text = open(os.path.join(dirpath, f), encoding="utf-8").read()
                if re.search(rf"typedef\s+struct\s+{struct}\b", text):
                    found.append(text)
    assert len(found) == 1, f"{len(found)} headers under src/ declare struct {struct}"
    return found[0]


def header_fields(text: str, struct: str) -> list[tuple[str, type, int]]:
    """``(name, ctypes scalar type, element count)`` of each field of ``struct`` as the C
    header ``text`` declares them, in order (pointers as ``c_void_p``)."""
    m = re.search(rf"typedef\s+struct\s+{struct}\s*\{{(.*?)\}}\s*{struct}\s*;", text, re.S)
    assert m, f"no typedef struct {struct} {{...}} {struct};"
    body = re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S))
    fields = []
    for decl in filter(None, (" ".join(d.split()) for d in body.split(";"))):
        dm = re.fullmatch(r"((?:const )?\w+) ?(\*?) ?(.*)", decl)
        assert dm, decl
        base, star, declarators = dm.groups()
        for i, d in enumerate(declarators.split(",")):
            fm = re.fullmatch(r" ?(\*?) ?(\w+) ?(?:\[(\d+)\])? ?", d)
            assert fm, d
            pointer = fm.group(1) or (star if i == 0 else "")
            fields.append((fm.group(2), ctypes.c_void_p if pointer else _C_SCALARS[base],
                           int(fm.group(3) or 1)))
    return fields


def _c_layout(fields: list[tuple[str, type, int]]) -> tuple[dict[str, int], int]:
    """Field offsets and the size C gives ``fields`` (each scalar aligned to its size)."""
    offsets, offset, align = {}, 0, 1
    for name, scalar, count in fields:
        size = ctypes.sizeof(scalar)
        offset = -(-offset // size) * size
        offsets[name] = offset
        offset += size * count
        align = max(align, size)
    return offsets, -(-offset // align) * align


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_args_structure_matches_its_header(family) -> None:
    struct = family.args_type
    declared = header_fields(_header_declaring(struct.__name__), struct.__name__)
    mirrored = [(name, t._type_, t._length_) if issubclass(t, ctypes.Array) else (name, t, 1)
                for name, t in struct._fields_]
    assert mirrored == declared
    offsets, size = _c_layout(declared)
    assert {name: getattr(struct, name).offset for name, _, _ in declared} == offsets
    assert ctypes.sizeof(struct) == size


def _header_enums(text: str) -> dict[str, int]:
    """``FACT_*`` enumerators of a C header and their values."""
    code = re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))
    return {name: int(value) for name, value in re.findall(r"\b(FACT_\w+)\s*=\s*(\d+)", code)}


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_return_codes_and_constants_match_its_header(family) -> None:
    enums = _header_enums(_header_declaring(family.args_type.__name__))
    for code, meaning in family.errors.items():  # each meaning starts with its enumerator
        assert enums.get(meaning.split(":")[0]) == code, meaning
    module = sys.modules[type(family).__module__]
    for name, value in vars(module).items():
        if name.startswith("FACT_") and isinstance(value, int):
            assert enums.get(name) == value, name
    assert [v for n, v in enums.items() if n.endswith("_CUDA_BASE")] == [CUDA_ERROR_BASE]


def test_header_fields_reads_c_declarations() -> None:
    text = """typedef struct S {
      int64_t m, n; /* sizes */
      const void* a; int64_t lda;  // stride
      void *d, *e; float alpha;
      const void* epi[4]; int32_t flags;
    } S;"""
    p = ctypes.c_void_p
    assert header_fields(text, "S") == [
        ("m", ctypes.c_int64, 1), ("n", ctypes.c_int64, 1), ("a", p, 1),
        ("lda", ctypes.c_int64, 1), ("d", p, 1), ("e", p, 1), ("alpha", ctypes.c_float, 1),
        ("epi", p, 4), ("flags", ctypes.c_int32, 1)]
    assert _c_layout(header_fields(text, "S"))[1] == 96
