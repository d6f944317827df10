"""Writes benchmarks/training_moe_modelzoo.csv: Qwen3-235B-A22B pre-training speeds that NVIDIA's
Megatron-core MoE team published in yanring/Megatron-MoE-ModelZoo (a check file; notes in
benchmarks/training_moe_modelzoo.md).

    python benchmarks/moe_modelzoo_rows.py > benchmarks/training_moe_modelzoo.csv
    python benchmarks/moe_modelzoo_rows.py --check   # the tables below against the mirror

The table cells are typed below from the readme at the commits named; ``--check`` re-reads them
from the repository mirror (``$TRAINSIM_MIRRORS``, default /work/.mirror) and fails on any
difference, and checks every row's launch command against the run script it cites. Two kinds
of rows:

* H100 at 4,096 tokens: the readme gives the step time; the row's time is that.
* the rest give only "TFLOPS" per GPU: Megatron-LM's own count
  (megatron/training/training.py ``num_floating_point_operations``, NVIDIA/Megatron-LM@0e19bf11f7
  2026-03-10 and @ba21b691df 2025-11-03, the same count for a GQA MoE model without MTP);
  iteration_s = that count for the global batch / (TFLOPS x 1e12 x GPUs). The count is
  checked against the H100 rows that give both (19.7 s <-> 245, 17.6 s <-> 276, ...).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

REPO_DIR = "yanring+Megatron-MoE-ModelZoo"

HEADER = mirror_rows.v2_header(ep=["etp"], moe_capacity_factor=["cuda_graph_scope"],
                               note=["gradient_accumulation_fusion"])
REPO = "yanring/Megatron-MoE-ModelZoo"
README = "best_practice/qwen3/readme.md"
C_H100 = "798dfb5"  # 2026-05-13, the readme's last change; the H100 tables as first set at 8017e11 / b0b92ff
C_GB = {"798dfb5": "2026-05-13", "020b813": "2026-03-10"}
# GB rows of 798dfb5 already published at 020b813 (the long-context one labelled GB300 there):
# dated, and named, by their first publication
FIRST_SEEN = {62: "2026-03-10", 64: "2026-03-10"}

# Qwen3-235B-A22B as the zoo's model_configs/benchmarking/Qwen3-235B-A22B.yaml sets it (every
# commit used): 94 layers, hidden 4096, 64 heads of 128, 4 query groups, 128 experts top-8 of
# 1536, vocab 151936 (--make-vocab-size-divisible-by 1187: 151936 = 1187 x 128, so the padded
# vocabulary is 151936 at TP 1, 2 and 4), SwiGLU, untied embeddings.
L, H, HEADS, GROUPS, KV, MOE_FFN, TOPK, VOCAB = 94, 4096, 64, 4, 128, 1536, 8, 151936
EXPERTS = 128


def megatron_flops_per_sequence(seq: int) -> float:
    """Megatron-LM's num_floating_point_operations / batch for this model (0e19bf11f7 form):
    3 x 2 x s x [h (moe_ffn k 3) L + L (h (q + k + v) + q s/2 x 2 + q h) + h V]."""
    q, kv = KV * HEADS, KV * GROUPS
    mlp = H * (MOE_FFN * TOPK * 3) * L
    attn = L * (H * (q + 2 * kv) + q * seq / 2 * 2 + q * H)
    return 3 * 2 * seq * (mlp + attn + H * VOCAB)


NIC_BPS = 50e9
"""Bytes/s a GPU's network port moves each way: the H100 table's setup line, "InfiniBand 8x50
GB/s" (eight 400 Gb/s ports a node of eight GPUs)."""
FSDP_BYTES_PER_ELEMENT = 2 + 2 + 4
"""What Megatron-FSDP (``--use-custom-fsdp --data-parallel-sharding-strategy optim_grads_params``)
moves per parameter element every micro-batch, at the table's pin (NVIDIA/Megatron-LM@1e057005
megatron/core/distributed/custom_fsdp/fully_sharded_data_parallel.py
``_register_fsdp_hooks``): a 16-bit all-gather before the unit's forward
(``_pre_forward_param_unshard``), released after it (``_post_forward``), a second one before the
backward, where the full recompute re-runs the forward (``_pre_forward_param_unshard`` in
``PRE_BACKWARD`` state, ``_pre_backward``; transformer_block.py ``_checkpointed_forward`` calls
each layer's module under ``tensor_parallel.checkpoint``), and a reduce-scatter of the gradient
after every backward (``_post_backward``: ``grad_reduce_every_bprop`` for optim_grads_params,
whatever ``no_sync`` says), in fp32 (megatron/training/arguments.py: bf16 turns
``accumulate_allreduce_grads_in_fp32`` on unless --grad-reduce-in-bf16; param_and_grad_buffer.py
sizes the main-grad buffer fp32 under ``grad_reduce_in_fp32``). Experts over their expert
data-parallel group (``expt_dp_group``), the rest over the data-parallel group."""


