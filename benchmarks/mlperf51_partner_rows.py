"""Writes benchmarks/training_mlperf51_partners.csv: MLPerf Training v5.1 Llama 3.1 8B runs of
partners on B200 and B300 (mlcommons/training_results_v5.1 @ 441d65f444) that training_mlperf5.csv
left out, kept only where exactly one fp8 config of the submission matches the system's node count
(the others source config_common_fp4.sh or have an fp4 twin; see training_mlperf51_partners.md).
Seconds per global batch: benchmarks/mlperf_step_time.py 'delta' (per-run figures below, typed
from its output on that commit). Usage:
python benchmarks/mlperf51_partner_rows.py > benchmarks/training_mlperf51_partners.csv
"""

from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

HEADER = mirror_rows.v2_header(moe_capacity_factor=["ddp_bucket_size"])
REPO = "mlcommons/training_results_v5.1 (commit 441d65f444)"
# (submitter, system, implementation dir, config, gpu, GPUs, CP, MBS, GBS, cuda graphs,
#  BUCKET_SIZE, system JSON accelerator, per-run 'delta' s, the script's 'delta' / block /
#  step_timing medians over the runs: it takes the median of unrounded per-run figures)
RUNS = [
    ("Dell", "1xXE9780x8B300-SXM-270GB", "Dell/benchmarks/llama31_8b/implementations/nemo",
     "config_XE9780x8B300-SXM-270GB_1x8x2xtp1pp1cp1_8b.sh", "b300-sxm-288gb", 8, 1, 2, 16, True,
     768000000, "NVIDIA Blackwell Ultra GPU (B300-SXM-270GB)",
     [0.5481, 0.5480, 0.5482, 0.5482, 0.5479, 0.5479, 0.5477, 0.5481, 0.5482, 0.5482], 0.5481, 0.5485, 0.5480),
    ("Supermicro", "AS-8126GS-NB3RT", "Supermicro/benchmarks/llama31_8b/implementations/AS-8126GS-NB3RT",
     "config_DGXB200_1x8x2xtp1pp1cp1_8b.sh", "b300-sxm-288gb", 8, 1, 2, 16, False, None,
     "NVIDIA Blackwell Ultra GPU (B300-SXM-270GB)",
     [0.5509, 0.5499, 0.5509, 0.5506, 0.5504, 0.5497, 0.5495, 0.5494, 0.5501, 0.5501], 0.5501, 0.5505, 0.5501),
    ("Dell", "2xXE9685Lx8B200-SXM-180GB", "Dell/benchmarks/llama31_8b/implementations/nemo",
     "config_XE9685Lx8B200-SXM-180GB_2x8x2xtp1pp1cp1.sh", "b200-sxm-180gb", 16, 1, 2, 32, True,
     768000000, "NVIDIA Blackwell GPU (B200-SXM-180GB)",
     [0.5851, 0.5853, 0.5847, 0.5847, 0.5883, 0.5848, 0.5840, 0.5860, 0.5857, 0.5837], 0.5850, 0.5871, 0.5749),
    ("Dell", "2xXE9680Lx8B200-SXM-180GB", "Dell/benchmarks/llama31_8b/implementations/nemo",
     "config_2xXE9680Lx8B200-SXM-180GB_2x8x2xtp1pp1cp1_8b.sh", "b200-sxm-180gb", 16, 1, 2, 32, True,
     768000000, "NVIDIA Blackwell GPU (B200-SXM-180GB)",
     [0.5930, 0.5907, 0.5898, 0.5896, 0.5895, 0.5900, 0.5914, 0.5905, 0.5917, 0.5918], 0.5906, 0.5922, 0.5813),
    ("Oracle", "8xBM.GPU.B200.8", "Oracle/benchmarks/llama31_8b",
     "config_DGXB200_8x8x1xtp1pp1cp2_8b.sh", "b200-sxm-180gb", 64, 2, 1, 32, True, 768000000,
     "NVIDIA Blackwell GPU (B200-SXM-180GB)",
     [0.1913, 0.1900, 0.1901, 0.1903, 0.1901, 0.1902, 0.1913, 0.1901, 0.1899, 0.1903], 0.1902, 0.1910, 0.1900),
    ("Verda", "b200_8x8_ngc25.09", "Verda/benchmarks/llama31_8b/implementations/b200_8x8_ngc25.09",
     "config_DGXB200_8x8x1xtp1pp1cp2_8b.sh", "b200-sxm-180gb", 64, 2, 1, 32, True, None,
     "NVIDIA Blackwell GPU (B200-SXM-180GB)",
     [0.1908, 0.1905, 0.1920, 0.1913, 0.1914, 0.1908, 0.1907, 0.1909, 0.1902, 0.1910], 0.1908, 0.1922, 0.1907),
]


