"""Writes benchmarks/training_llmc.csv: karpathy/llm.c's GPT-2 / GPT-3 reproductions on one node
of 8 A100 80GB SXM or 8 H100 80GB SXM, each row the step time the run script's header states
("steps in ~300ms/iter") beside the flags it runs (``mpirun -np 8 ./train_gpt2cu -b B -t T -d
tokens -r 0 -z 1 ... -e dN``). llm.c is plain CUDA / cuBLAS(Lt) / cuDNN with NCCL, no framework
trainsim profiles: the rows name it (``llm.c``) and are predicted by the no-profile path. See
training_llmc.md.

    python benchmarks/source61_llmc_rows.py > benchmarks/training_llmc.csv
    python benchmarks/source61_llmc_rows.py --check   # header lines and flags vs the mirror
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

HEADER = mirror_rows.v2_header(vocab_size=["tied_embeddings"],
                               note=["attention_dropout", "hidden_dropout"])
LLMC_DIR, LLMC = "karpathy+llm.c", "karpathy/llm.c"
DEPTHS = {"d12": (12, 768, 12), "d24": (24, 1024, 16), "d36": (36, 1280, 20),
          "d48": (48, 1600, 25), "gpt3:c768": (12, 768, 12)}
"""-e descriptor -> (layers, channels, heads): train_gpt2.cu gpt2_set_hyperparameters (depth 12 /
24 / 36 / 48: 768 / 1024 / 1280 / 1600 channels, 12 / 16 / 20 / 25 heads) and
gpt3_set_hyperparameters (c768: 12 layers, heads of 64) at the rows' commits."""
PADDED_VOCAB = 50304
"""train_gpt2.cu: ``padded_vocab_size = 50304; // padded to 128 for CUDA kernel efficiency``."""
GPUS = {"A100": "a100-sxm-80gb", "H100": "h100-sxm-80gb"}


@dataclasses.dataclass(frozen=True)
class Run:
    key: str
    script: str
    commit: str
    date: str
    rate: str
    """The header's words for the step time, as written ("~300ms/iter")."""
    seconds: float
    gpu: str
    descriptor: str
    micro: int
    seq: int
    tokens: int
    gelu_fusion: int | None


RUNS = (
    Run("gpt2-124m-a100", "scripts/run_gpt2_124M.sh", "a0d5dbb", "2024-05-30", "~300ms/iter",
        0.300, "A100", "d12", 64, 1024, 524288, None),
    Run("gpt2-350m-a100", "scripts/run_gpt2_350M.sh", "a0d5dbb", "2024-05-30", "~820ms/iter",
        0.820, "A100", "d24", 64, 1024, 524288, None),
    Run("gpt2-774m-a100", "scripts/run_gpt2_774M.sh", "42dff87", "2024-06-12", "~1.7s/iter",
        1.7, "A100", "d36", 32, 1024, 524288, None),
    Run("gpt2-1558m-a100", "scripts/run_gpt2_1558M.sh", "fd564f7", "2024-06-19", "~7s/iter",
        7.0, "A100", "d48", 16, 1024, 1048576, None),
    Run("gpt2-1558m-h100", "scripts/run_gpt2_1558M.sh", "c6efd90", "2024-07-02", "2.80s/iter",
        2.80, "H100", "d48", 16, 1024, 1048576, 1),
    Run("gpt3-125m-a100", "scripts/run_gpt3_125M.sh", "039904e", "2024-07-15", "~300ms/iter",
        0.300, "A100", "gpt3:c768", 32, 2048, 524288, None),
)
# Not taken: run_gpt3_125M.sh @ 72698a5 (2024-07-18) rewrote its header to "~150ms/iter" on 8 A100
# with -ge 1: 524,288 tokens in 0.15 s is 437k tokens/s a GPU, 6 x 125M x 437k = 328 TFLOP/s a
# GPU before attention, above the A100's 312 TFLOP/s bf16 peak.


