"""Writes benchmarks/training_internevo.csv: InternLM's (now InternEvo's) 7B training-performance
tables, 8 to 1,024 A100 80GB over RoCE, a check file.

    python benchmarks/internevo_rows.py > benchmarks/training_internevo.csv
    python benchmarks/internevo_rows.py --check      # the typed tables against the mirror
    python benchmarks/internevo_rows.py --left-out   # the table rows not in the file, and why

InternLM/InternEvo doc/en/train_performance.md @ 34fc28d (2024-01-25; every figure as set in the
repository's first commit fa7337b, 2023-07-06, and c18bec9, 2023-07-08, #40, which changed only
the TFLOPS row of the summary table). Hardware (the doc's table): nvidia_a100-sxm4-80gb, 4 x 100
Gb RoCE between machines (8 GPUs a machine: 2 GPUs a NIC, 50 Gb/s a GPU). TGS = tokens per GPU per second,
train.py @ c18bec9 `num_tokens_in_batch / time / world size` for the step; so iteration = the
step's tokens / (TGS x GPUs) = micro_bsz x micro_num x dp x 2048 / (TGS x GPUs). The code that
ran is the repository's at c18bec9 (configs/7B_sft.py, internlm/): nothing in trainsim was
fitted to these rows.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

REPO_DIR = "InternLM+InternEvo"
COMMIT = "34fc28d"
CODE = "c18bec9"
DOC = "doc/en/train_performance.md"
HEADER = mirror_rows.v2_header(distributed_optimizer=["dp_replicate"],
                               nic_gbps_per_gpu=["gpus_per_nic"])
SEQ = 2048
GPUS = (8, 16, 32, 64, 128, 256, 512, 1024)

# 'Throughput Measurement' (pack_sample_into_one=False, checkpoint=False): the parallel
# configuration -> (tp, zero1, micro_bsz, micro_num) and its TGS per GPU count, as printed
THROUGHPUT = {
    "(tp=1, zero1=-1)": ((1, -1, 2, 4), (4062, 3842, 3752, 3690, 3571, 3209, 2861, 2271)),
    "(tp=1, zero1=8)": ((1, 8, 2, 4), (4078, 3939, 3919, 3944, 3928, 3920, 3835, 3625)),
    "(tp=2, zero1=-1)": ((2, -1, 4, 4), (3822, 3595, 3475, 3438, 3308, 3094, 2992, 2785)),
    "(tp=2, zero1=4)": ((2, 4, 4, 4), (3761, 3658, 3655, 3650, 3651, 3653, 3589, 3486)),
}
# 'FLOPS Testing' (pack_sample_into_one=True, tp 1, zero1 8): (activation ckpt, GPUs, micro_bsz,
# micro_num, Global Bsz cell, TGS, TFLOPS) as printed
FLOPS = [
    (True, 8, 8, 1, "0.125M", 3314, 193), (True, 16, 8, 1, "0.25M", 3268, 191),
    (True, 32, 8, 1, "0.5M", 3323, 188), (True, 64, 8, 1, "1M", 3217, 188),
    (True, 128, 8, 1, "2M", 3260, 187), (True, 256, 8, 1, "4M", 3215, 187),
    (True, 512, 8, 1, "8M", 3199, 186), (True, 1024, 8, 1, "16M", 3163, 184),
    (True, 512, 4, 1, "4M", 2963, 173), (True, 1024, 2, 1, "4M", 2341, 136),
    (True, 1024, 4, 1, "8M", 2796, 160),
    (False, 8, 2, 4, "0.125M", 4103, 183), (False, 16, 2, 4, "0.25M", 3939, 177),
    (False, 32, 2, 4, "0.5M", 3919, 176), (False, 64, 2, 4, "1M", 3944, 174),
    (False, 128, 2, 4, "2M", 3928, 173), (False, 256, 2, 4, "4M", 3920, 173),
    (False, 512, 2, 4, "8M", 3900, 173), (False, 1024, 2, 4, "16M", 3625, 160),
    (False, 512, 2, 2, "4M", 3084, 139), (False, 1024, 2, 1, "4M", 2346, 105),
    (False, 1024, 2, 2, "8M", 2817, 124),
]

SOURCE = ("InternLM/InternEvo " + DOC + " @ " + COMMIT + " (2024-01-25; tables as first set in "
          "InternLM/InternLM's first commit fa7337b, 2023-07-06, and c18bec9, 2023-07-08, #40), "
          "'{table}'; code as at " + CODE)
SETTINGS = (
    "model: configs/7B_sft.py @ c18bec9 (32 layers, hidden 4096, 32 heads, mlp_ratio 8/3 rounded "
    "up to 256: ffn 11008, vocab 103168, RMSNorm, untied head; Wqkv and out_proj carry biases, "
    "< 0.1 % of the FLOPs): the internlm-7b preset (nine tensors a layer, as InternEvo's "
    "broadcast owners count them: two norms, Wqkv and out_proj with their biases, w1, w2, w3 "
    "apart); bf16, FlashAttention v1.0.5 "
    "(doc/en/install.md: flash1) and Apex fused kernels; TP by flash_attn's fused dense layers "
    "without sequence parallelism (modeling_internlm.py builds MHA and FeedForward with "
    "sequence_parallel=False, internlm/model/linear.py); hybrid ZeRO-1 "
    "(internlm/solver/optimizer/hybrid_zero_optim.py): gradients reduced in the parameters' "
    "bf16 (reduce_tensor(dtype=self.dtype)) over the whole "
    "data-parallel group on a side stream during the backward (zero_overlap_communication=True, "
    "512M-element buckets), parameters broadcast inside the zero1 group after the step "
    "(broadcast_params(overlap=False)); zero1=-1: one group of every data-parallel rank "
    "(dp_replicate 1), zero1=k: groups of k (dp_replicate dp/k); options dp_overlap (the gradient "
    "reduce is overlapped; the parameter broadcast is not: the internevo profile has no gather "
    "to overlap); 4 x 100 Gb RoCE a machine: 2 GPUs a NIC (gpus_per_nic), 50 Gb/s a GPU; framework InternEvo (then "
    "InternLM's train.py): catalog/frameworks/internevo.yaml")


def _row(rid: str, table: str, gpus: int, tp: int, zero1: int, mbs: int, num: int, tgs: int,
         ckpt: bool, pack: bool, printed: str) -> dict[str, str]:
    dp = gpus // tp
    gbs = mbs * num * dp
    group = dp if zero1 <= 0 else zero1
    row = {c: "" for c in HEADER}
    row.update(
        id=rid, source=SOURCE.format(table=table), model="internlm-7b",
        seq_length=str(SEQ), gpu="a100-sxm-80gb", num_gpus=str(gpus), gpus_per_node="8",
        nic_gbps_per_gpu="50", gpus_per_nic="2", tp=str(tp), pp="1", cp="1", vpp="1",
        sequence_parallel="0", recompute="full" if ckpt else "none",
        zero_stage="1", dp_replicate=str(dp // group), global_batch_size=str(gbs),
        micro_batch_size=str(mbs), dtype="bf16", grad_reduce_dtype="bf16", options="dp_overlap",
        framework="internevo",
        framework_version="2023-07", attention="flash1",
        measured_iteration_s=f"{gbs * SEQ / (tgs * gpus):.6f}",
        note=(f"table '{table}', {printed}: TGS {tgs} on {gpus} GPUs; iteration = micro_bsz {mbs} "
              f"x micro_num {num} x dp {dp} x {SEQ} / (TGS x GPUs) (train.py's TGS inverted); "
              + ("pack_sample_into_one=True: cu_seqlens every 2048 tokens "
                 "(PackedDatasetWithoutCuSeqlen), so a packed micro-batch of micro_bsz x 2048 "
                 "tokens is micro_bsz sequences of 2048 exactly; "
                 if pack else
                 "pack_sample_into_one=False: a packed micro-batch of micro_bsz x 2048 tokens "
                 "attends within each sample (cu_seqlens at the samples' ends, none longer than "
                 "2048): read as micro_bsz sequences of 2048, the attention's upper bound; ")
              + f"checkpoint={ckpt} (recompute {'full' if ckpt else 'none'}); zero1={zero1}; "
              + SETTINGS))
    return row


def rows() -> list[dict[str, str]]:
    out = []
    for label, ((tp, zero1, mbs, num), tgss) in THROUGHPUT.items():
        for gpus, tgs in zip(GPUS, tgss):
            z = "all" if zero1 < 0 else str(zero1)
            out.append(_row(f"internevo2307-7b-a100-{gpus}-tp{tp}-zero1{z}", "Throughput "
                            "Measurement", gpus, tp, zero1, mbs, num, tgs, False, False,
                            f"row {label}"))
    for ckpt, gpus, mbs, num, gbs_cell, tgs, tflops in FLOPS:
        if not ckpt and _duplicate(gpus, mbs, num, tgs):
            continue
        rid = f"internevo2307-7b-a100-{gpus}-pack-mbs{mbs}x{num}" + ("-ckpt" if ckpt else "")
        out.append(_row(rid, "FLOPS Testing", gpus, 1, 8, mbs, num, tgs, ckpt, True,
                        f"Activation Ckpt {str(ckpt).upper()}, Global Bsz {gbs_cell}, TFLOPS "
                        f"{tflops}"))
    return out


def _duplicate(gpus: int, mbs: int, num: int, tgs: int) -> bool:
    """A 'FLOPS Testing' row without checkpointing that prints the same TGS as the throughput
    table's (tp=1, zero1=8) run at the same size (micro_bsz 2, micro_num 4): one measurement."""
    same = THROUGHPUT["(tp=1, zero1=8)"][1][GPUS.index(gpus)]
    return (mbs, num) == (2, 4) and tgs == same


