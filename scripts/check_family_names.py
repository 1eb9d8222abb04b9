#!/usr/bin/env python3
"""Fails when a kernel family's or rule's name is compared as a string outside its family.

The drivers (planner, realize, compose, report, ``factc rules``, the Python runtime) loop over
the family lists and ask each family; only a family's own code and the two lists may name it
(docs/00-design.md §2, docs/08-adding-a-family.md). This check scans ``src/`` and
``python/fact/`` for a family or rule name written as a string literal in a comparison
(``==``, ``!=``, ``in (...)``, ``startswith``, ``find``, ``compare``, ``case``) or bound to a
constant, and names each offending line; also each C++ file that includes a header of a
family's folder (``#include "families/<name>/..."``) from outside that folder, since the
drivers reach a family through ``families/family.h`` only.

    scripts/check_family_names.py [ROOT]     # exit 0: clean; 1: offending lines printed

Names: the folders of ``src/families/`` (the family names) and every rule name a family
declares (``.name = "..."`` in its rule files). Allowed places: ``src/families/<name>/`` and
``python/fact/families/<name>.py`` for that family's own name and its rules' names, and the
two family lists (``src/families/family_list.cpp``, ``python/fact/families/__init__.py``).
Comments and docstrings are not code and are skipped.
"""

from __future__ import annotations

import ast
import pathlib
import re
import sys

CPP_SUFFIXES = {".cpp", ".h", ".cu", ".cuh", ".hpp"}
LISTS = {"src/families/family_list.cpp", "python/fact/families/__init__.py"}
RULE_NAME = re.compile(r'\.name\s*=\s*"([A-Za-z0-9_.-]+)"')
FAMILY_INCLUDE = re.compile(r'^\s*#\s*include\s*"families/([A-Za-z0-9_]+)/')


def family_names(root: pathlib.Path) -> dict[str, set[str]]:
    """Family name -> the names it owns (itself and its rules' names)."""
    fams: dict[str, set[str]] = {}
    base = root / "src" / "families"
    if not base.is_dir():
        return fams
    for d in sorted(p for p in base.iterdir() if p.is_dir()):
        owned = {d.name}
        for f in d.rglob("*"):
            if f.suffix in CPP_SUFFIXES:
                owned.update(RULE_NAME.findall(f.read_text(errors="replace")))
        fams[d.name] = owned
    return fams


def strip_cpp_comments(text: str) -> str:
    """Blanks // and /* */ comments, keeping line numbers and string literals."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _literals(node: ast.AST) -> list[str]:
    """The string constants ``node`` is, or holds as a tuple, list or set."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for e in node.elts for s in _literals(e)]
    return []


def python_compared_names(source: str, names: set[str]) -> list[tuple[int, str]]:
    """``(line, name)`` for each of ``names`` written as a string in a comparison, a
    subscript, a ``case`` or a ``startswith``/``endswith`` call of Python ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            held = [s for e in [node.left, *node.comparators] for s in _literals(e)]
        elif isinstance(node, ast.Subscript):
            held = _literals(node.slice)
        elif isinstance(node, ast.MatchValue):
            held = _literals(node.value)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("startswith", "endswith")):
            held = [s for a in node.args for s in _literals(a)]
        else:
            continue
        found += [(node.lineno, s) for s in held if s in names]
    return sorted(found)


def offending_patterns(name: str) -> list[re.Pattern[str]]:
    lit = r"""["']""" + re.escape(name) + r"""["']"""
    return [
        re.compile(r"(==|!=)\s*" + lit),
        re.compile(lit + r"\s*(==|!=)"),
        re.compile(r"\bin\s*[\(\[\{][^\)\]\}]*" + lit),
        re.compile(r"\b(startswith|endswith|find|compare|count|starts_with|ends_with)\(\s*" + lit),
        re.compile(r"\bcase\s+" + lit),
        re.compile(r"\w\s*(?<![=!<>])=(?!=)\s*" + lit + r"\s*[;,)]?\s*$"),
    ]


def allowed(rel: str, name: str, fams: dict[str, set[str]]) -> bool:
    if rel in LISTS:
        return True
    for fam, owned in fams.items():
        if name in owned and (rel.startswith(f"src/families/{fam}/") or rel == f"python/fact/families/{fam}.py"):
            return True
    return False


def check(root: pathlib.Path) -> list[str]:
    """Every offending line as 'path:line: text (names NAME)'."""
    fams = family_names(root)
    names = sorted(set().union(*fams.values())) if fams else []
    if not names:
        return [f"{root}/src/families: no kernel family folders found"]
    pats = {n: offending_patterns(n) for n in names}
    found = []
    files = [p for p in (root / "src").rglob("*") if p.suffix in CPP_SUFFIXES]
    files += list((root / "python" / "fact").rglob("*.py"))
    for f in sorted(files):
        rel = f.relative_to(root).as_posix()
        raw = f.read_text(errors="replace")
        outside = {n for n in names if not allowed(rel, n, fams)}
        if not outside:
            continue
        if f.suffix == ".py":
            lines = raw.split("\n")
            for lineno, n in python_compared_names(raw, outside):
                found.append(f"{rel}:{lineno}: {lines[lineno - 1].strip()}  (compares the name '{n}')")
            continue
        for lineno, line in enumerate(strip_cpp_comments(raw).split("\n"), 1):
            inc = FAMILY_INCLUDE.match(line)
            if inc and inc.group(1) in fams and not allowed(rel, inc.group(1), fams):
                found.append(f"{rel}:{lineno}: {line.strip()}  (includes family '{inc.group(1)}')")
            for n in sorted(outside):
                if any(p.search(line) for p in pats[n]):
                    found.append(f"{rel}:{lineno}: {line.strip()}  (compares the name '{n}')")
    return found


def main(argv: list[str]) -> int:
    root = pathlib.Path(argv[1] if len(argv) > 1 else pathlib.Path(__file__).resolve().parents[1])
    found = check(root)
    for line in found:
        print(line)
    if found:
        print(f"check_family_names: {len(found)} place(s) name a family or rule outside its folder; "
              "ask the family through src/families/family.h (or python/fact/families) instead", file=sys.stderr)
        return 1
    print("check_family_names: no family or rule named outside its folder")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
