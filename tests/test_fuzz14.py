"""Fourteenth robustness sweep (27th session, fuzz14; benchmarks/fuzz_sweep14.py): validation
columns misspelt, a collective's ``comparable`` and ``unit`` cells, a switch spelt '1.0' read
past the framework checks, a ZeRO stage spelt '0.0', a layers record's shape keys and mode.
Each case failed on main 90207d3 before its fix (the sanity cases beside them pass there)."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import pytest
from helpers import cli, load_script, one_error_line

from trainsim.errors import ConfigError
from trainsim.validate import predict_collective_row, read_rows, validate_file

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src" / "trainsim" / "data" / "validation"


def _first(name: str) -> tuple[list[str], list[str]]:
    records = list(csv.reader(io.StringIO((DATA / name).read_text())))
    return records[0], records[1]


def _write(path: Path, head: list[str], row: list[str]) -> Path:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([head, row])
    path.write_text(out.getvalue())
    return path


# ------------------------------------------- a misspelt column

@pytest.mark.parametrize(("kind", "column", "spelt"), [
    ("training", "recompute", "recomput"), ("training", "options", "option"),
    ("training", "zero_stage", "zero_stge"), ("training", "nic_gbps_per_gpu", "nic_gbps_per_gp"),
    ("training", "num_kv_heads", "num_kv_head"), ("kernels", "note", "noet"),
    ("kernels", "bytes", "byets"), ("collectives", "algorithm", "algorithms")])
def test_a_misspelt_column_is_refused_naming_the_column_meant(tmp_path, kind, column, spelt):
    """Before: the misspelt column was an unknown extra, its cells left unread and every row
    predicted with the column's default (a training row's 'recomput' of 'selective' ran
    without recomputation: 2.80 s, not 3.06 s)."""
    name = {"training": "training_public.csv", "kernels": "kernels_published.csv",
            "collectives": "collectives_public.csv"}[kind]
    head, row = _first(name)
    if column not in head:
        head, row = [*head, column], [*row, ""]
    path = _write(tmp_path / "f.csv", [spelt if c == column else c for c in head], row)
    with pytest.raises(ConfigError, match=f"column '{spelt}' is not a {kind} file column; "
                                          f"did you mean '{column}'"):
        read_rows(path)
    line = one_error_line(cli("validate", str(path), "--workers", "1"))
    assert f"did you mean '{column}'" in line


@pytest.mark.parametrize(("column", "spelt"), [("zero_stage", "zero-stage"),
                                               ("num_kv_heads", "num kv heads")])
def test_a_column_spelt_with_spaces_or_hyphens_is_read_as_it(tmp_path, column, spelt):
    """(fuzz35) 'zero-stage' and 'num kv heads' were refused as misspelt; they spell the
    column with '-' or ' ' for '_' and are read as it."""
    head, row = _first("training_public.csv")
    if column not in head:
        head, row = [*head, column], [*row, ""]
    _, rows = read_rows(_write(tmp_path / "f.csv", [spelt if c == column else c for c in head],
                               row))
    assert column in rows[0] and spelt not in rows[0]


def test_an_unrelated_or_shown_only_column_is_still_read_past(tmp_path):
    """A link or a comment column (and 'sources' beside a training file's shown-only
    'source') changes nothing."""
    head, row = _first("training_public.csv")
    base = validate_file(_write(tmp_path / "a.csv", head, row), compute_db=None)[1][0]
    for extra in ("url", "comment", "added", "sources"):
        got = validate_file(_write(tmp_path / "b.csv", [*head, extra], [*row, "x"]),
                            compute_db=None)[1][0]
        assert got.predicted == base.predicted, extra


def test_a_missing_required_column_names_the_header_cell_meant(tmp_path):
    head, row = _first("training_public.csv")
    path = _write(tmp_path / "f.csv", ["\u200btp" if c == "tp" else c for c in head], row)
    with pytest.raises(ConfigError, match=r"missing column\(s\) tp \(the header has "):
        read_rows(path)


# ------------------------------------------- a collective's comparable and unit cells

@pytest.mark.parametrize(("word", "excluded"), [
    ("no", True), ("false", True), ("0", True), ("off", True), ("No", True),
    ("yes", False), ("true", False), ("1", False), ("", False)])
def test_comparable_reads_every_switch_word(word, excluded):
    """Before: only 'no' excluded a row; 'false', '0' and 'off' counted it in the summary."""
    _, rows = read_rows(DATA / "collectives_public.csv")
    result = predict_collective_row({**rows[0], "comparable": word})
    assert result.error is None
    assert ("excluded" in result.extra) is excluded


def test_comparable_other_text_fails_the_row():
    _, rows = read_rows(DATA / "collectives_public.csv")
    result = predict_collective_row({**rows[0], "comparable": "maybe"})
    assert result.predicted is None and "comparable" in result.error


@pytest.mark.parametrize("word", ["per_gpu", "GB/s", "nic"])
def test_an_unknown_unit_fails_the_row(word):
    """Before: any unit but 'per_nic' was read, silently, as the bus bandwidth per GPU."""
    _, rows = read_rows(DATA / "collectives_public.csv")
    result = predict_collective_row({**rows[0], "unit": word})
    assert result.predicted is None and "per_nic" in result.error


def test_per_nic_is_read_with_a_space():
    """'per NIC' (the maintainers' words) is per_nic, as 'per-nic' was."""
    _, rows = read_rows(DATA / "collectives_public.csv")
    multi = next(r for r in rows if int(r["num_gpus"]) > int(r["gpus_per_node"]))
    spaced = predict_collective_row({**multi, "unit": "per NIC", "note": ""})
    underscored = predict_collective_row({**multi, "unit": "per_nic", "note": ""})
    plain = predict_collective_row({**multi, "unit": "", "note": ""})
    assert spaced.predicted == underscored.predicted != plain.predicted


# ------------------------------------------- a switch spelt '1.0' and the framework checks

@pytest.mark.parametrize("value", ["1.0", "1e0", " 1.00 "])
@pytest.mark.parametrize("column", ["distributed_optimizer", "sequence_parallel"])
def test_a_switch_spelt_as_a_number_meets_the_framework_checks(column, value):
    """Before: the framework check read '1.0' as off (``defaults.truthy``: '1', 'true', 'yes',
    'on' only) and the config as on: Megatron-LM 2021-04 ran the distributed optimizer it
    did not have (3.568 s), where '1' is refused."""
    from trainsim.validate import predict_training_row
    _, rows = read_rows(DATA / "training_public.csv")
    row = next(r for r in rows if r["framework_version"] == "2021-04" and r["tp"] == "1")
    got = predict_training_row({**row, column: value}, compute_db=None)
    assert got.predicted is None and "megatron-lm 2021-04" in got.error, got.predicted


def test_truthy_reads_a_switch_as_the_config_does():
    from trainsim.catalog.defaults import truthy
    assert [truthy(v) for v in ("1.0", "1e0", "on", "YES", 1, 1.0, True)] == [True] * 7
    assert [truthy(v) for v in ("0.0", "off", "no", 0, None, "maybe", 2)] == [False] * 7


def test_set_distributed_optimizer_1e0_meets_the_framework_check(tmp_path):
    """The same through --set: '1e0' is text to YAML 1.1 (no dot)."""
    path = tmp_path / "run.yaml"
    path.write_text("model: llama3-8b\nparallel: {tp: 2}\ntraining: {global_batch_size: 64, "
                    "seq_length: 2048, framework: megatron-lm, framework_version: '2021-04'}\n"
                    "cluster: {gpu: a100-sxm-80gb, num_gpus: 8}\n")
    line = one_error_line(cli("simulate", str(path), "--set",
                              "parallel.distributed_optimizer=1e0"))
    assert "has no distributed optimizer" in line


# ------------------------------------------- one value spelt two ways

@pytest.mark.parametrize("spelt", ["0.0", "+0", "-0", "0e0"])
def test_zero_stage_0_spelt_as_a_number_is_zero_stage_0(spelt):
    """Before: the tuner chose Megatron's distributed optimizer only for a ZeRO stage cell of
    exactly '0' (``unknowns``); '0.0' ran without it (MegaScale's Megatron-LM 256-GPU row
    42.54 s, not 41.77 s)."""
    from trainsim.validate import predict_training_row
    _, rows = read_rows(DATA / "training_public.csv")
    row = next(r for r in rows if r["id"] == "megascale24-megatron-lm-b768-256")
    plain = predict_training_row({**row, "zero_stage": "0"}, compute_db=None)
    got = predict_training_row({**row, "zero_stage": spelt}, compute_db=None)
    assert got.predicted == plain.predicted
    assert got.chosen.get("distributed_optimizer") == plain.chosen["distributed_optimizer"]


# ------------------------------------------- a layers record's shape keys and mode

def _layer(tmp_path: Path, **change) -> tuple:
    import json
    lines = (DATA / "layers_h100_measured.jsonl").read_text().splitlines()
    rec = next(r for r in map(json.loads, lines) if r["mode"] == "compile")
    rec.update(change)
    path = tmp_path / "l.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    res = validate_file(path, compute_db=None)[1][0]
    return res.predicted, res.error


@pytest.mark.parametrize("spelt", ["kv_heads", "num_kv_heads", "KV"])
def test_a_layer_shape_key_spelt_otherwise_fails_the_record(tmp_path, spelt):
    """Before: shape.kv_heads was not read and the Llama 3 8B layer priced as MHA (32 key/value
    heads, not 8), silently."""
    import json
    rec = json.loads((DATA / "layers_h100_measured.jsonl").read_text().splitlines()[1])
    shape = {k: v for k, v in rec["shape"].items() if k != "kv"} | {spelt: rec["shape"]["kv"]}
    predicted, error = _layer(tmp_path, shape=shape)
    assert predicted is None and f"shape.{spelt} is not a shape key" in error


@pytest.mark.parametrize("mode", ["Compile", "compiled", "torch.compile", None])
def test_a_layer_mode_other_than_eager_or_compile_fails_the_record(tmp_path, mode):
    """Before: any mode but 'compile' priced the layer eagerly (11.7 ms, not 9.8 ms)."""
    predicted, error = _layer(tmp_path, mode=mode)
    assert predicted is None and "must be eager or compile" in error


def test_a_layer_mode_as_written_is_read(tmp_path):
    compiled, eager = _layer(tmp_path, mode="compile"), _layer(tmp_path, mode="eager")
    assert compiled[1] is None and eager[1] is None and compiled[0] < eager[0]


# ------------------------------------------- a validate job of the bundled layers file

@pytest.mark.parametrize("options", [{}, {"file": "layers_h100_measured.jsonl"}, "upload"])
def test_a_validate_job_counts_a_layers_file_without_reading_it_as_a_csv(tmp_path, options):
    """Before: 422 field 'config', "<server path>/layers_h100_measured.jsonl: not a training
    file ...": the job counted every file's rows with read_rows, so validating the bundled
    files (the default), the bundled layers file or an uploaded layers record was refused."""
    from trainsim.service import Settings, jobs
    settings = Settings(db_url=f"sqlite:///{tmp_path / 'jobs.db'}", workers=0, checkers=0)
    if options == "upload":
        line = (DATA / "layers_h100_measured.jsonl").read_text().splitlines()[0]
        options = {"csv": line + "\n"}
    assert jobs.problem("validate", {}, options, settings) is None
    if options:
        import json
        summary = json.loads(jobs.run("validate", {}, options, settings).result)["summary"]
        assert summary["n"] == (1 if "csv" in options else 33) and summary["failed"] == 0


def test_row_count_counts_what_validate_file_predicts():
    from trainsim.validate import row_count
    for name in ("layers_h100_measured.jsonl", "collectives_public.csv"):
        assert row_count(DATA / name) == len(validate_file(DATA / name, compute_db=None)[1])


# ------------------------------------------- the sweep itself

@pytest.mark.slow
def test_fuzz_sweep14_finds_no_failure_class(capsys):
    fuzz_sweep14 = load_script(ROOT / "benchmarks" / "fuzz_sweep14.py")
    os.environ.setdefault("MPLBACKEND", "Agg")
    status = fuzz_sweep14.main(["--n", "20", "--seed", "3"])
    assert status == 0, capsys.readouterr().out  # the classes and their first inputs
