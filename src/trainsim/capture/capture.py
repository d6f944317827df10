"""Capture one training step of a model on the meta device and summarise it by section.

A section is the embedding, one captured decoder layer (``model.layers.0``), the head (final
norm, output projection, loss) or ``other`` (rotary tables, masks). One layer of each kind
(dense, MoE) is captured; totals for the full model scale it to every layer.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from trainsim.capture.kernels import KernelRecord
from trainsim.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass
class Capture:
    """The recorded kernels of one forward + backward of a 1-2 layer copy of the model."""

    source: str
    batch: int
    seq: int
    dtype: str
    kernels: list[KernelRecord]
    layers: list[str]
    """Captured decoder layers, by dotted path."""
    moe_layers: set[str]
    full_num_layers: int
    activation_bytes: dict[str, float]
    """Per captured layer: bytes saved for backward per micro-batch (storages, deduplicated)."""
    saved: dict[str, list[tuple[str, tuple[int, ...], str, int]]]
    """Per captured layer: (module, shape, dtype, bytes) of each saved storage."""
    patches: tuple[str, ...]
    capture_s: float
    hf_config: dict | None = None
    full_dense_layers: int = 0
    """Leading dense layers of the full model when it mixes dense and MoE layers."""
    sections: dict[int, str] = field(default_factory=dict)
    """Kernel index -> section (embedding, a layer path, head, other)."""

    # -- views -------------------------------------------------------------------------------
    def section_kernels(self, section: str, phase: str | None = None) -> list[KernelRecord]:
        return [k for k in self.kernels if self.sections[k.index] == section
                and (phase is None or k.phase == phase)]

    def layer(self, moe: bool) -> str:
        """The captured layer path of the requested kind."""
        for path in self.layers:
            if (path in self.moe_layers) == moe:
                return path
        kind = "MoE" if moe else "dense"
        raise ConfigError(f"the captured model has no {kind} layer")

    def layer_flops(self, path: str) -> float:
        """Matmul + attention FLOPs of one layer, forward and backward."""
        return sum(k.flops for k in self.section_kernels(path))

    @property
    def unmapped(self) -> list[str]:
        """Ops whose kind is unknown: priced as memory-bound, FLOPs not counted."""
        return sorted({k.op for k in self.kernels if k.kind == "unknown"})

    def layer_counts(self) -> dict[str, int]:
        """Captured layer path -> how many layers of the full model it stands for."""
        dense = [p for p in self.layers if p not in self.moe_layers]
        moe = [p for p in self.layers if p in self.moe_layers]
        counts = {p: 0 for p in self.layers}
        if dense and moe:
            counts[dense[0]] = self.full_dense_layers
            counts[moe[0]] = self.full_num_layers - self.full_dense_layers
        else:
            counts[self.layers[0]] = self.full_num_layers
        return counts

    def model_flops(self) -> float:
        """FLOPs of one micro-batch's forward + backward through the full-depth model."""
        by: dict[str, float] = defaultdict(float)
        for k in self.kernels:
            by[self.sections[k.index]] += k.flops
        layers = sum(n * by[p] for p, n in self.layer_counts().items())
        return by["embedding"] + by["head"] + by["other"] + layers


def _sections(rec_kernels: list[KernelRecord], layers: list[str], embedding: set[str]
              ) -> dict[int, str]:
    inside = lambda m, p: m == p or m.startswith(p + ".")
    out: dict[int, str] = {}
    first_layer = {"forward": None, "backward": None}
    last_layer = {"forward": None, "backward": None}
    for k in rec_kernels:
        for p in layers:
            if inside(k.module, p):
                out[k.index] = p
                break
        else:
            if any(inside(k.module, e) for e in embedding):
                out[k.index] = "embedding"
            continue
        first_layer[k.phase] = first_layer[k.phase] if first_layer[k.phase] is not None else k.index
        last_layer[k.phase] = k.index
    for k in rec_kernels:
        if k.index in out:
            continue
        lo, hi = first_layer[k.phase], last_layer[k.phase]
        if k.phase == "forward":
            out[k.index] = "head" if hi is not None and k.index > hi else "other"
        else:  # backward runs the head first
            out[k.index] = "head" if lo is not None and k.index < lo else "other"
    return out


def capture(source: str | Path, batch: int = 1, seq: int = 2048, dtype: str = "bf16",
            attention: str = "sdpa", fuse: bool = True) -> Capture:
    """Capture ``source``: a Hugging Face ``config.json`` (file or directory) or
    ``package.module:factory``."""
    import torch

    from trainsim.capture.inputs import is_hf_config
    from trainsim.capture.models import build_factory, build_hf
    from trainsim.capture.recorder import Recorder

    t0 = time.perf_counter()
    text = str(source)
    if ":" in text and not Path(text).exists():
        built = build_factory(text, batch, seq)
    elif is_hf_config(text):
        built = build_hf(text, batch, seq, dtype, attention, fuse)
    else:
        raise ConfigError(f"{text}: not a Hugging Face config.json nor package.module:factory")
    model = built.module
    if not built.layers_path:
        raise ConfigError(f"{text}: no repeated decoder layers (nn.ModuleList) found")
    layer_list = getattr(model.get_submodule(built.layers_path), "__len__", lambda: 0)()
    layers = [f"{built.layers_path}.{i}" for i in range(layer_list)]
    embedding = {name for name, m in model.named_modules()
                 if isinstance(m, torch.nn.Embedding) and not any(
                     name.startswith(p + ".") for p in layers)}
    rec = Recorder(model, fused_attention=attention == "sdpa")
    with rec:
        loss = built.run(model)
        loss.backward()
    moe = {p for p in layers
           if any(k.module.startswith(p + ".") and k.kind == "gemm" and len(k.inputs[0].shape) == 3
                  and ".experts" in k.module + "." for k in rec.kernels)}
    activation, saved = {}, {}
    for p in layers:
        total, items = rec.activation_bytes(p)
        activation[p] = total
        saved[p] = [(s.module, s.shape, s.dtype, s.nbytes) for s in items]
    cap = Capture(source=built.source, batch=batch, seq=seq, dtype=dtype, kernels=rec.kernels,
                  layers=layers, moe_layers=moe, full_num_layers=built.full_num_layers,
                  activation_bytes=activation, saved=saved, patches=built.patches,
                  capture_s=time.perf_counter() - t0, hf_config=built.hf_config,
                  full_dense_layers=built.full_dense_layers)
    cap.sections = _sections(rec.kernels, layers, embedding)
    log.info("captured %s: %d kernels in %.1f s", text, len(rec.kernels), cap.capture_s)
    return cap
