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
def attention_library(tmp_path, repo_root: str) -> str:
    """tests/python/fake_attention.c built as a shared library; returns its path."""
    header = os.path.join(repo_root, "src", "realize", "attention_abi.h")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or not os.path.isfile(header):
        pytest.skip("needs a C compiler and src/realize/attention_abi.h")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_attention.c")
    lib = tmp_path / "libfake_attention.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-I", os.path.dirname(header), src,
                    "-o", str(lib), "-lm"], check=True)
    return str(lib)
