"""Validation-file fuzzing (training, collective and kernel CSVs, layers JSONL, kernel
databases): a bad file is one error line; a bad row fails alone with its reason while the other
rows still run (a bad *measured* value too, since fuzz35; it refused the file before). One
regression test per crash class found, then the fuzzer (``-m slow`` runs more examples)."""

from __future__ import annotations

import json
import os

import pytest
from helpers import BASE, FAST, SLOW, cli, one_error_line
from hypothesis import given
from hypothesis import strategies as st

TRAINING_HEADER = ("id,model,gpu,num_gpus,gpus_per_node,tp,pp,global_batch_size,seq_length,"
                   "measured_iteration_s")
GOOD_TRAINING = "ok,llama3-8b,h100-sxm-80gb,8,8,1,1,8,2048,1.0"
COLLECTIVE_HEADER = ("id,source,gpu,num_gpus,gpus_per_node,nic_gbps_per_gpu,collective,"
                     "message_bytes,algorithm,measured_busbw_GBps")
GOOD_COLLECTIVE = "ok,x,h100-sxm-80gb,8,8,400,all_reduce,1048576,ring,100"
KERNEL_HEADER = ("id,source,gpu,kind,implementation,dtype,m,n,k,groups,batch,seq_len,heads,"
                 "kv_heads,head_dim,causal,tokens,hidden,ffn,experts,top_k,bytes,measured_value,"
                 "measured_unit")
GOOD_KERNEL = "ok,x,h100-sxm-80gb,gemm,cublas,bf16,1024,1024,1024,,,,,,,,,,,,,,500,TFLOP/s"


def validate_rows(path) -> dict:
    """``validate --format json`` of ``path``: its rows by id (the file itself was read)."""
    result = cli("validate", str(path), "--format", "json", "--compute-db", "none")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    for row in report["rows"]:
        assert not (row["error"] or "").startswith("internal error"), row
        assert (row["predicted"] is None) == bool(row["error"]), row
    return {row["id"]: row for row in report["rows"]}


# ---------------------------------------------------------------------------- validate rows

@pytest.mark.parametrize("cells, column", [
    ("8,8,0,1,8,2048", "tp"),  # ZeroDivisionError in the tuner (an internal error)
    ("8,8,x,1,8,2048", "tp"),  # "invalid literal for int() with base 10: 'x'"
    ("8,8,1.5,1,8,2048", "tp"),
    ("8,8,1,0,8,2048", "pp"),  # (an empty pp is tuned: test_validate_layouts)
    ("eight,8,1,1,8,2048", "num_gpus"),
    ("8,8,1,1,8,nan", "seq_length"),
    ("8,8,1,1,1e400,2048", "global_batch_size"),
])
def test_a_training_row_with_a_bad_count_fails_naming_the_column(tmp_path, cells, column):
    """A count cell that is not a whole number >= 1 fails its row, naming the column; the row
    after it is still predicted."""
    path = tmp_path / "rows.csv"
    path.write_text(f"{TRAINING_HEADER}\nbad,llama3-8b,h100-sxm-80gb,{cells},1.0\n"
                    f"{GOOD_TRAINING}\n")
    rows = validate_rows(path)
    assert f"column '{column}'" in rows["bad"]["error"]
    assert rows["ok"]["predicted"] > 0