def rows() -> list[dict]:
    out = []
    for (sub, system, impl, config, gpu, gpus, cp, mbs, gbs, graphs, bucket, accel, runs,
         t, block, timing) in RUNS:
        assert abs(statistics.median(runs) - t) <= 1.5e-4, system
        dp = gpus // cp
        assert gbs == mbs * dp, system
        r = {k: "" for k in HEADER}
        r.update(
            id=f"mlperf51-{sub.lower()}-llama3.1-8b-{gpu.split('-')[0]}-{gpus}-{system.split('x')[1][:6].lower()}"
            if sub == "Dell" and gpus == 16 else f"mlperf51-{sub.lower()}-llama3.1-8b-{gpu.split('-')[0]}-{gpus}",
            source=(f"{REPO} {sub}/results/{system}/llama31_8b/result_*.txt + {impl}/{config}"),
            model="llama3-8b", seq_length=8192, gpu=gpu, num_gpus=gpus, gpus_per_node=8, tp=1, pp=1,
            cp=cp, sequence_parallel=0, recompute="none", distributed_optimizer=1,
            global_batch_size=gbs, micro_batch_size=mbs, dtype="fp8",
            options="dp_overlap;cuda_graphs" if graphs else "dp_overlap", framework="mlperf-nemo",
            framework_version="5.1", grad_reduce_dtype="bf16", fp8_recipe="current",
            ddp_bucket_size=bucket or "", measured_iteration_s=f"{t:.4f}")
        r["note"] = (
            f"MLPerf Training v5.1 closed division, submitter {sub}, system {system} ({gpus // 8} nodes "
            f"x 8 GPUs, system JSON {sub}/systems/{system}.json: '{accel}'); seconds per global batch = "
            f"median over the {len(runs)} runs ({t:.4f}) of the per-run median wall-clock gap between consecutive "
            "tracked_stats train_step_time events (one per optimizer step; gaps spanning an eval left "
            "out): benchmarks/mlperf_step_time.py 'delta' (runs " + " ".join(f"{x:.4f}" for x in runs)
            + f"; train_step_time median {timing:.4f}; block method {block:.4f}); log GBS {gbs} = MINIBS "
            f"{mbs} x DP {dp}, seq 8192; config {config} (the submission's only fp8 config for "
            f"{gpus // 8} node(s) of 8; it sources config_common.sh, config_common_8b.sh and "
            "config_common_cg.sh, not config_common_fp4.sh nor config_common_fp8attn.sh): TP 1 PP 1 "
            f"CP {cp}, SEQ_PARALLEL False, TP_COMM_OVERLAP False, FP8 True FP8_HYBRID True FP8_RECIPE "
            "tensorwise, FP8_DPA unset, FP8_PARAM_GATHER True, OVERLAP_GRAD_REDUCE / "
            "OVERLAP_PARAM_GATHER True, "
            + ("FULL_CUDA_GRAPH 1 MCORE_CUDA_GRAPH 1" if graphs else
               "FULL_CUDA_GRAPH 0 MCORE_CUDA_GRAPH 0 (the config overrides config_common_cg.sh)")
            + (f", BUCKET_SIZE {bucket} (config_common_8b.sh)" if bucket else
               ", BUCKET_SIZE unset (custom.yaml's 134217728, the profile's default)")
            + "; Llama 3.1 8B (OVERWRITTEN_NUM_LAYERS=32) has Llama 3 8B's shape: preset llama3-8b; "
            "the inter-node network is not stated per GPU in the system JSON (NIC left empty)"
            + ("; catalog b300-sxm-288gb for the B300 the submission names B300-SXM-270GB"
               if gpu.startswith("b300") else ""))
        out.append(r)
    return out


def main() -> None:
    w = csv.DictWriter(sys.stdout, fieldnames=HEADER, lineterminator="\n")
    w.writeheader()
    w.writerows(rows())


if __name__ == "__main__":
    main()
