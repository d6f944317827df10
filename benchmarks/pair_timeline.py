"""One MoE layer pair of Megatron-core's combined 1F1B, walked as the host issues it.

    python benchmarks/pair_timeline.py ROW_ID [TRAINING.csv]  # default: the public file, errata applied

Megatron-core's ``TransformerLayerSchedulePlan.run`` (core_v0.14.0-core_v0.16.0
megatron/core/models/common/model_chunk_schedule_plan.py) issues one forward layer (f) and
one backward layer (b) from one host thread in this order, the dispatch and combine nodes on
one communication stream, the others on the compute stream, each node waiting (CUDA event)
for the previous node of its own micro-batch:

    b.combine_bwd | f.attn, f.post_attn | b.mlp_bwd | f.dispatch | b.dispatch_bwd | f.mlp |
    f.combine | b.post_attn_bwd, b.attn_bwd

The all-to-all dispatcher (token_dispatcher.py ``MoEAlltoAllTokenDispatcher``) copies the split
sizes to the host on a side stream at ``cuda_dtoh_point`` ("before_permutation_1", in
f.post_attn: the side stream waits for the compute stream queued so far) and the host waits
for that copy (``d2h_event.synchronize()``) at ``cuda_sync_point`` ("before_ep_alltoall" for
dropless routing with EP > 1 and no router padding: in f.dispatch, after b.mlp_bwd is queued).

This walks many such pairs with the row's per-op prices (trainsim's ops of one layer, split
into those nodes by name), each op launched by the host at ``compute.host`` cost per kernel,
and prints the steady period of one pair beside what trainsim charges (the forward and the
backward layer priced one at a time). A check, not an input: nothing here feeds trainsim.
"""

from __future__ import annotations

import csv
import sys
import tempfile
from typing import Any

from trainsim.compute import host
from trainsim.pricing import Pricer
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.errata import corrected_file
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Comm, Op
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

STREAM = {"attn": "comp", "post": "comp", "mlp": "comp", "disp": "comm", "comb": "comm"}
ORDER = (("b", "comb"), ("f", "attn"), ("f", "post"), ("b", "mlp"), ("f", "disp"),
         ("b", "disp"), ("f", "mlp"), ("f", "comb"), ("b", "post"), ("b", "attn"))


def _shared_to_mlp(nodes: dict[str, list[Op]]) -> dict[str, list[Op]]:
    """The shared experts run in the mlp node (fine_grained_callables.py
    ``submodule_moe_forward``: ``shared_experts_compute``), on the compute stream."""
    shared = [o for o in nodes["comb"] if o.name.startswith("shared")]
    nodes["comb"] = [o for o in nodes["comb"] if not o.name.startswith("shared")]
    nodes["mlp"] = shared + nodes["mlp"]
    return nodes


def _nodes_fwd(ops: list[Op]) -> dict[str, list[Op]]:
    names = [o.name for o in ops]
    post = names.index("mlp_norm")
    disp = [i for i, n in enumerate(names) if n.startswith("moe.dispatch")]
    comb = names.index("moe.combine_all_to_all")
    return _shared_to_mlp({"attn": ops[:post], "post": ops[post:disp[0]],
                           "disp": ops[disp[0]:disp[-1] + 1], "mlp": ops[disp[-1] + 1:comb],
                           "comb": ops[comb:]})


def _nodes_bwd(ops: list[Op]) -> dict[str, list[Op]]:
    names = [o.name for o in ops]
    mlp = names.index("moe.combine_all_to_all.bwd") + 1
    disp = [i for i, n in enumerate(names) if n.startswith("moe.dispatch")]
    attn = names.index("attn_bias_dropout_add.bwd")
    return _shared_to_mlp({"comb": ops[:mlp], "mlp": ops[mlp:disp[0]],
                           "disp": ops[disp[0]:disp[-1] + 1], "post": ops[disp[-1] + 1:attn],
                           "attn": ops[attn:]})


def period_s(f: dict[str, list[Op]], b: dict[str, list[Op]], time: Any, per_kernel_s: float,
             wait: str = "copy", pairs: int = 40) -> float:
    """Steady time of one pair. ``wait``: 'copy' (the host waits for the compute stream queued
    up to the copy, as the source does), 'stream' (for all of it at the wait, b.mlp_bwd
    included), 'none'."""
    h, free, ready, copied, starts = 0.0, {"comp": 0.0, "comm": 0.0}, {"f": 0.0, "b": 0.0}, \
        0.0, []
    for _ in range(pairs):
        starts.append(free["comp"])
        for chain, node in ORDER:
            st = STREAM[node]
            for i, op in enumerate((f if chain == "f" else b)[node]):
                if chain == "f" and node == "disp" and i == 0 and wait != "none":
                    h = max(h, copied if wait == "copy" else free["comp"])
                h += host.launches(op) * per_kernel_s
                free[st] = max(h, free[st], ready[chain] if i == 0 else 0.0) + time(op)
                if getattr(op, "host_sync", False):
                    copied = free[st]
            ready[chain] = free[st]
    return (starts[-1] - starts[-11]) / 10


def main(argv: list[str]) -> int:
    row_id = argv[0]
    path = argv[1] if len(argv) > 1 else str(BUNDLED_DIR / "training_public.csv")
    with tempfile.TemporaryDirectory() as tmp:
        fixed, _ = corrected_file(path, "benchmarks/training_errata.csv", tmp)
        with open(fixed or path, newline="") as fh:
            row = next(r for r in csv.DictReader(fh) if r["id"] == row_id)
    cfg = row_config(row, predict_training_row(row).chosen)
    pricer, sh = Pricer(cfg), shard_of(cfg)
    lf = layer_forward(cfg, sh, moe=True)
    lb = layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)
    f, b = _nodes_fwd(lf), _nodes_bwd(lb)
    share = pricer.sm_share["ep"]

    def time(op: Op) -> float:
        return pricer.comm_time(op) if isinstance(op, Comm) else pricer.compute.time(op)

    def slowed(op: Op) -> float:  # every compute op beside an exchange's SMs (an upper bound)
        return time(op) if isinstance(op, Comm) else time(op) / (1.0 - share)

    for label, nodes in (("f", f), ("b", b)):
        for name, ops in nodes.items():
            print(f"{label}.{name:5s} {STREAM[name]} {sum(map(time, ops)) * 1e3:7.3f} ms "
                  f"{sum(map(host.launches, ops)):3d} launches")
    charged = pricer.price(lf).duration_s + pricer.price(lb).duration_s
    print(f"trainsim's pair (forward + backward layer priced alone): {charged * 1e3:.3f} ms")
    k = pricer.host_s_per_kernel
    for wait in ("copy", "stream", "none"):
        print(f"host wait {wait:6s}: {period_s(f, b, time, k, wait) * 1e3:.3f} ms, "
              f"with the exchange SMs {period_s(f, b, slowed, k, wait) * 1e3:.3f} ms, "
              f"no host cost {period_s(f, b, time, 0.0, wait) * 1e3:.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
