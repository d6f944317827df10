"""Writes benchmarks/training_dgxc_paxml.csv: NVIDIA/dgxc-benchmarking's Paxml (JAX) GPT recipes,
the 'Expected Performance' tables of `paxml/README_175b.md` (GPT-3 175B, fp8, 128-2,048 H100) and
`paxml/README_5b.md` (GPT-3 5B, fp8 and bf16, 16-128 H100) in release v24.11.1 (35a9aec; the same
tables in v25.01 143b90d), run in ghcr.io/nvidia/jax:pax-2024-03-04 with Transformer Engine. Paxml
has a profile, catalog/frameworks/paxml.yaml (55th session): the rows name it. Settings from
the release's `paxml/configure.sh` and `paxml_mod_configs.py`, the model from google/paxml
`paxml/contrib/gpu/scripts_gpu/configs.py` @ d505f45 (2024-02-28, the last change before the
container's date; see training_dgxc_paxml.md).

    python benchmarks/dgxc_paxml_rows.py > benchmarks/training_dgxc_paxml.csv
    python benchmarks/dgxc_paxml_rows.py --check   # tables and configs against the mirrors
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

HEADER = mirror_rows.v2_header(distributed_optimizer=["dp_replicate"],
                               recompute_modules=["remat_policy"],
                               note=["attention_dropout", "hidden_dropout"])
REPO_DIR = "NVIDIA+dgxc-benchmarking"
REPO = "NVIDIA/dgxc-benchmarking"
COMMIT = "35a9aec"
PAX_DIR, PAX_COMMIT = "google+paxml", "d505f45"
PAX_CONFIGS = "paxml/contrib/gpu/scripts_gpu/configs.py"

# size -> (README, preset, vocab, MBS, FSDP nodes, checkpoint policy, (recompute, remat_policy, why),
#          {dtype: (README line of the step row, title, first GPUs, step seconds per column)})
MODELS = {
    "175b": ("paxml/README_175b.md", "gpt3-175b", 50257, 2, 16, "SAVE_QKV_OUT_PROJ",
             ("selective", "save_qkv_out_proj",
              ("CHECKPOINT_POLICY SAVE_QKV_OUT_PROJ (paxml_mod_configs.py Synthetic175BCkpt; "
               "praxis checkpoint_policy.py: save_only_these_names combined_qkv_proj, "
               "out_proj): the fused QKV and output projections' outputs kept; the norms, the "
               "attention core, its residual add, the MLP's first projection and GELU re-run, "
               "its output projection not (jax.checkpoint DCE: the paxml profile's remat_dce; "
               "workload.remat_policy)")),
             {"fp8": (49, "Paxml GPT175B 24.11 FP8 (FSDP+DP, MBS=2)", 128,
                      (7.47, 7.58, 7.60, 7.89, 8.02))}),
    "5b": ("paxml/README_5b.md", "gpt3-5b", 50304, 4, 1, "SAVE_DOT_ONLY",
           ("selective", "save_dot_only",
            ("CHECKPOINT_POLICY SAVE_DOT_ONLY (paxml_mod_configs.py Synthetic5BCkpt; praxis "
             "checkpoint_dots): every matmul's output kept, the rest re-run: the layer norms, "
             "the residual add between them, GELU and Transformer Engine's fused attention (a "
             "custom call, not a dot; workload.remat_policy)")),
           {"fp8": (49, "Paxml GPT5B FP8 (FSDP+DP, MBS=4)", 16, (0.47, 0.48, 0.48, 0.5)),
            "bf16": (56, "Paxml GPT5B BF16 (FSDP+DP, MBS=4)", 16, (0.634, 0.639, 0.643, 0.651))}),
}
SEQ = 2048  # GPT126MBase MAX_SEQ_LEN, inherited


def layout(size: str, gpus: int) -> tuple[int, int]:
    """(FSDP size, replicas): ICI mesh [1, 8, 1] (8 GPUs of a node on the 'data' axis, over which
    Pax shards weights), DCN mesh [nodes / FSDP, FSDP, 1] with configure.sh's FSDP nodes."""
    fsdp_nodes = MODELS[size][4]
    return 8 * fsdp_nodes, gpus // 8 // fsdp_nodes


def row_id(size: str, dtype: str, gpus: int) -> str:
    return f"dgxc-paxml-gpt3-{size}-{dtype}-h100-{gpus}"


