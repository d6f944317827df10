"""Every config field, goodput's reliability fields, collective's options, export and the
service's job runner, swept by benchmarks/fuzz_sweep.py (seeded): each input ends in a sane
result or one clean error line. One regression test per failure class the sweep found (the
2026-11-24 fuzz session), then a short seeded sweep behind ``-m slow``."""

from __future__ import annotations

import copy
import importlib.util
import random
from pathlib import Path

import pytest
from helpers import cli, one_error_line

from trainsim.catalog import run_config_from_dict
from trainsim.errors import ConfigError
from trainsim.simulator import simulate

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "fuzz_sweep.py"


def _sweep_module():
    spec = importlib.util.spec_from_file_location("fuzz_sweep", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SWEEP = _sweep_module()
MOE = SWEEP.MOE
DENSE = SWEEP.DENSE
SWEEP_BASE_TEXT = """model: {hidden_size: 256, num_layers: 4, num_attention_heads: 4, vocab_size: 1024}
training: {global_batch_size: 16, seq_length: 512}
cluster: {gpu: h100-sxm-80gb, num_gpus: 8, gpus_per_node: 8, compute_db: null}
"""


def _with(base: dict, **sections) -> dict:
    cfg = copy.deepcopy(base)
    for section, fields in sections.items():
        cfg[section].update(fields)
    return cfg


# ---------------------------------------------------------------------------- found classes

@pytest.mark.parametrize("training, parallel, match", [
    ({"seq_length": 1}, {}, "divisible by tp\\*cp"),  # ZeroDivisionError: a 0-row router GEMM
    ({"seq_length": 12}, {"cp": 2, "tp": 4, "pp": 1}, "seq_length/cp=6 tokens over tp=4"),
    # the 2*cp rule first: SP's check divides by cp (it said "seq_length/cp=1 tokens")
    ({"seq_length": 6}, {"cp": 4, "pp": 1}, "seq_length=6 must be divisible by 2\\*cp=8"),
    ({"seq_length": 6}, {"tp": 4, "ep": 4}, "seq_length/cp=6 tokens over tp=4"),
])
def test_sequence_parallel_needs_a_sequence_tp_can_split(training, parallel, match):
    """Sequence parallelism scatters each sequence's tokens over the tp ranks (Megatron-core
    asserts the split is even); a sequence it cannot split was a ZeroDivisionError."""
    with pytest.raises(ConfigError, match=match):
        run_config_from_dict(_with(MOE, training=training, parallel=parallel))


def test_a_sequence_tp_splits_still_simulates():
    result = simulate(run_config_from_dict(_with(MOE, training={"seq_length": 2})))
    assert SWEEP.sane_result(result) is None


def test_shared_experts_must_split_over_tp():
    """A shared expert 1 wide over tp=2 was a 0-column GEMM (ZeroDivisionError)."""
    cfg = _with(MOE, model={"moe_shared_expert_intermediate_size": 1})
    with pytest.raises(ConfigError, match="moe_shared_expert_intermediate_size=1"):
        run_config_from_dict(cfg)
    cfg["model"]["moe_shared_expert_intermediate_size"] = 2
    assert SWEEP.sane_result(simulate(run_config_from_dict(cfg))) is None


# ---------------------------------------------------------------------------- the sweep

def _failures(surface: str, n: int, seed: int = 0) -> dict:
    out = SWEEP.sweep(seed, n, {surface}, str(_tmp()))
    return dict(out["failures"])


def _tmp() -> Path:
    import tempfile
    return Path(tempfile.mkdtemp(prefix="fuzz-"))


def test_a_sample_of_every_field_is_handled():
    """A deterministic sample of the field walk (every 25th input of it, both bases)."""
    rng = random.Random(0)
    bad = []
    for i, (label, thunk) in enumerate(SWEEP.config_cases(rng, 0)):
        if i % 25 == 0 and SWEEP.outcome(thunk):
            bad.append(label)
    assert not bad, bad


@pytest.mark.slow
@pytest.mark.parametrize("surface", ["config", "extreme", "set", "goodput", "collective",
                                     "service", "service-search", "validate", "sweep", "search",
                                     "export"])
def test_the_seeded_sweep_finds_nothing_slow(surface):
    assert not _failures(surface, 200)


@pytest.mark.parametrize("db", ["a\nb", "x\ry.json", "\x00"])
def test_a_file_name_with_a_line_break_is_echoed_escaped(db):
    """cluster.compute_db='a\\nb' was a two-line ConfigError (the file name as written)."""
    with pytest.raises(ConfigError) as exc:
        run_config_from_dict(_with(DENSE, cluster={"compute_db": db}))
    assert "\n" not in str(exc.value) and "\r" not in str(exc.value)


def test_an_output_file_name_with_a_line_break_is_one_error_line(tmp_path):
    (tmp_path / "run.yaml").write_text(SWEEP_BASE_TEXT)
    line = one_error_line(cli("simulate", str(tmp_path / "run.yaml"), "--trace",
                              str(tmp_path / "no\ndir" / "t.json")))
    assert "no\\ndir" in line


def test_a_checkpoint_upload_at_the_slowest_rate_is_finite_json(tmp_path):
    """An upload at 1e-300 B/s: the interval in steps overflowed to Infinity (invalid JSON),
    and the text report printed a 300-digit day count. Since robust56 a rate below 1 B/s is
    refused naming the field, as the cluster's and the GPU's are (``config._build.MIN_RATE``);
    at 1 B/s the answer is finite JSON and the text a day count."""
    import json
    import re

    path = tmp_path / "run.yaml"
    path.write_text(SWEEP_BASE_TEXT + "reliability: {checkpoint: {storage_write_bw_Bps: 1.0e-300}}\n")
    out = cli("goodput", str(path), "--tokens", "1B", "--trials", "1", "--format", "json")
    assert out.exit_code == 2 and "reliability.checkpoint.storage_write_bw_Bps=1e-300 is below 1 " \
        "per second" in out.stderr, out.output
    path.write_text(SWEEP_BASE_TEXT + "reliability: {checkpoint: {storage_write_bw_Bps: 1.0}}\n")
    out = cli("goodput", str(path), "--tokens", "1B", "--trials", "1", "--format", "json")
    assert out.exit_code == 0, out.output
    ck = json.loads(out.stdout, parse_constant=lambda c: pytest.fail(c))["checkpoint"]
    assert ck["upload_s"] == ck["size_bytes"] and ck["interval_steps"] > 1e9
    text = cli("goodput", str(path), "--tokens", "1B", "--trials", "1").stdout
    assert re.search(r"upload [0-9.,]+ d", text), text


@pytest.mark.parametrize("args, match", [
    # 1M GPUs: 2M group memberships (each data-parallel group of 250,000 ranks was built once
    # per rank and node: over 5 minutes before)
    (("--chakra", "e", "--ranks", "0", "--set", "cluster.num_gpus=1000000",
      "--set", "training.global_batch_size=1000000"), "memberships of a 1,000,000-GPU run"),
    (("--chakra", "e", "--set", "cluster.num_gpus=2048", "--set",
      "training.global_batch_size=2048"), "--ranks 0,8"),
    # 40M micro-batches: the graph (chakra) or the rows (SimAI) were built until memory ran out
    (("--simai", "w.txt", "--set", "training.global_batch_size=80000000"), "micro-batches"),
    (("--chakra", "e", "--set", "training.global_batch_size=80000000"), "micro-batches"),
])
def test_an_export_over_the_task_limit_is_refused_before_it_runs(tmp_path, args, match):
    import yaml
    path = tmp_path / "moe.yaml"
    path.write_text(yaml.safe_dump(MOE))
    line = one_error_line(cli("export", str(path), *args, cwd=tmp_path))
    assert "over the limit" in line and match in line


@pytest.mark.parametrize("out", [("--chakra", "e"), ("--simai", "w.txt")])
def test_the_export_limit_is_raised_with_the_exports_own_flag(tmp_path, out):
    """A full Chakra export of examples/llama3-70b-h100-64.yaml writes 3.2M nodes, over the
    500k default; export had no --max-tasks and its refusal named simulate's."""
    import yaml
    path = tmp_path / "moe.yaml"
    path.write_text(yaml.safe_dump(MOE))
    line = one_error_line(cli("export", str(path), *out, "--max-tasks", "20", cwd=tmp_path))
    assert "over the limit of 20" in line and "export --max-tasks N" in line
    assert cli("export", str(path), *out, "--max-tasks", "1000000", cwd=tmp_path).exit_code == 0


def test_chakra_groups_of_a_large_run_are_built_once_each(tmp_path, monkeypatch):
    """16,384 GPUs, one rank: every group's members built once, not once per rank and node
    (8 s before, 3 s after; a 1M-GPU run's never ended)."""
    import collections
    import json

    import yaml

    from trainsim.interop.chakra import Layout
    built = collections.Counter()
    ranks_of = Layout._ranks

    def counted(self, group, rank):
        ranks = ranks_of(self, group, rank)
        built[(group, tuple(ranks))] += 1
        return ranks
    monkeypatch.setattr(Layout, "_ranks", counted)
    path = tmp_path / "moe.yaml"
    path.write_text(yaml.safe_dump(_with(MOE, cluster={"num_gpus": 16384},
                                         training={"global_batch_size": 16384})))
    out = cli("export", str(path), "--chakra", "e", "--ranks", "0", cwd=tmp_path)
    assert out.exit_code == 0, out.output
    groups = json.loads((tmp_path / "e.json").read_text())
    seen = collections.Counter(r for ranks in groups.values() for r in ranks)
    # every rank in each of the stage's five collective groups, once: the tp and ep pairs, the
    # tied embedding's all-reduce pair, the data-parallel and expert-data-parallel groups of
    # 4,096 (their gradient all-reduces: written as compute until mllama58, whose export
    # takes them from the task graph's record, ``_TaskGraph.collectives``)
    assert sorted(seen) == list(range(16384)) and set(seen.values()) == {5}
    assert sorted(map(len, groups.values())).count(4096) == 8
    assert len(built) == len(groups) and set(built.values()) == {1}


def test_a_run_whose_wall_clock_overflows_is_refused(tmp_path):
    """Checkpoints written at 1e-300 B/s over a 1e12-token run: planned stops waited 6e307 s
    each, and the JSON said "expected_days": Infinity, "p50_days": NaN (with numpy's
    overflow warnings on stderr). Refused in one line naming the field: since robust56 at the
    rate's floor (below 1 B/s, as the cluster's rates), before the run's wall clock."""
    path = tmp_path / "run.yaml"
    path.write_text(SWEEP_BASE_TEXT + "reliability: {checkpoint: {storage_write_bw_Bps: 1.0e-300}}\n")
    line = one_error_line(cli("goodput", str(path), "--tokens", "1e12", "--trials", "20"))
    assert line.startswith("error: reliability.checkpoint.storage_write_bw_Bps=1e-300 is below 1 "
                           "per second")


def test_a_window_skip_frequency_without_a_window_is_ignored():
    """Megatron-core reads window_attn_skip_freq only when window_size is set (core_v0.19.0
    transformer/utils.py is_layer_window_attention); refusing it made gpt-oss-20b's
    natural what-if `--set model.sliding_window=null` fail on the preset's own value."""
    run = _with(DENSE, training={"seq_length": 1024})
    run["model"] = {"preset": "gpt-oss-20b", "num_layers": 2, "sliding_window": None}
    cfg = run_config_from_dict(run)
    assert cfg.model.sliding_window is None and cfg.model.window_attn_skip_freq == 2
    assert SWEEP.sane_result(simulate(cfg)) is None
    alone = run_config_from_dict(_with(DENSE, model={"window_attn_skip_freq": 2}))
    assert SWEEP.sane_result(simulate(alone)) is None


def test_a_name_with_a_line_break_stays_on_one_line(tmp_path):
    """Sites that quote a file name raw (an HF config's checks, Chakra's trace files) made a
    two-line error of 'a\\nb'; TrainsimError escapes its text once for every site."""
    from trainsim.catalog import model_from_hf_config
    from trainsim.errors import TrainsimError
    from trainsim.interop.chakra import trace_files
    folder = tmp_path / "a\nb\x1b[31m"
    folder.mkdir()
    (folder / "config.json").write_text("[]")
    with pytest.raises(ConfigError, match="holds a mapping") as err:
        model_from_hf_config(folder / "config.json")
    with pytest.raises(TrainsimError, match="no Chakra traces") as err2:
        trace_files(folder / "t")
    for exc in (err.value, err2.value):
        assert "\n" not in str(exc) and "\x1b" not in str(exc) and "a\\nb\\x1b[31m" in str(exc)
    (folder / "run.yaml").write_text("[]")
    line = one_error_line(cli("simulate", str(folder / "run.yaml")))
    assert "a\\nb\\x1b[31m/run.yaml must hold a mapping" in line


@pytest.mark.parametrize("kind, options, field", [
    ("search", {"gpus": 8, "global_batch": 8, "seq": 256, "nic_gbps": "x"}, "options.nic_gbps"),
    ("plan", {"tokens": "1B", "days": 1, "max_gpus": 8, "seq": 256, "global_batch": "x"},
     "options.global_batch"),
    ("plan", {"tokens": "1B", "days": 1, "max_gpus": 8, "seq": 256, "pue": [1]}, "options.pue"),
])
def test_a_job_option_that_is_no_number_names_the_option(kind, options, field):
    """float('x') in the job runner was a ValueError the dispatcher reported against all of
    `options`, not the option at fault."""
    pytest.importorskip("fastapi")
    from trainsim.service import Settings
    from trainsim.service.jobs import problem
    settings = Settings(db_url="sqlite://", workers=0, checkers=0)
    status, named, message = problem(kind, {"model": dict(DENSE["model"])}, options, settings)
    assert status == 422 and named == field and "\n" not in message


@pytest.mark.parametrize("reference", [3, ["tp=2"], 2.5])
def test_a_search_job_reference_that_is_no_text_is_a_field_error(reference):
    """options.reference=3 was an AttributeError ('int' has no 'replace') in the worker."""
    pytest.importorskip("fastapi")
    from trainsim.service import Settings
    from trainsim.service.jobs import problem
    settings = Settings(db_url="sqlite://", workers=0, checkers=0)
    options = {"gpus": 8, "global_batch": 8, "seq": 256, "reference": reference}
    answer = problem("search", {"model": dict(DENSE["model"])}, options, settings)
    if reference == ["tp=2"]:  # a list of one field=value is that text
        assert answer is None
    else:
        status, _field, message = answer
        assert status == 422 and "expected field=value" in message and "\n" not in message


@pytest.mark.parametrize("model, match", [
    ({"qk_pos_emb_head_dim": -1}, "qk_pos_emb_head_dim=-1 must be >= 0"),  # accepted, unread
    # under MLA a negative rope width was a ZeroDivisionError
    ({"kv_lora_rank": 64, "qk_head_dim": 16, "v_head_dim": 16, "qk_pos_emb_head_dim": -16},
     "qk_pos_emb_head_dim=-16 must be >= 0"),
])
def test_a_negative_rope_width_is_refused(model, match):
    with pytest.raises(ConfigError, match=match):
        run_config_from_dict(_with(DENSE, model=model))


@pytest.mark.parametrize("base, parallel, match", [
    (DENSE, {"decoder_first_pipeline_num_layers": 2**40}, "leaves -1099511627772 layers"),
    (DENSE, {"decoder_last_pipeline_num_layers": 2}, "leaves 2 layers .* for 0 middle"),
    (DENSE, {"pp": 2, "decoder_first_pipeline_num_layers": 4},
     "leaves 0 layers .* for 1 middle"),
    (MOE, {"decoder_first_pipeline_num_layers": 0},
     "decoder_first_pipeline_num_layers=0 must be > 0"),
    (MOE, {"pipeline_model_parallel_layout": "first:0,last:4"},
     "pipeline_model_parallel_layout='first:0,last:4' puts 0 layers"),
    (MOE, {"pipeline_model_parallel_layout": "first:4"}, "pipeline_model_parallel_layout"),
    (DENSE, {"decoder_first_pipeline_num_layers": 2, "decoder_last_pipeline_num_layers": 2},
     "for -1 middle stages of pp=1"),
])
def test_first_and_last_stage_layers_follow_megatron_core(base, parallel, match):
    """Megatron-core transformer_config.py (core_v0.19.0, "Uneven PP"): first/last > 0, and
    the layers left fill the middle stages or there are none; an empty stage (pp 2 with
    first = num_layers) and first = 0 were accepted, pp 1 with first = num_layers refused."""
    with pytest.raises(ConfigError, match=match) as err:
        run_config_from_dict(_with(base, parallel=parallel))
    assert "\n" not in str(err.value)
    for ok in (_with(MOE, parallel={"decoder_first_pipeline_num_layers": 1}),
               _with(DENSE, parallel={"decoder_first_pipeline_num_layers": 4})):
        assert SWEEP.sane_result(simulate(run_config_from_dict(ok))) is None
