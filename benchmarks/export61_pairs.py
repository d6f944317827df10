"""Chakra exports of the combined 1F1B's pairs, and of pipeline schedules export60 left out of
its table, audited and replayed with every collective at its whole time (export61).

For each configuration: the audit (``chakra_audit.audit_chakra``: communication written as
compute, communication segments with no communication node, bytes off), the collective nodes
holding only their exposed seconds, the pair windows written (``chakra_pairs``), the
simulated iteration and the timed replay (``chakra_audit.timed_replay``). The combined-1F1B
configs run several micro-batches (steady pairs) on slow and fast networks, so that the pairs'
exposed seconds range from none to most of the step.

    PYTHONPATH=src python benchmarks/export61_pairs.py [--only NAME,...]
    PYTHONPATH=src python benchmarks/export61_pairs.py --simai

``--simai``: the first stage's SimAI compute rows (every row's forward, input-gradient and
weight-gradient seconds) against the simulation's first-stage compute stream, split into what
SimAI can state as compute (compute, host launch waits, the optimizer, the exposed part of the
collectives it cannot overlap) and what it cannot: FSDP's gather waits (SimAI runs the gathers
as weight-gradient traffic), the combined 1F1B's pair exposure and the SMs that side-stream
collectives take (``Timeline.stretch_s``).
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
from pathlib import Path

import trainsim

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export59_audit import CONFIGS, MOE, _cfg
from export60_gathers import MORE

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SLOW = {"gpu": "a100-sxm-80gb", "num_gpus": 32, "gpus_per_node": 8}
MEGATRON = {"distributed_optimizer": True, "overlap_grad_reduce": True}

PAIRS: dict[str, dict] = {}
"""Megatron-core's combined 1F1B with steady pairs."""
for _nic in (25, 50, 200, 400):
    PAIRS[f"combined 1f1b ep16 nic{_nic}"] = _cfg(
        {"tp": 1, "ep": 16, "moe_overlap_ep_comm": True, **MEGATRON},
        {"global_batch_size": 128, "seq_length": 4096},
        {**MOE, "hidden_size": 2048, "num_experts": 32, "moe_router_topk": 4,
         "ffn_hidden_size": 2048}, {**SLOW, "nic_gbit_s_per_gpu": _nic})
    PAIRS[f"combined 1f1b pp2 vpp2 ep16 moe every 2nd nic{_nic}"] = _cfg(
        {"tp": 1, "pp": 2, "virtual_pipeline_model_parallel_size": 2, "ep": 16,
         "moe_overlap_ep_comm": True, **MEGATRON},
        {"global_batch_size": 64, "seq_length": 4096},
        {**MOE, "num_layers": 8, "num_experts": 32, "moe_router_topk": 4,
         "ffn_hidden_size": 2048, "moe_layer_freq": 2}, {**SLOW, "nic_gbit_s_per_gpu": _nic})
PAIRS["combined 1f1b ep32 nic25 (exchanges past the backward)"] = _cfg(
    {"tp": 1, "ep": 32, "moe_overlap_ep_comm": True, **MEGATRON},
    {"global_batch_size": 64, "seq_length": 4096},
    {**MOE, "num_experts": 32, "moe_router_topk": 8, "ffn_hidden_size": 512},
    {**SLOW, "nic_gbit_s_per_gpu": 25})
_d = copy.deepcopy(MORE["moe combined 1f1b (ep overlap) m4"])
_d["parallel"].update(pp=2, virtual_pipeline_model_parallel_size=2)
_d["model"] = {**MOE, "num_layers": 8}
_d["training"]["global_batch_size"] = 32
PAIRS["combined 1f1b pp2 vpp2 m4 (h100)"] = _d
_d = copy.deepcopy(CONFIGS["moe combined 1f1b fsdp2"])
_d["training"]["global_batch_size"] = 64
PAIRS["combined 1f1b fsdp2 m4"] = _d
_d = copy.deepcopy(PAIRS["combined 1f1b ep16 nic50"])
_d["parallel"].update(tp=2, sequence_parallel=True)
PAIRS["combined 1f1b tp2 sp ep16 nic50"] = _d

TORCHTITAN = [(s, v, "2025-12") for s, v in (
    ("GPipe", 1), ("1F1B", 1), ("Interleaved1F1B", 2), ("LoopedBFS", 2), ("ZBVZeroBubble", 2),
    ("InterleavedZeroBubble", 2), ("DualPipeV", 2))]
"""torchtitan's pipeline schedules beside FSDP2 (fsdppp60; 2025-06 gives the same times)."""
MEGATRON_SCHEDULES = {
    "looped_bfs pp2 vpp2": "looped_bfs", "zb_v pp2": "zb_v", "dualpipe_v pp2 ep8": "dualpipe_v",
    "interleaved_zb pp2 vpp2": "interleaved_zb"}


def configs() -> dict[str, object]:
    """Name -> RunConfig."""
    out: dict[str, object] = {n: trainsim.run_config_from_dict(d) for n, d in PAIRS.items()}
    for schedule, vpp, ver in TORCHTITAN:
        out[f"torchtitan {ver} {schedule} fsdp2 pp2"] = trainsim.load_run_config(
            EXAMPLES / "llama3-8b-h100.yaml",
            ["parallel.tp=1", "training.micro_batch_size=1", "training.global_batch_size=16",
             "model.num_layers=8", "cluster.num_gpus=4", "parallel.pp=2",
             f"parallel.pipeline_schedule={schedule}", f"parallel.vpp={vpp}",
             "training.framework=torchtitan", f"training.framework_version={ver}",
             "parallel.zero_stage=3"])
    for name, schedule in MEGATRON_SCHEDULES.items():
        moe = "ep8" in name
        par = {"tp": 1, "pp": 2, "pipeline_schedule": schedule, **MEGATRON,
               **({"ep": 8} if moe else {})}
        if "vpp2" in name or schedule in ("zb_v", "dualpipe_v"):
            par["virtual_pipeline_model_parallel_size"] = 2
        out[name] = trainsim.run_config_from_dict(_cfg(
            par, {"global_batch_size": 64}, {**(MOE if moe else CONFIGS["ddp zero0"]["model"]),
                                              "num_layers": 8}))
    return out


