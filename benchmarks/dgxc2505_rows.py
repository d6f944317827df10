"""Writes benchmarks/training_dgxc2505.csv: NVIDIA/dgxc-benchmarking release v25.05 (68eaf7e117,
2025-06-10), the 'Expected Performance' tables of the NeMo 2.0 performance scripts in the
nvcr.io/nvidia/nemo:25.04 containers on GB200 NVL72 and DGX H100 (Llama 3.1 405B, Nemotron-4
15B / 340B, DeepSeek-V3 671B), and v25.05.05 (c5c765f, 2025-10-22) for the one DeepSeek-V3
column it added (512 H100). Every figure is typed from the README line cited in the row; the
layouts are the release's launch.sh and the NeMo commit its setup.sh checks out (see
training_dgxc2505.md). Usage: python benchmarks/dgxc2505_rows.py > benchmarks/training_dgxc2505.csv;
``--check`` re-reads the DeepSeek-V3 launch.sh's expert-TP lines from the mirror, and the recipe
lines of the deferral cells (``deferral_cells``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import deferral_cells
import mirror_rows
import nvls_cells
from deferral_cells import COLUMNS, stated

HEADER = mirror_rows.v2_header(ep=["etp"], note=["attention_dropout", "hidden_dropout", *COLUMNS,
                                                                  nvls_cells.COLUMN])
# the DeepSeek-V3 launch.sh sets ETP=1 in its h100 and gb200 branches and passes it as
# --expert_tensor_parallel_size (NeMo's perf script: the strategy's expert_tensor_parallel_size;
# unset it would be Megatron-core's default, TP): (release commit, ETP=1 lines, the flag's line)
LAUNCH = "deepseek_v3/pretraining/launch.sh"
ETP_LINES = {"68eaf7e117": (100, 113, 132), "c5c765f": (104, 117, 136)}

REPO = "NVIDIA/dgxc-benchmarking"
REL = {"v25.05": "@ 68eaf7e117 (release v25.05, committed 2025-06-10)",
       "v25.05.05": "@ c5c765f (release v25.05.05, 2025-10-22)"}
GB200 = ("GB200 NVL72: gpus_per_node 64 as the other files' GB200 rows (72-GPU NVLink domain, "
         "4-GPU trays: launch.sh GPUS_PER_NODE 4; the domain size is not stated), NIC 400 Gb/s "
         "per GPU (ConnectX-7, inferred)")
H100 = ("DGX H100 (8 GPUs per NVLink domain, 400 Gb/s ConnectX-7 per GPU, inferred: the README "
        "names only 'H100 GPUs')")
FP8 = ("fp8: --fp8_recipe not passed, so the argument parser's default 'ds' = bf16_with_fp8_mixed "
       "(delayed scaling) with grad_reduce_in_fp32 = False (scripts/performance/utils.py "
       "set_primary_perf_configs)")
PAO = "precision_aware_optimizer"


def bf16_state(recipe: str, line: int) -> str:
    """How a performance-mode recipe's bf16 run keeps its model state (issue 16 item 2)."""
    return (f"bf16: bf16_mixed with use_precision_aware_optimizer = True (scripts/performance/"
            "utils.py L422-423 set_primary_perf_configs: the options cell's precision_aware_"
            f"optimizer) and grad_reduce_dtype bf16: the {recipe} recipe's performance mode sets "
            f"trainer.plugins.grad_reduce_in_fp32 = False (nemo/collections/llm/recipes/{recipe}.py "
            f"L{line} pretrain_performance_optimizations), which the bf16 branch keeps")
OVERLAP = ("MegatronCommOverlapCallback: TP overlap with TP >= 2 and SP, overlap_p2p_comm with PP "
           "> 1 and VP > 1, grad-reduce/param-gather overlap with DP > 1; sequence_parallel = tp "
           "> 1; distributed optimizer; no recompute; dropout 0; attention backend left to "
           "Transformer Engine")