def left_out() -> list[str]:
    return [f"FLOPS Testing, Activation Ckpt FALSE, {gpus} GPUs, micro_bsz {mbs} x micro_num "
            f"{num}, TGS {tgs}: the same figure as the 'Throughput Measurement' (tp=1, zero1=8) "
            f"run on {gpus} GPUs (same sizes; pack_sample_into_one differs), one measurement "
            "printed twice: kept once, as the throughput table's row"
            for ckpt, gpus, mbs, num, _g, tgs, _t in FLOPS
            if not ckpt and _duplicate(gpus, mbs, num, tgs)] + [
        ("GPU Memory Usage Test (7B / 20B, 3-16 GPUs, tag v0.2.1dev20231121): memory only, no "
         "time (format v2 needs measured_iteration_s), and its fsdp / pp runs are of a later "
         "code")]


def check() -> list[str]:
    text = mirror_rows.show(REPO_DIR, COMMIT, DOC)
    lines = [[c.strip() for c in x.strip().strip("|").split("|")] for x in text.splitlines()
             if x.lstrip().startswith("|")]
    bad = []
    for label, ((tp, zero1, mbs, num), tgss) in THROUGHPUT.items():
        if [label, *map(str, tgss)] not in lines:
            bad.append(f"no throughput row {label} {tgss}")
    for ckpt, gpus, mbs, num, gbs, tgs, tflops in FLOPS:
        want = ["1", "8", "TRUE", str(ckpt).upper(), str(gpus), str(SEQ), str(mbs), str(num), gbs,
                str(tgs), str(tflops)]
        if want not in lines:
            bad.append(f"no FLOPS row {want}")
    for want in (["micro_num", "4", "4"], ["micro_bsz", "2", "4"], ["seq_len", "2048", "2048"],
                 ["GPU", "nvidia_a100-sxm4-80gb"], ["Inter-machine bandwidth", "4 * 100Gb RoCE"]):
        if want not in lines:
            bad.append(f"no setting row {want}")
    cfg = mirror_rows.show(REPO_DIR, CODE, "configs/7B_sft.py")
    for phrase in ("VOCAB_SIZE = 103168", "MLP_RATIO = 8 / 3", "NUM_LAYER = 32",
                   "zero_overlap_communication=True", "checkpoint=False"):
        if phrase not in cfg:
            bad.append(f"not in configs/7B_sft.py: {phrase!r}")
    lin = mirror_rows.show(REPO_DIR, CODE, "internlm/model/linear.py")
    mha = mirror_rows.show(REPO_DIR, CODE, "internlm/model/multi_head_attention.py")
    if "self.w1 = ColumnParallelLinear" not in lin or "self.w3 = RowParallelLinear" not in lin \
            or "bias=True" not in mha:
        bad.append("linear.py / multi_head_attention.py: tensor layout not as read")
    opt = mirror_rows.show(REPO_DIR, CODE, "internlm/solver/optimizer/hybrid_zero_optim.py")
    if "self.broadcast_params(overlap=False)" not in opt:
        bad.append("hybrid_zero_optim.py: parameter broadcast not as read")
    if "flash-attention (version v1.0.5)" not in mirror_rows.show(REPO_DIR, CODE, "doc/en/install.md"):
        bad.append("install.md: flash-attention version not as read")
    return bad


def main() -> None:
    if sys.argv[1:] == ["--left-out"]:
        print("\n".join(left_out()))
        return
    mirror_rows.main(rows, HEADER, check, "tables and code as in the mirror")


if __name__ == "__main__":
    main()
