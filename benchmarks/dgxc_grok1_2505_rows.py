"""Writes benchmarks/training_dgxc_grok1_2505.csv: NVIDIA/dgxc-benchmarking's Grok-1 314B recipe
in its NeMo 2 form (``scripts.performance.llm.pretrain_grok1_314b``, nvcr.io/nvidia/nemo:25.04.00),
the 'GB200 Performance' and 'H100 Performance' tables of `grok1/README.md` at release v25.05.02
(dfc8039, 'Revised grok1 h100 performance'; the GB200 figures unchanged since v25.05 68eaf7e),
bf16 and fp8, 128-512 GB200 (TP 4, EP 8, ETP 4) and 512 H100 (TP 4, PP 8, CP 2, EP 8, VP 8),
the full 64 layers. Layouts: the README's configuration tables and the release's
`grok1/launch.sh` (GBS = 2 x GPUs); see training_dgxc_grok1_2505.md.

    python benchmarks/dgxc_grok1_2505_rows.py > benchmarks/training_dgxc_grok1_2505.csv
    python benchmarks/dgxc_grok1_2505_rows.py --check   # tables and launch.sh against the mirror
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows
import nvls_cells
from dgxc2505_rows import FP8, GB200, H100, OVERLAP, REPO
from dgxc_grok1_rows import SHAPE

HEADER = mirror_rows.v2_header(vocab_size=["tied_embeddings"], ep=["etp"],
                               note=["attention_dropout", "hidden_dropout", nvls_cells.COLUMN])
REPO_DIR = "NVIDIA+dgxc-benchmarking"
COMMIT = "dfc8039"
LABEL = "@ dfc8039 (release v25.05.02, committed 2025-07-23)"
README = "grok1/README.md"

# README line -> (gpu, dtype, title, [(GPUs, step s, tokens/s as printed)])
TABLES = {
    84: ("gb200", "bf16", "Grok1 314b BF16", [(128, 7.325, 286300.61), (256, 7.39, 567564.82),
                                               (512, 7.324, 572679.0)]),
    91: ("gb200", "fp8", "Grok1 314b FP8", [(128, 5.298, 395838.43), (256, 5.224, 802891.27),
                                             (512, 5.193, 807684.0)]),
    100: ("h100", "bf16", "Grok1 314b BF16", [(512, 15.933, 526493.0)]),
    107: ("h100", "fp8", "Grok1 314b FP8", [(512, 13.433, 624478.0)]),
}
# gpu -> (tp, pp, cp, ep, etp, vp, cuda graphs): launch.sh's branch, the README's table
LAYOUT = {"gb200": (4, 1, 1, 8, 4, 1, True), "h100": (4, 8, 2, 8, 1, 8, False)}
LAUNCH_PHRASES = ("export FW_VERSION=25.04.00", "GBS=$(( JOB_TOTAL_GPUS * 2 ))",
                  "NUM_LAYERS=${NUM_LAYERS:-64}", "HIDDEN_SIZE=${HIDDEN_SIZE:-6144}",
                  "python -m scripts.performance.llm.pretrain_grok1_314b")
NEMO = ("NVIDIA/NeMo 6f2c6fda (setup.sh NEMO_COMMIT, 'r2.3.0 llmb-nemo'; Megatron-LM 64cb6bd7a1); "
        "scripts/performance/llm/pretrain_grok1_314b.py: MixtralConfig8x7B with 64 layers, "
        "hidden 6144, 48 heads, 8 query groups, ffn 32768, 8 experts (top-2, Mixtral's), "
        "Llama-3-70B tokenizer (vocab 128256), pretrain_recipe(performance_mode=True): "
        "MegatronTokenDropCallback (capacity factor 1.0, padded to capacity), "
        "MegatronCommOverlapCallback(tp_comm_overlap=True), grad_reduce_in_fp32 False; "
        "set_primary_perf_configs with -et as expert_tensor_parallel_size")
BF16 = ("bf16: bf16_mixed with use_precision_aware_optimizer = True (scripts/performance/utils.py "
        "set_primary_perf_configs: the options cell's precision_aware_optimizer) and "
        "grad_reduce_dtype bf16 (pretrain_grok1_314b.py pretrain_performance_optimizations: "
        "grad_reduce_in_fp32 = False)")


def row_id(gpu: str, dtype: str, gpus: int) -> str:
    return f"dgxc2505-grok1-314b-{dtype}-{gpu}-{gpus}"


def _gbs_note(t: float, tps: float, gbs: int) -> str:
    if abs(8192 * gbs / t / tps - 1) < 2e-3:
        return "the table's tokens/s = 8192 x GBS / step time agrees"
    # the 512-GB200 columns print 8192 x 512 / step: half of launch.sh's GBS = 2 x 512 (the
    # MFU cell, 47.6 % / 33.6 %, and the flat weak-scaled step agree with GBS 1024)
    return (f"the table's tokens/s ({tps:.0f}) is 8192 x {round(tps * t / 8192)} / step time, "
            f"not 8192 x GBS {gbs} (launch.sh GBS = 2 x GPUs, the README's layout table and its "
            f"MFU cell agree with GBS {gbs}; the step is flat with the 128 / 256 columns): the "
            "tokens/s cell is read as a slip and the step time kept")


def rows() -> list[dict[str, object]]:
    out = []
    for line, (gpu, dtype, title, cols) in TABLES.items():
        tp, pp, cp, ep, etp, vp, graphs = LAYOUT[gpu]
        for gpus, t, tps in cols:
            gbs = 2 * gpus
            r = {k: "" for k in HEADER}
            r.update(SHAPE)
            opts = ["tp_overlap", "dp_overlap"] + (["pp_overlap"] if vp > 1 else []) + \
                (["cuda_graphs"] if graphs else []) + \
                (["precision_aware_optimizer"] if dtype == "bf16" else [])
            r.update(
                id=row_id(gpu, dtype, gpus), model="mixtral-8x22b", num_layers=64,
                source=(f"{REPO} {README} {LABEL}, '{gpu.upper()} Performance' table "
                        f"'{title}', line {line} 'Training step time (seconds per step)'; "
                        "layout from the README's configuration table and grok1/launch.sh"),
                seq_length=8192, gpu="gb200" if gpu == "gb200" else "h100-sxm-80gb",
                num_gpus=gpus, gpus_per_node=64 if gpu == "gb200" else 8, nic_gbps_per_gpu=400,
                tp=tp, pp=pp, cp=cp, ep=ep, etp=etp, vpp=vp if vp > 1 else "",
                sequence_parallel=1, recompute="none", distributed_optimizer=1,
                global_batch_size=gbs, micro_batch_size=1, dtype=dtype,
                fp8_recipe="delayed" if dtype == "fp8" else "", options=";".join(opts),
                framework="nemo", framework_version="25.04", grad_reduce_dtype="bf16",
                moe_dispatcher="alltoall", moe_capacity_factor="1.0",
                cp_comm_type="p2p" if cp > 1 else "",
                attention_dropout=0, hidden_dropout=0, measured_iteration_s=t,
                note=(f"published {t} s per step (NeMo train_step_timing, the mean of iterations "
                      f"11-44 per the README's 'Expected Performance'); {_gbs_note(t, tps, gbs)}; "
                      f"column '{gpus}x {gpu.upper()} GPUs'; layout TP {tp}, PP {pp}, CP {cp}, "
                      f"EP {ep}, ETP {etp}, VP {vp}, MBS 1, GBS {gbs} = 2 x GPUs (README table, "
                      f"launch.sh {gpu} branch); cuda graphs {'on' if graphs else 'off'} "
                      f"(launch.sh CUDA_GRAPH {'true' if graphs else 'false'}); run by "
                      f"grok1/launch.sh (FW_VERSION 25.04.00) with {NEMO}; {OVERLAP}; "
                      + (FP8 if dtype == "fp8" else BF16)
                      + "; grok1's shape (hidden 6144, 48 heads, 8 KV groups, ffn 32768 per "
                      "expert, 8 experts top-2, vocab 128256, untied) as columns over the "
                      "mixtral-8x22b preset (the same block: gated experts, GQA, rmsnorm, rope); "
                      "alltoall dispatcher (MixtralConfig); "
                      + (GB200 if gpu == "gb200" else H100)))
            out.append(nvls_cells.stated(r))  # NeMo's slurm_executor NCCL_NVLS_ENABLE=0
    return out


def check() -> list[str]:
    """Differences between the typed tables / layouts and the README and launch.sh at COMMIT."""
    text = mirror_rows.show(REPO_DIR, COMMIT, README).splitlines()
    bad = []
    for line, (gpu, _dtype, title, cols) in TABLES.items():
        step, tps = mirror_rows.md_cells(text[line - 1]), mirror_rows.md_cells(text[line])
        head = mirror_rows.md_cells(text[line - 3])
        if head[0] != title or not step[0].startswith("Training step time"):
            bad.append(f"line {line}: {head[0]!r} / {step[0]!r}")
            continue
        for i, (gpus, t, tp_s) in enumerate(cols, start=1):
            if head[i] != f"{gpus}x {gpu.upper()} GPUs" or float(step[i]) != t or \
                    float(tps[i]) != tp_s:
                bad.append(f"line {line} column {i}: {head[i]} {step[i]} {tps[i]}")
    for gpu, (tp, pp, cp, ep, etp, vp, _g) in LAYOUT.items():
        gpus = [g for _l, (gg, _d, _t, cols) in TABLES.items() if gg == gpu for g, *_ in cols]
        for g in sorted(set(gpus)):
            want = f"| {g} | 8192 | 64 | {tp} | {pp} | {cp} | {ep} | {etp} | {g // (tp * pp * cp)} " \
                   f"| {vp} | 1 | {2 * g} |"
            if not any(re.sub(r"\s+", " ", ln).startswith(want) for ln in text):
                bad.append(f"no layout row {want!r}")
    launch = mirror_rows.show(REPO_DIR, COMMIT, "grok1/launch.sh")
    bad += [f"launch.sh lacks {p!r}" for p in LAUNCH_PHRASES if p not in launch]
    for gpu, (tp, pp, cp, ep, etp, vp, graphs) in LAYOUT.items():
        branch = launch.split(f'GPU_TYPE = "{gpu}" ]; then', 1)[1].split("elif", 1)[0]
        for k, v in (("TP", tp), ("PP", pp), ("CP", cp), ("EP", ep), ("ET", etp), ("VP", vp),
                     ("CUDA_GRAPH", str(graphs).lower())):
            if f"{k}=${{{k}:-{v}}}" not in branch:
                bad.append(f"launch.sh {gpu}: {k} is not {v}")
    return bad + nvls_cells.check("dgxc2505-grok1")


if __name__ == "__main__":
    mirror_rows.main(rows, HEADER, check, "tables, layouts and launch.sh as in the mirror")
