"""Where a karpathy/llm.c row's predicted step goes, as the llm-c profile reads it and as the
no-profile fallback (Megatron-core's mechanisms) read it before (issue 17, 61st session, llmc61;
a diagnostic: nothing here feeds trainsim).

    PYTHONPATH=src:benchmarks python benchmarks/llmc61_parts.py            # the 124M row, ~5 s
    PYTHONPATH=src:benchmarks python benchmarks/llmc61_parts.py ROW_ID ...  # rows of training_llmc.csv

For each reading: the step (and its error), the engine's breakdown (compute, exposed
communication, optimizer, other), and one step's kernels by kind, each op priced alone
(``Pricer.compute.explain``) and summed over the rank's layers, head and embedding and its
micro-batches: GEMMs, attention, the loss (cross-entropy forward and backward), norms, other
memory-bound kernels; then what ``Pricer.price`` charges beyond the kernels (the GPU's waits for
the host, exposed collectives inside a pass). The blind reading is the row with its framework
cell replaced by a name no profile answers to (``benchmarks/blind.py``'s rule).
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from trainsim.pricing import Pricer
from trainsim.simulator import simulate
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.head import (
    embedding_backward,
    embedding_forward,
    head_backward,
    head_forward,
)
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Attention, Comm, Gemm, Op
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

FILE = Path(__file__).with_name("training_llmc.csv")
DEFAULT = ("llmc-gpt2-124m-a100-8",)
KINDS = ("gemm", "attention", "loss", "norm", "other")


def kind(op: Op) -> str:
    """The kind of kernel ``op`` is (``KINDS``)."""
    if isinstance(op, Gemm):
        return "gemm"
    if isinstance(op, Attention):
        return "attention"
    if op.name.startswith("cross_entropy"):
        return "loss"
    return "norm" if "norm" in op.name else "other"


def step_parts(cfg) -> tuple[dict[str, float], float, float]:
    """({kind: seconds a step}, what ``Pricer.price`` charges a step beyond the kernels, the
    kernels' seconds a step): one pass of each section's ops, times its layers and the
    micro-batches (one pipeline stage: these rows run pp 1)."""
    pricer, sh = Pricer(cfg), shard_of(cfg)
    lf = layer_forward(cfg, sh, moe=False)
    lb = layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)
    hf = head_forward(cfg, sh)
    layers = cfg.model.num_layers
    sections = [(lf, layers), (lb, layers), (hf, 1), (head_backward(cfg, sh, hf), 1),
                (embedding_forward(cfg, sh), 1), (embedding_backward(cfg, sh), 1)]
    micro = cfg.training.global_batch_size // (cfg.training.micro_batch_size * cfg.dp)
    by = dict.fromkeys(KINDS, 0.0)
    charged = kernels = 0.0
    for ops, n in sections:
        for op in ops:
            if not isinstance(op, Comm):
                t = pricer.compute.explain(op)[0] * n * micro
                by[kind(op)] += t
                kernels += t
        charged += pricer.price(ops).duration_s * n * micro
    return by, charged - kernels, kernels


def reading(row: dict[str, str], label: str) -> list[str]:
    res = predict_training_row(row)
    if res.predicted is None:
        return [f"  {label}: {res.error}"]
    cfg = row_config(row, res.chosen)
    sim = simulate(cfg)
    by, beyond, kernels = step_parts(cfg)
    fw = f"{cfg.training.framework} {cfg.training.framework_version or ''}".strip()
    lines = [f"  {label} ({fw}): {res.predicted:.4f} s ({100 * (res.predicted / res.measured - 1):+.1f} %)",
             "    engine: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in sim.breakdown.items()),
             f"    kernels a step {kernels * 1e3:.1f} ms: " + ", ".join(
                 f"{k} {v * 1e3:.1f} ({100 * v / kernels:.0f} %)" for k, v in by.items()),
             (f"    charged beyond the kernels (host waits, exposed in-pass collectives): "
              f"{beyond * 1e3:.2f} ms")]
    return lines


def main(argv: list[str]) -> int:
    with open(FILE, newline="") as fh:
        rows = {r["id"]: r for r in csv.DictReader(fh)}
    for row_id in argv or DEFAULT:
        row = rows[row_id]
        print(f"{row_id}: measured {float(row['measured_iteration_s']):.3f} s")
        print("\n".join(reading(row, "named")))
        print("\n".join(reading({**row, "framework": "llmc61-unknown"}, "blind")), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
