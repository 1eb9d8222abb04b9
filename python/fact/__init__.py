"""FACT: compile a PyTorch module's hot subgraphs into verified, tuned CUTLASS kernels.

Public entry points:

- :func:`export` — the module as a FACT graph dict (docs/02-graph-format.md).
- :func:`optimize` — export, discover, realize, compose, verify and benchmark; returns the
  optimized ``nn.Module`` (its ``.report`` holds the benchmark row).
- :func:`load` — an artifact directory (docs/05-composition.md) as an ``nn.Module``.

``fact.export`` names the function; the submodule of the same name is imported here first
so that the function, defined after it, stays the package attribute (use
``from fact.export import ...`` for the submodule's other names). The other submodules are
imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # pragma: no cover
    import os

    import torch

from fact import export as _export_module  # noqa: E402  (see the module docstring)

__all__ = ["export", "optimize", "load", "__version__"]
__version__ = "0.1.0"


def export(model: "torch.nn.Module", example_inputs: Sequence[Any]) -> dict:
    """The FACT graph of ``model`` on ``example_inputs`` (see :func:`fact.export.export`)."""
    return _export_module.export(model, example_inputs)


def optimize(model: "torch.nn.Module", example_inputs: Sequence[Any],
             precision: str | None = None, **opts: Any) -> "torch.nn.Module":
    """Optimize ``model`` for ``example_inputs`` (see :func:`fact.optimize.optimize`)."""
    from fact.optimize import optimize as _optimize
    return _optimize(model, example_inputs, precision=precision, **opts)


def load(artifact_dir: "str | os.PathLike", model: "torch.nn.Module | None" = None
         ) -> "torch.nn.Module":
    """Load an artifact as an ``nn.Module`` (see :func:`fact.runtime.load`)."""
    from fact.runtime import load as _load
    return _load(artifact_dir, model)