def fsdp_nic_floor_s(tp: int, ep: int, ga: int, gpus: int = 256, per_node: int = 8) -> float:
    """Seconds one step's Megatron-FSDP traffic needs at the network's line rate
    (``NIC_BPS``, ``FSDP_BYTES_PER_ELEMENT``), with expert TP 1 (the yaml's
    --expert-tensor-parallel-size 1) and no compute at all: a floor no run of that layout can
    beat. Expert data parallelism spans one GPU a node (EP innermost in Megatron's expert rank
    order, tp-ep-dp), so every ring step of its all-gathers and reduce-scatters leaves the node:
    (n - 1) / n of the gathered bytes a GPU. The dense data-parallel rings (tp of them through
    each node) leave a node once each: (n - 1) / n of the gathered bytes a node, tp cancelling
    the 1 / tp shard. Summed over the node's ports."""
    edp = gpus // ep
    experts = EXPERTS // ep * 3 * H * MOE_FFN * L
    dp = gpus // tp
    q, kv = KV * HEADS, KV * GROUPS
    dense = L * (H * (q + 2 * kv) + q * H + H * EXPERTS) + 2 * VOCAB * H
    node = per_node * (edp - 1) / edp * experts + (dp - 1) / dp * dense
    return ga * FSDP_BYTES_PER_ELEMENT * node / (per_node * NIC_BPS)


# Pipeline layouts: the yaml sets --account-for-embedding-in-pipeline-split and
# --account-for-loss-in-pipeline-split; sbatch_benchmarking.sh's runtime table gives 96 "layers"
# (94 + embedding + loss) and LAYERS_PER_VP = 96 / PP / VPP, so each virtual stage holds
# 96 / (PP x VPP) slots, the embedding the first slot and the loss the last.
def layout(pp: int, vpp: int) -> str:
    per = 96 // (pp * vpp)
    if pp == 1:
        return ""
    assert per * pp * vpp == 96

    def ts(n: int) -> str:
        return "t" * n if n <= 3 else f"t*{n}"
    mid = pp * vpp - 2
    first, last = "E" + ts(per - 1), ts(per - 1) + "L"
    body = f"({ts(per)}|)*{mid}" if per > 1 else f"(t|)*{mid}"
    return f"{first}|{body}{last}"


