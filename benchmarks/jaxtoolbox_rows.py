"""Writes benchmarks/training_jaxtoolbox.csv: NVIDIA/JAX-Toolbox's own Paxml and MaxText results,
the tables of `rosetta/rosetta/projects/pax/README.md` (GPT 126M / 5B / 175B on 64-256 DGX A100
80G and DGX H100, plain XLA bf16, Transformer Engine bf16 and fp8) in two releases, 23.10
(nvcr.io/nvidia/jax:23.10-paxml-py3, the README @ 6b3796cf) and 24.04 (nvcr.io/nvidia/jax:
24.04-paxml-py3, the tables set in 8bfbd170 and unchanged to 28603900), and the Llama2-7B row
of `rosetta/rosetta/projects/maxtext/README.md` (8 H100, ghcr.io/nvidia/jax:maxtext-2024-04-15,
set in 8ef90e8e and unchanged to 28603900). The models and remat policies are google/paxml's
`paxml/contrib/gpu/scripts_gpu/configs.py` at the commit each container carried; the MaxText
settings are the README's table and its `scripts/example_slurm.sub`. See training_jaxtoolbox.md.

    python benchmarks/jaxtoolbox_rows.py > benchmarks/training_jaxtoolbox.csv
    python benchmarks/jaxtoolbox_rows.py --check   # tables, configs and flags against the mirrors
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

HEADER = mirror_rows.v2_header(distributed_optimizer=["dp_replicate"],
                               recompute_modules=["remat_policy"],
                               note=["attention_dropout", "hidden_dropout"])
JT_DIR, JT = "NVIDIA+JAX-Toolbox", "NVIDIA/JAX-Toolbox"
PAX_README = "rosetta/rosetta/projects/pax/README.md"
MT_README = "rosetta/rosetta/projects/maxtext/README.md"
MT_SUB = "rosetta/rosetta/projects/maxtext/scripts/example_slurm.sub"
PAX_DIR, PAX_CONFIGS = "google+paxml", "paxml/contrib/gpu/scripts_gpu/configs.py"
TE_DIR = "NVIDIA+TransformerEngine"
SEQ = 2048  # GPT126MBase MAX_SEQ_LEN, inherited by the 5B and 175B
MAX_STEPS = {"126m": 600000, "5b": 75000, "175b": 75000}  # configs.py, for the walltime column

# release -> (README commit, how it is cited, container, framework_version, google/paxml commit
#             of the configs, {(size, GPU, README precision): (README line, sequences/s)})
RELEASES = {
    "2310": ("6b3796cf", ("@ 6b3796cf (2023-10-25, the 23.10 release's README: 4d61738a 'Update "
             "Pax README and sub file for 23.10 release' and a wording edit)"),
             "nvcr.io/nvidia/jax:23.10-paxml-py3", "2023-10", "04516ac",
             {("126m", "a100", "BF16"): (153, 1877.20), ("5b", "a100", "BF16"): (154, 465.45),
              ("175b", "a100", "BF16"): (155, 18.29), ("126m", "a100", "TE BF16"): (156, 2512.2),
              ("5b", "a100", "TE BF16"): (157, 586.82), ("175b", "a100", "TE BF16"): (158, 19.47),
              ("126m", "h100", "TE BF16"): (164, 4143.21),
              ("5b", "h100", "TE BF16"): (165, 1066.67),
              ("175b", "h100", "TE BF16"): (166, 44.01), ("5b", "h100", "TE FP8"): (167, 1288.05),
              ("175b", "h100", "TE FP8"): (168, 65.64)}),
    "2404": ("28603900", ("@ 28603900 (2025-05-27, the last version before the rosetta tree "
             "moved; the tables as set in 8bfbd170, 2024-04-14, 'Update Pax README for 24.04 "
             "release')"), "nvcr.io/nvidia/jax:24.04-paxml-py3", "2024-04", "715f93c",
             {("126m", "a100", "BF16"): (159, 2098.16), ("5b", "a100", "BF16"): (160, 594.13),
              ("126m", "a100", "TE BF16"): (162, 2526.72),
              ("5b", "a100", "TE BF16"): (163, 718.19),
              ("175b", "a100", "TE BF16"): (164, 20.44),
              ("126m", "h100", "TE BF16"): (172, 4709.12),
              ("5b", "h100", "TE BF16"): (173, 1657.24),
              ("175b", "h100", "TE BF16"): (174, 51.00), ("5b", "h100", "TE FP8"): (175, 2374.66),
              ("175b", "h100", "TE FP8"): (176, 84.45)}),
}
# size -> (preset, vocab column, GPUs, DP, FSDP, BS / GPU, (recompute, remat_policy, why), model
# words); the policy (config.remat_policies, workload.remat_policy) is what re-runs, not modules
MODELS = {
    "126m": ("gpt3-125m", 50304, 64, 64, 1, 4,
             ("none", "", ("USE_REPEATED_LAYER False: a plain StackedTransformer, no "
              "jax.checkpoint "
              "(CHECKPOINT_POLICY is applied to the repeated stack only: paxml/tasks/lm/"
              "model_params.py)")),
             ("GPT126MBase (12 layers, 768, 12 heads of 64, MLP 3072, vocab 50304, GELU, biases, "
             "learned positions, tied softmax embedding)")),
    "5b": ("gpt3-5b", 50304, 256, 1, 256, 8,
           ("selective", "save_dot_with_no_batch_dims",
            ("CHECKPOINT_POLICY SAVE_DOT_WITH_NO_BATCH_DIM (praxis checkpoint_policy.py L53-54: "
             "jax's checkpoint_dots_with_no_batch_dims): every projection's output kept; the "
             "attention's batched QK and PV dots or TE's fused attention (a custom call), the "
             "layer norms, the residual add between them and GELU re-run, the MLP's output "
             "projection not (jax.checkpoint DCE; workload.remat_policy)")),
           ("GPT5BBase (24 layers, 4096, 32 heads of 128, MLP 16384, vocab 50304, GELU, biases, "
           "learned positions, tied)")),
    "175b": ("gpt3-175b", 50257, 256, 1, 256, 6,
             ("full", "save_nothing",
              ("CHECKPOINT_POLICY SAVE_NOTHING (TransformerLmSpmdAdafactor's default, "
               "not overridden by GPT175BBase): the layer re-run but for what no gradient "
               "reads, the MLP's output projection and the residual add after it (jax.checkpoint "
               "DCE; workload.remat_policy)")),
             ("GPT175BBase (96 layers, 12288, 96 heads, MLP 4 x 12288, vocab 50257, GELU, biases, "
             "learned positions, tied softmax embedding)")),
}
GPU = {"a100": ("a100-sxm-80gb", 200, "DGX A100 80G, 8 GPUs a node, 200 Gb/s HDR per GPU"),
       "h100": ("h100-sxm-80gb", 400, "DGX H100, 8 GPUs a node, 400 Gb/s NDR per GPU")}

# MaxText: the README's one row (line 90 @ 28603900): Llama2-7B, 8 H100, seq 4096, BS/GPU 2,
# FSDP 8, GBS 16, Flash attention, remat minimal_flash, no scan, 0.721 s a step, 22.19 seq/s
MT_LINE, MT_STEP, MT_SEQ_S = 90, 0.721, 22.19
# MaxText's models.py (minimal_flash) at the last commit before the container's date; Praxis's
# AutodiffCheckpointType (the Pax policies), as config.remat_policies reads it
MT_DIR, MT_COMMIT = "AI-Hypercomputer+maxtext", "ebd39aa64"
PRAXIS_COMMIT = "2b59deaa"


def precision(p: str) -> tuple[str, bool]:
    """(dtype, Transformer Engine on) of a README precision cell ('BF16', 'TE bf16', 'TE FP8')."""
    return ("fp8" if p.upper().endswith("FP8") else "bf16"), p.upper().startswith("TE")


def attention(release: str, size: str, te: bool) -> tuple[str, str]:
    """(attention cell, why). 23.10: no fused attention anywhere (TE-JAX reads NVTE_FUSED_ATTN,
    default 0, which neither the scripts nor the container set; XLA's cuDNN FMHA rewrite was not
    on). 24.04: 'Flash attention is enabled by default in the given container', the 126M rows
    'gathered _without_ flash attention' (README notes)."""
    if release == "2310":
        return "unfused", ("Praxis's dot-product attention as XLA fuses it (23.10: TE-JAX's "
                           "fused attention only under NVTE_FUSED_ATTN=1, default 0 in "
                           "TransformerEngine transformer_engine/jax/flax/transformer.py, unset "
                           "by run_pile_multinode.sh and the container): unfused")
    if size == "126m":
        return "unfused", ("'126M performance numbers were gathered _without_ flash attention' "
                           "(README note): unfused")
    return "cudnn", ("flash attention on ('enabled by default in the given container'; "
                     + ("TE's cuDNN fused attention, NVTE_FUSED_ATTN=1" if te else
                        "XLA's cuDNN FMHA rewrite, --xla_gpu_enable_cudnn_fmha") + "): cudnn")


def pax_rows() -> list[dict[str, object]]:
    out = []
    for rel, (commit, cite, container, version, pax_commit, table) in RELEASES.items():
        for (size, gpu, prec), (line, seq_s) in table.items():
            preset, vocab, gpus, dp, fsdp, bs, (rc, policy, why), words = MODELS[size]
            dtype, te = precision(prec)
            att, att_why = attention(rel, size, te)
            gbs = bs * gpus
            step = round(gbs / seq_s, 6)
            catalog_gpu, nic, node = GPU[gpu]
            tag = ("te-" if te else "") + dtype
            r = {k: "" for k in HEADER}
            r.update(
                id=f"jaxtoolbox-pax{rel}-gpt-{size}-{tag}-{gpu}-{gpus}", model=preset,
                vocab_size=vocab, seq_length=SEQ, gpu=catalog_gpu, num_gpus=gpus,
                gpus_per_node=8, nic_gbps_per_gpu=nic, tp=1, pp=1, cp=1, ep=1, vpp=1,
                sequence_parallel=0, recompute=rc, remat_policy=policy,
                zero_stage=0 if fsdp == 1 else 3, dp_replicate="" if fsdp == 1 else gpus // fsdp,
                global_batch_size=gbs, micro_batch_size=bs, dtype=dtype,
                fp8_recipe="delayed" if dtype == "fp8" else "", framework="paxml",
                options="" if te else "xla_layers",
                framework_version=version, attention=att, attention_dropout=0, hidden_dropout=0,
                measured_iteration_s=step,
                source=(f"{JT} {PAX_README} {cite}, '{gpu.upper()} Results' table, line {line} "
                        f"'{size.upper()} | {gpu.upper()} 80G SXM | {prec}', Sequences/Sec; the "
                        f"model and remat policy from google/paxml {PAX_CONFIGS} @ {pax_commit}"),
                note=(f"published {seq_s} sequences/s; step = GBS / (sequences/s) = {gbs} / "
                      f"{seq_s} = {step:.4f} s; GBS = BS/GPU {bs} x {gpus} GPUs (README: "
                      "'GLOBAL_BATCH_SIZE = PERCORE_BATCH_SIZE * NUM_GPUS'), no gradient "
                      f"accumulation: micro-batch {bs}; DP {dp}, FSDP {fsdp}, TP 1 as the table "
                      "states" + (": plain data parallelism, weights and Adam state replicated "
                                  "(zero_stage 0)" if fsdp == 1 else
                                  f": weights, gradients and Adam state sharded over all {gpus} "
                                  "GPUs (ICI [1, 8, 1] x DCN [1, 32, 1]): zero_stage 3, 1 "
                                  "replica") +
                      f"; {why}; {att_why}; "
                      + ("Transformer Engine layers (ENABLE_TE=1)" if te else
                         "Praxis's own layers (ENABLE_TE=0: XLA's GEMMs and fusions; option "
                         "xla_layers)")
                      + ("; fp8: TE delayed scaling (ENABLE_FP8=1)" if dtype == "fp8" else "")
                      + "; XLA latency-hiding scheduler with async all-gather / reduce-scatter / "
                      "all-reduce (run_pile_multinode.sh XLA_FLAGS; no option cell: the "
                      f"profile's own overlap); the model: configs.py {words}, seq {SEQ}, as the "
                      f"{preset} preset (vocab column {vocab}); dropout 0 (DROPOUT_PROB 0.0"
                      + ("; the 5B's input_dropout_prob 0.1 drops the stack's input once, not "
                         "per layer)" if size == "5b" else ")")
                      + f"; the Pile (TFDS); container {container}; {node} (the README: "
                      "'NVIDIA DGX A100 80G and H100 80G nodes')"))
            out.append(r)
    return out


def maxtext_row() -> dict[str, object]:
    r = {k: "" for k in HEADER}
    r.update(
        id="jaxtoolbox-maxtext2404-llama2-7b-bf16-h100-8", model="llama2-7b", seq_length=4096,
        gpu="h100-sxm-80gb", num_gpus=8, gpus_per_node=8, nic_gbps_per_gpu=400, tp=1, pp=1, cp=1,
        ep=1, vpp=1, sequence_parallel=0, recompute="selective", remat_policy="minimal_flash",
        zero_stage=3, dp_replicate=1, global_batch_size=16, micro_batch_size=2, dtype="bf16",
        options="onehot_embedding", framework="maxtext", framework_version="2024-04-15",
        attention="cudnn", attention_dropout=0, hidden_dropout=0, measured_iteration_s=MT_STEP,
        source=(f"{JT} {MT_README} @ 28603900 (2025-05-27; the row as set in 8ef90e8e, "
                f"2024-05-01, 'Updated maxtext readme with llama2-7b perf numbers'), line "
                f"{MT_LINE} 'Step Time (s)'; the run's flags from {MT_SUB} @ 00f755e3"),
        note=(f"published {MT_STEP} s a step (and {MT_SEQ_S} sequences/s = 16 / {MT_STEP}); "
              "8 GPUs, BS/GPU 2 (per_device_batch_size=2), DP 1, FSDP 8 (ici_fsdp), TP 1, GBS "
              "16: zero_stage 3 over the node; max_target_length 4096; attention=cudnn_flash_te "
              "(cuDNN fused attention through Transformer Engine, NVTE_FUSED_ATTN=1): cudnn; "
              "remat_policy=minimal_flash (MaxText MaxText/layers/models.py @ ebd39aa6, the "
              "last commit before the container's date, L237-241: save_from_both_policies("
              "checkpoint_dots_with_no_batch_dims, save_only_these_names('context')); no "
              "MaxText layer names a 'context' and TE's fused attention is a custom_vjp whose "
              "residuals carry no name, so every projection's output is kept and the RMS norms, "
              "the residual add between them, RoPE, the cuDNN attention and the SwiGLU product "
              "re-run, the MLP's output projection not: jax.checkpoint DCE; "
              "workload.remat_policy); "
              "scan_layers=false; use_iota_embed=true (the token lookup a one-hot dot: option "
              "onehot_embedding); bf16 (Precision BF16, no fp8); logits_dot_in_fp32=false (the "
              "logits GEMM in bf16, where base.yml's default then was fp32); XLA latency-hiding "
              "scheduler "
              "with pipelined all-gather / reduce-scatter / all-reduce (example_slurm.sub "
              "XLA_FLAGS; no option cell: the profile's own overlap); the model: MaxText "
              "llama2-7b (32 layers, 4096, 32 heads, MLP 11008, vocab 32000, RMSNorm, RoPE, "
              "untied), the llama2-7b preset; synthetic data; container "
              "ghcr.io/nvidia/jax:maxtext-2024-04-15 (example_slurm.sub; the README names "
              "nvcr.io/nvidia/jax:24.04-maxtext-py3); DGX H100, 400 Gb/s per GPU (one node: the "
              "network is not used)"))
    return r


def rows() -> list[dict[str, object]]:
    return pax_rows() + [maxtext_row()]


def _float(cell: str) -> float:
    return float(cell.replace(",", ""))


def check() -> list[str]:
    """Every typed sequences/s against its README line with the row's size, GPU, precision,
    GPUs, DP / FSDP / TP and BS/GPU; the configs' model classes and remat policies; the 23.10
    TE-JAX fused-attention default; the 24.04 README's flash-attention notes; the MaxText row
    and the flags of its run script; MaxText's minimal_flash and Praxis's policies as the rows
    state them."""
    bad = []
    for rel, (commit, _c, container, _v, pax_commit, table) in RELEASES.items():
        text = mirror_rows.show(JT_DIR, commit, PAX_README)
        lines = text.splitlines()
        for (size, gpu, prec), (line, seq_s) in table.items():
            c = mirror_rows.md_cells(lines[line - 1])
            _p, _v2, gpus, dp, fsdp, bs, _r, _w = MODELS[size]
            want = [size.upper(), f"{gpu.upper()} 80G SXM", prec, str(gpus), str(dp), str(fsdp),
                    "1", str(bs)]
            if c[:8] != want or _float(c[8]) != seq_s:
                bad.append(f"{rel} line {line}: {c[:9]} is not {want + [seq_s]}")
            # 'Est. Walltime (days)' = MAX_STEPS x step: the step (and so GBS) read the same way
            days, steps = float(c[9]), MAX_STEPS[size]
            half_unit = 0.5 * 10 ** -len(c[9].partition(".")[2])
            if abs(steps * bs * gpus / seq_s / 86400 - days) > max(half_unit, 0.004 * days):
                bad.append(f"{rel} line {line}: {days} days is not {steps} steps of the row")
        if container not in text:
            bad.append(f"{rel}: README does not name {container}")
        pax = mirror_rows.show(PAX_DIR, pax_commit, PAX_CONFIGS)
        for cls, phrases in (
                ("GPT126M", ("USE_REPEATED_LAYER = False", "MAX_SEQ_LEN = 2048",
                             "VOCAB_SIZE = 50304", "NUM_LAYERS = 12", "MODEL_DIMS = 768",
                             "HIDDEN_DIMS = 3072", "USE_BIAS = True", "PERCORE_BATCH_SIZE = 4",
                             "ACTIVATION_CLS = layers.GELU", "MAX_STEPS = 600000")),
                ("GPT5B", ("USE_REPEATED_LAYER = True", "DCN_MESH_SHAPE = [1, 32, 1]",
                           ("CHECKPOINT_POLICY = layers.AutodiffCheckpointType."
                           "SAVE_DOT_WITH_NO_BATCH_DIM"), "PERCORE_BATCH_SIZE = 8",
                           "NUM_LAYERS = 24", "MODEL_DIMS = 4096", "HIDDEN_DIMS = 16384",
                           "input_dropout_prob = 0.1", "MAX_STEPS = 75000")),
                ("GPT175B", ("USE_REPEATED_LAYER = True", "DCN_MESH_SHAPE = [1, 32, 1]",
                             "PERCORE_BATCH_SIZE = 6", "NUM_LAYERS = 96", "MODEL_DIMS = 12288",
                             "HIDDEN_DIMS = MODEL_DIMS * 4", "VOCAB_SIZE = 50257",
                             "SEPARATE_EMBEDDING = False", "MAX_STEPS = 75000"))):
            head = "class " + cls + ("Base(" if rel == "2404" else "(")
            block = pax.split(head, 1)[-1].split("\nclass ", 1)[0] if head in pax else ""
            bad += [f"{rel} {cls}: no {p!r}" for p in phrases if p not in block]
            if cls == "GPT175B" and "CHECKPOINT_POLICY" in block:
                bad.append(f"{rel} GPT175B sets its own CHECKPOINT_POLICY")
        mp = mirror_rows.show(PAX_DIR, pax_commit, "paxml/tasks/lm/model_params.py")
        base = mp.split("class TransformerLmSpmdAdafactor(", 1)[-1].split("\nclass ", 1)[0]
        bad += [f"{rel} TransformerLmSpmdAdafactor: no {p!r}" for p in (
            "DROPOUT_PROB = 0.0", "CHECKPOINT_POLICY = layers.AutodiffCheckpointType.SAVE_NOTHING",
            "if self.USE_REPEATED_LAYER:") if p not in base]
    te = mirror_rows.show(TE_DIR, "7a025c6bf", "transformer_engine/jax/flax/transformer.py")
    if 'int(os.getenv("NVTE_FUSED_ATTN", "0"))' not in te:
        bad.append("TE 7a025c6bf: fused attention not off by default")
    run = mirror_rows.show(PAX_DIR, "04516ac",
                           "paxml/contrib/gpu/scripts_gpu/run_pile_multinode.sh")
    if "NVTE_FUSED_ATTN" in run or "cudnn_fmha" in run:
        bad.append("23.10 run_pile_multinode.sh sets fused attention")
    new = mirror_rows.show(JT_DIR, "28603900", PAX_README)
    bad += [f"24.04 README: no {p!r}" for p in (
        "Flash attention is enabled by default in the given container",
        "126M performance numbers were gathered _without_ flash attention",
        "The other model sizes enable flash attention",
        "Experiments were run using NVIDIA DGX A100 80G and H100 80G nodes") if p not in new]
    mt = mirror_rows.md_cells(mirror_rows.show(JT_DIR, "28603900", MT_README)
                              .splitlines()[MT_LINE - 1])
    want = ["7B", "H100 80G SXM", "BF16", "4096", "8", "2", "1", "8", "1", "16", "Flash",
            "minimal_flash", "Off", str(MT_STEP), str(MT_SEQ_S)]
    if mt != want:
        bad.append(f"MaxText line {MT_LINE}: {mt}")
    sub = mirror_rows.show(JT_DIR, "00f755e3", MT_SUB)
    bad += [f"{MT_SUB}: no {p!r}" for p in (
        "ghcr.io/nvidia/jax:maxtext-2024-04-15", "export NVTE_FUSED_ATTN=1",
        "per_device_batch_size=2", "scan_layers=false", "remat_policy=minimal_flash",
        "attention=cudnn_flash_te", "max_target_length=4096", "use_iota_embed=true",
        "--xla_gpu_enable_latency_hiding_scheduler=true", "logits_dot_in_fp32=false",
        "dataset_type=synthetic") if p not in sub]
    # the policies the rows state, as their sources define them
    models = mirror_rows.show(MT_DIR, MT_COMMIT, "MaxText/layers/models.py")
    flash = models.split("cfg.remat_policy == 'minimal_flash':", 1)[-1].split("else:", 1)[0]
    if "checkpoint_dots_with_no_batch_dims" not in flash or \
            "save_only_these_names('context',)" not in flash:
        bad.append(f"MaxText {MT_COMMIT}: minimal_flash is not dots_with_no_batch_dims + context")
    if 'checkpoint_name(' in models or any(
            "\"context\")" in t or "'context')" in t for t in (
                mirror_rows.show(MT_DIR, MT_COMMIT, f"MaxText/layers/{f}.py")
                for f in ("attentions", "linears", "llama2"))):
        bad.append(f"MaxText {MT_COMMIT}: a layer names a 'context'")
    cp = mirror_rows.show("google+praxis", PRAXIS_COMMIT, "praxis/layers/checkpoint_policy.py")
    bad += [f"praxis {PRAXIS_COMMIT}: no {p!r}" for p in (
        ("SAVE_DOT_WITH_NO_BATCH_DIM:\n    return jax.checkpoint_policies."
         "checkpoint_dots_with_no_batch_dims"),
        "SAVE_NOTHING") if p not in cp]
    return bad


if __name__ == "__main__":
    mirror_rows.main(rows, HEADER, check, "tables, configs and flags as in the mirrors")
