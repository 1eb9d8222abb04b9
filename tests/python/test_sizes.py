"""python/fact/ stays in small pieces (STYLE.md 9): no file over 600 lines, no function over
150."""

from __future__ import annotations

import ast

from sources import package_sources

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 150


def test_no_file_or_function_is_too_long() -> None:
    too_long = []
    for rel, text in package_sources():
        lines = text.count("\n")
        if lines > MAX_FILE_LINES:
            too_long.append(f"{rel}: {lines} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    too_long.append(f"{rel}:{node.lineno}: {node.name} has {n} lines")
    assert too_long == []
