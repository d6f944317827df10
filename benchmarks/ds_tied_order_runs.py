"""DeepSpeed's tied embedding all-reduce before the data-parallel reduction, meeting both end
stages (``OptimizerTasks.tied_first``), against each stage's own all-reduce after its last
backward (the order before) on small h100 runs.

    PYTHONPATH=src python benchmarks/ds_tied_order_runs.py
"""

from __future__ import annotations

from unittest import mock

import trainsim

RUNS = [(2, 16, None), (4, 16, None), (4, 16, 5), (8, 32, None), (8, 32, 9)]
"""(pp, global batch, layers on the last stage or None: even): h100, hidden 256, 2 pp layers,
seq 512, micro-batch 1, dp 2, ZeRO-1, tied embeddings."""


def config(pp: int, gbs: int, last: int | None) -> trainsim.RunConfig:
    extra = {} if last is None else {"decoder_last_pipeline_num_layers": last}
    return trainsim.run_config_from_dict({
        "model": {"hidden_size": 256, "num_layers": 2 * pp, "num_attention_heads": 4,
                  "vocab_size": 1024},
        "parallel": {"pp": pp, "data_parallel_impl": "deepspeed", "zero_stage": 1, **extra},
        "training": {"seq_length": 512, "micro_batch_size": 1, "global_batch_size": gbs},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": pp * 2, "gpus_per_node": 8,
                    "compute_db": None}})


def main() -> None:
    print("| run | micro-batches | each stage's own (ms) | tied first (ms) | change |")
    print("|---|---|---|---|---|")
    for pp, gbs, last in RUNS:
        cfg = config(pp, gbs, last)
        after = trainsim.simulate(cfg).iteration_time_s
        with mock.patch("trainsim.optimizer_tasks.OptimizerTasks.tied_first",
                        lambda self, ends: {}):
            before = trainsim.simulate(cfg).iteration_time_s
        shape = f"pp {pp}" + ("" if last is None else f", last stage {last} of {2 * pp} layers")
        print(f"| {shape} | {cfg.num_microbatches} | {before * 1e3:.6f} | {after * 1e3:.6f} | "
              f"{100 * (after / before - 1):+.3f} % |")


if __name__ == "__main__":
    main()