# H100, 4,096 tokens: readme @798dfb5 (table unchanged since 8017e11, 2025-05-27) 'Performance
# Results / H100', 256 H100, "InfiniBand 8x50 GB/s". Cells: (readme line, dispatcher, TP, CP,
# EP, PP, EDP, ETP, VPP, DP, FSDP, MBS, GBS, GA, recompute, step s, per-GPU TF, notes, code).
H100_TABLE = [
    (14, "DeepEP", 2, 1, 32, 8, 1, 1, 4, 16, "/", 1, 2048, 128, "norm, act", 19.7, 245, "",
     "moe_dev(f3e6c5)"),
    (15, "DeepEP", 2, 1, 32, 8, 1, 1, 4, 16, "/", 1, 2048, 128, "norm, act", 17.6, 276,
     "+1f1b overlap", "moe_dev(f3e6c5)"),
    (17, "DeepEP", 2, 1, 8, 1, 32, 1, 1, 128, "On", 4, 2048, 4, "full", 17.6, 276,
     "disable log para norm", "main(1e057005)"),
    (18, "A2A", 2, 1, 8, 32, 1, 1, 3, 4, "/", 1, 2048, 512, "norm, act", 24.2, 200, "",
     "main(1e057005)"),
    (19, "DeepEP", 4, 1, 8, 8, 4, 1, 4, 8, "/", 1, 2048, 256, "", 29.0, 167, "",
     "main(1e057005)"),
]
# the launch line of each H100 row in examples/qwen3/run_235b.sh @8017e11 (the commit that
# published the table): what the readme's columns do not say
H100_COMMANDS = {
    14: "TP=2 PP=8 VPP=4 EP=32 NNODES=32 GBS=2048 bash ./sbatch_benchmarking.sh --recompute-granularity selective --recompute-modules moe_act layernorm --moe-router-force-load-balancing",
    15: "TP=2 PP=8 VPP=4 EP=32 NNODES=32 GBS=2048 bash ./sbatch_benchmarking.sh --recompute-granularity selective --recompute-modules moe_act layernorm --combined-1f1b --combined-1f1b-recipe ep_a2a --moe-router-force-load-balancing",
    17: "TP=1 PP=1 VPP=1 EP=8 NNODES=32 GBS=2048 MBS=4 bash ./sbatch_benchmarking.sh --recompute-granularity full --recompute-method uniform --recompute-num-layers 1 --moe-router-force-load-balancing --use-custom-fsdp --data-parallel-sharding-strategy optim_grads_params --no-gradient-accumulation-fusion --init-model-with-meta-device",
    18: "TP=2 PP=32 VPP=3 EP=8 NNODES=32 GBS=2048 bash ./sbatch_benchmarking.sh --recompute-granularity selective --recompute-modules moe_act layernorm --moe-router-force-load-balancing",
    19: "TP=4 PP=8 VPP=4 EP=8 NNODES=32 GBS=2048 bash ./sbatch_benchmarking.sh --moe-router-force-load-balancing --moe-router-aux-loss-fusion",
}
# H100 long context: readme @798dfb5 (unchanged since b0b92ff, 2025-11-04) 'Long Context',
# Qwen3-235B-A22B, DeepEP, bf16, PP 8 VPP 4 EP 8 (its command), 32 nodes of 8:
# (line, seq, nodes, TP, CP, GBS, TFLOPS forced balance, TFLOPS dropless)
LONG_TABLE = [
    (35, 16384, 32, 4, 1, 256, 295, 237),
    (36, 32768, 32, 4, 2, 256, 335, 277),
    (37, 65536, 32, 4, 4, 256, 368, 320),
    (38, 131072, 32, 4, 8, 256, 389, 357),
]
LONG_COMMAND = ("NNODES=${NNODES} OPTIMIZER_OFFLOAD=0 A2A_OVERLAP=0 MODEL=Qwen3-235B-A22B PP=8 VPP=4 "
                "TP=${TP} EP=8 CP=${CP} GBS=${GBS} SEQ_LEN=${SEQ_LEN} PR=bf16 bash "
                "sbatch_benchmarking.sh --recompute-granularity selective --recompute-modules "
                "layernorm moe")
