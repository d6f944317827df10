"""Writes benchmarks/training_gpurecipes.csv: Google Cloud's own NeMo and MaxText pretraining runs
on A3 Mega (H100, GPUDirect-TCPXO), A3 Ultra (H200, RoCE) and A4 (B200, RoCE) VMs, as published in
AI-Hypercomputer/gpu-recipes. Each NeMo recipe README prints one DLLogger entry of its default job
(``"train_step_timing in s"`` at a logged ``global_step`` with its ``consumed_samples``) beside the
NeMo config it ran (``src/frameworks/.../nemo-configs/*.yaml``), the GKE values file (GPU count)
and the Helm chart (NCCL environment). The step time is that entry's, as printed; the global batch
is ``consumed_samples / (global_step + 1)``, checked against the config. Each MaxText README
prints one ``completed step`` log line (seconds, TFLOP/s and tokens/s per device, the step's
``total_weights`` tokens) beside its MaxText config (``maxtext-configs/*.yaml``). See
training_gpurecipes.md.

    python benchmarks/source61_gpurecipes_rows.py > benchmarks/training_gpurecipes.csv
    python benchmarks/source61_gpurecipes_rows.py --check   # every typed value vs the mirror
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

HEADER = mirror_rows.v2_header(nic_gbps_per_gpu=["gpus_per_nic", "fabric", "nvls"],
                               distributed_optimizer=["dp_replicate", "all_reduce_combine_bytes"],
                               recompute_modules=["remat_policy"],
                               fp8_recipe=["fp8_param_gather", "defer_embedding_wgrad_compute",
                                           "wgrad_deferral_limit"],
                               note=["attention_dropout", "hidden_dropout"])
GR_DIR, GR = "AI-Hypercomputer+gpu-recipes", "AI-Hypercomputer/gpu-recipes"


@dataclasses.dataclass(frozen=True)
class Platform:
    """A Google Cloud VM family as the recipes' docs and charts describe it."""

    machine: str
    gpu: str
    nic_gbps: int
    fabric: str
    nvls: str
    """'0' where the recipe's chart sets NCCL_NVLS_ENABLE=0, '' where it leaves NCCL's default."""
    words: str


A3MEGA = Platform(
    "a3-megagpu-8g", "h100-sxm-80gb", 200, "tcpxo", "0",
    "A3 Mega (a3-megagpu-8g): 8 H100 80GB on NVLink, eight 200 Gbps NICs for GPU traffic over "
    "GPUDirect-TCPXO (Google Cloud 'GPU machine types': 'up to eight' NICs, 'each supporting up "
    "to 200 Gbps'; the chart's NCCL_FASTRAK_* settings): 200 Gb/s per GPU, fabric tcpxo; the "
    "chart sets NCCL_NVLS_ENABLE=0 (nvls 0) and NCCL_PROTO=Simple")
A3ULTRA = Platform(
    "a3-ultragpu-8g", "h200-sxm-141gb", 400, "roce", "",
    "A3 Ultra (a3-ultragpu-8g): 8 H200 141GB on NVLink, RDMA over Converged Ethernet through "
    "the gIB NCCL plugin (the chart's NCCL_IB_* or gib set_nccl_env.sh settings), one 400 Gbps "
    "ConnectX-7 NIC a GPU (Google Cloud's machine-type page, not in the mirror): 400 Gb/s per "
    "GPU, fabric roce; NVLS left at NCCL's default")
A4 = Platform(
    "a4-highgpu-8g", "b200-sxm-180gb", 400, "roce", "",
    "A4 (a4-highgpu-8g): 8 B200 180GB on NVLink, RDMA over Converged Ethernet through the gIB "
    "NCCL plugin (the chart sources /usr/local/gib/scripts/set_nccl_env.sh and attaches eight "
    "rdma-N interfaces), one 400 Gbps ConnectX-7 NIC a GPU (Google Cloud's machine-type page, "
    "not in the mirror): 400 Gb/s per GPU, fabric roce; NVLS left at NCCL's default")


@dataclasses.dataclass(frozen=True)
class Run:
    """One recipe's printed DLLogger entry and the default job it came from."""

    key: str
    commit: str
    """The commit that added the README's DLLogger entry (its first version)."""
    date: str
    recipe: str
    """The recipe directory (README.md, values.yaml) at ``commit``."""
    config: str
    """The NeMo config the README's default command passes (--set-file nemo_config=...)."""
    chart: str
    platform: Platform
    container: str
    model: str
    dtype: str
    step: int
    consumed: int
    seconds: float
    gpus: int
    why: str
    """How the default job is read from the README, where it offers more than one."""
    vocab_size: int = 50257
    data: str = "mock"
    """The config's data_impl: NeMo's mock data, or mmap (GPT-2 BPE tokenized Wikipedia)."""


