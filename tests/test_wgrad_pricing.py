"""The weight-gradient GEMM against the forward GEMM of the same layer, as measured.

A linear layer's wgrad computes dW[n, k] = dY^T[n, tokens] X[tokens, k]: the token count is its
k (``workload.layers.backward_of``). kernels_h100_measured.csv times each layer's forward,
dgrad and wgrad GEMM (``measure_kernels.py``: ``{lab}-fwd-m{M}``, ``{lab}-wgrad-m{M}``), so
the model's wgrad-over-forward ratio can be checked shape by shape, without the GEMM ceiling.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import re

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute.roofline import RooflineModel
from trainsim.validate import BUNDLED_DIR
from trainsim.workload.ops import Gemm

ID = re.compile(r"^(h100m-gemm-bf16-.*)-(fwd|wgrad)-m(\d+)$")


def _pairs(tokens: int) -> list[tuple[float, float]]:
    """(measured, modelled) wgrad-over-forward time ratios of the bf16 GEMM rows at
    ``tokens`` tokens."""
    gpu = dataclasses.replace(catalog_gpu("h100-sxm-80gb"), sustained_of_burst=1.0)
    model = RooflineModel(gpu)
    rows: dict[tuple[str, str], tuple[float, float]] = {}
    with open(BUNDLED_DIR / "kernels_h100_measured.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            hit = ID.match(r["id"])
            if not hit or int(hit.group(3)) != tokens or r["measured_unit"] != "TFLOP/s":
                continue
            op = Gemm(r["id"], int(r["m"]), int(r["n"]), int(r["k"]), "bf16")
            measured_s = op.flops / (float(r["measured_value"]) * 1e12)
            rows[(hit.group(1), hit.group(2))] = (measured_s, model.time(op))
    out = []
    for (layer, kind), (wgrad_meas, wgrad_model) in rows.items():
        if kind == "wgrad" and (layer, "fwd") in rows:
            fwd_meas, fwd_model = rows[(layer, "fwd")]
            out.append((wgrad_meas / fwd_meas, wgrad_model / fwd_model))
    return out


def test_a_wgrad_over_1024_tokens_is_slower_than_its_forward_by_what_the_h100_measured():
    """Over 1,024 tokens (k = 1,024) the wgrad runs slower than the forward GEMM of the same
    FLOPs, measured and modelled, and the model's ratio stays within 7 % of the measured one
    on average (the tile prologue/epilogue is what short k pays). Measured 1.063; modelled
    1.102 with the 128x128 tile alone, 1.133 since the forwards' 1,024-row grids may run
    128x256 tiles and split k (``roofline.gemm_tiles``; 24th session): those forwards were
    priced 7-39 % slow and are now within -21..+3 %, while the many-wave k = 1,024 wgrads
    keep the per-tile cost they overpay (``benchmarks/gemm_variants.py --ksweep``)."""
    pairs = _pairs(1024)
    assert len(pairs) >= 20
    measured = math.exp(sum(math.log(a) for a, _ in pairs) / len(pairs))
    modelled = math.exp(sum(math.log(b) for _, b in pairs) / len(pairs))
    assert measured > 1.02 and modelled > 1.0
    assert abs(modelled / measured - 1.0) < 0.07


def test_a_wgrad_over_many_tokens_costs_what_its_forward_costs():
    """Over 8,192 and 16,384 tokens the wgrad and the forward GEMM take the same time within
    a few percent, measured and modelled."""
    for tokens in (8192, 16384):
        pairs = _pairs(tokens)
        assert len(pairs) >= 20
        for i in (0, 1):
            mean = math.exp(sum(math.log(p[i]) for p in pairs) / len(pairs))
            assert abs(mean - 1.0) < 0.08
