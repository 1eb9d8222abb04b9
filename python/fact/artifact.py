"""Saving and loading artifacts portably: ``FactModule.save(dir)`` and ``fact.load(dir)``.

An artifact (docs/05-composition.md) is what ``factc compose`` wrote plus what the Python
side adds: ``params.pt`` (the tensors, so no model is needed), ``module.py`` (the generated
module's readable source, :meth:`fact.runtime.FactModule.source`), ``environment.json`` (the GPU
and toolkit its kernels were verified and tuned on, :mod:`fact.environment`), and the
``plan.json`` and ``realized.json`` it was composed from (so it can be rebuilt elsewhere).

:func:`load_artifact` never re-tunes on the machine the artifact was built for, and never
runs a kernel on another one:

1. no CUTLASS kernel in the manifest (vendor winners only): load it as it is;
2. the GPU and its compute capability match, and the driver supports the CUDA runtime the
   kernels were built with (:func:`fact.environment.mismatches`): load it as it is; a kernel library that cannot be loaded here is a warning and the
   ATen path, not a crash;
3. otherwise, when a GPU is here: say so, and rebuild from the artifact's plan through
   ``factc realize`` and ``compose`` (:func:`rebuild_artifact`): the tuning registry and the
   kernel cache make that cheap when this GPU has seen these problems, and the kernels are
   verified and tuned for *this* GPU either way;
4. otherwise (no GPU here, no plan, no factc, or the rebuild failed): say so once and run
   every node as its ATen op; the kernel library is never opened.

A module loaded as it is (cases 1 and 2) is composed as ``fact optimize`` composed it:
``composition.json`` (:func:`write_composition`) gives the remainder mode and the kernel
patterns handed back to Inductor, so a load neither re-times nor loses the decision.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from typing import Mapping

import torch

from fact import environment
from fact.environment import (ENVIRONMENT_FILE, describe, mismatches, read_environment,
                              recorded_environment, write_environment)
from fact.log import logger, warn_once
from fact.manifest import aten_reasons

__all__ = ["cache_root", "save_artifact", "load_artifact", "rebuild_artifact", "aten_module",
           "PLAN_FILE", "REALIZED_FILE", "COMPOSITION_FILE", "keep_sources", "write_composition",
           "apply_composition"]

PLAN_FILE = "plan.json"
REALIZED_FILE = "realized.json"
#: How ``fact optimize`` composed the module (:func:`write_composition`), applied at load.
COMPOSITION_FILE = "composition.json"


def cache_root() -> str:
    """The kernel cache ``factc`` uses by default: ``$FACT_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/fact``, else ``~/.cache/fact``."""
    if os.environ.get("FACT_CACHE_DIR"):
        return os.environ["FACT_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "fact")


def keep_sources(artifact_dir: str, plan_path: str, realized_path: str, realized: Mapping,
                 policy: str, tune_budget: int | None) -> None:
    """Copy the plan and realized.json into a freshly composed artifact and write its
    ``environment.json`` (what :func:`load_artifact` checks and :func:`rebuild_artifact`
    rebuilds from)."""
    shutil.copyfile(plan_path, os.path.join(artifact_dir, PLAN_FILE))
    shutil.copyfile(realized_path, os.path.join(artifact_dir, REALIZED_FILE))
    write_environment(artifact_dir, recorded_environment(realized, policy, tune_budget))


def write_composition(artifact_dir: str, module: torch.nn.Module,
                      composition: Mapping | None) -> str:
    """Write ``artifact_dir/composition.json``: what runs ``module``'s remainder
    (``"inductor"``/``"aten"``), the kernel patterns handed back to it (id -> reason: the
    manifest entries the module marks ``impl: "aten"`` that the artifact's manifest has as
    kernels) and the measured composition's record (``None`` when not measured). Returns
    the path."""
    from fact.runtime import kernel_patterns
    kernels = {p["id"] for p in kernel_patterns(_manifest(artifact_dir))}
    back = {pid: why or "handed back" for pid, why in aten_reasons(module.manifest).items()
            if pid in kernels}
    doc = {"format": "fact.composition", "version": 1, "remainder": module.remainder.mode,
           "handed_back": back, "composition": dict(composition) if composition else None}
    path = os.path.join(artifact_dir, COMPOSITION_FILE)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return path


def apply_composition(module: torch.nn.Module, artifact_dir: str) -> torch.nn.Module:
    """``module`` as ``artifact_dir/composition.json`` says (:func:`write_composition`): its
    remainder mode set, the patterns handed back (a new module). Without the file, or with
    one that cannot be read (said once), ``module`` as it is.
    """
    from fact.remainder import REMAINDERS
    from fact.runtime import kernel_patterns
    path = os.path.join(artifact_dir, COMPOSITION_FILE)
    if not os.path.isfile(path):
        return module
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if not isinstance(doc, dict) or doc.get("format") != "fact.composition" \
                or doc.get("version") != 1:
            raise ValueError("not a fact.composition of version 1")
        remainder, back = doc.get("remainder"), doc.get("handed_back")
        if remainder not in REMAINDERS or not isinstance(back, dict):
            raise ValueError(f"remainder {remainder!r} / handed_back {back!r}")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        warn_once(f"composition:{path}", f"fact: {path} is unreadable ({exc}); the module "
                  f"runs as composed, every kernel in")
        return module
    module.set_remainder(remainder)
    ids = [p["id"] for p in kernel_patterns(module.manifest) if p["id"] in back]
    return module.handing_back(ids, {i: str(back[i]) for i in ids}) if ids else module


def save_artifact(module: torch.nn.Module, path: str | os.PathLike) -> str:
    """Write ``module`` (a loaded :class:`fact.runtime.FactModule`) as an artifact at
    ``path``: every file of the artifact it was loaded from, ``params.pt`` with the
    module's tensors as they are now (on the CPU), and ``module.py``, its generated source.
    Returns the path.

    Raises:
        fact.runtime.ArtifactError: the module was not loaded from an artifact.
    """
    from fact.runtime import PARAMS_FILE, ArtifactError
    src = getattr(module, "artifact_dir", None)
    if not src:
        raise ArtifactError("this module was not loaded from an artifact: nothing to save")
    dst = os.path.abspath(os.fspath(path))
    if os.path.abspath(src) != dst:
        shutil.copytree(src, dst, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(PARAMS_FILE))
    tensors = {p["target"]: getattr(module, p["name"]) for p in module.graph["params"]}
    torch.save({k: v.detach().cpu() for k, v in tensors.items()},
               os.path.join(dst, PARAMS_FILE))
    module.write_source(dst)
    path = os.path.join(dst, COMPOSITION_FILE)
    if os.path.isfile(path) or module.remainder.mode != "aten" or aten_reasons(module.manifest):
        record = None  # the module as it is composed now; the measured record kept
        try:
            with open(path, encoding="utf-8") as f:
                record = json.load(f).get("composition")
        except (OSError, ValueError, AttributeError):
            pass
        write_composition(dst, module, record)
    return dst


def _manifest(artifact_dir: str) -> dict:
    from fact.runtime import _read_json
    return _read_json(os.path.join(artifact_dir, "manifest.json"), "fact.manifest")


def aten_module(artifact_dir: str, model: torch.nn.Module | None, reason: str):
    """The artifact as a module whose every node runs its ATen op: its CUTLASS patterns are
    marked ``impl: "aten"`` with ``reason`` in the module's manifest, and the kernel library
    is not opened."""
    from fact.runtime import FactModule, _param_values, _read_json
    from fact.runtime import kernel_patterns
    manifest = _manifest(artifact_dir)
    for p in kernel_patterns(manifest):
        p.update(impl="aten", aten_reason=reason)
    graph = _read_json(os.path.join(artifact_dir, manifest.get("graph", "graph.json")),
                       "fact.graph")
    module = FactModule(graph, _param_values(graph, model, artifact_dir), manifest, None)
    module.artifact_dir = artifact_dir
    return module


def rebuild_artifact(artifact_dir: str, factc: str | None = None, out_root: str | None = None,
                     verbose: bool = False) -> str:
    """Realize and compose ``artifact_dir``'s plan again on this machine's GPU; returns the
    new artifact's path, ``<out_root>/<key>/artifact`` (``out_root`` defaults to
    ``<cache_root()>/rebuilt``; the key hashes the plan, the policy and this GPU). A rebuild
    already made for this GPU is returned without running ``factc``.

    ``factc realize`` looks each pattern up in the tuning registry (a hit replays the
    winner) and builds into the kernel cache (a hit compiles nothing), so a GPU that has
    seen these problems rebuilds in seconds.

    Raises:
        fact.runtime.ArtifactError: the artifact has no plan.json.
        fact.factc.FactcError: factc is missing or a step failed.
        fact.GpuRequired: no GPU here (realize verified nothing).
    """
    from fact.factc import find_factc, run_factc
    from fact.gpu import GpuRequired
    from fact.runtime import PARAMS_FILE, ArtifactError
    plan = os.path.join(artifact_dir, PLAN_FILE)
    if not os.path.isfile(plan):
        raise ArtifactError(f"{plan}: missing, so the artifact cannot be rebuilt")
    recorded = read_environment(artifact_dir) or {}
    policy = recorded.get("policy") or _manifest(artifact_dir).get("policy") or "tf32"
    here = environment.current_environment()
    with open(plan, "rb") as f:
        key = hashlib.sha256(f.read() + json.dumps(
            [policy, here.get("gpu"), here.get("cc"), here.get("driver")]).encode()
        ).hexdigest()[:16]
    work = os.path.join(out_root or os.path.join(cache_root(), "rebuilt"), key)
    out = os.path.join(work, "artifact")
    done = read_environment(out)
    if done is not None and not mismatches(done, here):
        logger.info("reusing the rebuild in %s", out)
        return out
    os.makedirs(work, exist_ok=True)
    exe = find_factc(factc)
    realized_path = os.path.join(work, REALIZED_FILE)
    args = ["realize", plan, "--policy", policy, "-o", realized_path]
    if recorded.get("tune_budget"):
        args += ["--tune-budget", str(recorded["tune_budget"])]
    run_factc(exe, args, verbose)
    with open(realized_path, encoding="utf-8") as f:
        realized = json.load(f)
    if realized.get("gpu") is None:
        raise GpuRequired(len(realized.get("patterns", [])), 0, realized.get("cache") or "?")
    run_factc(exe, ["compose", plan, realized_path, "--graph",
                    os.path.join(artifact_dir, "graph.json"), "-o", out], verbose)
    params = os.path.join(artifact_dir, PARAMS_FILE)
    if os.path.isfile(params):
        shutil.copyfile(params, os.path.join(out, PARAMS_FILE))
    keep_sources(out, plan, realized_path, realized, policy, recorded.get("tune_budget"))
    return out


def _load_as_is(artifact_dir: str, model: torch.nn.Module | None):
    """runtime.load, with a library that cannot be opened here turned into the ATen path,
    and the artifact's composition applied (:func:`apply_composition`)."""
    from fact.runtime import load
    try:
        return apply_composition(load(artifact_dir, model), artifact_dir)
    except OSError as exc:
        reason = f"the kernel library of {artifact_dir} cannot be loaded here: {exc}"
        warn_once(f"library:{artifact_dir}", f"fact: {reason}; running every node as ATen")
        return aten_module(artifact_dir, model, reason)


