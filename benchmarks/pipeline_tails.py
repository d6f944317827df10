"""How long each pipeline rank of one validated row idles after its last backward pass (the
cool-down tail), from the engine's own timeline, and what Megatron's
``defer_embedding_wgrad_compute`` could hide there: a what-if, since trainsim does not price the
deferral.

    python benchmarks/pipeline_tails.py ROW_ID [TRAINING.csv] [--defer N]

Megatron-core (``tensor_parallel/layers.py``, ``LinearWithGradAccumulationAndAsyncCommunication``
backward; core_v0.14.0) skips the output layer's weight-gradient GEMM for the first
``wgrad_deferral_limit`` micro-batches (0: all) and keeps their inputs and output gradients;
``pipeline_parallel/schedules.py`` ``finish_embedding_wgrad_compute`` runs them on the last
pipeline rank after the schedule's last backward (``utils.drain_embedding_wgrad_compute``),
before the gradients are finalized. The last rank's own passes lose that GEMM, and the drained
GEMMs fill the tail that rank would otherwise idle while the lower ranks finish their
backward passes. Where the last rank bounds the steady state (its per-micro-batch work is the
heaviest: ``layer_prices.py``), the iteration shortens by about
min(N x the head's weight-gradient GEMM, that rank's tail); printed as an estimate.
A check, not an input: nothing here feeds trainsim. The row is read as ``layer_prices.py``
reads it (errata applied to the public file).
"""

from __future__ import annotations

import sys

from layer_prices import chosen_config

from trainsim.pricing import Pricer
from trainsim.simulator import simulate
from trainsim.workload.head import head_backward, head_forward
from trainsim.workload.shard import shard_of


def tails(tl, pp: int) -> list[tuple[float, float]]:
    """Per pipeline rank: (end of its last backward pass, end of its compute stream)."""
    out = []
    for s in range(pp):
        q = tl.queues.get((s, "compute"), [])
        last_b = max((tl.end_s[i] for i in q if str(tl.tasks[i].label).startswith("B ")),
                     default=0.0)
        out.append((last_b, max((tl.end_s[i] for i in q), default=0.0)))
    return out


def main(argv: list[str]) -> int:
    defer = None
    if "--defer" in argv:
        k = argv.index("--defer")
        defer = int(argv[k + 1])
        argv = argv[:k] + argv[k + 2:]
    chosen = chosen_config(argv)
    if chosen is None:
        return 1
    row_id, (res, cfg) = argv[0], chosen
    r = simulate(cfg, keep_timeline=True)
    pp = len(cfg.stage_layer_counts)
    t = tails(r.timeline, pp)
    last_b = max(b for b, _ in t)
    print(f"{row_id}: simulated {r.iteration_time_s:.3f} s (validate {res.predicted:.3f}), "
          f"measured {res.measured:.3f} s, {(res.predicted / res.measured - 1) * 100:+.1f} %")
    for s, (b, e) in enumerate(t):
        print(f"   rank {s}: last backward ends {b:.3f} s, compute ends {e:.3f} s, "
              f"tail after it {(last_b - b) * 1e3:6.1f} ms")
    sh = shard_of(cfg)
    pricer = Pricer(cfg)
    wgrad = [op for op in head_backward(cfg, sh, head_forward(cfg, sh))
             if op.name == "logits.wgrad"]
    w = sum(pricer.compute.explain(op)[0] for op in wgrad)
    m = cfg.training.global_batch_size // (cfg.training.micro_batch_size * cfg.dp)
    tail = last_b - t[-1][0]
    print(f"   head weight-gradient GEMM {w * 1e3:.2f} ms a micro-batch, {m} micro-batches, "
          f"last rank's tail {tail * 1e3:.1f} ms")
    if defer is not None:
        n = m if defer == 0 else min(defer, m)
        save = min(n * w, tail)
        print(f"   what-if wgrad_deferral_limit {defer}: {n} GEMMs = {n * w * 1e3:.1f} ms "
              f"deferred, about {save * 1e3:.1f} ms hidden -> {res.predicted - save:.3f} s, "
              f"{((res.predicted - save) / res.measured - 1) * 100:+.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
