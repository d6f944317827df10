"""trainsim validate: file kinds, row failures, tuning, and the public scoreboard."""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import pytest
from helpers import PUBLIC_TRAINING, public_training_validated, validate_file_sharing_kernels

from trainsim.errors import ConfigError
from trainsim.validate import BUNDLED_DIR, read_rows, summarize, summary_line, validate_file

SHARED = Path(__file__).resolve().parents[2] / "shared" / "validation"
# the published files as the team shares them, else the copy bundled with the package (the same
# bytes, checked below where both exist): a clean checkout runs the scoreboard too
PUBLISHED = SHARED if (SHARED / "training_public.csv").exists() else \
    Path(__file__).resolve().parents[1] / "src" / "trainsim" / "data" / "validation"
HEADER = ("id,source,model,hidden_size,num_layers,num_attention_heads,num_kv_heads,head_dim,"
          "ffn_hidden_size,vocab_size,seq_length,activation,num_experts,moe_top_k,"
          "moe_ffn_hidden_size,gpu,num_gpus,gpus_per_node,nic_gbps_per_gpu,tp,pp,cp,ep,vpp,"
          "sequence_parallel,recompute,zero_stage,distributed_optimizer,global_batch_size,"
          "micro_batch_size,dtype,options,measured_iteration_s,measured_peak_memory_gib,note")


def write(tmp_path, *rows):
    p = tmp_path / "rows.csv"
    p.write_text("\n".join((HEADER,) + rows) + "\n")
    return p


GOOD = ("ok,test,gpt-22b,6144,48,64,,,24576,51200,2048,gelu,,,,a100-sxm-80gb,8,8,200,8,1,1,1,,"
        "1,selective,0,0,4,4,bf16,,1.1,40,")


def test_missing_columns_are_named(tmp_path):
    """A CSV without the required columns is rejected with their names."""
    p = tmp_path / "bad.csv"
    p.write_text("id,measured_iteration_s\nx,1\n")
    with pytest.raises(ConfigError, match="missing column"):
        read_rows(p)


def test_bad_row_is_reported_and_does_not_stop_the_others(tmp_path):
    """An unknown model fails its row only, with the reason, and counts as failed."""
    bad = GOOD.replace("ok,test,gpt-22b", "bad,test,no-such-model").replace(",48,64,", ",,64,")
    kind, res = validate_file(write(tmp_path, GOOD, bad))
    assert kind == "training"
    assert res[0].predicted is not None and res[1].predicted is None
    assert "num_layers" in res[1].error or "model" in res[1].error
    s = summarize(res)
    assert s["failed"] == 1 and s["n"] == 2
    assert s["memory_n"] == 1  # the memory column was given for the good row


def test_unknown_cells_are_tuned_and_reported(tmp_path):
    """Empty micro-batch and recompute cells are chosen by the tool and shown; the row names no
    framework, so its empty options and gradient-reduce dtype are tuned too (TP overlap: TP 8
    with SP; no DP overlap at DP 1: validate.unnamed) and the other empty cells reported."""
    row = GOOD.replace(",1,selective,0,0,4,4,", ",1,,0,0,4,,")
    _, res = validate_file(write(tmp_path, row))
    assert set(res[0].chosen) == {"recompute", "micro_batch_size", "vpp", "tp_comm_overlap",
                                  "grad_reduce_dtype"}
    assert res[0].extra["assumed"]["framework"].startswith("none")


def test_summary_line_format():
    """The last line reads 'N rows, MAPE x.x%, max y.y%'."""
    line = summary_line({"n": 3, "mape": 0.0412, "max_ape": 0.143, "failed": 0, "memory_n": 0,
                         "memory_mape": None, "memory_max_ape": None})
    assert line == "3 rows, MAPE 4.1%, max 14.3%"


