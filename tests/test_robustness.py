"""Regression tests for issue 18, one per category it lists: bad input is one clean error line,
big input is refused before it runs, valid input is not refused, and no value is impossible."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner
from helpers import cli  # the CLI in-process, tracebacks escaping

from trainsim.catalog import load_run_config, run_config_from_dict
from trainsim.collectives import Fabric, GroupSpan, LinkTier, collective_cost
from trainsim.config.safe_load import load_file
from trainsim.errors import ConfigError, TrainsimError
from trainsim.limits import WorkLimitError
from trainsim.simulator import simulate

BASE = """model: {hidden_size: 256, num_layers: 4, num_attention_heads: 4, vocab_size: 1024}
training: {global_batch_size: 16, seq_length: 512}
cluster: {gpu: h100-sxm-80gb, num_gpus: 8, gpus_per_node: 8, compute_db: null}
"""


@pytest.fixture
def base(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(BASE)
    return path


def one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr  # click's too
    return lines[-1]


# ---------------------------------------------------------------------------- tracebacks

@pytest.mark.parametrize("text, match", [
    ("x: !!binary aGVsbG8=\n", "!!binary"),
    ("x: !!set {a: null}\n", "!!set"),
    ("x: !!python/object:os.system {}\n", "not valid YAML"),
    ("x: " + "9" * 5000 + "\n", "digits"),
    ("x: " + "[" * 200 + "]" * 200 + "\n", "nested too deeply"),
    ("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcdefg", "bcdefgh")),
     "aliases"),
])
def test_yaml_that_is_not_plain_data_is_refused(tmp_path, text, match):
    """Binary/set/python tags, huge integers, deep nesting and alias bombs: ConfigError (a date
    reads as its text: test_fuzz17.py)."""
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_file(path)


def test_an_endless_file_is_read_up_to_the_size_limit():
    """/dev/zero is refused after 16 MiB, not read forever."""
    with pytest.raises(ConfigError, match="larger than"):
        load_file("/dev/zero")


@pytest.mark.parametrize("section, value, match", [
    ("parallel", [1, 2], "parallel must be a mapping"),
    ("training", "fast", "training must be a mapping"),
])
def test_a_section_that_is_not_a_mapping_names_itself(section, value, match):
    raw = {"model": "llama3-8b", "cluster": {"node": "dgx-h100"}, section: value}
    with pytest.raises(ConfigError, match=match):
        run_config_from_dict(raw)


@pytest.mark.parametrize("override, match", [
    ("cluster.gpu_overrides.peak_tflops=3", r"cluster.gpu_overrides.peak_tflops must be a map"),
    ("cluster.gpu_overrides=[1]", r"cluster.gpu_overrides must be a mapping"),
    ("cluster.gpu={name: x, peak_tflops: 5}", r"cluster.gpu.peak_tflops must be a mapping"),
    ("cluster.nic_gbps_per_gpu=fast", r"cluster.nic_gbps_per_gpu must be a number"),
    ("cluster.nvlink_gbps=fast", r"cluster.nvlink_gbps must be a number"),
    ("model.mtp_num_layers=1e21", r"model.mtp_num_layers=.* out of range"),
    ("model.num_layers=" + "9" * 40, r"model.num_layers"),
])
def test_wrong_types_and_sizes_name_the_field_as_written(base, override, match):
    with pytest.raises(ConfigError, match=match):
        load_run_config(base, [override])


def test_bad_hugging_face_fields_and_kernel_databases_are_config_errors(base, tmp_path):
    hf = tmp_path / "config.json"
    hf.write_text(json.dumps({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads":
                              4, "vocab_size": 10, "attention_dropout": "x"}))
    run = tmp_path / "hf.yaml"
    run.write_text(BASE.replace(BASE.splitlines()[0], f"model: {{hf_config: {hf}}}"))
    with pytest.raises(ConfigError, match="attention_dropout must be a number"):
        load_run_config(run)
    db = tmp_path / "db.json"
    db.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="not a kernel database"):
        load_run_config(base, [f"cluster.compute_db={db}"])


@pytest.mark.parametrize("value", ["", "abc", "0", "-1", "nan"])
def test_validate_rows_need_a_positive_measured_value(tmp_path, value):
    """The row fails naming the column (it refused the whole file until fuzz35)."""
    path = tmp_path / "rows.csv"
    path.write_text("id,model,gpu,num_gpus,gpus_per_node,tp,pp,global_batch_size,seq_length,"
                    f"measured_iteration_s\nr1,llama3-8b,h100-sxm-80gb,8,8,1,1,8,2048,{value}\n")
    result = cli("validate", str(path), "--format", "json", "--compute-db", "none")
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)["rows"][0]
    assert "measured_iteration_s" in row["error"] and row["predicted"] is None


@pytest.mark.parametrize("args", [
    ("collective", "--sizes", "8:infG"),
    ("search", "llama3-8b", "--gpus", "8", "--global-batch", "16", "--seq", "2048",
     "--reference", "tp=["),
    ("plan", "llama3-8b", "--tokens", "1T", "--days", "10", "--seq", "0"),
    ("goodput", "run.yaml", "--tokens", "1.2.3"),
    ("goodput", "run.yaml", "--tokens", "1T", "--seed", "-1"),
    ("export", "run.yaml", "--chakra", "x", "--ranks", "99"),
    ("simulate", "run.yaml", "--trace", "/dev/full"),
    ("simulate", "run.yaml", "--set", "training.dtype=2020-01-01"),
])
def test_bad_command_lines_end_in_one_error_line(base, args):
    one_error_line(cli(*args, cwd=base.parent))


def test_plan_reads_token_counts_as_goodput_does():
    """plan --tokens 300B means 300 billion, as goodput reads it (it was refused)."""
    from trainsim.search.whatif import parse_number

    assert parse_number("300B", "--tokens") == parse_number("300G", "--tokens") == 3e11
    with pytest.raises(ConfigError, match="B/G"):
        parse_number("300X", "--tokens")


def test_a_trace_into_a_missing_directory_is_handled(base):
    """Written (the directory is made) or refused in one line; never a traceback."""
    result = cli("simulate", "run.yaml", "--trace", "no/such/dir/t.json", cwd=base.parent)
    if result.exit_code:
        one_error_line(result)
    else:
        assert (base.parent / "no/such/dir/t.json").exists()


# ---------------------------------------------------------------------------- hangs

@pytest.mark.parametrize("override", ["training.global_batch_size=1000000000",
                                      "training.global_batch_size=1e15"])
def test_an_iteration_over_the_task_limit_is_refused_before_it_runs(base, override):
    """Every micro-batch simulated (a timeline asked for) is refused; without a timeline the
    steady-state shortcut's truncated runs and the memory estimate's O(pp x vpp) peak cost the
    same whatever the micro-batches, so the iteration is simulated."""
    cfg = load_run_config(base, [override])
    with pytest.raises(WorkLimitError, match="TRAINSIM_MAX_TASKS"):
        simulate(cfg, keep_timeline=True)
    result = simulate(cfg)
    assert result.simulation["method"] == "steady-state"
    assert result.iteration_time_s > 1e-4 * cfg.num_microbatches  # every micro-batch counted


def test_the_task_limit_can_be_raised_and_lowered(base, monkeypatch):
    cfg = load_run_config(base)
    monkeypatch.setenv("TRAINSIM_MAX_TASKS", "5")
    with pytest.raises(WorkLimitError, match="over the limit of 5"):
        simulate(cfg)
    assert "--max-tasks" in one_error_line(cli("simulate", str(base), "--max-tasks", "5"))


@pytest.mark.parametrize("args, flag", [
    (("search", "llama3-8b", "--gpus", "8", "--global-batch", "1000000000000000", "--seq",
      "2048"), "TRAINSIM_MAX_TASKS"),
    (("collective", "--backend", "flow", "--gpus", "16384", "--op", "all_to_all", "--sizes",
      "1M"), "--max-flows"),
    (("goodput", "run.yaml", "--tokens", "1T", "--trials", "100000000"), "--max-trial-rounds"),
    (("goodput", "run.yaml", "--days", "1e9"), "--max-trial-rounds"),
])
def test_big_work_is_refused_in_one_line_naming_the_override(base, args, flag):
    assert flag in one_error_line(cli(*args, cwd=base.parent))


def test_checkpoints_so_frequent_the_run_never_ends_are_refused():
    """GPT-3 175B checkpoints every 1e-300 s: its stalls stretch the run without end; since
    robust50 refused first as shorter than one iteration (checkpoints fall between them)."""
    example = os.path.join(os.path.dirname(__file__), "..", "examples",
                           "goodput-gpt3-175b-1k.yaml")
    assert "shorter than one iteration" in one_error_line(cli("goodput", example, "--interval",
                                                              "1e-300"))


def test_absurd_layer_counts_are_out_of_range(base):
    with pytest.raises(ConfigError, match="at most 100,000 layers"):
        load_run_config(base, ["model.num_layers=10000000"])
    for layout in ("Et*99999999999|L", "((((((((((t*9)*9)*9)*9)*9)*9)*9)*9)*9)*9)"):
        with pytest.raises(ConfigError, match="expands to more than"):  # not a MemoryError
            load_run_config(base, [f"parallel.pipeline_model_parallel_layout={layout}"])


# ---------------------------------------------------------------------------- wrong refusals

@pytest.mark.parametrize("overrides", [
    ["cluster.network_backend=flow"],  # one node, pp=1: there is no pipeline send
    ["cluster.network_backend=flow", "parallel.cp=4"],  # ring attention over 4 ranks
    ["cluster.network_backend=flow", "parallel.cp=3", "cluster.num_gpus=6",
     "cluster.gpus_per_node=6", "training.seq_length=600", "training.global_batch_size=4"],
    ["cluster.nccl_algo=ring", "parallel.pp=2"],  # NCCL_ALGO does not govern p2p sends
    ["cluster.nccl_algo=ring", "parallel.pp=2", "cluster.network_backend=flow"],
])
def test_valid_configs_that_were_refused_now_simulate(base, overrides):
    r = simulate(load_run_config(base, overrides))
    assert r.iteration_time_s > 0


# ---------------------------------------------------------------------------- silent nonsense

def test_fp8_utilization_is_against_the_fp8_peak(base):
    r = simulate(load_run_config(base, ["training.dtype=fp8"]))
    gpu = r.config.cluster.gpu
    assert 0 < r.mfu <= 1 and 0 < r.hfu <= 1
    assert r.mfu_16bit == pytest.approx(r.mfu * gpu.flops("fp8") / gpu.flops("bf16"))
    d = r.to_dict()
    assert d["mfu"] == r.mfu and d["mfu_16bit"] == r.mfu_16bit


def test_bf16_utilization_is_the_same_under_both_names(base):
    r = simulate(load_run_config(base))
    assert r.mfu_16bit == r.mfu


@pytest.mark.parametrize("override, match", [
    ("cluster.gpu_overrides.peak_tflops.bf16=-5", "must be positive"),
    ("cluster.gpu_overrides.mamf_fraction=5", r"mamf_fraction=5.0 must be in \(0, 1\]"),
    ("cluster.gpu_overrides.hbm_bw_gbps=0", "must be positive"),
    ("cluster.pue=-1", "pue=-1.0 must be >= 1"),
    ("cluster.price_per_gpu_hour=-2", "must be >= 0"),
    ("parallel.etp=0", r"expert_tensor_parallel_size=0 .*\(parallel.etp is expert_tensor_"),
    ("cluster.nccl_algo=rnig", "did you mean 'ring'"),
])
def test_impossible_values_are_refused(base, override, match):
    with pytest.raises(ConfigError, match=match):
        load_run_config(base, [override])


def test_a_preset_keeps_its_name(base):
    """--set model.name=llama3-70b on an 8B preset would relabel it; set model.preset instead."""
    with pytest.raises(ConfigError, match="model.preset=llama3-70b"):
        load_run_config(base, ["model.preset=llama3-8b", "model.name=llama3-70b"])
    assert load_run_config(base, ["model.name=my-run"]).model.name == "my-run"


def test_fp8_needs_a_gpu_with_fp8_tensor_cores(base):
    with pytest.raises(ConfigError, match="fp8 tensor cores"):
        load_run_config(base, ["cluster.gpu=a100-sxm-80gb", "training.dtype=fp8"])


def test_pat_runs_the_simple_protocol_only():
    """NCCL runs PAT with Simple; auto never picks it with LL/LL128, and forcing them fails."""
    fabric = Fabric(LinkTier(400e9, 0.8, "nvlink"), LinkTier(50e9, 0.96, "net"))
    span = GroupSpan(16, 1)  # one rank per node: PAT's case
    for size in (8.0, 1e3, 1e5, 1e7):
        c = collective_cost("all_gather", size, span, fabric)
        assert c.algorithm != "pat" or c.protocol == "Simple"
    with pytest.raises(TrainsimError):
        collective_cost("all_gather", 1e3, span, fabric, "pat", "LL")


def test_sweep_ranges_of_counts_stay_integers():
    """--vary parallel.tp=1:8 gives whole sizes (not tp=2.75); a huge grid is refused."""
    from trainsim.search.whatif import Vary

    assert Vary.parse("parallel.tp=1:8").values == (1, 3, 4, 6, 8)
    assert Vary.parse("cluster.nvlink_gbps=300:900:3").values == (300, 600, 900)
    with pytest.raises(WorkLimitError, match="sweep values"):
        Vary.parse("parallel.tp=1:8:1000000000")


@pytest.mark.parametrize("override", ["reliability.straggler.slowdown=1e300",
                                      "reliability.checkpoint.weight_bytes_per_param=1e300"])
def test_goodput_runs_that_never_end_are_refused(base, override):
    """Steps 1e300 times slower, or checkpoints whose restore outlasts every gap between
    failures: refused before the Monte Carlo, not a hang."""
    assert "over the limit" in one_error_line(
        cli("goodput", "run.yaml", "--tokens", "1T", "--set", override, cwd=base.parent))


def test_profile_out_to_a_device_writes_through_it_and_keeps_the_device(tmp_path):
    """profile --out /dev/full used to write a temporary file and rename it over the device
    node (as root, /dev/full became a regular file); now it writes through the device, so
    the disk-full error is reported and the device stays."""
    import stat

    from trainsim.profile.run import read_db, write_db

    full = tmp_path / "full"
    try:
        os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 7))  # a /dev/full of our own
    except (PermissionError, OSError):
        pytest.skip("cannot make a device node here (not root)")
    from trainsim.profile.schema import FORMAT

    db = read_db(os.path.join(os.path.dirname(__file__), "..", "src", "trainsim", "data",
                              "kernels", "h100-sxm-80gb.json"))
    db = {**db, "format": FORMAT}  # whatever format the bundled copy says, write the current one
    with pytest.raises(OSError):
        write_db(db, full)
    assert stat.S_ISCHR(os.stat(full).st_mode)
    assert not (tmp_path / "full.tmp").exists()


@pytest.mark.parametrize("section, field, value", [
    ("model", None, "\n"), ("cluster", "topology", "torus\nx"), ("cluster", "nccl_algo", "a\nb"),
    ("parallel", "pipeline_schedule", "x\ny"), ("cluster", "gpu", "h1000\n")])
def test_a_name_with_a_newline_is_still_one_error_line(section, field, value):
    """Unknown names are echoed escaped (the slow fuzz found a model preset named '\\n')."""
    cfg = {"model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                     "vocab_size": 1024},
           "training": {"global_batch_size": 16, "seq_length": 512},
           "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "compute_db": None}}
    if field is None:
        cfg[section] = value
    else:
        cfg.setdefault(section, {})[field] = value
    with pytest.raises(TrainsimError) as exc:
        run_config_from_dict(cfg)
    assert "\n" not in str(exc.value) and "\\n" in str(exc.value)


def test_profile_merge_reads_a_bounded_database(tmp_path):
    """profile --merge reads its --out database up to the size limit (from /dev/full it read
    endless bytes until the machine ran out of memory)."""
    from trainsim.profile.run import read_db

    big = tmp_path / "db.json"
    big.write_bytes(b" " * (17 * 2**20))
    with pytest.raises(TrainsimError, match="larger than 16 MiB"):
        read_db(big)


def test_a_missing_optional_dependency_is_one_line_naming_its_install(monkeypatch, tmp_path):
    """capture without PyTorch: one error line with the install command, not a traceback."""
    import builtins

    from trainsim.cli import main as cli_main

    real_import = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)

    cfg = tmp_path / "config.json"
    cfg.write_text('{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, '
                   '"num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 256}')
    monkeypatch.setattr(builtins, "__import__", no_torch)
    result = CliRunner().invoke(cli_main, ["capture", str(cfg), "--seq", "64"])
    assert result.exit_code == 2, result.output
    assert 'pip install -e ".[torch]"' in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


# ---------------------------------------------------------------------------- sweep 2026-11-24
# A fresh adversarial sweep of every CLI surface (benchmarks/RESULTS.md, 13th session): one
# regression test per failure class it found.

@pytest.mark.parametrize("args, match", [
    (["bogus"], "No such command 'bogus'"),
    (["--bogus"], "No such option '--bogus'"),
    (["simulate"], "Missing argument 'CONFIG'"),
    (["simulate", "run.yaml", "--format", "xml"], "'xml' is not one of"),
    (["simulate", "run.yaml", "--max-tasks", "0"], "--max-tasks"),
    (["plan", "llama3-8b", "--tokens", "1B", "--days", "0"], "--days"),
    (["catalog", "bogus"], "'bogus' is not one of"),
    (["token", "bogus"], "No such command 'bogus'"),
    (["serve", "--port", "-1"], "--port"),  # was an internal error (OverflowError from bind)
    (["serve", "--port", "99999"], "--port"),
])
def test_click_usage_errors_are_one_error_line(tmp_path, args, match):
    """Click printed three lines (Usage:, Try ..., Error: ...) for its own usage errors."""
    (tmp_path / "run.yaml").write_text(BASE)
    line = one_error_line(cli(*args, cwd=tmp_path))
    assert match in line and "--help)" in line


@pytest.mark.parametrize("override, match", [
    ("model.moe_capacity_factor=1e300", r"moe_capacity_factor=1e\+300 exceeds model.num_experts"),
    ("model.moe_token_imbalance=1e300", r"moe_token_imbalance=1e\+300 must be from 1 to"),
])
def test_moe_factors_beyond_every_token_are_refused(base, override, match):
    """A capacity factor or a token imbalance of 1e300 reached the pipeline as inf and ended in
    'max() arg is an empty sequence' (summary.critical_stage); up to num_experts they simulate."""
    with pytest.raises(ConfigError, match=match):
        load_run_config(base, ["model.num_experts=8", override])
    r = simulate(load_run_config(base, ["model.num_experts=8", "model.moe_capacity_factor=8",
                                        "model.moe_token_imbalance=8"]))
    assert 0 < r.iteration_time_s < float("inf")


@pytest.mark.parametrize("overrides, match", [
    (["cluster.pue=1e308"], "pue=1e+308 must be >= 1 and at most 10"),
    (["cluster.price_per_gpu_hour=1e308"], "price_per_gpu_hour=1e+308 is out of range"),
    (["training.data_prep_s_per_sample=1e300"], "exceed any finite number"),
])
def test_run_totals_are_never_infinite(base, overrides, match):
    """energy_mwh and cost_usd came out as Infinity (invalid JSON) with train_tokens set."""
    (base.parent / "run.yaml").write_text(BASE)
    args = ["simulate", str(base), "--format", "json", "--set", "training.train_tokens=1e12"]
    for o in overrides:
        args += ["--set", o]
    assert match in one_error_line(cli(*args))


def test_plan_energy_options_are_bounded():
    """plan --pue 1e308 printed co2_tonnes and energy_mwh as Infinity."""
    line = one_error_line(cli("plan", "llama3-8b", "--tokens", "1B", "--days", "30", "--pue",
                              "1e308"))
    assert "--pue" in line and "1<=x<=10" in line


def test_alias_fields_are_named_as_written(base, tmp_path):
    """--set parallel.tp=abc was reported as tensor_model_parallel_size only; search's
    --reference pp=abc was a ValueError (int('abc')), tp=2,tp=4 kept the last silently."""
    with pytest.raises(ConfigError, match=r"\(parallel.tp is tensor_model_parallel_size\)"):
        load_run_config(base, ["parallel.tp=abc"])
    (tmp_path / "m.yaml").write_text(BASE.splitlines()[0] + "\n")
    search = ("search", "m.yaml", "--gpus", "8", "--global-batch", "16", "--seq", "512",
              "--workers", "1")
    for extra, match in ((("--set", "parallel.tp=abc"), "--set parallel.tp must be an integer"),
                         (("--reference", "pp=abc"), "--reference pp must be an integer"),
                         (("--reference", "tp=2,tp=4"), "--reference tp: given twice")):
        assert match in one_error_line(cli(*search, *extra, cwd=tmp_path))


def test_yaml_errors_say_what_and_where(tmp_path):
    """'is not valid YAML: while scanning for the next token' named neither the tab nor its
    line."""
    path = tmp_path / "tabs.yaml"
    path.write_text("model:\n\thidden_size: 256\n")
    with pytest.raises(ConfigError, match=r"line 2, column 1: found character '\\t'"):
        load_file(path)


def test_search_says_when_no_split_is_valid(tmp_path):
    """--gpus 3 (no tp, pp, dp split of 3 GPUs fits 4 heads, 4 layers and a batch of 16) and
    --recompute '' were reported as 'no configuration fits in memory'."""
    (tmp_path / "m.yaml").write_text(BASE.splitlines()[0] + "\n")
    search = ("search", "m.yaml", "--global-batch", "16", "--seq", "512", "--workers", "1")
    line = one_error_line(cli(*search, "--gpus", "3", cwd=tmp_path))
    assert "no parallel configuration of custom is valid on 3 GPUs" in line
    assert "--recompute '': an empty value" in one_error_line(cli(*search, "--gpus", "8", "--recompute", "",
                                                  cwd=tmp_path))
    assert "no such file" in one_error_line(cli("search", "missing.yaml", *search[2:], "--gpus",
                                                "8", cwd=tmp_path))


@pytest.mark.parametrize("override, match", [
    ("cluster.nvlink_gbyte_s=1e300", "cluster.nvlink_gbyte_s='1e300' is out of range"),
    ("cluster.gpu_overrides.hbm_gib=1e300", "gpu_overrides.hbm_gib='1e300' is out of range"),
    ("cluster.gpu={name: x, peak_tflops: {bf16: 100}, hbm_gib: 10, hbm_gbyte_s: 1000}",
     "missing required field(s): nvlink_gbyte_s, num_sms"),
    ("cluster.gpu=" + "h" * 5000, "unknown GPU 'hhh"),
    ("parallel.pipeline_model_parallel_layout=Et|tL", "has 2 stages but pipeline_model_"),
])
def test_fields_are_named_in_the_units_written(base, override, match):
    """1e300 GB/s overflowed to inf and was named by its SI field (intra_node_bw_Bps); a GPU
    mapping's missing fields were its SI names; an unknown name was echoed 5,000 characters
    long; a layout of 2 stages on pp=1 was reported as a vpp the user never set."""
    with pytest.raises(ConfigError) as info:
        load_run_config(base, [override])
    assert match in str(info.value) and len(str(info.value)) < 600


def test_a_capture_factory_that_fails_is_one_error_line():
    """capture os:system called system() with no argument: a TypeError traceback."""
    pytest.importorskip("torch")
    assert "os:system() failed: TypeError" in one_error_line(cli("capture", "os:system",
                                                                 "--seq", "64"))


def test_hfu_counts_only_the_attention_recompute_that_runs(base):
    """Selective recompute of core_attn under FlashAttention re-runs nothing (its backward
    recomputes the scores anyway) but HFU counted a forward of it: 1.32 at a 1M-token sequence.
    With the unfused kernel the scores are recomputed and counted (HFU above MFU)."""
    from trainsim.model.counts import SCORES_IN_MEMORY
    from trainsim.workload.ops import MATERIALIZED_SCORES

    assert set(SCORES_IN_MEMORY) == set(MATERIALIZED_SCORES)
    long = ["model.num_layers=1", "model.num_attention_heads=1", "model.hidden_size=128",
            "cluster.num_gpus=1", "cluster.gpus_per_node=1", "training.global_batch_size=1",
            "training.seq_length=1048576", "parallel.recompute=selective"]
    flash = simulate(load_run_config(base, long))
    assert 0 < flash.hfu <= 1 and flash.hfu == pytest.approx(flash.mfu)
    unfused = simulate(load_run_config(base, [*long[:-2], "training.seq_length=4096",
                                              "parallel.recompute=selective",
                                              "training.attention=unfused"]))
    assert unfused.mfu < unfused.hfu <= 1


@pytest.mark.parametrize("override, match", [
    ("parallel.dp=4", "data-parallel size is derived"),
    ("parallel.tpp=2", "did you mean 'tp'"),
    ("parallel.sp=true", "did you mean 'sequence_parallel'"),
    ("training.batch_size=16", "did you mean 'global_batch_size'"),
    ("training.mbs=1", "did you mean 'micro_batch_size'"),
    ("cluster.gpus=8", "did you mean 'num_gpus'"),
    ("model.heads=4", "did you mean 'num_attention_heads'"),
    ("training.precision=bf16", "did you mean 'dtype'"),
])
def test_other_frameworks_names_suggest_the_field(base, override, match):
    """parallel.dp suggested dp_buckets, training.batch_size micro_batch_size, model.heads
    head_dim, cluster.gpus gpus_per_node, parallel.tpp nothing."""
    from trainsim.config._build import SHORT_NAMES
    from trainsim.config.parallel import ALIASES

    assert set(SHORT_NAMES["parallel"]) == set(ALIASES)
    with pytest.raises(ConfigError, match=match):
        load_run_config(base, [override])


@pytest.mark.parametrize("value, expected", [("none", None), ("None", None), ("AUTO", "auto")])
def test_compute_db_none_is_the_roofline_as_on_the_command_line(base, value, expected):
    """cluster.compute_db=none was read as a file named 'none' (validate --compute-db none is
    the roofline alone)."""
    cfg = load_run_config(base, [f"cluster.compute_db={value}"])
    assert cfg.cluster.compute_db == expected


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [
    ["simulate", "run.yaml", "--trace", "/dev/full"],
    ["goodput", "run.yaml", "--tokens", "1B", "--trials", "5", "--plot", "/dev/full"],
    ["export", "run.yaml", "--simai", "/dev/full"],
])
def test_a_full_disk_is_an_error_naming_the_file(tmp_path, args):
    """A write that fails at the flush (a full disk) said 'No space left on device' without the
    file, and a plot's savefig passed over it: goodput --plot /dev/full exited 0."""
    (tmp_path / "run.yaml").write_text(BASE)
    line = one_error_line(cli(*args, cwd=tmp_path))
    assert "/dev/full" in line and "No space left on device" in line


@pytest.mark.parametrize("extra, match", [(("--set", "parallel.ep=3"), "--set parallel.ep > 1"),
                                          (("--ep", "2"), "--ep/--etp: custom is dense")])
def test_search_refuses_expert_parallelism_on_a_dense_model(tmp_path, extra, match):
    """search --set parallel.ep=3 on a dense model reported ep=3 as fixed while every ranked
    configuration ran ep=1 (simulate refuses the same setting)."""
    (tmp_path / "m.yaml").write_text(BASE.splitlines()[0] + "\n")
    assert match in one_error_line(cli("search", "m.yaml", "--gpus", "8", "--global-batch", "16",
                                       "--seq", "512", "--workers", "1", *extra, cwd=tmp_path))
