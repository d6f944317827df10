"""What the three measured expert-overlap A/Bs on H100 ask of the overlap's price, per dispatcher.

    PYTHONPATH=src:benchmarks python benchmarks/bridge41_overlap_need.py

Three published pairs of step times with and without Megatron-core's combined 1F1B
(``overlap_moe_expert_parallel_comm``), each pair one layout on H100:

- DeepEP, EP 32 over 4 nodes: the Megatron-MoE Model Zoo's Qwen3-235B-A22B rows
  (``benchmarks/training_moe_modelzoo.csv``, ``mzoo2505-...-tp2pp8vpp4ep32`` and ``-ep-overlap``);
- NCCL all-to-all and HybridEP, EP 16 over 2 nodes: Megatron-Bridge's Qwen3-30B-A3B A/B
  (``benchmarks/ep_overlap_pairs.csv``).

For each row it prints trainsim's step beside the measured one, and per steady MoE layer pair
(``ep_pairs.moe_sides`` / ``ep_pairs.exposed``, as ``chunks`` prices the pair) the seconds of
exchange the pair holds, what trainsim leaves exposed of them and what the measurement asks
beyond that: ``absolute`` (the overlapped row's own shortfall) and ``differential`` (the
shortfall net of the no-overlap twin's error, i.e. the saving's error). Dividing by the pair's
exchange seconds gives the share of the exchanges the overlap would have to leave unhidden
beyond trainsim's price; a mechanism that prices the overlap per dispatcher and GPU has to
reproduce that share for all three. Pairs per step: micro-batches per rank times MoE layers per
rank (an upper bound: the warm-up and cool-down passes run without a partner). Nothing here is
fitted and nothing feeds trainsim.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NamedTuple

from trainsim import simulate
from trainsim.ep_pairs import exposed, moe_sides
from trainsim.pricing import Pricer
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

HERE = Path(__file__).resolve().parent
ZOO = str(HERE / "training_moe_modelzoo.csv")
AB = str(HERE / "ep_overlap_pairs.csv")
ZOO_OFF = "mzoo2505-qwen3-235b-a22b-h100-256-tp2pp8vpp4ep32"
PAIRS = (
    ("deepep", ZOO, ZOO_OFF, ZOO_OFF + "-ep-overlap"),
    ("alltoall", AB, "bridge-qwen3-30b-a3b-h100-16-ep16-alltoall-no-overlap",
     "bridge-qwen3-30b-a3b-h100-16-ep16-alltoall-overlap"),
    ("hybridep", AB, "bridge-qwen3-30b-a3b-h100-16-ep16-hybridep-no-overlap",
     "bridge-qwen3-30b-a3b-h100-16-ep16-hybridep-overlap"),
)


class Need(NamedTuple):
    """One A/B's figures (seconds; per pair: one steady MoE layer pair)."""

    dispatcher: str
    measured: tuple[float, float]  # (off, on) step
    predicted: tuple[float, float]
    pairs: float  # steady MoE layer pairs a rank runs per step (upper bound)
    exchange: float  # the four exchanges of one pair, as priced alone
    exposed: float  # what trainsim leaves exposed of them in the pair
    share: float  # SM share the exchange holds (``Pricer.sm_share['ep']``)
    ep_nodes: int

    @property
    def absolute(self) -> float:
        """Exposed seconds a pair needs beyond trainsim's for the overlapped row alone."""
        return (self.measured[1] - self.predicted[1]) / self.pairs

    @property
    def differential(self) -> float:
        """The same net of the no-overlap twin's error: the saving's over-credit a pair."""
        return ((self.measured[1] - self.predicted[1])
                - (self.measured[0] - self.predicted[0])) / self.pairs


def step_pairs(cfg: Any) -> float:
    """Micro-batches per rank times MoE layers per rank."""
    p, t, m = cfg.parallel, cfg.training, cfg.model
    micro = t.global_batch_size / (t.micro_batch_size * cfg.dp)
    moe_layers = m.num_layers - (m.moe_first_dense_layers or 0)
    return micro * moe_layers / p.pp


