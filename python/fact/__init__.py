"""FACT: compile a PyTorch module's hot subgraphs into verified, tuned CUTLASS kernels.

Public entry points:

- :func:`export` — the module as a FACT graph dict (docs/02-graph-format.md).
- :func:`optimize` — export, discover, realize, compose, verify and benchmark; returns the
  optimized ``nn.Module`` (its ``.report`` holds the benchmark row; ``.save(dir)`` writes
  it as an artifact).
- :func:`load` — an artifact directory (docs/05-composition.md) as an ``nn.Module``,
  checked against this machine's GPU (docs/09-backend.md, "Artifacts").
- ``torch.compile(model, backend="fact", options={...})`` — the Dynamo backend
  (:mod:`fact.backend`, registered through the ``torch_dynamo_backends`` entry point).
- :class:`GpuRequired` — raised by :func:`optimize` on a machine without a GPU, after the
  steps that need none.

The library logs what it does on the ``fact`` logger (:mod:`fact.log`) and prints nothing.

``fact.export`` and ``fact.optimize`` name the functions: the submodules of the same names
are imported here first, so that the functions, defined after them, stay the package
attributes (use ``from fact.export import ...`` / ``from fact.optimize import ...`` for the
submodules' other names).
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import torch

from fact import artifact as _artifact_module
from fact import export as _export_module  # (see the module docstring)
from fact import optimize as _optimize_module
from fact.gpu import GpuRequired

__all__ = ["export", "optimize", "load", "GpuRequired", "__version__"]
__version__ = "0.1.0"


def export(model: torch.nn.Module, example_inputs: Sequence[Any]) -> dict:
    """The FACT graph of ``model`` on ``example_inputs`` (see :func:`fact.export.export`)."""
    return _export_module.export(model, example_inputs)


def optimize(model: torch.nn.Module, example_inputs: Sequence[Any],
             precision: str | None = None, **opts: Any) -> torch.nn.Module:
    """Optimize ``model`` for ``example_inputs`` (see :func:`fact.optimize.optimize`).

    Raises:
        GpuRequired: no GPU here; the message says what was done and what needs one.
    """
    return _optimize_module.optimize(model, example_inputs, precision=precision, **opts)


def load(artifact_dir: str | os.PathLike, model: torch.nn.Module | None = None,
         rebuild: bool = True) -> torch.nn.Module:
    """Load an artifact as an ``nn.Module`` without re-tuning; on another GPU or CUDA
    runtime, rebuild it from its plan or run ATen, with a message
    (see :func:`fact.artifact.load_artifact`)."""
    return _artifact_module.load_artifact(artifact_dir, model, rebuild=rebuild)
