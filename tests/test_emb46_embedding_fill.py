"""PyTorch's dense embedding backward zeroes the rank's (vocabulary / TP) x hidden table before
it adds the tokens' rows (``workload.head.embedding_zero_fill``), priced on every GPU; a measured
``embedding.bwd`` record, which timed that fill with the rest, keeps only the rest
(``compute.database.KernelDatabase.without_fill``, the record's ``zeroed`` table); and the
multi-token-prediction module's own embedding lookup, norms and concatenation
(``workload.head.mtp_input_forward`` / ``mtp_input_backward``)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import load_script

from trainsim.catalog import gpu, run_config_from_dict
from trainsim.compute import KernelDatabase, RooflineModel
from trainsim.compute.chain import BUNDLED, DATA_DIR, compute_model_for
from trainsim.compute.database import record_scatter
from trainsim.errors import ConfigError
from trainsim.profile.shapes import distinct_cases, sweep_configs
from trainsim.workload.head import (
    EMBEDDING_ZERO_FILL,
    embedding_backward,
    embedding_zero_fill,
    mtp_input_backward,
    mtp_input_forward,
)
from trainsim.workload.shard import shard_of

ROOT = Path(__file__).resolve().parents[1]
H100 = "h100-sxm-80gb"


def _cfg(gpu_name=H100, tp=1, pp=1, preset="llama3-8b", seq=4096, framework=None, layers=None,
         **par):
    t = {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": seq}
    if framework:
        t |= {"framework": framework, "framework_version": "0.14"}
    return run_config_from_dict({
        "model": {"preset": preset, **({"num_layers": layers} if layers else {})}, "parallel": {"tp": tp, "pp": pp, **par}, "training": t,
        "cluster": {"gpu": gpu_name, "num_gpus": 8 * pp, "compute_db": "auto"}})


def _names(ops):
    return [op.name for op in ops]


@pytest.mark.parametrize("tp", [1, 4])
def test_every_backward_zeroes_the_ranks_table_first(tp):
    cfg = _cfg(tp=tp)  # no framework: the fill is PyTorch's, not a framework's
    ops = embedding_backward(cfg, shard_of(cfg))
    names = _names(ops)
    assert names.index(EMBEDDING_ZERO_FILL) < names.index("embedding_grad")
    fill = ops[names.index(EMBEDDING_ZERO_FILL)]
    # 16-bit gradient table of vocab / tp rows
    assert fill.bytes == pytest.approx(cfg.model.vocab_size / tp * cfg.model.hidden_size * 2)
    assert fill.kernel == ""  # no record prices it: the memory-bound rate of the run's GPU


def test_fill_and_rest_are_the_record_on_its_gpu_and_table():
    """Llama 3 8B at TP 1, 4,096 tokens is the H100 record's own case: the fill priced by the
    roofline plus the record's remainder is the measured time, to rounding."""
    raw = json.loads((DATA_DIR / BUNDLED[H100]).read_text())
    rec = next(r for r in raw["kernels"] if r.get("kernel") == "embedding.bwd"
               and r["bytes"] == 4096 * 4096 * 10)
    assert rec["zeroed"] == {"rows": 128256, "cols": 4096}
    cfg = _cfg()
    chain = compute_model_for(cfg.cluster.gpu, "auto", gpu)
    ops = {op.name: op for op in embedding_backward(cfg, shard_of(cfg))}
    # the record drew its ids uniformly (``compute.database.record_scatter``); the run's text
    # repeats them (``workload.token_ids``): the record's own scatter is the exact hit
    as_profiled = replace(ops["embedding_grad"],
                          scatter=record_scatter(rec, "embedding.bwd", rec["bytes"]))
    fill, rest = chain.explain(ops[EMBEDDING_ZERO_FILL]), chain.explain(as_profiled)
    assert fill[1] == "roofline" and rest[1] == "database (exact)"
    assert fill[0] + rest[0] == pytest.approx(rec["time_s"], rel=1e-9)
    text = chain.explain(ops["embedding_grad"])
    assert text[1] == "database (interpolated)" and text[0] < rest[0]
    # at TP 8 the rank zeroes an eighth of the table but still scatters every token (the ids
    # outside its slice masked to row 0): the scatter shrinks a little, as measured
    cfg8 = _cfg(tp=8)
    ops8 = {op.name: op for op in embedding_backward(cfg8, shard_of(cfg8))}
    assert 0.7 * text[0] < chain.time(ops8["embedding_grad"]) < text[0]
    assert chain.time(ops8[EMBEDDING_ZERO_FILL]) < fill[0] / 7


