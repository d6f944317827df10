"""Fit the roofline's global kernel constants to measured kernels, holding out whole sources.

    python benchmarks/fit_kernels.py            # fit, report fit and held-out error, no writes
    python benchmarks/fit_kernels.py --markdown # the same as a RESULTS.md table
    python benchmarks/fit_kernels.py --leave-one-source-out  # grouped GEMMs, source by source
    python benchmarks/fit_kernels.py --errata   # kernels_errata.csv applied to the published file
    python benchmarks/fit_kernels.py --untimed-gaps  # profiler-summed rows without launch gaps
    python benchmarks/fit_kernels.py --no-fit --by-source gemm,moe_block  # each cell by source
    python benchmarks/fit_kernels.py --no-fit --by-seq  # attention error per sequence length
    python benchmarks/fit_kernels.py --no-fit --by-impl  # attention per kernel, GPU, fit/held
    python benchmarks/fit_kernels.py --no-fit --compute-db auto  # priced as trainsim validate
    python benchmarks/fit_kernels.py --no-gpu-files  # without the never-fitted H200 file
    python benchmarks/fit_kernels.py --bwd-tail  # FA2's causal backward tail in the roofline

Data and split: ``kernel_rows.py`` (the kernel files bundled with trainsim,
``kernels_published.csv`` and ``kernels_h100_measured.csv``, each kind's rows held out by
whole source, then by shape family within each fitted source: no constant sees more than
80 % of any source; the split depends only on source and family names, never on the
errors). The measured files of GPUs nothing is fitted to (``HELD_OUT_GPU_FILES``: the 36th
session's H200) are priced in every report as ``held-out GPU`` cells and never fitted.

Constants fitted (their names in ``trainsim.compute.roofline``, the attention ones in
``trainsim.compute.attention``):

* GEMM: ``GEMM_TILE_OVERHEAD_K``, ``SMALL_TILE_RATE`` and ``split_k.SPLIT_K_FIXUP``
  (golden-section search on each in turn, three rounds). A block-scaled fp8
  kernel's serial promotion (``block_promotion_k``) has no constant: it is the GPU's fp8 tensor
  rate over its fp32 rate per 128-deep k block, from the catalog's peaks.
* Attention: ``ATTENTION_OF_GEMM`` (forward, backward) of its two kernel families (flash2,
  cudnn), ``ATTN_ROW_OVERHEAD_KEYS`` (forward, backward) of the same families,
  ``MEM_EFFICIENT_OF_FLASH2`` and ``SOFTMAX_EXP_EXPOSED`` (Nelder-Mead, restarted from its best
  point until it stops gaining, on the mean over sources of each source's mean absolute relative
  error of the time, ``source_balanced_mape``: each source one vote, so one large measured
  file does not set a constant alone where published sources disagree; each family's
  fractions bounded by the dense 16-bit peak of the GPUs its rows ran on, where the model caps
  them). ``FLASH1_OF_FLASH2`` is the FlashAttention-2 paper's "2x", not fitted (fitted, it
  drifted with whichever other kernels shared it: 0.55 once PyTorch's memory-efficient backend
  had its own share, 37th session); it prices Triton. FA1's own matmul share beside its split-K
  exchange, ``FLASH1_MMA_OF_FLASH2``, is fitted after the others (golden section on the fitted
  FA1 rows; 39th session).
* Grouped GEMMs: ``GROUPED_OF_GEMM`` of each one-kernel implementation family (cutlass,
  triton, deepgemm), each by golden-section search on the rows of that family. The
  ``gemm_grouped`` and ``moe_block`` rows measure the same kernels, so they are split and
  fitted together (one domain, ``grouped``); per-expert cuBLAS (``multi_stream``, ``loop``)
  has no constant of its own.

* Memory-bound: ``SCALAR_BYTES_PER_SM_CLOCK`` only (golden section on the fitted rows with kernels
  that load one 16-bit element at a time, ``workload.elementwise.strided_share``); the other
  memory-bound rows inform no constant here (``HBM_EFFICIENCY`` is a measured copy rate).

The loss is the mean absolute relative error of the kernel time.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from grouped_borrow import borrowed_fraction, main_loop_share  # noqa: F401 (tests read it)
from kernel_rows import (
    FILES,
    FITTED,
    HOLD_OUT,
    Row,
    _hash_order,
    domain,
    grouped_family,
    is_held,
    load,
    source_label,
    split,
)

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import attention, grouped, roofline, split_k
from trainsim.compute.chain import compute_model_for
from trainsim.validate import BUNDLED_DIR
from trainsim.workload.elementwise import strided_share
from trainsim.workload.ops import Elementwise

HELD_OUT_GPU_FILES = ("kernels_h200_measured.csv",)
"""Measured files (in benchmarks/) of a GPU no constant is fitted to: the 36th session's H200,
timed by the shared H100 file's script at its shapes. ``main`` prices them in every report,
each row held out (part ``held-out GPU``), and the fit never reads them; ``--no-gpu-files``
leaves them out."""
GPU_FILE_SOURCE = "measured GPU file (never fitted)"
GROUPED_FILES = ("kernels_h200_grouped54.csv",)
"""Measured files (in benchmarks/) whose grouped-GEMM rows join the grouped fit (54th session's
H200: ``torch._grouped_mm`` and friends at five MoE models' expert shapes), split by shape
family (``kernel_rows.EXPERTS_OF``: the model) like a fitted bundled source, so the bundled
files' split stays as it was; their other rows (the dense twins) are not loaded here."""

REPORT_DB: str | None = None
"""The kernel database the report prices with after the fit (``--compute-db``): None, the
roofline alone (what every constant is fitted on); 'auto', the compute chain as ``trainsim
validate`` runs it (the bundled database for the GPUs that have one, H100; the roofline
elsewhere), so the report's per-GPU fit / held-out cells are the validator's prices."""


def predict(rows: list[Row]) -> np.ndarray:
    """Kernel times by the roofline as its module constants stand (or the compute chain with
    ``REPORT_DB``), each GPU alone as ``validate.kernels._model`` prices it (burst clock, its
    GEMMs slowed by the benchmark loop's clock unless the row idled between calls; a row
    measured at the power limit at the sustained rate; a profiler-summed row without the
    launch gaps it did not time, ``validate.kernels.PROFILER_SUMMED``)."""
    models: dict[tuple[str, bool, bool], Any] = {}
    out = np.empty(len(rows))
    for i, r in enumerate(rows):
        key = (r.gpu, r.sustained, r.burst)
        if key not in models:
            gpu, loop = catalog_gpu(r.gpu), None
            if not r.sustained:
                loop = None if r.burst else gpu.sustained_of_burst * gpu.power_scale
                gpu = dataclasses.replace(gpu, sustained_of_burst=1.0)
            models[key] = (compute_model_for(gpu, REPORT_DB, catalog_gpu, loop) if REPORT_DB
                           else roofline.RooflineModel(gpu, loop))
        model, t = models[key], 0.0
        for op in r.ops:
            t_op, how = model.explain(op) if REPORT_DB else (model.time(op), "roofline")
            if r.profiled and how == "roofline":  # the gaps between kernels were not timed
                t_op -= roofline.LAUNCH_S * roofline.kernel_launches(op)
            t += t_op
        out[i] = t
    return out


def ape(rows: list[Row]) -> np.ndarray:
    measured = np.array([r.measured_s for r in rows])
    return np.abs(predict(rows) / measured - 1.0)


def nelder_mead(f: Callable[[np.ndarray], float], x0: Sequence[float], steps: int = 1500,
                scale: float = 0.15) -> np.ndarray:
    """Minimise ``f`` from ``x0`` (standard reflection/expansion/contraction/shrink)."""
    n = len(x0)
    simplex = [np.asarray(x0, float)]
    for i in range(n):
        x = np.array(x0, float)
        x[i] = x[i] * (1 + scale) if x[i] else scale
        simplex.append(x)
    values = [f(x) for x in simplex]
    for _ in range(steps):
        order = np.argsort(values)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        centroid = np.mean(simplex[:-1], axis=0)
        worst = simplex[-1]
        xr = centroid + (centroid - worst)
        fr = f(xr)
        if fr < values[0]:
            xe = centroid + 2 * (centroid - worst)
            fe = f(xe)
            simplex[-1], values[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = xr, fr
        else:
            xc = centroid + 0.5 * (worst - centroid)
            fc = f(xc)
            if fc < values[-1]:
                simplex[-1], values[-1] = xc, fc
            else:
                simplex = [simplex[0] + 0.5 * (x - simplex[0]) for x in simplex]
                values = [f(x) for x in simplex]
        if max(values) - min(values) < 1e-6:
            break
    return simplex[int(np.argmin(values))]


def golden(f: Callable[[float], float], lo: float, hi: float, tol: float = 1.0) -> float:
    """The minimum of a unimodal ``f`` on [lo, hi] to within ``tol``, by golden-section search:
    one new evaluation a step (the inner point kept is the next step's other one)."""
    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    while b - a > tol:
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return (a + b) / 2


ATTN_IMPLS = tuple(attention.ATTENTION_OF_GEMM)


def set_attention(p: np.ndarray) -> None:
    n = len(ATTN_IMPLS)
    for i, impl in enumerate(ATTN_IMPLS):
        attention.ATTENTION_OF_GEMM[impl] = (float(p[2 * i]), float(p[2 * i + 1]))
        attention.ATTN_ROW_OVERHEAD_KEYS[impl] = (float(p[2 * n + 2 * i]),
                                                  float(p[2 * n + 2 * i + 1]))
    attention.SOFTMAX_EXP_EXPOSED = float(p[4 * n])
    attention.MEM_EFFICIENT_OF_FLASH2 = (float(p[4 * n + 1]), float(p[4 * n + 2]))


def attention_params() -> list[float]:
    return [x for impl in ATTN_IMPLS for x in attention.ATTENTION_OF_GEMM[impl]] + [
        x for impl in ATTN_IMPLS for x in attention.ATTN_ROW_OVERHEAD_KEYS[impl]] + [
        attention.SOFTMAX_EXP_EXPOSED, *attention.MEM_EFFICIENT_OF_FLASH2]


def source_balanced_mape(rows: list[Row]) -> float:
    """Mean over sources of each source's MAPE: every published source (a paper's figure, a
    repository's benchmark, one team's measured file) weighs the same, so the largest file
    does not set a constant alone where sources disagree (0 for no rows)."""
    if not rows:
        return 0.0
    errors = ape(rows)
    by_source: dict[str, list[float]] = defaultdict(list)
    for r, e in zip(rows, errors):
        by_source[r.source].append(float(e))
    return float(np.mean([np.mean(v) for v in by_source.values()]))


ATTN_RESTARTS = 12
"""Most Nelder-Mead runs for the attention constants, each from the last one's best point,
until one gains less than ``ATTN_RESTART_GAIN``: one run stops where its simplex collapses,
often before the row overheads (a hundred times the fractions' scale) have moved."""
ATTN_RESTART_GAIN = 1e-5


def attention_rows(rows: list[Row]) -> list[Row]:
    """The rows the attention constants are fitted on: fused kernels (not unfused ones)."""
    return [r for r in rows if r.kind.startswith("attention") and
            all(getattr(op, "impl", None) != "unfused" for op in r.ops)]


def fit_attention(attn: list[Row]) -> None:
    """Set the attention constants (``attention_params``) to their best fit on ``attn``; a
    family with no row in ``attn`` keeps its constants (nothing in the loss reads them)."""
    # no family's main loop above the tensor-core peak of the GPUs its rows ran on (the model
    # caps it there: ``attention.attention_fraction``), so the fit cannot wander past the cap
    top = {impl: min((1.0 / catalog_gpu(r.gpu).mamf_fraction for r in attn
                      if any(attention.ATTENTION_FAMILY.get(getattr(op, "impl", "")) == impl
                             for op in r.ops)), default=math.inf)
           for impl in ATTN_IMPLS}
    cap = np.array([top[impl] for impl in ATTN_IMPLS for _ in range(2)])

    def attn_loss(p: np.ndarray) -> float:
        if min(p) <= 0 or np.any(p[:len(cap)] > cap):
            return 1e9
        set_attention(p)
        return source_balanced_mape(attn)

    # start inside the bounds: a shipped fraction rounded up past its cap would make every
    # vertex of the first simplex infeasible and stop the search where it began
    start = np.array(attention_params())
    x0 = start.copy()
    x0[:len(cap)] = np.minimum(x0[:len(cap)], cap * (1 - 1e-9))
    loss = attn_loss(x0)
    for _ in range(ATTN_RESTARTS):
        x0 = nelder_mead(attn_loss, x0)
        loss, last = attn_loss(x0), loss
        if last - loss < ATTN_RESTART_GAIN:
            break
    n = len(ATTN_IMPLS)
    for i, impl in enumerate(ATTN_IMPLS):
        if top[impl] == math.inf:  # no row: the search drifted it freely, put it back
            for j in (2 * i, 2 * i + 1, 2 * n + 2 * i, 2 * n + 2 * i + 1):
                x0[j] = start[j]
    set_attention(x0)


def fit(rows: list[Row], held: dict[str, set[str]]) -> dict[str, Any]:
    train = [r for r in rows if not is_held(r, held)]
    gemms = [r for r in train if r.kind == "gemm"]

    def gemm_loss(k0: float) -> float:
        roofline.GEMM_TILE_OVERHEAD_K = k0
        return float(np.mean(ape(gemms)))

    def small_tile_loss(rate: float) -> float:
        roofline.SMALL_TILE_RATE = rate
        return float(np.mean(ape(gemms)))

    def fixup_loss(x: float) -> float:
        split_k.SPLIT_K_FIXUP = x
        return float(np.mean(ape(gemms)))

    def loop_loss(tau_ms: float) -> float:
        roofline.LOOP_CLOCK_TAU_S = tau_ms * 1e-3
        return float(np.mean(ape(gemms)))

    for _ in range(3):  # the four GEMM constants by turns, each by golden section
        roofline.GEMM_TILE_OVERHEAD_K = round(golden(gemm_loss, 0.0, 1024.0))
        roofline.SMALL_TILE_RATE = round(golden(small_tile_loss, 0.7, 1.0, tol=0.005), 2)
        split_k.SPLIT_K_FIXUP = round(golden(fixup_loss, 0.0, 2.0, tol=0.01), 2)
        roofline.LOOP_CLOCK_TAU_S = round(golden(loop_loss, 0.1, 50.0, tol=0.05), 1) * 1e-3
    fit_attention(attention_rows(train))
    flash1 = [r for r in attention_rows(train) if attention_impl(r) == "flash1"]

    def flash1_loss(x: float) -> float:
        attention.FLASH1_MMA_OF_FLASH2 = x
        return float(np.mean(ape(flash1)))

    if flash1:  # after the FA2 family it scales
        attention.FLASH1_MMA_OF_FLASH2 = round(golden(flash1_loss, 0.3, 1.0, tol=0.005), 2)
    fit_grouped(train, [r for r in rows if is_held(r, held)])  # after the tile overhead
    scalar = [r for r in train if r.kind == "memory_bound" and
              any(isinstance(op, Elementwise) and strided_share(op) > 0 for op in r.ops)]

    def scalar_loss(x: float) -> float:
        roofline.SCALAR_BYTES_PER_SM_CLOCK = x
        return float(np.mean(ape(scalar)))

    if scalar:
        roofline.SCALAR_BYTES_PER_SM_CLOCK = round(golden(scalar_loss, 1.0, 20.0, tol=0.01), 2)
    return {"GROUPED_OF_GEMM": dict(roofline.GROUPED_OF_GEMM),
            "PINGPONG_TILE_RATE": grouped.PINGPONG_TILE_RATE,
            "SCALAR_BYTES_PER_SM_CLOCK": roofline.SCALAR_BYTES_PER_SM_CLOCK,
            "GEMM_TILE_OVERHEAD_K": roofline.GEMM_TILE_OVERHEAD_K,
            "SMALL_TILE_RATE": roofline.SMALL_TILE_RATE,
            "SPLIT_K_FIXUP": split_k.SPLIT_K_FIXUP,
            "LOOP_CLOCK_TAU_S": roofline.LOOP_CLOCK_TAU_S,
            "ATTENTION_OF_GEMM": {k: tuple(round(x, 2) for x in v)
                                  for k, v in attention.ATTENTION_OF_GEMM.items()},
            "FLASH1_OF_FLASH2": round(attention.FLASH1_OF_FLASH2, 2),
            "FLASH1_MMA_OF_FLASH2": attention.FLASH1_MMA_OF_FLASH2,
            "ATTN_ROW_OVERHEAD_KEYS": {k: tuple(round(x) for x in v)
                                       for k, v in attention.ATTN_ROW_OVERHEAD_KEYS.items()},
            "SOFTMAX_EXP_EXPOSED": round(attention.SOFTMAX_EXP_EXPOSED, 2),
            "MEM_EFFICIENT_OF_FLASH2": tuple(round(x, 2)
                                             for x in attention.MEM_EFFICIENT_OF_FLASH2)}


def fit_grouped(train: list[Row], priced: Sequence[Row] = ()) -> None:
    """``GROUPED_OF_GEMM`` per implementation family on ``train``'s rows of that family; a
    family with no rows borrows the fitted ones' effective rate at the shapes of its rows in
    ``priced`` (``borrowed_fraction``: nothing says it differs)."""
    fitted = {}
    for impl in roofline.GROUPED_OF_GEMM:
        fam = [r for r in train if domain(r) == "grouped" and grouped_family(r) == impl]
        if not fam:
            continue

        def grouped_loss(x: float, fam: list[Row] = fam, impl: str = impl) -> float:
            roofline.GROUPED_OF_GEMM[impl] = x
            return float(np.mean(ape(fam)))

        fitted[impl] = round(golden(grouped_loss, 0.2, 1.5, tol=0.005), 2)
        roofline.GROUPED_OF_GEMM[impl] = fitted[impl]
        if impl == "cutlass":  # PyTorch's small-group tile, then the fraction again with it
            small = [r for r in fam if any(pingpong_tile(r.gpu, op) for op in r.ops)]
            if small:
                def pingpong_loss(x: float, small: list[Row] = small) -> float:
                    grouped.PINGPONG_TILE_RATE = x
                    return float(np.mean(ape(small)))

                grouped.PINGPONG_TILE_RATE = round(golden(pingpong_loss, 0.2, 1.2, tol=0.005), 2)
                fitted[impl] = round(golden(grouped_loss, 0.2, 1.5, tol=0.005), 2)
                roofline.GROUPED_OF_GEMM[impl] = fitted[impl]
    for impl in roofline.GROUPED_OF_GEMM:
        if impl not in fitted and fitted:
            roofline.GROUPED_OF_GEMM[impl] = borrowed_fraction(impl, fitted, list(priced))


def pingpong_tile(gpu_name: str, op: Any) -> bool:
    """Whether ``op`` runs PyTorch's small-group CUTLASS tile (``grouped.torch_sm90_tile``)."""
    return (getattr(op, "grouped", "") == "cutlass"
            and roofline.smem_fed_mma(catalog_gpu(gpu_name))
            and grouped.torch_sm90_tile(op, 1.0)[0] == 64)


def leave_one_source_out(rows: list[Row]) -> list[tuple[str, int, float, dict[str, float]]]:
    """Each grouped-GEMM source's time MAPE with ``GROUPED_OF_GEMM`` refitted on all the other
    sources' grouped rows (the honest figure for a kernel library nobody showed the tool);
    the shipped constants are restored after."""
    grouped = [r for r in rows if domain(r) == "grouped"]
    shipped = dict(roofline.GROUPED_OF_GEMM)
    out = []
    try:
        for src in sorted({r.source for r in grouped}):
            roofline.GROUPED_OF_GEMM.update(shipped)
            test = [r for r in grouped if r.source == src]
            fit_grouped([r for r in grouped if r.source != src], test)
            out.append((src, len(test), float(np.mean(ape(test))),
                        dict(roofline.GROUPED_OF_GEMM)))
    finally:
        roofline.GROUPED_OF_GEMM.update(shipped)
    return out


def with_grouped_files(rows: list[Row], held: dict[str, set[str]]) -> list[Row]:
    """``rows`` and the ``GROUPED_FILES``' grouped rows; ``held`` (updated in place) holds out
    each file's shape families in ``kernel_rows``' hash order until 20 % of its rows are out."""
    extra = [r for r in load([Path(__file__).resolve().parent / f for f in GROUPED_FILES])
             if domain(r) == "grouped"]
    for src in sorted({r.source for r in extra}):
        fams: dict[str, int] = defaultdict(int)
        for r in extra:
            if r.source == src:
                fams[r.family] += 1
        total, out = sum(fams.values()), 0
        for fam in _hash_order(set(fams)):
            if out >= HOLD_OUT * total or len(fams) < 2:
                break
            held.setdefault("grouped", set()).add(f"{src}|{fam}")
            out += fams[fam]
    return rows + extra


def with_gpu_files(rows: list[Row], held: dict[str, set[str]]) -> list[Row]:
    """``rows`` and the ``HELD_OUT_GPU_FILES``' rows, each of those under ``GPU_FILE_SOURCE``,
    which ``held`` (updated in place) holds out of every kind: priced, never fitted."""
    extra = load([Path(__file__).resolve().parent / f for f in HELD_OUT_GPU_FILES])
    for r in extra:
        r.source = GPU_FILE_SOURCE
        held.setdefault(domain(r), set()).add(GPU_FILE_SOURCE)
    return rows + extra


def cell_part(r: Row, held: dict[str, set[str]]) -> str:
    """Where a row stands in the split: 'fit', 'held-out', 'held-out family' (a held-out
    shape family of a fitted source) or 'unfitted' (a fitted memory-bound row no constant
    reads)."""
    if r.source == GPU_FILE_SOURCE:
        return "held-out GPU"  # a file of a GPU nothing is fitted to (``HELD_OUT_GPU_FILES``)
    name = "held-out" if is_held(r, held) or domain(r) not in FITTED else "fit"
    if f"{r.source}|{r.family}" in held.get(domain(r), set()):
        name = "held-out family"  # of a source whose other families are fitted
    if name == "fit" and r.kind == "memory_bound" and not any(
            isinstance(op, Elementwise) and strided_share(op) > 0 for op in r.ops):
        name = "unfitted"  # no constant is fitted to this kind of memory-bound kernel
    return name


def kind_name(r: Row) -> str:
    return "attention" if r.kind.startswith("attention") else r.kind


def report(rows: list[Row], held: dict[str, set[str]]) -> list[tuple[str, str, str, int, float]]:
    """(kind, gpu, 'fit'|'held-out', n, MAPE) per group, with the constants as they stand."""
    errors = ape(rows)
    groups: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r, e in zip(rows, errors):
        groups[(kind_name(r), r.gpu, cell_part(r, held))].append(float(e))
    return [(k, g, p, len(v), float(np.mean(v))) for (k, g, p), v in sorted(groups.items())]


def above_burst_ceiling(r: Row) -> bool:
    """A dense GEMM row measured faster than its GPU's burst GEMM ceiling (the catalog's MAMF,
    ``GPUSpec.gemm_ceiling`` at ``sustained_of_burst`` 1): no kernel model capped there can
    reach it, whatever its tiles."""
    gemms = [op for op in r.ops if getattr(op, "grouped", None) == ""]
    if r.kind != "gemm" or len(gemms) != 1:
        return False
    gpu = dataclasses.replace(catalog_gpu(r.gpu), sustained_of_burst=1.0)
    return gemms[0].flops / r.measured_s > gpu.gemm_ceiling(gemms[0].dtype)


def by_source(rows: list[Row], held: dict[str, set[str]], kinds: set[str] | None = None
              ) -> list[tuple[str, str, str, str, str, int, float, float, int]]:
    """(kind, gpu, part, source, dtype, n, MAPE, mean signed error, rows above the burst
    ceiling) per group of ``kinds`` (all if None): which sources (``source_label``) and dtypes
    carry each per-GPU cell of ``report``. Signed error is predicted / measured - 1 of the time
    (positive: priced too slow)."""
    signed = predict(rows) / np.array([r.measured_s for r in rows]) - 1.0
    groups: dict[tuple[str, str, str, str, str], list[tuple[float, bool]]] = defaultdict(list)
    for r, e in zip(rows, signed):
        if kinds is None or kind_name(r) in kinds:
            dtype = "/".join(sorted({getattr(op, "dtype", "") for op in r.ops} - {""}))
            groups[(kind_name(r), r.gpu, cell_part(r, held), source_label(r), dtype)].append(
                (float(e), above_burst_ceiling(r)))
    return [(*key, len(v), float(np.mean([abs(e) for e, _ in v])),
             float(np.mean([e for e, _ in v])), sum(a for _, a in v))
            for key, v in sorted(groups.items())]


def attention_impl(r: Row) -> str:
    """The fused implementation an attention row measures ('' if none, or several)."""
    impls = {getattr(op, "impl", "") for op in r.ops} - {""}
    return impls.pop() if len(impls) == 1 else ""


def by_impl(rows: list[Row], held: dict[str, set[str]]
            ) -> list[tuple[str, str, str, str, int, float, float]]:
    """(kind, implementation, GPU, part, n, MAPE, mean signed error) of the fused attention
    rows per kernel (``attention_impl``) within each ``report`` cell: issue 17's per
    implementation and GPU figure, fit and held-out apart. Signed error as in ``by_source``."""
    attn = [r for r in rows if r.kind.startswith("attention") and attention_impl(r)]
    signed = predict(attn) / np.array([r.measured_s for r in attn]) - 1.0
    groups: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    for r, e in zip(attn, signed):
        groups[(r.kind, attention_impl(r), r.gpu, cell_part(r, held))].append(float(e))
    return [(*key, len(v), float(np.mean(np.abs(v))), float(np.mean(v)))
            for key, v in sorted(groups.items())]


def by_seq(rows: list[Row]) -> list[tuple[str, str, str, int, int, float, float, float]]:
    """(GPU, implementation, kind, sequence, n, mean signed error, min, max) of the attention
    rows per sequence length: whether a kernel's error drifts with the sequence, which a
    cell's MAPE hides (H100 backward: priced fast at 512 tokens, slow at 16-32K). Signed
    error as in ``by_source``; fit and held-out rows together."""
    attn = [r for r in rows if r.kind.startswith("attention") and attention_impl(r)
            and r.family[1:].isdigit()]
    signed = predict(attn) / np.array([r.measured_s for r in attn]) - 1.0
    groups: dict[tuple[str, str, str, int], list[float]] = defaultdict(list)
    for r, e in zip(attn, signed):
        groups[(r.gpu, attention_impl(r), r.kind, int(r.family[1:]))].append(float(e))
    return [(*key, len(v), float(np.mean(v)), min(v), max(v)) for key, v in sorted(groups.items())]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--markdown", action="store_true", help="print RESULTS.md tables")
    ap.add_argument("--no-fit", action="store_true", help="report the constants as they stand")
    ap.add_argument("--compute-db", choices=("none", "auto"), default="none",
                    help="price the report with the kernel database as trainsim validate "
                         "does (auto) or the roofline alone (none, what the fit uses)")
    # one report a run: each of these prints its table and stops (asking two was one silently)
    only = ap.add_mutually_exclusive_group()
    only.add_argument("--leave-one-source-out", action="store_true",
                      help="refit the grouped-GEMM constants without each source in turn")
    only.add_argument("--by-source", metavar="KINDS", nargs="?", const="",
                      help="per source and dtype within each kind/GPU/part cell (comma-separated "
                           "kinds as the tables name them, e.g. gemm,moe_block; all if omitted)")
    only.add_argument("--by-impl", action="store_true",
                      help="attention MAPE per kind, implementation, GPU and fit/held-out part")
    only.add_argument("--by-seq", action="store_true",
                      help="attention rows' mean signed error per GPU, implementation, kind and "
                           "sequence length")
    ap.add_argument("--errata", action="store_true",
                    help="apply benchmarks/kernels_errata.csv to the published file first")
    ap.add_argument("--no-gpu-files", action="store_true",
                    help="leave out the held-out GPU files (HELD_OUT_GPU_FILES)")
    ap.add_argument("--untimed-gaps", action="store_true",
                    help="price profiler-summed rows without launch gaps "
                         "(validate.kernels.UNTIMED_GAPS; not shipped)")
    ap.add_argument("--bwd-tail", choices=("on", "off"), default=None,
                    help="price FA2's causal backward tail in the roofline (on) or not (off); "
                         "default: as attention.FA2_BWD_TAIL stands")
    args = ap.parse_args(argv)
    saved_tail = attention.FA2_BWD_TAIL
    if args.bwd_tail is not None:
        attention.FA2_BWD_TAIL = args.bwd_tail == "on"
    try:
        return _run(args)
    finally:
        attention.FA2_BWD_TAIL = saved_tail


def _run(args: argparse.Namespace) -> int:
    if args.untimed_gaps:
        from trainsim.validate import kernels as vk

        vk.UNTIMED_GAPS = vk.PROFILER_SUMMED
    paths = [BUNDLED_DIR / f for f in FILES]
    if args.errata:  # cells their own sources contradict (benchmarks/errata.py)
        import tempfile

        from trainsim.validate.errata import corrected_file

        errata = Path(__file__).resolve().parent / "kernels_errata.csv"
        paths[0] = corrected_file(paths[0], errata, tempfile.mkdtemp())[0]
    rows = load(paths)
    kinds = None
    if args.by_source is not None:
        kinds = {k.strip() for k in args.by_source.split(",") if k.strip()} or None
        known = {kind_name(r) for r in rows}
        if kinds and kinds - known:
            print(f"error: --by-source: unknown kind(s) {', '.join(sorted(kinds - known))}; "
                  f"valid: {', '.join(sorted(known))}", file=sys.stderr)
            return 2
    if args.leave_one_source_out:
        print("| grouped-GEMM source left out | n | MAPE (time) | refitted GROUPED_OF_GEMM |"
              "\n|---|---|---|---|")
        for src, n, mape, consts in leave_one_source_out(rows):
            print(f"| {src} | {n} | {mape:.1%} | {consts} |")
        return 0
    held = split(rows)  # on the bundled files alone: the GPU files never move the split
    rows = with_grouped_files(rows, held)
    if not args.no_gpu_files:
        rows = with_gpu_files(rows, held)
    n_held = sum(is_held(r, held) for r in rows)
    print(f"{len(rows)} kernel rows; held out: {n_held} "
          f"({n_held / len(rows):.0%}); per kind:")
    for kind, srcs in sorted(held.items()):
        n = sum(domain(r) == kind for r in rows)
        k = sum(domain(r) == kind and is_held(r, held) for r in rows)
        print(f"  {kind}: {k}/{n} held out ({', '.join(sorted(srcs)) or '-'})")
    if not args.no_fit:
        for name, value in fit(rows, held).items():
            print(f"  {name} = {value}")
    global REPORT_DB
    REPORT_DB = None if args.compute_db == "none" else args.compute_db
    if REPORT_DB:
        print(f"  priced with --compute-db {REPORT_DB} (the fit, if any, used the roofline)")
    if args.by_impl:
        print("\n| kind | implementation | GPU | rows | n | MAPE (time) | signed |"
              "\n|---|---|---|---|---|---|---|")
        for kind, impl, g, part, n, mape, mean in by_impl(rows, held):
            print(f"| {kind} | {impl} | {g} | {part} | {n} | {mape:.1%} | {mean:+.1%} |")
        return 0
    if args.by_seq:
        print("\n| GPU | implementation | kind | seq | n | signed | min | max |"
              "\n|---|---|---|---|---|---|---|---|")
        for g, impl, kind, seq, n, mean, lo, hi in by_seq(rows):
            print(f"| {g} | {impl} | {kind} | {seq} | {n} | {mean:+.1%} | {lo:+.1%} | {hi:+.1%} |")
        return 0
    if args.by_source is not None:
        print("\n| kind | GPU | rows | source | dtype | n | MAPE (time) | signed | above MAMF |"
              "\n|---|---|---|---|---|---|---|---|---|")
        for kind, gpu, where, src, dtype, n, mape, mean, above in by_source(rows, held, kinds):
            print(f"| {kind} | {gpu} | {where} | {src} | {dtype} | {n} | {mape:.1%} | "
                  f"{mean:+.1%} | {above} |")
        return 0
    table = report(rows, held)
    if args.markdown:
        print("\n| kind | GPU | rows | n | MAPE (time) |\n|---|---|---|---|---|")
        for kind, gpu, part, n, mape in table:
            print(f"| {kind} | {gpu} | {part} | {n} | {mape:.1%} |")
    else:
        for kind, gpu, part, n, mape in table:
            print(f"{kind:14s} {gpu:16s} {part:9s} n={n:4d} MAPE {mape:6.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
