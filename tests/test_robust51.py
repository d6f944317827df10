"""robust51: the edges robust50 and edge50 left (profile --merge's device, the zb_2p searches'
one limit, a --days window's checkpoint floor, TE < 2.10's offload gate, the bounds' shared
op lists) and the failure classes of the thirty-first fuzz round (benchmarks/fuzz51.py)."""

from __future__ import annotations

import json
import sys
import types
from fractions import Fraction
from pathlib import Path

import pytest

from trainsim.errors import TrainsimError

DB = Path(__file__).resolve().parent.parent / "src" / "trainsim" / "data" / "kernels" \
    / "h100-sxm-80gb.json"


def _fake_profiler(monkeypatch, name: str) -> list[str]:
    """PyTorch and the profiler's device, kernel and layer modules replaced by fakes (torch is
    optional here): a CPU device called ``name``; returns the list each measurement appends to."""
    measured: list[str] = []
    torch = types.ModuleType("torch")
    torch.get_num_threads = lambda: 1
    torch.set_num_threads = lambda n: None
    dev = types.SimpleNamespace(name=name, kind="cpu", memory_bytes=None, cache_bytes=32e6,
                                torch_device="cpu", versions=lambda: {"torch": "fake"})
    device = types.ModuleType("trainsim.profile.device")
    device.open_device = lambda kind: dev
    device.Budget = type("Budget", (), {"quick": staticmethod(lambda: None)})

    def time_kernel(kernel, dev, budget):
        measured.append(kernel.label())
        raise RuntimeError("fake: not measured")

    kernels = types.ModuleType("trainsim.profile.kernels")
    kernels.fp8_supported = lambda dev: (False, "")
    kernels.time_kernel = time_kernel
    layer = types.ModuleType("trainsim.profile.layer")
    layer.time_layer = lambda *a, **k: measured.append("layer")
    for mod, fake in (("torch", torch), ("trainsim.profile.device", device),
                      ("trainsim.profile.kernels", kernels), ("trainsim.profile.layer", layer)):
        monkeypatch.setitem(sys.modules, mod, fake)
    return measured


def test_profile_merge_checks_the_device_as_soon_as_it_opens(tmp_path, monkeypatch):
    """robust50 lead 1: a --merge database measured on another device (same catalog GPU) was
    refused at the first partial write, after 50 kernels had been measured; now before the
    first one, in one line naming both devices."""
    from click.testing import CliRunner

    from trainsim.cli import main

    measured = _fake_profiler(monkeypatch, "NVIDIA H100 80GB HBM3")
    db = json.loads(DB.read_text())
    db["device_name"] = "NVIDIA H100 PCIe"
    out = tmp_path / "db.json"
    out.write_text(json.dumps(db))
    r = CliRunner().invoke(main, ["profile", "--gpu", "h100-sxm-80gb", "--out", str(out),
                                  "--merge", "--device", "cpu", "--quick", "--models",
                                  "llama3-8b", "--tp", "1,2", "--seq", "4096", "--no-layers"])
    assert r.exit_code == 2, r.output
    assert "'NVIDIA H100 PCIe'" in r.output and "'NVIDIA H100 80GB HBM3'" in r.output
    assert "Traceback" not in r.output and measured == []
    assert json.loads(out.read_text()) == db  # untouched


def test_profile_merge_onto_the_same_device_measures(tmp_path, monkeypatch):
    """The control: the same device's database is measured into (every case reaches the
    device; the fakes fail each one, which the run notes)."""
    from trainsim.profile.run import ProfileOptions, run_profile

    measured = _fake_profiler(monkeypatch, "NVIDIA H100 80GB HBM3")
    db = json.loads(DB.read_text())
    db["device_name"] = "NVIDIA H100 80GB HBM3"
    out = run_profile(ProfileOptions(gpu="h100-sxm-80gb", models=("llama3-8b",), tps=(1,),
                                     seqs=(4096,), device="cpu", quick=True, layers=False),
                      base=db)
    assert measured and len(measured) == sum(n.startswith("failed") for n in out["notes"])
    with pytest.raises(TrainsimError, match="cannot merge: the database was measured on"):
        run_profile(ProfileOptions(gpu="h100-sxm-80gb", models=("llama3-8b",), tps=(1,),
                                   seqs=(4096,), device="cpu", quick=True, layers=False),
                    base={**db, "device_name": "NVIDIA H100 PCIe"})


