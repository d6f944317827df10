"""Writes benchmarks/training_simumax_b200.csv: the measured side of SimuMax's B200 validation
table (MooreThreads/SimuMax, a training simulator: its 'real' columns, Megatron-LM runs on one
8-GPU B200 node), a check file.

    python benchmarks/simumax_b200_rows.py > benchmarks/training_simumax_b200.csv
    python benchmarks/simumax_b200_rows.py --check   # the typed figures against the mirror
    PYTHONPATH=src python benchmarks/simumax_b200_rows.py --gemms   # the node's GEMM sweep vs trainsim

MooreThreads/SimuMax docs/b200/b200_release_v1.2_summary.json @ 4dcaae5 (2026-05-11; the file as
added in 1b8ca90, 2026-05-06, 'sync public changes for v1.2 preview'), rendered as the table of
docs/b200/b200_release_v1.2_summary.md: 43 cases, each a Megatron-LM run of a truncated Llama 3
70B (12 layers), Llama 3 405B (4 layers), DeepSeek-V2 or DeepSeek-V3 (4 layers) on 8 B200, with
`real_ms` (Megatron's 'elapsed time per iteration (ms)', steady iterations 2-3) and
`real_alloc_gib` (the maximum over the ranks of torch.cuda.max_memory_allocated(), guide section
6). Iteration = real_ms / 1000. trainsim's figures are compared with the 'real' columns only;
SimuMax's own predictions (`perf_ms`) are not read. Nothing in trainsim was fitted to these rows.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

REPO_DIR = "MooreThreads+SimuMax"
COMMIT = "4dcaae5"
SUMMARY = "docs/b200/b200_release_v1.2_summary.json"
TABLE = "docs/b200/b200_release_v1.2_summary.md"
GUIDE = "docs/b200/b200_real_repro_guide.md"
DENSE = "simu_tools/megatron_scripts/scripts/run_pretrain_llama3.sh"
MOE = "simu_tools/megatron_scripts/scripts/run_pretrain_deepseekv2.sh"
PIPELINE = "tools/b200/run_megatron_perf_real_pipeline.py"
HEADER = mirror_rows.v2_header(moe_capacity_factor=["moe_first_dense_layers", "mtp_num_layers"])

# case (the summary's name without its '_cef' suffix) -> (real_ms, real_alloc_gib)
REAL = [
    ("llama3_70b_l12_tp1_pp2_dp4_mbc4", 843.0, 66.55),
    ("llama3_70b_tp2_pp1_dp4_l12_mbc4", 725.5, 60.68),
    ("llama3_70b_l12_tp4_pp1_dp2_mbc4", 409.8, 39.07),
    ("llama3_70b_l12_tp8_pp1_dp1_mbc4", 280.9, 28.29),
    ("deepseekv2_tp1_ep8_pp1_dp8_l4_mbc4", 366.6, 45.63),
    ("deepseekv2_tp1_ep4_pp2_dp4_l4_mbc4", 282.1, 44.7),
    ("deepseekv3_l4_tp1_ep8_pp1_dp8_mbc4", 603.2, 104.3),
    ("deepseekv3_l4_tp1_ep4_pp2_dp4_mbc4", 452.2, 114.0),
    ("llama3_70b_l12_tp1_pp2_dp4_mbc8", 1476.8, 66.55),
    ("llama3_70b_tp2_pp1_dp4_l12_mbc8", 1387.0, 60.68),
    ("llama3_70b_l12_tp4_pp1_dp2_mbc8", 765.6, 39.07),
    ("llama3_70b_l12_tp8_pp1_dp1_mbc8", 556.7, 28.29),
    ("deepseekv2_tp1_ep8_pp1_dp8_l4_mbc8", 676.2, 45.63),
    ("deepseekv2_tp1_ep4_pp2_dp4_l4_mbc8", 492.6, 44.7),
    ("deepseekv3_l4_tp1_ep8_pp1_dp8_mbc8", 1101.7, 104.3),
    ("deepseekv3_l4_tp1_ep4_pp2_dp4_mbc8", 771.6, 114.0),
    ("llama3_70b_l12_tp1_pp2_dp4_mbc32", 5436.5, 66.55),
    ("llama3_70b_tp2_pp1_dp4_l12_mbc32", 5376.5, 60.68),
    ("llama3_70b_l12_tp4_pp1_dp2_mbc32", 2964.6, 39.07),
    ("llama3_70b_l12_tp8_pp1_dp1_mbc32", 2073.7, 28.29),
    ("deepseekv2_tp1_ep8_pp1_dp8_l4_mbc32", 2721.3, 45.63),
    ("deepseekv2_tp1_ep4_pp2_dp4_l4_mbc32", 1727.7, 44.7),
    ("deepseekv3_l4_tp1_ep8_pp1_dp8_mbc32", 4141.2, 104.3),
    ("deepseekv3_l4_tp1_ep4_pp2_dp4_mbc32", 2718.6, 114.0),
    ("llama3_405b_l4_tp1_pp2_dp4_mbc4", 1074.6, 87.08),
    ("llama3_405b_l4_tp2_pp1_dp4_mbc4", 907.3, 81.59),
    ("llama3_405b_l4_tp4_pp1_dp2_mbc4", 476.0, 52.89),
    ("llama3_405b_l4_tp8_pp1_dp1_mbc4", 258.8, 38.57),
    ("llama3_405b_l4_tp1_pp2_dp4_mbc8", 1935.4, 87.08),
    ("llama3_405b_l4_tp2_pp1_dp4_mbc8", 1716.8, 81.59),
    ("llama3_405b_l4_tp4_pp1_dp2_mbc8", 899.6, 52.89),
    ("llama3_405b_l4_tp8_pp1_dp1_mbc8", 488.1, 38.57),
    ("llama3_405b_l4_tp1_pp2_dp4_mbc32", 7046.4, 87.08),
    ("llama3_405b_l4_tp2_pp1_dp4_mbc32", 6604.1, 81.59),
    ("llama3_405b_l4_tp4_pp1_dp2_mbc32", 3455.4, 52.89),
    ("llama3_405b_l4_tp8_pp1_dp1_mbc32", 1901.8, 38.57),
    ("llama3_70b_l12_tp2_cp4_pp1_dp1_seq32768_mbc4", 1758.0, 68.43),
    ("llama3_70b_l12_tp1_cp8_pp1_dp1_seq32768_mbc4", 1768.1, 104.51),
    ("llama3_405b_l4_tp2_cp4_pp1_dp1_seq32768_mbc4", 1984.7, 87.03),
    ("llama3_405b_l4_tp1_cp8_pp1_dp1_seq32768_mbc4", 2003.6, 139.22),
    ("llama3_70b_l12_tp2_cp4_pp1_dp1_seq131072_mbc4", 11315.7, 112.67),
    ("llama3_70b_l12_tp1_cp8_pp1_dp1_seq131072_mbc4", 11301.9, 147.99),
    ("llama3_405b_l4_tp2_cp4_pp1_dp1_seq131072_mbc4", 10577.6, 118.13),
]
# sync-VPP preview case of docs/release_v1.2.md (not in the summary's formal table): case -> real_ms
RELEASE = "docs/release_v1.2.md"
BATCH = "tools/b200/run_megatron_perf_real_batch.py"
VPP = [("llama3_70b_l8_tp1_pp4_vp2_dp2_mbc8_sync", 680.70)]
# the summary's model name -> (trainsim preset, launcher MODEL_TYPE)
MODELS = {"llama3_70b": ("llama3-70b", "llama3_70b"), "llama3_405b": ("llama3.1-405b", "llama3_405b"),
          "deepseekv2": ("deepseek-v2", "deepseek_v2"), "deepseekv3": ("deepseek-v3", "deepseek_v3")}
GPUS, SEQ = 8, 4096

SOURCE = (f"MooreThreads/SimuMax {SUMMARY} @ {COMMIT} (2026-05-11; the file as added in 1b8ca90, "
          "2026-05-06), case '{case}_cef': real_ms {ms}, real_alloc_gib {gib}")
RUN = (
    "Megatron-LM @ 23e00ed (core_r0.14.0, 2025-10-08), TransformerEngine 2.11.0, torch "
    "2.10.0a0 (NGC 26.01 family), CUDA 13.1 (repro guide sections 1-2); one node of 8 B200, "
    "b200-sxm-180gb (its system config's 2,250 TFLOPS bf16 is the 1,000 W part's); settings from "
    "{script} @ {commit}: --micro-batch-size 1, GBS = 1 x mbc x dp (run_*.sh), seq {seq}, "
    "--bf16 --accumulate-allreduce-grads-in-fp32 (grad_reduce_dtype fp32), "
    "--use-distributed-optimizer, --transformer-impl transformer_engine with --use-flash-attn "
    "(TE's fused attention: FlashAttention 2 has no sm100 kernels: cudnn), --sequence-parallel "
    "(Megatron turns it off at tp 1), --recompute-granularity full --recompute-method block "
    "--recompute-num-layers 0 (no layer recomputed: recompute none), no --overlap-grad-reduce / "
    "--overlap-param-gather, --disable-tp-comm-overlap-*, non-interleaved 1F1B (options "
    "fused_kernels: no overlap), --mock-data; '_cef' is the simulator's fused cross-entropy "
    "costing, the public launchers keep --cross-entropy-loss-fusion commented out")


def parse(case: str) -> dict[str, object]:
    """Model, layers, parallel sizes, sequence and micro-batches spelt by a case's name."""
    name = next(m for m in MODELS if case.startswith(m + "_"))
    sizes = {k: int(v) for k, v in re.findall(r"_(l|tp|pp|vp|cp|ep|dp|mbc|seq)(\d+)", case)}
    return {"name": name, "layers": sizes["l"], "tp": sizes.get("tp", 1), "pp": sizes["pp"],
            "vp": sizes.get("vp", 1), "cp": sizes.get("cp", 1), "ep": sizes.get("ep", 1),
            "dp": sizes["dp"], "mbc": sizes["mbc"], "seq": sizes.get("seq", SEQ)}