def rows() -> list[dict[str, object]]:
    out = []
    for size, (readme, preset, vocab, mbs, _fn, _pol, (rc, policy, why), tables) in MODELS.items():
        for dtype, (line, title, first, steps) in tables.items():
            for i, t in enumerate(steps):
                gpus = first * 2 ** i
                fsdp, replicas = layout(size, gpus)
                r = {k: "" for k in HEADER}
                r.update(
                    id=row_id(size, dtype, gpus), model=preset, vocab_size=vocab,
                    source=(f"{REPO} {readme} @ release v24.11.1 ({COMMIT}; the same table in "
                            f"v25.01 143b90d), 'Expected Performance' table '{title}', line "
                            f"{line} 'Training step time (seconds per step)'; settings from "
                            "paxml/configure.sh and paxml_mod_configs.py, the model from "
                            f"google/paxml {PAX_CONFIGS} @ {PAX_COMMIT}"),
                    seq_length=SEQ, gpu="h100-sxm-80gb", num_gpus=gpus, gpus_per_node=8,
                    nic_gbps_per_gpu=400, tp=1, pp=1, cp=1, ep=1, vpp=1, sequence_parallel=0,
                    recompute=rc, remat_policy=policy, zero_stage=3,
                    dp_replicate=replicas, global_batch_size=mbs * gpus, micro_batch_size=mbs,
                    dtype=dtype, fp8_recipe="delayed" if dtype == "fp8" else "",
                    framework="paxml", framework_version="2024-03-04", attention="cudnn",
                    attention_dropout=0, hidden_dropout=0, measured_iteration_s=t,
                    note=(f"published {t} s per step ('train_step() took', the last step: 'we "
                          "are using the last training step timing'), as published; column "
                          f"'{gpus}x H100 GPUs (GBS={mbs * gpus})'; the table's tokens/s = {SEQ} x "
                          f"GBS / step time; PERCORE_BATCH_SIZE {mbs} (configure.sh MBS); mesh "
                          f"ICI [1, 8, 1] x DCN [{replicas}, {fsdp // 8}, 1] (configs.py "
                          "ICI_MESH_SHAPE, configure.sh DCN_MESH_SHAPE=[DP, FSDP, 1]): weights "
                          f"sharded over {fsdp} GPUs, {replicas} replica(s): zero_stage 3 with "
                          "dp_replicate; no tensor or pipeline parallelism; "
                          f"{why}; Transformer Engine layers (ENABLE_TE=1) with its fused "
                          "attention (NVTE_FUSED_ATTN=1; XLA's own cuDNN FMHA off: "
                          "--xla_gpu_enable_cudnn_fmha=false): cudnn; "
                          + ("fp8 (ENABLE_FP8=1: TE delayed scaling); " if dtype == "fp8" else "")
                          + "XLA latency-hiding scheduler with async / pipelined all-gather, "
                          "reduce-scatter and all-reduce (no option cell: the profile's own "
                          "overlap); the model: configs.py "
                          + ("GPT175BBase (96 layers, 12288, 96 heads, MLP 4 x 12288, vocab "
                             "50257, GELU, biases, learned positions, tied softmax embedding)"
                             if size == "175b" else
                             "GPT5BBase (24 layers, 4096, 32 heads of 128, MLP 16384, vocab 50304 "
                             "from GPT126MBase, GELU, biases, learned positions, tied)")
                          + f", seq {SEQ}, as the {preset} preset" +
                          (" (vocab column 50257)" if size == "175b" else "")
                          + "; dropout 0 (DROPOUT_PROB 0.0" +
                          ("; the 5B's input_dropout_prob 0.1 drops the stack's input once, not "
                           "per layer)" if size == "5b" else ")")
                          + "; synthetic data; DGX H100, 8 GPUs a node, 400 Gb/s per GPU "
                          "(inferred: the README names only 'H100 GPUs')"))
                out.append(r)
    return out


