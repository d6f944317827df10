"""Input edges of the attention kernels (2026-11-27, 45th session, edge45): the classes edge44 and
fuzz44 left as leads, and the brief's parallel-size edges.

- ``sm120``: FlashAttention-4 on a compute capability 12.x GPU file (consumer / workstation
  Blackwell) at head widths 8-576 and MLA pairs, dense and windowed;
- ``rows``: kernel-validation attention rows of every fused implementation x dtype (bf16, fp16,
  fp8, fp32, int8) x GPU (V100 to B200, MI300X) x head width x forward / backward;
- ``window``: a sliding-window model whose heads a framework's Transformer Engine runs unfused
  (wide heads on H100, B200, MI300X), with and without a stated kernel;
- ``parallel``: the brief's parallel edges (top_k > experts, experts not divisible by ep, kv heads
  against tp, vocab against tp, seq against 2*cp, vpp against layers and micro-batches, pp >
  layers, micro batch > global batch) on 1 and 100k+ GPUs.

Each input must give a sane answer or one ``TrainsimError`` line (``fuzz_checks.outcome``); a
row or config priced where the kernel's own source refuses it is a failure class too (the
oracle: ``refused_by_source``, the facts of ``config.validity``'s docstrings restated here).

    PYTHONPATH=src python benchmarks/fuzz_inputs45.py [--only sm120,rows,window,parallel] [--every]
"""
from __future__ import annotations

import copy
import csv
import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz_checks import Case, only_of, print_report, run_config, run_surfaces, surface_parser
from fuzz_inputs43 import _edit

from trainsim.validate.kernels import predict_kernel_row

fuzz_checks.TIME_LIMIT_S = 20
KERNELS = Path(__file__).resolve().parents[1] / "../shared/validation/kernels_published.csv"
SM120 = {"name": "sm120-test", "peak_tflops": {"fp32": 126, "bf16": 504, "fp8": 1008, "fp4": 2016},
         "hbm_gib": 96, "hbm_gbyte_s": 1792, "nvlink_gbyte_s": 64, "num_sms": 188, "l2_mib": 128,
         "tdp_w": 600, "compute_capability": 120, "pcie_only": True, "source": "fuzz45"}
ARCH = {"v100-sxm-32gb": 70, "a100-sxm-80gb": 80, "l40s-pcie-48gb": 89, "h100-sxm-80gb": 90,
        "b200-sxm-180gb": 100, "mi300x": None}


def refused_by_source(impl: str, dtype: str, hd: int, arch: int | None, backward: bool) -> bool:
    """Whether the kernel's source refuses the row (the oracle; the sources are cited in
    ``config.validity``: FA2/FA3 flash_api.cpp dtype and head checks, FA4 interface.py)."""
    if dtype not in ("bf16", "fp16"):
        return True  # no 8-bit or fp32 attention is priced
    if impl in ("flash3", "flash4", "cudnn") and arch is None:
        return True  # NVIDIA's kernels on an AMD GPU
    if impl == "flash3" and arch < 90:
        return True
    if impl == "flash4" and arch is not None and arch < 90 and backward:
        return True
    if impl in ("flash2", "flash3") and hd > 256:
        return True
    if impl == "flash4" and arch is not None and 90 <= arch < 100:
        return not (8 <= hd <= 256 and hd % 8 == 0)
    if impl == "flash4" and arch is not None and arch >= 100:
        return not ((8 <= hd <= 128 or hd in (256, 512)) and hd % 8 == 0)
    return False


def _with_oracle(row: dict, refused: bool) -> str | None:
    res = predict_kernel_row(row, compute_db=None)
    if res.error is None and refused:
        return "priced a row its kernel's source refuses"
    if res.error is not None and "\n" in res.error:
        return "multi-line error"
    if res.error is None and not res.predicted > 0:
        return f"insane prediction {res.predicted!r}"
    return None


def row_cases() -> Iterator[Case]:
    with open(KERNELS, newline="") as f:
        base = next(r for r in csv.DictReader(f) if r["kind"] == "attention_fwd")
    for impl in ["flash2", "flash3", "flash4", "cudnn", "sdpa", "mem_efficient", "ck"]:
        for dtype in ["bf16", "fp16", "fp8", "fp32", "int8"]:
            for gpu, arch in ARCH.items():
                for hd in [64, 72, 128, 192, 256, 320, 512]:
                    for kind in ["attention_fwd", "attention_bwd"]:
                        row = dict(base, note="", id="fuzz45", implementation=impl, dtype=dtype,
                                   gpu=gpu, head_dim=str(hd), kind=kind)
                        refused = refused_by_source(impl, dtype, hd, arch, kind != "attention_fwd")
                        yield (f"{impl} {dtype} {gpu} hd={hd} {kind}",
                               lambda r=row, x=refused: _with_oracle(r, x))