def _not_settling(monkeypatch, limit: int) -> tuple:
    from trainsim.workload import zb_search

    # no state repeats (speed63: choose runs its probes as one search, zb_search._probed)
    monkeypatch.setattr(zb_search, "_repeat", lambda *a: None)
    monkeypatch.setenv("TRAINSIM_MAX_TASKS", str(limit))
    return zb_search.choose, (4, 400, (3, 4, 2), 1, 8.0, Fraction(1, 2))


def test_the_zb_2p_searches_share_one_limit(monkeypatch):
    """edge50 lead 1: each of the iteration's two searches was held to half the limit. Where
    no variant settles, the pipeline's search at pp 4 x 400 places 32,000 positions (its
    probes and full builds) and the memory estimate's settles at its first probes and builds
    its base (at most twice the probe, settle58: 1,600): 33,600 in all, 5,973 tasks' worth,
    refused at 5,900 and run at 6,000 (each search against half the limit was refused)."""
    from trainsim.limits import WorkLimitError, zb_search_positions

    assert zb_search_positions(4, 400) == 1600
    choose, args = _not_settling(monkeypatch, 6000)
    choose(*args)
    choose, args = _not_settling(monkeypatch, 5900)
    with pytest.raises(WorkLimitError, match=r"this search's [\d,]+ \+ the other's 1,600"):
        choose(*args)


@pytest.mark.parametrize("pps", [range(1, 17), pytest.param(
    [*range(17, 33), 48, 64], marks=pytest.mark.slow)])
def test_the_memory_estimates_search_settles_at_its_first_probe(pps):
    """What the shared limit counts the memory estimate's search as: with equal passes and no
    send (``pipeline_schedules._equal_zb_2p``) every variant settles at its first probe, so
    that search places exactly ``zb_search_positions``."""
    from trainsim.limits import zb_first_probe
    from trainsim.workload.schedule import W_MEMORY_FRACTION
    from trainsim.workload.zb_search import VARIANTS
    from trainsim.workload.zb_settle import settle

    wf = Fraction(W_MEMORY_FRACTION).limit_denominator(10**9)  # as zb_2p feeds it
    for pp in pps:
        for variant in VARIANTS:
            s = settle(pp, (1, 1, 1), 0, 2.0 * pp, wf, variant, zb_first_probe(pp))
            assert s is not None and s.from_m <= zb_first_probe(pp), (pp, variant)


def _small(**parallel):
    from trainsim.catalog import run_config_from_dict

    return run_config_from_dict({
        "model": {"hidden_size": 256, "num_layers": 8, "num_attention_heads": 4,
                  "vocab_size": 1024},
        "parallel": parallel, "training": {"global_batch_size": 16, "seq_length": 512},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                    "compute_db": None}})


@pytest.mark.parametrize("parallel, interval_s", [
    ({"pp": 2, "pipeline_schedule": "zb_2p"}, 1e-3),  # no bound derived: 0 s
    ({"pp": 4, "vpp": 2, "pipeline_schedule": "interleaved_1f1b"}, 0.0145),  # bound 14.40 ms
])
def test_a_days_window_floors_the_checkpoint_interval_at_the_simulated_iteration(
        parallel, interval_s):
    """robust49 lead 4: a --days window checked the interval against the iteration's lower
    bound: zb_2p has none (a 1 ms interval on a 12 ms iteration was priced, 12 checkpoints an
    iteration), and an interleaved 1F1B interval between its bound (14.40 ms) and its
    iteration (14.64 ms) was priced below one iteration. Now the window simulates the
    iteration, as the tokens mode does, and reports it."""
    from trainsim.errors import ConfigError
    from trainsim.reliability import ReliabilityConfig
    from trainsim.reliability.config import CheckpointConfig
    from trainsim.reliability.goodput import goodput
    from trainsim.simulator import simulate

    cfg = _small(**parallel)
    step = simulate(cfg).iteration_time_s
    assert interval_s < step
    with pytest.raises(ConfigError, match=r"shorter than one iteration \(0\.01\d+ s\)"):
        goodput(cfg, ReliabilityConfig(checkpoint=CheckpointConfig(interval_s=interval_s)),
                days=1.0, trials=5)
    ok = goodput(cfg, ReliabilityConfig(checkpoint=CheckpointConfig(interval_s=2 * step)),
                 days=1.0, trials=5)
    assert ok.iteration_time_s == step and ok.plan.step_s == step
    assert ok.to_dict()["checkpoint"]["interval_steps"] == 2.0


