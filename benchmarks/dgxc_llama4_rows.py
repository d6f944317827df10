"""Writes benchmarks/training_dgxc_llama4.csv: NVIDIA/dgxc-benchmarking release v25.05 (68eaf7e117,
2025-06-10), the 'Expected Performance' tables of `llama4/README.md`: Llama 4 Maverick (400B, 128
experts top-1 on every second layer, a shared expert), bf16 and fp8, 128-512 GB200 (TP 1, PP 2,
VP 12, EP 64, weak-scaled GBS = 8 x GPUs) and 512 H100 (TP 4, EP 128, ETP 4, GBS 1024), run by
`llama4/launch.sh` with NeMo 2's ``scripts.performance.llm.pretrain_llama4_e128`` in
nvcr.io/nvidia/nemo:25.04.01. Model: the llama4-maverick preset. See training_dgxc_llama4.md.

    python benchmarks/dgxc_llama4_rows.py > benchmarks/training_dgxc_llama4.csv
    python benchmarks/dgxc_llama4_rows.py --check   # tables, layouts and launch.sh vs the mirror
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows
import nvls_cells
from dgxc2505_rows import FP8, GB200, H100, OVERLAP, REL, REPO, measured

HEADER = mirror_rows.v2_header(ep=["etp"], note=["attention_dropout", "hidden_dropout",
                                                  nvls_cells.COLUMN])
REPO_DIR = "NVIDIA+dgxc-benchmarking"
COMMIT = "68eaf7e117bf16cb018861ce101e8f80925f74d8"
README = "llama4/README.md"
# the configuration tables as v25.05.01 corrected them (Layers 32 -> 48; every other cell and the
# performance tables unchanged): launch.sh passes no --num_layers, so the recipe's 48 layers ran
LAYOUT_COMMIT = "60d6fd3"

# README line of the step times -> (gpu, dtype, title, [(GPUs, step s, tokens/s)])
TABLES = {
    71: ("gb200", "bf16", "LLAMA4 maverick 400b BF16",
         [(128, 7.781, 1077749), (256, 7.859, 2135388), (512, 7.992, 4197507)]),
    78: ("gb200", "fp8", "LLAMA4 maverick 400b FP8",
         [(128, 6.093, 1376867), (256, 6.223, 2695569), (512, 6.327, 5306935)]),
    92: ("h100", "bf16", "LLAMA4 Maverick 400b BF16", [(512, 4.426, 1895847)]),
    99: ("h100", "fp8", "LLAMA4 Maverick 400b FP8", [(512, 3.855, 2176574)]),
}
# gpu -> (tp, pp, ep, etp, vp as launch.sh passes it): launch.sh's branch
LAYOUT = {"gb200": (1, 2, 64, 1, 12), "h100": (4, 1, 128, 4, 1)}
# the README's configuration tables: GPUs -> GBS (GB200 weak-scaled; launch.sh's default 1024
# is the 128-GPU one, and each column's tokens/s is 8192 x this GBS / step time)
GBS = {("gb200", 128): 1024, ("gb200", 256): 2048, ("gb200", 512): 4096, ("h100", 512): 1024}
LAUNCH_PHRASES = ("export FW_VERSION=25.04.01", 'SCRIPT_NAME="scripts.performance.llm.pretrain_llama4_e128"')
NEMO = ("NVIDIA/NeMo 7a8f1cc7bc (setup.sh NEMO_COMMIT; Megatron-LM 7094270c6f): "
        "recipes/llama4_e128.py pretrain_recipe(performance_mode=True) L238-251: "
        "MegatronCommOverlapCallback(tp_comm_overlap=True), MegatronTokenDropCallback (capacity "
        "factor 1.0, padded to capacity), grad_reduce_in_fp32 False; gpt/model/llama.py "
        "Llama4Config / Llama4Experts128Config: vocab 25256 x 8 = 202048, grouped GEMM, alltoall "
        "dispatcher, sigmoid top-1 router, shared expert 8192 with moe_shared_expert_overlap, "
        "NoPE every 4th layer, attention_chunk_size 8192 (= the sequence: no chunk boundary "
        "inside it), moe_layer_freq [0, 1] x 24, qk_l2_norm False; pretrain_llama4_e128.py L89-99: "
        "the Maverick HF tokenizer, TE cross-entropy fusion, RoPE and permute fusion; "
        "set_primary_perf_configs (scripts/performance/utils.py) with -et as "
        "expert_tensor_parallel_size")
BF16 = ("bf16: bf16_mixed with use_precision_aware_optimizer = True (scripts/performance/utils.py "
        "set_primary_perf_configs: the options cell's precision_aware_optimizer), grad_reduce_dtype "
        "bf16 (the recipe's performance mode)")


def rows() -> list[dict[str, object]]:
    out = []
    for line, (gpu, dtype, title, cols) in TABLES.items():
        tp, pp, ep, etp, vp = LAYOUT[gpu]
        graphs = gpu == "h100" and dtype == "fp8"
        for gpus, t, tps in cols:
            gbs = GBS[(gpu, gpus)]
            opts = (["tp_overlap"] if tp > 1 else []) + ["dp_overlap", "shared_expert_overlap"] + \
                (["pp_overlap"] if vp > 1 else []) + (["cuda_graphs"] if graphs else []) + \
                (["precision_aware_optimizer"] if dtype == "bf16" else [])
            r = {k: "" for k in HEADER}
            r.update(
                id=f"dgxc2505-llama4-maverick-{dtype}-{gpu}-{gpus}", model="llama4-maverick",
                source=(f"{REPO} {README} {REL['v25.05']}, 'Expected Performance' table "
                        f"'{title}', line {line} 'Training step time (seconds per step)'; layout "
                        "from the README's configuration table and llama4/launch.sh"),
                seq_length=8192, gpu="gb200" if gpu == "gb200" else "h100-sxm-80gb",
                num_gpus=gpus, gpus_per_node=64 if gpu == "gb200" else 8, nic_gbps_per_gpu=400,
                tp=tp, pp=pp, cp=1, ep=ep, etp=etp, vpp=vp if vp > 1 else "",
                sequence_parallel=1 if tp > 1 else 0, recompute="none", distributed_optimizer=1,
                global_batch_size=gbs, micro_batch_size=1, dtype=dtype,
                fp8_recipe="delayed" if dtype == "fp8" else "", options=";".join(opts),
                framework="nemo", framework_version="25.04", grad_reduce_dtype="bf16",
                moe_dispatcher="alltoall", moe_capacity_factor="1.0",
                attention_dropout=0, hidden_dropout=0, measured_iteration_s=t,
                note=(f"{measured(t, tps, 8192, gbs)}; column '{gpus}x {gpu.upper()} GPUs'; "
                      f"layout TP {tp}, PP {pp}, CP 1, EP {ep}, ETP {etp}, VP {vp}, MBS 1, GBS "
                      f"{gbs}, 48 layers (README table as v25.05.01 60d6fd3 corrected its Layers "
                      "cell from 32; launch.sh passes no --num_layers; launch.sh "
                      f"{gpu} branch -tp/-pp/-ep/-et/-vp"
                      + ("; the README's H100 table says VP 12, launch.sh passes VP 1 with PP 1"
                         if gpu == "h100" else "") + f"); cuda graphs {'on' if graphs else 'off'} "
                      "(launch.sh: true for fp8 on H100 only; the README: 'The FP8 Precision Run "
                      f"on H100 was run with CUDA Graphs enabled'); run by llama4/launch.sh with "
                      f"{NEMO}; {OVERLAP}; " + (FP8 if dtype == "fp8" else BF16) + "; "
                      + (GB200 if gpu == "gb200" else H100)))
            out.append(nvls_cells.stated(r))  # NeMo's slurm_executor NCCL_NVLS_ENABLE=0
    return out


def check() -> list[str]:
    """Differences between the typed tables / layouts and the README and launch.sh at COMMIT."""
    text = mirror_rows.show(REPO_DIR, COMMIT, README).splitlines()
    bad = []
    for line, (gpu, _dtype, title, cols) in TABLES.items():
        head, step, tps = (mirror_rows.md_cells(text[line - k]) for k in (3, 1, 0))
        if head[0] != title or not step[0].startswith("Training step time"):
            bad.append(f"line {line}: {head[0]!r} / {step[0]!r}")
            continue
        for i, (gpus, t, tp_s) in enumerate(cols, start=1):
            if head[i] != f"{gpus}x {gpu.upper()} GPUs" or float(step[i]) != t or \
                    float(tps[i]) != tp_s:
                bad.append(f"line {line} column {i}: {head[i]} {step[i]} {tps[i]}")
    table = [ln for ln in mirror_rows.show(REPO_DIR, LAYOUT_COMMIT, README).splitlines()
             if ln.startswith("| 400b")]
    for (gpu, gpus), gbs in GBS.items():
        tp, pp, ep, etp, vp = LAYOUT[gpu]
        cells = ["400b", "BF16/FP8", str(gpus), "8192", "48", str(tp), str(pp), "1", str(ep),
                 str(gpus // (tp * pp)), str(12), str(etp), "1", str(gbs)]
        if not any(mirror_rows.md_cells(ln)[:14] == cells for ln in table):
            bad.append(f"no layout row {cells}")
    launch = mirror_rows.show(REPO_DIR, COMMIT, "llama4/launch.sh")
    bad += [f"launch.sh lacks {p!r}" for p in LAUNCH_PHRASES if p not in launch]
    for gpu, (tp, pp, ep, etp, vp) in LAYOUT.items():
        branch = launch.split(f'GPU_TYPE = "{gpu}" ]; then', 1)[1].split("else", 1)[0]
        for k, v in (("TP", tp), ("PP", pp), ("CP", 1), ("EP", ep), ("ETP", etp), ("VP", vp),
                     ("MBS", 1)):
            if f"{k}=${{{k}:-{v}}}" not in branch:
                bad.append(f"launch.sh {gpu}: {k} is not {v}")
    return bad + nvls_cells.check("dgxc2505-llama4")


if __name__ == "__main__":
    mirror_rows.main(rows, HEADER, check, "tables, layouts and launch.sh as in the mirror")
