"""Issue 17 items 2-3: the host launches of one Megatron-core layer on Transformer Engine, as
trainsim's op lists count them against what the frameworks' code issues (51st session,
launches51; a diagnostic: nothing here feeds trainsim).

    PYTHONPATH=src:benchmarks python benchmarks/launches51_audit.py            # the table (~5 s)
    PYTHONPATH=src:benchmarks python benchmarks/launches51_audit.py --whatif   # + router fusion

Two public rows are taken at the configuration trainsim's tuner picks for them: a dense
Llama 3 70B layer (Megatron-Bridge 26.04, fp8 current scaling, TP 4 + SP) and a Qwen3-30B-A3B
MoE layer (Megatron-Bridge 25.11, fp8 current scaling, EP 8, the all-to-all dispatcher). For each part of the layer the table
gives trainsim's launches (``compute.host.launches`` over ``layers.layer_forward`` and
``backward_of``; forward / backward) beside the kernels the code issues and from where: a
Python-level op (what ``HOST_S_PER_KERNEL`` prices) or a C++ loop inside one Python call
(Transformer Engine's quantize, ``split_quantize``, grouped GEMM, cuDNN graph). The source
counts are read from NVIDIA/Megatron-LM@d7288711 (Megatron-Bridge v0.4.0 = 26.04's pin) for
the dense layer, @0d8e0714 (v0.2.0 = 25.11's pin) for the MoE layer, and
NVIDIA/TransformerEngine v2.14 / v2.9 (26.04's / 25.11's), file and line in each entry; they are the audit's
reading, typed here as data, not predictions.

``--whatif``: the public file with the router's top-k and loss counted as Megatron-Bridge's
perf recipes run it (``moe_router_fusion = True``: v0.4.0 scripts/performance/configs/qwen/
qwen3_llm_pretrain.py L36, deepseek L38, gpt_oss L34; Transformer Engine's three fused router
kernels), i.e. fewer launches than trainsim counts, for the megatron-bridge rows only.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from trainsim.compute import host
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload import moe_block
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.shard import shard_of

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared" / "validation" / "training_public.csv"
PUBLIC = SHARED if SHARED.exists() else (
    HERE.parent / "src" / "trainsim" / "data" / "validation" / "training_public.csv")
ROWS = {"dense": "bridge2604p1-llama3-70b-h100-64-gbs256",
        "moe": "bridge2511-qwen3-30b-a3b-16"}

MC = "Megatron-LM@d7288711"
M25 = "Megatron-LM@0d8e0714"
TE = "TransformerEngine"
AUDIT = [
    # (layer, part, trainsim op names, source kernels (fwd, bwd), issued from, source)
    ("dense", "QKV split copies", ("qkv_split",), (2, 1), "Python: reshape, contiguous; cat",
     (f"{MC} attention.py L1474 (query reshape: 8 groups of 8 heads at TP 4 -> 2 a rank, a "
     f"copy); {TE} v2.9 dot_product_attention/utils.py L1888-1998 (V contiguous), "
     f"utils.py L330-354 (SplitAlongDim backward cat)")),
    ("dense", "RoPE, Q and K", ("rope",), (2, 2), "Python: one FusedRoPEFunc a tensor",
     f"{MC} attention.py L1106, L1119; rope_utils.py L287"),
    ("dense", "input norm (fused in linear_qkv)", ("attn_norm",), (1, 1), "Python: TE module",
     f"{MC} gpt_layer_specs.py (TELayerNormColumnParallelLinear)"),
    ("dense", "QKV / proj / fc1 / fc2 GEMMs", ("qkv_proj", "out_proj", "fc1", "fc2"),
     (4, 8), "Python: TE module (dgrad + wgrad back)", f"{TE} v2.14 module/linear.py"),
    ("dense", ("fp8 current casts and amax all-reduces (4 inputs; 4 output gradients, "
     "2 gathered transposes)"),
     ("qkv_proj.fp8_cast", "qkv_proj.amax_all_reduce", "out_proj.cast_transpose",
      "fc1.fp8_cast", "fc1.amax_all_reduce", "fc2.cast_transpose"),
     (12, 18), "C++: one quantize call = amax (all-reduce), scale, cast; norm-fused amax",
     (f"{TE} v2.14 csrc/quantizer.cpp Float8CurrentScalingQuantizer::quantize_impl; "
     f"module/linear.py, layernorm_linear.py with_amax_reduction")),
    ("moe", "QKV split copies (q/k norms)", ("qkv_split",), (3, 1),
     "Python: reshape; TE norm contiguous (K); V contiguous; cat",
     f"{M25} attention.py L1151-1157; {TE} v2.9 ops/basic/rmsnorm.py L182; Megatron-LM#6459"),
    ("moe", "q/k norms", ("qk_norm",), (2, 2), "Python: two TENorm calls",
     f"{M25} attention.py L1154, L1157; Megatron-LM#6459 ('two rmsnorm_fwd_general launches')"),
    ("moe", "RoPE, Q and K", ("rope",), (2, 2), "Python", f"{M25} attention.py L837, L850"),
    ("moe", "router gating GEMM", ("router",), (1, 2), "Python: te_general_gemm",
     f"{M25} moe_utils.py RouterGatingLinearFunction"),
    ("moe", "forced-balance random logits", ("router_random_logits",), (2, 0), "Python",
     f"{M25} moe_utils.py RandomSTE (clone, normal_)"),
    ("moe", "router top-k + aux loss, fused (Bridge perf recipes)", ("router_topk_softmax",),
     (6, 6), ("Python: 3 TE fused kernels, sum, /coeff, tracker add_; backward ones*scale (2), "
     "3 fused backwards, grad add"),
     (f"{M25} router.py L471-521, L269-295, L379-; moe_utils.py L524, L625, L717; "
     f"{TE} v2.9 pytorch/router.py (one tex call each way per function); unfused: 27 / ~12")),
    ("moe", "dispatcher preprocess + D2H", ("moe_tokens_to_host",), (10, 0),
     "Python: 6 reductions / copies (bool sum is int64: .long() a no-op), 4 D2H copies",
     f"{M25} token_dispatcher.py L477-575, L884-896"),
    ("moe", "expert fp8 casts (16 experts x 2 GEMM inputs)",
     ("expert_fc1.cast_transpose", "expert_fc2.cast_transpose"), (96, 96),
     "C++: split_quantize, one Python call a GEMM input (3 kernels an expert)",
     f"{TE} v2.9 module/grouped_linear.py (tex.split_quantize), csrc/extensions/cast.cpp L496+"),
    ("moe", "expert GEMMs (16 experts)", ("expert_fc1", "expert_fc2"), (32, 64),
     "C++: general_grouped_gemm, one Python call a GroupedLinear pass",
     f"{TE} v2.9 module/grouped_linear.py (general_grouped_gemm, multi-stream cuBLAS)"),
]


def _row(rid: str) -> dict[str, str]:
    with PUBLIC.open(newline="") as f:
        return next(r for r in csv.DictReader(f) if r["id"] == rid)


def _layer(kind: str) -> tuple[list, list]:
    row = _row(ROWS[kind])
    cfg = row_config(row, predict_training_row(row).chosen)
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe=kind == "moe")
    return fwd, backward_of(fwd, sh)


def _count(ops: list, names: tuple[str, ...], backward: bool) -> int:
    """Host launches of the ops named (backward: their ``.bwd`` ops, a GEMM's dgrad and
    wgrad, a cast's gradient cast and transpose)."""
    total = 0
    for op in ops:
        base = op.name.removesuffix(".bwd").removesuffix(".dgrad").removesuffix(".wgrad")
        if backward:
            for n in names:
                stem = n.removesuffix(".fp8_cast").removesuffix(".cast_transpose")
                if base == n or stem != n and op.name.startswith(f"{stem}.grad") or \
                        stem != n and op.name == f"{stem}.input_fp8_transpose":
                    total += host.launches(op)
                    break
        elif op.name in names:
            total += host.launches(op)
    return total


def audit() -> None:
    layers = {kind: _layer(kind) for kind in ROWS}
    print("| layer | part | trainsim fwd / bwd | code fwd / bwd | issued from | source |")
    print("|---|---|---|---|---|---|")
    for kind, part, names, (sf, sb), where, src in AUDIT:
        fwd, bwd = layers[kind]
        tf, tb = _count(fwd, names, False), _count(bwd, names, True)
        print(f"| {kind} | {part} | {tf} / {tb} | {sf} / {sb} | {where} | {src} |")
    for kind, (fwd, bwd) in layers.items():
        print(f"\n{kind} ({ROWS[kind]}): trainsim launches per layer pass "
              f"{sum(host.launches(o) for o in fwd)} forward, "
              f"{sum(host.launches(o) for o in bwd)} backward")


def whatif() -> None:
    """The public file's MAPE with the router's top-k and loss at the fused count for the
    megatron-bridge rows (every Bridge perf recipe sets moe_router_fusion)."""
    kept = moe_block.MOE_KERNELS["router"]
    errs: dict[str, list[float]] = {"as counted": [], "fused router (Bridge)": []}
    with PUBLIC.open(newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        base = predict_training_row(row)
        errs["as counted"].append(abs(base.predicted / base.measured - 1))
        if row["framework"] == "megatron-bridge" and row.get("num_experts"):
            moe_block.MOE_KERNELS["router"] = (6, 6)
            try:
                alt = predict_training_row(row)
            finally:
                moe_block.MOE_KERNELS["router"] = kept
            print(f"{row['id']}: {100 * (base.predicted / base.measured - 1):+.2f} -> "
                  f"{100 * (alt.predicted / alt.measured - 1):+.2f} %")
        else:
            alt = base
        errs["fused router (Bridge)"].append(abs(alt.predicted / alt.measured - 1))
    for k, v in errs.items():
        print(f"public MAPE, {k}: {100 * sum(v) / len(v):.4f} %")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--whatif", action="store_true")
    a = ap.parse_args(argv)
    audit()
    if a.whatif:
        print()
        whatif()
    return 0


if __name__ == "__main__":
    sys.exit(main())
