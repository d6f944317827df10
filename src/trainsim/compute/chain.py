"""The compute-model chain: measured database (on this or another GPU), then the roofline."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from trainsim.compute.database import KernelDatabase, cross_gpu_scale
from trainsim.compute.roofline import RooflineModel
from trainsim.config import GPUSpec
from trainsim.workload.ops import Attention, Elementwise, Gemm

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "kernels"


class ChainModel:
    """Prices an op with the first model that knows it and records which one did."""

    name = "chain"

    def __init__(self, gpu: GPUSpec, db: KernelDatabase | None = None,
                 db_gpu: GPUSpec | None = None) -> None:
        self.gpu = gpu
        self.db = db
        self.db_gpu = db_gpu
        self.roofline = RooflineModel(gpu)
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
        """(seconds, which model priced it)."""
        if self.db is not None and self.db_gpu is not None:
            hit = self.db.lookup(op)
            if hit is not None:
                t, how = hit
                scale = cross_gpu_scale(op, self.db_gpu, self.gpu)
                where = "" if scale == 1.0 else f", scaled from {self.db_gpu.name}"
                return t * scale, f"database ({how}{where})"
        return self.roofline.time(op), "roofline"


def compute_model_for(gpu: GPUSpec, db_path: str | None, lookup_gpu) -> ChainModel:
    """The chain for ``gpu``: an explicit database path, 'auto' (a bundled database for this
    GPU under trainsim/data/kernels/, if one was measured), or None (roofline only)."""
    path: Path | None = None
    if db_path == "auto":
        candidate = DATA_DIR / f"{gpu.name}.json"
        path = candidate if candidate.exists() else None
    elif db_path:
        path = Path(db_path)
    if path is None:
        return ChainModel(gpu)
    db = KernelDatabase.load(path)
    return ChainModel(gpu, db, lookup_gpu(db.gpu))