# GB200 / GB300 NVL72 (4 GPUs a node): (commit, line, gpu, seq, nodes, precision, TP, PP, VPP,
# CP, EP, MBS, GBS, TFLOPS, notes, the row's command in the readme at that commit)
GB_TABLE = [
    ("798dfb5", 62, "GB200", 4096, 64, "BF16", 1, 8, 1, 1, 8, 1, 8192, 750, "",
     "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True NCCL_GRAPH_REGISTER=0 DISPATCHER=hybridep SEGMENT=2 PR=bf16 A2A_OVERLAP=0 TP=1 PP=8 VPP=1 EP=8 NNODES=64 MBS=1 GBS=8192 bash ./sbatch_benchmarking.sh --moe-router-force-load-balancing --cuda-graph-impl transformer_engine --cuda-graph-scope attn moe_router moe_preprocess"),
    ("798dfb5", 63, "GB200", 4096, 64, "MXFP8", 1, 4, 6, 1, 64, 3, 3072, 919,
     "activation offloading required",
     "PR=mxfp8 MBS=3 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True NCCL_GRAPH_REGISTER=0 DISPATCHER=hybridep A2A_OVERLAP=1 TP=1 PP=4 VPP=6 EP=64 SEGMENT=16 NNODES=64 GBS=3072 bash ./sbatch_benchmarking.sh --recompute-granularity selective --recompute-modules moe_act layernorm --moe-router-force-load-balancing --cuda-graph-impl transformer_engine --cuda-graph-scope attn moe_router moe_preprocess --fine-grained-activation-offloading --offload-modules expert_fc1 moe_act --delay-offload-until-cuda-graph --use-separate-send-recv-groups"),
    ("798dfb5", 64, "GB200", 131072, 32, "MXFP8", 4, 4, 12, 4, 32, 1, 1024, 1150, "long context",
     "PR=mxfp8 SEQ_LEN=131072 CP=4 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True NCCL_GRAPH_REGISTER=0 DISPATCHER=hybridep SEGMENT=8 A2A_OVERLAP=0 TP=4 PP=4 VPP=12 EP=32 NNODES=32 MBS=1 GBS=1024 bash ./sbatch_benchmarking.sh --recompute-granularity selective --recompute-modules moe_act layernorm --moe-router-force-load-balancing"),
    ("798dfb5", 98, "GB300", 4096, 16, "MXFP8", 1, 1, 1, 1, 64, 1, 8192, 1055, "",
     "PR=mxfp8 MBS=1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True NCCL_GRAPH_REGISTER=0 DISPATCHER=hybridep SEGMENT=16 A2A_OVERLAP=1 TP=1 PP=1 VPP=1 EP=64 NNODES=16 GBS=8192 bash ./sbatch_benchmarking.sh --moe-router-force-load-balancing --cuda-graph-impl transformer_engine --cuda-graph-scope attn moe_router moe_preprocess"),
    ("020b813", 91, "GB300", 4096, 64, "MXFP8", 1, 4, 1, 1, 32, 2, 8192, 974, "",
     "PR=mxfp8 MBS=2 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True NCCL_GRAPH_REGISTER=0 DISPATCHER=hybridep SEGMENT=8 A2A_OVERLAP=0 TP=1 PP=4 VPP=1 EP=32 NNODES=64 GBS=8192 bash ./sbatch_benchmarking.sh --moe-router-force-load-balancing --cuda-graph-impl transformer_engine --cuda-graph-scope attn moe_router moe_preprocess"),
]
# expert TP: the model yaml every command reads (sbatch_benchmarking.sh MODEL=Qwen3-235B-A22B)
# states --expert-tensor-parallel-size 1 at each commit the rows cite (readme column ETP 1 for
# the H100 4k table; no ETP column in the long-context and GB tables): (commit, yaml line)
YAML = "model_configs/benchmarking/Qwen3-235B-A22B.yaml"
ETP_LINES = {"8017e11": 21, "b0b92ff": 21, "798dfb5": 22, "020b813": 22}
ETP_CELL = "  --expert-tensor-parallel-size: 1"
ETP_NOTE = ("; etp 1: {yaml} @{commit} L{line} '--expert-tensor-parallel-size: 1' (Megatron-LM's "
            "own default would be TP)")


def _etp_note(commit: str) -> str:
    return ETP_NOTE.format(yaml=YAML, commit=commit, line=ETP_LINES[commit])


# rows of those tables not in the CSV, with why (also in training_moe_modelzoo.md)
LEFT_OUT = {
    "H100 Next-80B-A3B (line 20)": "Qwen3-Next: gated DeltaNet linear-attention layers "
    "(3 in 4) and gated attention; no catalog shape or linear-attention mechanism in trainsim",
    "H100 long context, 'dropless' figures (lines 35-38)": "routing by the learned router under "
    "the aux loss: the busiest expert's load is not stated and trainsim has no input for it; "
    "the 'forced balance' figure of the same run is the row",
    "GB200 MXFP8 GBS 3072 (line 63)": "fine-grained activation offloading of expert_fc1 and "
    "moe_act to host memory (--fine-grained-activation-offloading, Megatron-LM PR 3219, "
    "TransformerEngine PR 2716, 'activation offloading required'): no such mechanism in trainsim "
    "(cpu_offloading_num_layers offloads whole layers); priced without it the row would be "
    "another run",
    "GB300 MXFP8 long context @020b813 (line 92)": "the same row as GB200 long context @798dfb5 "
    "(the 2026-05-13 commit moved its command from run_gb300_235b.sh to run_gb200_235b.sh and "
    "relabelled it GB200): one row, as GB200",
}