def test_bad_count_cells_of_optional_training_columns_name_the_column(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text(f"{TRAINING_HEADER},num_experts,vpp,num_layers\n"
                    f"e,llama3-8b,h100-sxm-80gb,8,8,1,1,8,2048,1.0,x,,\n"
                    f"v,llama3-8b,h100-sxm-80gb,8,8,1,2,8,2048,1.0,,0,\n"
                    f"n,llama3-8b,h100-sxm-80gb,8,8,1,2,8,2048,1.0,,,-4\n"
                    f"m,,h100-sxm-80gb,8,8,1,1,8,2048,1.0,,,\n{GOOD_TRAINING},,,\n")
    rows = validate_rows(path)
    assert "column 'num_experts'" in rows["e"]["error"]
    assert "column 'vpp'" in rows["v"]["error"]
    assert "column 'num_layers'" in rows["n"]["error"]
    assert "column 'model' is empty" in rows["m"]["error"]
    assert rows["ok"]["predicted"] > 0


@pytest.mark.parametrize("row, column", [
    ("bad,x,h100-sxm-80gb,8,8,400,all_reduce,-5,ring,100", "message_bytes"),  # traceback
    ("bad,x,h100-sxm-80gb,8,8,400,all_reduce,0,ring,100", "message_bytes"),
    ("bad,x,h100-sxm-80gb,8,8,400,all_reduce,abc,ring,100", "message_bytes"),
    ("bad,x,h100-sxm-80gb,8,8,nan,all_reduce,1024,ring,100", "nic_gbps_per_gpu"),
    ("bad,x,h100-sxm-80gb,x,8,400,all_reduce,1024,ring,100", "num_gpus"),
])
def test_a_collective_row_with_a_bad_cell_fails_alone(tmp_path, row, column):
    """A zero or negative message size crashed the whole file (ZeroDivisionError)."""
    path = tmp_path / "coll.csv"
    path.write_text(f"{COLLECTIVE_HEADER}\n{row}\n{GOOD_COLLECTIVE}\n")
    rows = validate_rows(path)
    assert f"column '{column}'" in rows["bad"]["error"]
    assert rows["ok"]["predicted"] > 0


@pytest.mark.parametrize("sizes, column", [
    ("-1,-1,-1", "m"),  # a negative GEMM crashed the whole file (ZeroDivisionError)
    ("1024,0,1024", "n"),
    ("1024,1024,1e400", "k"),  # OverflowError
    ("1024,1024,nan", "k"),
])
def test_a_kernel_row_with_a_bad_size_fails_alone(tmp_path, sizes, column):
    path = tmp_path / "kern.csv"
    bad = GOOD_KERNEL.replace("ok,", "bad,").replace("1024,1024,1024", sizes)
    path.write_text(f"{KERNEL_HEADER}\n{bad}\n"
                    "mem,x,h100-sxm-80gb,memory_bound,x,bf16,,,,,,,,,,,,,,,,-8,5,us\n"
                    f"{GOOD_KERNEL}\n")
    rows = validate_rows(path)
    assert f"column '{column}'" in rows["bad"]["error"]
    assert "column 'bytes'" in rows["mem"]["error"]
    assert rows["ok"]["predicted"] > 0


def test_a_bug_on_one_row_fails_that_row_not_the_file(tmp_path, monkeypatch):
    """The safety net: an unexpected exception while predicting one row is that row's error."""
    from trainsim import validate

    def broken(row, compute_db=None):
        if row["id"] == "bad":
            raise ZeroDivisionError("division by zero")
        return real(row, compute_db=compute_db)

    real = validate.PREDICT["training"]
    monkeypatch.setitem(validate.PREDICT, "training", broken)
    path = tmp_path / "rows.csv"
    path.write_text(f"{TRAINING_HEADER}\n{GOOD_TRAINING.replace('ok,', 'bad,')}\n"
                    f"{GOOD_TRAINING}\n")
    _, results = validate.validate_file(path, compute_db=None)
    assert results[0].error.startswith("internal error: ZeroDivisionError")
    assert results[1].predicted > 0


def test_a_csv_saved_with_a_byte_order_mark_is_read(tmp_path):
    """Excel's 'CSV UTF-8' starts with a BOM: the first column was read as '\\ufeffid'."""
    path = tmp_path / "bom.csv"
    path.write_bytes(("\ufeff" + f"{TRAINING_HEADER}\r\n{GOOD_TRAINING}\r\n").encode())
    assert validate_rows(path)["ok"]["predicted"] > 0


# ---------------------------------------------------------------------------- validate fuzz

CELLS = st.one_of(st.sampled_from(["", " ", "0", "-1", "1", "2", "8", "1.5", "nan", "inf", "1e400",
                                   "x", "ü", "a\nb", '"', "bf16", "fp8", "full", "selective",
                                   "h100-sxm-80gb", "a100-sxm-80gb", "bogus", "llama3-8b",
                                   "megatron-core", "gemm", "attention_fwd", "memory_bound",
                                   "ms", "TFLOP/s", "all_reduce", "ring", "tp_overlap"]),
                  st.text(max_size=4))
TINY_ROW = {"id": "r", "model": "tiny", "hidden_size": "256", "num_layers": "2",
            "num_attention_heads": "4", "vocab_size": "1024", "gpu": "h100-sxm-80gb",
            "num_gpus": "8", "gpus_per_node": "8", "tp": "1", "pp": "1", "global_batch_size": "8",
            "seq_length": "256", "micro_batch_size": "1", "recompute": "none",
            "sequence_parallel": "0", "distributed_optimizer": "0", "measured_iteration_s": "0.1"}
KINDS = {
    "training": (list(TINY_ROW) + ["cp", "ep", "vpp", "num_experts", "moe_top_k", "dtype",
                                   "options", "framework", "zero_stage", "attention",
                                   "pipeline_layout", "measured_peak_memory_gib"], TINY_ROW),
    "collectives": (COLLECTIVE_HEADER.split(","),
                    dict(zip(COLLECTIVE_HEADER.split(","), GOOD_COLLECTIVE.split(",")))),
    "kernels": (KERNEL_HEADER.split(","), dict(zip(KERNEL_HEADER.split(","),
                                                   GOOD_KERNEL.split(",")))),
}


def _csv_cell(text: str) -> str:
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\n\r') else text


@st.composite
def validation_files(draw) -> bytes:
    """A validation CSV of one kind: its columns shuffled, some dropped, some unknown, and
    its valid rows with a few cells replaced by junk (or the whole file junk)."""
    columns, good = KINDS[draw(st.sampled_from(sorted(KINDS)))]
    columns = [c for c in columns if draw(st.integers(0, 15))] + \
        draw(st.lists(st.sampled_from(["zzz", "", "note", "id"]), max_size=2))
    lines = [",".join(columns)]
    for i in range(draw(st.integers(0, 3))):
        row = {**good, "id": f"r{i}"}
        for _ in range(draw(st.integers(0, 3))):
            row[draw(st.sampled_from(columns))] = draw(CELLS)
        lines.append(",".join(_csv_cell(row.get(c, "")) for c in columns))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = draw(st.sampled_from(["", "\ufeff"])) + newline.join(lines) + newline
    return text.encode() if draw(st.integers(0, 20)) else draw(st.binary(max_size=40))


def check_validate(data: bytes, tmp_path) -> None:
    path = tmp_path / "fuzz.csv"
    path.write_bytes(data)
    result = cli("validate", str(path), "--format", "json", "--compute-db", "none")
    if result.exit_code:
        one_error_line(result)
        return
    for row in json.loads(result.stdout)["rows"]:
        assert not (row["error"] or "").startswith("internal error"), row
        if row["error"] is None:
            assert 0 < row["predicted"] < float("inf"), row


@FAST
@given(data=validation_files())
def test_any_validation_file_is_read_or_refused_in_one_line(tmp_path, data):
    """A mangled CSV: one error line for the file, or every row predicted or failed with a
    reason (never an internal error, a traceback, or a non-finite prediction)."""
    check_validate(data, tmp_path)


@pytest.mark.slow
@SLOW
@given(data=validation_files())
def test_any_validation_file_slow(tmp_path, data):
    check_validate(data, tmp_path)


# ---------------------------------------------------------------------------- CSV structure
# The 2026-11-24 sweep (benchmarks/RESULTS.md): csv.DictReader kept the last of two equal
# columns, gave a short row None cells, dropped a long row's extra cells, let an open quote
# swallow the rest of the file, and a header-only file "passed" with 0 rows.

@pytest.mark.parametrize("text, match", [
    (f"{TRAINING_HEADER},tp\n{GOOD_TRAINING},2\n", "column 'tp' is given twice"),
    (f"{TRAINING_HEADER}\n{GOOD_TRAINING},1,2\n", "row 1 (id ok): 12 cells but the header has 10"),
    (f"{TRAINING_HEADER}\nok,llama3-8b\n", "row 1 (id ok): 2 cells"),
    (f'{TRAINING_HEADER}\n"{GOOD_TRAINING}\n', "a '\"' left open"),
    (f"{TRAINING_HEADER}\n", "no rows under the header"),
    (f"{TRAINING_HEADER}\n,,,,,,,,,\n", "no rows under the header"),
    # a ';' header holding every required column is read as a ';' file (fuzz35); one that
    # lacks one is not, and the refusal asks
    (TRAINING_HEADER.replace(",", ";").replace(";measured_iteration_s", "") + "\n",
     "is it comma-separated?"),
    (BASE, "not a training file"),  # a run config: said '2 cells but the header has 4'
])
def test_a_malformed_csv_table_is_one_error_line(tmp_path, text, match):
    (tmp_path / "t.csv").write_text(text)
    assert match in one_error_line(cli("validate", "t.csv", "--compute-db", "none",
                                       cwd=tmp_path))


@pytest.mark.parametrize("text", [
    f"{TRAINING_HEADER},note\n{GOOD_TRAINING}\n",  # the empty trailing note left off
    f"{TRAINING_HEADER},\n{GOOD_TRAINING}\n",  # a trailing comma on the header only
    f"{TRAINING_HEADER}\n{GOOD_TRAINING},\n",  # on the rows only
    f"{TRAINING_HEADER},\n{GOOD_TRAINING},\n",  # on every line
])
def test_left_off_optional_cells_and_trailing_commas_are_read(tmp_path, text):
    """What a text editor's CSV does: an empty trailing optional cell left off, a trailing
    comma on some lines; the row is predicted as if the cells were there and empty."""
    (tmp_path / "t.csv").write_text(text)
    result = cli("validate", "t.csv", "--compute-db", "none", "--format", "json", cwd=tmp_path)
    assert result.exit_code == 0, result.output


def test_a_row_missing_a_required_cell_names_the_column(tmp_path):
    (tmp_path / "t.csv").write_text(f"{TRAINING_HEADER}\n{GOOD_TRAINING.rsplit(',', 1)[0]}\n")
    last = TRAINING_HEADER.rsplit(",", 1)[1]
    assert f"required column '{last}' is missing" in one_error_line(
        cli("validate", "t.csv", "--compute-db", "none", cwd=tmp_path))


def test_duplicate_and_empty_ids_are_a_warning_and_header_spaces_are_ignored(tmp_path):
    """Rows are named by id: two equal ids (each counts in the MAPE) or none get a warning
    line; 'id, model, ...' (spaces after the commas) is read as 'id,model,...'."""
    header = TRAINING_HEADER.replace(",", ", ")
    (tmp_path / "t.csv").write_text(f"{header}\n{GOOD_TRAINING}\n{GOOD_TRAINING}\n"
                                    f"{GOOD_TRAINING.replace('ok,', ',', 1)}\n")
    result = cli("validate", "t.csv", "--compute-db", "none", "--format", "json", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert "rows 1 and 2 both have id 'ok'" in result.stderr
    assert "row 3: the id cell is empty" in result.stderr
    assert [r["predicted"] > 0 for r in json.loads(result.stdout)["rows"]] == [True] * 3


def _mangled_table(rng) -> str:
    """A training CSV whose structure (not its cells) is broken at random: cells added or
    dropped, a column repeated, quotes left open or doubled, blank and whitespace lines, CR,
    CRLF or LF line ends, a BOM."""
    columns = TRAINING_HEADER.split(",")
    rows = [GOOD_TRAINING.replace("ok,", f"r{i},", 1).split(",") for i in range(3)]
    for _ in range(rng.randint(1, 3)):
        what = rng.choice(["add", "drop", "dup_col", "quote", "blank", "space", "empty"])
        target = rng.choice(rows) if rows else columns
        if what == "add":
            target.insert(rng.randrange(len(target) + 1), rng.choice(["", "x", "1", '""']))
        elif what == "drop" and target:
            target.pop(rng.randrange(len(target)))
        elif what == "dup_col":
            columns.append(rng.choice(columns))
        elif what == "quote" and target:
            i = rng.randrange(len(target))
            target[i] = rng.choice(['"', '""', '"a"b', 'a"']) + target[i]
        elif what == "blank":
            rows.insert(rng.randrange(len(rows) + 1), [""] * rng.randint(0, len(columns)))
        elif what == "space":
            columns = [c if rng.random() < 0.7 else f" {c} " for c in columns]
        elif rows:
            rows.pop(rng.randrange(len(rows)))
    end = rng.choice(["\n", "\r\n", "\r"])
    return rng.choice(["", "\ufeff"]) + end.join(",".join(r) for r in [columns, *rows]) + end


@pytest.mark.slow
def test_any_csv_structure_is_read_or_refused_in_one_line_slow(tmp_path):
    """Seeded random structural damage to a validation CSV (1,500 files): every file is read
    (its rows predicted or failed with a reason) or refused in one error line."""
    import random

    rng = random.Random(20261124)
    for _ in range(1500):
        check_validate(_mangled_table(rng).encode(), tmp_path)



LAYER = {"kind": "layer", "family": "llama", "label": "l", "gpu": "h100-sxm-80gb",
         "shape": {"h": 256, "ffn": 512, "heads": 4, "kv": 2}, "seq": 256, "mbs": 1,
         "mode": "eager", "dtype": "bf16", "attn": "sdpa", "fwd_ms": 0.1, "fwd_bwd_ms": 0.3,
         "saved_activation_bytes": 1e6}


@pytest.mark.parametrize("change, column", [
    ({"shape": {"h": 1e400, "ffn": 512, "heads": 4}}, "shape.h"),  # OverflowError: the file
    ({"seq": "x"}, "seq"),  # "invalid literal for int() with base 10: 'x'"
    ({"shape": [256]}, "shape"),  # "list indices must be integers"
    ({"shape": {"h": 256, "ffn": 512, "heads": 4, "experts": 8}}, "shape.topk is missing"),
])
def test_a_bad_layer_record_fails_alone_naming_the_field(tmp_path, change, column):
    path = tmp_path / "layers.jsonl"
    path.write_text(json.dumps({**LAYER, **change, "label": "bad"}) + "\n" + json.dumps(LAYER)
                    + "\n")
    rows = validate_rows(path)
    bad = next(r for i, r in rows.items() if i.startswith("bad"))
    assert column in bad["error"]
    assert rows["l-s256-b1-eager"]["predicted"] > 0


@pytest.mark.parametrize("change, key", [
    ({"fwd_bwd_ms": 1e400}, "fwd_bwd_ms"),  # measured inf: an APE of nan
    ({"saved_activation_bytes": -1}, "saved_activation_bytes"),  # a negative memory APE
    ({"saved_activation_bytes": [1]}, "saved_activation_bytes"),  # TypeError: the file
    ({"fwd_ms": "x"}, "fwd_ms"),  # ValueError after the prediction
])
def test_a_layer_record_with_a_bad_measurement_refuses_the_file(tmp_path, change, key):
    """As a CSV's measured columns: the errors are relative to them."""
    path = tmp_path / "layers.jsonl"
    path.write_text(json.dumps({**LAYER, **change}) + "\n")
    line = one_error_line(cli("validate", str(path)))
    assert f"line 1: {key}=" in line



def _kernel_db(tmp_path, kernel=None, layer=None, **top):
    """The bundled H100 database with one kernel record and one layer record changed."""
    from trainsim.validate.kernel_db import is_kernel_db  # noqa: F401 - the module under test

    src = os.path.join(os.path.dirname(__file__), "..", "src", "trainsim", "data", "kernels",
                       "h100-sxm-80gb.json")
    with open(src) as fh:
        data = json.load(fh)
    data["layers"] = data["layers"][:2]
    if kernel:
        data["kernels"][0].update(kernel)
    if layer:
        data["layers"][0].update(layer)
    data.update(top)
    path = tmp_path / "db.json"
    path.write_text(json.dumps(data).replace("Infinity", "1e400"))
    return path


@pytest.mark.parametrize("kernel, key", [
    ({"op": "gemm", "m": 0, "n": 64, "k": 64}, "m=0"),  # math domain error (log 0)
    ({"op": "gemm", "m": 64, "n": 64, "k": 64, "dtype": "int3"}, "dtype='int3'"),  # KeyError
    ({"op": "gemm", "m": 1e400, "n": 64, "k": 64}, "m=1e400"),  # OverflowError; as written
    ({"op": "elementwise", "bytes": -5}, "bytes=-5"),
    ({"time_s": float("nan")}, "NaN is not a JSON number"),  # NaN reached the log ratios
    ({"time_s": -1e-3}, "time_s=-0.001"),
])
def test_a_bad_kernel_record_is_one_error_naming_it(tmp_path, kernel, key):
    path = _kernel_db(tmp_path, kernel=kernel)
    assert key in one_error_line(cli("validate", str(path)))
    run = tmp_path / "run.yaml"
    run.write_text(BASE.replace("compute_db: null", f"compute_db: {path}"))
    line = one_error_line(cli("simulate", str(run)))  # its safe reader refuses NaN first
    assert key.split("=")[0] in line or "NaN is not a JSON number" in line


def test_validate_checks_its_compute_db_once_up_front(tmp_path):
    """--compute-db of a file that is no database failed every row alike (or crashed on a
    deeply nested one); it is now one error line."""
    (tmp_path / "rows.csv").write_text(f"{TRAINING_HEADER}\n{GOOD_TRAINING}\n")
    (tmp_path / "deep.json").write_text('{"format": "trainsim-kernel-db/2", "gpu": '
                                        '"h100-sxm-80gb", "x": ' + "[" * 200 + "]" * 200 + "}")
    (tmp_path / "list.json").write_text("[1, 2]")
    for db, match in (("deep.json", "nested too deeply"), ("list.json", "not a kernel database")):
        line = one_error_line(cli("validate", "rows.csv", "--compute-db", db, cwd=tmp_path))
        assert line.startswith(f"error: --compute-db {db}") and match in line
    assert "nested too deeply" in one_error_line(cli("validate", "deep.json", cwd=tmp_path))
    assert cli("validate", "rows.csv", "--compute-db", "AUTO", cwd=tmp_path).exit_code == 0


@pytest.mark.parametrize("layer, key", [({"tp": "x"}, "tp='x'"), ({"seq_length": ""}, "seq_length"),
                                        ({"micro_batch_size": 1e400}, "micro_batch_size")])
def test_a_bad_layer_record_of_a_kernel_database_fails_alone(tmp_path, layer, key):
    """int(rec['tp']) crashed the command (ValueError, TypeError, OverflowError)."""
    rows = validate_rows(_kernel_db(tmp_path, layer=layer))
    errors = [r["error"] for r in rows.values() if r["error"]]
    assert len(errors) == 1 and key in errors[0]
    assert len(rows) == 2 and sum(r["predicted"] is not None for r in rows.values()) == 1


@pytest.mark.parametrize("change, key", [({"layer": {"fwd_s": None}}, "fwd_s=None"),
                                         ({"layer": {"bwd_s": "x"}}, "bwd_s='x'"),
                                         ({"layers": 5}, "'layers' is not a list"),
                                         ({"kernels": None, "layers": []}, "no eager layer")])
def test_a_kernel_database_with_a_bad_measurement_refuses_the_file(tmp_path, change, key):
    layer = change.pop("layer", None)
    assert key in one_error_line(cli("validate", str(_kernel_db(tmp_path, layer=layer,
                                                                **change))))


@pytest.mark.parametrize("db, match", [("adir", "'adir': is a directory"),
                                       ("", "--compute-db '': an empty value")])
def test_a_compute_db_that_is_no_file_says_why(tmp_path, db, match):
    """--compute-db of a directory or of nothing said 'no such file'."""
    (tmp_path / "adir").mkdir()
    (tmp_path / "t.csv").write_text(f"{TRAINING_HEADER}\n{GOOD_TRAINING}\n")
    assert match in one_error_line(cli("validate", "t.csv", "--compute-db", db, cwd=tmp_path))