def rows(only: list[str] | None = None) -> list[tuple]:
    """(config, audit, exposed-only nodes, pair windows, simulated s, replay s), or
    (config, refusal)."""
    from trainsim.interop.chakra import trace_nodes
    from trainsim.interop.chakra_audit import audit_chakra, timed_replay

    out: list[tuple] = []
    for name, cfg in configs().items():
        if only and name not in only:
            continue
        try:
            builder, _ = trace_nodes(cfg)  # type: ignore[arg-type]
        except trainsim.TrainsimError as e:
            out.append((name, f"refused: {str(e).splitlines()[0][:80]}"))
            continue
        partial = sum(p.exposed_only for protos in builder.nodes.values() for p in protos)
        windows = len(getattr(builder, "pair_windows", {}))
        with tempfile.TemporaryDirectory() as tmp:
            iteration, replay = timed_replay(cfg, Path(tmp) / "w")  # type: ignore[arg-type]
        out.append((name, audit_chakra(cfg), partial, windows, iteration, replay))  # type: ignore[arg-type]
    return out


SIMAI = ["ddp zero0", "pp4 vpp2", "pp4 tp overlap p2p overlap", "moe ep4 pp2", "moe ep8 dualpipe",
         "moe combined 1f1b (ep overlap) m4", "fsdp2 (torchtitan) m4", "zero3 deepspeed a100 m4",
         "megatron-fsdp (nemo 25.04)"]


def simai_gap(cfg) -> dict[str, float]:
    """Seconds of one step on the first stage: SimAI's compute rows (``simai``), and the
    simulation's compute stream by what SimAI can state as compute (``own``) and what not
    (``gather_wait``, ``pair_exposed``, ``sm_contention``)."""
    from trainsim.ep_pairs import PAIR_EXPOSED
    from trainsim.interop.chakra import trace_nodes
    from trainsim.interop.simai import simai_rows
    from trainsim.sharded_passes import GATHER_WAIT

    builder, _ = trace_nodes(cfg)
    out = dict.fromkeys(("simai", "own", "gather_wait", "pair_exposed", "sm_contention"), 0.0)
    ct = builder.pricer.comm_time
    for i, t in enumerate(builder.tasks):
        if t.stream != (0, "compute"):
            continue
        out["sm_contention"] += builder.stretch[i]
        segs = t.segments if t.detail is None else t.detail.segments  # type: ignore[attr-defined]
        for seg in segs:
            cat, s = seg[0], seg[1]
            if len(seg) > 2 and seg[2] == PAIR_EXPOSED:
                out["pair_exposed"] += s
            elif len(seg) > 2 and seg[2] == GATHER_WAIT:
                out["gather_wait"] += s
            elif cat in ("compute", "host", "optimizer"):
                out["own"] += s
            elif t.detail is not None:  # a collective SimAI keeps as time where hidden in part
                ops = builder.pricer.ops_of(seg)
                if ops and s < sum(map(ct, ops)) * (1 - 1e-12):
                    out["own"] += s
    out["simai"] = sum(r.fwd[0] + r.ig[0] + r.wg[0] for r in simai_rows(cfg))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="comma-separated config names")
    ap.add_argument("--simai", action="store_true", help="SimAI compute rows vs the simulation")
    args = ap.parse_args(argv)
    if args.simai:
        print("| config | SimAI compute rows (ms) | simulation's own (ms) | SimAI - own | FSDP "
              "gather waits | pair exposure | SM contention |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name in SIMAI:
            g = simai_gap(trainsim.run_config_from_dict({**CONFIGS, **MORE}[name]))
            ms = {k: v * 1e3 for k, v in g.items()}
            print(f"| {name} | {ms['simai']:.3f} | {ms['own']:.3f} | "
                  f"{ms['simai'] - ms['own']:+.3f} ({(g['simai'] - g['own']) / g['own']:+.1%}) | "
                  f"{ms['gather_wait']:.3f} | {ms['pair_exposed']:.3f} | "
                  f"{ms['sm_contention']:.3f} |")
        return 0
    print("| config | comm as compute | comm without a node | bytes off | exposed-only nodes | "
          "pair windows | simulated (ms) | timed replay (ms) | off |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|")
    bad = 0
    for row in rows([s for s in args.only.split(",") if s]):
        if len(row) == 2:
            print(f"| {row[0]} | {row[1]} | | | | | | | |")
            continue
        name, a, partial, windows, iteration, replay = row
        off = (replay - iteration) / iteration
        bad += not a.clean or bool(partial) or abs(off) > 1e-9
        print(f"| {name} | " + (f"{a.as_compute_s * 1e3:.3f} ms" if a.as_compute else "none")
              + f" | {dict(a.missing) or 'none'} | {len(a.bytes_off) or 'none'} | {partial} | "
              f"{windows} | {iteration * 1e3:.4f} | {replay * 1e3:.4f} | {off:+.2e} |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