NO_FUSION_FLAG = "--no-gradient-accumulation-fusion"
NO_FUSION_NOTE = (
    "; gradient_accumulation_fusion 0: the command's --no-gradient-accumulation-fusion "
    "(run_235b.sh @8017e11 L37; Megatron-LM 1e057005 megatron/training/arguments.py L1856, "
    "store_false): the weight-gradient GEMMs write param.grad and Megatron-FSDP's post-backward "
    "hook copies it into the main_grad bucket (custom_fsdp/fully_sharded_data_parallel.py "
    "_grad_acc L343-375, main_grad.copy_ under optim_grads_params)")
"""What the FSDP row's command states (no other command, sbatch script or yaml here names the
fusion, so the other rows keep Megatron-LM's default, fused: an empty cell)."""


def _recompute(cell: str) -> tuple[str, str]:
    return {"norm, act": ("selective", "layernorm;moe_act"), "full": ("full", ""),
            "": ("none", "")}[cell]


PP_OVERLAP = ("; options pp_overlap: Megatron-LM overlaps an interleaved pipeline's sends by default "
              "(--no-overlap-p2p-communication, store_false at 1e057005 L2182, ba21b691df L2603 "
              "and 0e19bf11f7 L2545, is in no command, sbatch script or yaml here at 8017e11, "
              "b0b92ff or 798dfb5); a stated options cell is the run's whole list")


def _pp_overlap(pp: int, vpp: int) -> list[str]:
    """The option Megatron's interleaved schedule runs unless told not to (none here is)."""
    return ["pp_overlap"] if pp > 1 and vpp > 1 else []