# (model, precision) -> README table rows: (gpus, step s, tokens/s, GBS) per column
LLAMA = {"bf16": (72, [(128, 9.347, 56092, 64), (256, 9.484, 110563, 128), (512, 9.508, 220567, 256)]),
         "fp8": (79, [(128, 6.131, 85514, 64), (256, 6.183, 169590, 128), (512, 6.244, 335867, 256)])}
NEMO_GB = {("bf16", "weak"): (134, [(128, 2.189, 59877, 32), (256, 2.19, 119700, 64), (512, 2.229, 235212, 128)]),
           ("fp8", "weak"): (141, [(128, 1.483, 88383, 32), (256, 1.517, 172804, 64), (512, 1.549, 338468, 128)]),
           ("bf16", "strong"): (149, [(128, 32.66, 64211, 512), (256, 16.58, 126486, 512), (512, 8.468, 247656, 512)]),
           ("fp8", "strong"): (157, [(128, 21.83, 96067, 512), (256, 11.21, 187078, 512), (512, 5.668, 369998, 512)])}
NEMO_H100 = {("15b", "bf16"): (101, 16, 2.746, 95463, 64), ("15b", "fp8"): (108, 16, 1.988, 131863, 64),
             ("340b", "bf16"): (115, 256, 4.606, 56913, 64), ("340b", "fp8"): (122, 256, 3.107, 84372, 64)}
DSV3 = [  # (release, gpu, gpus, step s, tokens/s, line, tp, pp, ep, recompute module)
    ("v25.05", "h100-sxm-80gb", 1024, 52.04, 644781.55, 81, 2, 16, 64, "mla_up_proj"),
    ("v25.05.05", "h100-sxm-80gb", 512, 48.948, 342755.90, 82, 2, 8, 64, "mla_up_proj"),
    ("v25.05", "gb200", 128, 34.168, 122755.33, 94, 2, 4, 32, "core_attn"),
    ("v25.05", "gb200", 256, 34.194, 245323.97, 94, 2, 4, 64, "core_attn"),
    ("v25.05", "gb200", 512, 34.274, 489502.71, 94, 2, 4, 64, "core_attn"),
]


def row(**kw: object) -> dict[str, object]:
    out = {k: "" for k in HEADER}
    out.update(framework="nemo", framework_version="25.04", distributed_optimizer=1,
               recompute="none", attention_dropout=0, hidden_dropout=0)
    out.update(kw)
    return out


def measured(t: float, tps: float, seq: int, gbs: int) -> str:
    assert abs(seq * gbs / t / tps - 1) < 2e-3, (t, tps, seq, gbs)  # the table's own tokens/s
    return (f"published {t} s per step ({tps} tokens/s); iteration time = the table's 'Training "
            "step time (seconds per step)' as published (NeMo train_step_timing, the mean of "
            "iterations 11-44 per the README's 'Expected Performance'); the table's tokens/s = "
            f"{seq} x GBS / step time agrees")


