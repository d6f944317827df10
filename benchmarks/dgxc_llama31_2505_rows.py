"""Writes benchmarks/training_dgxc_llama31_2505.csv: NVIDIA/dgxc-benchmarking release v25.05.01
(60d6fd3, 2025-06-18), the 'H100 Performance' tables of `llama3.1/README.md` (lines 104 and
111): Llama 3.1 405B on 512 DGX H100, bf16 and fp8, TP 8, PP 8, CP 2, VP 8, GBS 256, run by
llama3.1/launch.sh with NeMo 2's ``scripts.performance.llm.pretrain_llama31_405b`` in
nvcr.io/nvidia/nemo:25.04.01. training_dgxc.csv holds the same layout measured with the 25.02
container (release v25.04: 19.78 / 12.37 s); this is the release's re-measurement on the newer
stack, the H100 pair training_dgxc2505.csv (GB200 only) leaves out.

    python benchmarks/dgxc_llama31_2505_rows.py > benchmarks/training_dgxc_llama31_2505.csv
    python benchmarks/dgxc_llama31_2505_rows.py --check
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import deferral_cells
import mirror_rows
import nvls_cells
from dgxc2505_rows import FP8, H100, HEADER, OVERLAP, PAO, REPO, measured, row

REPO_DIR = "NVIDIA+dgxc-benchmarking"
# the mirror where deferral_cells.check re-reads the recipe lines of the deferral cells
NEMO_DIR = "NVIDIA+NeMo"
COMMIT = "60d6fd3"
LABEL = "@ 60d6fd3 (release v25.05.01, committed 2025-06-18)"
README = "llama3.1/README.md"
# README line -> (dtype, step s, tokens/s); 512 H100, GBS 256 = GPUs / 2
TABLES = {104: ("bf16", 19.810, 105863), 111: ("fp8", 13.020, 161072)}
LAYOUT_LINE = "| 512  | 8192   | 126    | 0    |  8 | 8  | 2  | NA | NA  | 4  | 8  |  1  | 256 | 32 |"
LAUNCH_PHRASES = ("export FW_VERSION=25.04.01", "DEF_TP=8", "PP=${PP:-8}", "CP=${CP:-2}",
                  "VP=${VP:-8}", "MBS=${MBS:-1}", "GBS=${GBS:-$(( JOB_TOTAL_GPUS / 2))}",
                  "FSDP=${FSDP:-0}", "NUM_LAYERS=${NUM_LAYERS:-126}",
                  "python3 -m scripts.performance.llm.pretrain_llama31_405b")
BF16 = ("bf16: bf16_mixed with use_precision_aware_optimizer = True (scripts/performance/utils.py "
        "set_primary_perf_configs: the options cell's precision_aware_optimizer) and "
        "grad_reduce_dtype bf16 (the llama31_405b recipe's performance mode: "
        "grad_reduce_in_fp32 = False)")


def rows() -> list[dict]:
    out = []
    for line, (dtype, t, tps) in TABLES.items():
        out.append(row(
            id=f"dgxc250501-llama3.1-405b-{dtype}-h100-512", model="llama3.1-405b",
            source=(f"{REPO} {README} {LABEL}, 'H100 Performance' table 'Llama3.1 405b "
                    f"{dtype.upper()}', line {line} 'Training step time (seconds per step)'; "
                    "layout from the README's H100 table and llama3.1/launch.sh"),
            seq_length=8192, gpu="h100-sxm-80gb", num_gpus=512, gpus_per_node=8,
            nic_gbps_per_gpu=400, tp=8, pp=8, cp=2, ep=1, vpp=8, sequence_parallel=1,
            global_batch_size=256, micro_batch_size=1, dtype=dtype,
            options="tp_overlap;pp_overlap;dp_overlap" + (f";{PAO}" if dtype == "bf16" else ""),
            grad_reduce_dtype="bf16", fp8_recipe="delayed" if dtype == "fp8" else "",
            pipeline_layout="Et|(tt|)*62tL", measured_iteration_s=t,
            note=(f"{measured(t, tps, 8192, 256)}; column '512x H100 GPUs'; layout TP 8, PP 8, "
                  "CP 2, VP 8, MBS 1, GBS 256 = GPUs / 2, FSDP 0 (README H100 table; launch.sh "
                  "DEF_TP 8 for h100, -pp/-cp/-vp/-mb/-gb/-fsdp 0/-ep 1, 126 layers); run by "
                  "llama3.1/launch.sh (FW_VERSION 25.04.01): scripts.performance.llm."
                  "pretrain_llama31_405b of NVIDIA/NeMo 6f2c6fda (setup.sh NEMO_COMMIT, r2.3.0 "
                  "llmb-nemo; Megatron-LM 64cb6bd7a1); cuda graphs off (--cuda_graphs not "
                  "passed; NeMo's model_configs_h100.csv has llama31 405b pre_train rows at 1,024 "
                  f"GPUs only), recompute_layers 0; {OVERLAP}; "
                  + (FP8 if dtype == "fp8" else BF16) + "; pipeline layout Et|(tt|)*62tL as "
                  "training_dgxc2505.csv's GB200 rows (the llama31_405b recipe's "
                  "account_for_embedding/loss_in_pipeline_split); " + H100)))
    return [nvls_cells.stated(deferral_cells.stated(r)) for r in out]


def check() -> list[str]:
    """Differences between TABLES / the layout and the README and launch.sh at COMMIT."""
    text = mirror_rows.show(REPO_DIR, COMMIT, README).splitlines()
    bad = []
    for line, (dtype, t, tps) in TABLES.items():
        title = mirror_rows.md_cells(text[line - 3])
        step = mirror_rows.md_cells(text[line - 1])
        got = mirror_rows.md_cells(text[line])
        if title[:2] != [f"Llama3.1 405b {dtype.upper()}", "512x H100 GPUs"] or \
                not step[0].startswith("Training step time") or float(step[1]) != t or \
                float(got[1]) != tps:
            bad.append(f"line {line}: {title[:2]} {step[:2]} {got[:2]}")
    if LAYOUT_LINE not in text:
        bad.append(f"no layout row {LAYOUT_LINE!r}")
    launch = mirror_rows.show(REPO_DIR, COMMIT, "llama3.1/launch.sh")
    bad += [f"launch.sh lacks {p!r}" for p in LAUNCH_PHRASES if p not in launch]
    return bad + deferral_cells.check("dgxc250501-") + nvls_cells.check("dgxc250501-")


if __name__ == "__main__":
    mirror_rows.main(rows, HEADER, check, "tables, layout and launch.sh as in the mirror")
