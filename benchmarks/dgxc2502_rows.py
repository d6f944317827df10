"""Writes benchmarks/training_dgxc2502.csv: NVIDIA/dgxc-benchmarking release v25.02 (8f5cbb3799),
whose 'Expected Performance' tables re-measured the NeMo-Framework-Launcher recipes of release
v24.11.1 (training_dgxc.csv's dgxc2411 rows) in the nemo:24.12 container: Llama 3.1 8B / 70B /
405B, GPT-3 175B and Nemotron-4 15B on DGX H100, BF16 and FP8, the smallest and the largest
full-model scale of each table (Nemotron-4 340B kept 24.09 and its v24.11 figures: left out).
Cells the recipes did not change are the dgxc2411 rows' (their notes cite the yaml lines); what
v25.02 changed is set here (see training_dgxc2502.md).
Usage: python benchmarks/dgxc2502_rows.py > benchmarks/training_dgxc2502.csv
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from deferral_cells import stated
from nvls_cells import stated as nvls_stated

HERE = Path(__file__).resolve().parent
REL = "@ 8f5cbb3799 (release v25.02; the tables changed from v25.01.1's, container nvcr.io/nvidia/nemo:24.12)"
# dgxc2411 id stem -> (README, line of the BF16 / FP8 step times, title stem, seq,
#   {GPUs: (bf16 s, bf16 tokens/s, fp8 s, fp8 tokens/s, GBS)})
TABLES = {
    "llama3.1-8b": ("llama3.1/README_8b.md", (54, 61), "Llama 3.1 8b {} (TP=1, PP=1, CP=2, MBS=1, GA=32)", 8192,
                    {8: (12.78, 82028, 9.44, 111054, 128), 128: (13.16, 1275155, 9.73, 1725163, 2048)}),
    "llama3.1-70b": ("llama3.1/README_70b.md", (53, 60), "Llama 3.1 70b {} (TP=4, PP=4, CP=2, VP=5, MBS=1, GA=64)",
                     8192, {64: (14.61, 71756, 10.46, 100275, 128), 2048: (14.84, 2260623, 10.99, 3053178, 4096)}),
    "llama3.1-405b": ("llama3.1/README_405b.md", (58, 69), "Llama 3.1 405b {} (TP=8, PP=9, CP=2, VP=7, MBS=1, GA=63)",
                      8192, {576: (17.50, 117964, 11.00, 187671, 252), 2304: (17.70, 466527, 11.20, 737280, 1008)}),
    "gpt3-175b": ("nemo_megatron/README_175b.md", (56, 63), "NeMo Megatron {} (TP=4,PP=8, MBS=1, VP=12, SEQ=2048)",
                  2048, {128: (8.309, 63099, 5.626, 93190, 256), 2048: (8.49, 988057, 5.96, 1407485, 4096)}),
    "nemotron4-15b": ("nemotron/README_15b.md", (56, 63), "Nemotron4 15b {} (TP=4, PP=1, MBS=4, GA=4)", 4096,
                      {16: (2.812, 93223, 2.039, 128565, 64), 2048: (2.887, 11622595, 2.12, 15827562, 8192)}),
}
CHANGES = {
    "llama3.1": ("llama3.1/launch.sh FW_VERSION 24.12 (24.09 before); the llama3.1_*.yaml recipes unchanged "
                 "since v24.11.1 (git diff 35a9aecc8d 8f5cbb3799 -- 'llama3.1/*.yaml' is empty); configure.sh "
                 "exports NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=1: cuDNN attention"),
    "gpt3": ("nemo_megatron/launch.sh FW_VERSION 24.12 (24.05 before); configure.sh exports NVTE_FUSED_ATTN=1 "
             "(no longer 0: flash-attn 2 no longer forced; attention left to Transformer Engine, cell empty); "
             "gpt3_175b_hydra.yaml now says virtual_pipeline_model_parallel_size 6 while the README's table "
             "title and its 'maintain these values' list say VP 12: the vpp cell is left empty; the yaml's "
             "TP 4, PP 8, MBS 1, sequence_parallel, overlap_p2p_comm, ub_tp_comm_overlap, "
             "distributed_fused_adam with overlap_grad_sync / grad_sync_dtype bf16 and dropout 0.1 are kept"),
    "nemotron4": ("nemotron/launch.sh FW_VERSION 24.12 for 15b (24.09 before; 340b stays 24.09); "
                  "nemotron4-15b-synth.yaml now uses mcore_distributed_optim (Megatron-core's distributed "
                  "optimizer, overlap_grad_sync / overlap_param_sync true) and no longer sets grad_sync_dtype: "
                  "the grad_reduce_dtype cell is left empty; TP 4, MBS 4, sequence_parallel, "
                  "ub_tp_comm_overlap True and dropout 0 as before"),
}

# fp8 parameters, all-gathered as uint8 (the dgxc2411 rows' note: NeMo's fp8_model_init and Apex
# DistributedFusedAdam, or Megatron-core's DDP fp8_param_gather under mcore_distributed_optim,
# NVIDIA/NeMo@v2.1.0 megatron_gpt_model.py L396 and L598), still passed at 8f5cbb3799 (cells60)
FP8_PARAMS = {"llama3.1": "llama3.1/configure.sh L124 '+model.fp8_params=$FP8_ENABLED'",
              "gpt3": "nemo_megatron/gpt3_175b_hydra.yaml L221 'fp8_params: true'",
              "nemotron4": "nemotron/configure.sh L115 '+model.fp8_params=${FP8_ENABLED^}'"}


def rows() -> list[dict]:
    with open(HERE / "training_dgxc.csv", newline="") as fh:
        base = {r["id"]: r for r in csv.DictReader(fh)}
    header = list(next(iter(base.values())).keys())
    out = []
    for stem, (readme, lines, title, seq, cols) in TABLES.items():
        family = stem.split("-")[0]
        for d, dtype in enumerate(("bf16", "fp8")):
            for gpus, figures in cols.items():
                t, tps = figures[2 * d], figures[2 * d + 1]
                gbs = figures[4]
                assert abs(seq * gbs / t / tps - 1) < 2e-3, (stem, gpus, dtype)
                r = dict(base[f"dgxc2411-{stem}-{dtype}-{gpus}"])
                assert int(r["global_batch_size"]) == gbs and int(r["seq_length"]) == seq
                name = title.format(dtype.upper())
                r.update(
                    id=f"dgxc2502-{stem}-{dtype}-{gpus}",
                    source=(f"NVIDIA/dgxc-benchmarking {readme} {REL}, 'Expected Performance' table "
                            f"'{name}', line {lines[d]} 'Training step time (seconds per step)'"),
                    framework_version="24.12", measured_iteration_s=f"{t}")
                if family == "llama3.1":
                    r["attention"] = "cudnn"
                elif family == "gpt3":
                    r["attention"] = ""
                    r["vpp"] = ""
                else:
                    r["grad_reduce_dtype"] = ""
                r["note"] = (
                    f"published {t} s per step ({tps} tokens/s), column '{gpus}x H100 GPUs' of table "
                    f"'{name}'; iteration time = the table's 'Training step time (seconds per step)' "
                    f"as published (NeMo train_step_timing); the table's tokens/s = {seq} x GBS {gbs} / "
                    "step time agrees; the same launcher recipe as the dgxc2411 row of this model, dtype "
                    "and scale (training_dgxc.csv, whose note cites the recipe), re-measured in the "
                    f"24.12 container: {CHANGES[family]}; DGX H100 (8 GPUs per NVLink domain, 400 Gb/s "
                    "ConnectX-7 per GPU, inferred: the README names only 'H100 GPUs')")
                if dtype == "fp8":
                    assert r["fp8_param_gather"] == "1", r["id"]
                    r["note"] += f"; fp8_param_gather 1: {FP8_PARAMS[family]} at 8f5cbb3799"
                out.append(nvls_stated(stated({k: r.get(k, "") for k in header})))  # deferral_, nvls_cells
    return out


def main() -> None:
    data = rows()
    w = csv.DictWriter(sys.stdout, fieldnames=list(data[0].keys()), lineterminator="\n")
    w.writeheader()
    w.writerows(data)


if __name__ == "__main__":
    main()
