"""Chakra exports replayed with every collective at its own whole time (export60).

A replay that times collectives itself (ASTRA-sim) takes each collective node for the whole
collective. For each configuration of ``export59_audit`` (and three with several micro-batches)
this prints the collective nodes that hold only the part the simulation exposed
(``trainsim.exposed_only``), the simulated iteration, and the iteration trainsim's reader replays
from the export with those nodes at their whole time (``chakra_audit.timed_replay``): equal where
the export writes each collective where it runs.

    PYTHONPATH=src python benchmarks/export60_gathers.py [--only NAME,...]
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
from pathlib import Path

import trainsim

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export59_audit import A100, CONFIGS, SMALL

MORE: dict[str, dict] = {}
"""Sharded runs of several micro-batches (export59's configs run one per rank), the combined
1F1B's pairs, DualPipe beside TP's blocking collectives."""
_d = copy.deepcopy(CONFIGS["fsdp2 (torchtitan)"])
_d["training"]["global_batch_size"] = 64
MORE["fsdp2 (torchtitan) m4"] = _d
_d = copy.deepcopy(CONFIGS["fsdp2 pp2 (torchtitan)"])
_d["training"]["global_batch_size"] = 64
_d["parallel"].update(pipeline_schedule="Interleaved1F1B", virtual_pipeline_model_parallel_size=2)
_d["model"] = {**SMALL, "num_layers": 8}
MORE["fsdp2 pp2 vpp2 (torchtitan) m8"] = _d
_d = copy.deepcopy(CONFIGS["zero3 deepspeed"])
_d["training"]["global_batch_size"] = 64
_d["cluster"] = A100
MORE["zero3 deepspeed a100 m4"] = _d
_d = copy.deepcopy(CONFIGS["moe combined 1f1b (ep overlap)"])
_d["training"]["global_batch_size"] = 64
MORE["moe combined 1f1b (ep overlap) m4"] = _d
_d = copy.deepcopy(CONFIGS["moe ep8 dualpipe"])
_d["parallel"].update(tp=2, sequence_parallel=True)
_d["cluster"] = {**_d["cluster"], "num_gpus": 32}
MORE["moe ep8 dualpipe tp2"] = _d


def _timed_replay_main(cfg, prefix):
    """``chakra_audit.timed_replay`` for a tree without it (the "before" column, main at
    2465ea7d): the same steps."""
    from trainsim.interop.chakra import (
        Layout,
        _materialize,
        _micros,
        read_chakra,
        trace_nodes,
        write_et,
    )

    builder, iteration = trace_nodes(cfg)
    for protos in builder.nodes.values():
        for p in protos:
            if p.exposed_only and p.comm is not None:
                p.duration_s = builder.pricer.comm_time(p.comm)
    layout = Layout(cfg)
    micros = {s: _micros(protos) for s, protos in builder.nodes.items()}
    for rank in range(layout.world):
        stage = layout.stage(rank)
        write_et(Path(f"{prefix}.{rank}.et"),
                 _materialize(builder.nodes[stage], rank, layout, micros[stage]), {})
    return iteration, read_chakra(prefix)


def rows(only: list[str] | None = None) -> list[tuple[str, int, float, float]]:
    """(config, exposed-only collective nodes over every stage's template, simulated
    iteration s, timed replay s)."""
    from trainsim.interop.chakra import trace_nodes
    try:
        from trainsim.interop.chakra_audit import timed_replay
    except ImportError:
        timed_replay = _timed_replay_main
    out = []
    for name, d in {**CONFIGS, **MORE}.items():
        if only and name not in only:
            continue
        cfg = trainsim.run_config_from_dict(d)
        builder, _ = trace_nodes(cfg)
        partial = sum(p.exposed_only for protos in builder.nodes.values() for p in protos)
        with tempfile.TemporaryDirectory() as tmp:
            iteration, replay = timed_replay(cfg, Path(tmp) / "w")
        out.append((name, partial, iteration, replay))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="comma-separated config names")
    args = ap.parse_args(argv)
    print("| config | exposed-only collective nodes | simulated iteration (ms) | timed replay "
          "(ms) | off |")
    print("|---|---:|---:|---:|---:|")
    for name, partial, iteration, replay in rows([s for s in args.only.split(",") if s]):
        print(f"| {name} | {partial} | {iteration * 1e3:.4f} | {replay * 1e3:.4f} | "
              f"{(replay - iteration) / iteration:+.2e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
