"""Writes benchmarks/training_dgxc_maxtext.csv: NVIDIA/dgxc-benchmarking's MaxText (JAX) recipes,
the 'Expected Performance' tables of `maxtext/README_70b.md`: Llama 2 70B (release v24.11.1
35a9aec; the same tables in v25.01 143b90d) and Llama 3 70B (release v25.02 8f5cbb3), bf16 and
fp8, 64 to 2,048 DGX H100 GPUs, FSDP with data-parallel replicas beyond 128 GPUs. MaxText has a
profile, catalog/frameworks/maxtext.yaml (55th session): the rows name it as published. The
settings are the release's `maxtext/configure.sh` and `launch.sh` (see training_dgxc_maxtext.md).

    python benchmarks/dgxc_maxtext_rows.py > benchmarks/training_dgxc_maxtext.csv
    python benchmarks/dgxc_maxtext_rows.py --check   # the typed tables and flags against the mirror
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

HEADER = mirror_rows.v2_header(distributed_optimizer=["dp_replicate"],
                               recompute_modules=["remat_policy"])
REPO_DIR = "NVIDIA+dgxc-benchmarking"
REPO = "NVIDIA/dgxc-benchmarking"
README = "maxtext/README_70b.md"

# release -> (commit, label, model preset, MaxText container, seq, first GPU column, dtype ->
#             (README line of the step-time row, step seconds per column))
RELEASES = {
    "llama2": ("35a9aec", "v24.11.1 (35a9aec; the same tables in v25.01 143b90d)", "llama2-70b",
               "2024-12-09", 4096, 64,
               {"bf16": (53, (6.999, 7.072, 7.153, 7.091, 7.084, 7.066)),
                "fp8": (60, (4.324, 4.556, 4.959, 5.043, 5.062, 4.93))}),
    "llama3": ("8f5cbb3", "v25.02 (8f5cbb3)", "llama3-70b", "2025-01", 8192, 128,
               {"bf16": (53, (15.563, 15.444, 15.519, 15.603, 15.898)),
                "fp8": (60, (9.074, 9.488, 9.244, 9.483, 9.339))}),
}
CONTAINER = {"llama2": "ghcr.io/nvidia/jax:maxtext-2024-12-09",
             "llama3": "nvcr.io/nvidia/jax:25.01-maxtext-py3"}
TITLE = {"llama2": "Maxtext LLama2 70b", "llama3": "Maxtext Llama3 70b"}
MBS = 2  # configure.sh MBS=2: per_device_batch_size, so GBS = 2 x GPUs

# remat policy per release and dtype: (trainsim recompute, remat_policy, why); the policy's kept
# names set what re-runs (workload.remat_policy), not Megatron-core modules
LLAMA2_DEVICE = "query_proj;value_proj;key_proj;qkv_proj;out_proj"
REMAT = {
    ("llama2", "bf16"): ("selective", f"custom:{LLAMA2_DEVICE};mlpwo",
                         ("remat_policy=custom with query_proj, value_proj, key_proj, qkv_proj, "
                          "out_proj and mlpwo on device (configure.sh CONFIG_OVERRIDES after "
                          "BASE_CONFIG's remat_policy=save_dot_except_mlpwi, the same names): "
                          "the norms, the attention, its residual add and the MLP's input "
                          "projections with their activation re-run; the kept projections, "
                          "mlpwo and the last residual add not (jax.checkpoint DCE: the maxtext "
                          "profile's remat_dce; workload.remat_policy)")),
    ("llama2", "fp8"): ("selective", f"custom:{LLAMA2_DEVICE}",
                        ("remat_policy=custom with query_proj, value_proj, key_proj, qkv_proj "
                         "and out_proj on device (after remat_policy=save_dot_except_mlp, the "
                         "same names): as bf16, mlpwo not kept but not re-run either (no "
                         "gradient reads it), the fp8 casts of every projection's input re-run "
                         "(workload.remat_policy)")),
    ("llama3", "bf16"): ("full", "save_qkv_proj",
                         ("remat_policy=save_qkv_proj (configure.sh POLICY, no custom "
                          "override): only the q/k/v projections' outputs (after RoPE) kept, "
                          "every other op of the layer re-run but mlpwo and the last residual "
                          "add (jax.checkpoint DCE: the maxtext profile's remat_dce; "
                          "workload.remat_policy)")),
}
REMAT[("llama3", "fp8")] = REMAT[("llama3", "bf16")]


def layout(gpus: int) -> tuple[int, int]:
    """(FSDP size, replicas): configure.sh ici_FSDP = 8 GPUs a node, dcn_FSDP = nodes, but 16
    with dcn_DP = nodes / 16 from 64 nodes on."""
    nodes = gpus // 8
    return (gpus, 1) if nodes < 64 else (128, nodes // 16)


def row_id(model: str, dtype: str, gpus: int) -> str:
    return f"dgxc-maxtext-{model}-70b-{dtype}-h100-{gpus}"


def rows() -> list[dict[str, object]]:
    out = []
    for model, (commit, rel, preset, image, seq, first, tables) in RELEASES.items():
        for dtype, (line, steps) in tables.items():
            recompute, policy, why = REMAT[(model, dtype)]
            for i, t in enumerate(steps):
                gpus = first * 2 ** i
                fsdp, replicas = layout(gpus)
                r = {k: "" for k in HEADER}
                r.update(
                    id=row_id(model, dtype, gpus), model=preset,
                    source=(f"{REPO} {README} @ release {rel}, 'Expected Performance' table "
                            f"'{TITLE[model]} {dtype.upper()} (FSDP+DP MBS=2)', line {line} "
                            "'Training step time (seconds per step)'; settings from the "
                            "release's maxtext/configure.sh and launch.sh"),
                    seq_length=seq, gpu="h100-sxm-80gb", num_gpus=gpus, gpus_per_node=8,
                    nic_gbps_per_gpu=400, tp=1, pp=1, cp=1, ep=1, vpp=1, sequence_parallel=0,
                    recompute=recompute, remat_policy=policy, zero_stage=3,
                    dp_replicate=replicas, global_batch_size=MBS * gpus,
                    micro_batch_size=MBS, dtype=dtype, fp8_recipe="delayed" if dtype == "fp8" else "",
                    framework="maxtext", framework_version=image, attention="cudnn",
                    options="onehot_embedding",
                    measured_iteration_s=t,
                    note=(f"published {t} s per step, the last step of a 50-step run ('we are "
                          "using the last training step timing'), as published; column "
                          f"'{gpus}x H100 GPUs (FSDP={fsdp} GBS={MBS * gpus})'; the table's tokens/s "
                          f"= {seq} x GBS / step time agrees; FSDP {fsdp} x {replicas} replica(s) "
                          "(configure.sh: ici_fsdp 8, dcn_fsdp = nodes, from 64 nodes dcn_fsdp 16 "
                          "and dcn_data = nodes / 16): zero_stage 3 with dp_replicate; no tensor, "
                          f"pipeline or context parallelism (ici/dcn TP 1); per_device_batch_size "
                          f"{MBS}, max_target_length {seq}, attention=cudnn_flash_te (cuDNN fused "
                          "attention via Transformer Engine, NVTE_FUSED_ATTN=1), scan_layers, "
                          "use_iota_embed=true (the token lookup a one-hot jnp.dot, MaxText "
                          "layers/embeddings.py: option onehot_embedding), "
                          "synthetic data, logits_dot_in_fp32=false; "
                          + ("quantization=fp8 (MaxText's fp8 dot_general with delayed amax "
                             "scaling; written delayed); " if dtype == "fp8" else "")
                          + f"{why}; XLA latency-hiding scheduler with a PGLE profile and "
                          "pipelined all-gather / reduce-scatter / all-reduce (collectives "
                          "overlapped by XLA; no option cell: the profile's own overlap); "
                          f"container {CONTAINER[model]} (setup.sh); DGX H100, 8 GPUs a node, 400 Gb/s per GPU (inferred: the "
                          "README names only 'H100 GPUs')"))
                out.append(r)
    return out


def check() -> list[str]:
    """Each typed step time against its README line, the column headers' GPUs / FSDP / GBS
    against ``layout``, the tokens/s row against seq x GBS / step, and configure.sh's flags."""
    bad = []
    for model, (commit, _rel, _p, image, seq, first, tables) in RELEASES.items():
        lines = mirror_rows.show(REPO_DIR, commit, README).splitlines()
        for dtype, (line, steps) in tables.items():
            head = mirror_rows.md_cells(lines[line - 3])
            if head[0] != f"{TITLE[model]} {dtype.upper()} (FSDP+DP MBS=2)":
                bad.append(f"{model} {dtype}: table title {head[0]!r}")
            step = mirror_rows.md_cells(lines[line - 1])
            if step[0] != "Training step time (seconds per step)" or \
                    [float(x) for x in step[1:] if x] != list(steps):
                bad.append(f"{model} {dtype}: line {line} {step}")
            tps = [float(x) for x in mirror_rows.md_cells(lines[line])[1:] if x]
            for i, t in enumerate(steps):
                gpus = first * 2 ** i
                fsdp, _ = layout(gpus)
                want = f"{gpus}x H100 GPUs (FSDP={fsdp} GBS={MBS * gpus})"
                if want not in head[i + 1]:
                    bad.append(f"{model} {dtype}: column {head[i + 1]!r}, not {want!r}")
                if abs(seq * MBS * gpus / t / tps[i] - 1) > 1e-3:
                    bad.append(f"{model} {dtype} {gpus}: tokens/s {tps[i]} vs {seq} x GBS / {t}")
        conf = mirror_rows.show(REPO_DIR, commit, "maxtext/configure.sh")
        launch = mirror_rows.show(REPO_DIR, commit, "maxtext/launch.sh")
        setup = mirror_rows.show(REPO_DIR, commit, "maxtext/setup.sh")
        want = [f"max_target_length={seq}", "MBS=2", "attention=cudnn_flash_te", "ici_TP=1",
                "dcn_TP=1", "ici_FSDP=${SLURM_NTASKS_PER_NODE}", "dcn_FSDP=16",
                "dcn_DP=$(( SLURM_JOB_NUM_NODES / dcn_FSDP ))", 'QUANTIZATION="fp8"',
                "export NVTE_FUSED_ATTN=1", "--xla_gpu_enable_latency_hiding_scheduler=true",
                "--xla_gpu_enable_pipelined_all_gather=true", "use_iota_embed=true",
                "--xla_gpu_graph_level=0", "--xla_gpu_enable_triton_softmax_fusion=false"]
        want += ['POLICY="save_dot_except_mlpwi"', 'POLICY="save_dot_except_mlp"'] \
            if model == "llama2" else ['POLICY="save_qkv_proj"']
        bad += [f"{model} configure.sh: no {w!r}" for w in want if w not in conf]
        if model == "llama2":  # each dtype's custom device tensors, as the rows state them
            for dtype, branch in (("fp8", conf.split('"${DTYPE}" = fp8', 1)[-1].split("\nelif")[0]),
                                  ("bf16", conf.split('"${DTYPE}" = bf16', 1)[-1].split("\nelse")[0])):
                device = [w.split("=")[0] for w in branch.split() if w.endswith("=device")]
                if "remat_policy=custom" not in branch or \
                        "custom:" + ";".join(device) != REMAT[(model, dtype)][1]:
                    bad.append(f"llama2 {dtype} configure.sh: custom device tensors {device}")
        if model == "llama3" and "remat_policy=custom" in conf:
            bad.append("llama3 configure.sh: a custom remat policy")
        if f"export MODEL={model}" not in launch:
            bad.append(f"{model} launch.sh: MODEL")
        fw = {"2024-12-09": "2024.12.09", "2025-01": "25.01"}[image]
        if CONTAINER[model].replace("/", "#", 1) not in setup:
            bad.append(f"{model} setup.sh: no {CONTAINER[model]}")
        if f"export FW_VERSION={fw}" not in launch:
            bad.append(f"{model} launch.sh: FW_VERSION not {fw}")
    return bad


if __name__ == "__main__":
    mirror_rows.main(rows, HEADER, check, "tables and configure.sh flags as in the mirror")
