"""Writes benchmarks/training_mcore_dsv3_gb200.csv: the DeepSeek-V3 pre-training speeds of
NVIDIA's "Optimizing DeepSeek-V3 Training Performance on NVIDIA GB200 NVL72" (Megatron-LM
docs/discussions, a check file; notes in benchmarks/training_mcore_dsv3_gb200.md).

    python benchmarks/dsv3_gb200_ladder_rows.py > benchmarks/training_mcore_dsv3_gb200.csv
    python benchmarks/dsv3_gb200_ladder_rows.py --check   # the table against the mirror

One workload (256 GB200, TP 1 PP 8 VPP 4 EP 32, MBS 1, GBS 2048, seq 4096, MXFP8, no MTP) measured
after each of 13 optimization steps (the doc's section 3 table, "sorted by time"). Each row is
one published rate; the settings that change along the way (dispatcher, recompute modules,
CUDA graphs) are the row's, the rest (kernel fusions, CPU-side work, DeepEP tuning) are not
columns, so rows that differ only by them carry the same cells. iteration_s = Megatron-LM's
``num_floating_point_operations`` for the global batch (NVIDIA/Megatron-LM@d4194b7448,
2025-11-03, the MLA branch) / (TFLOPS x 1e12 x 256).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

REPO_DIR = "NVIDIA+Megatron-LM"

HEADER = mirror_rows.v2_header(moe_ffn_hidden_size=["mtp_num_layers"], moe_capacity_factor=["cuda_graph_scope"])
REPO = "NVIDIA/Megatron-LM"
DOC = "docs/discussions/deepseek-v3-gb200-optimization/deepseek-v3-gb200-optimization.md"
GUIDE = "docs/discussions/deepseek-v3-gb200-optimization/deepseek-v3-gb200-reproduce-guide.md"
COMMIT = "eb0783b6d3"  # 2025-11-03 '[Dev] Minor updates to the guide (#2103)'; the doc was
# removed two days later (3c1b98efdc, 'Remove DS-V3 doc - draft being updated'); the guide stays
GPUS, GBS, SEQ = 256, 2048, 4096
# The runs used Megatron-LM's dev branch after PR 1917 (the guide, 'Megatron-LM' section), which
# had the partial CUDA-graph scopes moe_router / moe_preprocess (--cuda-graph-scope, section 2.3)
# two months before main (2b343d739f, 2025-12-30): the row names the first release holding them,
# core_v0.16.0 (2026-02-26). A date of 2025-11 selects the 0.14 profile, which refuses the scope
# (first run of this file: 8 of 13 rows refused so, see the md).
VERSION = "0.16"
LAYOUT = "Et|(tt|)*30L"

# (doc line, dispatcher, feature roadmap, TFLOPS/GPU) from section 3's table
TABLE = [
    (212, "AlltoAll", "Baseline", "494.46"),
    (213, "AlltoAll", "Fuse torch.zeros for scaling factor allocation & Permute kernel Optimization", "529.55"),
    (214, "AlltoAll", "Router fusion", "540.00"),
    (215, "DeepEP", "Enable DeepEP (Will switch to HybridEP)", "566.07"),
    (216, "DeepEP", "Remove up\\_proj recompute", "610.71"),
    (217, "DeepEP", "CUDA Graphs", "663.27"),
    (218, "DeepEP", "Tune DeepEP (Will switch to HybridEP)", "691.49"),
    (219, "DeepEP", "CPU-side optimization", "762.12"),
    (220, "DeepEP", "PDL for quantization kernels & Fuse MXFP8 swizzle scaling factor", "797.67"),
    (221, "DeepEP", "CUDA Graphs capture shared expert", "829.93"),
    (222, "HybridEP", "HybridEP", "943.56"),
    (223, "HybridEP", "CPU-side optimization", "956.21"),
    (224, "HybridEP", "Fuse quantization to normalization (cuDNN 9.14)", "970.01"),
]
SLUG = ["baseline", "fused-alloc-permute", "router-fusion", "deepep", "no-upproj-recompute",
        "cuda-graphs", "deepep-tuned", "cpu-opt", "pdl-swizzle", "graphs-shared-expert",
        "hybridep", "hybridep-cpu-opt", "norm-quant-fusion"]

# DeepSeek-V3 as the guide's command sets it (the catalog preset's shape): 61 layers (3 dense),
# hidden 7168, 128 heads, MLA q_lora 1536, kv_lora 512, qk 128 + rope 64, v 128; 256 experts
# top-8 of 2048 plus one shared expert of 2048; vocab 129280 (--make-vocab-size-divisible-by
# 3232: 129280 = 3232 x 40, no padding at TP 1); no --mtp-num-layers (the layout has no 'm').
H, L, HEADS, FFN, MOE_FFN, SHARED, TOPK, DENSE = 7168, 61, 128, 18432, 2048, 2048, 8, 3
Q_LORA, KV_LORA, QK, QK_POS, V_HEAD, VOCAB = 1536, 512, 128, 64, 128, 129280


def megatron_flops_per_sequence(seq: int = SEQ) -> float:
    """Megatron-LM num_floating_point_operations / batch at d4194b7448 (MLA, MoE with dense
    first layers and a shared expert, no MTP)."""
    moe = L - DENSE
    mlp = 12 * L * H * ((FFN * 1.5) * DENSE / L + (MOE_FFN * TOPK * 1.5) * moe / L
                        + (SHARED * 1.5) * moe / L)
    q_term = Q_LORA * (H + HEADS * (QK + QK_POS) + 1)
    attn = 3 * 2 * L * (q_term + KV_LORA * (H + HEADS * (QK + V_HEAD) + 1) + H * QK_POS
                        + HEADS * V_HEAD * H + seq * HEADS * (QK + QK_POS) / 2
                        + seq * HEADS * V_HEAD / 2)
    return seq * (mlp + attn + 3 * 2 * H * VOCAB)


def settings(i: int) -> dict:
    """The cells that change along the ladder (index into TABLE)."""
    disp = {"AlltoAll": "alltoall", "DeepEP": "deepep", "HybridEP": "hybridep"}[TABLE[i][1]]
    graphs = i >= 5  # 'CUDA Graphs' (line 217) on
    return {
        "moe_dispatcher": disp,
        # baseline: --recompute-modules mlp up_proj (section 1; up_proj = mla_up_proj); section
        # 2.2.2 turns the up-projection recompute off once FP8 output-discarding recompute works;
        # the guide's final command: --recompute-modules moe_act mlp
        "recompute_modules": "mla_up_proj;mlp" if i < 4 else "moe_act;mlp",
        # --overlap-grad-reduce --overlap-param-gather in the guide's command; the interleaved
        # sends overlap by default (--no-overlap-p2p-communication is store_false, Megatron-LM
        # arguments.py @ eb0783b6d3 L2674, and not in the command): a stated options cell is
        # the run's whole list (validate.row_settings.stated_options)
        "options": "dp_overlap;pp_overlap;cuda_graphs" if graphs else "dp_overlap;pp_overlap",
        "cuda_graph_scope": "attn;moe_router;moe_preprocess" if graphs else "",
    }


def rows() -> list[dict]:
    out = []
    f = megatron_flops_per_sequence()
    prev: dict | None = None
    for i, (line, disp, step, tf) in enumerate(TABLE):
        s = settings(i)
        t = f * GBS / (float(tf) * 1e12 * GPUS)
        r = {k: "" for k in HEADER}
        r.update(
            id=f"mcore2511-dsv3-gb200-256-{i + 1:02d}-{SLUG[i]}",
            source=f"{REPO} {DOC} @ {COMMIT} (2025-11-03), section 3 table, line {line}",
            model="deepseek-v3", seq_length=SEQ, mtp_num_layers=0, gpu="gb200", num_gpus=GPUS,
            gpus_per_node=32, tp=1, pp=8, cp=1, ep=32, vpp=4, sequence_parallel=0,
            recompute="selective", zero_stage=1, distributed_optimizer=1, global_batch_size=GBS,
            micro_batch_size=1, dtype="fp8", fp8_recipe="mxfp8", framework="megatron-core",
            framework_version=VERSION, pipeline_layout=LAYOUT, measured_iteration_s=f"{t:.4f}",
            **s)
        same = prev is not None and all(prev[k] == s[k] for k in s)
        r["note"] = (
            f"published {tf} TFLOPS/GPU after step '{step.replace(chr(92), '')}' (dispatcher "
            f"{disp}); iteration = Megatron-LM num_floating_point_operations (d4194b7448, MLA "
            f"branch) {f:.4e} per sequence x GBS {GBS} / ({tf} TFLOPS x {GPUS}); "
            + ("the same cells as the row before: the step is not a column (kernel fusion, "
               "CPU-side work or DeepEP tuning), so trainsim prices both alike; " if same else "")
            + "TP1/PP8/VPP4/EP32/MBS1/GBS2048 on 256 GB200 with layout Et|(tt|)*30L (section 1; "
            "no MTP), MXFP8 (--fp8-recipe mxfp8, --fp8-param-gather), BF16 Adam moments "
            "(precision-aware optimizer, fp32 main grads and params: memory only, not expressed), "
            "distributed optimizer with grad/param overlap, interleaved sends overlapped "
            "(Megatron's default: no --no-overlap-p2p-communication in the command), seq 4096, "
            "forced load balancing "
            "(the guide's command); gpus_per_node 32 = the guide's 'every 32 GB200 GPUs (8 "
            "nodes) are in the same NVL domain' (Slurm --segment 8); NIC not stated; framework "
            "version 0.16 = the first Megatron-core release holding the dev-branch features the "
            "guide uses (the moe_router / moe_preprocess graph scopes), the doc dated 2025-11-03"
            + ("; recompute modules moe_act;mlp from this step on are inferred (section 2.2.2 "
               "and the guide's final command; the step list names only the up_proj change)"
               if i == 4 else ""))
        out.append(r)
        prev = s
    return out


def _mirror() -> Path:
    return mirror_rows.mirror(REPO_DIR)


def check() -> list[str]:
    """Differences between the typed table and the mirror's text (empty: none)."""
    text = mirror_rows.show(REPO_DIR, COMMIT, DOC).splitlines()
    bad = []
    for line, disp, step, tf in TABLE:
        cells = [c.strip() for c in text[line - 1].strip().strip("|").split("|")]
        want = ["DeepSeek-V3", "GB200", "MXFP8", disp, step, tf]
        if cells != want:
            bad.append(f"line {line}: {cells} != {want}")
    guide = mirror_rows.show(REPO_DIR, COMMIT, GUIDE)
    for flag in ("--pipeline-model-parallel-size 8", "--expert-model-parallel-size 32",
                 "--micro-batch-size 1", "--global-batch-size 2048", "--seq-length 4096",
                 f'--pipeline-model-parallel-layout "{LAYOUT}"', "--recompute-modules moe_act mlp",
                 "--cuda-graph-scope attn moe_router moe_preprocess", "--fp8-recipe mxfp8",
                 "--moe-flex-dispatcher-backend hybridep", "--moe-router-force-load-balancing",
                 "--make-vocab-size-divisible-by 3232"):
        if flag not in guide:
            bad.append(f"guide: {flag} missing")
    if "--mtp-num-layers" in guide:
        bad.append("guide: sets --mtp-num-layers")
    return bad


def main() -> None:
    mirror_rows.main(rows, HEADER, check, "table and guide as in the mirror")


if __name__ == "__main__":
    main()