RUNS = (
    Run("a3mega-gpt3-175b-fp8-256", "916aa8ee", "2024-10-09", "training/a3mega/GPT3-175B/"
        "nemo-pretraining-gke", "src/frameworks/nemo-configs/gpt3-175b-256gpus-fp8.yaml",
        "src/helm-charts/nemo-training/templates/nemo-launcher-job.yaml", A3MEGA, "24.07",
        "gpt3-175b", "fp8", 47, 98304, 25.115550994873047, 256,
        "the README's one config ('FP8 precision training', 32 VMs)"),
    Run("a3mega-llama3-70b-fp8-128", "24ba6df9", "2024-10-22", "training/a3mega/llama-3-70b/"
        "nemo-pretraining-gke", "src/frameworks/nemo-configs/llama3-70b-fp8.yaml",
        "src/helm-charts/nemo-training/templates/nemo-launcher-job.yaml", A3MEGA, "24.07",
        "llama3-70b", "fp8", 36, 37888, 45.81364059448242, 128,
        "the README's one config; 'The default job setting is 50 training steps and fp8 "
        "precision'; values.yaml gpus 128 (of 'one of: [128, 256]')", data="mmap"),
    Run("a3mega-llama31-70b-bf16-256", "3a1db077", "2024-10-30", "training/a3mega/llama-3.1-70b/"
        "nemo-pretraining-gke", "src/frameworks/nemo-configs/llama3.1-70b-256gpus-bf16.yaml",
        "src/helm-charts/nemo-training/templates/nemo-launcher-job.yaml", A3MEGA, "24.07",
        "llama3.1-70b", "bf16", 37, 77824, 67.82038879394531, 256,
        "the README's one config ('BF16 precision training', 32 VMs)"),
    Run("a3ultra-mixtral-8x7b-bf16-256", "bd6c2597", "2024-12-05", "training/a3ultra/"
        "mixtral-8x7b/nemo-pretraining-gke", "src/frameworks/a3ultra/nemo-configs/"
        "mixtral-8x7b-256gpus-a3u-bf16.yaml",
        "src/helm-charts/a3ultra/nemo-training/templates/nemo-launcher-job.yaml", A3ULTRA,
        "24.07", "mixtral-8x7b", "bf16", 26, 27648, 2.7396187782287598, 256,
        "the README's one config ('BF16 precision training', 32 VMs)"),
    Run("a3ultra-llama31-70b-fp8-256", "7fa45181", "2024-12-16", "training/a3ultra/llama-3.1-70b/"
        "nemo-pretraining-gke", "src/frameworks/a3ultra/nemo-configs/"
        "llama-3.1-70b-256gpus-a3ultra-fp8.yaml",
        "src/helm-charts/a3ultra/nemo-training/templates/nemo-launcher-job.yaml", A3ULTRA,
        "24.07", "llama3.1-70b", "fp8", 15, 16384, 20.021318435668945, 256,
        "the README's one config ('FP8 precision training', 32 VMs)"),
    Run("a3ultra-llama31-405b-fp8-576", "1a3020bb", "2025-02-19", "training/a3ultra/"
        "llama-3.1-405b/nemo-pretraining-gke", "src/frameworks/a3ultra/nemo-configs/"
        "llama-3.1-405b-576gpus-a3ultra-fp8.yaml",
        "src/helm-charts/a3ultra/nemo-training/templates/nemo-launcher-job.yaml", A3ULTRA,
        "24.07", "llama3.1-405b", "fp8", 16, 34272, 92.28738164901733, 576,
        "the README's default ('The default job setting is 30 training steps and fp8 "
        "precision'; a bf16 config beside it with the same layout and batch)"),
    Run("a4-llama31-70b-fp8-256", "0211dc17", "2025-03-27", "training/a4/llama3-1-70b/"
        "nemo-pretraining-gke", "src/frameworks/a4/nemo-configs/llama3-1-70b-256gpus-a4-fp8.yaml",
        "src/helm-charts/a4/nemo-training/templates/nemo-launcher-job.yaml", A4, "25.02",
        "llama3.1-70b", "fp8", 11, 24576, 19.954481744766234, 256,
        "the README's default ('The default job setting is 15 training steps and fp8 "
        "precision'; a bf16 config beside it with the same layout and batch)"),
    Run("a4-mixtral-8x7b-fp8-256", "0211dc17", "2025-03-27", "training/a4/mixtral-8x7b/"
        "nemo-pretraining-gke", "src/frameworks/a4/nemo-configs/mixtral-8x7b-256gpus-a4-fp8.yaml",
        "src/helm-charts/a4/nemo-training/templates/nemo-launcher-job.yaml", A4, "25.02",
        "mixtral-8x7b", "fp8", 38, 39936, 1.0826486110687257, 256,
        "the README's first and default job ('Using 32 nodes (256 GPUs) FP8', 'The default job "
        "setting is 50 training steps and fp8 precision', values.yaml gpus 256; bf16 and 16 / "
        "32-GPU configs beside it, all of global batch 1024: the entry does not say which ran)"),
    Run("a4-llama31-405b-fp8-224", "6d85af42", "2025-03-18", "training/a4high/llama-3.1-405b/"
        "nemo-pretraining-gke", "src/frameworks/a4high/nemo-configs/"
        "llama-3.1-405b-224gpus-a4high-fp8.yaml",
        "src/helm-charts/a4high/nemo-training/templates/nemo-launcher-job.yaml", A4, "25.02",
        "llama3.1-405b", "fp8", 12, 26208, 118.18969259262084, 224,
        "the README's default ('The default job setting is 15 training steps and fp8 "
        "precision'; a bf16 config beside it with the same layout and batch)"),
)