def pair_figures(cfg: Any) -> tuple[float, float, float]:
    """(exchange seconds, exposed seconds, SM share) of one steady MoE layer pair of ``cfg``
    as trainsim prices it."""
    pricer, sh = Pricer(cfg), shard_of(cfg)
    lf = layer_forward(cfg, sh, moe=True)
    lb = layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)
    sides = moe_sides(pricer, lf, lb)
    if sides is None:
        raise ValueError("the layer does not split into the pair's nodes")
    f, b = sides.fwd_side, sides.bwd_side
    comm = f.dispatch + f.combine + b.dispatch + b.combine
    return comm, exposed(f, b, pricer.sm_share["ep"], pricer.ep_gemm_share), \
        pricer.sm_share["ep"]


def need(dispatcher: str, path: str, off_id: str, on_id: str) -> Need:
    """The A/B of rows ``off_id`` and ``on_id`` of ``path``, each priced as ``trainsim
    validate`` (or ``ep_overlap_pairs.py``) prices it (``pair_timeline.row_and_config``)."""
    if str(HERE) not in sys.path:  # pair_timeline and ep_overlap_pairs are scripts beside this
        sys.path.insert(0, str(HERE))
    from pair_timeline import row_and_config

    row_off, cfg_off = row_and_config(off_id, path)
    row_on, cfg_on = row_and_config(on_id, path)
    key = "measured_step_s" if "measured_step_s" in row_on else "measured_iteration_s"
    comm, exp, share = pair_figures(cfg_on)
    return Need(dispatcher, (float(row_off[key]), float(row_on[key])),
                (simulate(cfg_off).iteration_time_s, simulate(cfg_on).iteration_time_s),
                step_pairs(cfg_on), comm, exp, share, Pricer(cfg_on).spans["ep"].nodes)


WHAT_IFS = ("one_queue", "static", "static_net", "one_queue+static_net", "waited", "grown")
"""``pair_timeline``'s what-ifs of one pair walked kernel by kernel (its docstrings give the
sources): one hardware queue (``CUDA_DEVICE_MAX_CONNECTIONS=1``); Hopper's statically scheduled
persistent GEMMs (an exchange ready while one runs starts at its end, a GEMM started beside an
exchange loses the held workers' whole share); ``_net``: the same less the exposure trainsim's
pair already charges for the SMs an exchange holds (``Pricer.ep_gemm_share``: that part of the
static schedule is priced, so the plain ``static`` column counts it twice: an upper bound); each
exchange waiting for the compute kernel running as it becomes ready; every exchange
``EXCHANGE_GROWTH`` as long."""


def what_if_steps(cfg: Any, predicted_on: float, pairs: float, charged: float
                  ) -> dict[str, float]:
    """The overlapped row's step under each of ``WHAT_IFS``: trainsim's step plus ``pairs``
    times what the what-if adds to ``pair_timeline``'s own walk of one pair (host wait 'copy');
    ``charged``: the exposure trainsim's pair charges (``Need.exposed``), taken off the
    ``_net`` ones (never below nothing added)."""
    import pair_timeline as pt

    from trainsim.workload.ops import Comm, Gemm

    pricer, sh = Pricer(cfg), shard_of(cfg)
    lf = layer_forward(cfg, sh, moe=True)
    lb = layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)
    f, b = pt._nodes_fwd(lf), pt._nodes_bwd(lb)
    k = pricer.host_s_per_kernel

    def time(op: Any) -> float:
        return pricer.comm_time(op) if isinstance(op, Comm) else pricer.compute.time(op)

    def grown(op: Any) -> float:
        return time(op) * (pt.EXCHANGE_GROWTH if pt._exchange(op) else 1.0)

    def gemm(op: Any) -> bool:
        return isinstance(op, Gemm)

    base = pt.period_s(f, b, time, k)
    static = pt.period_s(f, b, time, k, static=gemm) - base
    both = pt.period_s(f, b, time, k, static=gemm, one_queue=True) - base
    added = {"one_queue": pt.period_s(f, b, time, k, one_queue=True) - base,
             "static": static, "static_net": max(0.0, static - charged),
             "one_queue+static_net": max(0.0, both - charged),
             "waited": pt.waited_period_s(f, b, time, k) - base,
             "grown": pt.period_s(f, b, grown, k) - base}
    return {name: predicted_on + pairs * added[name] for name in WHAT_IFS}


