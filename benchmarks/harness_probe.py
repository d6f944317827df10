"""Device check, prepared for a session lent a GPU: one copy kernel timed by four harnesses.

    python benchmarks/harness_probe.py --out DIR            # on a GPU: DIR/harness_probe.csv
    python benchmarks/harness_probe.py --analyze FILE.csv   # intercept and rate per harness
    python benchmarks/harness_probe.py --device cpu --quick --out DIR   # dry run, no GPU

What it settles (``harness_floor.py``; RESULTS.md, 25th session membound and 29th session
kern29 blocks): the published memory-bound rows timed by ``triton.testing.do_bench`` (every
Liger-Kernel row) sit ~7 us (H100) and ~9-11 us (A100) above their bytes at the HBM rate, the
CUDA-graph batches of ``kernels_h100_measured.csv`` ~1.5 us below ``LAUNCH_S``, the bundled
database's sleep-queued events ~0.6 us above it. A per-call cost of ~3.5-4 us on do_bench rows
would put both memory-bound cells of ``trainsim validate kernels_published.csv`` under 10 %,
but the only rows that show it belong to a source ``fit_kernels.py`` holds out whole, so the
constant needs a measurement outside that source: this one. Same kernel, same sizes, only the
harness changes:

* ``graph``: the calls captured in one CUDA graph, events around the replay, time / calls (as
  ``measure_kernels.py`` timed the H100 file);
* ``queued``: events around each call, every call queued behind one sleep kernel so the host
  never starves the GPU, inputs rotated past the L2 (as ``profile/device.py measure`` times
  the bundled database);
* ``do_bench``: before each timed call a 256 MiB buffer is zeroed on the same stream, then
  events around that one call; the median (triton-lang/triton ``python/triton/testing.py``
  ``do_bench``, read at 3fb4e466; later releases flush through ``driver.clear_cache`` the same);
* ``do_bench_read``: the same with the buffer *read* (summed) instead of written: the L2 is
  evicted with clean lines, so any difference from ``do_bench`` is the write-back of the dirty
  lines the zeroing leaves, and what both keep over ``queued`` is the call timed right after
  another kernel on a cold cache.

``--analyze`` fits each harness's times as a + bytes / rate (``harness_floor.fit_line``) and
prints the intercept, the rate as a fraction of the GPU's HBM peak and each intercept minus
``queued``'s: the per-call cost a harness adds, the figure a do_bench measurement condition
would carry (as ``validate.kernels.SUSTAINED`` and ``BURST`` carry theirs).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness_floor import fit_line

from trainsim.catalog import gpu as catalog_gpu
from trainsim.profile.device import Budget, Device, measure, open_device, rotation

HARNESSES = ("graph", "queued", "do_bench", "do_bench_read")
SIZES_MB = tuple(2 ** i for i in range(10))  # bytes moved (read + write): 1 .. 512 MiB
FLUSH_BYTES = 256 * 2 ** 20  # triton.testing.do_bench's cache buffer
COLUMNS = ("gpu", "harness", "bytes", "time_s", "calls")


def _copy_calls(dev: Device, moved: int) -> tuple[Callable[[int], object], int]:
    """``run(i)`` copies input set ``i`` (rotated past the L2) into its output; the sets."""
    n = moved // 2 // 2  # bf16 elements of one side
    sets = rotation(moved, dev)
    src = [torch.randn(n, device=dev.torch_device).to(torch.bfloat16) for _ in range(sets)]
    dst = [torch.empty_like(s) for s in src]
    return (lambda i: dst[i % sets].copy_(src[i % sets])), sets


def time_graph(dev: Device, run: Callable[[int], object], calls: int) -> float:
    """Seconds per call of ``calls`` calls replayed as one CUDA graph (a plain loop off CUDA)."""
    for i in range(3):
        run(i)
    dev.synchronize()
    graph = None
    if dev.kind == "cuda":
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for i in range(calls):
                run(i)
    out = []
    for _ in range(3):
        start, end = dev.timer(), dev.timer()
        start.record()
        if graph is not None:
            graph.replay()
        else:
            for i in range(calls):
                run(i)
        end.record()
        dev.synchronize()
        out.append(start.elapsed_s(end) / calls)
    return statistics.median(out)


def time_flushed(dev: Device, run: Callable[[int], object], calls: int, flush: torch.Tensor,
                 read: bool) -> float:
    """Median of ``calls`` calls, each timed alone right after the flush buffer is zeroed
    (``read``: summed instead) on the same stream."""
    for i in range(3):
        run(i)
    dev.synchronize()
    marks = []
    for i in range(calls):
        if read:
            flush.sum()
        else:
            flush.zero_()
        start, end = dev.timer(), dev.timer()
        start.record()
        run(i)
        end.record()
        marks.append((start, end))
    dev.synchronize()
    return statistics.median(s.elapsed_s(e) for s, e in marks)


def probe(dev: Device, sizes_mb: tuple[int, ...], calls: int, flush_bytes: int
          ) -> list[dict[str, object]]:
    flush = torch.empty(flush_bytes // 4, dtype=torch.int32, device=dev.torch_device)
    budget = Budget(warmup=3, repeats=calls, min_repeats=calls, target_s=1.0)
    rows: list[dict[str, object]] = []
    for mb in sizes_mb:
        moved = mb * 2 ** 20
        run, _ = _copy_calls(dev, moved)
        times = {"graph": time_graph(dev, run, calls),
                 "queued": measure(dev, run, budget).median_s,
                 "do_bench": time_flushed(dev, run, calls, flush, read=False),
                 "do_bench_read": time_flushed(dev, run, calls, flush, read=True)}
        for how in HARNESSES:
            rows.append({"gpu": dev.name, "harness": how, "bytes": moved,
                         "time_s": times[how], "calls": calls})
    return rows


def analyze(rows: list[dict[str, str]], hbm_Bps: float | None
            ) -> list[tuple[str, int, float, float | None, float]]:
    """(harness, sizes, intercept us, rate / HBM or None, intercept - queued's, us)."""
    points: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in rows:
        points[r["harness"]].append((float(r["bytes"]), float(r["time_s"])))
    fits = {how: fit_line(pts) for how, pts in points.items()}
    base = fits.get("queued")
    out = []
    for how in [h for h in HARNESSES if fits.get(h)] + sorted(set(fits) - set(HARNESSES)):
        a, per_byte = fits[how]  # type: ignore[misc]
        rate = 1.0 / per_byte / hbm_Bps if hbm_Bps and per_byte > 0 else None
        out.append((how, len(points[how]), a * 1e6, rate,
                    (a - base[0]) * 1e6 if base else float("nan")))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, help="folder for harness_probe.csv")
    ap.add_argument("--analyze", type=Path, metavar="CSV", help="fit a saved probe")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--gpu", default="h100-sxm-80gb",
                    help="catalog GPU for the rate column (its HBM peak)")
    ap.add_argument("--quick", action="store_true", help="small sizes and few calls")
    args = ap.parse_args(argv)
    if args.analyze:
        with open(args.analyze, newline="") as fh:
            rows = list(csv.DictReader(fh))
    else:
        dev = open_device(args.device)
        sizes, calls, flush = ((1, 2, 4), 5, 8 * 2 ** 20) if args.quick else (SIZES_MB, 50,
                                                                               FLUSH_BYTES)
        rows = [{k: str(v) for k, v in r.items()} for r in probe(dev, sizes, calls, flush)]
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            with open(args.out / "harness_probe.csv", "w", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=COLUMNS)
                w.writeheader()
                w.writerows(rows)
    hbm = catalog_gpu(args.gpu).hbm_bw_Bps
    print(f"| harness | sizes | intercept (us) | rate / HBM ({args.gpu}) | over queued (us) |"
          "\n|---|---|---|---|---|")
    for how, n, a_us, rate, over in analyze(rows, hbm):
        print(f"| {how} | {n} | {a_us:+.2f} | {'-' if rate is None else f'{rate:.3f}'} | "
              f"{over:+.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
