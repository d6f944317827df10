"""Writes benchmarks/training_flagperf.csv: BAAI FlagPerf's NVIDIA large-model training cases
(Megatron-core, FlagScale, Megatron-DeepSpeed and DeepSpeed on A800, H800 and H100), a check file.

    python benchmarks/flagperf_rows.py > benchmarks/training_flagperf.csv
    python benchmarks/flagperf_rows.py --check      # the typed tables against the mirror
    python benchmarks/flagperf_rows.py --left-out   # the table rows not in the file, and why

FlagOpen/FlagPerf @ 1b5a0303 (2025-11-11): each case's README under training/nvidia/<case>/ prints
'token/p/s' (tokens per GPU per second) and 'mem' (GiB used / 80) per configuration; each case's
run_pretraining.py under training/benchmarks/<model>/<framework>/ says how token/p/s was made:
the Megatron cases read the last 'elapsed time per iteration (ms)' of the run's log and divide
GBS x seq by it and by the GPU count, so iteration = GBS x seq / (token/p/s x GPUs) exactly; the
DeepSpeed case multiplies DeepSpeed's RunningAvgSamplesPerSec by seq x micro-batch (one sample a
GPU a step at micro-batch 1: the same identity). The settings are the cases' own scripts (cited
per row); nothing in trainsim was fitted to these rows.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

REPO_DIR = "FlagOpen+FlagPerf"
COMMIT = "1b5a030398ab719e406f77877eb34c9599b17fd2"
HEADER = mirror_rows.v2_header(note=["tied_embeddings", "attention_dropout", "hidden_dropout",
                                     "nccl_version"])
MEGATRON_LM = ("NVIDIA+Megatron-LM", "cac60ce4c8203e2ed18912be63d4dd577b46830d")
"""NVIDIA/Megatron-LM core_v0.6.0, the tag the Megatron-core cases clone
(training/nvidia/docker_image/megatron_core060/Dockerfile: git clone -b core_v0.6.0)."""
# case -> the FlagPerf Dockerfile its image is built from (the same FROM line at the commit that
# set the case's table and at COMMIT), and the NCCL release of that NGC PyTorch container
CONTAINERS = {
    "llama3_8B-megatron": ("megatron_core060", "24.02"),
    "llama3_70B-megatron": ("megatron_core060", "24.02"),
    "llama2_70B-megatron": ("megatron", "23.09"),
    "aquila2_7b-flagscale": ("flagscale", "23.09"),  # flagscale-nvidia/ at ec42133c
    "llama2_7b-megatron-deepspeed": ("megatron-deepspeed", "23.09"),
    "llama2_7b-deepspeed": ("deepspeed", "23.09"),
}
NGC_NCCL = {"24.02": "2.19.4", "23.09": "2.18"}
"""NCCL in NGC's PyTorch containers. 24.02: 2.19.4, with CUDA 12.3.2 and cuDNN 9.0.0.306 (the
24.02 containers' stack as cell-observatory/aovift README.md quotes NVIDIA's TensorFlow 24.02
release notes; every framework container of a month carries the same CUDA, cuDNN and NCCL).
23.09: 2.18 (23.08 shipped 2.18.3 per a copy of its release notes; NVIDIA/nccl v2.19.3-1 was
tagged 2023-09-26, the container's own month; NVLS buffers are sized and placed alike at
v2.18 and v2.19, memory.nccl_buffers, so a 2.19 would change nothing here)."""
CORE06_DEFAULTS = {
    # megatron/training/arguments.py at core_v0.6.0: the defaults of the flags the llama3
    # scripts do not pass
    "--attention-dropout', type=float, default=0.1": "attention dropout 0.1",
    "--hidden-dropout', type=float, default=0.1": "hidden dropout 0.1",
    "--untie-embeddings-and-output-weights', action='store_true'": "tied embeddings",
    "--position-embedding-type', type=str, default='learned_absolute'": "learned positions",
    "--disable-bias-linear', action='store_false'": "linear biases on",
}

# case -> (README, the commit that set its table, the script that ran it, framework, version)
# FlagScale (BAAI's Megatron-LM fork, no profile) is dated by its commit as the rows' notes name it
# (FlagOpen/FlagScale 6fc099c85 "Merge the latest Megatron-LM (#7)" 2023-12-12; ed555321f 2023-10-23),
# so the fallback reads the Megatron entries of that date (the out-of-place logit shift included:
# cross_entropy.py L24 and llama_model.py L50 `output.float()` at both; RESULTS 58th session, memory58 3)
CASES = {
    "llama3_8B-megatron": (
        "e203e1a4 (2024-05-09, #535) and 8badef22 (2024-05-14)",
        "training/benchmarks/llama3_8B/megatron/pretrain_llama3.sh", "megatron-core", "0.6"),
    "llama3_70B-megatron": (
        "8badef22 (2024-05-14; GPU name fixed to H100 in ddd8f62a, 2024-06-14, #580)",
        "training/benchmarks/llama3_70B/megatron/pretrain_llama3.sh", "megatron-core", "0.6"),
    "llama2_70B-megatron": (
        "ebe6776e (2024-01-15, #389; d7c16abc, 2024-02-06, #441)",
        "training/benchmarks/llama2_70B/megatron/megatron_main.sh", "flagscale", "2023-12-12"),
    "aquila2_7b-flagscale": (
        "ec42133c (2023-11-10, #299)",
        "training/benchmarks/aquila2_7b/flagscale/flagscale_main.sh", "flagscale", "2023-10-23"),
    "llama2_7b-megatron-deepspeed": (
        "d63cd410 (2024-02-06, #439)",
        "training/benchmarks/llama2_7b/megatron-deepspeed/megatron-deepspeed_main.sh",
        "megatron-deepspeed", "2023-10"),
    "llama2_7b-deepspeed": (
        "ccb7bbad (2023-10-27, #289) and 6035339a (2023-12-25, #372)",
        "training/benchmarks/llama2_7b/deepspeed/run_pretraining.py", "deepspeed", "2023-10"),
}

# (case, config cell, precision cell or "", parallel cell, fix_hp cell, token/p/s, mem cell) as the
# README prints them, then this row's settings: gpu, GPUs, (tp, pp), micro-batch, global batch, seq
TABLE = [
    ("llama3_8B-megatron", "A100单机8卡（1x8）", "bf16", "PP2DP4TP1", "/", "3698.7", "76/80",
     "a800-sxm-80gb", 8, (1, 2), 1, 512, 8192),
    ("llama3_8B-megatron", "H100单机8卡（1x8）", "bf16", "PP1DP4TP2", "/", "8103", "71/80",
     "h100-sxm-80gb", 8, (2, 1), 1, 512, 8192),
    ("llama3_8B-megatron", "H100单机8卡（1x8）", "bf16+fp8", "PP1DP4TP2", "/", "10486", "74/80",
     "h100-sxm-80gb", 8, (2, 1), 1, 512, 8192),
    ("llama3_8B-megatron", "H100二机16卡（2x8）", "bf16", "PP1DP8TP2", "/", "7914", "62/80",
     "h100-sxm-80gb", 16, (2, 1), 1, 512, 8192),
    ("llama3_8B-megatron", "H100二机16卡（2x8）", "bf16+fp8", "PP1DP8TP2", "/", "10280", "64/80",
     "h100-sxm-80gb", 16, (2, 1), 1, 512, 8192),
    ("llama3_8B-megatron", "H100-55机440卡（55x8）", "bf16", "PP1DP220TP2", "gbs=1760*", "7047",
     "55/80", "h100-sxm-80gb", 440, (2, 1), 1, 1760, 8192),
    ("llama3_8B-megatron", "A100单机8卡（1x8）", "bf16", "PP4DP2TP1", "/", "3306.5", "59/80",
     "a800-sxm-80gb", 8, (1, 4), 1, 512, 8192),
    ("llama3_8B-megatron", "A100单机8卡（1x8）", "bf16", "PP2DP2TP2", "/", "3409.2", "51/80",
     "a800-sxm-80gb", 8, (2, 2), 1, 512, 8192),
    ("llama3_8B-megatron", "A100单机8卡（1x8）", "bf16", "PP2DP1TP4", "/", "3006.1", "35/80",
     "a800-sxm-80gb", 8, (4, 2), 1, 512, 8192),
    ("llama3_8B-megatron", "A100单机8卡（1x8）", "bf16", "PP8DP1TP1", "/", "2690.3", "55/80",
     "a800-sxm-80gb", 8, (1, 8), 1, 512, 8192),
    ("llama3_8B-megatron", "A100单机8卡（1x8）", "bf16", "PP1DP1TP8", "/", "2451.2", "30/80",
     "a800-sxm-80gb", 8, (8, 1), 1, 512, 8192),
    ("llama3_8B-megatron", "A100单机8卡（1x8）", "bf16", "PP4DP1TP2", "/", "3042.7", "45/80",
     "a800-sxm-80gb", 8, (2, 4), 1, 512, 8192),
    ("llama3_70B-megatron", "H100八机64卡（8x8）", "bf16", "PP4DP2TP8", "/", "851", "55/80",
     "h100-sxm-80gb", 64, (8, 4), 1, 512, 8192),
    ("llama2_70B-megatron", "H800四机32卡（4x8）", "amp", "TP8PP4DP1", "/", "641.93", "62/80",
     "h800-sxm-80gb", 32, (8, 4), 1, 44, 4096),
    ("llama2_70B-megatron", "H800四机32卡（4x8）", "amp", "TP4PP8DP1", "/", "791.37", "74/80",
     "h800-sxm-80gb", 32, (4, 8), 1, 44, 4096),
    ("llama2_70B-megatron", "H800四机32卡（4x8）", "amp", "TP4PP8DP1",
     "GAS=1024(GBS=1024=4M tokens)", "908.29", "74/80", "h800-sxm-80gb", 32, (4, 8), 1, 1024,
     4096),
    ("aquila2_7b-flagscale", "A800单机8卡（1x8）", "", "TP1PP1DP8", "/", "3936.8", "74/80",
     "a800-sxm-80gb", 8, (1, 1), 1, 72, 2048),
    ("aquila2_7b-flagscale", "A800单机8卡（1x8）", "", "TP8PP1DP1", "LBS=8", "2866.3", "55/80",
     "a800-sxm-80gb", 8, (8, 1), 8, 72, 2048),
    ("aquila2_7b-flagscale", "A800单机8卡（1x8）", "", "TP1PP8DP1", "LBS=4", "2093.5", "57/80",
     "a800-sxm-80gb", 8, (1, 8), 4, 36, 2048),
    ("aquila2_7b-flagscale", "A800单机8卡（1x8）", "", "TP2PP2DP2", "LBS=4", "3468.3", "52/80",
     "a800-sxm-80gb", 8, (2, 2), 4, 72, 2048),
    ("llama2_7b-megatron-deepspeed", "A800单机8卡（1x8）", "", "DP8", "/", "4047", "63/80",
     "a800-sxm-80gb", 8, (1, 1), 1, 256, 4096),
    ("llama2_7b-megatron-deepspeed", "A100单机8卡（1x8）", "", "DP8", "GAS=128(GBS=1024=4M tokens)",
     "3974", "63/80", "a800-sxm-80gb", 8, (1, 1), 1, 1024, 4096),
    ("llama2_7b-deepspeed", "A800单机8卡（1x8）", "", "", "/", "3564", "57/80",
     "a800-sxm-80gb", 8, (1, 1), 1, 8, 4096),
    ("llama2_7b-deepspeed", "H800单机8卡（1x8）", "", "", "/", "7151", "59/80",
     "h800-sxm-80gb", 8, (1, 1), 1, 8, 4096),
]

# table rows in no row of the file: (case, parallel cell, fix_hp cell, token/p/s cell, why)
LEFT_OUT = [
    ("llama3_8B-megatron", "PP2DP4TP1", "/", "2260",
     "the '*单机8卡' row: an unnamed accelerator ('*'), not an NVIDIA GPU of the catalog"),
    ("llama3_8B-megatron", "PP1DP8TP1", "/", "/",
     ("no throughput: the run ran out of memory (mem 'OOM'); see the memory check in "
      "training_flagperf.md")),
    ("llama2_70B-megatron", "TP8PP4DP1", "recompute=True,(theoryflops=495T)", "253.61",
     "fp32 training (precision 'fp32'): training.dtype 'fp32' is not one of fp16, bf16, fp8"),
    ("llama2_7b-deepspeed", "", "MPE=2048 LBS=3", "3917",
     ("token/p/s = RunningAvgSamplesPerSec x seq x LBS: DeepSpeed's samples/s already counts "
      "the 3 sequences of a micro-batch, so the product is not tokens/s at LBS 3 (3x, or the "
      "README used another count): the seconds cannot be read")),
    ("llama2_7b-deepspeed", "", "MPE=2048 LBS=3 GAS=64", "4062", "as the row above (LBS 3)"),
]

# the llama3 scripts pass no --attention-dropout, --hidden-dropout or
# --untie-embeddings-and-output-weights: core_v0.6.0's defaults (CORE06_DEFAULTS) ran
CORE06_MODEL = {"tied_embeddings": "1", "attention_dropout": "0.1", "hidden_dropout": "0.1"}

# (case -> settings shared by its rows), each from the case's script at COMMIT
SHARED = {
    "llama3_8B-megatron": {"model": "llama3-8b", "recompute": "none", "distributed_optimizer": "1",
                               "options": "fused_kernels", **CORE06_MODEL},
    "llama3_70B-megatron": {"model": "llama3-70b", "recompute": "none", "distributed_optimizer": "1",
                                "options": "fused_kernels", **CORE06_MODEL},
    "llama2_70B-megatron": {"model": "llama2-70b", "recompute": "none", "distributed_optimizer": "1",
                                "options": "fused_kernels", "attention": "flash2",
                                "grad_reduce_dtype": "fp32", "nic_gbps_per_gpu": "200"},
    "aquila2_7b-flagscale": {"model": "llama2-7b", "vocab_size": "100008", "recompute": "none",
                                 "distributed_optimizer": "1", "sequence_parallel": "0",
                                 "options": "fused_kernels", "attention": "flash2",
                                 "grad_reduce_dtype": "fp32"},
    "llama2_7b-megatron-deepspeed": {"model": "llama2-7b", "recompute": "none", "zero_stage": "1",
                                         "grad_reduce_dtype": "bf16", "attention": "flash2"},
    "llama2_7b-deepspeed": {"model": "llama2-7b", "recompute": "none", "zero_stage": "3",
                                "attention": "flash2", "options": "hf_modules;dp_overlap"},
}

SETTINGS = {
    "llama3_8B-megatron": (
        "script: --seq-length 8192 --global-batch-size 512 --sequence-parallel --bf16 "
        "--transformer-impl transformer_engine --use-distributed-optimizer --use-mcore-models "
        "--use-flash-attn, no --recompute-* flag (the README's 'recompute-activations' is not "
        "in the script: recompute none), no --overlap-grad-reduce (options stated as "
        "fused_kernels only, Megatron's default fusions: no overlap); attention = Transformer "
        "Engine's own choice at core 0.6 (megatron-core.yaml: flash2 on sm80, cuDNN on sm90); "
        "fp8 rows: training_adapter_H100_fp8.sh --fp8-format hybrid --fp8-amax-compute-algo max "
        "--fp8-amax-history-len 1024 (delayed scaling); megatron-core tag core_v0.6.0; no "
        "--attention-dropout, --hidden-dropout, --untie-embeddings-and-output-weights, "
        "--position-embedding-type or --disable-bias-linear: core_v0.6.0's defaults ran "
        "(arguments.py: dropouts 0.1, tied embeddings, learned absolute positions, linear "
        "biases), stated as attention_dropout 0.1, hidden_dropout 0.1, tied_embeddings 1; the "
        "positions and biases have no column (llama3 preset kept: rotary instead of one "
        "position-embedding add, no bias adds, < 1 % of the step)"),
    "llama3_70B-megatron": (
        "script as the 8B case's (80 layers, hidden 8192, ffn 28672, 64 heads, 8 query groups, "
        "seq 8192, GBS 512, SP, TE, distributed optimizer, no recompute flag, no overlap "
        "flags, and as there no dropout, untie, position-embedding or bias flag: dropouts 0.1, "
        "tied embeddings); InfiniBand 400 Gb/s (per NIC; not stated per GPU: cell left empty)"),
    "llama2_70B-megatron": (
        "FlagScale@6fc099c pretrain_llama.py: --use-distributed-optimizer --use-flash-attn "
        "--bf16 --sequence-parallel --disable-bias-linear, recompute False, seq 4096, MBS 1, "
        "GBS = 1 x 32 x GAS / (TP x PP) = GAS (config_H800x4x8.py accumulate_steps 44); "
        "'InfiniBand, 200Gb/s' read as 200 Gb/s a GPU; framework FlagScale (BAAI's Megatron-LM "
        "fork) named as it is: no profile; gradients reduced in fp32 (Megatron-LM of 2023 "
        "forces accumulate_allreduce_grads_in_fp32 under --bf16, the fork passes no flag)"),
    "aquila2_7b-flagscale": (
        "FlagScale@ed55532 pretrain_aquila.py: 32 layers, hidden 4096, 32 heads (MHA), swiglu "
        "--multiple-of 256 (ffn 11008), vocab 100008, untied, seq 2048, --use-flash-attn "
        "--use-distributed-optimizer --bf16, no --sequence-parallel, no recompute; GBS = LBS x 8 "
        "x GAS 9 / (TP x PP) (config_A100x1x8.py; the fix_hp cell changes LBS only, GAS kept); "
        "the README: this FlagScale version 'has no compute-communication overlap' (options "
        "fused_kernels only); model = llama2-7b's shape with Aquila2's vocabulary; gradients "
        "reduced in fp32 (Megatron-LM under --bf16, no flag passed)"),
    "llama2_7b-megatron-deepspeed": (
        "script: 32 layers, hidden 4096, ffn 11008, 32 heads, seq 4096, MBS 1, GBS = 8 x GAS "
        "(ds_config stage 1, grad_accum_dtype bf16, overlap_comm false), --bf16 "
        "--use-flash-attn-v2; the line '#--recompute-activations \\\\' inside the eval'd "
        "command string makes every later flag a comment (--normalization rmsnorm, "
        "--disable-bias-linear, --num-key-value-heads, --zero-stage, "
        "--deepspeed-activation-checkpointing): LayerNorm and linear biases ran (llama2-7b "
        "preset kept: their FLOPs are < 0.1 %), no recompute; framework version = DeepSpeed "
        "0.11.1's date (the README's software)"),
    "llama2_7b-deepspeed": (
        "Hugging Face LlamaForCausalLM (llama2_7b_hf/config.json, transformers 4.34.1, "
        "_flash_attn_2_enabled) under DeepSpeed 0.11.1 ZeRO-3 (ds_config.json: overlap_comm, "
        "bf16, GAS 1, MBS 1: GBS 8), no gradient checkpointing in the model; token/p/s = "
        "RunningAvgSamplesPerSec x 4096 / 8; options: hf_modules (transformers' own eager "
        "LlamaRMSNorm, rotate-half RoPE, act_fn(gate) * up, loss on logits.float()), dp_overlap "
        "(overlap_comm true)"),
}


def row_id(case: str, gpu: str, n: int, tp: int, pp: int, fixhp: str, prec: str) -> str:
    model = case.split("-")[0].lower().replace("_", "-")
    model += {"megatron-deepspeed": "-mds", "deepspeed": "-ds"}.get(CASES[case][2], "")
    extra = "-fp8" if prec == "bf16+fp8" else ""
    if "GAS" in fixhp or "gbs" in fixhp:
        extra += "-gbs-big"
    return f"flagperf-{model}-{gpu.split('-')[0]}-{n}-tp{tp}pp{pp}{extra}"


def iteration_s(gbs: int, seq: int, tps: str, n: int) -> float:
    return gbs * seq / (float(tps) * n)


def rows() -> list[dict[str, str]]:
    out = []
    for case, label, prec, par, fixhp, tps, mem, gpu, n, (tp, pp), mbs, gbs, seq in TABLE:
        commits, script, framework, version = CASES[case]
        row = {c: "" for c in HEADER}
        row.update(SHARED[case])
        fp8 = prec == "bf16+fp8"
        if framework == "megatron-core":
            row["sequence_parallel"] = "1" if tp > 1 else "0"
            row["attention"] = "flash2" if gpu.startswith("a800") else "cudnn"
        elif framework == "flagscale" and case == "llama2_70B-megatron":
            row["sequence_parallel"] = "1" if tp > 1 else "0"
        if framework != "deepspeed":
            row["cp"] = "1"
            row["vpp"] = "1"  # no --num-layers-per-virtual-pipeline-stage in any script
        row.update(
            id=row_id(case, gpu, n, tp, pp, fixhp, prec),
            source=(f"FlagOpen/FlagPerf training/nvidia/{case}/README.md @ {COMMIT[:10]} "
                    f"(2025-11-11; table set at {commits}); settings from {script}"),
            seq_length=str(seq), gpu=gpu, num_gpus=str(n), gpus_per_node="8", tp=str(tp),
            pp=str(pp), global_batch_size=str(gbs), micro_batch_size=str(mbs),
            dtype="fp8" if fp8 else "bf16", fp8_recipe="delayed" if fp8 else "",
            framework=framework, framework_version=version, memory_kind="device",
            nccl_version=NGC_NCCL[CONTAINERS[case][1]],
            measured_iteration_s=f"{iteration_s(gbs, seq, tps, n):.6f}",
            measured_peak_memory_gib=mem.split("/")[0],
            note=(f"README row '{label} | {prec or '-'} | {par or '-'} | {fixhp} | {tps} | "
                  f"{mem}'; iteration = GBS {gbs} x {seq} / ({tps} token/p/s x {n} GPUs) "
                  f"(run_pretraining.py's own formula, inverted); mem = FlagPerf's monitor "
                  f"(nvidia-smi memory used, 'GiB', integer: device kind); "
                  + SETTINGS[case]
                  + ("; the 'A100' label is the case's only hardware, DGX A800 80G"
                     if label.startswith("A100") else "")
                  + ("; gbs 1760 on 440 GPUs = 8 micro-batches a replica; 'only for "
                     "performance reference' (no loss check); the token/p/s cannot be of GBS "
                     "512 (3.4x more tokens: MFU 117 %)" if n == 440 else "")))
        out.append(row)
    return out


def table_rows(case: str) -> list[list[str]]:
    text = mirror_rows.show(REPO_DIR, COMMIT, f"training/nvidia/{case}/README.md")
    return [mirror_rows.md_cells(x) for x in text.splitlines() if x.lstrip().startswith("|")]


def check() -> list[str]:
    """Each typed row against its README's table at COMMIT, and the scripts' key flags."""
    bad = []
    for case, label, prec, par, fixhp, tps, mem, *_ in TABLE:
        want = [c for c in (label, prec, par, fixhp, tps) if c]
        if not any(all(c in r for c in want) and mem in r for r in table_rows(case)):
            bad.append(f"{case}: no table row with {want} and {mem}")
    for case, par, fixhp, tps, _why in LEFT_OUT:
        want = [c for c in (par, fixhp, tps) if c]
        if not any(all(c in r for c in want) for r in table_rows(case)):
            bad.append(f"{case}: no left-out row with {want}")
    for case, phrases in SCRIPT_PHRASES.items():
        text = mirror_rows.show(REPO_DIR, COMMIT, CASES[case][1])
        bad += [f"{case}: not in script: {p!r}" for p in phrases if p not in text]
        if CASES[case][2] == "megatron-core":  # the flags left to core_v0.6.0's defaults
            bad += [f"{case}: script passes {flag}" for flag in CORE06_UNSET if flag in text]
    for case, (image, ngc) in CONTAINERS.items():
        docker = mirror_rows.show(REPO_DIR, COMMIT, f"training/nvidia/docker_image/{image}/Dockerfile")
        if f"FROM nvcr.io/nvidia/pytorch:{ngc}-py3" not in docker:
            bad.append(f"{case}: {image}/Dockerfile is not built FROM pytorch:{ngc}-py3")
    args = mirror_rows.show(*MEGATRON_LM, "megatron/training/arguments.py")
    bad += [f"core_v0.6.0 arguments.py: no {d!r} ({what})" for d, what in CORE06_DEFAULTS.items()
            if d not in args]
    return bad


CORE06_UNSET = ("--attention-dropout", "--hidden-dropout", "--untie-embeddings-and-output-weights",
                "--position-embedding-type", "--disable-bias-linear")


SCRIPT_PHRASES = {
    "llama3_8B-megatron": ["--global-batch-size 512", "--seq-length 8192", "--sequence-parallel",
                           "--use-distributed-optimizer", "--transformer-impl transformer_engine"],
    "llama3_70B-megatron": ["--num-layers 80", "--global-batch-size 512", "--num-query-groups 8"],
    "llama2_70B-megatron": ["--use-distributed-optimizer", "--use-flash-attn",
                            "--sequence-parallel", "--num-layers 80"],
    "aquila2_7b-flagscale": ["--vocab-size 100008", "--multiple-of 256", "--use-flash-attn"],
    "llama2_7b-megatron-deepspeed": ["--use-flash-attn-v2 \\\n       #--recompute-activations",
                                     "eval $cmd"],
    "llama2_7b-deepspeed": ["RunningAvgSamplesPerSec", "tokens = seqlength * batchsize"],
}


def main() -> None:
    if sys.argv[1:] == ["--left-out"]:
        for case, par, fixhp, tps, why in LEFT_OUT:
            print(f"{case} {par or '-'} {fixhp} {tps}: {why}")
        return
    mirror_rows.main(rows, HEADER, check, "tables and script flags as in the mirror")


if __name__ == "__main__":
    main()