class PairWalk(NamedTuple):
    """One steady MoE layer pair of an overlapped row (seconds): as trainsim prices it and as
    ``pair_timeline`` walks it kernel by kernel from one host thread."""

    trainsim: float  # both passes' compute and host waits, each priced alone, + the exposure
    host: float  # of which the two passes' host waits (the GPU waiting for launches)
    launches: float  # the host's launch seconds for both passes (``compute.host``)
    gpu: float  # the GPU work of both passes, host waits and exposure apart
    walk: float  # the walk: one host thread issuing both passes, the GPU's streams beside it
    walk_sms: float  # the walk with every compute op on the SMs the exchange leaves
    needed: float  # ``trainsim`` + what the measured overlapped step asks (``Need.absolute``)


def pair_walk(cfg: Any, n: Need) -> PairWalk:
    """``cfg``'s steady pair both ways (``n``: its A/B's figures)."""
    import pair_timeline as pt

    from trainsim.pricing import HOST
    from trainsim.workload.ops import Comm

    pricer, sh = Pricer(cfg), shard_of(cfg)
    lf = layer_forward(cfg, sh, moe=True)
    lb = layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)
    sides = moe_sides(pricer, lf, lb)
    assert sides is not None
    host = sum(seg[1] for priced in (sides.forward, sides.backward)
               for seg in priced.segments if seg[0] == HOST)
    f, b = pt._nodes_fwd(lf), pt._nodes_bwd(lb)
    share, k = pricer.sm_share["ep"], pricer.host_s_per_kernel

    def time(op: Any) -> float:
        return pricer.comm_time(op) if isinstance(op, Comm) else pricer.compute.time(op)

    def slowed(op: Any) -> float:
        return time(op) if isinstance(op, Comm) else time(op) / (1.0 - share)

    from trainsim.compute.host import launches

    busy = sides.fwd_side.busy + sides.bwd_side.busy
    pair = busy + n.exposed
    return PairWalk(pair, host, k * sum(launches(op) for op in lf + lb), busy - host,
                    pt.period_s(f, b, time, k), pt.period_s(f, b, slowed, k), pair + n.absolute)


def walk_table(rows: list[tuple[Need, PairWalk]]) -> str:
    lines = [("| dispatcher | trainsim pair ms | of which host waits ms | host launches ms "
              "| GPU work ms | walk ms | walk, compute on the SMs left ms | needed ms |"),
             "|" + "---|" * 8]
    for n, w in rows:
        lines.append(f"| {n.dispatcher} | {w.trainsim * 1e3:.3f} | {w.host * 1e3:.3f} | "
                     f"{w.launches * 1e3:.3f} | {w.gpu * 1e3:.3f} | {w.walk * 1e3:.3f} | "
                     f"{w.walk_sms * 1e3:.3f} | {w.needed * 1e3:.3f} |")
    return "\n".join(lines)


NSIGHT = {"off": (24.7138, 22.821, 9.079e-3 / 0.0011, 9.079e-3),
          "on": (21.0725, 21.221, 3.958997 / 0.3655, 3.958997)}
"""Megatron-Bridge's HybridEP A/B (the rows of ``ep_overlap_pairs.csv``), one steady iteration
of rank 0 profiled with Nsight Systems, 463,348 kernels in each case (NVIDIA-NeMo/Megatron-Bridge
skills/nemo-mbridge-perf-expert-parallel-overlap/SKILL.md @ 415e90a L109-122): per case the
unprofiled step (s), the GPU-active interval union (s), the communication kernels' union (s:
the concurrent seconds over their stated share of it; 0.11 % is rounded, so the "off" union is
8.25 s within about 4 %) and its part concurrent with GEMM or attention (s)."""