def _bridge(n: int, version: str, link: float | None, dtype: str = "fp8"):
    from trainsim.catalog import run_config_from_dict

    over = {} if link is None else {"gpu_overrides": {"host_link_gbyte_s": link}}
    return run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"pp": 1, "recompute": "none", "cpu_offloading_num_layers": n},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 8192,
                     "dtype": dtype, "framework": "megatron-bridge",
                     "framework_version": version},
        "cluster": {"gpu": "gb200", "num_gpus": 8, "gpus_per_node": 8, **over}})


def test_the_windowed_offload_gate_no_caller_reached_is_gone():
    """The tuner admits TE < 2.10's offloading whenever the host link is known (its late
    copies are priced: ``copy_stalls``), so ``copies_hidden``'s windowed branch was read only
    by tests; it is TE 2.10's gate now and refuses a windowed setting. ``offload_admitted``
    answers as main's over versions, layer counts, host links and dtypes."""
    from trainsim.memory.offload import (
        copies_hidden,
        copy_windows,
        layer_forward_floor_s,
        offload_admitted,
        offloaded_bytes,
        windowed,
    )

    def main_admitted(cfg):  # main 2dc3a401's offload_admitted, its windowed gate inlined
        n, bw = cfg.parallel.cpu_offloading_num_layers, cfg.cluster.gpu.host_link_bw_Bps
        if n and bw is not None and windowed(cfg):
            return True
        if n == 0:
            return True
        if bw is None:
            return False
        copy_s, layer_s = offloaded_bytes(cfg) / n / bw, layer_forward_floor_s(cfg)
        if windowed(cfg):
            return all(copy_s <= w * layer_s for w in copy_windows(32, n))
        return all((i + 1) * copy_s <= (32 - n + i) * layer_s for i in range(n))

    seen = set()
    for version in ("25.09", "25.11", "26.04"):
        for n in (0, 1, 8, 16, 31):
            for link in (None, 4.5, 45, 450):
                for dtype in ("bf16", "fp8"):
                    cfg = _bridge(n, version, link, dtype)
                    assert offload_admitted(cfg) == main_admitted(cfg), (version, n, link, dtype)
                    seen.add(offload_admitted(cfg))
    assert seen == {True, False}
    with pytest.raises(ValueError, match="copy_stalls"):
        copies_hidden(_bridge(8, "25.11", 45))
    assert copies_hidden(_bridge(8, "26.04", 450)) and not copies_hidden(_bridge(8, "26.04", 4.5))


def test_no_op_list_builder_reads_tp_comm_overlap():
    """``search.lower_bounds.Bounds._ops_of`` shares a shard shape's op lists between the two
    ``tp_comm_overlap`` settings on the invariant that no op-list builder reads the field
    (search50). Over 40 random configs and every public row's: ``pass_ops`` with the field
    read through a spy records no read, and the lists built under either setting are equal.
    The spy does see a reader: the ``Pricer`` reads it."""
    import dataclasses

    from helpers import random_and_public_configs

    from trainsim.config import ParallelConfig
    from trainsim.pricing import Pricer
    from trainsim.search.lower_bounds import pass_ops

    reads: list[str] = []

    class Spy(ParallelConfig):
        def __getattribute__(self, name):
            if name == "tp_comm_overlap":
                reads.append(name)
            return object.__getattribute__(self, name)

    def spied(cfg):
        p = cfg.parallel
        return dataclasses.replace(cfg, parallel=Spy(**{f.name: getattr(p, f.name)
                                                        for f in dataclasses.fields(p)}))

    checked = 0
    for cfg in random_and_public_configs(51, 40):
        spy = spied(cfg)  # first: no cache of this shape yet
        reads.clear()
        ops = pass_ops(spy)
        assert reads == [], cfg
        flipped = dataclasses.replace(cfg, parallel=dataclasses.replace(
            cfg.parallel, tp_comm_overlap=not cfg.parallel.tp_comm_overlap))
        assert ops == pass_ops(cfg) == pass_ops(flipped), cfg
        checked += cfg.parallel.tp > 1
    assert checked >= 40
    reads.clear()
    Pricer(spied(cfg))
    assert reads


EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "llama3-8b-h100.yaml"
GOODPUT = Path(__file__).resolve().parent.parent / "examples" / "goodput-gpt3-175b-1k.yaml"


@pytest.mark.parametrize("args, words", [
    (["--tp", "4", "--set", "parallel.tp=8"], "--set parallel.tp=8 and --tp 4"),
    (["--set", "parallel.tensor_model_parallel_size=8", "--tp", "4"],
     "--set parallel.tensor_model_parallel_size=8 and --tp 4"),
    (["--no-sp", "--set", "parallel.sequence_parallel=true"],
     "--set parallel.sequence_parallel=true and --no-sp"),
    (["--seq", "4096", "--set", "training.seq_length=8192"],
     "--set training.seq_length=8192 and --seq 4096"),
    (["--gpus", "16", "--set", "cluster.num_gpus=8"], "--set cluster.num_gpus=8 and --gpus 16"),
])
def test_export_refuses_an_option_and_a_set_of_one_field(tmp_path, args, words):
    """fuzz51 optset: ``export CONFIG --tp 4 --set parallel.tp=8`` wrote a TP 4 workload (the
    option won in silence over a run config file; over a config.json the --set won). Now
    refused in one line; equal values are one setting."""
    from click.testing import CliRunner

    from trainsim.cli import main

    out = tmp_path / "w.txt"
    r = CliRunner().invoke(main, ["export", str(EXAMPLE), *args, "--simai", str(out)])
    assert r.exit_code == 2 and words in r.output and "give one" in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1 and not out.exists()
    r = CliRunner().invoke(main, ["export", str(EXAMPLE), "--tp", "4", "--set",
                                  "parallel.tp=4", "--simai", str(out)])
    assert r.exit_code == 0 and "model_parallel_NPU_group: 4 " in out.read_text(), r.output


def test_capture_inputs_refuse_an_option_and_a_set_of_one_field_for_a_config_json(tmp_path):
    """Over a Hugging Face config.json the --set won in silence (``default_run_config``
    applies the options, then the sets)."""
    from trainsim.capture.inputs import resolve
    from trainsim.errors import ConfigError

    hf = tmp_path / "config.json"
    hf.write_text(json.dumps({
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 256,
        "intermediate_size": 688, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 4, "vocab_size": 1024, "max_position_embeddings": 2048}))
    over = {"tp": 2, "sp": None, "cp": None, "ep": None, "seq": None, "mbs": None,
            "gpu": None, "gpus": None, "gbs": None}
    with pytest.raises(ConfigError, match=r"--set parallel.tp=4 and --tp 2 set the same field"):
        resolve(str(hf), over, ("parallel.tp=4",), capture=False)
    assert resolve(str(hf), over, ("parallel.tp=2",), capture=False)[1].parallel.tp == 2


@pytest.mark.parametrize("args, words", [
    (["--gpus", "2048", "--set", "cluster.num_gpus=1024"], "--set cluster.num_gpus=1024 and --gpus 2048"),
    (["--interval", "1h", "--set", "reliability.checkpoint.interval_s=600"],
     "--set reliability.checkpoint.interval_s=600 and --interval (3600 s)"),
    (["--failures", "meta-rsc1-a100", "--set", "reliability.failures=llama3-405b-16k-h100"],
     "--set reliability.failures=llama3-405b-16k-h100 and --failures meta-rsc1-a100"),
])
def test_goodput_refuses_an_option_and_a_set_of_one_field(args, words):
    """goodput's --gpus, --interval and --failures replaced a --set of their field in
    silence; equal values (10m and 600) run."""
    from click.testing import CliRunner

    from trainsim.cli import main

    r = CliRunner().invoke(main, ["goodput", str(GOODPUT), "--trials", "5", *args])
    assert r.exit_code == 2 and words in r.output and "give one" in r.output, r.output
    r = CliRunner().invoke(main, ["goodput", str(GOODPUT), "--trials", "5", "--format", "json",
                                  "--interval", "10m", "--set",
                                  "reliability.checkpoint.interval_s=600"])
    assert r.exit_code == 0 and json.loads(r.output)["checkpoint"]["interval_s"] == 600


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """A pp 2 run's Chakra traces (8 ranks) and rank 0's bytes and nodes."""
    from trainsim.catalog import run_config_from_dict
    from trainsim.interop.chakra import export_chakra
    from trainsim.interop.chakra_et import read_et

    cfg = run_config_from_dict({
        "model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                  "vocab_size": 1024},
        "parallel": {"pp": 2}, "training": {"global_batch_size": 16, "seq_length": 512},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                    "compute_db": None}})
    d = tmp_path_factory.mktemp("chakra")
    ex = export_chakra(cfg, d / "w")
    return d / "w", ex.paths[0], ex.paths[0].read_bytes(), read_et(ex.paths[0])[1], ex


