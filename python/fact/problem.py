"""Load a problem file in the KernelBench layout.

A problem file defines ``Model`` (an ``nn.Module`` class), ``get_inputs()`` (the forward
inputs, fresh random tensors) and ``get_init_inputs()`` (``Model``'s constructor arguments).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
import types
from typing import Any

import torch

__all__ = ["ProblemError", "Problem", "load_problem"]


class ProblemError(RuntimeError):
    """The problem file is missing, does not import, or lacks a required name."""


@dataclasses.dataclass
class Problem:
    """A loaded problem: its short name, module, model and inputs.

    Attributes:
        name: short name (the file's stem unless given).
        path: the problem file.
        module: the imported file.
        model: ``Model(*get_init_inputs())``, on CPU as the file builds it.
        inputs: ``get_inputs()``, as a list.
    """

    name: str
    path: str
    module: types.ModuleType
    model: torch.nn.Module
    inputs: list[Any]

    def to(self, device: str | torch.device) -> "Problem":
        """Move the model and every tensor input to ``device`` (in place); returns self."""
        self.model = self.model.to(device)
        self.inputs = [x.to(device) if isinstance(x, torch.Tensor) else x
                       for x in self.inputs]
        return self

    def cast(self, dtype: torch.dtype) -> "Problem":
        """Convert the model and every floating tensor input to ``dtype`` (in place, as
        ``model.to(torch.bfloat16)`` does); integer inputs keep theirs. Returns self."""
        self.model = self.model.to(dtype)
        self.inputs = [x.to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point()
                       else x for x in self.inputs]
        return self


#: ``--model-dtype`` names -> dtypes a problem's model can be converted to.
MODEL_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

_REQUIRED = ("Model", "get_inputs", "get_init_inputs")


def _import_file(path: str) -> types.ModuleType:
    mod_name = "fact_problem_" + "".join(c if c.isalnum() else "_"
                                         for c in os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise ProblemError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(mod_name, None)
        raise ProblemError(f"{path}: importing failed: {type(exc).__name__}: {exc}") from exc
    return module


def load_problem(path: str | os.PathLike, name: str | None = None) -> Problem:
    """Import ``path`` and build its model and inputs.

    Args:
        path: a ``.py`` file defining ``Model``, ``get_inputs`` and ``get_init_inputs``.
        name: the problem's short name; defaults to the file's stem.

    Raises:
        ProblemError: the file does not exist or import, lacks one of the three names, or
            building the model or inputs fails.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ProblemError(f"{path}: no such problem file")
    module = _import_file(path)
    missing = [n for n in _REQUIRED if not hasattr(module, n)]
    if missing:
        raise ProblemError(f"{path}: missing {', '.join(missing)} (a problem file defines "
                           f"Model, get_inputs() and get_init_inputs())")
    try:
        model = module.Model(*module.get_init_inputs())
    except Exception as exc:
        raise ProblemError(f"{path}: building Model failed: {type(exc).__name__}: {exc}") \
            from exc
    if not isinstance(model, torch.nn.Module):
        raise ProblemError(f"{path}: Model(...) is a {type(model).__name__}, not an nn.Module")
    try:
        inputs = list(module.get_inputs())
    except Exception as exc:
        raise ProblemError(f"{path}: get_inputs() failed: {type(exc).__name__}: {exc}") \
            from exc
    stem = os.path.splitext(os.path.basename(path))[0]
    return Problem(name=name or stem, path=path, module=module, model=model, inputs=inputs)
