"""Writes benchmarks/training_torchtitan_gb200.csv: torchtitan's Llama 3 8B BF16 and MXFP8
baselines of its NVFP4 study on four Blackwell GPUs (a check file).

    python benchmarks/torchtitan_nvfp4_rows.py > benchmarks/training_torchtitan_gb200.csv
    python benchmarks/torchtitan_nvfp4_rows.py --check   # the table below against the mirror

pytorch/torchtitan torchtitan/components/quantization/nvfp4.md @ b5bcd76c6 (table set at bcc09297a,
2026-08-05, #3914 'Add an NVFP4 quantization converter'), 'Llama 3 8B 200M-Token Evidence': eager +
torch.compile runs of Llama 3 8B on C4, global batch 128 (local batch 32, FSDP degree 4), sequence
2048 (the section's command: --training.max_context_length 2048,
--training.num_tokens_per_microbatch_per_dp_rank 65536 = 32 x 2048, data_parallel_shard_degree 4,
torchrun --standalone --nproc_per_node 4), PyTorch 2.14.0a0+gitd9abf9e, TorchAO 0.18.0+gitcb76f29;
the recipe's base config llama3_8b (torchtitan/models/llama3/config_registry.py @ b5bcd76c6) runs
per-op selective activation checkpointing (SelectiveAC) and the compile config compiles the model.
Tokens/sec per GPU -> iteration = 32 x 2048 / tokens/s; the memory column is torchtitan's logged
'memory: GiB (%)', its max reserved.

The GPU is not named ("NVIDIA Blackwell SM100 or later"). It is read from the run itself: one
4-GPU node (a GB200 compute tray has 4 GPUs, a DGX B200 / B300 8) whose total memory is
174.49 / 0.947 = 184.3 GiB (179.94 / 0.976 = 184.4; the Qwen3 table's 112.88 / 0.6125 = 184.3):
a GB200 (the driver's 185.03 GiB, catalog/gpus/gb200.yaml, less the CUDA context), not a B200
(179.06 GiB) nor a B300 (~268 GiB).

The NVFP4 (bf16 tail) row is priced with ``fp8_recipe=nvfp4`` since the 52nd session, its last 5 of
32 layers bf16 (``num_layers_at_end_in_bf16``); TorchAO's NVFP4 kernels are priced as Transformer
Engine's (``workload.shard.NVFP4_CAST_BYTES``). Since the 53rd session its memory reads TorchAO's
saved tensors: under per-op checkpointing an NVFP4 block keeps no matmul output and re-runs them
all (``workload.recompute.per_op_sac_saves_no_gemm``). Left out: the Qwen3 8B table (its recipe, qwen3_8b_first_85_pct_layers_nvfp4,
builds on sft_qwen3_8b_math with attn_backend="varlen": attention within packed C4 documents,
which trainsim cannot express, and its BF16 / MXFP8 baselines' configs are not stated); mxfp8.md's
Llama4 Scout MoE table (no llama4 preset, and format v2 has no shared-expert column; the table says
512 GPUs, its configuration 64 nodes x 4 = 256). Nothing here is fitted.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

REPO_DIR = "pytorch+torchtitan"
COMMIT = "b5bcd76c66d0acb1a08b176d9639425bc55e0b2a"
DOC = "torchtitan/components/quantization/nvfp4.md"
HEADER = mirror_rows.v2_header(fp8_recipe=["num_layers_at_end_in_bf16"])
SOURCE = ("pytorch/torchtitan " + DOC + " @ " + COMMIT + " (table set at bcc09297a, 2026-08-05, "
          "#3914), 'Llama 3 8B 200M-Token Evidence', line {line}; PyTorch 2.14.0a0+gitd9abf9e, "
          "TorchAO 0.18.0+gitcb76f29")
LOCAL_BATCH, SEQ, GPUS = 32, 2048, 4
# (doc line, run, loss, tokens/s per GPU, memory GiB, memory %) as the table prints them
TABLE = [(83, "NVFP4 (bf16 tail)", "1.2715", "30,040", "110.95", "60.2"),
         (84, "MXFP8", "1.2671", "28,084", "179.94", "97.6"),
         (85, "BF16", "1.2738", "21,919", "174.49", "94.7")]
CONFIG = {"MXFP8": "llama3_8b_mxfp8 (MXFP8LinearConverter on every dense Linear, compile)",
          "BF16": "llama3_8b with compile, as the section's 'eager + torch.compile' says",
          "NVFP4 (bf16 tail)": "llama3_8b_first_85_pct_layers_nvfp4 (NVFP4LinearConverter on "
          "layers 0-26, TorchAO's NVFP4 training prototype, compile; layers 27-31 and the LM "
          "head bf16: num_layers_at_end_in_bf16 5, as the section says)"}
BF16_TAIL = {"NVFP4 (bf16 tail)": "5"}  # "layers 0-26 use NVFP4 and layers 27-31 remain bf16"
RECIPE = {"MXFP8": "mxfp8", "NVFP4 (bf16 tail)": "nvfp4"}
TAG = {"MXFP8": "mxfp8", "BF16": "bf16", "NVFP4 (bf16 tail)": "nvfp4"}


def iteration_s(tokens_per_s: str) -> float:
    return LOCAL_BATCH * SEQ / float(tokens_per_s.replace(",", ""))


def rows() -> list[dict[str, str]]:
    out = []
    for line, run, _loss, tps, mem, pct in TABLE:
        fp8 = run in RECIPE
        row = {c: "" for c in HEADER}
        row.update(
            id=f"tt2608-llama3-8b-gb200-4-{TAG[run]}", source=SOURCE.format(line=line),
            model="llama3-8b", seq_length=str(SEQ), gpu="gb200", num_gpus=str(GPUS),
            gpus_per_node=str(GPUS), tp="1", pp="1", cp="1", recompute="selective",
            zero_stage="3", global_batch_size=str(LOCAL_BATCH * GPUS),
            micro_batch_size=str(LOCAL_BATCH), dtype="fp8" if fp8 else "bf16",
            fp8_recipe=RECIPE.get(run, ""), options="compile",
            num_layers_at_end_in_bf16=BF16_TAIL.get(run, ""), framework="torchtitan",
            framework_version="2026-08", memory_kind="reserved",
            measured_iteration_s=f"{iteration_s(tps):.6f}", measured_peak_memory_gib=mem,
            note=(f"published {tps} tokens/s per GPU, {mem} GiB ({pct}%); iteration = local "
                  f"batch {LOCAL_BATCH} x {SEQ} / tokens/s (global batch 128 = FSDP 4 x 32, one "
                  f"micro-batch of 65,536 tokens a rank); run config: {CONFIG[run]}; per-op "
                  "SAC (llama3_8b's SelectiveAC); memory = torchtitan's logged max reserved; "
                  "GPU not named: read as GB200 from the run (4 GPUs a node, total memory "
                  f"{mem} / {pct}% = {float(mem) / float(pct) * 100:.1f} GiB); see "
                  "benchmarks/torchtitan_nvfp4_rows.py"))
        out.append(row)
    return out


def _mirror() -> Path:
    return mirror_rows.mirror(REPO_DIR)


def check() -> list[str]:
    """Differences between ``TABLE`` and the mirror's text, and the stated settings."""
    text = mirror_rows.show(REPO_DIR, COMMIT, DOC)
    lines = text.splitlines()
    bad = []
    for line, *cells in TABLE:
        want = f"| {cells[0]} | {cells[1]} | {cells[2]} | {cells[3]} GiB ({cells[4]}%) |"
        if lines[line - 1].strip() != want:
            bad.append(f"line {line}: {lines[line - 1]!r} != {want!r}")
    for phrase in ("global batch size 128 (local batch size 32, FSDP degree 4)",
                   "--training.max_context_length 2048",
                   "--training.num_tokens_per_microbatch_per_dp_rank 65536",
                   "--nproc_per_node 4", "PyTorch: `2.14.0a0+gitd9abf9e`",
                   "layers 0-26 use NVFP4 and layers 27-31 remain bf16"):
        if phrase not in text:
            bad.append(f"not in {DOC}: {phrase!r}")
    registry = mirror_rows.show(REPO_DIR, COMMIT, "torchtitan/models/llama3/config_registry.py")
    for phrase in ("activation_checkpoint=SelectiveAC.Config()", "def llama3_8b_mxfp8()",
                   "def llama3_8b_first_85_pct_layers_nvfp4()", "_NVFP4_BF16_TAIL_FRACTION = 0.15",
                   'config.compile = CompileConfig(enable=True, components=["model"])'):
        if phrase not in registry:
            bad.append(f"not in config_registry.py: {phrase!r}")
    return bad


def main() -> None:
    mirror_rows.main(rows, HEADER, check, "table and settings as in the mirror")


if __name__ == "__main__":
    main()
