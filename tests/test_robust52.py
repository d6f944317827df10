"""robust52: the edges session 51 left (the Chakra reader's duration range, capture's factory
options before PyTorch, moe_latent_size's wording, plan's answer when no GPU count meets the
deadline) and the failure classes of the thirty-second fuzz round (benchmarks/fuzz52.py)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest
from helpers import cli, one_error_line

from trainsim.errors import ConfigError, TrainsimError

SMALL = {"model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                   "vocab_size": 1024},
         "parallel": {"pp": 2}, "training": {"global_batch_size": 16, "seq_length": 512},
         "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                     "compute_db": None}}


# ------------------------------------------------------------------ the Chakra reader's durations

@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    from trainsim.catalog import run_config_from_dict
    from trainsim.interop.chakra import export_chakra
    from trainsim.interop.chakra_et import read_et

    d = tmp_path_factory.mktemp("chakra52")
    ex = export_chakra(run_config_from_dict(json.loads(json.dumps(SMALL))), d / "w")
    return d / "w", ex.paths[0], ex.paths[0].read_bytes(), read_et(ex.paths[0])[1], ex


def _read_with(traces, first, exact: bool = True, raw: bytes | None = None) -> float:
    from trainsim.interop.chakra import read_chakra
    from trainsim.interop.chakra_et import write_et

    prefix, path, data, nodes, _ = traces
    if raw is None:
        write_et(path, [first, *nodes[1:]])
    else:
        path.write_bytes(raw)
    try:
        return read_chakra(prefix, exact=exact)
    finally:
        path.write_bytes(data)


@pytest.mark.parametrize("seconds", [1e308, 1.9e13, -1e-9])
def test_an_exact_duration_past_chakras_uint64_microseconds_is_refused(traces, seconds):
    """Chakra states a node's time as ``uint64 duration_micros``: 0 to 2**64 - 1 us. Before,
    trainsim's exact attribute took any finite value: 1e308 s passed, and two such nodes in a
    row read back as an iteration of inf s."""
    n = traces[3][0]
    first = dataclasses.replace(n, attrs={**n.attrs, "trainsim.duration_s": ("double", seconds)})
    with pytest.raises(TrainsimError, match=r"w\.0\.et: node 0 .* lasts .* a duration is 0 to "
                                            r"1\.84467e\+13 s \(Chakra's duration_micros"):
        _read_with(traces, first)


def test_two_nodes_at_the_largest_float_no_longer_read_as_an_infinite_iteration(traces):
    from trainsim.interop.chakra import read_chakra
    from trainsim.interop.chakra_et import write_et

    prefix, path, data, nodes, _ = traces
    big = [dataclasses.replace(n, attrs={**n.attrs, "trainsim.duration_s": ("double", 1e308)})
           for n in nodes[:2]]
    write_et(path, [*big, *nodes[2:]])
    try:
        with pytest.raises(TrainsimError, match="lasts 1e\\+308 s"):
            read_chakra(prefix)
    finally:
        path.write_bytes(data)


def test_the_schemas_whole_range_reads_back_finite(traces):
    """The longest node the schema can state (2**64 - 1 us, and its exact twin) is read, and
    the iteration is that node's time plus the rest's, finite."""
    n = traces[3][0]
    longest = dataclasses.replace(n, duration_micros=2**64 - 1)
    got = _read_with(traces, longest, exact=False)
    assert (2**64 - 1) * 1e-6 <= got < (2**64 - 1) * 1e-6 * (1 + 1e-12)
    exact = dataclasses.replace(n, attrs={**n.attrs, "trainsim.duration_s":
                                          ("double", (2**64 - 1) * 1e-6)})
    assert _read_with(traces, exact) == pytest.approx((2**64 - 1) * 1e-6, rel=1e-12)
    assert _read_with(traces, traces[3][0]) == pytest.approx(traces[4].iteration_time_s,
                                                             rel=1e-9)


def test_a_varint_duration_past_64_bits_is_refused(traces):
    """The wire reader decodes varints of up to 70 bits; a ``duration_micros`` past a uint64
    was read as a duration no Chakra reader holds."""
    from trainsim.interop import wire
    from trainsim.interop.chakra_et import N_DUR, encode_metadata, encode_node

    nodes = traces[3]
    first = encode_node(nodes[0]) + wire.key(N_DUR, wire.VARINT) + wire.varint(2**69)
    raw = wire.write_delimited([encode_metadata(), first, *map(encode_node, nodes[1:])])
    with pytest.raises(TrainsimError, match="duration_micros=590295810358705651712, past a "
                                            "uint64"):
        _read_with(traces, None, exact=False, raw=raw)


# ------------------------------------------------------------------ capture's factory options

@pytest.mark.parametrize("args, named", [
    (["--tp", "2"], "--tp 2"), (["--no-sp"], "--no-sp"), (["--gbs", "8"], "--gbs 8"),
    (["--set", "parallel.tp=2"], "--set parallel.tp=2"), (["--simulate"], "--simulate")])
def test_capture_refuses_a_factorys_run_options_before_pytorch(monkeypatch, args, named):
    """A package.module:factory gives a module, no run: its run options and --set were dropped
    in silence (with PyTorch) or reported as "needs torch" (without it)."""
    monkeypatch.setitem(sys.modules, "torch", None)  # as if PyTorch were not installed
    line = one_error_line(cli("capture", "nosuch_pkg52.mod:make", *args))
    assert line.startswith(f"error: {named}: nosuch_pkg52.mod:make is a factory"), line
    assert "--seq, --mbs and --gpu" in line


def test_capture_checks_a_factorys_gpu_before_pytorch(monkeypatch):
    """--gpu was looked up only after the capture: without PyTorch 'needs torch' hid it."""
    monkeypatch.setitem(sys.modules, "torch", None)
    line = one_error_line(cli("capture", "nosuch_pkg52.mod:make", "--gpu", "h1OO"))
    assert "unknown GPU 'h1OO'" in line
    line = one_error_line(cli("capture", "nosuch_pkg52.mod:make", "--gpu", "h100-sxm-80gb"))
    assert "needs torch" in line  # valid options: the missing dependency is the one problem


# ------------------------------------------------------------------ wording

def test_moe_latent_size_zero_says_what_is_valid():
    from trainsim.catalog import run_config_from_dict

    cfg = json.loads(json.dumps(SMALL))
    cfg["model"].update(num_experts=8, moe_latent_size=0)
    with pytest.raises(ConfigError) as info:
        run_config_from_dict(cfg)
    text = str(info.value)
    assert "moe_latent_size=0 must be a positive whole number" in text
    assert "left out for experts on hidden_size" in text and "positive finite" not in text


def test_a_whole_number_field_at_zero_is_told_a_whole_number():
    from trainsim.catalog import run_config_from_dict

    cfg = json.loads(json.dumps(SMALL))
    cfg["model"]["hidden_size"] = 0
    with pytest.raises(ConfigError, match=r"hidden_size=0 must be a positive whole number"):
        run_config_from_dict(cfg)
    cfg = json.loads(json.dumps(SMALL))
    cfg["model"].update(num_experts=8, moe_capacity_factor=0.0)  # a number keeps its wording
    with pytest.raises(ConfigError, match=r"moe_capacity_factor=0.0 must be a positive finite "
                                          "number"):
        run_config_from_dict(cfg)


# ------------------------------------------------------------------ plan with no GPU count fast enough

PLAN = ["plan", "llama3.2-1b", "--tokens", "1e12", "--days", "1", "--max-gpus", "8", "--seq",
        "1024", "--workers", "1"]


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_plan_says_in_one_stderr_line_that_no_count_meets_the_deadline(fmt):
    """Before: the table's closing line on stdout, nothing on stderr; --format json exited 0."""
    r = cli(*PLAN, "--format", fmt)
    assert r.exit_code == 1, r.output
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("no plan: no GPU count up to 8 meets the deadline of 1 day for "
                               "1e+12 tokens (tried 8 GPUs); the fastest found, "), lines[0]
    days = float(lines[0].split(" takes ")[1].split()[0])
    if fmt == "json":
        got = json.loads(r.stdout)
        assert got["best"] is None and got["closest"]["config"]["num_gpus"] == 8
        c = got["closest"]
        assert days == pytest.approx(1e12 / c["tokens_per_s"] / 86400, rel=5e-3)
    assert days > 1


