"""The machine an artifact was built on, and whether this one can run its kernels.

``factc compose`` writes ``manifest.json`` (the policy, the kernels); the Python side adds
``environment.json`` beside it (:func:`write_environment`): what ``factc realize`` recorded
about the GPU and the toolkit the kernels were verified and tuned with (``realized.json``:
GPU name, compute capability, SM count, CUDA driver and runtime API versions, nvcc and
CUTLASS versions), what the Python side ran with (torch and its CUDA, FACT's version and
commit), the policy and the tuning budget::

    {"format": "fact.environment", "version": 1,
     "gpu": "NVIDIA H200", "cc": "9.0", "sm_count": 132, "driver": "13.0",
     "cuda_runtime": "13.0", "nvcc": "13.0.88", "cutlass": "4.2.0",
     "torch": "2.11.0+cu130", "torch_cuda": "13.0", "fact": "0.1.0",
     "fact_commit": "56d2f93", "policy": "tf32", "tune_budget": 2}

When an artifact loads, :func:`mismatches` compares it with :func:`current_environment`: a
kernel is only ever run on the GPU it was verified and tuned on (name and compute
capability, :data:`MUST_MATCH`), under a driver that supports the CUDA runtime it was built
with (the driver's CUDA API version at least the recorded ``cuda_runtime``). The other keys
are recorded for the report and for reproducing a run, not acted on.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping

import torch

__all__ = ["ENVIRONMENT_FILE", "MUST_MATCH", "current_environment", "recorded_environment",
           "write_environment", "read_environment", "mismatches", "describe"]

ENVIRONMENT_FILE = "environment.json"
FORMAT = "fact.environment"

#: Keys that must be equal for an artifact's kernels to run here: the GPU it was verified
#: and tuned on and its compute capability (the kernels' architecture).
MUST_MATCH = ("gpu", "cc")

# realized.json keys copied as they are.
_REALIZED_KEYS = ("gpu", "cc", "sm_count", "driver", "cuda_runtime", "nvcc", "cutlass")


def _major_minor(version: str | None) -> str | None:
    if not version:
        return None
    parts = str(version).split(".")
    return ".".join(parts[:2])


def _driver_version() -> str | None:
    """The CUDA driver's API version (``cuDriverGetVersion``: ``"13.0"``), or None when
    libcuda cannot be asked. Creates no CUDA context."""
    import ctypes
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        version = ctypes.c_int(0)
        if lib.cuDriverGetVersion(ctypes.byref(version)) != 0:
            return None
    except (OSError, AttributeError):
        return None
    return f"{version.value // 1000}.{version.value % 1000 // 10}"


def current_environment() -> dict[str, Any]:
    """This process's GPU and driver, in :func:`mismatches`' terms.

    ``gpu`` is ``None`` without a CUDA GPU (nothing else is asked then: no CUDA call is
    made); otherwise the name and compute capability of the current device and the
    driver's CUDA API version (``driver``).
    """
    from fact import __version__
    from fact.gpu import gpu_present
    env: dict[str, Any] = {"gpu": None, "cc": None, "driver": None,
                           "torch": torch.__version__, "fact": __version__}
    if gpu_present():
        major, minor = torch.cuda.get_device_capability()
        env.update(gpu=torch.cuda.get_device_name(), cc=f"{major}.{minor}",
                   driver=_driver_version())
    return env


def recorded_environment(realized: Mapping, policy: str, tune_budget: int | None = None
                         ) -> dict[str, Any]:
    """The ``environment.json`` document for an artifact realized as ``realized`` says
    (``realized.json``), built by this process (torch, FACT)."""
    from fact import __version__
    from fact.report import git_commit
    env: dict[str, Any] = {"format": FORMAT, "version": 1}
    for key in _REALIZED_KEYS:
        env[key] = realized.get(key)
    env["cuda_runtime"] = _major_minor(env.get("cuda_runtime"))
    env.update(torch=torch.__version__, torch_cuda=torch.version.cuda, fact=__version__,
               fact_commit=git_commit(), policy=policy or realized.get("policy"),
               tune_budget=tune_budget)
    return env


def write_environment(artifact_dir: str | os.PathLike, env: Mapping[str, Any]) -> str:
    """Write ``env`` as ``artifact_dir/environment.json``; returns the path."""
    path = os.path.join(os.fspath(artifact_dir), ENVIRONMENT_FILE)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(dict(env), f, indent=1)
        f.write("\n")
    return path


def read_environment(artifact_dir: str | os.PathLike) -> dict[str, Any] | None:
    """``artifact_dir/environment.json``, or ``None`` when it is missing or unreadable (an
    artifact written before the file existed, or by ``factc compose`` alone)."""
    path = os.path.join(os.fspath(artifact_dir), ENVIRONMENT_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("format") == FORMAT else None


def _version_tuple(version: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in str(version).split(".")[:2])
    except ValueError:
        return ()


def mismatches(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, tuple]:
    """Why the recorded artifact's kernels may not run here: key -> (there, here).

    ``gpu`` and ``cc`` (:data:`MUST_MATCH`) must be equal; ``driver``: the driver here
    must support the recorded ``cuda_runtime`` (its CUDA API version at least as high; the
    pair is then ``(">= 13.0", "12.8")``). A key the artifact did not record, or a driver
    version this machine cannot tell, matches anything.
    """
    out: dict[str, tuple] = {}
    for key in MUST_MATCH:
        want, have = recorded.get(key), current.get(key)
        if want is not None and want != have:
            out[key] = (want, have)
    need, driver = _major_minor(recorded.get("cuda_runtime")), current.get("driver")
    if need and driver and _version_tuple(driver) < _version_tuple(need):
        out["driver"] = (f">= {need}", driver)
    return out


def describe(env: Mapping[str, Any]) -> str:
    """``"NVIDIA H200 (cc 9.0), CUDA 13.0"`` (the recorded runtime, else the driver's
    version), or ``"no GPU"``."""
    if not env.get("gpu"):
        return "no GPU"
    cuda = env.get("cuda_runtime") or env.get("driver")
    return f"{env['gpu']} (cc {env.get('cc') or '?'})" + (f", CUDA {cuda}" if cuda else "")
