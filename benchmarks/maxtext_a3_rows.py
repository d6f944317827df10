"""Writes benchmarks/training_maxtext_a3.csv: Google's own MaxText (JAX) Llama2-7B results on A3
VMs (8 H100 each, 1-16 VMs), the table of `MaxText/configs/a3/llama_2_7b/README.md` as first
written (AI-Hypercomputer/maxtext @ efb6d9e4a, 2024-04-09, 'Add README for llama2-7B'; the same
table at HEAD under src/maxtext/configs/gpu/a3/), with each row's run script beside it
(`1vm.sh` .. `16vm.sh`). The README gives MaxText's own TFLOP/s per chip; the step time is the
per-device TFLOP of a step, as MaxText's `calculate_tflops_training_per_device` counts it at that
commit, over that rate. See training_maxtext_a3.md.

    python benchmarks/maxtext_a3_rows.py > benchmarks/training_maxtext_a3.csv
    python benchmarks/maxtext_a3_rows.py --check   # table, scripts and the formula vs the mirror
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

HEADER = mirror_rows.v2_header(nic_gbps_per_gpu=["gpus_per_nic", "fabric"],
                               distributed_optimizer=["dp_replicate", "all_reduce_combine_bytes"],
                               recompute_modules=["remat_policy"],
                               note=["attention_dropout", "hidden_dropout"])
MT_DIR, MT = "AI-Hypercomputer+maxtext", "AI-Hypercomputer/maxtext"
COMMIT = "efb6d9e4a"
DIR = "MaxText/configs/a3/llama_2_7b"
TABLE = {1: (24, 492), 2: (25, 422), 4: (26, 407), 8: (27, 409), 16: (28, 375)}
"""VMs -> (README line, TFLOP/sec/chip)."""
COMBINE = {1: 134217728, 2: 67108864, 4: 536870912, 8: 1073741824, 16: 1073741824}
"""VMs -> the script's --xla_gpu_all_reduce_combine_threshold_bytes."""
BS, SEQ = 4, 4096  # per_device_batch_size, max_target_length (every script)
# MaxText llama2-7b (configs/models/llama2-7b.yml): emb 4096, 32 heads of 128, MLP 11008 (SwiGLU:
# wi_0, wi_1, wo), 32 layers, vocab 32000, logits_via_embedding False (untied)
H, HEADS, HEAD_DIM, FFN, LAYERS, VOCAB = 4096, 32, 128, 11008, 32, 32000


def num_params() -> int:
    """What MaxText's pytree count gives for llama2-7b: the token embedding, per layer q/k/v/o,
    the three MLP matrices and two RMSNorm scales, the final norm, the separate logits matrix."""
    per_layer = 4 * H * HEADS * HEAD_DIM + 3 * H * FFN + 2 * H
    return VOCAB * H + LAYERS * per_layer + H + H * VOCAB


def tflop_per_device() -> float:
    """MaxText's calculate_tflops_training_per_device (maxtext_utils.py L94-101 @ efb6d9e4a): 6 x
    params x seq x per-device batch, plus 12 x heads x layers x head_dim x seq^2 x batch halved
    for causality, in TFLOP."""
    weights = 6 * num_params() * SEQ * BS / 1e12
    attention = 12 * HEADS * LAYERS * HEAD_DIM * SEQ**2 * BS / 1e12 / 2
    return weights + attention


