"""Writes benchmarks/training_megatron_llama.csv: Alibaba's Megatron-LLaMA README figures, LLaMA-13B
on 32, 256 and 512 A100 80GB (Megatron-LLaMA with and without its OverlappedDistributedOptimizer,
and the DeepSpeed / Hugging Face baseline), a check file.

    python benchmarks/megatron_llama_rows.py > benchmarks/training_megatron_llama.csv
    python benchmarks/megatron_llama_rows.py --check   # the typed figures against the mirror

alibaba/Megatron-LLaMA README.md @ 25306de (2023-10-09; the tables as in the initial commit
d2e05b8, 2023-09-04, except the OverlappedDistributedOptimizer row, which e3d671a replaced with
its new code's figures: both versions are rows). 'Efficiency and Affordability': LLaMA-13b on four 8xA100-80GB machines,
global batch 2048 via gradient accumulation, the hours to consume 10 billion tokens (and the model
TFLOPS they imply); 'Excellent Scalability': average tokens per second per GPU on 256 and 512
A100 80GB (8 a machine, 4 x 200 Gbps RDMA), with the days the 1T-token LLaMA schedule would take.
Iteration = 2048 x 2048 / (tokens/s/GPU x GPUs). Nothing in trainsim was fitted to these rows.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

REPO_DIR = "alibaba+Megatron-LLaMA"
COMMIT = "25306de"
CODE = "d2e05b8"
HEADER = mirror_rows.v2_header(nic_gbps_per_gpu=["gpus_per_nic"],
                               note=["attention_dropout", "hidden_dropout", "ddp_bucket_size",
                                     "gradient_accumulation_fusion"])
# dropout as the example script passed it when the figures were measured: none at d2e05b8
# (arguments.py's 0.1), 0 from 3850347 (2023-09-18, "Disable dropout"), before e3d671a
DROPOUT = {"odo": "0", "odo2309": "0.1", "do": "0.1"}
DROPOUT_COMMIT = "3850347"
# the OverlappedDistributedOptimizer's code by the commit whose README prints its figures
VERSION = {"odo": "2023-10-09", "odo2309": "2023-09", "do": "2023-09"}
GBS, SEQ, TOKENS_10B = 2048, 2048, 10e9

# the 32-GPU table: (column, hours for 10B tokens cell, model TFLOPS cell)
COST = [("DeepSpeed (HF)", "49.7 hours ($5482)", "146"),
        ("Megatron-LLaMA", "40.3 hours ($4445)", "180")]
# the scalability table: (row label, optimizer, commit whose README prints it, GPUs -> 'tokens/s
# (days)' cell). e3d671a (2023-10-09, "Supporting overlapping AG with forward computation")
# replaced the OverlappedDistributedOptimizer figures of d2e05b8 with those of its new code.
SCALE = [("Megatron-LLaMA with OverlappedDistributedOptimizer", "odo", COMMIT,
          {256: "1890 (23.9 days)", 512: "1845 (12.2 days)"}),
         ("Megatron-LLaMA with OverlappedDistributedOptimizer", "odo2309", CODE,
          {256: "1800 (25.1 days)", 512: "1660 (13.6 days)"}),
         ("Megatron-LLaMA with DistributedOptimizer", "do", COMMIT,
          {256: "1630 (27.8 days)", 512: "1430 (15.8 days)"})]

SOURCE = "alibaba/Megatron-LLaMA README.md @ {commit} ({when}), '{section}'"
WHEN = {COMMIT: "2023-10-09; tables as in the initial commit d2e05b8, 2023-09-04, but the "
                "OverlappedDistributedOptimizer row, set by e3d671a, 2023-10-09",
        CODE: "2023-09-04, the initial commit; its OverlappedDistributedOptimizer row replaced "
              "in e3d671a"}
SCRIPT = (
    "settings: examples/LLaMA/LLaMA_13_slurm.sh @ d2e05b8 (TP 2, PP 1, micro-batch 4, GBS 2048, "
    "seq 2048, --sequence-parallel, --recompute-activations --recompute-granularity selective, "
    "--use-flash-attn (FlashAttention 1: the README lists FlashAttention2 as future work), --bf16, "
    "LLaMA-13B shape: the llama-13b preset, vocab 32000 with --make-vocab-size-divisible-by 1); "
    "gradients in fp32 (overlapped_dist_optimizer.py: accumulate_allreduce_grads_in_fp32 under "
    "bf16; --reduce-bucket-size=4e8: ddp_bucket_size); --no-gradient-accumulation-fusion: "
    "gradient_accumulation_fusion 0 (the DistributedOptimizer's hook adds each micro-batch's "
    "bf16 gradients into the fp32 main_grad; the overlapped optimizer turns the fusion off "
    "itself, arguments.py L187-189, and copies them into its buckets); 4 x 200 Gbps RDMA a "
    "machine of 8: 2 GPUs "
    "a NIC (gpus_per_nic), 100 Gb/s a GPU; framework Megatron-LLaMA (Alibaba's fork of "
    "Megatron-LM at 2360d73, 2023-05-11): profile megatron-llama")
OPTIMIZER = {
    "odo": ("--overlapped-distributed-optimizer as of e3d671a (2023-10-09), whose commit set "
            "these figures: bucketed reduce-scatters on a side stream during every "
            "micro-batch's backward and the parameters' all-gather overlapped with the next "
            "forward: options dp_overlap, version 2023-10-09; dropout 0 (the script since "
            "3850347, 2023-09-18)"),
    "odo2309": ("--overlapped-distributed-optimizer as first published (d2e05b8, 2023-09-04; "
                "figures replaced in e3d671a): bucketed reduce-scatters on a side stream during "
                "every micro-batch's backward, the parameters' all-gather after the step, not "
                "overlapped: options dp_overlap, version 2023-09 (the profile's entry before "
                "e3d671a); dropout 0.1 (the script at d2e05b8 passes none: arguments.py's "
                "default)"),
    "do": ("Megatron-LM's --use-distributed-optimizer of 2023: reduce-scatter after the backward, "
           "all-gather after the step, neither overlapped: options fused_kernels only (no "
           "overlap); dropout 0.1 (the script at d2e05b8 passes none: arguments.py's default, "
           "the table unchanged since)"),
}


def _megatron_row(rid: str, section: str, gpus: int, tps: float, opt: str,
                  printed: str) -> dict[str, str]:
    commit = CODE if opt == "odo2309" else COMMIT
    row = {c: "" for c in HEADER}
    row.update(
        id=rid, source=SOURCE.format(commit=commit, when=WHEN[commit], section=section), model="llama-13b", seq_length=str(SEQ),
        gpu="a100-sxm-80gb", num_gpus=str(gpus), gpus_per_node="8", nic_gbps_per_gpu="100",
        gpus_per_nic="2", attention_dropout=DROPOUT[opt], hidden_dropout=DROPOUT[opt],
        ddp_bucket_size="400000000", gradient_accumulation_fusion="0",
        tp="2", pp="1", cp="1", vpp="1", sequence_parallel="1", recompute="selective",
        distributed_optimizer="1", global_batch_size=str(GBS), micro_batch_size="4",
        dtype="bf16", options="fused_kernels" if opt == "do" else "dp_overlap",
        framework="megatron-llama", framework_version=VERSION[opt], attention="flash1",
        grad_reduce_dtype="fp32", measured_iteration_s=f"{GBS * SEQ / (tps * gpus):.6f}",
        note=f"{printed}; {OPTIMIZER[opt]}; {SCRIPT}")
    return row


def tokens_per_s(hours_cell: str) -> float:
    """10 billion tokens over the hours on 32 GPUs, per GPU."""
    return TOKENS_10B / (float(hours_cell.split()[0]) * 3600 * 32)


def rows() -> list[dict[str, str]]:
    out = []
    ds, mllama = COST
    tps = tokens_per_s(mllama[1])
    out.append(_megatron_row(
        "mllama2309-llama-13b-a100-32-odo2309", "Efficiency and Affordability", 32, tps, "odo2309",
        f"'{mllama[0]}' column: {mllama[1]} for 10B tokens on 32 GPUs = {tps:.1f} tokens/s/GPU "
        f"(its 'Training Model TFLOPS' {mllama[2]}: x 6 x 13.0e9 + attention = 179); the 32-GPU "
        "configuration is not printed: the example script's; the table is the initial commit's, "
        "unchanged by e3d671a: the first OverlappedDistributedOptimizer"))
    tps = tokens_per_s(ds[1])
    row = {c: "" for c in HEADER}
    row.update(
        id="mllama2309-llama-13b-a100-32-deepspeed-hf",
        source=SOURCE.format(commit=COMMIT, when=WHEN[COMMIT],
                             section="Efficiency and Affordability"), model="llama-13b",
        seq_length=str(SEQ), gpu="a100-sxm-80gb", num_gpus="32", gpus_per_node="8",
        nic_gbps_per_gpu="100", gpus_per_nic="2", tp="1", pp="1", cp="1",
        global_batch_size=str(GBS), dtype="bf16",
        framework="deepspeed", framework_version="2023-09", attention="flash1",
        options="hf_modules",
        measured_iteration_s=f"{GBS * SEQ / (tps * 32):.6f}",
        note=(f"'{ds[0]}' column: {ds[1]} for 10B tokens on 32 GPUs = {tps:.1f} tokens/s/GPU "
              f"(its 'Training Model TFLOPS' {ds[2]}); the baseline is 'the publicly available "
              "versions of LLaMA (implemented based on Huggingface and DeepSpeed)' with "
              "FlashAttention enabled (the README links the FlashAttention-1 paper: flash1), "
              "GBS 2048 by gradient accumulation; its ZeRO stage, micro-batch and recompute are "
              "not stated: left to the tool; 2 GPUs a NIC, 100 Gb/s a GPU, as the Megatron-LLaMA rows; "
              "options hf_modules (the Hugging Face model's own eager modules), no overlap "
              "stated (none assumed, as for an empty cell under the deepspeed profile)"))
    out.append(row)
    for label, opt, _commit, cells in SCALE:
        for gpus, cell in cells.items():
            tps = float(cell.split()[0])
            out.append(_megatron_row(
                f"mllama2309-llama-13b-a100-{gpus}-{opt}", "Excellent Scalability", gpus, tps,
                opt, f"'{label}' on {gpus}xA100 80GB (README @ {_commit}): {cell} tokens/s/GPU; "
                "the model is not "
                "named: LLaMA-13B, the README's model, whose 1T-token LLaMA schedule the days "
                f"reproduce ({tps:.0f} x {gpus} x days x 86400 = "
                f"{tps * gpus * float(cell.split('(')[1].split()[0]) * 86400 / 1e12:.2f}T "
                "tokens), at the example script's settings (LLaMA_13_slurm.sh, written for "
                "this multi-node run)"))
    return out


def _table(doc: str) -> list[list[str]]:
    return [[c.strip() for c in x.strip().strip("|").split("|")] for x in doc.splitlines()
            if x.lstrip().startswith("|")]


def check() -> list[str]:
    docs = {c: mirror_rows.show(REPO_DIR, c, "README.md") for c in (COMMIT, CODE)}
    bad = []
    for label, _opt, commit, cells in SCALE:
        if [label, cells[256], cells[512]] not in _table(docs[commit]):
            bad.append(f"{commit}: no row {label} {cells}")
    for name, doc in docs.items():
        if ["Training cost", COST[0][1], COST[1][1]] not in _table(doc):
            bad.append(f"{name}: cost row not as typed")
        if ["Training Model TFLOPS", COST[0][2], COST[1][2]] not in _table(doc):
            bad.append(f"{name}: TFLOPS row not as typed")
        for phrase in ("four 8xA100-80GB devices", "global batch size is set to 2048",
                       "4x200Gbps RDMA", "consuming 10 billion tokens"):
            if phrase not in doc:
                bad.append(f"{name}: not in README: {phrase!r}")
    script = mirror_rows.show(REPO_DIR, CODE, "examples/LLaMA/LLaMA_13_slurm.sh")
    for phrase in ("TP_SIZE=2", "PP_SIZE=1", "MICRO_BATCH_SIZE=4", "GLOBAL_BATCH_SIZE=2048",
                   "--seq-length 2048", "--recompute-granularity selective", "--use-flash-attn",
                   "--overlapped-distributed-optimizer", "--sequence-parallel",
                   "--reduce-bucket-size=4e8", "--no-gradient-accumulation-fusion"):
        if phrase not in script:
            bad.append(f"not in LLaMA_13_slurm.sh: {phrase!r}")
    for commit in (DROPOUT_COMMIT, COMMIT):  # the script the e3d671a-era figures ran
        if "--no-gradient-accumulation-fusion" not in mirror_rows.show(
                REPO_DIR, commit, "examples/LLaMA/LLaMA_13_slurm.sh"):
            bad.append(f"LLaMA_13_slurm.sh @ {commit} fuses the gradient accumulation")
    args = mirror_rows.show(REPO_DIR, CODE, "megatron/arguments.py")
    if "args.gradient_accumulation_fusion = False" not in args:
        bad.append(f"arguments.py @ {CODE}: the overlapped optimizer keeps the fusion")
    if "dropout" in script:
        bad.append(f"LLaMA_13_slurm.sh @ {CODE} sets a dropout: not arguments.py's default")
    later = mirror_rows.show(REPO_DIR, DROPOUT_COMMIT, "examples/LLaMA/LLaMA_13_slurm.sh")
    for phrase in ("--attention-dropout 0", "--hidden-dropout 0"):
        if phrase not in later:
            bad.append(f"not in LLaMA_13_slurm.sh @ {DROPOUT_COMMIT}: {phrase!r}")
    return bad


def main() -> None:
    mirror_rows.main(rows, HEADER, check, "figures and script settings as in the mirror")


if __name__ == "__main__":
    main()
