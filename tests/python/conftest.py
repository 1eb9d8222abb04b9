"""Shared helpers for the CPU-only Python tests."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))


@pytest.fixture
def repo_root() -> str:
    """The repository root."""
    return ROOT


@pytest.fixture
def examples_dir() -> str:
    """The folder of example problems."""
    return os.path.join(ROOT, "examples")


@pytest.fixture
def fake_factc(tmp_path, monkeypatch) -> str:
    """FACT_FACTC pointed at the stand-in engine tests/python/fake_factc.py, without a GPU
    (a test sets FAKE_FACTC_GPU to have one); returns the script's path."""
    script = tmp_path / "factc"
    here = os.path.dirname(os.path.abspath(__file__))
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {here!r})\n"
                      f"import fake_factc\nsys.exit(fake_factc.main(sys.argv[1:]))\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("FACT_FACTC", str(script))
    monkeypatch.delenv("FAKE_FACTC_GPU", raising=False)
    return str(script)


@pytest.fixture
def build_c_library(tmp_path, repo_root: str):
    """A function build(header, source, name, libs=()) that compiles the C file `source`
    with cc against the kernel ABI header src/families/<header> (e.g. "gemm/abi.h") into the shared library
    tmp_path/<name>, linking `libs` last, and returns its path; it skips the test without a
    C compiler; a header that is not there fails the test (it is part of the tree, so a
    moved header must not turn the test into a skip)."""
    def build(header: str, source: str, name: str, libs: tuple[str, ...] = ()) -> str:
        header_path = os.path.join(repo_root, "src", "families", header)
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            pytest.skip("needs a C compiler")
        if not os.path.isfile(header_path):
            pytest.fail(f"no kernel ABI header src/families/{header}")
        lib = tmp_path / name
        subprocess.run([cc, "-shared", "-fPIC", "-O1", "-I", os.path.join(repo_root, "src", "families"), source,
                        "-o", str(lib), *libs], check=True)
        return str(lib)
    return build


@pytest.fixture
def attention_library(build_c_library) -> str:
    """tests/python/fake_attention.c built as a shared library; returns its path."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_attention.c")
    return build_c_library("attention/abi.h", src, "libfake_attention.so", ("-lm",))