def load_artifact(artifact_dir: str | os.PathLike, model: torch.nn.Module | None = None,
                  rebuild: bool = True, factc: str | None = None) -> torch.nn.Module:
    """Load an artifact, checking that its kernels were made for this GPU (see the module
    docstring for what happens when they were not).

    Args:
        artifact_dir: an artifact written by ``fact optimize``, :func:`fact.optimize`, the
            backend or :meth:`fact.runtime.FactModule.save`.
        model: the module the graph came from (its tensors are used); without it
            ``params.pt`` must hold them.
        rebuild: on another GPU (or a driver too old for its kernels), rebuild from the
            plan (else ATen).
        factc: the engine for a rebuild (default: :func:`fact.factc.find_factc`).

    Returns:
        A :class:`fact.runtime.FactModule`; its ``artifact_dir`` is the artifact it runs
        (the rebuilt one after a rebuild).

    Raises:
        fact.runtime.ArtifactError: a file is missing or malformed, or a tensor is missing.
    """
    artifact_dir = os.fspath(artifact_dir)
    manifest = _manifest(artifact_dir)
    from fact.runtime import kernel_patterns
    if not kernel_patterns(manifest):
        return _load_as_is(artifact_dir, model)
    recorded = read_environment(artifact_dir)
    if recorded is None:
        logger.info("%s has no %s: its kernels' GPU cannot be checked; loading it as it is",
                    artifact_dir, ENVIRONMENT_FILE)
        return _load_as_is(artifact_dir, model)
    here = environment.current_environment()
    diff = mismatches(recorded, here)
    if not diff:
        return _load_as_is(artifact_dir, model)
    what = "; ".join(f"{k}: {a} there, {b if b is not None else 'none'} here"
                     for k, (a, b) in diff.items())
    head = (f"fact: {artifact_dir} was built for {describe(recorded)}; this machine has "
            f"{describe(here)} ({what})")
    if here.get("gpu") and rebuild:
        try:
            new = rebuild_artifact(artifact_dir, factc)
            warn_once(f"rebuilt:{artifact_dir}", f"{head}: rebuilt its kernels for this GPU "
                      f"from its plan, the tuning registry and the kernel cache: {new}")
            return _load_as_is(new, model)
        except Exception as exc:  # any failure of the rebuild leaves the ATen path
            reason = f"{head}; rebuilding failed: {exc}"
    elif here.get("gpu"):
        reason = f"{head}; rebuilding is off"
    else:
        reason = f"{head}; without a GPU its kernels cannot run"
    warn_once(f"aten:{artifact_dir}", f"{reason}: every node runs as its ATen op")
    return aten_module(artifact_dir, model, reason)