def nsight_table(off: float, on: float, breakdowns: tuple[dict, dict], exchange_s: float
                 ) -> str:
    """The HybridEP A/B's profile beside trainsim's step: GPU idle (measured: the step less the
    GPU-active union; trainsim: ``other_s``, the GPU waiting for the host) and GPU-active time
    (trainsim: the rest), the communication kernels against trainsim's exchanges per step."""
    lines = [("| HybridEP A/B | step s | GPU-active s | GPU idle s | communication kernels s "
              "| beside GEMM / attention s |"), "|" + "---|" * 6]
    for case, pred, bd in (("off", off, breakdowns[0]), ("on", on, breakdowns[1])):
        step, active, comm, beside = NSIGHT[case]
        lines.append(f"| {case}, measured | {step:.2f} | {active:.2f} | {step - active:+.2f} | "
                     f"{comm:.2f} | {beside:.2f} |")
        idle = bd["other_s"]
        lines.append(f"| {case}, trainsim | {pred:.2f} | {pred - idle:.2f} | {idle:+.2f} | "
                     f"{exchange_s:.2f} (the exchanges alone) | |")
    (s0, a0, _, _), (s1, a1, _, _) = NSIGHT["off"], NSIGHT["on"]
    i0, i1 = breakdowns[0]["other_s"], breakdowns[1]["other_s"]
    lines.append(f"\nthe overlap's saving, measured {s0 - s1:.2f} s = GPU idle "
                 f"{(s0 - a0) - (s1 - a1):+.2f} s + GPU-active {a0 - a1:+.2f} s; trainsim "
                 f"{off - on:.2f} s = GPU idle {i0 - i1:+.2f} s + GPU-active "
                 f"{(off - i0) - (on - i1):+.2f} s")
    return "\n".join(lines)


def table(needs: list[Need]) -> str:
    head = ("| dispatcher (EP nodes, SM share) | measured off / on s | trainsim off / on s "
            "| pairs | exchange ms/pair | exposed ms/pair | absolute ms/pair (% of exchange) "
            "| differential ms/pair (%) |")
    lines = [head, "|" + "---|" * 8]
    for n in needs:
        lines.append(
            f"| {n.dispatcher} ({n.ep_nodes}, {n.share:.3f}) | {n.measured[0]:.2f} / "
            f"{n.measured[1]:.2f} | {n.predicted[0]:.2f} / {n.predicted[1]:.2f} | "
            f"{n.pairs:.0f} | {n.exchange * 1e3:.3f} | {n.exposed * 1e3:.3f} | "
            f"{n.absolute * 1e3:+.3f} ({100 * n.absolute / n.exchange:+.1f}) | "
            f"{n.differential * 1e3:+.3f} ({100 * n.differential / n.exchange:+.1f}) |")
    return "\n".join(lines)


def what_if_table(rows: list[tuple[Need, dict[str, float]]]) -> str:
    """Each overlapped row's signed error under trainsim and each what-if."""
    lines = ["| dispatcher | measured on s | trainsim | " + " | ".join(WHAT_IFS) + " |",
             "|" + "---|" * (3 + len(WHAT_IFS))]
    for n, steps in rows:
        m = n.measured[1]
        cells = [f"{100 * (n.predicted[1] / m - 1):+.1f} %"] + \
            [f"{100 * (steps[w] / m - 1):+.1f} %" for w in WHAT_IFS]
        lines.append(f"| {n.dispatcher} | {m:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    from pair_timeline import row_and_config

    needs = [need(*p) for p in PAIRS]
    print(table(needs))
    print()
    cfgs = [row_and_config(on_id, path)[1] for _, path, _, on_id in PAIRS]
    print(walk_table([(n, pair_walk(cfg, n)) for n, cfg in zip(needs, cfgs)]))
    print()
    print(what_if_table([(n, what_if_steps(cfg, n.predicted[1], n.pairs, n.exposed))
                         for n, cfg in zip(needs, cfgs)]))
    print()
    _, path, off_id, on_id = PAIRS[2]
    hybrid = needs[2]
    bds = tuple(simulate(row_and_config(i, path)[1]).breakdown for i in (off_id, on_id))
    print(nsight_table(hybrid.predicted[0], hybrid.predicted[1], bds,  # type: ignore[arg-type]
                       hybrid.pairs * hybrid.exchange))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