def _model(run: Run) -> dict:
    return yaml.safe_load(mirror_rows.show(GR_DIR, run.commit, run.config))["model"]


def _cells(run: Run, m: dict) -> tuple[dict[str, object], list[str]]:
    """The row's cells from the NeMo config ``m`` and the words that say where each came from."""
    opt = m["optim"]
    vpp = m.get("virtual_pipeline_model_parallel_size") or 1
    options = []
    if m.get("ub_tp_comm_overlap"):
        options.append("tp_overlap")
    if vpp > 1 and m.get("overlap_p2p_comm"):
        options.append("pp_overlap")
    if opt.get("overlap_grad_sync") and opt.get("overlap_param_sync"):
        options.append("dp_overlap")
    if m.get("fp8") and m.get("tp_only_amax_red"):
        # Megatron-core's tp_only_amax_red (the options token fp8amax61 added): the config's own
        options.append("tp_only_amax_red")
    moe = bool(m.get("num_moe_experts"))
    cells = {
        "tp": m["tensor_model_parallel_size"], "pp": m["pipeline_model_parallel_size"],
        "cp": m.get("context_parallel_size") or 1, "ep": m.get("expert_model_parallel_size") or 1,
        "vpp": vpp, "sequence_parallel": int(bool(m.get("sequence_parallel"))),
        "recompute": "none", "distributed_optimizer": 1,
        "global_batch_size": m["global_batch_size"], "micro_batch_size": m["micro_batch_size"],
        "seq_length": m["encoder_seq_length"], "options": ";".join(options),
        "grad_reduce_dtype": opt.get("grad_sync_dtype") or "",
        "fp8_recipe": "delayed" if m.get("fp8") else "",
        # fp8 weights, all-gathered as fp8: NeMo 1 builds the model under TE's fp8_model_init
        # only with fp8 and fp8_params both set (NVIDIA/NeMo@db624485, 24.07's r2.0.0rc1,
        # megatron_gpt_model.py L342; v2.2.0, 25.02's, L395 and L607 fp8_param_gather=
        # cfg.get('fp8_params', False)); unset: False (a4nemo62)
        "fp8_param_gather": int(bool(m.get("fp8") and m.get("fp8_params"))),
        # Megatron-core's output-layer wgrad deferral: NeMo 1 hands every ModelParallelConfig
        # field its config names to Megatron-core (v2.2.0 megatron_base_model.py L1220-1223),
        # whose interleaved schedule drains the deferred GEMMs itself (core_v0.8.0
        # pipeline_parallel/schedules.py L510-525); unset: the dataclass's False / 0 (a4nemo62)
        "defer_embedding_wgrad_compute": int(bool(m.get("defer_embedding_wgrad_compute"))),
        "wgrad_deferral_limit": (m.get("wgrad_deferral_limit") or 0)
        if m.get("defer_embedding_wgrad_compute") else "",
        "moe_dispatcher": m.get("moe_token_dispatcher_type", "") if moe else "",
        "moe_capacity_factor": (m.get("moe_expert_capacity_factor") or "") if moe else "",
        "attention_dropout": m["attention_dropout"], "hidden_dropout": m["hidden_dropout"]}
    words = [
        (f"TP {cells['tp']}, PP {cells['pp']}, VP {m.get('virtual_pipeline_model_parallel_size')},"
        f" CP {cells['cp']}, EP {cells['ep']}, sequence_parallel {m.get('sequence_parallel')}, "
        f"micro-batch {cells['micro_batch_size']}, global batch {cells['global_batch_size']}, "
        f"seq {cells['seq_length']}"),
        "activations_checkpoint_granularity null: no recompute",
        f"optim {opt['name']} (the distributed optimizer) with overlap_grad_sync "
        f"{opt.get('overlap_grad_sync')} and overlap_param_sync {opt.get('overlap_param_sync')}"
        f", grad_sync_dtype {opt.get('grad_sync_dtype')}"
        + ("" if opt.get("grad_sync_dtype") else " (left to the profile)"),
        (f"ub_tp_comm_overlap {m.get('ub_tp_comm_overlap')}, overlap_p2p_comm "
        f"{m.get('overlap_p2p_comm')}"),
        f"fp8 {m.get('fp8')}" + (", fp8_hybrid, amax history 1024 / max: TE delayed scaling"
                                  if m.get("fp8") else "")
        + (f", fp8_params {m['fp8_params']}" if "fp8_params" in m else ", fp8_params unset")
        + (" (fp8_param_gather 1: fp8 weights, gathered as fp8)" if cells["fp8_param_gather"]
           else " (fp8_param_gather 0)" if m.get("fp8") else " (no fp8: fp8_param_gather 0)")
        + (f", tp_only_amax_red {m['tp_only_amax_red']}" if "tp_only_amax_red" in m else "")
        + (f", reduce_amax {m['reduce_amax']}" if "reduce_amax" in m else ""),
        (f"use_flash_attention {m.get('use_flash_attention')} with no NVTE_FUSED_ATTN in the chart "
        "(attention left to the profile)"),
        f"dropout {m['attention_dropout']} / {m['hidden_dropout']}",
        f"tokenizer {m['tokenizer']['type']} on "
        + ("NeMo's mock data" if run.data == "mock" else "GPT-2-tokenized Wikipedia (mmap)")
        + f" (vocab {run.vocab_size}, padded by "
        f"NeMo to make_vocab_size_divisible_by {m.get('make_vocab_size_divisible_by')})"]
    if moe:
        words.append(
            f"{m['num_moe_experts']} experts top-{m['moe_router_topk']}, "
            f"moe_token_dispatcher_type {m.get('moe_token_dispatcher_type')}, "
            f"moe_grouped_gemm {m.get('moe_grouped_gemm')} (no cell: the profile's expert GEMM), "
            f"moe_expert_capacity_factor {m.get('moe_expert_capacity_factor')} with "
            f"moe_pad_expert_input_to_capacity {m.get('moe_pad_expert_input_to_capacity')}")
    if m.get("defer_embedding_wgrad_compute"):
        words.append("defer_embedding_wgrad_compute True, wgrad_deferral_limit "
                     f"{m.get('wgrad_deferral_limit')} (cells)")
    return cells, words