def rows() -> list[dict[str, object]]:
    out = []
    work = tflop_per_device()
    for vms, (line, rate) in TABLE.items():
        gpus = 8 * vms
        step = round(work / rate, 6)
        r = {k: "" for k in HEADER}
        r.update(
            id=f"maxtext-a3-llama2-7b-bf16-h100-{gpus}", model="llama2-7b", seq_length=SEQ,
            gpu="h100-sxm-80gb", num_gpus=gpus, gpus_per_node=8, nic_gbps_per_gpu=100, gpus_per_nic=2,
            fabric="tcpx", tp=1,
            pp=1, cp=1, ep=1, vpp=1, sequence_parallel=0, recompute="selective",
            remat_policy="minimal_flash", zero_stage=3, dp_replicate=vms,
            all_reduce_combine_bytes=COMBINE[vms],
            global_batch_size=BS * gpus, micro_batch_size=BS, dtype="bf16",
            options="onehot_embedding;unscanned_layers", framework="maxtext", framework_version="2024-04-09",
            attention="cudnn", attention_dropout=0, hidden_dropout=0, measured_iteration_s=step,
            source=(f"{MT} {DIR}/README.md @ {COMMIT} (2024-04-09, 'Add README for llama2-7B'; "
                    "the same table at HEAD e591f30c, src/maxtext/configs/gpu/a3/llama_2_7b/), "
                    f"line {line} '{vms}x A3 (h100-80gb-8)', TFLOP/sec/chip; the run: "
                    f"{DIR}/{vms}vm.sh @ {COMMIT}"),
            note=(f"published {rate} TFLOP/s per chip (MaxText's count); step = per-device "
                  f"TFLOP / rate = {work:.2f} / {rate} = {step:.4f} s, the per-device TFLOP as "
                  "maxtext_utils.py calculate_tflops_training_per_device counts it at "
                  f"{COMMIT}: 6 x {num_params():,} params x {SEQ} x {BS} + 12 x heads x layers "
                  f"x head_dim x {SEQ}^2 x {BS} / 2 (causal); {vms} VM(s) x 8 H100: "
                  f"ici_fsdp_parallelism=8, dcn_data_parallelism={vms}: weights, gradients and "
                  f"Adam state sharded over the 8 GPUs of a VM, {vms} replica(s): zero_stage 3 "
                  f"with dp_replicate; per_device_batch_size {BS}: GBS {BS * gpus}, no gradient "
                  f"accumulation; max_target_length {SEQ}; attention=cudnn_flash_te (cuDNN fused "
                  "attention through Transformer Engine, NVTE_FUSED_ATTN=1): cudnn; "
                  "remat_policy=minimal_flash (layers/models.py: save_from_both_policies("
                  "checkpoint_dots_with_no_batch_dims, save_only_these_names('context')); no "
                  "MaxText layer names a 'context' at the commit and TE's fused attention is a "
                  "custom_vjp whose residuals carry no name, so every projection's output is "
                  "kept and the RMS norms, the residual add between them, RoPE, the cuDNN "
                  "attention and the SwiGLU product re-run, the MLP's output projection not: "
                  "jax.checkpoint DCE; workload.remat_policy; column remat_policy, as "
                  "training_jaxtoolbox's MaxText row); scan_layers=false (a module per layer, "
                  "no layer loop: option unscanned_layers, whose data-axis gradient all-reduces "
                  "XLA's combiner joins in sorted parameter-name order, workload.xla_combine) "
                  f"with --xla_gpu_all_reduce_combine_threshold_bytes={COMBINE[vms]} (the "
                  "script's XLA_FLAGS: column all_reduce_combine_bytes); use_iota_embed=true "
                  "(the token lookup a one-hot "
                  "dot: option onehot_embedding); dtype bfloat16, weight_dtype float32, adamw; "
                  "logits_dot_in_fp32 True (base.yml default at the commit: the logits GEMM in "
                  "fp32, which no cell states); XLA latency-hiding scheduler with pipelined "
                  "all-gather / reduce-scatter / all-reduce (the script's XLA_FLAGS; no option "
                  "cell: the profile's own overlap); synthetic data; the model: MaxText "
                  "llama2-7b (32 layers, 4096, 32 heads, MLP 11008, vocab 32000, RMSNorm, RoPE, "
                  "untied), the llama2-7b preset; A3 (a3-highgpu-8g, the node preset): 8 H100 "
                  "80GB on NVLink, 1,000 Gbps a VM over GPUDirect-TCPX (Google Cloud, "
                  "'Networking and GPU machines'), four 200 Gbps secondary NICs for GPU traffic "
                  "(GKE docs: 'up to four on A3 High machine types'): two GPUs a NIC "
                  "(gpus_per_nic 2), 100 Gb/s per GPU; TCP through NCCL's GPUDirect-TCPX plugin, "
                  "not RDMA: fabric tcpx (run through XPK on GKE, whose TCPX NCCL config of Feb "
                  "2024 sets NCCL_ALGO=Ring, NCCL_PROTO=Simple)"))
        out.append(r)
    return out


