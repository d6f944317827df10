"""The profiler's pipeline on a CPU build of PyTorch: every code path a GPU run takes."""

from __future__ import annotations

import json
import statistics

import pytest

torch = pytest.importorskip("torch")

from click.testing import CliRunner

from trainsim.catalog import gpu
from trainsim.compute.database import PROFILED_IMPL, KernelDatabase
from trainsim.profile import layer as layer_mod
from trainsim.profile.cli import profile
from trainsim.profile.device import Budget, CpuDevice, measure, rotation
from trainsim.profile.kernels import fp8_supported, ring_attention, sdpa
from trainsim.profile.layer import LlamaLayer
from trainsim.profile.run import ProfileOptions, run_profile
from trainsim.profile.schema import FORMAT, LAYER_KEYS, validate_db
from trainsim.profile.shapes import simulator_ops, sweep_configs
from trainsim.workload.layers import layer_forward
from trainsim.workload.ops import Attention, Elementwise, Gemm
from trainsim.workload.shard import shard_of

GRID = ["--models", "llama3-8b", "--tp", "1,2", "--seq", "4096"]


@pytest.fixture(scope="module")
def db_path(tmp_path_factory):
    out = tmp_path_factory.mktemp("profile") / "cpu.json"
    r = CliRunner().invoke(profile, ["--gpu", "h100-sxm-80gb", "--out", str(out), *GRID,
                                     "--device", "cpu", "--quick"])
    assert r.exit_code == 0, r.output
    return out


@pytest.fixture(scope="module")
def db(db_path):
    return json.loads(db_path.read_text())


def test_quick_cpu_run_writes_a_valid_database(db):
    """The dry run writes the versioned format with every header field and positive times."""
    assert validate_db(db) == []
    assert db["format"] == FORMAT and db["gpu"] == "h100-sxm-80gb" and db["compile"] is False
    assert db["device_name"].startswith("cpu") and db["torch"] == torch.__version__
    assert db["command"].startswith("trainsim profile --gpu h100-sxm-80gb")
    ops = {k["op"] for k in db["kernels"]}
    assert ops == {"gemm", "attention", "elementwise"}
    assert all(k["time_s"] > 0 and k["repeats"] >= 3 for k in db["kernels"])
    names = {k.get("kernel") for k in db["kernels"] if k["op"] == "elementwise"}
    assert {"rmsnorm", "rmsnorm.bwd", "swiglu", "rope.bwd", "residual_add", "cross_entropy",
            "embedding", "adamw"} <= names
    # the gradient of a residual add without dropout runs no kernel: not a record
    assert "residual_add.bwd" not in names
    assert any("residual_add.bwd without dropout" in n for n in db["notes"])
    assert any(k["op"] == "attention" and k["backward"] for k in db["kernels"])
    # each attention record names the SDPA backend it ran; each elementwise record how the
    # profiler implements it (swiglu is silu(gate) * up: eager, with eager SwiGLU's bytes;
    # F.rms_norm reads each row twice: two_pass, with 1.5x a fused RMSNorm's bytes)
    assert {k["impl"] for k in db["kernels"] if k["op"] == "attention"} == {"cudnn", "sdpa"}
    impl = {k["kernel"]: k["impl"] for k in db["kernels"] if k["op"] == "elementwise"}
    assert impl["rmsnorm"] == "two_pass" and impl["rmsnorm.bwd"] == "fused"
    assert impl["swiglu"] == impl["rope"] == "eager"


def test_layers_are_timed_at_three_granularities(db):
    """Each TP slice has layer, submodule (hooks) and kernel (profiler) times."""
    assert [(r["model"], r["tp"], r["seq_length"]) for r in db["layers"]] == [
        ("llama3-8b-quick", 1, 64), ("llama3-8b-quick", 2, 64)]
    for rec in db["layers"]:
        assert set(LAYER_KEYS) <= set(rec) and rec["granularity"] == "layer"
        assert rec["fwd_s"] > 0 and rec["bwd_s"] > 0 and rec["peak_memory_bytes"] == 0  # CPU
        assert set(rec["submodules"]) == {"attention", "mlp"}
        names = " ".join(k["name"] for k in rec["kernels"])
        assert "mm" in names and "attention" in names


