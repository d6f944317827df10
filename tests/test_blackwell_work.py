"""benchmarks/blackwell_work.py: the row set, the generation split and the share regression
(no simulation: planted gaps and shares)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import load_script

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bw():
    return load_script(ROOT / "benchmarks" / "blackwell_work.py")


def test_generations_and_rows(bw):
    assert [bw.generation(g) for g in ("gb200", "b200-sxm-180gb", "gb300", "h100-sxm-80gb",
                                       "h200-sxm-141gb", "a100-sxm-80gb")] == \
        ["blackwell"] * 3 + ["hopper"] * 2 + ["other"]
    rs = bw.rows()
    gens = {r["_gen"] for r in rs}
    assert gens == {"blackwell", "hopper"}
    # every Blackwell row of the mlperf5 file is in, DeepSeek-V3 (preset experts) reads MoE
    assert sum(r["_key"].startswith("training_mlperf5:") and r["_gen"] == "blackwell"
               for r in rs) == 19
    assert all(r["_moe"] for r in rs if r["model"] == "deepseek-v3")
    assert not any(r["_moe"] for r in rs if r["model"].startswith("llama3.1-405b"))


def test_fit_recovers_a_planted_misprice(bw):
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 0.8, size=(30, 4))
    a = np.array([0.15, -0.05, 0.0, 0.1])
    assert np.allclose(bw.fit(x, x @ a), a)


def test_shares_from_variant_files(bw, tmp_path):
    rs = [{"_key": "f:a"}, {"_key": "f:b"}]
    (tmp_path / "base.json").write_text(json.dumps({"f:a": [1.2, 1.0], "f:b": [2.0, 2.0]}))
    (tmp_path / "gemm.json").write_text(json.dumps({"f:a": [1.2, 1.06], "f:b": [2.0, 2.1]}))
    (tmp_path / "launch.json").write_text(json.dumps({"f:a": [1.2, 1.01], "f:b": [2.0, 2.0]}))
    sh = bw.shares(tmp_path, rs)
    assert sh["f:a"]["gemm"] == pytest.approx(0.6) and sh["f:b"]["gemm"] == pytest.approx(0.5)
    assert sh["f:a"]["launch"] == pytest.approx(0.01) and "attention" not in sh["f:a"]