def test_plans_days_show_enough_digits_to_miss_the_deadline():
    """A closest run just past the deadline is not printed as the deadline itself."""
    import types

    from trainsim.search.cli import no_plan

    best = types.SimpleNamespace(label="TP1", num_gpus=8, tokens_per_s=1e6 / 86400 / 1.00004)
    result = types.SimpleNamespace(steps=[types.SimpleNamespace(num_gpus=8)], closest=best,
                                   tokens=1e6, deadline_days=1.0)
    import click
    from click.testing import CliRunner

    @click.command()
    def cmd():
        no_plan(result, 8)

    r = CliRunner().invoke(cmd, [])
    assert r.exit_code == 1 and "takes 1.00004 days" in r.stderr, r.stderr


# ------------------------------------------------------------------ fuzz52: resolved configs read back

def _bases52():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import fuzz52
    return fuzz52


@pytest.mark.parametrize("name", ["dense", "moe", "mla", "hybrid", "latent"])
def test_a_resolved_config_reads_back_as_itself(tmp_path, name):
    """simulate --format json's ``config`` (every default filled in) was refused when read back:
    "unknown node 'custom'" (ClusterConfig's own word for no node preset), and a 16-bit run's
    stated default recipe was then warned of as ignored."""
    import warnings

    import yaml

    from trainsim.catalog import load_run_config, run_config_from_dict
    from trainsim.simulator import simulate

    cfg = run_config_from_dict(json.loads(json.dumps(_bases52().SMALL[name])))
    result = simulate(cfg)
    resolved = result.to_dict()["config"]
    assert resolved["cluster"]["node"] == "custom"
    for path, text in ((tmp_path / "r.json", json.dumps(resolved)),
                       (tmp_path / "r.yaml", yaml.safe_dump(resolved))):
        path.write_text(text)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            back = load_run_config(str(path))
        assert back == cfg
        assert [str(w.message) for w in said] == []
        assert simulate(back).iteration_time_s == result.iteration_time_s


