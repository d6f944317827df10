"""Audit the Chakra export against the simulated task graph (export59), config by config.

For each configuration below (dense and MoE, ZeRO 0-3, Megatron-FSDP, torchtitan FSDP2, HSDP,
DeepSpeed ZeRO-3 and its pipeline engine, InternEvo's broadcasts, pp with vpp, TP overlap, CP,
EP, DualPipe, per-micro-batch reductions, fixed-size buckets), ``interop.chakra_audit``
reports: tasks with communication, communication seconds written as compute nodes, the
communication segments with no communication node (by category), and the (collective, group)
whose bytes differ between the export and the simulation's ops.

    PYTHONPATH=src python benchmarks/export59_audit.py [--only NAME,...]
"""

from __future__ import annotations

import argparse
import sys

import trainsim

SMALL = {"name": "small", "hidden_size": 1024, "num_layers": 4, "num_attention_heads": 16,
         "num_kv_heads": 4, "ffn_hidden_size": 3584, "vocab_size": 32000,
         "activation": "swiglu", "normalization": "rmsnorm", "position_embedding": "rope",
         "tied_embeddings": False, "add_bias_linear": False}
MOE = {**SMALL, "num_experts": 8, "moe_router_topk": 2}
H100 = {"node": "dgx-h100", "num_gpus": 16}
A100 = {"gpu": "a100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8, "nic_gbit_s_per_gpu": 100}


def _cfg(parallel: dict, training: dict | None = None, model: dict | str = SMALL,
         cluster: dict = H100) -> dict:
    return {"model": model, "parallel": parallel, "cluster": cluster,
            "training": {"seq_length": 2048, "micro_batch_size": 1, "global_batch_size": 16,
                         "dtype": "bf16", **(training or {})}}


MEGATRON = {"distributed_optimizer": True, "overlap_grad_reduce": True}
CONFIGS: dict[str, dict] = {
    "ddp zero0": _cfg({"tp": 2, "overlap_grad_reduce": True}),
    "zero1 (distributed optimizer)": _cfg({"tp": 2, **MEGATRON, "overlap_param_gather": True}),
    "zero1 fixed buckets": _cfg({"tp": 2, **MEGATRON, "dp_buckets": "fixed",
                                 "ddp_bucket_size": 5_000_000}),
    "zero2 deepspeed": _cfg({"tp": 2, "zero_stage": 2, "data_parallel_impl": "deepspeed"}),
    "zero3 deepspeed": _cfg({"tp": 1, "zero_stage": 3, "data_parallel_impl": "deepspeed"}),
    "megatron-fsdp (nemo 25.04)": _cfg({"tp": 1, "zero_stage": 3, "distributed_optimizer": True},
                                       {"framework": "nemo", "framework_version": "25.04"},
                                       {"preset": "llama3-8b", "num_layers": 2},
                                       {"gpu": "h100-sxm-80gb", "num_gpus": 8,
                                        "gpus_per_node": 8}),
    "fsdp2 (torchtitan)": _cfg({"tp": 1, "zero_stage": 3, "data_parallel_impl": "fsdp2"},
                               {"framework": "torchtitan", "framework_version": "2025-06"}),
    "hsdp (fsdp2, 2 replicas)": _cfg({"tp": 1, "zero_stage": 3, "data_parallel_impl": "fsdp2",
                                      "dp_replicate": 2}, cluster=A100),
    "fsdp2 pp2 (torchtitan)": _cfg({"tp": 1, "pp": 2, "zero_stage": 3,
                                    "data_parallel_impl": "fsdp2"},
                                   {"framework": "torchtitan", "framework_version": "2025-06"}),
    "internevo zero1 broadcasts": _cfg({"tp": 1, "zero_stage": 1, "dp_replicate": 2,
                                        "overlap_grad_reduce": True},
                                       {"framework": "internevo", "framework_version": "2023-07",
                                        "attention": "flash1"}, cluster=A100),
    "pp4 vpp2": _cfg({"tp": 2, "pp": 4, "virtual_pipeline_model_parallel_size": 1, **MEGATRON},
                     model={**SMALL, "num_layers": 8}),
    "tp-sp-cp-pp-vpp": _cfg({"tp": 2, "sequence_parallel": True, "cp": 2, "pp": 2,
                             "virtual_pipeline_model_parallel_size": 2, **MEGATRON}),
    "pp4 tp overlap p2p overlap": _cfg({"pp": 4, "tp": 2, "sequence_parallel": True,
                                         "tp_comm_overlap": True, "overlap_p2p_comm": True,
                                         "overlap_param_gather": True, **MEGATRON}),
    "moe ep4 pp2": _cfg({"tp": 2, "sequence_parallel": True, "ep": 4, "pp": 2, **MEGATRON},
                        model=MOE),
    "moe ep8 dualpipe": _cfg({"tp": 1, "pp": 2, "ep": 8, "pipeline_schedule": "dualpipe",
                              **MEGATRON}, {"global_batch_size": 64}, MOE),
    "deepspeed pp2 zero1": _cfg({"tp": 1, "pp": 2, "zero_stage": 1,
                                 "data_parallel_impl": "deepspeed"}),
    "megatron-llama every-mb reduce (fusion off)": {
        "model": {"preset": "llama2-7b", "num_layers": 4},
        "parallel": {"tp": 2, "pp": 1, "sequence_parallel": True, "distributed_optimizer": True,
                     "overlap_grad_reduce": True, "ddp_bucket_size": 100_000_000},
        "training": {"global_batch_size": 32, "micro_batch_size": 2, "seq_length": 1024,
                     "dtype": "bf16", "attention": "flash1", "framework": "megatron-llama",
                     "framework_version": "2023-09", "gradient_accumulation_fusion": False},
        "cluster": A100},
    "moe combined 1f1b (ep overlap)": _cfg({"tp": 1, "ep": 4, "moe_overlap_ep_comm": True,
                                            **MEGATRON}, model=MOE),
    "moe combined 1f1b fsdp2": _cfg({"tp": 1, "ep": 4, "moe_overlap_ep_comm": True,
                                      "zero_stage": 3, "data_parallel_impl": "fsdp2"},
                                     model=MOE),
    "moe fsdp2 ep2 (edp)": _cfg({"tp": 1, "ep": 2, "zero_stage": 3,
                                 "data_parallel_impl": "fsdp2"},
                                {"framework": "torchtitan", "framework_version": "2025-06"}, MOE),
    "zero3 deepspeed recompute full": _cfg({"tp": 1, "zero_stage": 3, "recompute": "full",
                                             "data_parallel_impl": "deepspeed"}),
    "zero3 deepspeed per-parameter gathers": _cfg({"tp": 1, "zero_stage": 3,
                                                   "zero3_gather": "per_parameter",
                                                   "data_parallel_impl": "deepspeed"}),
    "fsdp1 hsdp (pytorch 2.4)": _cfg({"tp": 1, "zero_stage": 3, "data_parallel_impl": "fsdp1",
                                      "dp_replicate": 2},
                                     {"framework": "pytorch", "framework_version": "2.4"},
                                     cluster=A100),
    "megatron-fsdp pp2 (nemo 25.04)": _cfg({"tp": 1, "pp": 2, "zero_stage": 3,
                                            "distributed_optimizer": True},
                                           {"framework": "nemo", "framework_version": "25.04"},
                                           {"preset": "llama3-8b", "num_layers": 4},
                                           {"gpu": "h100-sxm-80gb", "num_gpus": 16,
                                            "gpus_per_node": 8}),
    "hsdp megatron distributed optimizer": _cfg({"tp": 1, "zero_stage": 1, "dp_replicate": 2,
                                                 "data_parallel_impl": "megatron", **MEGATRON},
                                                cluster=A100),
    "tied embeddings pp2": _cfg({"tp": 2, "pp": 2, **MEGATRON},
                                model={**SMALL, "tied_embeddings": True}),
    "deepspeed pp2 tied zero1": _cfg({"tp": 1, "pp": 2, "zero_stage": 1,
                                       "data_parallel_impl": "deepspeed"},
                                      model={**SMALL, "tied_embeddings": True}),
}
for _name in ("pp4 vpp2",):  # vpp 2 needs the layers split 4 x 2
    CONFIGS[_name]["parallel"]["virtual_pipeline_model_parallel_size"] = 2


def audit_rows(only: list[str] | None = None) -> list[tuple[str, object]]:
    from trainsim.interop.chakra_audit import audit_chakra  # (CONFIGS alone read elsewhere)

    out = []
    for name, d in CONFIGS.items():
        if only and name not in only:
            continue
        try:
            out.append((name, audit_chakra(trainsim.run_config_from_dict(d))))
        except trainsim.TrainsimError as e:
            out.append((name, f"refused: {e}"))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="comma-separated config names")
    args = ap.parse_args(argv)
    print("| config | tasks with comm | comm written as compute | comm segments without a "
          "comm node | (collective, group) bytes off (simulated / written) |")
    print("|---|---:|---|---|---|")
    bad = 0
    for name, a in audit_rows([s for s in args.only.split(",") if s]):
        if isinstance(a, str):
            print(f"| {name} | {a} | | | |")
            bad += 1
            continue
        bad += not a.clean
        labels = sorted({lab.split(" mb")[0].split(" c")[0] for lab in a.as_compute})
        off = "; ".join(f"{k}: {s:.4g} / {w:.4g}" for k, (s, w) in a.bytes_off.items())
        print(f"| {name} | {a.comm_tasks} | "
              + (f"{len(a.as_compute)} tasks, {a.as_compute_s * 1e3:.3f} ms ("
                 + ", ".join(labels[:3]) + ")" if a.as_compute else "none")
              + f" | {dict(a.missing) or 'none'} | {off or 'none'} |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