def rows() -> list[dict[str, object]]:
    out = []
    for run in RUNS:
        layers, channels, heads = DEPTHS[run.descriptor]
        accum = run.tokens // (run.micro * run.seq * 8)
        r = {k: "" for k in HEADER}
        r.update(
            id=f"llmc-{run.key}-8", model="gpt3-125m", hidden_size=channels, num_layers=layers,
            num_attention_heads=heads, ffn_hidden_size=4 * channels, vocab_size=PADDED_VOCAB,
            tied_embeddings=1, seq_length=run.seq, activation="gelu", gpu=GPUS[run.gpu],
            num_gpus=8, gpus_per_node=8, tp=1, pp=1, cp=1, ep=1, sequence_parallel=0,
            recompute="none", zero_stage=1, distributed_optimizer=0,
            global_batch_size=run.tokens // run.seq, micro_batch_size=run.micro, dtype="bf16",
            framework="llm.c", framework_version=run.date, attention="cudnn",
            grad_reduce_dtype="bf16", attention_dropout=0, hidden_dropout=0,
            measured_iteration_s=run.seconds,
            source=(f"{LLMC} {run.script} @ {run.commit} ({run.date}), header line 'on 8X "
                    f"{run.gpu} 80GB SXM ... steps in {run.rate}'; the flags of the script's "
                    "mpirun line; model sizes from train_gpt2.cu at the same commit"),
            note=(f"published 'steps in {run.rate}' on 8X {run.gpu} 80GB SXM (one node; the "
                  f"author's rounded figure): {run.seconds} s a step; -b {run.micro} -t {run.seq} "
                  f"-d {run.tokens}: {run.tokens} tokens a step = {run.tokens // run.seq} "
                  f"sequences of {run.seq}, micro-batch {run.micro} on each of 8 GPUs, "
                  f"{accum} micro-step(s); -e {run.descriptor}: {layers} layers, {channels} "
                  f"channels, {heads} heads, MLP 4 x channels, GELU (tanh), LayerNorm, learned "
                  f"positions, the output layer tied to the token embedding (GPT-2's), vocabulary "
                  f"padded to {PADDED_VOCAB}, no dropout; -r 0: no recompute; -z 1: ZeRO-1 "
                  "(optimizer state sharded; gradients reduce-scattered per layer on the last "
                  "micro-step on the NCCL stream, multi_gpu_async_reduce_gradient; bf16 "
                  "gradients); -w left at 1: fp32 master weights; make USE_CUDNN=1: cuDNN "
                  "flash attention (cudnn); PRECISION left at the Makefile's BF16"
                  + (f"; -ge {run.gelu_fusion}: the forward GELU fused into the fc GEMM's "
                     "cuBLASLt epilogue (no cell)" if run.gelu_fusion else "")
                  + "; options left empty (the llm-c profile's defaults: llmc61)"))
        out.append(r)
    return out


def check() -> list[str]:
    """Each script's header line (GPU and step time) and its flags at the cited commit, and the
    descriptor's sizes and the padded vocabulary in train_gpt2.cu at that commit."""
    bad = []
    for run in RUNS:
        tag = f"{run.script} @ {run.commit}"
        text = mirror_rows.show(LLMC_DIR, run.commit, run.script)
        head = f"on 8X {run.gpu} 80GB SXM"
        if not re.search(rf"{head} \(\$\d+/hr\) steps in {re.escape(run.rate)}", text):
            bad.append(f"{tag}: no header '{head} ... steps in {run.rate}'")
        want = [f"-b {run.micro} -t {run.seq}", f"-d {run.tokens}", "-r 0", "-z 1",
                f'-e "{run.descriptor}"', "mpirun -np 8", "make train_gpt2cu USE_CUDNN=1"]
        want += [f"-ge {run.gelu_fusion}"] if run.gelu_fusion else []
        flat = " ".join(text.replace("\\\n", " ").split())
        bad += [f"{tag}: no {w!r}" for w in want if w not in flat]
        if run.gelu_fusion is None and " -ge " in flat:
            bad.append(f"{tag}: sets -ge")
        if " -w " in flat:
            bad.append(f"{tag}: sets -w (master weights)")
        src = mirror_rows.show(LLMC_DIR, run.commit, "train_gpt2.cu")
        layers, channels, heads = DEPTHS[run.descriptor]
        if run.descriptor.startswith("d"):
            if f"depth == {layers}) {{ channels = {channels}; num_heads = {heads}; }}" not in src:
                bad.append(f"{tag}: train_gpt2.cu has no depth {layers} -> {channels} / {heads}")
        elif "gpt3:c" not in src or "channels / head_size" not in src:
            bad.append(f"{tag}: train_gpt2.cu has no gpt3:cX descriptor")
        if f"padded_vocab_size = {PADDED_VOCAB}" not in src:
            bad.append(f"{tag}: train_gpt2.cu does not pad the vocabulary to {PADDED_VOCAB}")
        make = mirror_rows.show(LLMC_DIR, run.commit, "Makefile")
        if "PRECISION ?= BF16" not in make:
            bad.append(f"{tag}: Makefile's PRECISION default is not BF16")
    return bad


if __name__ == "__main__":
    mirror_rows.main(rows, HEADER, check, "headers, flags and sizes as in the mirror")