def check() -> list[str]:
    """The typed steps against the README lines, the columns' GPUs and GBS, tokens/s against
    seq x GBS / step; configure.sh, paxml_mod_configs.py and the model classes."""
    bad = []
    for size, (readme, _p, vocab, mbs, fsdp_nodes, policy, _rc, tables) in MODELS.items():
        lines = mirror_rows.show(REPO_DIR, COMMIT, readme).splitlines()
        for dtype, (line, title, first, steps) in tables.items():
            head = mirror_rows.md_cells(lines[line - 3])
            if head[0] != title:
                bad.append(f"{size} {dtype}: title {head[0]!r}")
            step = mirror_rows.md_cells(lines[line - 1])
            if step[0] != "Training step time (seconds per step)" or \
                    [float(x) for x in step[1:] if x] != list(steps):
                bad.append(f"{size} {dtype}: line {line} {step}")
            tps = [float(x) for x in mirror_rows.md_cells(lines[line])[1:] if x]
            for i, t in enumerate(steps):
                gpus = first * 2 ** i
                want = f"{gpus}x H100 GPUs (GBS={mbs * gpus})"
                if head[i + 1] != want:
                    bad.append(f"{size} {dtype}: column {head[i + 1]!r}, not {want!r}")
                if abs(SEQ * mbs * gpus / t / tps[i] - 1) > 2e-3:
                    bad.append(f"{size} {dtype} {gpus}: tokens/s {tps[i]} vs {SEQ} x GBS / {t}")
        conf = mirror_rows.show(REPO_DIR, COMMIT, "paxml/configure.sh")
        branch = conf.split(f"MODEL_SIZE = {size} ]]", 1)[-1].split("elif", 1)[0]
        bad += [f"configure.sh {size}: no {w}" for w in (f"MBS={mbs}", f"FSDP={fsdp_nodes}")
                if w not in branch]
        mod = mirror_rows.show(REPO_DIR, COMMIT, "paxml/paxml_mod_configs.py")
        if f"class Synthetic{size.upper()}Ckpt(Synthetic{size.upper()}):\n  CHECKPOINT_POLICY = " \
                f"layers.AutodiffCheckpointType.{policy}" not in mod:
            bad.append(f"paxml_mod_configs.py: {size} policy not {policy}")
        if MODELS[size][6][1] != policy.lower():
            bad.append(f"{size}: row policy {MODELS[size][6][1]} not {policy}")
    conf = mirror_rows.show(REPO_DIR, COMMIT, "paxml/configure.sh")
    bad += [f"configure.sh: no {w!r}" for w in (
        "export NVTE_FUSED_ATTN=1", "export ENABLE_TE=1", "export ENABLE_FP8=1",
        "--xla_gpu_enable_cudnn_fmha=false", "--xla_gpu_enable_latency_hiding_scheduler=true",
        "DP=$(( SLURM_JOB_NUM_NODES / FSDP ))", "--fdl.DCN_MESH_SHAPE=[${DP},${FSDP},1]",
        "--fdl.PERCORE_BATCH_SIZE=${MBS}") if w not in conf]
    if "export FW_VERSION=2024.03.04" not in mirror_rows.show(REPO_DIR, COMMIT, "paxml/launch.sh"):
        bad.append("launch.sh: FW_VERSION not 2024.03.04")
    pax = mirror_rows.show(PAX_DIR, PAX_COMMIT, PAX_CONFIGS)
    b5 = pax.split("class GPT5BBase(GPT126MBase):", 1)[-1].split("class GPT175BBase", 1)[0]
    b175 = pax.split("class GPT175BBase(GPT126MBase):", 1)[-1].split("### synthetic", 1)[0]
    base = pax.split("class GPT126MBase(", 1)[-1].split("class GPT5BBase", 1)[0]
    for block, name, phrases in (
            (base, "GPT126MBase", ("MAX_SEQ_LEN = 2048", "VOCAB_SIZE = 50304", "USE_BIAS = True")),
            (b5, "GPT5BBase", ("ICI_MESH_SHAPE = [1, 8, 1]", "NUM_LAYERS = 24", "NUM_HEADS = 32",
                               "MODEL_DIMS = 4096", "HIDDEN_DIMS = 16384",
                               "input_dropout_prob = 0.1")),
            (b175, "GPT175BBase", ("ICI_MESH_SHAPE = [1, 8, 1]", "NUM_LAYERS = 96",
                                   "MODEL_DIMS = 12288", "HIDDEN_DIMS = MODEL_DIMS * 4",
                                   "VOCAB_SIZE = 50257", "SEPARATE_EMBEDDING = False"))):
        bad += [f"{name}: no {p!r}" for p in phrases if p not in block]
    for name in ("Synthetic5B(GPT5BBase", "Synthetic175B(GPT175BBase"):
        if f"class {name}, SyntheticDataset)" not in pax:
            bad.append(f"configs.py: no class {name}")
    return bad


if __name__ == "__main__":
    mirror_rows.main(rows, HEADER, check, "tables and configs as in the mirrors")
