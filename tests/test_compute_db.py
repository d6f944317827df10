"""Measured-kernel database: keys by kind of kernel, physical checks, lookup in shape space,
scaling to other GPUs, the bundled H100 database and its checks (issue 24, one test per defect
of the first database path)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from click.testing import CliRunner

from trainsim import run_config_from_dict, simulate
from trainsim.catalog import gpu
from trainsim.cli import main
from trainsim.compute import ChainModel, KernelDatabase, RooflineModel, bundled_database
from trainsim.compute.chain import compute_model_for
from trainsim.errors import ConfigError
from trainsim.workload.elementwise import memory_op, optimizer_step
from trainsim.workload.ops import Attention, Elementwise, Gemm

H100 = "h100-sxm-80gb"


def burst(name: str = H100):
    """A GPU alone at its boost clock, as a kernel database measures it."""
    return dataclasses.replace(gpu(name), sustained_of_burst=1.0)


def write_db(tmp_path, kernels, gpu_name=H100, fmt="trainsim-kernel-db/2"):
    p = tmp_path / "db.json"
    p.write_text(json.dumps({"format": fmt, "gpu": gpu_name, "kernels": kernels}))
    return p


def load(tmp_path, kernels, **kw) -> KernelDatabase:
    return KernelDatabase.load(write_db(tmp_path, kernels, **kw), gpu)


def gemm(m, n, k, t, dtype="bf16"):
    return {"op": "gemm", "m": m, "n": n, "k": k, "dtype": dtype, "batch": 1, "time_s": t}


def elem(kernel, nbytes, t, impl="fused", name="x"):
    return {"op": "elementwise", "name": name, "kernel": kernel, "impl": impl, "bytes": nbytes,
            "time_s": t}


def attn(t, impl="cudnn", causal=True, backward=False, s=4096, heads=32, kv=8):
    return {"op": "attention", "impl": impl, "batch": 1, "heads": heads, "kv_heads": kv,
            "q_len": s, "kv_len": s, "head_dim": 128, "causal": causal, "backward": backward,
            "time_s": t}


def test_exact_hit_on_the_measured_gpu_is_the_measured_time(tmp_path):
    """An op measured in the database, priced on that GPU alone, is its measured time."""
    db = load(tmp_path, [gemm(8192, 8192, 8192, 1.6e-3)])
    t, source = ChainModel(burst(), db).explain(Gemm("x", 8192, 8192, 8192))
    assert t == 1.6e-3 and source == "database (exact)"


def test_elementwise_families_do_not_share_one_curve(tmp_path):
    """Defect 1: copy, add and GELU borrowed the fp8 cast's and RoPE's rates, 14x too slow.
    Records of other families price nothing else: those ops fall back to the analytic model."""
    db = load(tmp_path, [elem("fp8_cast_transpose", 1e8, 4e-4, "eager"),
                         elem("rope", 1e8, 3e-4, "eager")])
    chain = ChainModel(burst(), db)
    for kernel in ("residual_add", "gelu", ""):
        op = Elementwise("add", 1e8, kernel=kernel)
        t, source = chain.explain(op)
        assert source == "roofline" and t == RooflineModel(burst()).time(op)


def test_no_record_faster_than_the_gpu_allows(tmp_path):
    """Defect 2: a backward that launches no kernel (1.3 us for 151 MB, 118 TB/s) is refused on
    load, naming the record; so is a GEMM above the peak FLOP/s."""
    with pytest.raises(ConfigError, match=r"kernels\[0\].*residual_add\.bwd.*HBM peak"):
        load(tmp_path, [elem("residual_add.bwd", 151e6, 1.28e-6)])
    with pytest.raises(ConfigError, match=r"kernels\[1\].*gemm.*above the h100-sxm-80gb peak"):
        load(tmp_path, [gemm(1024, 1024, 1024, 1e-5), gemm(8192, 8192, 8192, 1e-4)])


def test_attention_records_answer_only_their_own_kernel(tmp_path):
    """Defect 3: an unfused op got the flash record (257 us instead of 1,957). Records are keyed
    by implementation, causality, direction and dropout; GQA is a coordinate."""
    db = load(tmp_path, [attn(2.6e-4)])
    chain = ChainModel(burst(), db)
    same = Attention("a", 1, 32, 8, 4096, 4096, 128, impl="cudnn")
    assert chain.explain(same) == (2.6e-4, "database (exact)")
    for other in (dataclasses.replace(same, impl="unfused"), dataclasses.replace(same, impl="flash2"),
                  dataclasses.replace(same, causal=False), dataclasses.replace(same, backward=True)):
        assert chain.explain(other)[1] == "roofline", other
    mha = dataclasses.replace(same, kv_heads=32)  # another GQA ratio: a neighbour, not a hit
    assert chain.explain(mha)[1] == "database (interpolated)"


@pytest.mark.parametrize("fmt", ["trainsim-kernel-db/1", "trainsim-kernel-db/2"])
def test_old_profilers_flash1_records_are_the_memory_efficient_backend(tmp_path, fmt):
    """Formats 1 and 2 labelled SDPA's EFFICIENT_ATTENTION backend ``flash1``: its records
    answer ``mem_efficient`` ops, never a FlashAttention-1 op (which carries its partial
    results through HBM per key block, ``attention.flash1_pass_bytes``)."""
    chain = ChainModel(burst(), load(tmp_path, [attn(5e-4, impl="flash1")], fmt=fmt))
    op = Attention("a", 1, 32, 8, 4096, 4096, 128, impl="mem_efficient")
    assert chain.explain(op) == (5e-4, "database (exact)")
    assert chain.explain(dataclasses.replace(op, impl="flash1"))[1] == "roofline"


def test_format_3_flash1_records_are_flashattention_1(tmp_path):
    """From format 3 the profiler writes ``mem_efficient``; ``flash1`` is the first
    FlashAttention and answers only its own ops."""
    chain = ChainModel(burst(), load(tmp_path, [attn(9e-4, impl="flash1"),
                                                attn(5e-4, impl="mem_efficient")],
                                     fmt="trainsim-kernel-db/3"))
    op = Attention("a", 1, 32, 8, 4096, 4096, 128, impl="flash1")
    assert chain.explain(op) == (9e-4, "database (exact)")
    assert chain.explain(dataclasses.replace(op, impl="mem_efficient"))[0] == 5e-4


def test_dropout_attention_is_its_measured_dropout_free_kernel_slowed_as_modelled(tmp_path):
    """A profile measures attention without dropout; a training run with attention dropout
    (Megatron's default 0.1) is that measured kernel times the model's dropout slowdown, not
    the analytic model alone (which ran ~10 % faster than the measured cuDNN kernel at the
    Megatron-LM weak-scaling rows' shape)."""
    db = load(tmp_path, [attn(2.6e-4), attn(9.0e-4, backward=True)])
    chain = ChainModel(burst(), db)
    roof = RooflineModel(burst())
    for backward, measured in ((False, 2.6e-4), (True, 9.0e-4)):
        plain = Attention("a", 1, 32, 8, 4096, 4096, 128, impl="cudnn", backward=backward)
        drop = dataclasses.replace(plain, dropout=True)
        t, source = chain.explain(drop)
        assert source == "database (exact, dropout modelled)"
        assert t == pytest.approx(measured * roof.time(drop) / roof.time(plain))
        assert t > measured
    other = Attention("a", 1, 32, 8, 4096, 4096, 128, impl="flash2", dropout=True)
    assert chain.explain(other)[1] == "roofline"  # no record of that kernel, dropout or not


def test_eager_records_do_not_price_fused_ops(tmp_path):
    """Defect 4: the profiler's eager SwiGLU and fp32 cross-entropy made the fused ops 2.6x and
    2.3x slower. A fused op finds only fused records."""
    db = load(tmp_path, [elem("swiglu", 1e9, 8e-4, "eager"),
                         elem("cross_entropy", 5e8, 1e-3, "eager")])
    chain = ChainModel(burst(), db)
    fused = memory_op("swiglu", "swiglu", "fused", 1e8)
    assert chain.explain(fused)[1] == "roofline"
    eager = memory_op("swiglu", "swiglu", "eager", 1e8)  # 10 B per element: the record
    assert chain.explain(eager) == (8e-4, "database (exact)")


def test_backward_family_and_optimizer_keys(tmp_path):
    """Defect 5: keys dropped '.bwd' and the family (a LayerNorm model got RMSNorm times), and
    the optimizer step never met the Adam records."""
    db = load(tmp_path, [elem("rmsnorm.bwd", 1e8, 1.2e-4), elem("adamw", 2.8e9, 1.07e-3)])
    chain = ChainModel(burst(), db)
    assert chain.explain(Elementwise("n", 1e8, kernel="rmsnorm"))[1] == "roofline"
    assert chain.explain(Elementwise("n", 1e8, kernel="layernorm.bwd"))[1] == "roofline"
    assert chain.explain(Elementwise("n", 1e8, kernel="rmsnorm.bwd"))[1] == "database (exact)"
    t, source = chain.explain(optimizer_step(1e8, "adam"))
    assert source == "database (interpolated)"
    # priced at the measured Adam kernel's efficiency over the analytic model
    step = optimizer_step(1e8, "adam")
    ratio = 1.07e-3 / RooflineModel(burst()).time(Elementwise("a", 2.8e9, kernel="adamw"))
    assert t == pytest.approx(RooflineModel(burst()).time(step) * ratio, rel=0.05)


def test_gemms_are_located_by_shape_not_flops(tmp_path):
    """Defect 6: interpolation by FLOPs alone, clamped below the smallest profiled shape
    (M = 64: -50 %). Two GEMMs of equal FLOPs follow their own neighbours, and a GEMM far
    below every record gets the analytic model calibrated on the database."""
    roof = RooflineModel(burst())
    tall, wide = Gemm("a", 16384, 2048, 4096), Gemm("b", 2048, 16384, 4096)
    records = [gemm(16384, 2048, 4096, roof.time(tall) * 1.3),
               gemm(2048, 16384, 4096, roof.time(wide) * 0.9)]
    chain = ChainModel(burst(), load(tmp_path, records))
    near_tall = Gemm("c", 16384, 2560, 4096)
    near_wide = Gemm("d", 2560, 16384, 4096)
    assert chain.explain(near_tall)[0] / roof.time(near_tall) > 1.2
    assert chain.explain(near_wide)[0] / roof.time(near_wide) < 1.0
    small = Gemm("e", 64, 4096, 4096)
    t, source = chain.explain(small)
    assert source == "database (calibrated)"
    assert 0.9 < t / roof.time(small) < 1.3  # the mean ratio, not the big GEMMs' rate


def test_another_gpu_is_priced_by_each_kernels_bound(tmp_path):
    """Scaling (scope 3): measured on an H100, a compute-bound GEMM on an H200 keeps its time
    (same tensor cores), a memory-bound op that reached its modelled HBM rate runs at the H200's
    HBM bandwidth (one slower than its model keeps the unmodelled share: test_kernel_db_cross);
    a training GPU at its sustained clock runs compute-bound kernels slower by that clock."""
    db = load(tmp_path, [gemm(8192, 8192, 8192, 1.6e-3), elem("rmsnorm", 1e9, 3.2e-4)])
    h200 = ChainModel(burst("h200-sxm-141gb"), db)
    t, source = h200.explain(Gemm("x", 8192, 8192, 8192))
    assert source == "database (exact, scaled from h100-sxm-80gb)"
    h100, h200spec = burst(), burst("h200-sxm-141gb")
    assert t == pytest.approx(1.6e-3 * h100.gemm_ceiling("bf16") / h200spec.gemm_ceiling("bf16"),
                              rel=0.02)
    t_norm, _ = h200.explain(Elementwise("n", 1e9, kernel="rmsnorm"))
    assert t_norm == pytest.approx(3.2e-4 * h100.hbm_bw_Bps / h200spec.hbm_bw_Bps, rel=0.02)
    training = ChainModel(gpu(H100), db)  # sustained clock: 0.85 of the boost rate
    assert training.explain(Gemm("x", 8192, 8192, 8192))[0] == pytest.approx(1.6e-3 / 0.85,
                                                                            rel=0.01)


def test_format_one_records_are_read_as_the_profiler_ran_them(tmp_path):
    """A format-1 record has no implementation: read with what the profiler runs (eager SwiGLU,
    with the bytes the eager code moves rather than the fused op's); 'adam' is 'adamw'."""
    db = load(tmp_path, [{"op": "elementwise", "name": "swiglu", "kernel": "swiglu",
                          "bytes": 3e8, "time_s": 3e-4},
                         {"op": "elementwise", "name": "adam", "kernel": "adam",
                          "bytes": 2.8e9, "time_s": 1.1e-3}], fmt="trainsim-kernel-db/1")
    assert set(db.kinds) == {("elementwise", "swiglu", "eager"), ("elementwise", "adamw", "fused")}
    # 3e8 fused bytes are 5e7 outputs of 6 B; eager SwiGLU moves 10 B per output
    assert db.lookup(memory_op("s", "swiglu", "eager", 5e7))[1] == "exact"


def test_wrong_format_is_rejected(tmp_path):
    """A JSON file that is not a kernel database is a ConfigError."""
    p = tmp_path / "x.json"
    p.write_text('{"kernels": []}')
    with pytest.raises(ConfigError, match="kernel database"):
        KernelDatabase.load(p, gpu)


def test_bundled_h100_database_is_used_by_auto():
    """The measured H100 database ships with trainsim and prices H100 configs by default; the
    result says which model priced how many kernels."""
    assert bundled_database(gpu(H100)) is not None
    cfg = run_config_from_dict({"model": "llama3-8b", "parallel": {"tp": 1},
                                "training": {"global_batch_size": 8, "seq_length": 4096},
                                "cluster": {"node": "dgx-h100", "num_gpus": 8}})
    r = simulate(cfg)
    assert r.compute_sources.get("database (exact)", 0) > 0
    none = simulate(dataclasses.replace(cfg, cluster=dataclasses.replace(cfg.cluster,
                                                                         compute_db=None)))
    assert set(none.compute_sources) == {"roofline"}
    assert r.iteration_time_s != none.iteration_time_s


def test_bundled_database_records_are_physical():
    """Every bundled record passes the load check (the profiler's no-kernel backwards were
    dropped by benchmarks/bundle_kernel_db.py and are listed there with the reason)."""
    path = bundled_database(gpu(H100))
    data = json.loads(path.read_text())
    assert data["format"] == "trainsim-kernel-db/3" and len(data["kernels"]) > 400
    assert "median" in data["timing"]  # how the profiler timed its records, stated in the file
    assert data["dropped"] and all("HBM peak" in d["why"] for d in data["dropped"])
    db = KernelDatabase.load(path, gpu)
    assert {k[1] for k in db.kinds if k[0] == "attention"} == {"cudnn"}


def test_validate_takes_a_kernel_database_and_checks_its_layers():
    """Defects 7 and 8: the layer records were loaded and never used, and validate refused a
    kernels database. Now each layer record is compared with its composed kernels."""
    path = bundled_database(gpu(H100))
    r = CliRunner().invoke(main, ["validate", str(path), "--format", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["summary"]["n"] == 16 and out["summary"]["failed"] == 0
    assert out["summary"]["mape"] < 0.10  # composed kernels within 10 % of the whole layer
    row = out["rows"][0]
    assert row["fwd_s"] > 0 and row["bwd_s"] > 0 and "database (exact)" in row["sources"]


def test_validate_compute_db_option(tmp_path):
    """--compute-db none prices kernels with the analytic model alone; a missing path is one
    error line."""
    csv = tmp_path / "k.csv"
    csv.write_text("id,gpu,kind,implementation,dtype,m,n,k,measured_value,measured_unit\n"
                   "g,h100-sxm-80gb,gemm,cublas,bf16,8192,8192,8192,700,TFLOP/s\n")
    runner = CliRunner()
    auto = json.loads(runner.invoke(main, ["validate", str(csv), "--format", "json"]).output)
    none = json.loads(runner.invoke(main, ["validate", str(csv), "--format", "json",
                                           "--compute-db", "none"]).output)
    assert auto["rows"][0]["chosen"]["model"].startswith("database")
    assert none["rows"][0]["chosen"]["model"] == "roofline"
    bad = runner.invoke(main, ["validate", str(csv), "--compute-db", str(tmp_path / "no.json")])
    assert bad.exit_code == 2 and "no such file" in bad.output


def test_validate_compute_db_option_reaches_layer_records(tmp_path):
    """A layers file is priced with the database --compute-db names: 'none' is the analytic
    model alone (the option used to be ignored there: both priced through the H100 database)."""
    rec = {"device": "NVIDIA H100 80GB HBM3", "torch": "2.11.0+cu130", "kind": "layer",
           "family": "llama", "label": "llama3-8b-tp1", "seq": 4096, "mbs": 1, "mode": "eager",
           "shape": {"h": 4096, "ffn": 14336, "heads": 32, "kv": 8}, "fwd_bwd_ms": 11.7}
    path = tmp_path / "layers.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    runner = CliRunner()
    got = {db: json.loads(runner.invoke(main, ["validate", str(path), "--format", "json",
                                               "--compute-db", db]).output)["rows"][0]
           for db in ("auto", "none")}
    assert got["auto"]["predicted"] != pytest.approx(got["none"]["predicted"], rel=1e-3)


def test_compute_model_for_none_is_the_roofline():
    assert compute_model_for(gpu(H100), None, gpu).db is None


def test_validate_checks_a_profiler_database_without_its_non_measurements(tmp_path):
    """The database ``trainsim profile`` wrote on the H100 holds no-kernel backwards (1.3 us for
    151 MB): loading it for pricing refuses it, naming the record, but checking its layer
    records against its kernels leaves such records out with one warning line."""
    src = json.loads(bundled_database(gpu(H100)).read_text())
    bad = elem("residual_add.bwd", 151e6, 1.28e-6)
    path = tmp_path / "profiled.json"
    path.write_text(json.dumps({**src, "kernels": [bad, *src["kernels"]]}))
    with pytest.raises(ConfigError, match=r"kernels\[0\].*HBM peak"):
        KernelDatabase.load(path, gpu)
    skipped: list[str] = []
    db = KernelDatabase.load(path, gpu, skipped)
    assert len(skipped) == 1 and "kernels[0]" in skipped[0]
    assert len(db.exact) == len(KernelDatabase.load(bundled_database(gpu(H100)), gpu).exact)
    r = CliRunner().invoke(main, ["validate", str(path), "--format", "json"])
    assert r.exit_code == 0, r.output
    assert "warning: 1 kernel record(s) left out" in r.stderr
    assert json.loads(r.stdout)["summary"]["n"] == len(src["layers"])  # none dropped


def test_split_accumulator_records_do_not_answer_fast_accumulation_gemms(tmp_path):
    """An fp8 record measured through cuBLAS's split accumulator is not the kernel a forward
    fp8 GEMM without it runs (compute.roofline.gemm_rate), nor a dense record a grouped GEMM:
    exact keys and interpolation families differ by ``fp8_fast_accum`` and ``grouped``."""
    db = load(tmp_path, [gemm(8192, 8192, 8192, 1.6e-3, "fp8")])
    split = Gemm("x", 8192, 8192, 8192, "fp8")
    assert db.lookup(split) == (1.6e-3, "exact")
    assert db.lookup(dataclasses.replace(split, fp8_fast_accum=True)) is None
    assert db.lookup(dataclasses.replace(split, grouped="multi_stream")) is None
    # nor a per-tensor-scaled record a block-scaled GEMM (roofline.block_promotion_k)
    assert db.lookup(dataclasses.replace(split, fp8_block_scales="serial")) is None
    # a GEMM's chunks on TE's userbuffer streams are the dense cuBLAS kernel
    assert db.lookup(dataclasses.replace(split, grouped="userbuffers")) is not None
    fast = dict(gemm(8192, 8192, 8192, 1.3e-3, "fp8"), fp8_fast_accum=True)
    both = load(tmp_path, [gemm(8192, 8192, 8192, 1.6e-3, "fp8"), fast])
    assert both.lookup(split) == (1.6e-3, "exact")
    assert both.lookup(dataclasses.replace(split, fp8_fast_accum=True)) == (1.3e-3, "exact")


def test_bundled_rms_norm_records_are_the_two_pass_kernel_they_timed():
    """The profiler's ``F.rms_norm`` is torch's ``vectorized_layer_norm_kernel``, which reads
    each row twice: its bundled records are ``two_pass`` at 1.5x the fused op's bytes, so a
    one-pass fused RMSNorm (TE, Liger) of the same size is priced by the roofline, not at the
    two-pass kernel's time (Liger's 4096 x 16384 RMSNorm: 95 us; F.rms_norm's: 142 us)."""
    db = bundled_database(gpu(H100))
    reader = KernelDatabase.load(db, gpu)
    elements = 4096 * 16384
    two_pass = reader.lookup(memory_op("n", "rmsnorm", "two_pass", elements))
    assert two_pass is not None and two_pass[1] == "exact"
    assert two_pass[0] == pytest.approx(142.2e-6, rel=0.01)
    assert reader.lookup(memory_op("n", "rmsnorm", "fused", elements)) is None
    # its backward keeps the label the training op looks up (one kernel, no claim on passes)
    assert ("elementwise", "rmsnorm.bwd", "fused") in reader.kinds


def test_validate_reads_an_old_databases_flash1_layers_as_the_memory_efficient_backend(tmp_path):
    """A format-2 database whose attention records say ``flash1`` (SDPA's memory-efficient
    backend, as the old profilers wrote it) checks its layers with that backend, and prices them
    as the same records written in format 3 as ``mem_efficient``; in format 3 ``flash1`` is the
    first FlashAttention."""
    src = json.loads(bundled_database(gpu(H100)).read_text())

    def checked(fmt: str, impl: str) -> list[dict]:
        kernels = [{**k, "impl": impl} if k.get("op") == "attention" else k
                   for k in src["kernels"]]
        path = tmp_path / f"{impl}-{fmt[-1]}.json"
        path.write_text(json.dumps({**src, "format": fmt, "kernels": kernels}))
        r = CliRunner().invoke(main, ["validate", str(path), "--format", "json"])
        assert r.exit_code == 0, r.output
        return json.loads(r.output)["rows"]

    old = checked("trainsim-kernel-db/2", "flash1")
    assert {row["chosen"]["attention"] for row in old} == {"mem_efficient"}
    assert [row["predicted"] for row in old] == [
        row["predicted"] for row in checked("trainsim-kernel-db/3", "mem_efficient")]
    assert {row["chosen"]["attention"] for row in checked("trainsim-kernel-db/3", "flash1")} == {
        "flash1"}