def test_analytic_gpus_now_pay_the_fill():
    for name in ("a100-sxm-80gb", "b200-sxm-180gb", "h800-sxm-80gb"):
        cfg = _cfg(gpu_name=name)
        fill = next(op for op in embedding_backward(cfg, shard_of(cfg))
                    if op.name == EMBEDDING_ZERO_FILL)
        bw = cfg.cluster.gpu.hbm_bw_Bps
        assert RooflineModel(cfg.cluster.gpu).time(fill) > fill.bytes / bw


def _db(tmp_path, time_s, zeroed):
    rec = {"op": "elementwise", "name": "embedding_grad", "kernel": "embedding.bwd",
           "impl": "fused", "bytes": 4096 * 4096 * 10.0, "time_s": time_s, "zeroed": zeroed}
    p = tmp_path / "db.json"
    p.write_text(json.dumps({"format": "trainsim-kernel-db/3", "gpu": H100, "kernels": [rec]}))
    return p


def test_database_keeps_the_record_less_its_fill(tmp_path):
    fill = embedding_zero_fill(128256, 4096)
    db0 = KernelDatabase.empty(gpu(H100))
    t_fill = db0.analytic.time(fill)
    db = KernelDatabase.load(_db(tmp_path, 3 * t_fill, {"rows": 128256, "cols": 4096}), gpu)
    assert list(db.exact.values()) == [pytest.approx(2 * t_fill)]


def test_a_record_faster_than_its_own_fill_is_no_measurement(tmp_path):
    big = {"rows": 128256, "cols": 4096}
    with pytest.raises(ConfigError, match="zeroing its"):
        KernelDatabase.load(_db(tmp_path, 1e-6 * 60, big), gpu)
    skipped: list[str] = []
    db = KernelDatabase.load(_db(tmp_path, 1e-6 * 60, big), gpu, skipped)
    assert not db.exact and len(skipped) == 1
    # a remainder faster than the HBM peak is refused too
    skipped.clear()
    db = KernelDatabase.load(_db(tmp_path, 4.0e-4, big), gpu, skipped)
    assert not db.exact and "TB/s" in skipped[0]
    with pytest.raises(ConfigError, match="rows"):
        KernelDatabase.load(_db(tmp_path, 1e-3, {"cols": 4096}), gpu)


def test_bundled_labels_are_the_ones_their_own_sweep_wrote():
    relabel = load_script(ROOT / "benchmarks" / "emb46_relabel.py").relabel
    for name in BUNDLED.values():
        data = json.loads((DATA_DIR / name).read_text())
        recs = [r for r in data["kernels"] if r.get("kernel") == "embedding.bwd"]
        assert recs and all("zeroed" in r for r in recs)
        assert relabel(data) == data


def test_profiler_writes_the_table_it_zeroes():
    cfgs = sweep_configs(["llama3-8b"], [4], [4096], H100)
    recs = [r for c in distinct_cases(cfgs) if c.kernel.kind == "embedding.bwd"
            for r in c.records]
    assert [r["zeroed"] for r in recs] == [{"rows": 128256 // 4, "cols": 4096}]


def test_mtp_module_looks_up_normalises_and_concatenates():
    cfg = _cfg(preset="deepseek-v3", layers=8, seq=4096, pp=2, tp=1, ep=8)
    sh = shard_of(cfg)
    fwd = _names(mtp_input_forward(cfg, sh))
    assert fwd[0] == "embedding_lookup"
    assert {"mtp_enorm", "mtp_hnorm", "mtp_concat"} <= set(fwd)
    bwd = mtp_input_backward(cfg, sh)
    assert {"mtp_enorm.bwd", "mtp_hnorm.bwd", EMBEDDING_ZERO_FILL, "embedding_grad"} <= set(
        _names(bwd))


def test_mtp_embedding_gradient_on_the_first_stages_rank_is_summed_by_autograd():
    """pp 1: one parameter used twice, autograd sums the two dense tables before the hook
    (no second main_grad add); on a later stage the module's own copy takes its hook's add."""
    one = _cfg(preset="deepseek-v3", layers=8, seq=4096, pp=1, ep=8, framework="megatron-core")
    names = _names(mtp_input_backward(one, shard_of(one)))
    assert "mtp_embedding_grad.sum" in names and "embedding_grad.main_grad_add" not in names
    two = _cfg(preset="deepseek-v3", layers=8, seq=4096, pp=2, ep=8, framework="megatron-core")
    names = _names(mtp_input_backward(two, shard_of(two)))
    assert "embedding_grad.main_grad_add" in names and "mtp_embedding_grad.sum" not in names