def row(case: str, ms: float, gib: float, with_memory: bool) -> dict[str, str]:
    p = parse(case)
    preset, _ = MODELS[str(p["name"])]
    moe = str(p["name"]).startswith("deepseek")
    tp, pp, cp, ep, dp = (int(p[k]) for k in ("tp", "pp", "cp", "ep", "dp"))
    if tp * pp * cp * dp != GPUS:
        raise ValueError(f"{case}: tp*pp*cp*dp != {GPUS}")
    out = {c: "" for c in HEADER}
    out.update(
        id=f"simumax-b200-{case.replace('_', '-')}",
        source=SOURCE.format(case=case, ms=ms, gib=gib), model=preset,
        num_layers=str(p["layers"]), seq_length=str(p["seq"]), gpu="b200-sxm-180gb",
        num_gpus=str(GPUS), gpus_per_node="8", tp=str(tp), pp=str(pp), cp=str(cp), ep=str(ep),
        vpp="1", sequence_parallel="1" if tp > 1 else "0", recompute="none", zero_stage="",
        distributed_optimizer="1", global_batch_size=str(int(p["mbc"]) * dp),
        micro_batch_size="1", dtype="bf16", options="fused_kernels", framework="megatron-core",
        framework_version="0.14.0", attention="cudnn", grad_reduce_dtype="fp32",
        measured_iteration_s=f"{ms / 1000:.6f}")
    if cp > 1:
        out["cp_comm_type"] = "a2a"
    notes = [RUN.format(script=MOE if moe else DENSE, commit=COMMIT, seq=p["seq"])]
    if moe:
        out.update(moe_dispatcher="alltoall", moe_capacity_factor="1", mtp_num_layers="0")
        out["moe_first_dense_layers"] = "1"
        notes.append(
            "MoE: --moe-layer-freq ([0]*1+[1]*(L-1)) (1 dense layer, then MoE: "
            "moe_first_dense_layers 1), --moe-token-dispatcher-type alltoall, "
            "--moe-expert-capacity-factor 1 --moe-pad-expert-input-to-capacity (padded static "
            "shapes: moe_capacity_factor 1), --moe-grouped-gemm --moe-permute-fusion, "
            "--multi-latent-attention (q_lora 1536, kv_lora 512, qk 128 + 64, v 128), no "
            "--mtp-num-layers (mtp_num_layers 0); DeepSeek-V3 as the launcher's deepseek_v3 "
            "shape (h 7168, 256 experts of 2048, top-8, one shared expert of 2048, vocab 129280)")
    if out["model"] == "llama3.1-405b":
        notes.append("Llama 3 405B as the launcher's llama3_405b shape (h 16384, ffn 53248, 128 "
                     "heads, 16 KV groups, vocab 128256): the llama3.1-405b preset")
    if with_memory:
        out.update(memory_kind="allocated", measured_peak_memory_gib=f"{gib}")
        notes.append("memory: real_alloc_gib, max over the 8 ranks of max_memory_allocated()")
    else:
        notes.append("memory: the summary reuses its mbc-4 run's figure (memory_source_case): "
                     "given on that row only")
    out["note"] = "; ".join(notes)
    return out


