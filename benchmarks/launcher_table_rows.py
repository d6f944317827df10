"""Writes benchmarks/training_nemo_launcher.csv: the 'Benchmark performance numbers (pretraining)'
table of NVIDIA/NeMo-Framework-Launcher examples/README.md ('pre-training performance of various
models on DGXH100, with FP8') at the three commits that set its figures, before the NeMo 24.07
performance summary the public file holds (see training_nemo_launcher.md):

  A 693244ac (2024-03-05, the table's first figures; config.yaml container nemo:24.01)
  B 81b75a7c (2024-04-22, 'update GPT and LLAMA2 training records')
  C 3499f38e (2024-06-03, '24.05 results')

Cells the table gives: GPUs, GBS, MBS, sequence, TP, PP (C: CP), tokens/s/GPU. The rest is the
launcher's training recipe (launcher_scripts/conf/training/<model>.yaml) at the same commit and
the h100 fp8 example script's overrides, only where the recipe's TP / PP are the table's.
Usage: python benchmarks/launcher_table_rows.py > benchmarks/training_nemo_launcher.csv
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

HEADER = mirror_rows.v2_header(note=["attention_dropout", "hidden_dropout"])

COMMITS = {
    "A": ("693244ac8c", "2024-03-05", "24.01", "config.yaml container nvcr.io/nvidia/nemo:24.01.framework"),
    "B": ("81b75a7cbd", "2024-04-22", "24.03", ("between the 24.03.01 tag (5c7e280a, 2024-04-19, whose "
          "config.yaml names nemo:24.03.01.framework and whose table still has A's figures) and the "
          "24.05 tag; master's config.yaml still names 24.01.01.framework")),
    "C": ("3499f38e2d", "2024-06-03", "24.05", ("commit message '24.05 results'; config.yaml container "
          "nvcr.io/nvidia/nemo:24.05")),
}
# table rows: (gen, README line, name, preset, GPUs, GBS, MBS, seq, TP, PP, CP, tokens/s/GPU)
TABLE = [
    ("A", 54, "GPT3-175B", "gpt3-175b", 512, 2048, 1, 2048, 4, 8, 1, 741),
    ("A", 55, "GPT3-5B", "gpt3-5b", 64, 2048, 4, 2048, 1, 1, 1, 22599),
    ("A", 56, "GPT3-20B", "gpt3-20b", 64, 256, 4, 2048, 4, 1, 1, 5152),
    ("A", 57, "LLAMA2-7B", "llama2-7b", 8, 128, 1, 4096, 1, 1, 1, 15066),
    ("A", 58, "LLAMA2-13B", "llama2-13b", 16, 128, 1, 4096, 2, 1, 1, 7728),
    ("A", 59, "LLAMA2-70B", "llama2-70b", 64, 128, 1, 4096, 4, 4, 1, 1594),
    ("B", 55, "GPT3-5B", "gpt3-5b", 64, 2048, 4, 2048, 1, 1, 1, 23574),
    ("B", 56, "GPT3-20B", "gpt3-20b", 64, 256, 2, 2048, 2, 1, 1, 5528),
    ("B", 57, "LLAMA2-7B", "llama2-7b", 8, 128, 1, 4096, 1, 1, 1, 16290),
    ("B", 58, "LLAMA2-13B", "llama2-13b", 16, 128, 1, 4096, 4, 1, 1, 8317),
    ("B", 59, "LLAMA2-70B", "llama2-70b", 64, 128, 1, 4096, 4, 4, 1, 1725),
    ("C", 55, "GPT3-5B", "gpt3-5b", 64, 2048, 4, 2048, 1, 1, 1, 23117),
    ("C", 56, "GPT3-20B", "gpt3-20b", 64, 256, 2, 2048, 2, 1, 1, 5611),
    ("C", 57, "LLAMA2-7B", "llama2-7b", 8, 128, 1, 4096, 1, 1, 1, 16154),
    ("C", 58, "LLAMA2-13B", "llama2-13b", 16, 128, 1, 4096, 1, 4, 1, 8344),
    ("C", 59, "LLAMA2-70B", "llama2-70b", 64, 128, 1, 4096, 4, 4, 1, 1659),
    ("C", 62, "LLAMA3-8B", "llama3-8b", 8, 128, 1, 8192, 1, 1, 2, 11879),
    ("C", 63, "LLAMA3-70B", "llama3-70b", 64, 128, 1, 8192, 4, 4, 2, 1444),
]
# the recipe (conf/training/<model>.yaml) at each commit: TP, PP, VP, SP, ub_tp_comm_overlap,
# overlap_p2p_comm, transformer_engine (all: distributed_fused_adam with overlap_grad_sync,
# activations_checkpoint_granularity null / num_layers 0)
RECIPE = {
    ("A", "gpt3-175b"): (4, 8, 12, True, False, False, False),
    ("A", "gpt3-5b"): (1, 1, None, False, False, False, False),
    ("A", "gpt3-20b"): (4, 1, None, True, False, False, False),
    ("A", "llama2-7b"): (1, 1, None, False, False, False, True),
    ("A", "llama2-13b"): (2, 1, None, True, True, False, True),
    ("A", "llama2-70b"): (4, 4, 20, True, True, True, True),
    ("B", "gpt3-5b"): (1, 1, None, False, False, False, True),
    ("B", "gpt3-20b"): (2, 1, None, True, True, False, True),
    ("B", "llama2-7b"): (1, 1, None, False, False, False, True),
    ("B", "llama2-13b"): (1, 4, 10, True, False, True, True),
    ("B", "llama2-70b"): (4, 4, 20, True, True, True, True),
    ("C", "gpt3-5b"): (1, 1, None, False, False, False, True),
    ("C", "gpt3-20b"): (2, 1, None, True, True, False, True),
    ("C", "llama2-7b"): (1, 1, None, False, False, False, True),
    ("C", "llama2-13b"): (1, 4, 10, False, False, True, True),
    ("C", "llama2-70b"): (4, 4, 20, True, True, True, True),
    ("C", "llama3-8b"): (1, 1, None, False, False, False, True),
    ("C", "llama3-70b"): (4, 4, 10, True, True, True, True),
}
YAML = {"gpt3-175b": "gpt3/175b", "gpt3-5b": "gpt3/5b", "gpt3-20b": "gpt3/20b",
        "llama2-7b": "llama/llama2_7b", "llama2-13b": "llama/llama2_13b",
        "llama2-70b": "llama/llama2_70b", "llama3-8b": "llama/llama3_8b", "llama3-70b": "llama/llama3_70b"}


def rows() -> list[dict]:
    out = []
    for gen, line, name, preset, gpus, gbs, mbs, seq, tp, pp, cp, tps in TABLE:
        commit, date, version, container = COMMITS[gen]
        rtp, rpp, rvp, rsp, ub, p2p, te = RECIPE[(gen, preset)]
        t = gbs * seq / (tps * gpus)
        match = (rtp, rpp) == (tp, pp)
        gpt = preset.startswith("gpt3")
        r = {k: "" for k in HEADER}
        r.update(
            id=f"launcher{version.replace('.', '')}-{preset}-{gpus}", model=preset,
            source=(f"NVIDIA/NeMo-Framework-Launcher examples/README.md @ {commit} ({date}), "
                    "'Benchmark performance numbers (pretraining)' ('pre-training performance of "
                    f"various models on DGXH100, with FP8'), row '{name}' (line {line})"),
            seq_length=seq, gpu="h100-sxm-80gb", num_gpus=gpus, gpus_per_node=8, nic_gbps_per_gpu=400,
            tp=tp, pp=pp, cp=cp, ep=1, global_batch_size=gbs, micro_batch_size=mbs, dtype="fp8",
            fp8_recipe="delayed", recompute="none", distributed_optimizer=1, framework="nemo",
            framework_version=version, measured_iteration_s=f"{t:.4f}",
            attention_dropout=0.1 if gpt else 0, hidden_dropout=0.1 if gpt else 0)
        if match:
            if rvp and pp > 1:
                r["vpp"] = rvp
            if tp > 1:
                r["sequence_parallel"] = int(rsp)
            opts = (["tp_overlap"] if ub and tp > 1 else []) + (["pp_overlap"] if p2p and rvp else [])
            r["options"] = ";".join(opts + ["dp_overlap"])
        if gen != "A":
            r["grad_reduce_dtype"] = "bf16"
        r["note"] = (
            f"published {tps} tokens/s/GPU; iteration time = GBS x seq / (tokens/s/GPU x GPUs) = "
            f"{gbs} x {seq} / ({tps} x {gpus}); TP {tp}, PP {pp}, CP {cp}, MBS {mbs}, GBS {gbs} from "
            f"the table; release {version} inferred ({container}); the rest from "
            f"launcher_scripts/conf/training/{YAML[preset]}.yaml @ {commit}"
            + (f" (its TP {rtp}, PP {rpp}, VP {rvp}, sequence_parallel {rsp}, ub_tp_comm_overlap {ub}, "
               f"overlap_p2p_comm {p2p}: the table's layout, so taken)" if match else
               f" (its TP {rtp} / PP {rpp} are not the table's: VP, SP and options left to the tool)")
            + ": distributed_fused_adam with overlap_grad_sync, no activation checkpointing, "
            + ("dropout 0.1" if gpt else "dropout 0")
            + f"; transformer_engine {te} in the recipe, fp8=True from the h100 fp8 example script "
            "(fp8 per the table; TE delayed scaling"
            + (", fp8_hybrid" if not gpt else "")
            + ")"
            + ("; +training.model.optim.grad_sync_dtype=bf16 in the example scripts" if gen != "A" else
               "; gradient reduction dtype not set (left to the profile)")
            + "; config.yaml env NVTE_FUSED_ATTN 0 (cuDNN attention off) and "
            "NVTE_DP_AMAX_REDUCE_INTERVAL 0 (no data-parallel amax reduction); DGX H100 (8 GPUs per "
            "NVLink domain, 400 Gb/s per GPU, inferred)")
        if preset == "gpt3-175b":
            r["note"] += ("; this figure (741) stays unchanged in the table through 24.07, so its "
                          "release is the earliest possible one")
        out.append(r)
    return out


def main() -> None:
    w = csv.DictWriter(sys.stdout, fieldnames=HEADER, lineterminator="\n")
    w.writeheader()
    w.writerows(rows())


if __name__ == "__main__":
    main()
