"""Whether a GPU is here, and what FACT says when one is needed and missing.

:class:`GpuRequired` is ``fact.GpuRequired``: :func:`fact.optimize` raises it on a machine
without a CUDA GPU after doing what needs none (export, discovery, compiling the kernels
into the cache), with a message that says what was done, what needs a GPU, and, when
discovery matched nothing, which ops stay ATen and why. Nothing here initializes CUDA:
:func:`gpu_present` asks ``torch.cuda.is_available()`` only, which never raises.
"""

from __future__ import annotations

from typing import Mapping

import torch

from fact.plan_summary import unmatched_text

__all__ = ["GpuRequired", "gpu_present", "NEEDS_GPU"]

#: What needs a GPU, as the messages say it.
NEEDS_GPU = ("verifying the kernels against float64, tuning them against the vendor "
             "library and running the optimized module need a CUDA GPU (sm_90a: H100/H200)")


def gpu_present() -> bool:
    """Whether torch sees a CUDA GPU (``torch.cuda.is_available()``; never raises)."""
    try:
        return bool(torch.cuda.is_available())
    except Exception:  # a broken driver install: treat as none
        return False


class GpuRequired(RuntimeError):
    """Realization ran without a GPU: kernels were compiled but not verified or tuned.

    Raised by :func:`fact.optimize` (and said by ``fact optimize``, exit status 3) after the
    steps that need no GPU. The message names what was done, what needs a GPU and where the
    files are; when discovery matched nothing, it names the ops left to ATen and why.

    Attributes:
        patterns: how many patterns discovery found.
        compiled: how many CUTLASS kernels are built (compiled now or found in the cache).
        cached: how many of those came from the cache.
        cache: the kernel cache directory.
        out_dir: where graph.json, plan.json and realized.json are ("" when not known).
        unmatched: the ops discovery left to ATen, with why (see
            :func:`fact.plan_summary.unmatched_text`; "" when not known).
    """

    def __init__(self, patterns: int, compiled: int, cache: str, cached: int = 0,
                 out_dir: str = "", plan: Mapping | None = None) -> None:
        self.patterns, self.compiled, self.cache, self.cached = patterns, compiled, cache, cached
        self.out_dir = out_dir
        self.unmatched = unmatched_text(plan) if plan is not None else ""
        fresh = f"{compiled - cached} compiled now, {cached} from the cache" if cached else \
            f"compiled {compiled} kernel{'s' if compiled != 1 else ''}"
        text = (f"verification and tuning need a GPU: discovered {patterns} "
                f"pattern{'s' if patterns != 1 else ''}, {fresh} (cache: {cache}); stopping")
        if patterns == 0 and self.unmatched:
            text += f"\nnothing matched: {self.unmatched}"
        super().__init__(text)

    def details(self) -> str:
        """Two lines for a terminal: what to do next (the reason was said first, as a
        warning), and where the files are."""
        lines = ["next: run it where a CUDA GPU (sm_90a: H100/H200) is present, to verify the "
                 "kernels against float64, tune them against the vendor library and compose the module"]
        if self.out_dir:
            lines.append(f"files: {self.out_dir} (graph.json, plan.json, realized.json)")
        return "\n".join(lines)


# Tracebacks and reprs name the class where users reach it: fact.GpuRequired.
GpuRequired.__module__ = "fact"
