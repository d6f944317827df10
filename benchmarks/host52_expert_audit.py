"""Issue 17 items 2-3: host time per expert in Transformer Engine's GroupedLinear, as trainsim
charges it against what the code does (52nd session, host52; a diagnostic: nothing here feeds
trainsim).

    PYTHONPATH=src:benchmarks python benchmarks/host52_expert_audit.py     # the table (~10 s)

For the public Megatron-Bridge MoE rows whose experts run TE's per-expert ``GroupedLinear``
(``multi_stream``), at the configuration trainsim's tuner picks, it takes one MoE layer's expert
ops (``layers.layer_forward`` / ``backward_of``: the experts' fp8 casts and grouped GEMMs,
fc1 and fc2, forward and backward) and prints, per local expert and layer pass:

* trainsim: the host launches of those ops and what ``HOST_S_PER_KERNEL`` charges for them;
* the code: the same kernels as the C++ loops issue them (``split_quantize``' casts and
  ``general_grouped_gemm``'s cuBLAS calls: ``CPP_LAUNCH_S`` each), plus the per-expert
  allocations and views counted from the source (``ALLOCS`` / ``VIEWS``; TE v2.9 for Bridge
  25.11, v2.14 for 26.04, files and lines in ``benchmarks/candidates/
  host52_expert_allocs.patch``' ``workload/te_grouped_host.py``) at measured costs (an
  allocation and its free 2.15 us from Python less the 1 us binding, NVIDIA/cutlass#3275 and
  pytorch/pytorch#41383; a C++ view ``PY_VIEW_S - PY_BINDING_S``);
* #2897's measured per-expert host items of TE's fused grouped MLP on GB200 (wgrad allocations
  350 us, ``clear_tensor_data`` 200 us, weight quantizers 90 us for 64 experts: 10 us an
  expert, forward + backward, on Grace), over TE#2053's Grace / x86 ratio 2.75: ~3.6 us on x86.

The Python per expert that no measurement prices (the quantized tensor objects built from
C++, ``set_usage`` / ``get_weight_workspace`` / ``update_usage`` / ``prepare_for_saving`` per
quantizer and tensor) is left out of the code column: a lower bound.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from trainsim.compute import host
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Elementwise, Gemm
from trainsim.workload.shard import CAST_KERNEL, shard_of

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared" / "validation" / "training_public.csv"
PUBLIC = SHARED if SHARED.exists() else (
    HERE.parent / "src" / "trainsim" / "data" / "validation" / "training_public.csv")
EXPERTS = ("expert_fc1", "expert_fc2")

ALLOC_FREE_S = 2.15e-6
"""``torch.empty(1, ...)`` allocated and freed from Python on an x86-64 B200 host
(NVIDIA/cutlass#3275, 2026-07-22)."""
CPP_ALLOC_S = ALLOC_FREE_S - host.PY_BINDING_S
CPP_VIEW_S = host.PY_VIEW_S - host.PY_BINDING_S
GB200_EXPERT_S = (350e-6 + 200e-6 + 90e-6) / 64
"""NVIDIA/TransformerEngine#2897 (2026-04-16): the host items of the fused grouped MLP that
scale with experts, GB200, 64 experts, forward + backward."""
GRACE_RATIO = 37.08 / 13.48
"""NVIDIA/TransformerEngine#2053: a bf16 torch Linear forward's CPU time, GB200 / H100 DGX."""


def per_split(recipe: str, tn_only: bool, dtype: str) -> tuple[tuple[int, int], ...]:
    """(allocations, C++ views) per expert of one GroupedLinear call: fprop (the input's
    ``split_quantize`` outputs, the output's slice; bf16: the input's split and the slice),
    the backward (the output gradient's ``split_quantize`` and the dgrad's slice; bf16: the
    gradient's split and the slice), the wgrad (none: ``main_grad`` given)."""
    if dtype != "fp8":
        return ((0, 2), (0, 2))
    if recipe in ("delayed", "current"):
        return ((2 + int(tn_only), 1), (2 + int(tn_only), 1))
    return ((0, 5), (0, 5))  # bulk: two buffers a call (not per expert), 2 views x 2 usages + 1


def expert_ops(rid: str):
    with PUBLIC.open(newline="") as f:
        row = next(r for r in csv.DictReader(f) if r["id"] == rid)
    cfg = row_config(row, predict_training_row(row).chosen)
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe=True)
    ops = [op for op in fwd + backward_of(fwd, sh) if op.name.startswith(EXPERTS)]
    return cfg, sh, ops


def audit_row(rid: str) -> dict[str, float] | None:
    cfg, sh, ops = expert_ops(rid)
    local = cfg.model.num_experts // cfg.parallel.ep
    grouped = [op for op in ops if isinstance(op, Gemm) and op.grouped == "multi_stream"]
    if not grouped or local < 2:
        return None
    casts = [op for op in ops if isinstance(op, Elementwise) and op.kernel == CAST_KERNEL]
    n_gemm = sum(host.launches(op) for op in grouped)
    n_cast = sum(host.launches(op) for op in casts)
    calls = 2  # fc1 and fc2
    allocs = views = 0
    for a, v in per_split(sh.fp8_recipe, sh.fp8_tn_only, sh.dtype):
        allocs, views = allocs + calls * a, views + calls * v
    per = 1e6 / local
    return {
        "local": local, "launches": (n_gemm + n_cast) / local,
        "trainsim_us": (n_gemm + n_cast) * host.HOST_S_PER_KERNEL * per,
        "cpp_launch_us": (n_gemm + n_cast) * host.CPP_LAUNCH_S * per,
        "alloc_view_us": (allocs * CPP_ALLOC_S + views * CPP_VIEW_S) * 1e6,
        "allocs": allocs, "views": views,
    }


def main(argv: list[str] | None = None) -> int:
    if not PUBLIC.exists():
        print(f"needs {PUBLIC}")
        return 1
    with PUBLIC.open(newline="") as f:
        rids = [r["id"] for r in csv.DictReader(f)
                if r["framework"] == "megatron-bridge" and r["num_experts"]]
    x86 = GB200_EXPERT_S / GRACE_RATIO * 1e6
    print("Host time per local expert and MoE layer pass (fc1 + fc2, forward + backward), us\n")
    print("| row | local experts | launches / expert | trainsim (x 30 us) | same kernels from "
          "C++ (x CPP_LAUNCH_S) | allocations / views per expert | their cost | code total "
          "(lower bound) | trainsim / code |")
    print("|---|---|---|---|---|---|---|---|---|")
    for rid in rids:
        a = audit_row(rid)
        if a is None:
            continue
        code = a["cpp_launch_us"] + a["alloc_view_us"]
        print(f"| {rid} | {a['local']} | {a['launches']:.0f} | {a['trainsim_us']:.0f} | "
              f"{a['cpp_launch_us']:.0f} | {a['allocs']} / {a['views']} | "
              f"{a['alloc_view_us']:.1f} | {code:.0f} | {a['trainsim_us'] / code:.1f}x |")
    print(f"\nTE#2897 (GB200, fused grouped MLP): {GB200_EXPERT_S * 1e6:.1f} us per expert of "
          f"per-expert host items, forward + backward; / {GRACE_RATIO:.2f} (TE#2053) = "
          f"{x86:.1f} us on x86")
    return 0


if __name__ == "__main__":
    sys.exit(main())