def test_every_public_training_run_is_expressed_and_does_not_regress():
    """Issue 15, acceptance 1: all 138 published runs simulate, errors grouped by framework.
    The bounds guard against regressions: MAPE 13.8 % when issue 15 closed, 10.1 % (max 38 %)
    with the host launch model (RESULTS.md, 2026-11-23); issue 17 owns bringing it to 5 %.
    The worst row, bridge2604p1-deepseek-v3-b200-256 (+49 %), leaves out the recipe's expert
    all-to-all overlap (benchmarks/training_errata.csv), so its four exchanges per layer show in
    full; it moved from +41 % when all-to-all traffic got its measured share of the NIC
    (collectives.nccl.ALL_TO_ALL_NET_SHARE), and from +50 to +52 % when B200 took its own
    sustained clock (0.82 of burst, 2026-11-25), and to +53.9 % when its MXFP8 GEMMs took TE's
    measured rate against per-tensor fp8 and their scale swizzles (2026-11-25, 18th session)."""
    assert PUBLIC_TRAINING == PUBLISHED / "training_public.csv"
    res, _ = public_training_validated()  # validate_file(PUBLIC_TRAINING, workers=2), shared
    s = summarize(res)
    assert s["n"] == 138 and s["failed"] == 0
    assert s["mape"] <= 0.11
    # the known erratum row holds its own guard (+53.9 % on 2026-11-25, see above); every
    # other row holds the max it had then, rounded up to the next point (31.2 %,
    # foundry-mpt7b-a100_80gb-s65536-g8), so a regression on any row shows and this one row
    # cannot loosen the bound for all the others
    worst = "bridge2604p1-deepseek-v3-b200-256"
    assert next(r.ape for r in res if r.id == worst) <= 0.54
    assert max(r.ape for r in res if r.id != worst and r.ape is not None) <= 0.32
    # the rows whose cells no erratum corrects hold the tighter guard (24.2 % on 2026-11-24,
    # megatron21-t2-zero3-529.6B-2240)
    with (Path(__file__).resolve().parents[1] / "benchmarks" / "training_errata.csv").open() as f:
        corrected = {e["id"] for e in csv.DictReader(f)}
    assert max(r.ape for r in res if r.id not in corrected and r.ape is not None) <= 0.30
    assert {"megatron-lm", "llm-foundry", "megatron-bridge", "deepspeed"} <= set(s["by_source"])
    lm = s["by_source"]["megatron-lm"]  # the framework the tool was developed on
    assert lm["n"] == 33 and lm["mape"] <= 0.06
    # Issue 16: published peak memory (BLOOM's nvidia-smi figures, compared as `device`) was
    # 30.6 % off before framework-aware model state; 9.7 % when that landed; 5.7 % (max 31 %, the
    # 196B pp6 mb2 snapshot above its own mb4 sibling) with ZeRO-1's step partitions and the
    # communicators each stage holds (RESULTS.md)
    assert s["memory_n"] == 11 and s["memory_mape"] <= 0.06 and s["memory_max_ape"] <= 0.32
    # Issue 16, acceptance 2: every run whose recompute and micro-batch are stated is predicted
    # to fit (it ran)
    with (PUBLISHED / "training_public.csv").open() as f:
        stated = {r["id"] for r in csv.DictReader(f)
                  if r["recompute"].strip() and r["micro_batch_size"].strip()}
    assert len(stated) == 81
    assert [r.id for r in res if r.id in stated and not r.fits_in_memory] == []


@pytest.mark.skipif(not (SHARED / "collectives_public.csv").exists(), reason="no shared/validation")
def test_public_collectives_file_is_read_and_predicted():
    """Every collective row gets a prediction from the analytical model."""
    kind, res = validate_file(SHARED / "collectives_public.csv")
    assert kind == "collectives"
    assert all(r.predicted is not None for r in res)


@pytest.mark.skipif(not (SHARED / "collectives_public.csv").exists(), reason="no shared/validation")
def test_public_collectives_meet_the_communication_bar():
    """Issue 3, acceptance 1: every published collective row within 10%, MAPE <= 5%."""
    _, res = validate_file(SHARED / "collectives_public.csv")
    s = summarize(res)
    assert s["failed"] == 0
    assert s["max_ape"] <= 0.10
    assert s["mape"] <= 0.05


