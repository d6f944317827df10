"""Writes benchmarks/training_mlperf51_nvfp4.csv: NVIDIA's MLPerf Training v5.1 Llama 3.1 405B
submissions, every one NVFP4 (mlcommons/training_results_v5.1 @ 441d65f444), which
training_mlperf5.csv left out for want of an fp4 recipe (a check file).

    python benchmarks/mlperf51_nvfp4_rows.py > benchmarks/training_mlperf51_nvfp4.csv
    python benchmarks/mlperf51_nvfp4_rows.py --check   # per-run step times against the mirror

Each submission's README names the config it ran (README-<system>.md "source config_..._fp4.sh");
every one sources config_common.sh, then config_common_fp4.sh (FP8=False, FP4=True,
FP4_RECIPE=nvfp4, FP8_PARAM_GATHER=False, TP_COMM_OVERLAP=False, NVTE_NVFP4_DISABLE_RHT=1,
NVTE_NVFP4_DISABLE_STOCHASTIC_ROUNDING=1, NVTE_NVFP4_DISABLE_2D_QUANTIZATION=1: the "vanilla"
NVFP4 recipe, 1x16 blocks for every tensor, no Hadamard transform, round to nearest;
NVTE_DPA_FP8_RECIPE=Float8CurrentScaling, which acts only with fp8 attention on, and custom.yaml's
FP8_DPA stays unset: attention in 16 bits), config_common_405b.sh and config_common_cg.sh
(FULL_CUDA_GRAPH=1, MCORE_CUDA_GRAPH=1). Seconds per global batch: benchmarks/mlperf_step_time.py
'delta' (the per-run figures below, typed from its output on that commit; ``--check`` re-reads
them). Priced with ``fp8_recipe=nvfp4``: the recipe's Hadamard transform, stochastic rounding and
2D weight blocks change no byte count trainsim reads (the transform is fused into the cast).
Nothing here is fitted.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

HEADER = mirror_rows.v2_header()
REPO_DIR = "mlcommons+training_results_v5.1"
REPO = "mlcommons/training_results_v5.1 (commit 441d65f444)"
COMMIT = "441d65f4445cd59687466533fd9f55399136e7a4"  # mlperf_step_time reads the mirror's HEAD, this one
IMPL = "NVIDIA/benchmarks/llama31_405b/implementations"
# (system, config, gpu, nodes, TP, MINIBS, GBS, NIC Gb/s per GPU (system JSON host_networking:
#  4 NICs for 4 GPUs), per-run 'delta' s, the script's median 'delta' / 'step_timing')
RUNS = [
    ("theia_ngpu512_ngc25.09_nemo", "config_GB300_128x4x72xtp2pp8cp2_cg_fp4.sh", "gb300", 128, 2,
     72, 1152, 800, [13.1400, 13.1700, 13.1440], 13.1440, 13.1447),
    ("tyche_ngpu512_ngc25.09_nemo", "config_GB200_128x4x144xtp4pp8cp2_cg_fp4.sh", "gb200", 128, 4,
     144, 1152, 400, [17.2365, 17.3720, 17.2600], 17.2600, 17.2602),
    ("hsg_ngpu2560_ngc25.09_nemo", "config_GB200_640x4x24xtp4pp8cp2_cg_fp4.sh", "gb200", 640, 4,
     24, 960, 400, [3.1940, 3.1900, 3.1790], 3.1900, 3.1901),
    ("hsg_ngpu5120_ngc25.09_nemo", "config_GB200_1280x4x16xtp4pp8cp2_cg_fp4.sh", "gb200", 1280, 4,
     16, 1280, 400, [2.2270, 2.2320, 2.2220], 2.2270, 2.2272),
]
NICS = {800: "4x ConnectX-8 IB XDR 800 Gb/s", 400: "4x ConnectX-7 IB NDR 400 Gb/s"}
ACCEL = {"gb300": "NVIDIA Blackwell Ultra GPU (GB300)", "gb200": "NVIDIA Blackwell GPU (GB200)"}


def rows() -> list[dict]:
    out = []
    for system, config, gpu, nodes, tp, minibs, gbs, nic, runs, t, timing in RUNS:
        assert abs(statistics.median(runs) - t) <= 1.5e-4, system
        gpus = nodes * 4
        dp = gpus // (tp * 8 * 2)
        assert gbs == minibs * dp, system
        r = {k: "" for k in HEADER}
        r.update(
            id=f"mlperf51-nvidia-llama3.1-405b-{gpu}-{gpus}-nvfp4",
            source=f"{REPO} NVIDIA/results/{system}/llama31_405b/result_*.txt + {IMPL}/{system}/{config}",
            model="llama3.1-405b", seq_length=8192, gpu=gpu, num_gpus=gpus, gpus_per_node=64,
            nic_gbps_per_gpu=nic, tp=tp, pp=8, cp=2, vpp=8, sequence_parallel=1, recompute="none",
            distributed_optimizer=1, global_batch_size=gbs, micro_batch_size=1, dtype="fp8",
            options="pp_overlap;dp_overlap;cuda_graphs", framework="mlperf-nemo",
            framework_version="5.1", grad_reduce_dtype="bf16", pipeline_layout="Et|(tt|)*62tL",
            fp8_recipe="nvfp4", measured_iteration_s=f"{t:.4f}")
        r["note"] = (
            f"MLPerf Training v5.1 closed division, submitter NVIDIA, system {system} ({nodes} nodes "
            f"x 4 GPUs, system JSON: '{ACCEL[gpu]}', host_networking '{NICS[nic]}'); seconds per "
            f"global batch = median over the {len(runs)} runs ({t:.4f}) of the per-run median "
            "wall-clock gap between consecutive tracked_stats train_step_time events (gaps "
            "spanning an eval left out): benchmarks/mlperf_step_time.py 'delta' (runs "
            + " ".join(f"{x:.4f}" for x in runs) + f"; train_step_time median {timing:.4f}); log "
            f"GBS {gbs} = MINIBS {minibs} x DP {dp}, seq 8192; config {config} (README-{system}.md "
            f"sources it): TP {tp} PP 8 VPP 8 CP 2, TP_COMM_OVERLAP False, FP4 True FP4_RECIPE nvfp4 "
            "(RHT, stochastic rounding and 2D weight blocks off), FP8_PARAM_GATHER False, FP8_DPA "
            "unset (16-bit attention), FULL_CUDA_GRAPH 1 MCORE_CUDA_GRAPH 1, OVERLAP_GRAD_REDUCE / "
            "OVERLAP_PARAM_GATHER True; ASYM_PP_EMBED / ASYM_PP_LOSS True: 126 layers + embedding "
            "+ loss over PP 8 x VPP 8 -> layout Et|(tt|)*62tL; gpus_per_node 64: the NVLink domain "
            "a job uses in an NVL72 rack, as the file's other GB200 / GB300 rows")
        out.append(r)
    return out


def check() -> list[str]:
    """Per-run 'delta' readings re-read from the mirror's logs, and each README's config."""
    import mlperf_step_time

    repo = str(mirror_rows.mirror(REPO_DIR))
    bad = []
    for system, config, *_rest in RUNS:
        runs, med = mlperf_step_time.submission(repo, f"NVIDIA/results/{system}/llama31_405b")
        got = [round(r["delta"], 4) for _, r in runs]
        want = _rest[-3]
        if got != want or round(med["delta"], 4) != _rest[-2]:
            bad.append(f"{system}: delta {got} (median {med['delta']:.4f}) != {want}")
        readme = mirror_rows.show(REPO_DIR, COMMIT, f"{IMPL}/{system}/README-{system}.md")
        if f"source {config}" not in readme:
            bad.append(f"{system}: README does not source {config}")
        text = mirror_rows.show(REPO_DIR, COMMIT, f"{IMPL}/{system}/{config}")
        if "config_common_fp4.sh" not in text:
            bad.append(f"{system}: {config} does not source config_common_fp4.sh")
    return bad


def main() -> None:
    mirror_rows.main(rows, HEADER, check, "per-run step times and configs as in the mirror")


if __name__ == "__main__":
    main()