def rows() -> list[dict[str, object]]:
    return nemo_rows() + maxtext_rows()


def nemo_rows() -> list[dict[str, object]]:
    out = []
    for run in RUNS:
        m = _model(run)
        cells, words = _cells(run, m)
        p = run.platform
        gbs = run.consumed // (run.step + 1)
        r = {k: "" for k in HEADER}
        r.update(cells)
        r.update(
            id=f"gpurecipes-{run.key}", model=run.model, vocab_size=run.vocab_size,
            gpu=p.gpu, num_gpus=run.gpus, gpus_per_node=8, nic_gbps_per_gpu=p.nic_gbps,
            gpus_per_nic=1, fabric=p.fabric, nvls=p.nvls, zero_stage="", dtype=run.dtype,
            framework="nemo", framework_version=run.container,
            measured_iteration_s=round(run.seconds, 6),
            source=(f"{GR} {run.recipe}/README.md @ {run.commit} ({run.date}, the commit that "
                    f"added its DLLogger example), the entry at global_step {run.step} "
                    f"('train_step_timing in s'); the job: {run.config}, {run.recipe}/values.yaml"
                    f" and {run.chart} @ {run.commit}"),
            note=(f"published DLLogger entry: global_step {run.step}, consumed_samples "
                  f"{run.consumed}, train_step_timing {run.seconds} s (NeMo's step timer, "
                  "log_step_timing, step_timing_kwargs sync_cuda true, buffer_size 5: the mean "
                  f"of the last five steps); global batch = {run.consumed} / ({run.step} + 1) = "
                  f"{gbs}, the "
                  f"config's; the run: {run.why}; {run.gpus} GPUs (values.yaml workload.gpus); "
                  f"NeMo container {run.container} (the README's test environment); "
                  + "; ".join(words) + f"; the model: the {run.model} preset (the config's "
                  "sizes), vocabulary from the cell; " + p.words))
        out.append(r)
    return out


def check() -> list[str]:
    return nemo_check() + maxtext_check()


