"""Experiments, not in the model: the GEMM mechanisms issue 17 item 1 asks about, each as a
patch of the shipped model, scored as `trainsim validate` scores kernels_published.csv's GEMM
rows (per GPU, rate error for TFLOP/s rows, time error otherwise).

    python benchmarks/gemm_hypotheses.py            # every hypothesis, the file as published
    python benchmarks/gemm_hypotheses.py --errata   # kernels_errata.csv applied first

No constant is refitted here (``benchmarks/gemm_variants.py`` refits its variants on
``fit_kernels.py``'s rows); each line is the shipped model with one mechanism changed, so a
line that cannot bring a cell under the target refitted would not either unless the fit moves
the other cells the other way (``gemm_error_budget.py --harness`` bounds the harness family).

Hypotheses (``HYPOTHESES``):

* Harness (a source's measurement condition): a time per call added to the rows whose source
  names Kineto (vidur's profiles: kernel durations of one traced pass,
  microsoft/vidur@7d47513 ``vidur/profiling/mlp/mlp_wrapper.py`` ``profile`` with
  ``RecordFunctionTracer``; ``GPTModel`` repeats one ``GPTBlock`` 20 times, so a layer's
  weights are the same tensors every repeat), through the validator's own per-call hook
  (``validate.kernels.COLD_CALL``, ``roofline.COLD_CALL_S``), -3 to +6 us; and the profiler's
  reading itself, every launch gap of a row naming a profiler-summed timing left out
  (``validate.kernels.UNTIMED_GAPS``: on the dense GEMM rows the -3 us line).
* Tile fixed cost as a time on GPUs whose MMA is not fed from shared memory (not
  ``roofline.smem_fed_mma``): ``GEMM_TILE_OVERHEAD_K`` x the GPU's per-SM GEMM rate over
  H100's (A100 ~90, MI300X ~80, B200 ~430 k-steps of the 16-bit main loop).
* Tile fixed cost as the epilogue's C store at HBM bandwidth: a wave's tiles store their C
  tiles together, so the store takes rows x cols x 2 bytes at an SM's share of HBM bandwidth,
  the GPU's ridge point (``ridge``: burst 16-bit ceiling over HBM bandwidth) in k-steps of
  any tile; ``GEMM_TILE_OVERHEAD_K`` x the GPU's ridge over H100's (A100 122, H200 159, B200
  210, MI300X 117 k-steps; H100 and H800 unchanged). As a src change with the same scaling
  (``candidates/gemm_tile_cost_ridge.patch``; RESULTS.md, 34th session, gemm34).
* fp8's tile fixed cost in k-steps of the 16-bit main loop (not scaled by the fp8 rate).
* Tile quantization: ``SPLIT_K_MAX_WAVES`` 1 and 3; ``SMALL_TILE_RATE`` 0.85 and 1.0; a split's
  parts summed through memory (``gemm_variants.split_reduce_efficiency``: cuBLASLt's
  ``CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE``, fp32 parts reduced in a second pass).
* Blackwell's per-tile fixed cost paid once per kernel (sm 10.x persistent kernels overlap a
  tile's epilogue with the next tile's main loop through two accumulator stages in tensor
  memory; the 29th session's variant).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import re
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

import gemm_variants as gv

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import roofline
from trainsim.validate import BUNDLED_DIR, validate_file
from trainsim.validate import kernels as vk
from trainsim.validate.errata import corrected_file
from trainsim.workload.ops import Gemm

HERE = Path(__file__).resolve().parent
PUBLISHED = BUNDLED_DIR / "kernels_published.csv"
SHIPPED = roofline.RooflineModel.gemm_efficiency
KINETO = re.compile(r"\bKineto\b")
"""A source naming the PyTorch profiler's kernel durations (vidur's profiles)."""


def cells(path: Path) -> dict[str, float]:
    """GEMM MAPE per GPU of a kernels file as the validator prices it now, and 'all'."""
    vk._model.cache_clear()
    _, results = validate_file(path)
    apes: dict[str, list[float]] = defaultdict(list)
    for res in results:
        if res.error or res.predicted is None or res.extra.get("kind") != "gemm":
            continue
        apes[res.extra["gpu"]].append(res.ape)
        apes["all"].append(res.ape)
    return {g: sum(v) / len(v) for g, v in apes.items()}


@contextlib.contextmanager
def patched(obj: object, **values: object) -> Iterator[None]:
    """``obj``'s attributes set to ``values`` inside the block, restored after."""
    saved = {k: getattr(obj, k) for k in values}
    for k, v in values.items():
        setattr(obj, k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(obj, k, v)
        vk._model.cache_clear()


def kineto_call(seconds: float) -> contextlib.AbstractContextManager[None]:
    """``seconds`` added once to every row whose source names Kineto (and to no other)."""
    return contextlib.ExitStack() if seconds == 0 else _stack(
        patched(vk, COLD_CALL=KINETO), patched(roofline, COLD_CALL_S=seconds))


def _stack(*managers: contextlib.AbstractContextManager[None]) -> contextlib.ExitStack:
    stack = contextlib.ExitStack()
    for m in managers:
        stack.enter_context(m)
    return stack


def per_sm_rate(gpu) -> float:
    """A GPU's 16-bit GEMM ceiling per SM (FLOP/s)."""
    return gpu.gemm_ceiling("bf16") / gpu.num_sms


def _efficiency(overhead: Callable[[roofline.RooflineModel, Gemm], float],
                kernel_once: bool = False) -> Callable[[roofline.RooflineModel, Gemm], float]:
    """The shipped dense efficiency with the tile fixed cost ``overhead(model, op)`` (k-steps
    of the op's main loop), paid per tile, or once per kernel where ``kernel_once(model)``."""
    def eff(self: roofline.RooflineModel, op: Gemm) -> float:
        if op.grouped and op.grouped != "userbuffers":
            return roofline.grouped_efficiency(self.gpu, op)
        k0 = overhead(self, op)
        once = kernel_once and (self.gpu.sm_arch or 0) >= 100
        stretch = 1.0 + roofline.block_promotion_k(self.gpu, op)
        return max(rate * roofline.tile_grid_efficiency(
            self.gpu.num_sms, op, rows, cols, 0.0 if once else k0, stretch, k0 if once else 0.0)
            for rows, cols, rate in roofline.gemm_tiles(self.gpu))
    return eff


def _shipped_overhead(self: roofline.RooflineModel, op: Gemm) -> float:
    return roofline.GEMM_TILE_OVERHEAD_K * roofline.gemm_rate(self.gpu, op) / \
        self.gpu.gemm_ceiling("bf16")


def _time_overhead(self: roofline.RooflineModel, op: Gemm) -> float:
    k0 = _shipped_overhead(self, op)
    if roofline.smem_fed_mma(self.gpu):
        return k0
    return k0 * per_sm_rate(self.gpu) / per_sm_rate(catalog_gpu("h100-sxm-80gb"))


def ridge(gpu) -> float:
    """A GPU's 16-bit GEMM ceiling at its burst clock over its HBM bandwidth (FLOP/B)."""
    return dataclasses.replace(gpu, sustained_of_burst=1.0).gemm_ceiling("bf16") / gpu.hbm_bw_Bps


def _store_overhead(self: roofline.RooflineModel, op: Gemm) -> float:
    return _shipped_overhead(self, op) * ridge(self.gpu) / ridge(catalog_gpu("h100-sxm-80gb"))


def _ksteps_overhead(self: roofline.RooflineModel, op: Gemm) -> float:
    return float(roofline.GEMM_TILE_OVERHEAD_K)


def efficiency(fn: Callable[[roofline.RooflineModel, Gemm], float]
               ) -> contextlib.AbstractContextManager[None]:
    return patched(roofline.RooflineModel, gemm_efficiency=fn)


def split_reduce() -> contextlib.AbstractContextManager[None]:
    return gv.variant("split_reduce")  # no refit: the shipped tile overhead


HYPOTHESES: dict[str, Callable[[], contextlib.AbstractContextManager[None]]] = {
    "shipped": contextlib.ExitStack,
    "harness: Kineto rows -3 us a call": lambda: kineto_call(-3e-6),
    "harness: Kineto rows +1.5 us a call": lambda: kineto_call(1.5e-6),
    "harness: Kineto rows +3 us a call": lambda: kineto_call(3e-6),
    "harness: Kineto rows +6 us a call": lambda: kineto_call(6e-6),
    "harness: profiler-summed rows without launch gaps": lambda: patched(
        vk, UNTIMED_GAPS=vk.PROFILER_SUMMED),
    "tile cost a time off Hopper (A100 ~90 k-steps)": lambda: efficiency(
        _efficiency(_time_overhead)),
    "tile cost the C store at HBM bandwidth (x ridge / H100's)": lambda: efficiency(
        _efficiency(_store_overhead)),
    "fp8 tile cost in 16-bit k-steps": lambda: efficiency(_efficiency(_ksteps_overhead)),
    "SPLIT_K_MAX_WAVES 1": lambda: patched(roofline, SPLIT_K_MAX_WAVES=1),
    "SPLIT_K_MAX_WAVES 3": lambda: patched(roofline, SPLIT_K_MAX_WAVES=3),
    "SMALL_TILE_RATE 0.85": lambda: patched(roofline, SMALL_TILE_RATE=0.85),
    "SMALL_TILE_RATE 1.0": lambda: patched(roofline, SMALL_TILE_RATE=1.0),
    "split parts summed through memory": split_reduce,
    "Blackwell tile cost once per kernel": lambda: efficiency(
        _efficiency(_shipped_overhead, kernel_once=True)),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--errata", action="store_true", help="apply kernels_errata.csv first")
    args = ap.parse_args(argv)
    path = corrected_file(PUBLISHED, HERE / "kernels_errata.csv", tempfile.mkdtemp())[0] \
        if args.errata else PUBLISHED
    out = {}
    for name, make in HYPOTHESES.items():
        with make():
            out[name] = cells(path)
    gpus = sorted(g for g in out["shipped"] if g != "all") + ["all"]
    print(f"{path.name}{' (errata applied)' if args.errata else ''}: GEMM MAPE per GPU\n")
    print("| hypothesis | " + " | ".join(gpus) + " |\n|---|" + "---|" * len(gpus))
    for name, c in out.items():
        print(f"| {name} | " + " | ".join(f"{100 * c[g]:.2f}" for g in gpus) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