def _sm120_run(qk: int, v: int, window: int | None) -> str | None:
    fits = qk % 8 == 0 and v % 8 == 0 and max(qk, v) <= 192
    cfg = {"model": {"hidden_size": 2048, "num_layers": 2, "num_attention_heads": 16,
                     "vocab_size": 32000, "head_dim": qk},
           "parallel": {}, "training": {"global_batch_size": 4, "seq_length": 2048,
                                        "attention": "flash4"},
           "cluster": {"gpu": SM120, "num_gpus": 1, "gpus_per_node": 1}}
    if window:
        cfg["model"]["sliding_window"] = window
    if qk != v:
        cfg["model"].update(head_dim=None, kv_lora_rank=512, qk_head_dim=qk - 64,
                            v_head_dim=v, qk_pos_emb_head_dim=64, position_embedding="rope")
        cfg["model"] = {k: x for k, x in cfg["model"].items() if x is not None}
        fits = qk % 8 == 0 and v % 8 == 0 and \
            2 * (128 * qk + 64 * qk + 64 * v) <= 99 * 1024 and 2 * 128 * (qk + v) <= 99 * 1024
    bad = run_config(cfg)
    return bad or (None if fits else "priced flash4 heads past 12.x shared memory")


def sm120_cases() -> Iterator[Case]:
    for hd in [8, 60, 64, 96, 128, 160, 192, 200, 256, 320, 512, 576]:
        for window in (None, 256):
            yield f"sm120 flash4 hd={hd} window={window}", lambda h=hd, w=window: _sm120_run(h, h, w)
    for qk, v in [(192, 128), (256, 128), (576, 512)]:
        yield f"sm120 flash4 mla ({qk}, {v})", lambda a=qk, b=v: _sm120_run(a, b, None)


def _window_run(cfg: dict) -> str | None:
    try:
        return run_config(cfg)
    except fuzz_checks.TrainsimError as exc:
        if "set training.attention to" in str(exc) and "sliding window" in str(exc):
            return "window refusal suggests kernels that refuse the heads"
        raise


def window_cases() -> Iterator[Case]:
    for gpu in ["h100-sxm-80gb", "b200-sxm-180gb", "mi300x"]:
        for fw in ["megatron-core", "megatron-lm", "nemo", "megatron-bridge", "torchtitan"]:
            for hd in [128, 256, 320, 512, 576]:
                cfg = _edit("dense", model={"head_dim": hd, "sliding_window": 128},
                            training={"framework": fw}, cluster={"gpu": gpu})
                yield f"{gpu} {fw} window hd={hd}", lambda c=cfg: _window_run(c)


def parallel_cases() -> Iterator[Case]:
    edits = [
        ("topk>experts", "moe", {"model": {"moe_router_topk": 9}}),
        ("experts%ep", "moe", {"model": {"num_experts": 6}, "parallel": {"ep": 4}}),
        ("kv%tp", "dense", {"model": {"num_kv_heads": 2}, "parallel": {"tp": 4}}),
        ("kv=3", "dense", {"model": {"num_kv_heads": 3}}),
        ("vocab<tp", "dense", {"model": {"vocab_size": 3}, "parallel": {"tp": 4}}),
        ("vocab%tp", "dense", {"model": {"vocab_size": 1001}, "parallel": {"tp": 2}}),
        ("seq%2cp", "dense", {"parallel": {"cp": 2}, "training": {"seq_length": 510}}),
        ("vpp layers", "dense", {"model": {"num_layers": 6}, "parallel": {"pp": 2, "vpp": 2}}),
        ("vpp few mb", "mla", {"training": {"global_batch_size": 8}}),
        ("pp>layers", "dense", {"parallel": {"pp": 8}}),
        ("mbs>gbs", "dense", {"training": {"micro_batch_size": 32}}),
    ]
    for label, base, sections in edits:
        for gpus in (1, 8, 131072):
            cfg = _edit(base, **copy.deepcopy(sections))
            cfg["cluster"]["num_gpus"] = gpus
            cfg["cluster"]["gpus_per_node"] = min(gpus, 8)
            if gpus == 1:
                cfg["parallel"] = {k: v for k, v in cfg["parallel"].items()
                                   if k not in ("tp", "pp", "ep", "vpp", "cp")}
            if gpus > 8:
                cfg["training"]["global_batch_size"] = gpus * 2
            yield f"{label} gpus={gpus}", lambda c=cfg: run_config(c)


def main(argv: list[str] | None = None) -> int:
    ap = surface_parser()
    args = ap.parse_args(argv)
    only = only_of(args)
    warnings.simplefilter("ignore")
    surfaces = {"sm120": sm120_cases, "rows": row_cases, "window": window_cases,
                "parallel": parallel_cases}
    return print_report(run_surfaces(surfaces, only), every=args.every)


if __name__ == "__main__":
    sys.exit(main())