def memory_rows() -> set[str]:
    """Cases whose memory figure is their own run's: the mbc-4 run of each layout (the summary's
    memory_source_case; its mbc-8 and mbc-32 rows repeat it) and every CP row."""
    return {c for c, _, _ in REAL if c.endswith("_mbc4")}


def vpp_row(case: str, ms: float) -> dict[str, str]:
    """The sync-VPP preview case: interleaved 1F1B, 2 virtual stages of one layer per rank,
    --no-overlap-p2p-communication; no memory figure published."""
    out = row(case, ms, 0.0, False)
    out.update(
        id=f"simumax-b200-{case.replace('_', '-')}", vpp=str(parse(case)["vp"]),
        source=(f"MooreThreads/SimuMax {RELEASE} @ {COMMIT} (2026-05-11), 'Representative B200 "
                f"sync-VPP preview check', case '{case}': real ms {ms:.2f}"))
    out["note"] = out["note"].replace(
        "non-interleaved 1F1B", "interleaved 1F1B with VP_SIZE=2 and --no-overlap-p2p-communication "
        f"({BATCH}: 'sync' VPP, 8 / 4 / 2 = 1 layer a virtual stage)").replace(
        "; memory: the summary reuses its mbc-4 run's figure (memory_source_case): given on that "
        "row only", "; no memory figure published for this case")
    return out