def test_node_custom_without_a_gpu_asks_for_the_gpu():
    from trainsim.catalog import run_config_from_dict

    with pytest.raises(ConfigError, match="cluster.gpu is required"):
        run_config_from_dict({"model": "llama3.2-1b", "cluster": {"node": "custom",
                                                                  "num_gpus": 8}})


def test_a_stated_recipe_other_than_the_runs_own_is_still_warned_of():
    """The warning stays for a recipe that is not the one the run would hold anyway."""
    import warnings

    from trainsim.catalog import run_config_from_dict

    for recipe, warned in (("delayed", False), ("mxfp8", True)):
        cfg = json.loads(json.dumps(SMALL))
        cfg["training"]["fp8_recipe"] = recipe
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            run_config_from_dict(cfg)
        got = [str(w.message) for w in said if "fp8_recipe" in str(w.message)]
        assert bool(got) is warned, got


def test_the_service_takes_a_resolved_config_back(tmp_path):
    pytest.importorskip("fastapi")
    fuzz52 = _bases52()
    from trainsim.catalog import run_config_from_dict
    from trainsim.simulator import simulate

    client, headers = fuzz52._client(str(tmp_path), {})
    resolved = simulate(run_config_from_dict(json.loads(json.dumps(
        fuzz52.SMALL["latent"])))).to_dict()["config"]
    r = client.post("/api/v1/jobs", json={"kind": "simulate", "config": resolved},
                    headers=headers)
    assert r.status_code == 202, r.text


# ------------------------------------------------------------------ fuzz52: layers records

@pytest.mark.parametrize("line", [0, 1])
def test_a_layers_integer_past_pythons_digit_limit_names_its_field(tmp_path, line):
    """A 5,001-digit fwd_bwd_ms raised "Exceeds the limit (4300 digits) for integer string
    conversion" (line 2), or on line 1 was told "no layer record"."""
    src = Path(__file__).resolve().parents[1] / "src" / "trainsim" / "data" / "validation" \
        / "layers_h100_measured.jsonl"
    records = [json.loads(x) for x in src.read_text().splitlines()[:2]]
    records[line]["fwd_bwd_ms"] = "@@"
    path = tmp_path / "layers.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records).replace('"@@"', "1" + "0" * 5000))
    err = one_error_line(cli("validate", str(path), "--format", "json"))
    assert f"line {line + 1}: fwd_bwd_ms=inf must be a positive number" in err, err


# ------------------------------------------------------------------ fuzz52: the round

def test_fuzz52_samples_find_no_class():
    """A seeded sample of the round's fast surfaces (the whole round: -m slow)."""
    assert _bases52().main(["--only", "rtconfig,chakradur", "--count", "30"]) == 0


@pytest.mark.slow
def test_the_whole_fuzz52_round_finds_no_class():
    assert _bases52().main(["--count", "700"]) == 0
