"""Where a validated row's predicted time goes by kind of work, and how much each kind would
have to grow to close the row's gap to its measurement.

    python benchmarks/row_kinds.py [--errata] [--file TRAINING.csv] [ROW_ID ...]

With no ids: the megatron-bridge and megatron-core rows of the public file that miss by more
than 8 %. For each row, one decoder layer (the last layer's kind: an MoE layer in an MoE
model), the head and the embedding are priced as ``Pricer.price_ops`` charges them (the
segments of the compute stream: kernels, the exposed share of each collective, the GPU
waiting for the host), each segment filed under the kind of the op behind it: dense GEMM,
grouped GEMM (the MoE experts), attention, memory-bound kernel, host wait, and an exposed
collective by its process group. The heaviest pipeline stage's work per micro-batch times the
micro-batches per rank is the steady part; ``rest`` is the prediction less that (pipeline
bubble, exposed data-parallel reduction, optimizer step, and for a combined-1F1B run the
difference between its pair walk and the layer priced alone). ``need`` is the growth of one
kind alone that would close the gap, (measured - predicted) / that kind's seconds: a kind
whose need is far beyond what the kernel measurements allow (``trainsim validate
kernels_published.csv``) cannot hold the gap alone.

``--errata`` applies ``benchmarks/training_errata.csv`` to the public file first (as
``layer_prices.py`` does); by default rows are priced as the scoreboard prices them. A check,
not an input: nothing here feeds trainsim.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile

from trainsim.pricing import HOST, Pricer
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.errata import corrected_file
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.head import (
    embedding_backward,
    embedding_forward,
    head_backward,
    head_forward,
)
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Attention, Comm, Elementwise, Gemm, Op
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

PUBLIC = str(BUNDLED_DIR / "training_public.csv")
FRAMEWORKS = ("megatron-bridge", "megatron-core")
MISS = 0.08
KINDS = ("gemm", "grouped_gemm", "attention", "memory_bound", "host")


def kind_of(category: str, op: Op | None) -> str:
    """The kind a charged segment is filed under."""
    if category == HOST:
        return "host"
    if isinstance(op, Gemm):
        return "grouped_gemm" if op.grouped and op.grouped != "userbuffers" else "gemm"
    if isinstance(op, Attention):
        return "attention"
    if isinstance(op, Comm):
        return f"exposed_{op.group}"
    if isinstance(op, Elementwise):
        return "memory_bound"
    return "other"


def charged_kinds(pricer: Pricer, ops: list[Op]) -> dict[str, float]:
    """Seconds of the list's charged segments by kind (``kind_of``)."""
    priced, order, at = pricer.price_at(ops)
    out: dict[str, float] = {}
    for (cat, dur, _), op, i in zip(priced.segments, order, at):
        k = kind_of(cat, ops[i] if i >= 0 else op)
        out[k] = out.get(k, 0.0) + dur
    return out


def _add(into: dict[str, float], part: dict[str, float], times: float = 1.0) -> None:
    for k, v in part.items():
        into[k] = into.get(k, 0.0) + v * times


def decompose(row: dict[str, str]) -> dict[str, object] | None:
    """The row's prediction by kind (module docstring); None where it is not predicted."""
    res = predict_training_row(row)
    if res.error or res.predicted is None:
        return None
    cfg = row_config(row, res.chosen)
    pricer, sh = Pricer(cfg), shard_of(cfg)
    moe = cfg.model.is_moe_layer(cfg.model.num_layers - 1)
    lf = layer_forward(cfg, sh, moe=moe)
    lb = layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)
    hf = head_forward(cfg, sh)
    layer: dict[str, float] = {}
    _add(layer, charged_kinds(pricer, lf))
    _add(layer, charged_kinds(pricer, lb))
    first: dict[str, float] = {}
    _add(first, charged_kinds(pricer, embedding_forward(cfg, sh)))
    _add(first, charged_kinds(pricer, embedding_backward(cfg, sh)))
    last: dict[str, float] = {}
    _add(last, charged_kinds(pricer, hf))
    _add(last, charged_kinds(pricer, head_backward(cfg, sh, hf)))
    counts = cfg.stage_layer_counts
    stages = []
    for s, n in enumerate(counts):
        work: dict[str, float] = {}
        _add(work, layer, n)
        if s == 0:
            _add(work, first)
        if s == len(counts) - 1:
            _add(work, last)
        stages.append(work)
    heaviest = max(stages, key=lambda w: sum(w.values()))
    m = cfg.training.global_batch_size // (cfg.training.micro_batch_size * cfg.dp)
    kinds = {k: v * m for k, v in heaviest.items()}
    kinds["rest"] = res.predicted - sum(kinds.values())
    return {"id": row["id"], "measured": res.measured, "predicted": res.predicted,
            "micro_batches": m, "kinds": kinds}


def _rows(path: str, errata: bool, ids: list[str]) -> list[dict[str, str]]:
    with tempfile.TemporaryDirectory() as tmp:
        src = path
        if errata:
            src = corrected_file(path, "benchmarks/training_errata.csv", tmp)[0] or path
        with open(src, newline="") as fh:
            rows = list(csv.DictReader(fh))
    if ids:
        by_id = {r["id"]: r for r in rows}
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise SystemExit(f"not in {path}: {', '.join(missing)}")
        return [by_id[i] for i in ids]
    return [r for r in rows if r.get("framework") in FRAMEWORKS]


def table(results: list[dict[str, object]]) -> list[str]:
    """One line per row: measured, signed error, each kind's seconds and its ``need``."""
    lines = []
    for r in results:
        meas, pred = float(r["measured"]), float(r["predicted"])  # type: ignore[arg-type]
        gap = meas - pred
        kinds: dict[str, float] = r["kinds"]  # type: ignore[assignment]
        cells = []
        for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]):
            if abs(v) < 0.005 * pred:
                continue
            need = f" ({100 * gap / v:+.0f} %)" if k != "rest" and v > 0 else ""
            cells.append(f"{k} {v:.2f}{need}")
        lines.append(f"{r['id']}: measured {meas:.3f} s, predicted {pred:.3f} s "
                     f"({100 * (pred / meas - 1):+.1f} %), {r['micro_batches']} micro-batches; "
                     + ", ".join(cells))
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ids", nargs="*")
    ap.add_argument("--file", default=PUBLIC)
    ap.add_argument("--errata", action="store_true")
    args = ap.parse_args(argv)
    results = []
    for row in _rows(args.file, args.errata, args.ids):
        r = decompose(row)
        if r is None:
            print(f"{row['id']}: not predicted")
            continue
        miss = abs(float(r["predicted"]) / float(r["measured"]) - 1)  # type: ignore[arg-type]
        if args.ids or miss > MISS:
            results.append(r)
    print("\n".join(table(results)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
