"""Drawn weights for verification (docs/06-verification.md, "Drawn weights").

A model at initialization can hold parameters whose every element is one value: torchvision's
ViT zero-initializes its classifier head, so every output equals the head's bias (zero), for
any input. Then no input, drawn or the user's, gives a float64 reference that can tell a
right output from a wrong one (:func:`fact.optimize.uninformative_reason`), and a module that
is right could not be verified. :func:`drawn_weights` redraws exactly those parameters for the
duration of one check, in place (the model and the FACT module share the tensors, so both see
the draw, and a captured CUDA graph reads the new values), recomputes the FACT module's
load-time tensors that derive from them, and restores everything afterwards.
"""

from __future__ import annotations

import contextlib
import math
from typing import Iterator

import torch

__all__ = ["constant_parameters", "draw_parameters", "drawn_weights", "WEIGHT_SEED"]

#: Seed of the drawn weights (parameter ``i`` of those drawn uses ``WEIGHT_SEED + i``).
WEIGHT_SEED = 20261207


def constant_parameters(model: torch.nn.Module) -> dict[str, torch.nn.Parameter]:
    """Name -> parameter, for the floating parameters of ``model`` of more than one element
    whose elements are all equal (e.g. a zero-initialized classifier head), in
    ``named_parameters`` order (each tensor once)."""
    out: dict[str, torch.nn.Parameter] = {}
    seen: set[int] = set()
    for name, p in model.named_parameters():
        if id(p) in seen or not p.is_floating_point() or p.numel() <= 1:
            continue
        seen.add(id(p))
        flat = p.detach().reshape(-1)
        if bool((flat == flat[0]).all()):
            out[name] = p
    return out


def draw_parameters(params: dict[str, torch.nn.Parameter]) -> None:
    """Redraw ``params`` in place: a weight of fan-in ``k`` (its last dim) as
    ``randn / sqrt(k)`` (the scale of PyTorch's default Linear initialization,
    ``U(-1/sqrt(k), 1/sqrt(k))``, to within a constant), a vector as ``0.1 · randn``; a
    generator seeded :data:`WEIGHT_SEED` + its index, on the parameter's device."""
    for i, p in enumerate(params.values()):
        gen = torch.Generator(device=p.device).manual_seed(WEIGHT_SEED + i)
        scale = 1.0 / math.sqrt(p.shape[-1]) if p.dim() >= 2 else 0.1
        draw = torch.randn(p.shape, generator=gen, device=p.device, dtype=torch.float32) * scale
        _write(p, draw.to(p.dtype))


def _write(p: torch.Tensor, value: torch.Tensor) -> None:
    """``p.copy_(value)`` without autograd; inside inference mode for an inference tensor (a
    model built under ``torch.inference_mode()``), which can be written nowhere else."""
    with torch.inference_mode() if p.is_inference() else torch.no_grad():
        p.copy_(value)


@contextlib.contextmanager
def drawn_weights(model: torch.nn.Module, fact_module: torch.nn.Module | None = None
                  ) -> Iterator[list[str]]:
    """Redraw :func:`constant_parameters` of ``model`` in place (:func:`draw_parameters`)
    while the block runs; yields their names (empty: nothing drawn). ``fact_module``'s
    load-time tensors (:meth:`fact.runtime.FactModule.refresh_load_time`) are recomputed
    after the draw and after the restore.
    """
    params = constant_parameters(model)
    saved = {name: p.detach().clone() for name, p in params.items()}
    refresh = getattr(fact_module, "refresh_load_time", None)
    try:
        draw_parameters(params)
        if params and callable(refresh):
            refresh()
        yield list(params)
    finally:
        for name, p in params.items():
            _write(p, saved[name])
        if params and callable(refresh):
            refresh()