def h100_rows() -> list[dict]:
    out = []
    for (line, disp, tp, cp, ep, pp, edp, etp, vpp, dp, fsdp, mbs, gbs, ga, rc, step, tf, notes,
         code) in H100_TABLE:
        assert tp * cp * pp * dp == 256 and ep * edp * etp * pp == 256, line
        assert gbs == dp * mbs * ga, line
        line_tp, line_dp, line_ga = tp, dp, ga
        cmd = H100_COMMANDS[line]
        ran_tp = int(re.search(r"\bTP=(\d+)", cmd).group(1))
        contradicted = ran_tp != tp
        if contradicted:  # the FSDP row: see the note and fsdp_nic_floor_s
            tp, dp = ran_tp, 256 // (ran_tp * cp * pp)
            ga = gbs // (dp * mbs)
            floors = (fsdp_nic_floor_s(line_tp, ep, line_ga), fsdp_nic_floor_s(tp, ep, ga))
            assert floors[0] > step >= floors[1], (line, floors)
        recompute, modules = _recompute(rc)
        unfused = NO_FUSION_FLAG in cmd
        opts = ["dp_overlap"] + _pp_overlap(pp, vpp) + \
            (["ep_overlap"] if notes == "+1f1b overlap" else [])
        ver = "2025-05-24" if code == "main(1e057005)" else "2025-05"
        tag = f"tp{tp}pp{pp}" + (f"vpp{vpp}" if vpp > 1 else "") + f"ep{ep}" + \
            ("-fsdp" if fsdp == "On" else "") + ("-a2a" if disp == "A2A" else "") + \
            ("-ep-overlap" if "ep_overlap" in opts else "")
        r = {k: "" for k in HEADER}
        r.update(
            id=f"mzoo2505-qwen3-235b-a22b-h100-256-{tag}",
            source=f"{REPO} {README} @ {C_H100} (2026-05-13; table as first set in "
                   f"examples/qwen3/readme.md @ 8017e11, 2025-05-27), 'Performance Results / H100', "
                   f"line {line}",
            model="qwen3-235b-a22b", seq_length=4096, gpu="h100-sxm-80gb", num_gpus=256,
            gpus_per_node=8, nic_gbps_per_gpu=400, tp=tp, pp=pp, cp=cp, ep=ep, etp=etp,
            vpp=vpp if pp > 1 else "", sequence_parallel=1 if tp > 1 else 0,
            recompute=recompute, recompute_modules=modules,
            zero_stage=3 if fsdp == "On" else 1, distributed_optimizer=1,
            global_batch_size=gbs, micro_batch_size=mbs, dtype="bf16", options=";".join(opts),
            framework="megatron-core", framework_version=ver, pipeline_layout=layout(pp, vpp),
            moe_dispatcher="alltoall" if disp == "A2A" else "deepep",
            gradient_accumulation_fusion=0 if unfused else "",
            measured_iteration_s=f"{step:.1f}")
        r["note"] = (
            f"published step time {step} s (per-GPU TF {tf}; Megatron's count gives "
            f"{megatron_flops_per_sequence(4096) * gbs / (step * 256) / 1e12:.0f}); code {code}; "
            f"readme cells dispatcher {disp}, EDP {edp}, ETP {etp}, DP {line_dp}, FSDP {fsdp}, "
            f"GA {line_ga}, "
            f"recompute '{rc or 'none'}'" + (f", notes '{notes}'" if notes else "") +
            f"; command (examples/qwen3/run_235b.sh @8017e11): {cmd}"
            "; yaml @8017e11: --use-distributed-optimizer, --overlap-grad-reduce, "
            "--overlap-param-gather, --sequence-parallel, bf16, --manual-gc (interval 5), "
            "--moe-grouped-gemm, --moe-permute-fusion, --moe-router-dtype fp32, account for "
            "embedding and loss in the pipeline split (layout: 96 slots / (PP x VPP)); forced "
            "load balancing (RandomSTE router)"
            + ("; '+1f1b overlap' = --combined-1f1b --combined-1f1b-recipe ep_a2a (the moe_dev "
               "name of --overlap-moe-expert-parallel-comm): option ep_overlap"
               if "ep_overlap" in opts else "")
            + ("; Megatron-FSDP (--use-custom-fsdp, optim_grads_params): zero_stage 3; "
               "--recompute-method uniform --recompute-num-layers 1 = every layer recomputed"
               if fsdp == "On" else "")
            + (f"; the command's TP={ran_tp} taken over the table's TP {line_tp} (whose DP "
               f"{line_dp} and GA {line_ga} follow from it): at TP {line_tp} the FSDP traffic "
               f"alone needs {floors[0]:.2f} s a step at the 8x50 GB/s line rate "
               f"(fsdp_nic_floor_s: two 16-bit gathers and an fp32 reduce-scatter of every "
               f"parameter each of GA {line_ga} micro-batches, experts over EDP {edp}, one GPU "
               f"a node), more than the {step} s published; at TP {ran_tp} (DP {dp}, GA {ga}) "
               f"{floors[1]:.2f} s" if contradicted else "")
            + ("; dispatcher alltoall as the table says (the yaml's default is flex/DeepEP)"
               if disp == "A2A" else "")
            + (PP_OVERLAP if "pp_overlap" in opts else "") + _etp_note("8017e11")
            + (NO_FUSION_NOTE if unfused else ""))
        out.append(r)
    return out