COLL_HEADER = ("id,source,gpu,num_gpus,gpus_per_node,nic_gbps_per_gpu,collective,message_bytes,"
               "algorithm,measured_busbw_GBps,note")


def test_per_nic_rows_are_compared_per_nic(tmp_path):
    """A row whose note states a per-NIC figure gets the predicted busbw divided by the NICs
    the group uses in a node; the same row without that note is compared as a whole."""
    p = tmp_path / "c.csv"
    row = "x,t,h100-sxm-80gb,16,8,400,all_reduce,1073741824,ring,47,"
    p.write_text("\n".join([COLL_HEADER, row + "46-48 GB/s per NIC", row + "whole"]) + "\n")
    _, (per_nic, whole) = validate_file(p)
    assert per_nic.chosen["unit"] == "busbw per NIC" and "unit" not in whole.chosen
    assert per_nic.predicted == pytest.approx(whole.predicted / 8)


def test_sliding_window_option_takes_half_the_sequence(tmp_path):
    """The file has no window column: a row with the sliding_window option simulates with a
    window of half its sequence, which is faster than the same row without it."""
    base = GOOD.replace(",bf16,,", ",bf16,fused_kernels,")
    windowed = base.replace("ok,", "swa,", 1).replace(",fused_kernels,", ",fused_kernels;sliding_window,")
    _, res = validate_file(write(tmp_path, base, windowed))
    assert res[1].error is None
    assert res[1].predicted < res[0].predicted


def test_lamb_option_trains_with_lamb(tmp_path):
    """A row with the lamb option runs LAMB's heavier optimizer step (MegaScale's runs)."""
    base = GOOD.replace(",bf16,,", ",bf16,fused_kernels,")
    lamb = base.replace("ok,", "lamb,", 1).replace(",fused_kernels,", ",fused_kernels;lamb,")
    _, res = validate_file(write(tmp_path, base, lamb))
    assert res[1].error is None
    assert res[1].predicted > res[0].predicted


def test_validate_without_a_file_runs_the_bundled_published_data(monkeypatch):
    """Issue 15, acceptance 4: with no argument the packaged copies run (training left out here
    for time; it is the same code path). The kernels file's rows are the session's one run of
    it (``helpers.kernels_published_validated``, the same function on the same bytes: the CLI's
    worker count changes no result), the collectives file's rows are predicted here."""
    from click.testing import CliRunner

    import trainsim.validate as v
    from trainsim.cli import main

    assert {p.name for p in v.bundled_files()} == set(v.BUNDLED_FILES)
    monkeypatch.setattr(v, "BUNDLED_FILES", ("kernels_published.csv", "collectives_public.csv"))
    monkeypatch.setattr(v, "validate_file", validate_file_sharing_kernels())
    r = CliRunner().invoke(main, ["validate"])
    assert r.exit_code == 0, r.output
    assert "== kernels_published.csv (bundled)" in r.output
    assert r.output.strip().splitlines()[-1].startswith("6 rows, MAPE")
    assert "686 rows, MAPE" in r.output and "failed" not in r.output.split("686 rows")[1][:40]


@pytest.mark.skipif(not (SHARED / "training_public.csv").exists(), reason="no shared/validation")
def test_bundled_copies_match_the_shared_files():
    from trainsim.validate import bundled_files

    for path in bundled_files():
        assert path.read_bytes() == (SHARED / path.name).read_bytes(), path.name


def test_unknown_option_and_framework_name_the_closest(tmp_path):
    from trainsim.validate.training import predict_training_row

    row = {"id": "x", "model": "llama3-8b", "gpu": "h100-sxm-80gb", "num_gpus": "8",
           "gpus_per_node": "8", "tp": "1", "pp": "1", "global_batch_size": "8",
           "seq_length": "2048", "measured_iteration_s": "1", "options": "cuda_graph"}
    assert "did you mean 'cuda_graphs'" in predict_training_row(row).error
    row.update(options="", framework="megatron-lmm")
    assert "megatron-lm" in predict_training_row(row).error
    row.update(framework="megatron-deepspeed", framework_version="2022-03", tp="2",
               sequence_parallel="1")
    err = predict_training_row(row).error
    assert "sequence parallel" in err and "source:" in err