def nemo_check() -> list[str]:
    """Each README's DLLogger entry, VM type, container and precision lines; each config's
    layout, batch, sequence, sizes, precision, optimizer, overlap and MoE settings as the row
    reads them; values.yaml's GPU count; the chart's NVLS / TCPXO / gIB settings."""
    bad = []
    presets = {"gpt3-175b": (96, 12288, 96, None, 49152), "llama3-70b": (80, 8192, 64, 8, 28672),
               "llama3.1-70b": (80, 8192, 64, 8, 28672),
               "llama3.1-405b": (126, 16384, 128, 16, 53248),
               "mixtral-8x7b": (32, 4096, 32, 8, 14336)}
    for run in RUNS:
        tag = f"{run.key} @ {run.commit}"
        readme = mirror_rows.show(GR_DIR, run.commit, f"{run.recipe}/README.md")
        entry = re.search(r"DLLL\s*\{(.*?)\n\s*\}\s*\n\s*\}", readme, re.DOTALL)
        data = json.loads("{" + entry.group(1) + "}}") if entry else {}
        d = data.get("data", {})
        if (int(d.get("global_step", -1)), int(d.get("consumed_samples", -1)),
                d.get("train_step_timing in s")) != (run.step, run.consumed, run.seconds):
            bad.append(f"{tag}: README entry {d}")
        flat = " ".join(readme.split())
        for want in (run.platform.machine, (f"container image](https://catalog.ngc.nvidia.com/"
                     f"orgs/nvidia/containers/nemo/tags): {run.container}"), run.config):
            if want not in flat:
                bad.append(f"{tag}: README has no {want!r}")
        prec = re.search(r"default job setting is \d+ training steps and (\w+) precision", readme)
        stated = re.search(r"- (\w+) precision training", readme)
        said = (prec or stated).group(1).lower() if (prec or stated) else None
        if said != run.dtype:
            bad.append(f"{tag}: README's default precision {said}")
        values = yaml.safe_load(mirror_rows.show(GR_DIR, run.commit, f"{run.recipe}/values.yaml"))
        if values["workload"]["gpus"] != run.gpus:
            bad.append(f"{tag}: values.yaml gpus {values['workload']['gpus']}")
        conf = yaml.safe_load(mirror_rows.show(GR_DIR, run.commit, run.config))
        timing = conf["exp_manager"].get("step_timing_kwargs") or {}
        if (timing.get("sync_cuda"), timing.get("buffer_size")) != (True, 5):
            bad.append(f"{tag}: step_timing_kwargs {timing}")
        m = conf["model"]
        cells, _ = _cells(run, m)
        if cells["global_batch_size"] != run.consumed // (run.step + 1) or \
                run.consumed % (run.step + 1):
            bad.append(f"{tag}: global batch {cells['global_batch_size']} vs the entry's")
        if bool(m.get("fp8")) != (run.dtype == "fp8"):
            bad.append(f"{tag}: config fp8 {m.get('fp8')}")
        ffn = m["ffn_hidden_size"]
        ffn = 4 * m["hidden_size"] if isinstance(ffn, str) and "multiply:4" in ffn else ffn
        shape = (m["num_layers"], m["hidden_size"], m["num_attention_heads"],
                 m.get("num_query_groups"), ffn)
        if shape != presets[run.model]:
            bad.append(f"{tag}: model shape {shape}")
        if m.get("activations_checkpoint_granularity") is not None or \
                m["optim"]["name"] not in ("distributed_fused_adam", "mcore_distributed_optim"):
            bad.append(f"{tag}: recompute or optimizer "
                       f"{m.get('activations_checkpoint_granularity')}"
                       f" {m['optim']['name']}")
        if m["tokenizer"]["type"] != "GPT2BPETokenizer" or m["data"]["data_impl"] != run.data:
            bad.append(f"{tag}: tokenizer / data {m['tokenizer']['type']} {m['data']}")
        chart = mirror_rows.show(GR_DIR, run.commit, run.chart)
        if "NVTE_FUSED_ATTN" in chart or "NVTE_FLASH_ATTN" in chart:
            bad.append(f"{tag}: the chart sets an NVTE attention backend")
        nvls_off = re.search(r"NCCL_NVLS_ENABLE\s*\n\s*value: \"0\"", chart) is not None
        if nvls_off != (run.platform.nvls == "0"):
            bad.append(f"{tag}: chart NCCL_NVLS_ENABLE=0 is {nvls_off}")
        fabric_words = {"tcpxo": ("NCCL_FASTRAK",),
                        "roce": ("NCCL_IB_", "/usr/local/gib/scripts/set_nccl_env.sh")}
        if not any(w in chart for w in fabric_words[run.platform.fabric]):
            bad.append(f"{tag}: chart has none of {fabric_words[run.platform.fabric]}")
    return bad


@dataclasses.dataclass(frozen=True)
class MaxTextRun:
    """One MaxText recipe's printed ``completed step`` line and the default job it came from."""

    key: str
    commit: str
    date: str
    recipe: str
    config: str
    chart: str
    platform: Platform
    image: str
    version: str
    """framework_version: the image's MaxText date, or the README's date for a nightly build."""
    model: str
    dtype: str
    step: int
    seconds: float
    tflops: float
    tokens_per_device: float
    total_weights: int
    gpus: int
    why: str