def rows() -> list[dict[str, str]]:
    own = memory_rows()
    return [row(case, ms, gib, case in own) for case, ms, gib in REAL] + \
        [vpp_row(case, ms) for case, ms in VPP]


def check() -> list[str]:
    bad = []
    data = json.loads(mirror_rows.show(REPO_DIR, COMMIT, SUMMARY))
    got = {x["case"]: x for x in data["rows"]}
    if len(got) != len(REAL):
        bad.append(f"{len(got)} rows in the summary, {len(REAL)} typed")
    table = mirror_rows.show(REPO_DIR, COMMIT, TABLE)
    for case, ms, gib in REAL:
        x = got.get(case + "_cef")
        if x is None:
            bad.append(f"no case {case}_cef")
            continue
        p = parse(case)
        if (x["real_ms"], x["real_alloc_gib"], x["status"]) != (ms, gib, "ok"):
            bad.append(f"{case}: summary has {x['real_ms']} ms, {x['real_alloc_gib']} GiB")
        if f"| {case}_cef | - | {ms:.2f} |" not in table:
            bad.append(f"{case}: not so in {TABLE}")
        spelt = (MODELS[str(p["name"])][0].replace("llama3.1", "llama3").replace("deepseek-", "deepseek"),
                 int(p["layers"]), int(p["mbc"]))
        if (x["model"], x["layer_num"], x["mbc"]) != spelt:
            bad.append(f"{case}: model/layers/mbc {x['model']}, {x['layer_num']}, {x['mbc']}")
        sizes = "".join(f"{k}{p[k]}" for k in ("tp", "ep", "cp", "pp") if k in ("tp", "pp") or int(p[k]) > 1)
        if x["parallel"] != sizes:
            bad.append(f"{case}: parallel {x['parallel']} != {sizes}")
        own = x.get("memory_source_case", x["case"]) == x["case"]
        if own != case.endswith("_mbc4"):
            bad.append(f"{case}: memory_source_case {x.get('memory_source_case')}")
    release = mirror_rows.show(REPO_DIR, COMMIT, RELEASE)
    batch = mirror_rows.show(REPO_DIR, COMMIT, BATCH)
    for case, ms in VPP:
        if f"| `{case}` | {ms:.2f} |" not in release:
            bad.append(f"{case}: not so in {RELEASE}")
        flat = " ".join(batch.split())
        p = parse(case)
        want = (f'record_case_name="{case}", extra_env={{ "VP_SIZE": "{p["vp"]}", "EXTRA_ARGS": '
                '"--transformer-impl transformer_engine --no-overlap-p2p-communication", }')
        if want not in flat or f'micro_batch_num={p["mbc"]}, vp_size={p["vp"]}, ' not in flat:
            bad.append(f"{case}: flags not so in {BATCH}")
    guide = mirror_rows.show(REPO_DIR, COMMIT, GUIDE)
    for phrase in ("commit: `23e00ed0963c35382dfe8a5a94fb3cda4d21e133`", "`2.11.0+c188b533`",
                   "`torch.cuda.max_memory_allocated()`", "`cp_comm_type=a2a`",
                   "`--no-overlap-p2p-communication`", "`--disable-tp-comm-overlap-rs`"):
        if phrase not in guide:
            bad.append(f"not in {GUIDE}: {phrase!r}")
    common = ("--micro-batch-size $MICRO_BATCH_SIZE", "--use-distributed-optimizer",
              "--use-flash-attn", "--sequence-parallel", "--recompute-granularity full",
              "--recompute-method block", "--recompute-num-layers 0", "--bf16",
              "--accumulate-allreduce-grads-in-fp32", "--transformer-impl transformer_engine",
              "--attention-dropout 0.0", "--untie-embeddings-and-output-weights")
    for path, extra in ((DENSE, ("SEQ_LEN=${SEQ_LEN:-4096}", "--disable-tp-comm-overlap-rs",
                                 "num_query_groups=8", "hidden_size=16384",
                                 "ffn_hidden_size=53248", "num_query_groups=16")),
                        (MOE, ("--moe-expert-capacity-factor 1", "--moe-pad-expert-input-to-capacity",
                               "--moe-token-dispatcher-type alltoall", "--multi-latent-attention",
                               'MOE_LAYER_FREQ="([0]*1+[1]*${NUM_LAYERS_MINUS_ONE})*1"',
                               "--q-lora-rank 1536", "--kv-lora-rank 512",
                               "MOE_SHARED_FFN_HIDDEN_SIZE=2048", "VOCAB_SIZE=129280",
                               "    # --cross-entropy-loss-fusion"))):
        text = mirror_rows.show(REPO_DIR, COMMIT, path)
        for phrase in (*common, *extra):
            if phrase not in text:
                bad.append(f"not in {path}: {phrase!r}")
        if "--overlap-grad-reduce" in text or "--mtp-num-layers" in text:
            bad.append(f"{path}: overlaps or MTP")
    pipe = mirror_rows.show(REPO_DIR, COMMIT, PIPELINE)
    if '"micro_batch_size": 1,' not in pipe or '"4096",' not in pipe:
        bad.append(f"{PIPELINE}: micro-batch 1 / seq 4096 not as read")
    for launcher in ("simu_tools/megatron_scripts/run_llama3.sh",
                     "simu_tools/megatron_scripts/run_deepseekv2.sh"):
        text = mirror_rows.show(REPO_DIR, COMMIT, launcher)
        if ("(( global_batch_size = $micro_batch_size * $num_microbatches * $dp_size ))"
                not in text or "world_size=8" not in text):
            bad.append(f"{launcher}: GBS / world size not as read")
    return bad


