"""PyTorch SDPA's flash backend apart from the flash-attn package (63rd session, attn63): the
kernel databases' SDPA records answer ``sdpa`` ops only, not the package's ``flash2``."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path

import pytest

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import compute_model_for
from trainsim.compute.chain import DATA_DIR, _load
from trainsim.compute.database import record_impl
from trainsim.validate import validate_file

ROOT = Path(__file__).resolve().parents[1]
CAUSAL_8K = {"batch": 1, "heads": 32, "kv_heads": 8, "q_len": 8192, "kv_len": 8192,
             "head_dim": 128, "causal": True, "window": None}


def _op(impl: str, backward: bool = False):
    from trainsim.workload.ops import Attention
    return Attention("attn", backward=backward, impl=impl, **CAUSAL_8K)


def test_a_profiled_flash2_record_is_sdpas_backend():
    """``trainsim profile`` runs ``flash2`` through SDPA's FLASH_ATTENTION backend: the record
    is read as ``sdpa`` in every format; other implementations keep their names."""
    assert record_impl({"impl": "flash2"}, "trainsim-kernel-db/3") == "sdpa"
    assert record_impl({"impl": "flash2"}, "trainsim-kernel-db/1") == "sdpa"
    assert record_impl({"impl": "cudnn"}, "trainsim-kernel-db/3") == "cudnn"
    assert record_impl({"impl": "flash1"}, "trainsim-kernel-db/2") == "mem_efficient"


def test_the_h200_records_price_sdpa_and_not_the_flash_attn_package():
    db = _load(str(DATA_DIR / "h200-sxm-141gb.json"), catalog_gpu)
    for backward in (False, True):
        assert db.lookup(_op("sdpa", backward)) is not None
        assert db.lookup(_op("flash2", backward)) is None
        assert db.lookup(dataclasses.replace(_op("flash2", backward), dropout=True)) is None


@pytest.mark.parametrize("gpu", ["h100-sxm-80gb", "h200-sxm-141gb"])
def test_both_hopper_boards_price_the_package_from_one_model(gpu):
    """The flash-attn package from the roofline on the H100 and the H200 alike (the 62nd
    session's twin read SDPA's records for it on both), SDPA's backend from the records."""
    chain = compute_model_for(catalog_gpu(gpu), "auto", catalog_gpu)
    assert chain.explain(_op("flash2"))[1] == "roofline"
    assert chain.explain(_op("sdpa"))[1].startswith("database")


def test_one_gpus_two_libraries_differ():
    """The evidence for two kinds: on one B200, one harness, SDPA's backend ran 0.93-0.95 of
    flash-attn 2.7.4's rate forward, 0.94-0.97 backward (``benchmarks/attn63_sdpa_ratio.py``)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("attn63_sdpa_ratio",
                                                  ROOT / "benchmarks" / "attn63_sdpa_ratio.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    pairs = mod.pairs()
    assert len(pairs["fwd"]) == len(pairs["bwd"]) == 6
    assert all(0.92 < r < 0.95 for _, r in pairs["fwd"])
    assert all(0.93 < r < 0.97 for _, r in pairs["bwd"])
    assert mod.geometric_mean([r for _, r in pairs["fwd"]]) == pytest.approx(0.931, abs=0.001)


def test_the_fa2_papers_h100_rows_are_no_longer_priced_from_sdpa_records():
    """The FA3 paper's H100 FA2 forward bars at head dim 128, causal (the flash-attn package):
    333 TFLOP/s at 8k tokens was priced 281 (-15.5 %) from the H200's SDPA records on main."""
    _, res = validate_file(ROOT / "src/trainsim/data/validation/kernels_published.csv")
    rows = {r.id: r for r in res}
    row = rows["fa3paper-h100-fwd-hd128-causal-s8192-fa2"]
    assert row.chosen.get("model") == "roofline"
    assert abs(row.predicted - row.measured) / row.measured < 0.05
