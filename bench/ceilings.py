"""Measure the GPU's two ceilings for docs/perf-notes.md (METHOD: "two numbers first").

Bytes: a large device-to-device copy (bytes read + bytes written over the time). FLOPs: an
8192^3 matrix product on random data through PyTorch (cuBLAS) in bf16, TF32 and fp32.
Median of 20 CUDA-event timings after warm-up. Prints one line per ceiling.

Usage: python bench/ceilings.py
"""

from __future__ import annotations

import statistics

import torch


def _median_ms(fn, trials: int = 20) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(trials):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main() -> None:
    """Print copy bandwidth (TB/s) and matmul rates (TFLOP/s) of the current GPU."""
    dev = torch.device("cuda")
    print(f"gpu: {torch.cuda.get_device_name(dev)}; torch {torch.__version__}; cuda {torch.version.cuda}")
    src = torch.randn(1 << 30, device=dev)  # 4 GiB of fp32
    dst = torch.empty_like(src)
    ms = _median_ms(lambda: dst.copy_(src))
    print(f"copy: {2 * src.numel() * 4 / ms / 1e9:.2f} TB/s (read + write, 4 GiB, {ms:.3f} ms)")
    del src, dst
    n = 8192
    for name, dtype, prec in (("bf16", torch.bfloat16, "high"), ("tf32", torch.float32, "high"),
                              ("fp32", torch.float32, "highest")):
        torch.set_float32_matmul_precision(prec)
        a = torch.randn(n, n, device=dev, dtype=dtype)
        b = torch.randn(n, n, device=dev, dtype=dtype)
        ms = _median_ms(lambda: a @ b)
        print(f"matmul {name}: {2 * n ** 3 / ms / 1e9:.1f} TFLOP/s ({n}^3, {ms:.3f} ms)")
    torch.set_float32_matmul_precision("highest")


if __name__ == "__main__":
    main()