SYSTEM = "configs/system/b200_bf16_ceperm.json"
GEMM_KEY = re.compile(r"b=(\d+), m=(\d+), k=(\d+), n=(\d+), layout=(\w+)")


def gemm_rates() -> list[tuple[str, float, float]]:
    """A diagnosis, not a row: the bf16 GEMMs SimuMax measured on its B200 node (its system
    config's matmul 'accurate_efficient_factor' x its 2,250 TFLOPS, written by
    simu_tools/efficency_test/test_gemm_efficiency.py) against trainsim's price of the same
    shape on b200-sxm-180gb: (shape, SimuMax TFLOPS, trainsim TFLOPS)."""
    from trainsim.catalog import gpu
    from trainsim.compute import compute_model_for
    from trainsim.workload.ops import Gemm

    system = json.loads(mirror_rows.show(REPO_DIR, COMMIT, SYSTEM))
    matmul = system["accelerator"]["op"]["matmul"]
    model = compute_model_for(gpu("b200-sxm-180gb"), None, gpu)
    out = []
    for key, eff in matmul["accurate_efficient_factor"].items():
        b, m, k, n = (int(v) for v in GEMM_KEY.match(key).groups()[:4])
        seconds = model.time(Gemm("gemm", m, n, k, batch=b))
        out.append((key, eff * matmul["tflops"], 2 * b * m * n * k / seconds / 1e12))
    return out


def main() -> None:
    if sys.argv[1:] == ["--gemms"]:
        rates = gemm_rates()
        ratios = sorted(t / s for _, s, t in rates)
        big = [(s, t) for key, s, t in rates if min(map(int, GEMM_KEY.match(key).groups()[1:4])) >= 4096]
        print(f"{len(rates)} GEMMs: trainsim / SimuMax-measured TFLOPS median "
              f"{ratios[len(ratios) // 2]:.3f} (min {ratios[0]:.3f}, max {ratios[-1]:.3f}); "
              f"{len(big)} with m, n, k >= 4096: measured median "
              f"{sorted(s for s, _ in big)[len(big) // 2]:.0f}, trainsim median "
              f"{sorted(t for _, t in big)[len(big) // 2]:.0f} TFLOPS")
        return
    mirror_rows.main(rows, HEADER, check, "figures and script settings as in the mirror")


if __name__ == "__main__":
    main()