def _edited(node, **attrs):
    import dataclasses

    kept = {k: v for k, v in node.attrs.items() if k not in attrs or attrs[k] is not None}
    return dataclasses.replace(node, attrs={**kept, **{k: v for k, v in attrs.items() if v}})


@pytest.mark.parametrize("damage", [
    lambda b, n: b[: len(b) // 2], lambda b, n: b"\xff" * 11 + b,
    lambda b, n: bytes(x ^ 0x5A for x in b)])
def test_a_damaged_chakra_trace_is_refused_naming_its_file(traces, damage):
    """fuzz51 chakraread: a truncated trace, an 11-byte varint or flipped bytes raised the
    wire reader's ValueError; now one line naming the file."""
    from trainsim.interop.chakra import read_chakra

    prefix, path, data, nodes, _ = traces
    path.write_bytes(damage(data, nodes))
    try:
        with pytest.raises(TrainsimError, match=r"w\.0\.et: not a Chakra execution trace"):
            read_chakra(prefix)
    finally:
        path.write_bytes(data)


@pytest.mark.parametrize("attrs, words", [
    ({"comm_src": None}, "receive node .* has comm_src=None"),
    ({"comm_src": ("string", "eight")}, "receive node .* has comm_src='eight'"),
    ({"trainsim.duration_s": ("double", float("inf"))}, r"lasts inf s"),
])
def test_a_chakra_node_with_a_bad_attribute_is_refused_naming_it(traces, attrs, words):
    """A receive without its comm_src (TypeError), with a word there (ValueError), or a node
    lasting inf (read back as an inf iteration; the engine already refused -1 and NaN)."""
    from trainsim.interop.chakra import read_chakra
    from trainsim.interop.chakra_et import COMM_RECV_NODE, write_et

    prefix, path, data, nodes, ex = traces
    i = next(i for i, n in enumerate(nodes) if n.type == COMM_RECV_NODE) \
        if "comm_src" in attrs else 0
    write_et(path, [*nodes[:i], _edited(nodes[i], **attrs), *nodes[i + 1:]])
    try:
        with pytest.raises(TrainsimError, match=words):
            read_chakra(prefix)
    finally:
        path.write_bytes(data)
    assert read_chakra(prefix) == pytest.approx(ex.iteration_time_s, rel=1e-9)


@pytest.mark.slow
def test_the_whole_fuzz51_round_finds_only_plans_pue_and_price():
    """Every surface of fuzz51, no class left: plan's --pue / --price beside a --set of
    cluster.pue / cluster.price_per_gpu_hour is refused (hsearch51), and the Chakra traces of
    DeepSpeed pipeline runs read back to the iteration (chakra57: 16 exportrt classes, each
    pass's sends one per receive at its end; the oracle now counts sends per receive and
    calls a trace trainsim's reader refuses a class)."""
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import fuzz51
    from fuzz_checks import outcome

    assert fuzz51.main(["--only", "exportrt,chakraread,unicode"]) == 0
    with tempfile.TemporaryDirectory() as d:
        failed = [label for label, thunk in fuzz51.optset_cases(d)() if outcome(thunk)]
    assert failed == []  # hsearch51: plan refuses them now (search.cli_inputs.check_plan_sets)
