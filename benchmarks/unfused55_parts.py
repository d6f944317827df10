"""DeepSeek-V3 on GB200 with Transformer Engine's unfused attention, taken apart (a diagnostic:
nothing here feeds trainsim; 55th session, unfused55).

    PYTHONPATH=src python benchmarks/unfused55_parts.py     # ~20 s

1. For training_dgxc2505's three bf16 GB200 rows (NeMo 25.04: TE 2.2 runs MLA's (192, 128)
   heads unfused on Blackwell, ``catalog.te_attention``) and Megatron-core's GB200 ladder
   baseline (the same model and GPU, cuDNN attention, MXFP8, TP 1): the measured and predicted
   time per layer pass (one layer's forward, recompute and backward of one micro-batch: the
   step over micro-batches x the heaviest stage's layers), the attention's share of the
   prediction (core, recompute, TE's mask) and the factor on the attention alone that would
   close the row. A gap the attention carries would be larger where the attention is larger;
   the rows miss by the same time per layer pass whatever their attention.
2. The unfused core of the 4k row priced two ways: as trainsim prices it (FLOPs at the GEMM
   ceiling plus every score byte at HBM speed) and kernel by kernel (each batched GEMM of
   ``Attention.score_gemms`` by the GEMM model, the softmax's bytes apart): the first is not
   the cheaper.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from layer_prices import chosen_config

from trainsim.compute.roofline import HBM_EFFICIENCY, RooflineModel
from trainsim.pricing import Pricer
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Attention
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of
from trainsim.workload.te_unfused import CORE_ATTENTION_OPS

HERE = Path(__file__).resolve().parent
ROWS = (("dgxc2505-deepseek-v3-bf16-gb200-128", str(HERE / "training_dgxc2505.csv")),
        ("dgxc2505-deepseek-v3-bf16-gb200-256", str(HERE / "training_dgxc2505.csv")),
        ("dgxc2505-deepseek-v3-bf16-gb200-512", str(HERE / "training_dgxc2505.csv")),
        ("mcore2511-dsv3-gb200-256-01-baseline", str(HERE / "training_mcore_dsv3_gb200.csv")))


def _attention_op(op: object) -> bool:
    name = getattr(op, "name", "")
    return isinstance(op, Attention) or name.removeprefix("recompute.").split(".")[0] \
        in CORE_ATTENTION_OPS


def layer_pass(row_id: str, path: str) -> dict[str, float]:
    """Measured and predicted seconds per layer pass, and the attention's priced part of it."""
    chosen = chosen_config([row_id, path])
    assert chosen is not None, row_id
    res, cfg = chosen
    sh, pricer = shard_of(cfg), Pricer(cfg)
    fwd = layer_forward(cfg, sh, moe=True)
    ops = fwd + layer_recompute(cfg, sh, fwd, whole=False) + backward_of(fwd, sh)
    attention = sum(pricer.compute.explain(op)[0] for op in ops if _attention_op(op))
    micro = cfg.training.global_batch_size // (cfg.training.micro_batch_size * cfg.dp)
    passes = micro * max(cfg.stage_layer_counts)
    return {"measured": res.measured / passes, "predicted": res.predicted / passes,
            "attention": attention, "err": res.predicted / res.measured - 1.0,
            "impl": cfg.training.attention}


def core_two_ways() -> tuple[float, float]:
    """The 4k row's unfused core, forward and backward, as priced and kernel by kernel."""
    chosen = chosen_config(list(ROWS[0]))
    assert chosen is not None
    _, cfg = chosen
    sh = shard_of(cfg)
    core = next(op for op in layer_forward(cfg, sh, moe=True) if isinstance(op, Attention))
    model = RooflineModel(cfg.cluster.gpu)
    bw = cfg.cluster.gpu.hbm_bw_Bps * HBM_EFFICIENCY
    priced = split = 0.0
    for op in (core, backward_of([core], sh)[0]):
        priced += model.time(op)
        scores = op.batch * op.heads * op.pairs
        softmax = (6.0 if op.backward else 4.0) * scores  # the fused softmax's own bytes
        split += sum(model.time(g) for g in op.score_gemms()) + softmax / bw
    return priced, split


def main() -> int:
    print("| row | attention | err % | measured / predicted ms a layer pass | attention ms "
          "| missing ms | attention factor to close |")
    print("|---|---|---|---|---|---|---|")
    for row_id, path in ROWS:
        r = layer_pass(row_id, path)
        missing = r["measured"] - r["predicted"]
        factor = 1.0 + missing / r["attention"]
        print(f"| {row_id} | {r['impl']} | {100 * r['err']:+.1f} | {1e3 * r['measured']:.1f} / "
              f"{1e3 * r['predicted']:.1f} | {1e3 * r['attention']:.2f} | {1e3 * missing:.1f} | "
              f"x{factor:.2f} |")
    priced, split = core_two_ways()
    print(f"\nunfused core (forward + backward) of {ROWS[0][0]}: priced {1e3 * priced:.2f} ms, "
          f"kernel by kernel {1e3 * split:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
