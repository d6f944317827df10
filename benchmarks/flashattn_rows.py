"""Writes benchmarks/training_flashattn.csv: GPT-3-shaped models (125M to 2.7B) trained end to end
by flash-attention's own training code (Dao-AILab/flash-attention ``training/``: PyTorch
Lightning, Hydra configs, the ``flash_attn`` GPT with FlashAttention and its fused dense / GELU /
dropout-add-LayerNorm / cross-entropy kernels) on one node of 8 A100 80GB SXM4, from two sources:

* ``training/README.md`` as added in 4a6eaa9f (2022-11-29, "Update configs, add results"),
  section 'Training speed', the GPT3 table (sequence 2048): batch size in tokens and throughput in
  tokens/s per model; iteration = batch tokens / throughput. Configs as at that commit.
* Dao 2023, FlashAttention-2 (arXiv:2307.08691v1, 2023-07-17) Section 4.2, Table 1: TFLOPs/s per
  GPU of GPT3-1.3B and 2.7B at 2k and 8k context, 8 x A100 80GB SXM; iteration = the paper's
  FLOPs per sequence (6 x seqlen x params + 12 x layers x hidden x seqlen^2) x sequences / (8 x
  TFLOPs/s). Configs as at 4f285b35 ("FlashAttention-2 release", the same day; the configs
  unchanged since 88173a1a, 2023-01-17).

Every figure is typed here; ``--check`` re-reads the README table and every config value used
(sizes, global and per-GPU batch, sequence, optimizer, strategy, precision) from the mirror. The
paper's Table 1 is in no mirror: its figures are typed from the paper (left-out rows and the
reading in training_flashattn.md). Nothing is fitted.

    python benchmarks/flashattn_rows.py > benchmarks/training_flashattn.csv
    python benchmarks/flashattn_rows.py --check
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

HEADER = mirror_rows.v2_header(note=["attention_dropout", "hidden_dropout"])
REPO = "Dao-AILab/flash-attention"
REPO_DIR = "Dao-AILab+flash-attention"
README_COMMIT = "4a6eaa9f"  # 2022-11-29 "Update configs, add results"
FA2_COMMIT = "4f285b35"  # 2023-07-17 "FlashAttention-2 release"
README = "training/README.md"
EXP = "training/configs/experiment/pile"
GPU_MEM = 82
"""``train.gpu_mem`` as base.yaml computes it on an A100 80GB: round(81920 MiB / 1000), which the
experiments' per-GPU batch expressions compare with 24 / 40 / 80."""