def test_rows_predicted_in_processes_equal_rows_predicted_in_turn(tmp_path):
    """validate_file(workers=2) returns the same results, in file order, as one process."""
    src = BUNDLED_DIR / "training_public.csv"
    with src.open() as f:
        lines = f.read().splitlines()
    small = tmp_path / "few.csv"
    small.write_text("\n".join([lines[0]] + [lines[i] for i in (1, 40, 80)]) + "\n")
    one = validate_file(small)[1]
    two = validate_file(small, workers=2)[1]
    assert [(r.id, r.predicted) for r in one] == [(r.id, r.predicted) for r in two]


def test_row_passes_orders_rows_for_workers_by_their_stated_passes():
    """row_passes: 2 x micro-batches x pp x vpp from the cells (empty micro-batch size, cp
    and vpp as 1), 0.0 where a needed cell is not a count (such a row fails alone later)."""
    from trainsim.validate.training import row_passes

    row = {"num_gpus": "64", "tp": "2", "pp": "4", "global_batch_size": "256"}
    assert row_passes(row) == 2 * 32 * 4  # dp 8, 32 micro-batches of 1
    assert row_passes({**row, "micro_batch_size": "2", "vpp": "3", "cp": "2"}) == 2 * 32 * 4 * 3
    assert row_passes({**row, "pp": "four"}) == 0.0


def test_cli_validate_workers_give_the_same_json(tmp_path):
    """``trainsim validate --workers 2`` (rows handed out longest first) prints the JSON
    that one process prints, rows in file order."""
    from click.testing import CliRunner

    from trainsim.cli import main

    lines = (BUNDLED_DIR / "training_public.csv").read_text().splitlines()
    small = tmp_path / "few.csv"
    small.write_text("\n".join([lines[0]] + [lines[i] for i in (2, 41, 81, 120)]) + "\n")
    out = [CliRunner().invoke(main, ["validate", str(small), "--format", "json", "--workers", w])
           for w in ("1", "2")]
    assert [o.exit_code for o in out] == [0, 0]
    assert out[0].output == out[1].output
    assert [r["id"] for r in json.loads(out[1].output)["rows"]] == \
        [r["id"] for r in read_rows(small)[1]]


def _slow_row(row):
    import pathlib
    import time

    from trainsim.validate import RowResult
    pathlib.Path(row["dir"], row["id"]).touch()  # this row was started
    time.sleep(0.5)
    return RowResult(id=row["id"], measured=1.0, predicted=1.0)


def test_workers_stop_at_an_error_without_predicting_the_rows_not_started(tmp_path):
    # 12 rows of 0.5 s on 2 processes; a failure at the first finished row must not wait for
    # the other rows: the queued ones are cancelled, never started
    from trainsim.validate import _in_workers

    def stop(done, total):
        raise KeyboardInterrupt

    rows = [{"id": f"r{i}", "dir": str(tmp_path)} for i in range(12)]
    with pytest.raises(KeyboardInterrupt):
        _in_workers(_slow_row, rows, 2, stop, None)
    time.sleep(2.0)  # let what was started finish
    assert len(list(tmp_path.iterdir())) < 12


def test_every_column_the_reader_knows_is_documented():
    """The bundled format notes' column table names every column ``read_rows`` reads (required,
    shape, count and copied columns: ``ddp_bucket_size`` included)."""
    from trainsim.validate.row_settings import (
        COLUMN_FIELDS,
        COUNT_COLUMNS,
        SHAPE_COLUMNS,
        TRAINING_REQUIRED,
    )
    documented = set()
    for line in (BUNDLED_DIR / "README.md").read_text().splitlines():
        if line.startswith("| ") and line.count("|") >= 3:
            documented |= {name.strip() for name in line.split("|")[1].split(",")}
    known = {*COLUMN_FIELDS, *COUNT_COLUMNS, *SHAPE_COLUMNS, *TRAINING_REQUIRED}
    assert sorted(known - documented) == []
