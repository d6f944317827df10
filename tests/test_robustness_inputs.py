"""Odd inputs of the newest surfaces (2026-11-25 robust session, benchmarks/fuzz_rows.py): the
command line without a command, training-row cells the validator tunes. One regression test
per class the fuzzer found, then a short seeded run of the fuzzer itself."""

from __future__ import annotations

import itertools
import json
import random
import sys
import time
from pathlib import Path

import pytest
from helpers import cli, load_script, one_error_line

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("args, names", [
    ((), "simulate"),  # click printed its whole help (30 lines) on stderr as the error
    (("token",), "create"),
])
def test_a_group_without_a_command_is_one_error_line_naming_its_commands(args, names):
    line = one_error_line(cli(*args))
    assert "missing command" in line and names in line and "--help" in line


def test_a_usage_error_listing_choices_reads_as_one_sentence():
    """click's 'Choose from:' list, one choice a line, was joined with '; ' after each."""
    line = one_error_line(cli("catalog"))
    assert "Choose from: gpus, nodes, models" in line


# ------------------------------------------------------------------------ rich markup in names
# rich reads "[...]" in a table cell or title as markup: a row id, a framework, a model or GPU
# name or a path of "[/]" raised MarkupError (an internal error; a traceback under
# TRAINSIM_DEBUG), and "[bold]x" was shown as a bold "x".

TRAINING = ("id,model,gpu,num_gpus,gpus_per_node,tp,pp,global_batch_size,seq_length,"
            "measured_iteration_s,framework\n")
ROW = "llama3-8b,h100-sxm-80gb,8,8,1,1,8,2048,1.0"
TINY = """model: {name: "[/]", hidden_size: 256, num_layers: 4, num_attention_heads: 4,
        vocab_size: 1024}
training: {global_batch_size: 16, seq_length: 512}
cluster: {gpu: h100-sxm-80gb, num_gpus: 8, gpus_per_node: 8, compute_db: null}
"""