# README 'Training speed' table: model -> (config, preset, batch size as written, tokens/s as written)
README_TABLE = {
    "GPT3-125M": ("gpt3s-flash", "gpt3-125m", "0.5M", "1310k", "0.21"),
    "GPT3-355M": ("gpt3m-flash", "gpt3-350m", "0.5M", "503k", "0.55"),
    "GPT3-760M": ("gpt3l-flash", "gpt3-760m", "0.5M", "245k", "1.13"),
    "GPT3-1.3B": ("gpt3xl-flash", "gpt3-1.3b", "1M", "169k", "1.64"),
    "GPT3-2.7B": ("gpt3-2.7B-flash-hdim128", "gpt3-2.7b", "1M", "85k", "3.27"),
}
# FlashAttention-2 Table 1 (TFLOPs/s/GPU): (model, context) -> (config, preset, FlashAttention,
# FlashAttention-2); the 'Without FlashAttention' column and the 2k FlashAttention cells are left out
FA2_TABLE = {
    ("GPT3-1.3B", "2k"): ("gpt3xl-flash", "gpt3-1.3b", None, 196),
    ("GPT3-1.3B", "8k"): ("gpt3xl-flash-8k", "gpt3-1.3b", 170, 220),
    ("GPT3-2.7B", "2k"): ("gpt3-2.7B-flash-hdim128", "gpt3-2.7b", None, 205),
    ("GPT3-2.7B", "8k"): ("gpt3-2.7B-flash-8k", "gpt3-2.7b", 175, 225),
}
# config -> (hidden, layers, heads, sequence, global batch, per-GPU batch at 80 GB, ZeRO-1)
CONFIGS = {
    "gpt3s-flash": (768, 12, 12, 2048, 256, 32, False),
    "gpt3m-flash": (1024, 24, 16, 2048, 256, 32, False),
    "gpt3l-flash": (1536, 24, 16, 2048, 256, 16, True),
    "gpt3xl-flash": (2048, 24, 16, 2048, 512, 8, True),
    "gpt3-2.7B-flash-hdim128": (2560, 32, 20, 2048, 512, 4, True),
    "gpt3xl-flash-8k": (2048, 24, 16, 8192, 128, 4, True),
    "gpt3-2.7B-flash-8k": (2560, 32, 32, 8192, 128, 4, True),
}
# LambdaLabsML/examples flash-attention-2/README.md, second 'Results' table (FA2 rows):
# label -> (gpu, GPUs, Iter/Sec, Tokens/Sec, BS_per_GPU, Memory_per_GPU (GB)) as written
LAMBDA_TABLE = {
    "A100 80GB SXM4 FA2": ("a100-sxm-80gb", 1, "2.6", "10649.6", "4", "73"),
    "H100 80GB SXM5 FA2": ("h100-sxm-80gb", 1, "5.44", "22282.24", "4", "73"),
    "8xA100 80GB SXM4 FA2": ("a100-sxm-80gb", 8, "2.5", "81920", "4", "56"),
    "8xH100 80GB SXM5 FA2": ("h100-sxm-80gb", 8, "5.34", "174981.12", "4", "56"),
}
# the first 'Results' table's baseline rows: Hugging Face's GPT2LMHeadModel in the same loop
LAMBDA_BASELINE = {
    "A100 80GB SXM4 Baseline": ("a100-sxm-80gb", 1, "3.63", "3717.1", "1", "73"),
    "H100 80GB SXM5 Baseline": ("h100-sxm-80gb", 1, "6.12", "6266.88", "1", "73"),
}
LAMBDA_HF_CFG = "gpt3-2.7B-hf"
LAMBDA_HF_SHAPE = (2560, 32, 32, 1024, 512, 1, True)
LAMBDA_DIR = "LambdaLabsML+examples"
LAMBDA_COMMIT = "4346232"  # 2024-10-17 (the table as in 3874b1a, 2023-07-31, and 1884943, 2023-07-21)
LAMBDA_README = "flash-attention-2/README.md"
LAMBDA_FORK = "LambdaLabsML+flash-attention"
LAMBDA_FORK_COMMIT = "82dce51"  # 2023-07-21, 'Merge pull request #1 from chuanli11/benchmark'
LAMBDA_CFG = "gpt3-2.7B-flash"
LAMBDA_SHAPE = (2560, 32, 32, 1024, 512, 4, True)
"""owt/gpt3-2.7B-flash.yaml of the fork: hidden, layers, heads, sequence (owt/base.yaml
max_length 1024), global batch (base 512), per-GPU batch (4, written), ZeRO-1 (gpt3xl-flash)."""
VOCAB = 50264
"""GPT-2's 50257 padded to a multiple of 8 (the experiments' ``pad_vocab_size_multiple: 8``)."""
GPUS = 8
HW = ("one node of 8 x A100 80GB SXM4 (400 W) with NVLink (README 'Training speed': \"We measure "
      "the wallclock training speed on one node with 8 x A100 80GB SXM4 80GB (400W) with "
      "NVLink\"; the paper: '8 x A100 80GB SXM'): no inter-node network")
