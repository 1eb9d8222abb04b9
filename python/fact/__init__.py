"""FACT: compile a PyTorch module's hot subgraphs into verified, tuned CUTLASS kernels.

Public entry points:

- :func:`export` — the module as a FACT graph dict (docs/02-graph-format.md).
- :func:`optimize` — export, discover, realize, compose, verify and benchmark; returns the
  optimized ``nn.Module`` (its ``.report`` holds the benchmark row).
- :func:`load` — an artifact directory (docs/05-composition.md) as an ``nn.Module``.

``fact.export`` and ``fact.optimize`` name the functions: the submodules of the same names
are imported here first, so that the functions, defined after them, stay the package
attributes (use ``from fact.export import ...`` / ``from fact.optimize import ...`` for the
submodules' other names).
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import torch

from fact import export as _export_module  # (see the module docstring)
from fact import optimize as _optimize_module
from fact import runtime as _runtime_module

__all__ = ["export", "optimize", "load", "__version__"]
__version__ = "0.1.0"


def export(model: torch.nn.Module, example_inputs: Sequence[Any]) -> dict:
    """The FACT graph of ``model`` on ``example_inputs`` (see :func:`fact.export.export`)."""
    return _export_module.export(model, example_inputs)


def optimize(model: torch.nn.Module, example_inputs: Sequence[Any],
             precision: str | None = None, **opts: Any) -> torch.nn.Module:
    """Optimize ``model`` for ``example_inputs`` (see :func:`fact.optimize.optimize`)."""
    return _optimize_module.optimize(model, example_inputs, precision=precision, **opts)


def load(artifact_dir: str | os.PathLike, model: torch.nn.Module | None = None
         ) -> torch.nn.Module:
    """Load an artifact as an ``nn.Module`` (see :func:`fact.runtime.load`)."""
    return _runtime_module.load(artifact_dir, model)