def long_rows() -> list[dict]:
    out = []
    for line, seq, nodes, tp, cp, gbs, tf_bal, tf_drop in LONG_TABLE:
        gpus, pp, vpp, ep = nodes * 8, 8, 4, 8
        dp = gpus // (tp * pp * cp)
        t = megatron_flops_per_sequence(seq) * gbs / (tf_bal * 1e12 * gpus)
        r = {k: "" for k in HEADER}
        r.update(
            id=f"mzoo2511-qwen3-235b-a22b-h100-256-s{seq // 1024}k-cp{cp}",
            source=f"{REPO} {README} @ {C_H100} (2026-05-13; table as first set in "
                   f"best_practice/Qwen3/readme.md @ b0b92ff, 2025-11-04), 'Long Context', "
                   f"line {line}",
            model="qwen3-235b-a22b", seq_length=seq, gpu="h100-sxm-80gb", num_gpus=gpus,
            gpus_per_node=8, nic_gbps_per_gpu=400, tp=tp, pp=pp, cp=cp, ep=ep, etp=1, vpp=vpp,
            sequence_parallel=1, recompute="selective", recompute_modules="layernorm;moe",
            zero_stage=1, distributed_optimizer=1, global_batch_size=gbs, micro_batch_size=1,
            dtype="bf16", options=";".join(["dp_overlap", *_pp_overlap(pp, vpp)]),
            framework="megatron-core",
            framework_version="2025-11", pipeline_layout=layout(pp, vpp),
            moe_dispatcher="deepep", measured_iteration_s=f"{t:.4f}")
        r["note"] = (
            f"published {tf_bal} TFLOPS per GPU with forced balance ({tf_drop} dropless, not "
            f"used); iteration = Megatron-LM num_floating_point_operations (ba21b691df) "
            f"{megatron_flops_per_sequence(seq):.4e} per sequence x GBS {gbs} / ({tf_bal} TFLOPS x "
            f"{gpus}); DP {dp}, MBS 1 (the runtime table's), DeepEP (setup 'Dispatcher: DeepEP'), "
            f"command: {LONG_COMMAND}; yaml @b0b92ff as the 4k rows (distributed optimizer, "
            "grad/param overlap, sequence parallel, account for embedding and loss); no "
            "--tp-comm-overlap (sbatch added it for bf16 on 2025-12-16, b09773a); cp_comm_type "
            "empty = Megatron's default p2p" + PP_OVERLAP + _etp_note("b0b92ff"))
        out.append(r)
    return out


def gb_rows() -> list[dict]:
    out = []
    for (commit, line, gpu, seq, nodes, prec, tp, pp, vpp, cp, ep, mbs, gbs, tf, notes,
         cmd) in GB_TABLE:
        if "activation offloading" in notes:
            continue  # LEFT_OUT
        gpus = nodes * 4
        segment = int(cmd.split("SEGMENT=")[1].split()[0])
        graphs = "--cuda-graph-scope attn moe_router moe_preprocess" in cmd
        a2a = "A2A_OVERLAP=1" in cmd
        t = megatron_flops_per_sequence(seq) * gbs / (tf * 1e12 * gpus)
        first = FIRST_SEEN.get(line, C_GB[commit]) if commit == C_H100 else C_GB[commit]
        sel = "--recompute-modules moe_act layernorm" in cmd
        opts = ["dp_overlap"] + _pp_overlap(pp, vpp) + (["ep_overlap"] if a2a else []) + \
            (["cuda_graphs"] if graphs else [])
        r = {k: "" for k in HEADER}
        r.update(
            id=f"mzoo{first[2:4]}{first[5:7]}-qwen3-235b-a22b-{gpu.lower()}-{gpus}-"
               f"{prec.lower()}" + (f"-s{seq // 1024}k" if seq > 4096 else "") +
               f"-tp{tp}pp{pp}ep{ep}",
            source=f"{REPO} {README} @ {commit} ({C_GB[commit]}), '{gpu}' table, line {line}",
            model="qwen3-235b-a22b", seq_length=seq, gpu=gpu.lower(), num_gpus=gpus,
            gpus_per_node=segment * 4, tp=tp, pp=pp, cp=cp, ep=ep, etp=1, vpp=vpp if pp > 1 else "",
            sequence_parallel=1 if tp > 1 else 0,
            recompute="selective" if sel else "none", recompute_modules="layernorm;moe_act" if sel else "",
            zero_stage=1, distributed_optimizer=1, global_batch_size=gbs, micro_batch_size=mbs,
            dtype="bf16" if prec == "BF16" else "fp8", fp8_recipe="mxfp8" if prec == "MXFP8" else "",
            options=";".join(opts), framework="megatron-core", framework_version=first[:7],
            pipeline_layout=layout(pp, vpp), moe_dispatcher="hybridep",
            cuda_graph_scope="attn;moe_router;moe_preprocess" if graphs else "",
            measured_iteration_s=f"{t:.4f}")
        r["note"] = (
            f"published {tf} TFLOPS per GPU ({prec}" + (f", '{notes}'" if notes else "") +
            f"); iteration = Megatron-LM num_floating_point_operations (0e19bf11f7) "
            f"{megatron_flops_per_sequence(seq):.4e} per sequence x GBS {gbs} / ({tf} TFLOPS x "
            f"{gpus}); {nodes} nodes x 4 GPUs, gpus_per_node = SEGMENT {segment} trays x 4 (the "
            f"NVLink domain the job's Slurm segments give it); command in the readme: {cmd}; "
            "sbatch_benchmarking.sh: hybridep = --moe-token-dispatcher-type flex "
            "--moe-flex-dispatcher-backend hybridep --moe-hybridep-num-sms 32"
            + ("; A2A_OVERLAP=1 = --delay-wgrad-compute --overlap-moe-expert-parallel-comm "
               "(option ep_overlap)" if a2a else "")
            + ("; mxfp8 = --fp8-recipe mxfp8, --fp8-param-gather --reuse-grad-buf-for-mxfp8-param-"
               "ag, precision-aware optimizer with fp32 main grads and params and bf16 Adam "
               "moments (not expressed: memory only)" if prec == "MXFP8" else "")
            + "; NIC not stated (empty)"
            + ("; published as GB300 at 020b813 (2026-03-10), relabelled GB200 at 798dfb5"
               if seq > 4096 else "")
            + ("; replaced at 798dfb5 by the 16-node row" if commit == "020b813" else "")
            + (PP_OVERLAP if "pp_overlap" in opts else "") + _etp_note(commit))
        out.append(r)
    return out