STACK = ("flash-attention's training/ code: PyTorch Lightning (trainer precision bf16: "
         "torch.autocast, fp32 parameters, gradients and optimizer state, so DDP reduces fp32 "
         "gradients; grad_reduce_dtype fp32), the flash_attn GPTLMHeadModel with use_flash_attn, "
         "fused_bias_fc, fused MLP (fused_dense_gelu_dense at 4a6eaa9f, fused_mlp from 88173a1a), "
         "fused_dropout_add_ln, pad_vocab_size_multiple 8 (vocab 50264), learned positions "
         "(n_positions = the sequence), tied output layer, GPT2Config's dropouts 0.1 (resid, "
         "attn, embd; not overridden), scale_attn_by_inverse_layer_idx, apex cross-entropy with "
         "in-place backward; no activation checkpointing (mlp_checkpoint_lvl 0)")


KERNELS = {"flash1": "FlashAttention 1, v1.0.9 tagged the same day",
           "flash2": "flash_attn 2.0.0.post1 at 4f285b35"}
UNFIT = ("; the micro-batch cell is left empty (the tool chooses): the config's 4 sequences of "
         "8192 would keep ~34 x s x b x h bytes a layer of activations (Korthikanti et al. 2022 "
         "Eq. 2 without the 5as^2b FlashAttention removes), 85 GiB for 32 layers at h 2560, on "
         "an 80 GB GPU (trainsim counts 116 GiB in all), so the paper's run cannot have used it "
         "as the expression gives it; the paper states no batch")

ONE_RANK = (" (here over one rank: ZeroRedundancyOptimizer partitions the state over a world of "
            "1, so the whole state is on it and nothing is broadcast: zero_stage 0 in effect, "
            "written so)")
HF_ACTIVATION = "gelu_new"
"""GPT2Config's default ``activation_function`` (transformers 4.x and 5.24.0
configuration_gpt2.py), which model/gpt2-hf.yaml leaves as it is (``check``)."""
HF_STACK = ("the same Lightning loop (trainer precision 16: torch.autocast in fp16 with a gradient "
            "scaler over fp32 parameters, gradients and optimizer state; grad_reduce_dtype fp32) "
            "around Hugging Face transformers' GPT2LMHeadModel (model/gpt2-hf.yaml: "
            "reorder_and_upcast_attn false, scale_attn_by_inverse_layer_idx): its eager modules "
            "(Conv1D projections, GPT2Attention's matmul / mask / softmax / dropout / matmul), GELU (gelu_new) unfused, vocab 50257 unpadded, learned positions, "
            "tied output layer, dropouts 0.1, torch.nn.CrossEntropyLoss (loss_fn null); no "
            "activation checkpointing")


def _strategy(zero1: bool) -> str:
    if zero1:
        return ("optimizer adamw-zero: torch.distributed.optim.ZeroRedundancyOptimizer(AdamW) "
                "under DDPStrategyZero1 (gradient_as_bucket_view): DDP's bucketed all-reduce "
                "overlapped with the backward, each rank steps its shard, parameters broadcast: "
                "zero_stage 1")
    return ("optimizer adamw-apex (apex FusedAdam) under Lightning's default DDP: bucketed "
            "all-reduce overlapped with the backward, full optimizer state on every GPU: zero_stage 0")


def _tokens(text: str) -> float:
    """'0.5M' -> 524288 (the README's M is 2^20 sequences' tokens: 256 x 2048), '1310k' -> 1310000."""
    if text.endswith("M"):
        return float(text[:-1]) * 2**20
    return float(text[:-1]) * 1e3


def params(cfg: str) -> int:
    """The parameters of the flash_attn GPTLMHeadModel the config builds: word embedding (vocab
    50264) tied to the output layer, a position table of the sequence's length, per layer QKV,
    output projection, fc1, fc2 with biases and two LayerNorms, a final LayerNorm."""
    h, layers, _heads, seq, *_ = CONFIGS[cfg]
    per_layer = 12 * h * h + 13 * h
    return VOCAB * h + seq * h + layers * per_layer + 2 * h


def flops_per_sequence(cfg: str) -> float:
    """FlashAttention-2 Section 4.2: 6 x seqlen x number of params + 12 x layers x hidden x seqlen^2."""
    h, layers, _heads, seq, *_ = CONFIGS[cfg]
    return 6 * seq * params(cfg) + 12 * layers * h * seq**2


