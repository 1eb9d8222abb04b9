"""Shared helpers for the CPU-only Python tests."""

from __future__ import annotations

import os
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