def llama() -> list[dict]:
    out = []
    for dtype, (line, cols) in LLAMA.items():
        for gpus, t, tps, gbs in cols:
            assert gbs == gpus // 2
            out.append(row(
                id=f"dgxc2505-llama3.1-405b-{dtype}-gb200-{gpus}", model="llama3.1-405b",
                source=(f"{REPO} llama3.1/README.md {REL['v25.05']}, 'Expected Performance' table "
                        f"'Llama3.1 405b {dtype.upper()}', line {line} 'Training step time (seconds "
                        "per step)'; layout from the README's GB200 table and llama3.1/launch.sh"),
                seq_length=8192, gpu="gb200", num_gpus=gpus, gpus_per_node=64, nic_gbps_per_gpu=400,
                tp=4, pp=8, cp=2, ep=1, vpp=8, sequence_parallel=1, global_batch_size=gbs,
                micro_batch_size=1, dtype=dtype,
                options="tp_overlap;pp_overlap;dp_overlap" + (f";{PAO}" if dtype == "bf16" else ""),
                grad_reduce_dtype="bf16",
                fp8_recipe="delayed" if dtype == "fp8" else "",
                pipeline_layout="Et|(tt|)*62tL", measured_iteration_s=t,
                note=(f"{measured(t, tps, 8192, gbs)}; column '{gpus}x GB200 GPUs'; layout TP 4, PP 8, "
                      f"CP 2, VP 8, MBS 1, GBS {gbs} = GPUs / 2, FSDP 0 (README table; launch.sh "
                      "-tp/-pp/-cp/-vp/-mb/-gb/-fsdp 0/-ep 1); run by llama3.1/launch.sh: "
                      "scripts.performance.llm.pretrain_llama31_405b of NVIDIA/NeMo 7a8f1cc7bc "
                      "('Llmb nemo r2.3.0', setup.sh NEMO_COMMIT; Megatron-LM 7094270c6f) in "
                      "nvcr.io/nvidia/nemo:25.04.01; cuda graphs off (--cuda_graphs not passed: "
                      "recommended_model_configs/model_configs_gb200.csv cuda_graphs 0 at 128 GPUs, "
                      f"no row at 256/512 -> False), recompute_layers 0; {OVERLAP}; userbuffers "
                      "b200 h16384 tp4 cp2 configs for TP overlap; " + FP8 + "; "
                      + bf16_state("llama31_405b", 253) + "; pipeline layout "
                      "Et|(tt|)*62tL: the llama31_405b recipe's account_for_embedding/loss_in_"
                      "pipeline_split True (recipes/llama31_405b.py L72-73), 126 layers + embedding + "
                      f"loss = 128 slots over PP 8 x VP 8; {GB200}")))
    return out