def _row(rid, source, cfg, preset, attention, version, t, note, *, shape=None, gpu="a100-sxm-80gb",
         gpus=GPUS, dtype="bf16", mbs_note="", where=f"{EXP}/", stack=STACK, hw=HW,
         options="dp_overlap;fused_kernels", vocab=VOCAB, framework="flash-attention",
         activation=""):
    h, layers, heads, seq, gbs, mbs, zero1 = shape or CONFIGS[cfg]
    return {
        "id": rid, "source": source, "model": preset, "num_attention_heads": heads,
        "activation": activation,
        "vocab_size": vocab, "seq_length": seq, "gpu": gpu, "num_gpus": gpus,
        "gpus_per_node": 8, "tp": 1, "pp": 1, "cp": 1, "ep": 1, "sequence_parallel": 0,
        "recompute": "none", "zero_stage": 1 if zero1 and gpus > 1 else 0,
        "distributed_optimizer": 0,
        "global_batch_size": gbs, "micro_batch_size": "" if mbs_note else mbs, "dtype": dtype,
        "options": options, "framework": framework,
        "framework_version": version, "attention": attention, "grad_reduce_dtype": "fp32",
        "measured_iteration_s": round(t, 6), "attention_dropout": 0.1, "hidden_dropout": 0.1,
        "note": (f"{note}; config {where}{cfg}.yaml: hidden {h}, "
                 f"{layers} layers, {heads} heads (head dim {h // heads}), sequence {seq}, "
                 f"train.global_batch_size {gbs}, datamodule.batch_size {mbs} at gpu_mem "
                 f"{GPU_MEM} (so {gbs // (mbs * gpus)} accumulation steps){mbs_note}; "
                 f"{_strategy(zero1)}{ONE_RANK if zero1 and gpus == 1 else ''}; {stack}; {hw}"),
    }


