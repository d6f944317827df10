"""Figures of RESULTS "(59th session, mlprecomp59)": the ops a dense Llama-3 8B layer re-runs under
``--recompute-modules mlp`` (TP 2 + SP) and its saved activations, local spec (no framework named) and
Transformer Engine spec (megatron-core 0.12's profile), bf16 and fp8.

usage: PYTHONPATH=src python benchmarks/mlprecomp59_fig.py
"""

import trainsim
from trainsim.memory.layer_activations import activation_bytes_per_layer
from trainsim.workload.layers import layer_forward
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of


def config(te_spec: bool, dtype: str):
    training = {"global_batch_size": 64, "seq_length": 4096, "dtype": dtype}
    if te_spec:
        training["framework"], training["framework_version"] = "megatron-core", "0.12"
    return trainsim.run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"tensor_model_parallel_size": 2, "sequence_parallel": True,
                     "recompute": "selective", "recompute_modules": ["mlp"]},
        "training": training,
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8}})


def main() -> None:
    for te_spec in (False, True):
        for dtype in ("bf16", "fp8"):
            cfg = config(te_spec, dtype)
            sh = shard_of(cfg)
            redo = layer_recompute(cfg, sh, layer_forward(cfg, sh, moe=False))
            print(f"te_spec={te_spec} {dtype}: re-run {len(redo)} ops "
                  f"({', '.join(op.name.removeprefix('recompute.') for op in redo)}), "
                  f"activations {activation_bytes_per_layer(cfg) / 2**20:.1f} MiB/layer")


if __name__ == "__main__":
    main()