MAXTEXT_RUNS = (
    MaxTextRun("a3mega-maxtext-llama2-7b-bf16-256", "d57d2223", "2025-01-16",
               "training/a3mega/llama-2-7b/maxtext-pretraining-gke",
               "src/frameworks/a3mega/maxtext-configs/llama-2-7b-256gpus-a3mega-bf16.yaml",
               "src/helm-charts/a3mega/maxtext-training/templates/maxtext-launcher-job.yaml",
               A3MEGA, "maxtext-nightly (src/docker/maxtext, built by the user)", "2025-01-16",
               "llama2-7b", "bf16", 12, 1.500, 503.384, 10922.973, 4194304, 256,
               "the README's default ('30 training steps and bf16 precision over 32 nodes'; a "
               "16-node config beside it, whose step holds 2,097,152 tokens, not the line's)"),
    MaxTextRun("a3ultra-maxtext-llama31-70b-bf16-256", "a3b9caba", "2024-12-07",
               "training/a3ultra/llama-3.1-70b/maxtext-pretraining-gke",
               "src/frameworks/a3ultra/maxtext-configs/llama-3.1-70b-256gpus-a3u-bf16.yaml",
               "src/helm-charts/a3ultra/maxtext-training/templates/maxtext-launcher-job.yaml",
               A3ULTRA, "maxtext-nightly (src/docker/maxtext, built by the user)", "2024-12-07",
               "llama3.1-70b", "bf16", 12, 15.516, 508.371, 1055.949, 4194304, 256,
               "the README's default ('50 training steps and bf16 precision'; an fp8 config "
               "beside it with the same batch; the same line was later copied into the 405B "
               "README, whose config does not hold it)"),
    MaxTextRun("a4-maxtext-llama31-70b-fp8-256", "5be5988e", "2025-03-31",
               "training/a4/llama3-1-70b/maxtext-pretraining-gke",
               "src/frameworks/a4/maxtext-configs/llama3-1-70b-256gpus-a4-fp8.yaml",
               "src/helm-charts/a4/maxtext-training/templates/maxtext-launcher-job.yaml", A4,
               "jax-maxtext-gpu:jax0.5.1-cuda_dl25.02-rev1-maxtext-20150317", "2025-03-17",
               "llama3.1-70b", "fp8", 11, 20.935, 1507.142, 3130.521, 16777216, 256,
               "the README's default ('15 training steps and fp8 precision'; a bf16 config "
               "beside it with the same batch)"),
    MaxTextRun("a4-maxtext-llama31-405b-fp8-256", "6d85af42", "2025-03-18",
               "training/a4high/llama-3.1-405b/maxtext-pretraining-gke",
               "src/frameworks/a4high/maxtext-configs/llama-3.1-405b-256gpus-a4h-fp8.yaml",
               "src/helm-charts/a4high/maxtext-training/templates/maxtext-launcher-job.yaml", A4,
               "jax-maxtext-gpu:jax0.5.1-cuda_dl25.02-rev1-maxtext-20150313", "2025-03-13",
               "llama3.1-405b", "fp8", 11, 28.294, 1520.276, 579.059, 4194304, 256,
               "the README's one config ('FP8 precision training', 32 VMs)"),
)

# Left out: the A3 Ultra MaxText Mixtral 8x7B bf16 line (training/a3ultra/mixtral-8x7b/
# maxtext-pretraining-gke/README.md @ dc6ef1af: completed step 45, 3.437 s, 5,242,880 tokens on
# 256 GPUs; mesh data 16 x fsdp 2 x expert 8, remat custom, megablox false, capacity_factor 1):
# trainsim refuses dp_replicate with an MoE model (how hybrid sharding meets the experts is not
# modelled), and writing the 16-way sharding as 256-way would misstate the run.
CUSTOM_DEVICE = ("query_proj", "key_proj", "value_proj", "qkv_proj", "out_proj", "mlpwi",
                 "mlpwi_0", "mlpwi_1", "mlpwo")
"""The tensors MaxText's ``remat_policy: custom`` may put on ``device`` (kept)."""


def _maxtext_config(run: MaxTextRun) -> dict:
    return yaml.safe_load(mirror_rows.show(GR_DIR, run.commit, run.config))


def _mesh(c: dict, gpus: int) -> dict[str, int]:
    """The run's mesh: each axis's ICI x DCN size (MaxText's -1 fills the node's 8 GPUs)."""
    axes = ("data", "fsdp", "tensor", "pipeline", "expert")
    ici = {a: c.get(f"ici_{a}_parallelism", 1) for a in axes}
    dcn = {a: c.get(f"dcn_{a}_parallelism", 1) for a in axes}
    for a in axes:
        if ici[a] == -1:
            ici[a] = 8 // math.prod(v for k, v in ici.items() if k != a)
    mesh = {a: ici[a] * dcn[a] for a in axes}
    if math.prod(mesh.values()) != gpus:
        raise ValueError(f"mesh {mesh} is not {gpus} GPUs")
    return mesh


