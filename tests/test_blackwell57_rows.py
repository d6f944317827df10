"""benchmarks/blackwell57_rows.py: the sm100 row set, the sm100-only variants, the one-constant
fit and the pair arithmetic (no training row simulated)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import load_script

from trainsim import catalog
from trainsim.compute import chain
from trainsim.workload.ops import Attention, Elementwise, Gemm

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bw():
    return load_script(ROOT / "benchmarks" / "blackwell57_rows.py")


def test_rows_are_sm100_and_their_files_hopper_rows(bw):
    rs = bw.rows()
    assert {r["_gen"] for r in rs} == {"sm100", "hopper"}
    gpus = {r["gpu"] for r in rs if r["_gen"] == "sm100"}
    assert gpus <= set(bw.SM100) and "gb200" in gpus and "b200-sxm-180gb" in gpus
    keys = {r["_key"] for r in rs}
    # the brief's rows are in: NeMo 25.02 B200, dgxc 25.05 GB200 fp8, the public Bridge 405B B200
    assert {"nemo_perf:nemo2502-llama3-405b-b200-128",
            "dgxc2505:dgxc2505-llama3.1-405b-fp8-gb200-512",
            "public:bridge2511-llama3.1-405b-b200-128"} <= keys
    # Blackwell Ultra (sm103) is another owner's
    assert not any(r["gpu"].startswith(("gb300", "b300")) for r in rs)
    for _, a, b in bw.PAIRS:
        assert a in keys and b in keys


def test_variants_slow_sm100_work_only(bw, monkeypatch):
    monkeypatch.setattr(chain.ChainModel, "explain", chain.ChainModel.explain)
    gemm = Gemm("fc1", 8192, 8192, 8192)
    att = Attention("core", batch=1, heads=32, kv_heads=8, q_len=4096, kv_len=4096, head_dim=128, impl="cudnn")
    mem = Elementwise("add", bytes=1 << 28)
    models = {g: chain.ChainModel(catalog.gpu(g)) for g in ("gb200", "h100-sxm-80gb")}
    before = {g: [m.explain(op)[0] for op in (gemm, att, mem)] for g, m in models.items()}
    bw.patch("gemm")
    after = {g: [m.explain(op)[0] for op in (gemm, att, mem)] for g, m in models.items()}
    assert after["gb200"][0] == pytest.approx(before["gb200"][0] * (1 + bw.STEP))
    assert after["gb200"][1:] == before["gb200"][1:]
    assert after["h100-sxm-80gb"] == before["h100-sxm-80gb"]


def test_clock_variant_slows_attention_too(bw, monkeypatch):
    monkeypatch.setattr(chain.ChainModel, "explain", chain.ChainModel.explain)
    att = Attention("core", batch=1, heads=32, kv_heads=8, q_len=4096, kv_len=4096, head_dim=128, impl="cudnn")
    model = chain.ChainModel(catalog.gpu("b200-sxm-180gb"))
    t0 = model.explain(att)[0]
    bw.patch("clock")
    assert model.explain(att)[0] == pytest.approx(t0 * (1 + bw.STEP))


def test_fit_recovers_a_planted_deficit(bw):
    assert bw.fit([(0.8, 0.12), (0.4, 0.06), (0.2, 0.03)]) == pytest.approx(0.15)
    assert bw.fit([]) == 0.0


def test_pairs_per_gpu_seconds(bw, capsys):
    a, b = bw.PAIRS[0][1:]
    by = {a: {"num_gpus": "512", "global_batch_size": "1024"},
          b: {"num_gpus": "256", "global_batch_size": "1024"}}
    bw.pairs({a: [10.0, 10.0], b: [10.0, 9.0]}, by)
    out = capsys.readouterr().out
    # 5 / 5 -> 2.5 / 2.25: measured halves, predicted 0.45
    assert "ratio measured 0.500, predicted 0.450" in out and "(-10.0 %)" in out


def test_report_reads_the_variant_files(bw, tmp_path, capsys):
    rs = [r for r in bw.rows() if r["_key"] in ("public:bridge2511-llama3.1-405b-b200-128",
                                                  "public:bridge2604p1-llama3.1-405b-h100-1024-gbs1536")]
    assert len(rs) == 2
    k_bw, k_h = (r["_key"] for r in sorted(rs, key=lambda r: r["_gen"] != "sm100"))
    base = {k_bw: [1.1, 1.0], k_h: [1.0, 1.0]}
    (tmp_path / "base.json").write_text(json.dumps(base))
    for v, t in (("gemm", 1.06), ("clock", 1.08), ("memory", 1.01), ("comm", 1.0)):
        (tmp_path / f"{v}.json").write_text(json.dumps({k_bw: [1.1, t]}))
    bw.report(tmp_path, rs)
    out = capsys.readouterr().out
    # gap 0.1 over a GEMM share of 0.6: the row alone asks for a = +0.17
    line = next(x for x in out.splitlines() if k_bw[:40] in x)
    assert "-9.1" in line and "0.60" in line and "+0.17" in line


def test_check_sets_the_linear_estimate_beside_a_stored_repricing(bw, tmp_path, capsys):
    rs = [r for r in bw.rows() if r["_key"] == "public:bridge2511-llama3.1-405b-b200-128"]
    k = rs[0]["_key"]
    (tmp_path / "base.json").write_text(json.dumps({k: [1.0, 0.9]}))
    (tmp_path / "gemm.json").write_text(json.dumps({k: [1.0, 0.954]}))  # share 0.6
    (tmp_path / "gemm_0.2.json").write_text(json.dumps({k: [1.0, 1.0]}))
    bw.check(tmp_path, rs, 0.2)
    out = capsys.readouterr().out
    # linear: 0.9 x (1 + 0.2 x 0.6) = 1.008 -> +0.8 %; the stored re-pricing says 0.0 %
    assert "10.0 (-10.0) -> linear   0.8 ( +0.8), re-priced   0.0 ( +0.0)" in out