def check() -> list[str]:
    """The README's rates and hardware names, each VM count's script (its mesh, batch,
    sequence, attention, remat, scan and embedding flags), the model file, the TFLOP formula
    and base.yml's defaults the note names, all at the cited commit."""
    bad = []
    lines = mirror_rows.show(MT_DIR, COMMIT, f"{DIR}/README.md").splitlines()
    for vms, (line, rate) in TABLE.items():
        c = mirror_rows.md_cells(lines[line - 1])
        if c != [f"{vms}x A3 (h100-80gb-8)", str(rate)]:
            bad.append(f"README line {line}: {c}")
        script = mirror_rows.show(MT_DIR, COMMIT, f"{DIR}/{vms}vm.sh")
        bad += [f"{vms}vm.sh: no {p!r}" for p in (
            f"dcn_data_parallelism={vms} ", "ici_fsdp_parallelism=8 ",
            f"per_device_batch_size={BS} ", f"max_target_length={SEQ} ", "model_name=llama2-7b",
            "attention=cudnn_flash_te", "remat_policy=minimal_flash", "use_iota_embed=true",
            "scan_layers=false", "dataset_type=synthetic", "export NVTE_FUSED_ATTN=1",
            "--xla_gpu_enable_latency_hiding_scheduler=true",
            f"--xla_gpu_all_reduce_combine_threshold_bytes={COMBINE[vms]} ") if p not in script]
        bad += [f"{vms}vm.sh sets {p!r}" for p in ("logits_dot_in_fp32", "quantization",
                                                    "gradient_accumulation") if p in script]
    model = mirror_rows.show(MT_DIR, COMMIT, "MaxText/configs/models/llama2-7b.yml")
    bad += [f"llama2-7b.yml: no {p!r}" for p in (
        f"base_emb_dim: {H}", f"base_num_query_heads: {HEADS}", f"base_num_kv_heads: {HEADS}",
        f"base_mlp_dim: {FFN}", f"base_num_decoder_layers: {LAYERS}", f"head_dim: {HEAD_DIM}",
        'mlp_activations: ["silu","linear"]', f"vocab_size: {VOCAB}",
        "logits_via_embedding: False") if p not in model]
    utils = mirror_rows.show(MT_DIR, COMMIT, "MaxText/maxtext_utils.py")
    bad += [f"maxtext_utils.py: no {p!r}" for p in (
        ("learnable_weight_tflops = 6 * num_model_parameters * config.max_target_length * "
        "config.per_device_batch_size"),
        ("noncasual_attention_flops = 12 * config.num_query_heads * config.num_decoder_layers * "
        "config.head_dim"), "causal_attention_tflops = noncasual_attention_flops / 2",
        "total_tflops = learnable_weight_tflops + causal_attention_tflops") if p not in utils]
    base = mirror_rows.show(MT_DIR, COMMIT, "MaxText/configs/base.yml")
    bad += [f"base.yml: no {p!r}" for p in (
        'dtype: "bfloat16"', "weight_dtype: float32", "logits_dot_in_fp32: True",
        'opt_type: "adamw"', "dropout_rate: 0") if p not in base]
    models = mirror_rows.show(MT_DIR, COMMIT, "MaxText/layers/models.py")
    if "name=f'layers_{lyr}'" not in models:
        bad.append("models.py: the unscanned layers are not named layers_{lyr}")
    policy = models.split("cfg.remat_policy == 'minimal_flash':", 1)[-1][:260]
    if not all(p in policy for p in ("checkpoint_dots_with_no_batch_dims",
                                     "save_only_these_names('context',)")):
        bad.append("models.py: minimal_flash is not dots-without-batch-dims plus 'context'")
    if "checkpoint_name(" in models or any(
            "\"context\")" in t or "'context')" in t for t in (
                mirror_rows.show(MT_DIR, COMMIT, f"MaxText/layers/{f}.py")
                for f in ("attentions", "linears", "llama2"))):
        bad.append("a MaxText layer names a 'context' (minimal_flash would keep it)")
    return bad


if __name__ == "__main__":
    mirror_rows.main(rows, HEADER, check, "table, scripts and formula as in the mirror")