def _remat(c: dict) -> tuple[str, str, str]:
    """(recompute, remat_policy, words) for the config's ``remat_policy``."""
    policy = c["remat_policy"]
    if policy == "full":
        return "full", "full", "remat_policy full (nothing saved: the layer re-run)"
    if policy == "custom":
        kept = [n for n in CUSTOM_DEVICE if c.get(n) == "device"]
        return ("selective", "custom:" + ";".join(kept),
                f"remat_policy custom with {', '.join(kept)} on device (kept)")
    return "selective", policy, f"remat_policy {policy}"


def _combine_bytes(run: MaxTextRun) -> int | None:
    """The chart's --xla_gpu_all_reduce_combine_threshold_bytes (its configmap's xla-flags, or
    values.yaml's xlaFlags), else None."""
    configmap = mirror_rows.show(GR_DIR, run.commit, run.chart.replace(
        "maxtext-launcher-job.yaml", "maxtext-configmap.yaml"))
    values = mirror_rows.show(GR_DIR, run.commit, f"{run.recipe}/values.yaml")
    found = re.findall(r"--xla_gpu_all_reduce_combine_threshold_bytes=(\d+)", values) or \
        re.findall(r"--xla_gpu_all_reduce_combine_threshold_bytes=(\d+)", configmap)
    return int(found[0]) if found else None


def maxtext_rows() -> list[dict[str, object]]:
    out = []
    for run in MAXTEXT_RUNS:
        c, p = _maxtext_config(run), run.platform
        # scan_layers False: a module per layer, XLA's combiner joins the data-axis gradient
        # all-reduces across layers (option unscanned_layers, workload.xla_combine)
        unscanned = c.get("scan_layers") is False
        combine = _combine_bytes(run) if unscanned else None
        mesh = _mesh(c, run.gpus)
        recompute, policy, remat_words = _remat(c)
        pdbs, seq = c["per_device_batch_size"], c["max_target_length"]
        moe = bool(c.get("num_experts"))
        r = {k: "" for k in HEADER}
        r.update(
            id=f"gpurecipes-{run.key}", model=run.model, seq_length=seq, gpu=p.gpu,
            num_gpus=run.gpus, gpus_per_node=8, nic_gbps_per_gpu=p.nic_gbps, gpus_per_nic=1,
            fabric=p.fabric, nvls=p.nvls, tp=mesh["tensor"], pp=mesh["pipeline"], cp=1,
            ep=mesh["expert"], vpp=1, sequence_parallel=0, recompute=recompute,
            remat_policy=policy, zero_stage=3, dp_replicate=mesh["data"],
            all_reduce_combine_bytes=combine or "",
            global_batch_size=pdbs * run.gpus, micro_batch_size=pdbs, dtype=run.dtype,
            fp8_recipe="delayed" if run.dtype == "fp8" else "",
            options=";".join(["onehot_embedding"] * bool(c.get("use_iota_embed"))
                             + ["unscanned_layers"] * unscanned),
            framework="maxtext", framework_version=run.version, attention="cudnn",
            moe_capacity_factor=c.get("capacity_factor", "") if moe else "",
            attention_dropout=0, hidden_dropout=0,
            measured_iteration_s=run.seconds,
            source=(f"{GR} {run.recipe}/README.md @ {run.commit} ({run.date}, the commit that "
                    f"added its log example), the 'completed step: {run.step}' line; the job: "
                    f"{run.config}, {run.recipe}/values.yaml and {run.chart} @ {run.commit}"),
            note=(f"published MaxText log line: completed step {run.step}, seconds "
                  f"{run.seconds:.3f}, TFLOP/s/device {run.tflops}, Tokens/s/device "
                  f"{run.tokens_per_device}, total_weights {run.total_weights} (one step's "
                  f"time, as printed); total_weights = per_device_batch_size {pdbs} x "
                  f"{run.gpus} GPUs x max_target_length {seq} (checked), and tokens/s/device x "
                  f"seconds x GPUs gives it back; the run: {run.why}; image {run.image}; mesh "
                  f"data {mesh['data']} x fsdp {mesh['fsdp']} x expert {mesh['expert']} (the "
                  "config's ici_* / dcn_* parallelism): weights, gradients and Adam state "
                  f"sharded over {run.gpus // mesh['data']} GPUs, {mesh['data']} replica(s) "
                  "(zero_stage 3, dp_replicate); "
                  + remat_words + "; attention cudnn_flash_te with the chart's NVTE_FUSED_ATTN=1"
                  f": cudnn; use_iota_embed {c.get('use_iota_embed')} (onehot_embedding); "
                  f"scan_layers {c.get('scan_layers', 'unset (base.yml default)')}"
                  + (" (a module per layer: option unscanned_layers, the data-axis gradient "
                     "all-reduces joined by XLA's combiner in sorted parameter-name order up to "
                     f"the chart's --xla_gpu_all_reduce_combine_threshold_bytes={combine}: "
                     "column all_reduce_combine_bytes)" if unscanned else "") + "; "
                  f"quantization {c.get('quantization', 'none')}"
                  + (" (MaxText's fp8 dot_general, delayed amax scaling)"
                     if run.dtype == "fp8" else "")
                  + f"; logits_dot_in_fp32 {c.get('logits_dot_in_fp32')}; synthetic data"
                  + (f"; {c['num_experts']} experts top-{c['num_experts_per_tok']}, megablox "
                     f"{c.get('megablox')} (dense matmul dispatch), capacity_factor "
                     f"{c.get('capacity_factor')} (dropping, padded), weight_dtype "
                     f"{c.get('weight_dtype')} (no cell)" if moe else "")
                  + "; XLA latency-hiding scheduler with pipelined all-gather / reduce-scatter "
                  "(values.yaml xlaFlags; no option cell: the profile's own overlap); the "
                  f"model: MaxText's {c.get('model_name', c.get('decoder_block'))} "
                  f"(the {run.model} preset); " + p.words))
        out.append(r)
    return out