def nemotron() -> list[dict]:
    out = []
    common = ("run by nemotron/launch.sh: scripts.performance.llm.pretrain_nemotron4_{size} of "
              "NVIDIA/NeMo b4148d2169 (setup.sh NEMO_COMMIT; Megatron-LM 7094270c6f) in "
              "nvcr.io/nvidia/nemo:25.04.00, the recipe's performance mode")
    for (dtype, scaling), (line, cols) in NEMO_GB.items():
        for gpus, t, tps, gbs in cols:
            assert gbs == (512 if scaling == "strong" else gpus // 4)
            title = f"Nemotron 340b {dtype.upper()} GB200" + (" Strong Scaling" if scaling == "strong" else "")
            out.append(row(
                id=f"dgxc2505-nemotron4-340b-{dtype}-gb200-{gpus}" + ("-strong" if scaling == "strong" else ""),
                model="nemotron4-340b",
                source=(f"{REPO} nemotron/README.md {REL['v25.05']}, 'Expected Performance' table "
                        f"'{title}', line {line} 'Training step time (seconds per step)'; layout "
                        "from the README's GB200 tables and nemotron/launch.sh"),
                seq_length=4096, gpu="gb200", num_gpus=gpus, gpus_per_node=64, nic_gbps_per_gpu=400,
                tp=8, pp=4, cp=1, ep=1, vpp=12, sequence_parallel=1, global_batch_size=gbs,
                micro_batch_size=1, dtype=dtype,
                options="tp_overlap;pp_overlap;dp_overlap;cuda_graphs"
                + (f";{PAO}" if dtype == "bf16" else ""),
                grad_reduce_dtype="bf16",
                fp8_recipe="delayed" if dtype == "fp8" else "", measured_iteration_s=t,
                note=(f"{measured(t, tps, 4096, gbs)}; column '{gpus}x GB200 GPUs (GBS={gbs})'"
                      + (" Strong Scaling" if scaling == "strong" else "")
                      + f"; layout TP 8, PP 4, VP 12, MBS 1, GBS {gbs} (launch.sh: GBS = GPUs / 4, "
                      "512 with STRONG_SCALING=true); " + common.format(size="340b")
                      + "; launch.sh passes '-fsdp 0 --cuda_graphs true' on GB200 (enable_cuda_graph, "
                      f"TE per-layer graphs); userbuffers b200 h18432 tp8 configs; {OVERLAP}; "
                      f"{FP8}; {bf16_state('nemotron4_340b', 226)}; {GB200}")))
    for (size, dtype), (line, gpus, t, tps, gbs) in NEMO_H100.items():
        tp, pp, vpp, mbs = (2, 1, "", 2) if size == "15b" else (8, 8, 12, 1)
        opts = "tp_overlap;dp_overlap" if size == "15b" else "tp_overlap;pp_overlap;dp_overlap"
        out.append(row(
            id=f"dgxc2505-nemotron4-{size}-{dtype}-h100-{gpus}", model=f"nemotron4-{size}",
            source=(f"{REPO} nemotron/README.md {REL['v25.05']}, 'Expected Performance' table "
                    f"'Nemotron4 {size} {dtype.upper()} H100', line {line} 'Training step time "
                    "(seconds per step)'; layout from the README's H100 tables and nemotron/launch.sh"),
            seq_length=4096, gpu="h100-sxm-80gb", num_gpus=gpus, gpus_per_node=8, nic_gbps_per_gpu=400,
            tp=tp, pp=pp, cp=1, ep=1, vpp=vpp, sequence_parallel=1, global_batch_size=gbs,
            micro_batch_size=mbs, dtype=dtype, options=opts + (f";{PAO}" if dtype == "bf16" else ""),
            grad_reduce_dtype="bf16",
            fp8_recipe="delayed" if dtype == "fp8" else "", measured_iteration_s=t,
            note=(f"{measured(t, tps, 4096, gbs)}; column '{gpus}x H100 GPUs'; layout TP {tp}, PP {pp}"
                  + (", VP 12" if size == "340b" else ", VP not passed (launch.sh VP=0)")
                  + f", MBS {mbs}, GBS {gbs} (launch.sh); " + common.format(size=size)
                  + "; cuda graphs off (not passed on H100; model_configs_h100.csv cuda_graphs 0); "
                  f"{OVERLAP}; {FP8}; "
                  + bf16_state(f"nemotron4_{size}", 222 if size == "15b" else 226) + f"; {H100}")))
    return out


def deepseek() -> list[dict]:
    out = []
    for rel, gpu, gpus, t, tps, line, tp, pp, ep, rm in DSV3:
        gbs = gpus * 8
        mid = 64 // pp
        first, last = mid - 1, mid - 2
        assert first + last + mid * (pp - 2) == 61
        name = "H100" if gpu.startswith("h100") else "GB200"
        commit = REL[rel].split()[1]
        etp_line, flag_line = ETP_LINES[commit][0 if name == "H100" else 1], ETP_LINES[commit][2]
        out.append(row(
            id=f"dgxc2505-deepseek-v3-bf16-{name.lower()}-{gpus}", model="deepseek-v3",
            source=(f"{REPO} deepseek_v3/pretraining/README.md {REL[rel]}, 'Expected Performance' "
                    f"table 'Deepseek V3 BF16 {name}', line {line} 'Training step time (seconds per "
                    "step)'; layout from the README's configuration table and "
                    "deepseek_v3/pretraining/launch.sh"),
            seq_length=4096, gpu=gpu, num_gpus=gpus, gpus_per_node=64 if name == "GB200" else 8,
            nic_gbps_per_gpu=400, tp=tp, pp=pp, cp=1, ep=ep, etp=1, vpp=1, sequence_parallel=1,
            recompute="selective", recompute_modules="" if rm == "core_attn" else rm,
            global_batch_size=gbs, micro_batch_size=1, dtype="bf16", options=f"dp_overlap;{PAO}",
            pipeline_layout=f"first:{first},last:{last}", moe_dispatcher="alltoall",
            moe_capacity_factor="1.0", measured_iteration_s=t,
            note=(f"{measured(t, tps, 4096, gbs)}; column '{gpus}x {name} GPUs'; layout TP {tp}, PP {pp}, "
                  f"EP {ep}, ETP 1 (launch.sh @{commit} L{etp_line} 'ETP=1', L{flag_line} "
                  "'--expert_tensor_parallel_size $ETP'), VP 1, CP 1, MBS 1, "
                  f"GBS {gbs} = GPUs x 8 (launch.sh); run by "
                  "deepseek_v3/pretraining/launch.sh (DTYPE=bf16: 'fp8 not supported currently'): "
                  "scripts.performance.llm.pretrain_deepseek_v3 of NVIDIA/NeMo 7a8f1cc7bc (setup.sh "
                  "NEMO_COMMIT; Megatron-LM 7094270c6f) in nvcr.io/nvidia/nemo:25.04.01: selective "
                  f"recompute of --recompute_modules {rm} (launch.sh RM; empty cell = core attention), "
                  "moe_permute_fusion, TE cross entropy, fp32 router, MegatronCommOverlapCallback("
                  "tp_comm_overlap=False), grad-reduce/param-gather overlap with DP > 1 (no PP "
                  f"overlap: VP 1); uneven pipeline {first} / {mid} x {pp - 2} / {last} layers "
                  "(num_layers_in_first/last_pipeline_stage = 64 / PP - 1 / - 2); DeepSeekV3Config "
                  "(nemo/collections/llm/gpt/model/deepseek.py): alltoall token dispatcher, grouped "
                  "GEMM, dropout 0; one multi-token-prediction layer (the script's pretrain_recipe() keeps "
                  "the recipe's use_mtp=True: nemo/collections/llm/recipes/deepseek_v3.py L48-49, L62, "
                  "L93, DeepSeekV3Config(mtp_num_layers=1), as the deepseek-v3 preset); token drop: "
                  "USE_TOKEN_DROP = True appends MegatronTokenDropCallback (nemo/lightning/pytorch/"
                  "callbacks/moe_token_drop.py, defaults moe_expert_capacity_factor 1.0, "
                  "moe_pad_expert_input_to_capacity True; the pad has no column in format v2); cuda "
                  "graphs off (model_configs csv cuda_graphs 0 or no row); bf16_mixed with "
                  "use_precision_aware_optimizer = True (scripts/performance/utils.py L422-423 "
                  "set_primary_perf_configs: the options cell's precision_aware_optimizer), "
                  "gradients reduced in fp32 (the deepseek_v3 recipe's bf16_mixed; nothing sets "
                  "grad_reduce_in_fp32 False); "
                  + (H100 if name == "H100" else GB200))))
    return out


def rows() -> list[dict]:
    # the recipes' output-layer weight-gradient deferral (deferral_cells.STATED) and the
    # executor's NCCL_NVLS_ENABLE=0 (nvls_cells.STATED)
    return [nvls_cells.stated(stated(r)) for r in llama() + nemotron() + deepseek()]


def check() -> list[str]:
    """Differences between ``ETP_LINES`` and the mirror's launch.sh (empty: none)."""
    bad = []
    for commit, (h100, gb200, flag) in ETP_LINES.items():
        text = mirror_rows.show("NVIDIA+dgxc-benchmarking", commit, LAUNCH).splitlines()
        for line, want in ((h100, "ETP=1"), (gb200, "ETP=1"),
                           (flag, "--expert_tensor_parallel_size $ETP")):
            if want not in text[line - 1]:
                bad.append(f"{LAUNCH} @{commit} line {line}: no {want!r}")
    return bad + deferral_cells.check("dgxc2505-") + nvls_cells.check("dgxc2505-") + \
        nvls_cells.check("release ")


def main() -> None:
    mirror_rows.main(rows, HEADER, check, "expert-TP lines as in the mirror")


if __name__ == "__main__":
    main()
