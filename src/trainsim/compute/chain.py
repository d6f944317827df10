"""The compute-model chain: measured database (on this or another GPU), then the roofline."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

from trainsim.compute.database import KernelDatabase
from trainsim.compute.roofline import RooflineModel
from trainsim.config import GPUSpec
from trainsim.workload.ops import Attention, Elementwise, Gemm

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "kernels"
BUNDLED = {"h100-sxm-80gb": "h100-sxm-80gb.json", "h200-sxm-141gb": "h200-sxm-141gb.json"}
"""Measured databases shipped with trainsim, by the GPU they were measured on: each is a
``trainsim profile`` file as written on that GPU (its ``command`` field; the H100's converted
by ``benchmarks/bundle_kernel_db.py``, the H200's from ``benchmarks/h200_2026-11-27/``; each
``embedding.bwd`` record of both labelled with the table it zeroed by
``benchmarks/emb46_relabel.py``)."""


class ChainModel:
    """Prices an op with the first model that knows it and records which one did.

    With a database, an op of a kind it measured is the target GPU's analytic time times the
    database's measured-over-modelled ratio for that op (``compute.database``): the measured
    time itself on the measured GPU at its boost clock, scaled by each kernel's bound on any
    other GPU or clock."""

    name = "chain"

    def __init__(self, gpu: GPUSpec, db: KernelDatabase | None = None,
                 loop_toward: float | None = None, twin: ChainModel | None = None) -> None:
        self.gpu = gpu
        self.db = db
        self.twin = twin
        """The chain of a database measured on a GPU with the same SMs (``same_sms``), read for
        the kinds of kernel ``db`` has no record of (``compute_model_for``)."""
        self.roofline = RooflineModel(gpu, loop_toward)
        # an op a record prices is read against the tiles the records' library ran
        # (``database.TRACED_TILES``) and FA2's backward tail (``RECORD_BWD_TAIL``), as the
        # record was
        self.db_roofline = RooflineModel(gpu, loop_toward, db.tiles, db.analytic.bwd_tail) \
            if db is not None and (db.tiles or db.analytic.bwd_tail) else self.roofline
        self.sources: Counter[str] = Counter()
        self._cache: dict[object, float] = {}

    def time(self, op: Gemm | Attention | Elementwise) -> float:
        t = self._cache.get(op)
        if t is None:
            t, source = self.explain(op)
            self._cache[op] = t
            self.sources[source] += 1
        return t

    def explain(self, op: Gemm | Attention | Elementwise) -> tuple[float, str]:
        """(seconds, which model priced it): the database, else the twin's, else the roofline."""
        hit = self.measured(op)
        if hit is None and self.twin is not None:
            hit = self.twin.measured(op)
        return hit if hit is not None else (self.roofline.time(op), "roofline")

    def measured(self, op: Gemm | Attention | Elementwise) -> tuple[float, str] | None:
        """(seconds, source) from this chain's own database, or None where it has no record of
        the op's kind."""
        if self.db is not None:
            hit = self.db.lookup(op)
            if hit is not None:
                t, how = hit
                gaps = self.db.gaps(op)
                loop = self.roofline.loop_toward
                if self.gpu == self.db.spec and loop == self.db.analytic.loop_toward:
                    return t + gaps, f"database ({how})"
                model = self.db_roofline.time(op)
                # the record's ratio to the roofline it is read against (the burst one; with
                # ``database.RECORD_LOOP`` the loop it was timed in), applied to this GPU's
                # roofline at its clock: another GPU, the sustained clock, a kernel benchmark's
                # loop (``loop_clock_factor``) or, read as a loop, a call on an idle board
                modelled = self.db.modelled(op)
                model -= gaps
                scale = model / modelled
                where = "" if self.gpu.name == self.db.gpu else f", scaled from {self.db.gpu}"
                if loop is not None and scale != 1.0:
                    where += ", benchmark loop"
                elif self.db.analytic.loop_toward is not None and scale != 1.0 \
                        and self.gpu.sustained_of_burst == 1.0:
                    where += ", burst clock"
                if isinstance(op, Elementwise) and t > modelled and same_sms(self.gpu, self.db.spec):
                    return t - modelled + model + gaps, f"database ({how}{where})"
                return t * scale + gaps, f"database ({how}{where})"
        return None


