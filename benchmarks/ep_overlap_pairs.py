"""Megatron-Bridge's own A/B of MoE expert-parallel overlap, predicted (issue 17 item 4).

    python benchmarks/ep_overlap_pairs.py

``ep_overlap_pairs.csv`` holds step times Megatron-Bridge measured for Qwen3-30B-A3B on 16 H100
(EP 16 across two nodes, GBS 1024, sequence 4096, BF16) with and without
``overlap_moe_expert_parallel_comm`` (Megatron-core's combined 1F1B), once with the plain
``alltoall`` dispatcher (an NCCL all-to-all) and once with HybridEP. Each row is simulated as
its settings say (``delay_wgrad_compute`` as the run set it: Megatron-Bridge's perf scripts
turn it on with the overlap, these runs did not; the framework profile fills the rest); the
table gives each time's error and the share of the step the overlap saved, measured and
predicted.

The alltoall pair ran with ``moe_permute_fusion=false`` (its column: ``parallel.
moe_permute_fusion``, the unfused permutation of ``workload.moe_permute``). What trainsim cannot
express is listed in the rows' notes. The HybridEP pair ran CUDA graphs of two scopes (router,
dispatch preprocessing): trainsim prices such graphs now (``training.cuda_graph_scope``), but
this benchmark still runs rows naming layer scopes without graphs, as its recorded figures
were taken (``cuda_graphs``). Nothing here is fitted.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from trainsim import RunConfig, run_config_from_dict, simulate
from trainsim.config.graph_scope import WHOLE_LAYER

CSV = Path(__file__).resolve().parent / "ep_overlap_pairs.csv"


def read_rows(path: Path = CSV) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def cuda_graphs(row: dict[str, str]) -> bool:
    """Whether the row's run is simulated with (whole-layer) CUDA graphs: a scope that
    captures the whole layer or step (``config.graph_scope.WHOLE_LAYER``); a row naming some
    layers' scopes (``moe_router``, ``moe_preprocess``, ``attn``, ...) runs without (see the
    module's docstring)."""
    return row["cuda_graph_scope"].strip() in WHOLE_LAYER


_PARALLEL_COLUMNS = {"tp": "tp", "pp": "pp", "ep": "ep",
                     "distributed_optimizer": "distributed_optimizer",
                     "overlap_grad_reduce": "overlap_grad_reduce",
                     "overlap_param_gather": "overlap_param_gather", "recompute": "recompute",
                     "moe_dispatcher": "moe_token_dispatcher_type",
                     "moe_overlap_ep_comm": "moe_overlap_ep_comm",
                     "delay_wgrad_compute": "delay_wgrad_compute",
                     "moe_permute_fusion": "moe_permute_fusion"}
"""column -> ``parallel`` field; the cells go to the config as written, which reads its
numbers and switches as for ``trainsim validate`` (true/false, 1/0, yes/no, on/off); an
empty cell leaves the field to the framework profile."""


def row_config(row: dict[str, str]) -> dict[str, Any]:
    """The run a row describes, as a trainsim config mapping."""
    parallel = {field: row[col].strip() for col, field in _PARALLEL_COLUMNS.items()
                if row[col].strip()}
    return {
        "model": {"preset": row["model"]},
        "parallel": parallel,
        "training": {"global_batch_size": row["global_batch_size"],
                     "micro_batch_size": row["micro_batch_size"],
                     "seq_length": row["seq_length"], "dtype": row["dtype"],
                     "cuda_graphs": cuda_graphs(row),
                     "framework": row["framework"],
                     "framework_version": row["framework_version"]},
        "cluster": {"gpu": row["gpu"], "num_gpus": row["num_gpus"],
                    "gpus_per_node": row["gpus_per_node"]},
    }


def run_config(row: dict[str, str]) -> RunConfig:
    """The row's run, resolved (a cell the config cannot read raises ``ConfigError``)."""
    return run_config_from_dict(row_config(row))


def predict(rows: list[dict[str, str]] | None = None) -> list[tuple[dict[str, str], float]]:
    """(row, predicted step seconds) for each row."""
    rows = read_rows() if rows is None else rows
    return [(row, simulate(run_config(row)).iteration_time_s) for row in rows]


def pairs(results: list[tuple[dict[str, str], float]]
          ) -> list[tuple[str, tuple[float, float], tuple[float, float]]]:
    """(dispatcher, (measured off, on), (predicted off, on)) for each dispatcher's pair."""
    by: dict[str, dict[bool, tuple[float, float]]] = {}
    for row, pred in results:
        on = run_config(row).parallel.moe_overlap_ep_comm
        by.setdefault(row["moe_dispatcher"], {})[on] = (float(row["measured_step_s"]), pred)
    return [(d, (v[False][0], v[True][0]), (v[False][1], v[True][1]))
            for d, v in by.items() if set(v) == {False, True}]


def main() -> int:
    results = predict()
    print(f"{'row':56s} {'measured':>9s} {'trainsim':>9s} {'error':>7s}")
    for row, pred in results:
        meas = float(row["measured_step_s"])
        print(f"{row['id']:56s} {meas:9.2f} {pred:9.2f} {(pred / meas - 1) * 100:+6.1f}%")
    for dispatcher, (m_off, m_on), (p_off, p_on) in pairs(results):
        print(f"{dispatcher}: the overlap saves {(1 - m_on / m_off) * 100:.1f} % of the step "
              f"measured, {(1 - p_on / p_off) * 100:.1f} % predicted")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