def rows() -> list[dict]:
    out = []
    readme_src = (f"{REPO} {README} @ {README_COMMIT} (2022-11-29, 'Update configs, add "
                  "results'), section 'Training speed', GPT3 table (8 x A100 80GB)")
    for name, (cfg, preset, batch, tps, hours) in README_TABLE.items():
        gbs, seq = CONFIGS[cfg][4], CONFIGS[cfg][3]
        assert _tokens(batch) == gbs * seq, name
        t = gbs * seq / _tokens(tps)
        out.append(_row(
            f"flashattn-readme-{preset}-a100-8", readme_src, cfg, preset, "flash1", "2022-11", t,
            f"README row '{name}': batch {batch} tokens (= {gbs} x {seq}), throughput {tps} "
            f"tokens/s (hours / 1B tokens {hours}); iteration = {gbs} x {seq} / {tps} tokens/s; "
            "flash_attn 0.2.2 at that commit (setup.py): FlashAttention 1 (flash1)"))
    fa2_src = ("Dao 2023, FlashAttention-2 (arXiv:2307.08691v1, 2023-07-17) Section 4.2 Table 1 "
               f"'Training speed (TFLOPs/s/GPU) of GPT-style models on 8xA100 GPUs'; configs "
               f"{REPO} {EXP} @ {FA2_COMMIT} (FlashAttention-2 release)")
    for (name, ctx), (cfg, preset, fa1, fa2) in FA2_TABLE.items():
        gbs = CONFIGS[cfg][4]
        flops = flops_per_sequence(cfg)
        for col, tflops, attention in (("FlashAttention", fa1, "flash1"),
                                       ("FlashAttention-2", fa2, "flash2")):
            if tflops is None:
                continue
            t = gbs * flops / (GPUS * tflops * 1e12)
            unfit = cfg == "gpt3-2.7B-flash-8k"
            out.append(_row(
                f"flashattn-fa2paper-{preset}-{ctx}-{attention}-a100-8", fa2_src, cfg, preset,
                attention, "2023-07", t,
                f"Table 1 row '{name} {ctx} context', column '{col}' ({KERNELS[attention]}): "
                f"{tflops} TFLOPs/s per GPU; "
                f"iteration = {gbs} sequences x {flops:.6g} FLOP (6 x {CONFIGS[cfg][3]} x "
                f"{params(cfg)} params + 12 x layers x hidden x seqlen^2, the paper's "
                f"formula; params: every tensor of the model the config builds) / (8 x {tflops} "
                "TFLOPs/s)", mbs_note=UNFIT if unfit else ""))
    lam_src = (f"LambdaLabsML/examples {LAMBDA_README} @ {LAMBDA_COMMIT} (2024-10-17; the table "
               "as first written in 1884943, 2023-07-21), 'Results', second table; config "
               f"LambdaLabsML/flash-attention training/configs/experiment/owt/{LAMBDA_CFG}.yaml "
               f"@ {LAMBDA_FORK_COMMIT}")
    seq, gbs = LAMBDA_SHAPE[3], LAMBDA_SHAPE[4]
    for label, (gpu, gpus, its, tps, bs, mem) in LAMBDA_TABLE.items():
        assert abs(float(its) * seq * int(bs) * gpus / float(tps) - 1) < 1e-9, label
        t = gbs * seq / float(tps)
        out.append(_row(
            f"flashattn-lambda-gpt3-2.7b-{gpu.split('-')[0]}-{gpus}", lam_src, LAMBDA_CFG,
            "gpt3-2.7b", "flash2", "2023-07", t,
            f"row '{label}': Iter/Sec {its} (micro-batches of BS_per_GPU {bs} per GPU: Tokens/Sec "
            f"{tps} = {its} x {seq} x {bs} x {gpus}), Memory_per_GPU {mem} GB (not used: how and "
            f"in which unit it was read is not stated); iteration = {gbs} x {seq} / {tps} "
            f"tokens/s, the fork's global batch {gbs} (owt/base.yaml) on trainer.devices={gpus}; "
            "FlashAttention-2 (the fork's training/Dockerfile L88: pip install "
            "flash-attn==2.0.0.post1, over nvcr.io/nvidia/pytorch:22.12-py3)",
            shape=LAMBDA_SHAPE, gpu=gpu, gpus=gpus, dtype="fp16",
            where="LambdaLabsML/flash-attention training/configs/experiment/owt/",
            stack=STACK.replace("trainer precision bf16", "trainer precision 16 (owt/base.yaml)")
            .replace("torch.autocast,", "torch.autocast in fp16 with a gradient scaler,")
            .replace("fused_dense_gelu_dense at 4a6eaa9f, fused_mlp from 88173a1a", "fused_mlp")
            .replace("(n_positions = the sequence)", "(n_positions = the sequence), residual_in_fp32")
            .replace("apex cross-entropy", "flash_attn cross-entropy"),
            hw=_lambda_hw(gpu, gpus)))
    for label, (gpu, gpus, its, tps, bs, mem) in LAMBDA_BASELINE.items():
        seq, gbs = LAMBDA_HF_SHAPE[3], LAMBDA_HF_SHAPE[4]
        assert abs(float(its) * seq * int(bs) * gpus / float(tps) - 1) < 1e-5, label  # 3717.12
        t = gbs * seq / float(tps)
        out.append(_row(
            f"flashattn-lambda-hf-gpt3-2.7b-{gpu.split('-')[0]}-{gpus}",
            lam_src.replace("second table", "first table").replace(LAMBDA_CFG, LAMBDA_HF_CFG),
            LAMBDA_HF_CFG, "gpt3-2.7b", "unfused", "1.14", t,
            f"row '{label}': Iter/Sec {its} (micro-batches of BS_per_GPU {bs}: Tokens/Sec {tps} = "
            f"{its} x {seq} x {bs}), Memory_per_GPU {mem} GB (not used); iteration = {gbs} x "
            f"{seq} / {tps} tokens/s on trainer.devices={gpus}; framework pytorch (the README's "
            "plain PyTorch loop around a Hugging Face transformers model: Lightning's loop, fp32 "
            "parameters, autocast, the model's eager modules), version 1.14: the torch 1.14 pre-release "
            "of nvcr.io/nvidia/pytorch:22.12 (the fork's Dockerfile; the container's release "
            "notes as remembered, not read here); attention "
            "unfused, as the pytorch profile reads transformers' eager attention (GPT-2's _attn: "
            "softmax on autocast's fp32 list, then cast back)",
            shape=LAMBDA_HF_SHAPE, gpu=gpu, gpus=gpus, dtype="fp16", options="dp_overlap",
            vocab=50257, framework="pytorch", activation=HF_ACTIVATION,
            where="LambdaLabsML/flash-attention training/configs/experiment/owt/",
            stack=HF_STACK, hw=_lambda_hw(gpu, gpus)))
    return out


