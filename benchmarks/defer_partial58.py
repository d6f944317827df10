"""A partial output-layer wgrad deferral (``wgrad_deferral_limit`` below the micro-batches) at
long iterations: main simulated every micro-batch (``deferred_wgrad.partial_deferral``), settle58
takes the periodic shortcut past the last deferred backward. One ``simulate`` per row in this
process (CPU seconds, ``time.process_time``), the method and the iteration time; runs on any
checkout (main: ``PYTHONPATH=/work/main/src``).

    PYTHONPATH=src python benchmarks/defer_partial58.py
"""

from __future__ import annotations

import time

from trainsim import run_config_from_dict, simulate


def config(m: int, limit: int, vpp: int | None, pp: int = 8, dp: int = 2):
    """A 175B-shaped GPT-3 slice (12 layers a stage), tp 4, sequence parallel, the deferral on."""
    par = {"tp": 4, "pp": pp, "sequence_parallel": True, "distributed_optimizer": True,
           "overlap_grad_reduce": True, "defer_embedding_wgrad_compute": True,
           "wgrad_deferral_limit": limit, "vpp": vpp}
    return run_config_from_dict({
        "model": {"name": "gpt3-slice", "hidden_size": 12288, "num_layers": 96,
                  "num_attention_heads": 96, "vocab_size": 51200, "activation": "gelu",
                  "position_embedding": "learned", "normalization": "layernorm"},
        "parallel": par,
        "training": {"global_batch_size": m * dp, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "bf16"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 4 * pp * dp, "gpus_per_node": 8}})


def main() -> None:
    simulate(config(64, 0, None))  # catalogs loaded
    print("| m | limit | vpp | CPU s | method | iteration s |")
    print("|---|---|---|---|---|---|")
    for m, limit, vpp in ((256, 65, None), (1024, 65, None), (4096, 65, None),
                          (16384, 65, None), (1024, 65, 2), (4096, 65, 2), (4096, 1000, None)):
        cfg = config(m, limit, vpp)
        t0 = time.process_time()
        result = simulate(cfg)
        cpu = time.process_time() - t0
        print(f"| {m:,} | {limit} | {vpp or 1} | {cpu:.2f} | {result.simulation['method']} | "
              f"{result.iteration_time_s:.12g} |", flush=True)


if __name__ == "__main__":
    main()
