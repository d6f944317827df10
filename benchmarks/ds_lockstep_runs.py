"""DeepSpeed's pipeline placed step by step (trainsim.ds_lockstep) against the folded passes it
replaced, on small runs: the iteration both ways and the difference.

    PYTHONPATH=src python benchmarks/ds_lockstep_runs.py
"""

from __future__ import annotations

from unittest import mock

import trainsim

RUNS = [(2, 16, 1), (4, 16, 1), (4, 4, 1), (4, 64, 2), (8, 16, 1)]
"""(pp, global batch, tp): h100, hidden 256, 8 layers, seq 512, micro-batch 1, dp 2."""


def config(pp: int, gbs: int, tp: int) -> trainsim.RunConfig:
    return trainsim.run_config_from_dict({
        "model": {"hidden_size": 256, "num_layers": 8, "num_attention_heads": 4,
                  "vocab_size": 1024},
        "parallel": {"pp": pp, "tp": tp, "data_parallel_impl": "deepspeed", "zero_stage": 1},
        "training": {"seq_length": 512, "micro_batch_size": 1, "global_batch_size": gbs},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": pp * tp * 2, "gpus_per_node": 8,
                    "compute_db": None}})


def main() -> None:
    print("| run | micro-batches | folded (ms) | steps (ms) | change |")
    print("|---|---|---|---|---|")
    for pp, gbs, tp in RUNS:
        cfg = config(pp, gbs, tp)
        after = trainsim.simulate(cfg, keep_timeline=True).iteration_time_s
        with mock.patch("trainsim.ds_lockstep.lockstep_applies", lambda tg: False):
            before = trainsim.simulate(cfg, keep_timeline=True).iteration_time_s
        print(f"| pp {pp} tp {tp} | {cfg.num_microbatches} | {before * 1e3:.6f} | "
              f"{after * 1e3:.6f} | {100 * (after / before - 1):+.3f} % |")


if __name__ == "__main__":
    main()