def rows() -> list[dict]:
    return h100_rows() + long_rows() + gb_rows()


def _mirror() -> Path:
    return mirror_rows.mirror(REPO_DIR)


def _show(commit: str, path: str) -> str:
    return mirror_rows.show(REPO_DIR, commit, path)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def check() -> list[str]:
    """Differences between the typed tables and the mirror's text (empty: none)."""
    bad = []
    text = _show(C_H100, README).splitlines()
    for row in H100_TABLE:
        c = _cells(text[row[0] - 1])
        want = ["235B", row[1], "H100", "BF16", "256", "4096"] + [str(x) for x in row[2:12]] + \
            [str(row[12]), str(row[13]), row[14], f"{row[15]}", str(row[16]), "", "", row[17], row[18]]
        if c != want:
            bad.append(f"H100 line {row[0]}: {c} != {want}")
    for line, seq, nodes, tp, cp, gbs, tfb, tfd in LONG_TABLE:
        want = ["H100", str(seq), str(nodes), str(tp), str(cp), str(gbs),
                f"{tfb} (forced balance) / {tfd} (dropless)"]
        if _cells(text[line - 1]) != want:
            bad.append(f"long line {line}: {_cells(text[line - 1])} != {want}")
    if LONG_COMMAND not in "\n".join(text):
        bad.append("long-context command")
    for (commit, line, gpu, seq, nodes, prec, tp, pp, vpp, cp, ep, mbs, gbs, tf, notes,
         cmd) in GB_TABLE:
        t = _show(commit, README)
        c = _cells(t.splitlines()[line - 1])
        want = [gpu, str(seq), str(nodes), prec, str(tp), str(pp), str(vpp), str(cp), str(ep),
                str(mbs), str(gbs), str(tf), notes]
        if c != want:
            bad.append(f"{commit} line {line}: {c} != {want}")
        if cmd not in t:
            bad.append(f"{commit} line {line}: command not in the readme")
    run = _show("8017e11", "examples/qwen3/run_235b.sh")
    for line, cmd in H100_COMMANDS.items():
        if cmd not in run:
            bad.append(f"H100 line {line}: command not in run_235b.sh @8017e11")
    if _show("8017e11", "examples/qwen3/run_235b.sh").splitlines()[36] != H100_COMMANDS[17]:
        bad.append(f"run_235b.sh @8017e11 line 37: not the FSDP row's command ({NO_FUSION_FLAG})")
    for commit, line in ETP_LINES.items():
        if _show(commit, YAML).splitlines()[line - 1] != ETP_CELL:
            bad.append(f"{YAML} @{commit} line {line}: not {ETP_CELL.strip()!r}")
    return bad


def main() -> None:
    mirror_rows.main(rows, HEADER, check, "tables and commands as in the mirror")


if __name__ == "__main__":
    main()