def _lambda_hw(gpu: str, gpus: int) -> str:
    return (f"{gpus} x {gpu} on Lambda Cloud (an 8-GPU instance; one GPU where "
            "trainer.devices=1): NVLink, no inter-node network")


# ---------------------------------------------------------------------------- --check

def _config(commit: str, name: str, repo: str = REPO_DIR, group: str = "pile") -> dict:
    """The experiment ``name`` at ``commit`` of ``repo`` with its ``/experiment/<group>/`` parents
    and its ``gpt2model`` size file merged in (Hydra's defaults order: parents first, then the
    file)."""
    text = mirror_rows.show(repo, commit, f"training/configs/experiment/{group}/{name}.yaml")
    doc = yaml.safe_load(text) or {}
    merged: dict = {}
    size = None
    for d in doc.get("defaults", []):
        item = d if isinstance(d, str) else next(iter(d.items()))
        if isinstance(item, str) and item.startswith(f"/experiment/{group}/"):
            parent = item.rsplit("/", 1)[1].removesuffix(".yaml")
            _merge(merged, _config(commit, parent, repo, group))
        elif isinstance(item, tuple):
            key, val = item
            if key == "override /model/gpt2model":
                size = val
            elif key == "override /model":
                merged["_model"] = val
                if val in ("gpt2", "gpt2-hf") and size is None:
                    size = "gpt2-small"
            elif key == "override /optimizer":
                merged["_optimizer"] = val
    if size:
        path = f"training/configs/model/gpt2model/{size}.yaml"
        _merge(merged, yaml.safe_load(mirror_rows.show(repo, commit, path)))
    _merge(merged, {k: v for k, v in doc.items() if k != "defaults"})
    return merged


def _merge(into: dict, new: dict) -> None:
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[k] = v


def _batch(expr: object) -> int:
    """A per-GPU batch expression (``${eval:"1 if ${train.gpu_mem} < 24 else (2 if ...
    else 8)"}``, nested conditionals on the GPU's memory) at GPU_MEM; a number as itself."""
    text = str(expr)
    m = re.fullmatch(r'\$\{eval:"(.*)"\}', text)
    if not m:
        return int(text)
    branches = re.findall(r"(\d+) if \$\{train\.gpu_mem\} < (\d+) else", m.group(1))
    last = re.search(r"else \(?(\d+)\)*$", m.group(1))
    if not branches or last is None:
        raise ValueError(f"unexpected batch expression {text!r}")
    for value, below in branches:
        if GPU_MEM < int(below):
            return int(value)
    return int(last.group(1))


