"""Writes benchmarks/training_nemotronh.csv: NVIDIA/dgxc-benchmarking release v25.05 (68eaf7e117,
2025-06-10), the 'Expected Performance' table of nemotronh/README.md (line 71): Nemotron-H 56B,
FP8, 32 to 2,048 DGX H100 GPUs, weak-scaled (GBS = 3 x GPUs), run by nemotronh/launch.sh with
the NeMo 2.0 performance script ``scripts.performance.llm.pretrain_nemotronh_56b`` in
nvcr.io/nvidia/nemo:25.04.01. Every figure is typed from the README line cited in the row
(``--check`` re-reads it from the mirror); nothing is fitted.

    python benchmarks/dgxc_nemotronh_rows.py > benchmarks/training_nemotronh.csv
    python benchmarks/dgxc_nemotronh_rows.py --check
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows
import nvls_cells
from dgxc2505_rows import FP8, H100, HEADER, OVERLAP, REL, REPO, measured, row

REPO_DIR = "NVIDIA+dgxc-benchmarking"
COMMIT = "68eaf7e117bf16cb018861ce101e8f80925f74d8"
README = "nemotronh/README.md"
LINE = 71
# 'Nemotron-H 56b FP8' table, line 71 (step s) and 72 (tokens/s): GPUs -> (step s, tokens/s)
TABLE = {32: (15.119, 52016), 64: (15.058, 104454), 128: (15.496, 203003), 256: (15.892, 395888),
         512: (15.586, 807321), 1024: (15.678, 1605168), 2048: (15.723, 3201148)}
RUN = ("run by nemotronh/launch.sh (FW_VERSION 25.04.01: TP 8, PP 1, CP 1, MBS 1, GBS = 3 x GPUs, "
       "118 layers, hidden 8192, -ep 1) with scripts.performance.llm.pretrain_nemotronh_56b of "
       "NVIDIA/NeMo 7a8f1cc7bc (setup.sh NEMO_COMMIT; Megatron-LM 7094270c6f): "
       "pretrain_recipe(performance_mode=True) and set_primary_perf_configs; cuda graphs off and "
       "no recompute (no nemotronh row in recommended_model_configs/model_configs_h100.csv)")
# The script, alone among NeMo 7a8f1cc7bc's scripts/performance/llm/*.py, turns cuDNN attention off:
# pretrain_nemotronh_56b.py L135 custom_env_vars {"NVTE_FUSED_ATTN": "0"}, merged over
# slurm_executor's NVTE_FLASH_ATTN / NVTE_FUSED_ATTN = 1 (scripts/performance/utils.py L76-77, L99
# ``env_vars |= custom_env_vars``): Transformer Engine runs its FlashAttention-2 backend (NeMo's
# memory_optimizations.rst, NVIDIA/NeMo#9188: "Flash Attention 2"), the cell grok1's NeMo 1 rows state.
_NEMO = ("NVIDIA+NeMo", "7a8f1cc7bc")
ATTENTION = [("attention flash2", [
    (*_NEMO, "scripts/performance/llm/pretrain_nemotronh_56b.py", 135,
     'custom_env_vars = {"NVTE_FUSED_ATTN": "0", "TRANSFORMERS_OFFLINE": "0"}'),
    (*_NEMO, "scripts/performance/utils.py", 76, '"NVTE_FLASH_ATTN": "1",'),
    (*_NEMO, "scripts/performance/utils.py", 77, '"NVTE_FUSED_ATTN": "1",'),
    (*_NEMO, "scripts/performance/utils.py", 99, "env_vars |= custom_env_vars")])]
TE_LEFT = "; attention backend left to Transformer Engine"  # not here: ATTN_NOTE
ATTN_NOTE = ("attention flash2: pretrain_nemotronh_56b.py L135 sets NVTE_FUSED_ATTN=0 over "
             "slurm_executor's NVTE_FLASH_ATTN=1 / NVTE_FUSED_ATTN=1 (scripts/performance/utils.py "
             "L76-77, L99 env_vars |= custom_env_vars, NVIDIA/NeMo@7a8f1cc7bc): Transformer Engine's "
             "FlashAttention-2 backend, not cuDNN")


def rows() -> list[dict]:
    assert TE_LEFT in OVERLAP
    out = []
    for gpus, (t, tps) in TABLE.items():
        gbs = 3 * gpus
        out.append(row(
            id=f"dgxc2505-nemotron-h-56b-fp8-h100-{gpus}", model="nemotron-h-56b",
            source=(f"{REPO} {README} {REL['v25.05']}, 'Expected Performance' table 'Nemotron-H "
                    f"56b FP8', line {LINE} 'Training step time (seconds per step)'; layout from "
                    "the README's H100 table and nemotronh/launch.sh"),
            seq_length=8192, gpu="h100-sxm-80gb", num_gpus=gpus, gpus_per_node=8,
            nic_gbps_per_gpu=400, tp=8, pp=1, cp=1, ep=1, sequence_parallel=1,
            global_batch_size=gbs, micro_batch_size=1, dtype="fp8",
            options="tp_overlap;dp_overlap", grad_reduce_dtype="bf16", fp8_recipe="delayed",
            attention="flash2", measured_iteration_s=t,
            note=(f"{measured(t, tps, 8192, gbs)}; column '{gpus}x H100 GPUs'; {RUN}; "
                  f"{OVERLAP.replace(TE_LEFT, '')} (whether Transformer Engine's userbuffers "
                  f"serve the Mamba projections is not stated); {ATTN_NOTE}; {FP8}; {H100}")))
    return [nvls_cells.stated(r) for r in out]  # NeMo's slurm_executor NCCL_NVLS_ENABLE=0


def check() -> list[str]:
    """Differences between ``TABLE`` and the README's lines 71-72 at ``COMMIT``."""
    lines = mirror_rows.show(REPO_DIR, COMMIT, README).splitlines()
    steps = [float(x) for x in re.findall(r"\|([\d.]+)", lines[LINE - 1])]
    tokens = [int(x) for x in re.findall(r"\|(\d+)", lines[LINE])]
    want = dict(zip(TABLE, zip(steps, tokens)))
    bad = [f"{g} GPUs: typed {TABLE[g]} != README {want.get(g)}" for g in TABLE
           if want.get(g) != TABLE[g]] + ([] if len(steps) == len(TABLE) else
                                          [f"{len(steps)} columns in the README"])
    return bad + nvls_cells.check("dgxc2505-nemotron-h") + mirror_rows.lines_differ(ATTENTION)


if __name__ == "__main__":
    mirror_rows.main(rows, HEADER, check, "table as in the README")