def maxtext_check() -> list[str]:
    """Each README's log line and its precision / VM lines and config path, the line's tokens
    against the config's batch and sequence, values.yaml's GPU count and the chart's attention,
    NVLS and fabric settings."""
    bad = []
    for run in MAXTEXT_RUNS:
        tag = f"{run.key} @ {run.commit}"
        readme = mirror_rows.show(GR_DIR, run.commit, f"{run.recipe}/README.md")
        line = (f"completed step: {run.step}, seconds: {run.seconds:.3f}, TFLOP/s/device: "
                f"{run.tflops:.3f}, Tokens/s/device: {run.tokens_per_device:.3f}, "
                f"total_weights: {run.total_weights}")
        flat = " ".join(readme.split())
        for want in (line, run.platform.machine, run.config):
            if want not in flat:
                bad.append(f"{tag}: README has no {want!r}")
        if "maxtext-nightly" not in run.image and run.image not in flat:
            bad.append(f"{tag}: README has no image {run.image}")
        prec = re.search(r"default job setting is \d+ training steps and (\w+) precision", readme)
        stated = re.search(r"- (\w+) precision training", readme)
        said = (prec or stated).group(1).lower() if (prec or stated) else None
        if said != run.dtype:
            bad.append(f"{tag}: README's default precision {said}")
        values = yaml.safe_load(mirror_rows.show(GR_DIR, run.commit, f"{run.recipe}/values.yaml"))
        if values["workload"]["gpus"] != run.gpus:
            bad.append(f"{tag}: values.yaml gpus {values['workload']['gpus']}")
        configmap = mirror_rows.show(GR_DIR, run.commit, run.chart.replace(
            "maxtext-launcher-job.yaml", "maxtext-configmap.yaml"))
        if "--xla_gpu_enable_latency_hiding_scheduler=true" not in \
                str(values.get("xlaFlags")) + configmap:
            bad.append(f"{tag}: no latency-hiding scheduler in xlaFlags or the configmap")
        c = _maxtext_config(run)
        tokens = c["per_device_batch_size"] * run.gpus * c["max_target_length"]
        if tokens != run.total_weights or \
                abs(tokens / run.seconds / run.gpus / run.tokens_per_device - 1) > 2e-3:
            bad.append(f"{tag}: {tokens} tokens a step vs the line")
        try:
            _mesh(c, run.gpus)
        except ValueError as e:
            bad.append(f"{tag}: {e}")
        if (c.get("quantization") == "fp8") != (run.dtype == "fp8") or \
                c.get("attention") != "cudnn_flash_te" or c.get("dataset_type") != "synthetic":
            bad.append(f"{tag}: quantization / attention / data {c}")
        if c.get("model_name") != run.model:
            bad.append(f"{tag}: model {c.get('model_name')}")
        chart = mirror_rows.show(GR_DIR, run.commit, run.chart)
        if not re.search(r"NVTE_FUSED_ATTN\s*\n\s*value: \"1\"", chart):
            bad.append(f"{tag}: the chart does not set NVTE_FUSED_ATTN=1")
        nvls_off = re.search(r"NCCL_NVLS_ENABLE\s*\n\s*value: \"0\"", chart) is not None
        if nvls_off != (run.platform.nvls == "0"):
            bad.append(f"{tag}: chart NCCL_NVLS_ENABLE=0 is {nvls_off}")
        fabric_words = {"tcpxo": ("NCCL_FASTRAK",),
                        "roce": ("NCCL_IB_", "/usr/local/gib/scripts/set_nccl_env.sh")}
        if not any(w in chart for w in fabric_words[run.platform.fabric]):
            bad.append(f"{tag}: chart has none of {fabric_words[run.platform.fabric]}")
    return bad


if __name__ == "__main__":
    mirror_rows.main(rows, HEADER, check, "entries, configs and charts as in the mirror")