def _check_config(commit: str, cfg: str, repo: str = REPO_DIR, group: str = "pile",
                  typed: tuple | None = None, precision: str = "bf16", hf: bool = False) -> list[str]:
    c = _config(commit, cfg, repo, group)
    typed = typed or CONFIGS[cfg]
    mc = c["model"]["config"]
    strategy = ((c.get("trainer") or {}).get("strategy") or {})
    zero1 = (c.get("_optimizer") == "adamw-zero"
             and strategy.get("_target_") == "src.utils.ddp_zero1.DDPStrategyZero1")
    got = (mc["n_embd"], mc["n_layer"], mc["n_head"], c["datamodule"].get("max_length", 2048),
           c["train"]["global_batch_size"], _batch(c["datamodule"]["batch_size"]), zero1)
    bad = [f"{cfg} @ {commit}: typed {typed} != config {got}"] if got != typed else []
    if str(c["trainer"]["precision"]) != precision or c["trainer"]["devices"] != GPUS:
        bad.append(f"{cfg} @ {commit}: precision/devices {c['trainer']['precision']}/{c['trainer']['devices']}")
    if hf and (c.get("_model") != "gpt2-hf" or c["train"].get("loss_fn", "") is not None):
        bad.append(f"{cfg} @ {commit}: model {c.get('_model')}, loss_fn {c['train'].get('loss_fn')}")
    if hf:  # the model config's own keys: no activation_function, so GPT2Config's gelu_new
        model_yaml = yaml.safe_load(mirror_rows.show(repo, commit, "training/configs/model/gpt2-hf.yaml"))
        if "activation_function" in (model_yaml.get("config") or {}) or \
                "activation_function" in mc:
            bad.append(f"{cfg} @ {commit}: activation_function set, not {HF_ACTIVATION}")
    if not hf and (mc.get("pad_vocab_size_multiple") != 8 or not mc.get("use_flash_attn")
                   or c.get("_model") != "gpt2"):
        bad.append(f"{cfg} @ {commit}: vocab padding / use_flash_attn {mc}")
    if mc.get("mlp_checkpoint_lvl", 0) != 0:
        bad.append(f"{cfg} @ {commit}: mlp_checkpoint_lvl {mc.get('mlp_checkpoint_lvl')}")
    return bad


def check() -> list[str]:
    """Differences between the typed tables / configs and the mirror."""
    bad = []
    text = mirror_rows.show(REPO_DIR, README_COMMIT, README)
    if "8 x A100 80GB SXM4 80GB (400W) with NVLink" not in text:
        bad.append("README: the hardware sentence changed")
    table = {}
    for line in text.splitlines():
        cells = mirror_rows.md_cells(line)
        if len(cells) == 4 and cells[0].startswith("GPT3-"):
            table[cells[0]] = tuple(cells[1:])
    for name, (_cfg, _preset, batch, tps, hours) in README_TABLE.items():
        if table.get(name) != (batch, tps, hours):
            bad.append(f"README {name}: typed {(batch, tps, hours)} != {table.get(name)}")
    if set(table) != set(README_TABLE):
        bad.append(f"README rows {sorted(table)}")
    for cfg in {v[0] for v in README_TABLE.values()}:
        bad += _check_config(README_COMMIT, cfg)
    for cfg in {v[0] for v in FA2_TABLE.values()}:
        bad += _check_config(FA2_COMMIT, cfg)
    bad += _check_config(LAMBDA_FORK_COMMIT, LAMBDA_CFG, LAMBDA_FORK, "owt", LAMBDA_SHAPE, "16")
    bad += _check_config(LAMBDA_FORK_COMMIT, LAMBDA_HF_CFG, LAMBDA_FORK, "owt", LAMBDA_HF_SHAPE,
                         "16", hf=True)
    lam = {}
    for line in mirror_rows.show(LAMBDA_DIR, LAMBDA_COMMIT, LAMBDA_README).splitlines():
        cells = mirror_rows.md_cells(line)
        if len(cells) == 7 and cells[0] in {**LAMBDA_TABLE, **LAMBDA_BASELINE}:
            lam[cells[0]] = tuple(cells[1:5])
    for label, (_gpu, _gpus, its, tps, bs, mem) in {**LAMBDA_TABLE, **LAMBDA_BASELINE}.items():
        if lam.get(label) != (its, tps, bs, mem):
            bad.append(f"Lambda {label}: typed {(its, tps, bs, mem)} != {lam.get(label)}")
    return bad


if __name__ == "__main__":
    mirror_rows.main(rows, HEADER, check, "README table and configs as in the mirror")
