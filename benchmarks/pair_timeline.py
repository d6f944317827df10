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
backward layer priced one at a time). ``ROW_ID`` may also be a row of
``benchmarks/ep_overlap_pairs.csv`` (pass that file), Megatron-Bridge's own EP-overlap A/B.

Three what-ifs follow, none of them in trainsim (benchmarks/RESULTS.md, 25th session, bridgemoe):
each exchange waiting for the compute kernel running as it becomes ready (``waited_period_s``),
every exchange as much longer as the HybridEP A/B measured its communication kernels beside
compute (``EXCHANGE_GROWTH``), and a host cost per schedule node (``node_s``). Two more (28th
session, epov29): the GEMMs (and attention) as kernels that never run beside an exchange
(``exclusive``, an upper bound), and as statically scheduled persistent kernels (``static``,
``_static_time``: Hopper's scheduler; Blackwell's cluster launch control balances the tiles
over the SMs left). A check, not an input: nothing here feeds trainsim. ``ROW_ID`` may be a
row of any training file; the errata are applied to the public file's rows only.
"""

from __future__ import annotations

import csv
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

from trainsim.compute import host
from trainsim.pricing import Pricer
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.errata import corrected_file
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Attention, Comm, Gemm, Op
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


def _exchange(op: Op) -> bool:
    """A dispatch or combine all-to-all: the kernel that waits for SMs beside compute."""
    return isinstance(op, Comm) and op.kind == "all_to_all"


def _started(x: float, busy: list[tuple[float, float, int]]) -> float:
    """When an exchange ready at ``x`` gets its SMs if it must wait for the compute kernel
    running at ``x``: the end of that kernel (``busy``: compute ops as (start, end, kernels),
    each op's kernels taken as equal parts of it); ``x`` where none runs or one starts at
    ``x`` (issued before the exchange, it dispatches first and leaves the SMs it does not fill)."""
    for a, e, n in busy:
        if a < x < e:
            d = (e - a) / n
            return min(e, a + math.ceil((x - a) / d - 1e-12) * d)
    return x


def _clear_of(start: float, dur: float, held: list[tuple[float, float]]) -> float:
    """The first time from ``start`` at which ``dur`` seconds meet none of ``held``'s
    (start, end) spans."""
    moved = True
    while moved:
        moved = False
        for a, e in held:
            if start < e and a < start + dur:
                start, moved = e, True
    return start


def _past(start: float, held: list[tuple[float, float]]) -> float:
    """When a kernel ready at ``start`` gets its SMs if each of ``held``'s (start, end)
    kernels keeps every SM until its end: the end of the one running at ``start``."""
    moved = True
    while moved:
        moved = False
        for a, e in held:
            if a <= start < e:
                start, moved = e, True
    return start


def _static_time(start: float, dur: float, exchanges: list[tuple[float, float]]) -> float:
    """A statically scheduled persistent kernel of ``dur`` seconds started at ``start`` beside
    the exchanges running then (``exchanges``: (start, end)): the workers of the SMs an
    exchange holds start when it ends or when the other workers are done, whichever is first,
    and then run their whole share: ``dur + min(held, dur)``. The CUTLASS documentation's
    case (media/docs/cpp/blackwell_cluster_launch_control.md, "Static Scheduler": a GEMM
    beside a kernel that holds 20 of 100 SMs) that Blackwell's cluster launch control
    removes; on Hopper the static scheduler is the persistent GEMMs' one."""
    held = max((e - start for a, e in exchanges if a <= start < e), default=0.0)
    return dur + min(held, dur)


def _in_order(start: float, last_start: float) -> float:
    """When a kernel ready at ``start`` starts on a device with one hardware work queue: not
    before the kernel issued before it has started. CUDA_DEVICE_MAX_CONNECTIONS=1 "forces the
    kernels to start in the order they were launched on CPU" (NVIDIA/Megatron-LM core_v0.14.0
    megatron/core/tensor_parallel/layers.py L659-666 and pytorch/pytorch#143890, timmoon10): a
    cross-stream wait at the queue's head (a ``ScheduleNode``'s CUDA event) blocks the kernels
    of every stream queued behind it. Megatron-core's MoE README (d7288711
    megatron/core/transformer/moe/README.md L437) makes CUDA_DEVICE_MAX_CONNECTIONS > 1 a
    requirement of the EP A2A overlap for this reason; Megatron-LM PR #6311 measured the
    overlap's gain on 64 H100 (DeepSeek-V3 proxy, EP 16, alltoall) at +3.7 % with one
    connection against +7.8 % with 32. ``last_start``: when the last kernel of the op issued
    before it started."""
    return max(start, last_start)


def walk(f: dict[str, list[Op]], b: dict[str, list[Op]], time: Any, per_kernel_s: float,
         wait: str = "copy", pairs: int = 40, node_s: float = 0.0,
         busy: list[tuple[float, float, int]] | None = None, exclusive: Any = None,
         static: Any = None, one_queue: bool = False
         ) -> tuple[float, list[tuple[float, float, int]]]:
    """Steady time of one pair, and the compute ops' (start, end, kernels) over the walk.
    ``wait``: 'copy' (the host waits for the compute stream queued up to the copy, as the
    source does), 'stream' (for all of it at the wait, b.mlp_bwd included), 'none'.
    ``node_s``: host seconds per schedule node beyond its launches (``ScheduleNode``'s stream
    and event context, input detach, a ``run_backward`` per backward node; not measured).
    ``busy``: an earlier walk's compute ops; each exchange then starts only when the compute
    kernel running as it becomes ready has ended (``_started``). ``exclusive``: a test of a
    compute op whose kernels hold every SM while they run (a persistent kernel: one block
    per SM for the whole kernel); such an op and an exchange never run at once. ``static``:
    a test of a compute op that is a persistent kernel with a static tile schedule, one
    worker block per SM each owning an equal share of the tiles (``_static_time``).
    ``one_queue``: the device has one hardware work queue (``CUDA_DEVICE_MAX_CONNECTIONS=1``),
    so a kernel starts no earlier than the kernel the host issued before it on any stream, and
    a kernel waiting for another stream's event holds every kernel issued after it
    (``_in_order``)."""
    h, free, ready, copied, starts = 0.0, {"comp": 0.0, "comm": 0.0}, {"f": 0.0, "b": 0.0}, \
        0.0, []
    last_start = 0.0  # when the kernel issued last started (``one_queue``)
    ran: list[tuple[float, float, int]] = []
    held: list[list[tuple[float, float]]] = [[], []]  # exclusive compute spans, exchange spans
    for _ in range(pairs):
        starts.append(free["comp"])
        for chain, node in ORDER:
            st = STREAM[node]
            h += node_s
            for i, op in enumerate((f if chain == "f" else b)[node]):
                if chain == "f" and node == "disp" and i == 0 and wait != "none":
                    h = max(h, copied if wait == "copy" else free["comp"])
                h += host.launches(op) * per_kernel_s
                start = max(h, free[st], ready[chain] if i == 0 else 0.0)
                if one_queue:
                    start = _in_order(start, last_start)
                if busy is not None and _exchange(op):
                    start = _started(start, busy)
                dur = time(op)
                if exclusive is not None and (_exchange(op) or exclusive(op)):
                    start = _clear_of(start, dur, held[not _exchange(op)])
                    held[_exchange(op)].append((start, start + dur))
                if static is not None and _exchange(op):
                    start = _past(start, held[0])
                    held[1].append((start, start + dur))
                elif static is not None and static(op):
                    dur = _static_time(start, dur, held[1])
                    held[0].append((start, start + dur))
                free[st] = start + dur
                kernels = max(1, host.launches(op))  # its kernels as equal parts (``_started``)
                last_start = start + dur * (kernels - 1) / kernels
                if st == "comp" and free[st] > start:
                    ran.append((start, free[st], max(1, host.launches(op))))
                if getattr(op, "host_sync", False):
                    copied = free[st]
            ready[chain] = free[st]
    return (starts[-1] - starts[-11]) / 10, ran


def period_s(f: dict[str, list[Op]], b: dict[str, list[Op]], time: Any, per_kernel_s: float,
             wait: str = "copy", pairs: int = 40, node_s: float = 0.0,
             exclusive: Any = None, static: Any = None, one_queue: bool = False) -> float:
    """Steady time of one pair (``walk``)."""
    return walk(f, b, time, per_kernel_s, wait, pairs, node_s, exclusive=exclusive,
                static=static, one_queue=one_queue)[0]


def waited_period_s(f: dict[str, list[Op]], b: dict[str, list[Op]], time: Any,
                    per_kernel_s: float, rounds: int = 8) -> float:
    """Steady time of one pair when every exchange waits for the compute kernel running as
    it becomes ready (DeepEP's kernels are cooperative launches, deepseek-ai/DeepEP v1.2.1
    csrc/kernels/launch.cuh ``SETUP_LAUNCH_CONFIG``: the grid starts only once all its blocks
    fit; a default-priority NCCL kernel's blocks are dispatched after those of a kernel
    launched before it): each walk takes the compute ops of the one before it."""
    per, busy = walk(f, b, time, per_kernel_s)
    for _ in range(rounds):
        per, busy = walk(f, b, time, per_kernel_s, busy=busy)
    return per


EXCHANGE_GROWTH = 10831.7 / 8253.6
"""Communication kernel time with over without the EP overlap in Megatron-Bridge's HybridEP A/B
(skills/nemo-mbridge-perf-moe-comm-overlap/SKILL.md @ 067f987: Qwen3-30B-A3B, 16 H100, rank 0,
Nsight Systems: 3,958.997 ms concurrent with GEMM/attention = 36.55 % of it with the overlap,
9.079 ms = 0.11 % without; the 0.11 % is rounded, so 1.25-1.37x): the exchanges beside compute
take 1.31x as long, waits for peers included. A what-if here, not a trainsim constant."""


def row_and_config(row_id: str, path: str) -> tuple[dict[str, str], Any]:
    """The row and its run as ``trainsim validate`` prices it (a training file, errata
    applied, tuned cells as chosen), or as ``ep_overlap_pairs.py`` builds it (its CSV)."""
    with open(path, newline="") as fh:
        if "measured_step_s" in (csv.DictReader(fh).fieldnames or []):
            import ep_overlap_pairs

            row = next(r for r in ep_overlap_pairs.read_rows(Path(path)) if r["id"] == row_id)
            return row, ep_overlap_pairs.run_config(row)
    with tempfile.TemporaryDirectory() as tmp:
        # the errata correct the public file's rows; a check file's rows stand as written
        public = Path(path).name == "training_public.csv"
        fixed = corrected_file(path, "benchmarks/training_errata.csv", tmp)[0] if public else None
        with open(fixed or path, newline="") as fh:
            row = next(r for r in csv.DictReader(fh) if r["id"] == row_id)
    return row, row_config(row, predict_training_row(row).chosen)


def main(argv: list[str]) -> int:
    row_id = argv[0]
    path = argv[1] if len(argv) > 1 else str(BUNDLED_DIR / "training_public.csv")
    _, cfg = row_and_config(row_id, path)
    pricer, sh = Pricer(cfg), shard_of(cfg)
    lf = layer_forward(cfg, sh, moe=True)
    lb = layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)
    f, b = _nodes_fwd(lf), _nodes_bwd(lb)
    share = pricer.sm_share["ep"]

    def time(op: Op) -> float:
        return pricer.comm_time(op) if isinstance(op, Comm) else pricer.compute.time(op)

    def slowed(op: Op) -> float:  # every compute op beside an exchange's SMs (an upper bound)
        return time(op) if isinstance(op, Comm) else time(op) / (1.0 - share)

    def grown(op: Op) -> float:  # every exchange as long as the HybridEP A/B's overlap made it
        return time(op) * (EXCHANGE_GROWTH if _exchange(op) else 1.0)

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
    print("what-ifs (host wait copy):")
    print(f"  each exchange waits for the compute kernel running as it becomes ready: "
          f"{waited_period_s(f, b, time, k) * 1e3:.3f} ms")
    print(f"  exchanges {EXCHANGE_GROWTH:.2f}x as long (HybridEP A/B's growth): "
          f"{period_s(f, b, grown, k) * 1e3:.3f} ms")
    gemm = (lambda op: isinstance(op, Gemm))
    print(f"  GEMMs and exchanges never at once: {period_s(f, b, time, k, exclusive=gemm) * 1e3:.3f}"
          f" ms; GEMMs and attention: "
          f"{period_s(f, b, time, k, exclusive=lambda op: isinstance(op, Gemm | Attention)) * 1e3:.3f} ms")
    print(f"  GEMMs statically scheduled persistent kernels: "
          f"{period_s(f, b, time, k, static=gemm) * 1e3:.3f} ms; GEMMs and attention: "
          f"{period_s(f, b, time, k, static=lambda op: isinstance(op, Gemm | Attention)) * 1e3:.3f} ms")
    print(f"  one hardware queue (CUDA_DEVICE_MAX_CONNECTIONS=1): "
          f"{period_s(f, b, time, k, one_queue=True) * 1e3:.3f} ms; with static GEMMs: "
          f"{period_s(f, b, time, k, static=gemm, one_queue=True) * 1e3:.3f} ms")
    print("  host cost per schedule node (us -> ms): " + ", ".join(
        f"{us} -> {period_s(f, b, time, k, node_s=us * 1e-6) * 1e3:.3f}"
        for us in (100, 200, 300, 400)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
