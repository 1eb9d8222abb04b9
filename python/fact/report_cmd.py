"""``fact report ARTIFACT``: the artifact's report, re-rendered from its files.

``report.md`` holds what ``factc compose`` wrote (pattern by pattern) and, after a
``fact optimize`` run, the ``## Module`` section. The section is rendered again from the
run's ``result.json`` (row, checks, timings) and ``manifest.json``
(:func:`fact.module_report.write_module_report`: the charts too, when matplotlib is here),
and an ``## Environment`` section says what the kernels were built for
(``environment.json``) and what this machine is.
"""

from __future__ import annotations

import json
import os

from fact import environment
from fact.environment import ENVIRONMENT_FILE, describe, mismatches, read_environment
from fact.module_report import replace_section, write_module_report

__all__ = ["rerender", "ENVIRONMENT_MARKER"]

#: Starts the section :func:`rerender` adds (replaced by a later call).
ENVIRONMENT_MARKER = "<!-- fact report: environment -->"


def _environment_section(artifact_dir: str) -> str:
    recorded = read_environment(artifact_dir)
    here = environment.current_environment()
    lines = [ENVIRONMENT_MARKER, "## Environment", ""]
    if recorded is None:
        lines.append(f"No {ENVIRONMENT_FILE}: the machine the kernels were built on is not "
                     f"recorded. This machine: {describe(here)}.")
        return "\n".join(lines) + "\n"
    keys = ("gpu", "cc", "sm_count", "driver", "cuda_runtime", "nvcc", "cutlass", "torch",
            "torch_cuda", "fact", "fact_commit", "policy", "tune_budget")
    lines += ["| | built with | here |", "|---|---|---|"]
    for k in keys:
        lines.append(f"| {k} | {recorded.get(k) if recorded.get(k) is not None else '—'} | "
                     f"{here.get(k) if here.get(k) is not None else '—'} |")
    diff = mismatches(recorded, here)
    lines.append("")
    if not diff:
        lines.append("This machine matches: `fact.load` runs the kernels as they are.")
    elif here.get("gpu"):
        lines.append("This machine differs (" + ", ".join(diff) + "): `fact.load` rebuilds the "
                     "kernels for it from the plan, the tuning registry and the kernel cache.")
    else:
        lines.append("This machine has no GPU: `fact.load` runs every node as its ATen op.")
    return "\n".join(lines) + "\n"


def rerender(artifact_dir: str | os.PathLike) -> str:
    """Re-render ``artifact_dir``'s report (see the module docstring), write it back to
    ``report.md`` and return its text.

    Raises:
        FileNotFoundError: ``artifact_dir`` has no manifest.json (not an artifact).
    """
    artifact_dir = os.fspath(artifact_dir)
    manifest_path = os.path.join(artifact_dir, "manifest.json")
    if not os.path.isfile(manifest_path):
        raise FileNotFoundError(f"{artifact_dir} is not an artifact: no manifest.json")
    result = os.path.join(artifact_dir, "result.json")
    if os.path.isfile(result):
        with open(result, encoding="utf-8") as f:
            doc = json.load(f)
        write_module_report(artifact_dir, doc["row"], doc["checks"], doc["timings"])
    return replace_section(os.path.join(artifact_dir, "report.md"), ENVIRONMENT_MARKER,
                           _environment_section(artifact_dir))