def same_sms(a: GPUSpec, b: GPUSpec) -> bool:
    """Whether two GPUs have the same streaming multiprocessors at the same clock: the same
    compute capability, SM count and fp32 peak (SMs x fp32 lanes x boost clock), as an H100 SXM
    and an H200 SXM (both GH100, 132 SMs, 66.9 TFLOP/s fp32) but not an H100 NVL (its lower
    clock: 60 TFLOP/s).

    Between two such GPUs a memory-bound record's time beyond its modelled HBM traffic does not
    scale with HBM bandwidth: it is spent in the SMs (single-element loads of strided views,
    index arithmetic, reductions, atomics), which are the same. Only the modelled share moves.
    Measured (``benchmarks/kernel_db_cross.py``, the H100's and the H200's ``trainsim profile``
    databases, one software stack): eager RoPE and SwiGLU reach 1.3-1.7 TB/s on the H100 and run
    only 1.04-1.09x faster on the H200, whose HBM is 1.43x faster; a residual add at 3.0 TB/s
    runs 1.40x faster. Scaling the whole record by the bandwidth (SimAI's ratio rule) prices the
    H100's 97 shared memory-bound records on the H200 15.4 % too fast (MAPE 15.2 %) and the
    H200's 141 on the H100 16.0 % too slow (16.7 %); holding the unmodelled share leaves -2.4 %
    and -0.3 % (MAPE 10.5 and 9.6 %). GPUs with other SMs keep the ratio rule: no measurement
    here says how that share moves with SM count, lanes and clock."""
    return (a.compute_capability is not None and a.compute_capability == b.compute_capability
            and a.num_sms == b.num_sms and a.peak_flops.get("fp32") == b.peak_flops.get("fp32"))


def bundled_database(gpu: GPUSpec) -> Path | None:
    """The database shipped for ``gpu`` (by catalog name), if one was measured."""
    name = BUNDLED.get(gpu.name)
    return DATA_DIR / name if name and (DATA_DIR / name).exists() else None


def compute_model_for(gpu: GPUSpec, db_path: str | None,
                      lookup_gpu: Callable[[str], GPUSpec],
                      loop_toward: float | None = None) -> ChainModel:
    """The chain for ``gpu``: an explicit database path (measured on any GPU: scaled to this
    one), 'auto' (the database bundled for this GPU under trainsim/data/kernels/, if one was
    measured: ``BUNDLED``, the H100 SXM and the H200 SXM), or None (the analytic model only).

    'auto' does not scale the H100's database to other GPUs: on the public training file that
    made the 138 rows worse (MAPE 10.06 % with the H100's own rows priced from it, 10.27 % with
    every NVIDIA GPU scaled from it; benchmarks/RESULTS.md), because the database's GEMMs run
    ~5 % faster than an independent measurement of the same shapes on the same GPU model
    (``kernels_h100_measured.csv``; the records agree with their own run's in-layer kernel
    times: ``compute.database``) and the scaling carries that offset along. Name the file to scale it.
    With 'auto', a kind of kernel the GPU's own records lack is read from the same-SM GPU's
    database (``twin_database``).
    ``loop_toward``: the roofline of a kernel benchmark's loop (``roofline.loop_clock_factor``).
    A database's records were timed one call at a time behind a sleep kernel, the board idle
    (its burst clock: ``compute.database``), so a record prices a looped row as the roofline's
    loop slows it: the record times the loop's over the burst roofline (1 for every kernel but a
    GEMM). Training never passes a loop."""
    path: Path | None = None
    if db_path == "auto":
        path = bundled_database(gpu)
    elif db_path:
        path = Path(db_path)
    if path is None:
        return ChainModel(gpu, loop_toward=loop_toward)
    twin = twin_database(gpu, lookup_gpu) if db_path == "auto" else None
    return ChainModel(gpu, _load(str(path), lookup_gpu), loop_toward,
                      None if twin is None else ChainModel(gpu, twin, loop_toward))


def twin_database(gpu: GPUSpec, lookup_gpu: Callable[[str], GPUSpec]) -> KernelDatabase | None:
    """The database bundled for another GPU with the same SMs as ``gpu`` (``same_sms``: the H200
    SXM's for the H100 SXM and back), read where ``gpu``'s own bundled database has no record
    of an op's kind; None for a GPU with no database of its own (``compute_model_for`` does not
    scale a database to a GPU that has none).

    Without it the two boards price one kernel from two models: the H200's database times
    FlashAttention-2 (``flash2``: PyTorch SDPA's FLASH_ATTENTION backend, ``profile.kernels``)
    and fp8 fast-accumulation GEMMs, the H100's does not, so the H100 priced those from the
    roofline and the H200 from its records, which at a gpt3-5b layer's shape (4 heads, seq
    8192) price FA2 at 0.76x (forward) and 0.68x (backward) the roofline's rate: that step (tp 8,
    pp 4, FA2 with dropout) was 4 % slower on the H200 than on the H100
    (``benchmarks/h200inv62.py``). A record on the same SMs is the nearer measurement: the
    chain scales it to ``gpu`` as it scales any record (``ChainModel.measured``)."""
    if bundled_database(gpu) is None:
        return None
    for name, file in BUNDLED.items():
        if name == gpu.name or not (DATA_DIR / file).exists():
            continue
        other = lookup_gpu(name)
        if same_sms(gpu, other):
            return _load(str(DATA_DIR / file), lookup_gpu)
    return None


_LOADED: dict[tuple[str, float], KernelDatabase] = {}


def _load(path: str, lookup_gpu: Callable[[str], GPUSpec]) -> KernelDatabase:
    """A database is read once per process (keyed by path and modification time)."""
    key = (path, Path(path).stat().st_mtime if Path(path).exists() else 0.0)
    db = _LOADED.get(key)
    if db is None:
        db = _LOADED[key] = KernelDatabase.load(path, lookup_gpu)
    return db