def test_validate_tables_show_ids_and_errors_as_written(tmp_path):
    (tmp_path / "t.csv").write_text(TRAINING + f"[/],{ROW},[/x]\n[bold]y,{ROW},\n")
    result = cli("validate", "t.csv", "--compute-db", "none", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert "[bold]y" in result.stdout and "'[/x]'" in result.stdout


@pytest.mark.parametrize("args", [
    ("simulate", "run.yaml"),
    ("simulate", "run.yaml", "--trace", "[red]t.json"),
    ("sweep", "run.yaml", "--vary", "model.name=[red]a,b"),
    ("goodput", "run.yaml", "--days", "1"),
])
def test_names_and_paths_with_brackets_are_printed_as_written(tmp_path, args):
    (tmp_path / "run.yaml").write_text(TINY)
    result = cli(*args, cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert "[/]" in result.stdout or "[red]" in result.stdout


# ------------------------------------------------------------------------ work on huge batches
# A training row with a global batch of 1e7 sequences on a 4-stage pipeline took 135 s to
# validate (the simulation itself, steady-state, 0.1 s): the tuner's lower bound built the
# whole pass order (2 m vpp passes, 56 M tuples) to read its first and last pass.

def test_a_row_with_a_huge_global_batch_is_validated_in_seconds():
    from trainsim.validate import predict_training_row

    row = {"id": "big", "model": "tiny", "hidden_size": "256", "num_layers": "8",
           "num_attention_heads": "4", "vocab_size": "1024", "gpu": "h100-sxm-80gb",
           "num_gpus": "8", "gpus_per_node": "8", "tp": "1", "pp": "4",
           "global_batch_size": "10000000", "seq_length": "256", "measured_iteration_s": "1"}
    start = time.perf_counter()
    result = predict_training_row(row, compute_db=None)
    assert result.error is None and result.predicted > 0
    assert time.perf_counter() - start < 30  # 135 s before; 0.1 s on 2 shared cores


# ------------------------------------------------------------------------ long sequences
# A run of seq_length 2^53 (fuzz_sweep's battery) hung: attention.tile_scores counted causal
# attention's tiles in a loop over 2^46 query blocks. The counts are now closed-form sums.

def _tiles_by_loop(q_len, kv_len, block_m, block_n, backward):
    """The causal tile count as the loop counted it (attention.tile_scores before)."""
    q_blocks, kv_blocks, offset = -(-q_len // block_m), -(-kv_len // block_n), kv_len - q_len
    if backward:
        return sum((q_blocks - max(0, j * block_n - offset) // block_m) * block_m * block_n
                   for j in range(kv_blocks) if max(0, j * block_n - offset) < q_len)
    return sum(min(-(-max(min((i + 1) * block_m, q_len) + offset, 0) // block_n), kv_blocks)
               * block_n * block_m for i in range(q_blocks))


def test_causal_tiles_in_closed_form_are_the_loops_count():
    from trainsim.compute.attention import tile_scores

    cases = list(itertools.product(range(1, 40, 3), range(1, 40, 3), (1, 3, 16), (1, 5, 16),
                                   (False, True)))
    rng = random.Random(7)
    cases += [(rng.randint(1, 50_000), rng.randint(1, 50_000), rng.choice((64, 128, 176)),
               rng.choice((64, 80, 128)), rng.random() < 0.5) for _ in range(300)]
    for q, kv, bm, bn, bwd in cases:
        assert tile_scores(q, kv, True, bm, bn, bwd) == _tiles_by_loop(q, kv, bm, bn, bwd)


def test_a_run_of_2_pow_53_tokens_a_sequence_is_simulated_at_once(tmp_path):
    (tmp_path / "run.yaml").write_text(TINY.replace("seq_length: 512", "seq_length: "
                                                    "9007199254740992"))
    start = time.perf_counter()
    result = cli("simulate", "run.yaml", "--format", "json", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert time.perf_counter() - start < 30  # hung (hours) before; ~1 s


# ------------------------------------------------------------------------ empty tp/pp cells
# A row with tp and pp empty and a bad cell of another column said "no tensor x pipeline layout
# of the 16 GPUs runs (tp=1 pp=1: parallel.recompute='x' ...)": the layout was blamed.

@pytest.mark.parametrize("cell, value, match", [
    ("recompute", "x", "parallel.recompute='x' is not one of"),
    ("moe_dispatcher", "x", "moe_token_dispatcher_type='x' is not one of"),
])
def test_a_bad_cell_of_a_row_with_empty_tp_and_pp_is_named_alone(cell, value, match):
    from trainsim.validate import predict_training_row

    row = {"id": "r", "model": "tiny", "hidden_size": "256", "num_layers": "8",
           "num_attention_heads": "4", "vocab_size": "1024", "gpu": "h100-sxm-80gb",
           "num_gpus": "16", "gpus_per_node": "8", "tp": "", "pp": "",
           "global_batch_size": "16", "seq_length": "256", "measured_iteration_s": "1",
           cell: value}
    error = predict_training_row(row, compute_db=None).error
    assert match in error and "layout" not in error


def test_a_library_name_that_is_no_one_kernel_names_its_column_once():
    """'torch' in a kernels row said "'torch': PyTorch attention is ..." (which column?); in a
    training row "attention='torch': 'torch': ..." (the name twice)."""
    from trainsim.validate import predict_kernel_row, predict_training_row

    kernel = {"id": "k", "gpu": "h100-sxm-80gb", "kind": "attention_bwd",
              "implementation": "torch", "dtype": "bf16", "batch": "1", "seq_len": "1024",
              "heads": "16", "head_dim": "128", "causal": "1", "measured_value": "1",
              "measured_unit": "ms"}
    assert predict_kernel_row(kernel, compute_db=None).error.startswith(
        "implementation='torch': PyTorch attention")
    # named in the note (impl=...) and in capitals: the message names the note, as written
    noted = {**kernel, "implementation": "flash2", "note": "figure 3; impl=Torch"}
    assert predict_kernel_row(noted, compute_db=None).error.startswith(
        "note impl='Torch': PyTorch attention")
    capital = {**kernel, "implementation": " Torch "}
    assert predict_kernel_row(capital, compute_db=None).error.startswith(
        "implementation='Torch': PyTorch attention")
    row = {"id": "r", "model": "llama3-8b", "gpu": "h100-sxm-80gb", "num_gpus": "8",
           "gpus_per_node": "8", "tp": "1", "pp": "1", "global_batch_size": "8",
           "seq_length": "2048", "measured_iteration_s": "1", "attention": "torch"}
    error = predict_training_row(row, compute_db=None).error
    assert error.startswith("attention='torch': PyTorch attention") and error.count("torch'") == 1


def test_a_vpp_of_1e11_with_tp_and_pp_empty_is_refused_at_once():
    """The layouts' enumeration looped over every vpp up to the row's (fuzz_rows' files
    surface: over 60 s); it now stops where the layers run out."""
    from trainsim.validate import predict_training_row

    row = {"id": "r", "model": "tiny", "hidden_size": "256", "num_layers": "8",
           "num_attention_heads": "4", "vocab_size": "1024", "gpu": "h100-sxm-80gb",
           "num_gpus": "16", "gpus_per_node": "8", "tp": "", "pp": "",
           "global_batch_size": "16", "seq_length": "256", "measured_iteration_s": "1",
           "framework": "megatron-lm", "vpp": "99999999999"}
    start = time.perf_counter()
    assert "with vpp=99999999999" in predict_training_row(row, compute_db=None).error
    assert time.perf_counter() - start < 30


def test_search_with_a_max_vpp_of_1e11_enumerates_as_with_the_layers_bound():
    args = ("search", "mixtral-8x7b", "--gpus", "24", "--global-batch", "24", "--seq", "128",
            "--pp", "3", "--workers", "1", "--format", "json", "--top", "1")
    start = time.perf_counter()
    huge = cli(*args, "--max-vpp", "99999999999")
    assert huge.exit_code == 0, huge.output
    assert time.perf_counter() - start < 60
    bounded = cli(*args, "--max-vpp", "32")  # 32 layers over 3 stages: at most 10 a stage
    ranked = [{k: v for k, v in json.loads(r.stdout).items() if k != "stats"}
              for r in (huge, bounded)]
    assert ranked[0] == ranked[1]
    assert json.loads(huge.stdout)["stats"]["enumerated"] == \
        json.loads(bounded.stdout)["stats"]["enumerated"]


def _fuzz_rows():
    return load_script(ROOT / "benchmarks" / "fuzz_rows.py")


@pytest.mark.parametrize("rows", [2, pytest.param(6, marks=pytest.mark.slow)])
def test_a_few_odd_rows_and_commands_are_handled(tmp_path, monkeypatch, rows):
    """A seeded handful of each surface of benchmarks/fuzz_rows.py: every row predicted or
    failed with one clear line, every command exit 0 or one error line; a hang is counted in
    CPU seconds, as ``benchmarks/fuzz_inputs34.py`` counts it. The rows surface draws 2 rows by
    default (a blank-layout row, whose layout is tuned, and a dense one) and 6 behind ``-m
    slow`` (the default up to the 37th session): its 3rd draw, a second blank-layout row, took
    7 of the test's 17 CPU-seconds on a 2-core host (measured 2026-11-27, suite38); the other
    surfaces draw 6 either way."""
    fuzz = _fuzz_rows()
    checks = sys.modules[fuzz.run_surfaces.__module__]  # benchmarks/fuzz_checks.py
    # fuzz_inputs34's CPU-second deadline (ITIMER_VIRTUAL): at a load of 11-17 on this 2-core
    # host the blank-layout rows' tuning passed the 60 s wall limit and read as a hang
    cpu_deadline = load_script(ROOT / "benchmarks" / "fuzz_inputs34.py").cpu_deadline
    monkeypatch.setattr(checks, "deadline",
                        lambda seconds, hang=checks.Hang: cpu_deadline(seconds, hang))
    rng = random.Random(20261125)
    out = fuzz.run_surfaces({k: (lambda f=f, k=k: f(rng, tmp_path, rows if k == "rows" else 6))
                             for k, f in fuzz.SURFACES.items()}, set())
    assert not out["failures"], dict(out["failures"])
    assert out["counts"]["rows"] == rows and set(out["counts"]) == set(fuzz.SURFACES)


@pytest.mark.slow
@pytest.mark.parametrize("surface", ["rows", "kernels", "files", "yaml", "cli"])
def test_the_seeded_row_sweep_finds_nothing_slow(tmp_path, surface):
    fuzz = _fuzz_rows()
    out = fuzz.run_surfaces({surface: lambda: fuzz.SURFACES[surface](
        random.Random(0), tmp_path, 150)}, set())
    assert not out["failures"], dict(out["failures"])
