"""Writes benchmarks/training_dgxc_grok1.csv: NVIDIA/dgxc-benchmarking's Grok-1 314B proxy recipe
(NeMo, Megatron-core MoE), the 'Expected Performance' tables of `grok1/README_314b.md` in release
v24.11.1 (35a9aec, the nemo:dev container of FW_VERSION 24.09; the same tables in v25.01 143b90d
and v25.01.1 e6afea3) and release v25.02 (8f5cbb3, nvcr.io/nvidia/nemo:24.12, re-measured), bf16
and fp8, 8 to 2,048 DGX H100 GPUs, the model truncated to 2-64 layers below 512 GPUs. The layouts
are the release's `grok1/configure.sh` (the README's table agrees) and the model the recipe's
`grok1_314b.yaml` (see training_dgxc_grok1.md).

    python benchmarks/dgxc_grok1_rows.py > benchmarks/training_dgxc_grok1.csv
    python benchmarks/dgxc_grok1_rows.py --check   # tables, configure.sh and yaml against the mirror
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows
import nvls_cells

HEADER = mirror_rows.v2_header(vocab_size=["tied_embeddings"], ep=["etp"],
                               note=["attention_dropout", "hidden_dropout", "fp8_param_gather",
                                     nvls_cells.COLUMN])
REPO_DIR = "NVIDIA+dgxc-benchmarking"
REPO = "NVIDIA/dgxc-benchmarking"
README = "grok1/README_314b.md"
GPUS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048)

# release -> (commit, label, NeMo version, container, {dtype: (README line, title, step s per column)})
RELEASES = {
    "2411": ("35a9aec", "v24.11.1 (35a9aec; the same tables in v25.01 143b90d and v25.01.1 e6afea3)",
             "24.09", "nvcr.io/nvidia/nemo:dev (launch.sh FW_VERSION 24.09)",
             {"bf16": (66, "Grok 1 314b Dev BF16", (24.03, 21.52, 10.64, 20.64, 20.64, 20.7, 20.83, 21, 21.09)),
              "fp8": (73, "Grok 1 314b Dev FP8", (19.89, 17.08, 8.3, 16.21, 16.48, 16.55, 16.69, 16.89, 17.04))}),
    "2502": ("8f5cbb3", "v25.02 (8f5cbb3)", "24.12", "nvcr.io/nvidia/nemo:24.12",
             {"bf16": (66, "Grok 1 314b BF16", (24.00, 21.71, 10.70, 21.42, 20.73, 20.83, 21.01, 21.20, 21.29)),
              "fp8": (73, "Grok 1 314b FP8", (19.71, 17.80, 8.70, 17.53, 16.70, 16.75, 16.90, 17.01, 17.30))}),
}

# the one column whose tokens/s disagrees with its step time (0.5 %: 8192 x 2048 / 981295 =
# 17.097 s, the step printed 17.01): the step time is kept as published
TPS_OFF = {("2502", "fp8", 1024): 981295.0}

# configure.sh: GPUs -> (layers, seq, tp, pp, cp, ep, vpp, GBS); 64 layers, PP 8, CP 2, EP 8,
# VP 8 and GBS = nodes x 16 unless the node count's branch says otherwise
LAYOUT = {8: (2, 4096, 4, 1, 1, 2, 1, 1024), 16: (4, 4096, 4, 1, 1, 4, 1, 1024),
          32: (4, 4096, 4, 1, 1, 8, 1, 1024), 64: (8, 8192, 4, 1, 2, 8, 1, 1024),
          128: (16, 8192, 4, 2, 2, 8, 8, 1024), 256: (32, 8192, 4, 4, 2, 8, 8, 1024),
          512: (64, 8192, 4, 8, 2, 8, 8, 1024), 1024: (64, 8192, 4, 8, 2, 8, 8, 2048),
          2048: (64, 8192, 4, 8, 2, 8, 8, 4096)}

# grok1_314b.yaml model section (the shape columns)
SHAPE = {"hidden_size": 6144, "num_attention_heads": 48, "num_kv_heads": 8,
         "ffn_hidden_size": 32768, "moe_ffn_hidden_size": 32768, "num_experts": 8, "moe_top_k": 2,
         "vocab_size": 128256, "activation": "swiglu", "tied_embeddings": 0}
YAML_PHRASES = ("hidden_size: 6144", "ffn_hidden_size: 32768", "num_attention_heads: 48",
                "num_query_groups: 8", "num_moe_experts: 8", "moe_router_topk: 2",
                "activation: fast-geglu", "share_embeddings_and_output_weights: false",
                "type: meta-llama/Meta-Llama-3-70B", "make_vocab_size_divisible_by: 128",
                "moe_grouped_gemm: false", "moe_token_dispatcher_type: alltoall",
                "moe_pad_expert_input_to_capacity: true", "moe_expert_capacity_factor: 1.0",
                "micro_batch_size: 1", "hidden_dropout: 0.0", "attention_dropout: 0.0",
                "overlap_p2p_comm: true", "name: mcore_distributed_optim",
                "overlap_grad_sync: true", "overlap_param_sync: true", "grad_sync_dtype: bf16",
                "activations_checkpoint_granularity: null", "use_flash_attention: true",
                "fp8_hybrid: true", "fp8_amax_history_len: 1024", "megatron_amp_O2: true")
# the expert tensor parallelism the runs had: no yaml or configure.sh key sets it, so Megatron-core
# splits each expert over the tensor-parallel group (TP 4), whichever core the container held:
# core_v0.9.0 (NeMo 24.09) has no separate expert TP, its all-to-all dispatcher gathers the
# received tokens over the TP group before the experts and reduce-scatters them after; from
# core_v0.10.0 an unset expert_tensor_parallel_size is the TP size (NeMo 24.12's 1.0 path passes
# none). (repo, commit, path, phrase) as the mirrors hold them
ETP_SOURCES = (
    ("NVIDIA+Megatron-LM", "1afee592e8", "megatron/core/transformer/moe/token_dispatcher.py",
     ("            global_input_tokens = gather_from_sequence_parallel_region(\n"
      "                global_input_tokens,\n"
      "                output_split_sizes=(")),
    ("NVIDIA+Megatron-LM", "7ee599a25c", "megatron/core/model_parallel_config.py",
     ("        if self.expert_tensor_parallel_size is None:\n"
      "            self.expert_tensor_parallel_size = self.tensor_model_parallel_size")),
    ("NVIDIA+NeMo", "633cb60277", "nemo/collections/nlp/modules/common/megatron/megatron_init.py",
     ("    if expert_tensor_parallel_size_ is None:\n"
      "        expert_tensor_parallel_size_ = tensor_model_parallel_size")),
)
ETP_KEYS = ("expert_tensor_parallel_size", "moe_extended_tp")  # in neither yaml nor configure.sh
# the fp8 rows' fp8_param_gather cell (cells60): NeMo passes fp8_params to Megatron-core's DDP
# (tag, line, phrase) in nemo/collections/nlp/models/language_modeling/megatron_gpt_model.py
FP8_PARAM_SOURCES = (
    ("v2.0.0", 362, "if HAVE_TE and self.cfg.get('fp8', False) and self.cfg.get('fp8_params', False):"),
    ("v2.0.0", 563, "fp8_param_gather=self.cfg.get('fp8_params', False),"),
    ("v2.1.0", 396, "if HAVE_TE and self.cfg.get('fp8', False) and self.cfg.get('fp8_params', False):"),
    ("v2.1.0", 598, "fp8_param_gather=self.cfg.get('fp8_params', False),"))

CONFIGURE_PHRASES = ("export NVTE_FUSED_ATTN=0", "model.ub_tp_comm_overlap=true",
                     "model.sequence_parallel=true", "model.fp8_params=${FP8_ENABLED^}",
                     "model.fp8=${FP8_ENABLED^}", "GBS=$(( SLURM_JOB_NUM_NODES * 16 ))",
                     "NUM_LAYERS=64", "TP=4", "PP=8", "VP=8", "EP=8", "CP=2", "MBS=1",
                     "SEQ_LEN=8192")


def row_id(rel: str, dtype: str, gpus: int) -> str:
    return f"dgxc{rel}-grok1-314b-{dtype}-h100-{gpus}"


def rows() -> list[dict[str, object]]:
    out = []
    for rel, (_commit, label, version, image, tables) in RELEASES.items():
        for dtype, (line, title, steps) in tables.items():
            for gpus, t in zip(GPUS, steps):
                layers, seq, tp, pp, cp, ep, vpp, gbs = LAYOUT[gpus]
                dp = gpus // (tp * pp * cp)
                r = {k: "" for k in HEADER}
                r.update(SHAPE)
                r.update(
                    id=row_id(rel, dtype, gpus), model="mixtral-8x22b", num_layers=layers,
                    source=(f"{REPO} {README} @ release {label}, 'Expected Performance' table "
                            f"'{title}', line {line} 'Training step time (seconds per step)'; "
                            "layout from grok1/configure.sh, model from grok1/grok1_314b.yaml"),
                    seq_length=seq, gpu="h100-sxm-80gb", num_gpus=gpus, gpus_per_node=8,
                    nic_gbps_per_gpu=400, tp=tp, pp=pp, cp=cp, ep=ep, vpp=vpp,
                    etp=tp, sequence_parallel=1, recompute="none", distributed_optimizer=1,
                    global_batch_size=gbs, micro_batch_size=1, dtype=dtype,
                    fp8_recipe="delayed" if dtype == "fp8" else "",
                    fp8_param_gather=1 if dtype == "fp8" else "",
                    options="tp_overlap;dp_overlap" + (";pp_overlap" if vpp > 1 else ""),
                    framework="nemo", framework_version=version, attention="flash2",
                    grad_reduce_dtype="bf16", moe_dispatcher="alltoall", moe_capacity_factor="1.0",
                    cp_comm_type="p2p" if cp > 1 else "",
                    attention_dropout=0, hidden_dropout=0, measured_iteration_s=t,
                    note=(f"published {t} s per step ('we are using the last training step "
                          "timing', NeMo train_step_timing), as published; column "
                          f"'{gpus}x H100 GPUs'; "
                          + (f"the table's tokens/s ({TPS_OFF[(rel, dtype, gpus)]:.0f}) is "
                             f"{seq} x GBS / {seq * gbs / TPS_OFF[(rel, dtype, gpus)]:.3f} s, "
                             "0.5 % off the printed step (kept as printed)"
                             if (rel, dtype, gpus) in TPS_OFF else
                             f"the table's tokens/s = {seq} x GBS / step time")
                          + f"; layout from configure.sh for {gpus // 8} node(s): {layers} of "
                          f"Grok-1's 64 layers, seq {seq}, TP {tp}, PP {pp}, CP {cp}, EP {ep}, "
                          + (f"VP {vpp}, " if vpp > 1 else "VP null, ")
                          + f"MBS 1, GBS {gbs} (dp {dp}, {gbs // dp} micro-batches; the README's "
                          "GA column says 128 at every size); expert TP = TP "
                          f"{tp} (no key sets it: Megatron-core splits the experts over the TP "
                          "group, core_v0.9.0 token_dispatcher.py gathering the exchanged tokens "
                          "over TP, core_v0.10.0 model_parallel_config.py defaulting "
                          "expert_tensor_parallel_size to the TP size); the model: grok1_314b.yaml "
                          "(hidden 6144, 48 heads, 8 query groups, ffn 32768 per expert, 8 "
                          "experts top-2, fast-geglu = a gated MLP, rmsnorm, rope, no bias, "
                          "untied, Llama-3 tokenizer: vocab 128256), written as shape columns "
                          "over the mixtral-8x22b preset (the same block: gated experts, GQA, "
                          "rmsnorm, rope, untied); alltoall dispatcher, capacity factor 1.0 with "
                          "moe_pad_expert_input_to_capacity, moe_grouped_gemm false (a loop "
                          "of expert GEMMs; no column: the profile's choice), aux-loss router; "
                          "no recompute (activations_checkpoint_* null); mcore distributed "
                          "optimizer with overlap_grad_sync / overlap_param_sync, grad_sync_dtype "
                          "bf16; ub_tp_comm_overlap and sequence parallel (configure.sh); "
                          "overlap_p2p_comm with VP; NVTE_FUSED_ATTN=0 with use_flash_attention: "
                          "Transformer Engine's flash-attention backend (flash2); dropout 0; "
                          + ("fp8 hybrid delayed scaling (amax history 1024); fp8_param_gather 1: "
                             "configure.sh's model.fp8_params=${FP8_ENABLED^} builds the model "
                             "under Transformer Engine's fp8_model_init and the mcore distributed "
                             "optimizer's DDP gathers those fp8 parameters "
                             "(DistributedDataParallelConfig fp8_param_gather=cfg.fp8_params, "
                             "NVIDIA/NeMo@v2.0.0 megatron_gpt_model.py L362-363 and L563, v2.1.0 "
                             "L396 and L598); "
                             if dtype == "fp8" else "")
                          + f"container {image}; NeMo {version} (1.0-style launcher yaml, "
                          "megatron_amp_O2); DGX H100, 8 GPUs a node, 400 Gb/s per GPU "
                          "(inferred: the README names only 'H100 GPUs')"))
                out.append(nvls_cells.stated(r))  # the configure.sh's NCCL_NVLS_ENABLE=0
    return out


def check() -> list[str]:
    """The typed step times against the README lines, each column's GPUs, the tokens/s row
    against seq x GBS / step, the README's layout table against ``LAYOUT``, and the flags of
    configure.sh and grok1_314b.yaml at each release, and the code behind the expert-TP cell
    (``ETP_SOURCES``; no ``ETP_KEYS`` in either file)."""
    bad = []
    for rel, (commit, _label, version, _image, tables) in RELEASES.items():
        lines = mirror_rows.show(REPO_DIR, commit, README).splitlines()
        for dtype, (line, title, steps) in tables.items():
            head = mirror_rows.md_cells(lines[line - 3])
            if head[0] != title:
                bad.append(f"{rel} {dtype}: title {head[0]!r}")
            step = mirror_rows.md_cells(lines[line - 1])
            if step[0] != "Training step time (seconds per step)" or \
                    [float(x) for x in step[1:] if x] != list(steps):
                bad.append(f"{rel} {dtype}: line {line} {step}")
            tps = [float(x) for x in mirror_rows.md_cells(lines[line])[1:] if x]
            for i, (gpus, t) in enumerate(zip(GPUS, steps)):
                if f"{gpus}" not in head[i + 1].split()[2].rstrip("x"):
                    bad.append(f"{rel} {dtype}: column {head[i + 1]!r} is not {gpus} GPUs")
                _l, seq, *_, gbs = LAYOUT[gpus]
                if abs(seq * gbs / t / tps[i] - 1) > 2e-3 and (rel, dtype, gpus) not in TPS_OFF:
                    bad.append(f"{rel} {dtype} {gpus}: tokens/s {tps[i]} vs {seq} x {gbs} / {t}")
        table = [mirror_rows.md_cells(x) for x in lines if x.startswith("| ") and x[2:6].strip().isdigit()]
        for c in table:
            gpus = int(c[0])
            layers, seq, tp, pp, cp, ep, vpp, gbs = LAYOUT[gpus]
            want = [gpus, seq, layers, tp, pp, cp, ep, gpus // (tp * pp * cp) // ep,
                    vpp if vpp > 1 else "NA", 1, gbs]
            if [str(x) for x in want] != c[:11]:
                bad.append(f"{rel}: layout row {c} is not {want}")
        if len(table) != len(GPUS):
            bad.append(f"{rel}: {len(table)} layout rows")
        conf = mirror_rows.show(REPO_DIR, commit, "grok1/configure.sh")
        yml = mirror_rows.show(REPO_DIR, commit, "grok1/grok1_314b.yaml")
        launch = mirror_rows.show(REPO_DIR, commit, "grok1/launch.sh")
        bad += [f"{rel} configure.sh: no {p!r}" for p in CONFIGURE_PHRASES if p not in conf]
        bad += [f"{rel} yaml: no {p!r}" for p in YAML_PHRASES if p not in yml]
        bad += [f"{rel}: {k} set" for k in ETP_KEYS if k in yml or k in conf]
        if f"export FW_VERSION={version}" not in launch:
            bad.append(f"{rel} launch.sh: FW_VERSION not {version}")
        for nodes, (layers, seq, _tp, pp, cp, ep, _vpp, _gbs) in \
                ((g // 8, LAYOUT[g]) for g in GPUS if g < 512):
            branch = conf.split(f"SLURM_JOB_NUM_NODES = {nodes} ]]", 1)[-1].split("elif", 1)[0]
            want = [f"NUM_LAYERS={layers}", f"PP={pp}"] + \
                ([f"SEQ_LEN={seq}", f"CP={cp}"] if seq != 8192 else []) + \
                ([f"EP={ep}"] if ep != 8 else [])
            bad += [f"{rel} configure.sh {nodes} node(s): no {w}" for w in want if w not in branch]
    for repo, commit, path, phrase in ETP_SOURCES:
        if phrase not in mirror_rows.show(repo, commit, path):
            bad.append(f"{repo}@{commit} {path}: no {phrase!r}")
    gpt = "nemo/collections/nlp/models/language_modeling/megatron_gpt_model.py"
    for tag, line, phrase in FP8_PARAM_SOURCES:
        if mirror_rows.show("NVIDIA+NeMo", tag, gpt).splitlines()[line - 1].strip() != phrase:
            bad.append(f"NVIDIA/NeMo@{tag} {gpt} L{line}: not {phrase!r}")
    return bad + nvls_cells.check("dgxc2411-grok1") + nvls_cells.check("dgxc2502-grok1")


if __name__ == "__main__":
    mirror_rows.main(rows, HEADER, check, "tables, configure.sh and yaml as in the mirror")