def test_every_simulated_op_is_an_exact_database_hit(db_path):
    """The compute model's database reader finds every op of the profiled configs exactly."""
    reader = KernelDatabase.load(db_path, gpu)
    fp8, _ = fp8_supported(CpuDevice())
    cfgs = sweep_configs(["llama3-8b"], [1, 2], [4096], "h100-sxm-80gb", quick=True,
                         dtypes=("bf16", "fp8") if fp8 else ("bf16",))
    ops = [op for c in cfgs for op in simulator_ops(c)
           if isinstance(op, (Gemm, Attention)) or (isinstance(op, Elementwise) and op.impl
                                                     == PROFILED_IMPL.get(op.kernel, PROFILED_IMPL.get(
                                                         op.kernel.split(".")[0])))
           and op.kernel != "residual_add.bwd"]
    assert ops and all((reader.lookup(op) or (0, "missing"))[1] == "exact" for op in ops)


def test_layer_weights_have_the_simulators_gemm_shapes():
    """The TP-slice layer's projections are the simulator's GEMMs (n x k) for that TP."""
    cfg = sweep_configs(["llama3-70b"], [8], [4096], "h100-sxm-80gb")[0]
    gemms = {op.name: (op.n, op.k) for op in layer_forward(cfg, shard_of(cfg))
             if isinstance(op, Gemm)}
    with torch.device("meta"):
        layer = LlamaLayer.tp_slice(cfg.model, 8, 16)
    assert tuple(layer.attention.qkv.weight.shape) == gemms["qkv_proj"]
    assert tuple(layer.attention.out.weight.shape) == gemms["out_proj"]
    assert tuple(layer.mlp.fc1.weight.shape) == gemms["fc1"]
    assert tuple(layer.mlp.fc2.weight.shape) == gemms["fc2"]


def test_layer_matches_hugging_face_llama():
    """Our TP-1 layer computes what transformers' LlamaDecoderLayer computes (fp32)."""
    pytest.importorskip("transformers")
    ok, diff = layer_mod.check_against_hf()
    assert ok and diff < 1e-4


def test_hugging_face_check_catches_a_wrong_weight(monkeypatch):
    """The check has teeth: a layer with one weight off is not allclose."""
    pytest.importorskip("transformers")
    real = layer_mod.copy_from_hf

    def off_by_a_bit(ours, hf):
        real(ours, hf)
        with torch.no_grad():
            ours.mlp.fc2.weight.mul_(1.01)

    monkeypatch.setattr(layer_mod, "copy_from_hf", off_by_a_bit)
    ok, diff = layer_mod.check_against_hf()
    assert not ok and diff > 1e-4


def test_compile_failure_is_a_note_not_a_crash(monkeypatch):
    """--compile where torch.compile fails keeps the eager layers and says why."""
    def broken(*_a, **_k):
        raise RuntimeError("no C++ compiler")

    monkeypatch.setattr(torch, "compile", broken)
    db = run_profile(ProfileOptions(gpu="h100-sxm-80gb", models=("llama3-8b",), tps=(2,),
                                    seqs=(4096,), device="cpu", quick=True, compile=True,
                                    kernels=False))
    assert db["compile"] is True and [r["compile"] for r in db["layers"]] == [False]
    assert any("torch.compile failed" in n and "no C++ compiler" in n for n in db["notes"])


def test_cpu_device_measures_the_median_of_the_repeats():
    """measure() warms up, runs the repeats and reports their median."""
    calls = []
    t = measure(CpuDevice(), calls.append, Budget(warmup=2, repeats=5, min_repeats=5))
    assert t.repeats == 5 and len(t.samples_s) == 5
    assert t.median_s == statistics.median(t.samples_s) > 0
    assert len(calls) == 2 + 1 + 5  # warm-up, the estimate, the repeats


def test_small_inputs_rotate_through_enough_sets_to_overflow_the_cache():
    """Small kernels rotate among several input sets; big ones need one."""
    dev = CpuDevice()
    assert rotation(dev.cache_bytes, dev) == 2
    assert rotation(1e3, dev) == 16
    assert rotation(10 * dev.cache_bytes, dev) == 1


def test_ring_attention_does_the_work_of_a_balanced_causal_share(monkeypatch):
    """A CP rank's ring computes a causal block plus (cp-1) half blocks: q*kv/2 pairs."""
    import trainsim.profile.kernels as kernels_mod

    pairs = []

    def counting(q, k, v, causal):
        pairs.append(q.shape[-2] * k.shape[-2] / (2 if causal else 1))
        return sdpa(q, k, v, causal)

    monkeypatch.setattr(kernels_mod, "sdpa", counting)
    q, k = torch.randn(1, 2, 8, 4), torch.randn(1, 2, 32, 4)
    assert ring_attention(q, k, k, ring=4).shape == q.shape
    assert sum(pairs) == 8 * 32 / 2
