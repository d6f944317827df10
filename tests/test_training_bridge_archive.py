"""A check file added by data49 (2026-11-28): the pre-training rows of Megatron-Bridge's
performance archive (NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md @ 067f987,
sections 25.11, 26.04.01 and 26.06) that no other file holds -- every GB300 and B300 row among
them. benchmarks/bridge_archive_rows.py writes benchmarks/training_bridge_archive.csv. The rows
re-derived from the table and the rows other files hold left out; the generic checks (the
generator, its --check, every row predicted, the error bound) are tests/test_training_files.py's."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers import load_script, training_rows

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "benchmarks" / "training_bridge_archive.csv"
SCRIPT = ROOT / "benchmarks" / "bridge_archive_rows.py"
GEN = load_script(SCRIPT)


def test_file_is_the_archive_rows_no_other_file_holds():
    rows = training_rows(FILE)
    others = set()
    for path in (ROOT / "benchmarks").glob("training_*.csv"):
        if path != FILE and path.name != "training_errata.csv":
            others |= {r["id"] for r in csv.DictReader(path.open())}
    assert not {r["id"] for r in rows} & others
    by_line = {int(t["line"]): t for t in GEN.table()}
    for r in rows:
        assert r["framework"] == "megatron-bridge" and "performance-summary-archive.md" in r["source"]
        t = by_line[int(r["source"].rsplit("line ", 1)[1])]
        tok = float(r["note"].split("published ", 1)[1].split(" ")[0])
        assert tok in {float(v[1]) for v in GEN.variants(t)}, r["id"]
        want = int(t["gbs"]) * int(t["seq"]) / (tok * int(t["gpus"]))
        assert float(r["measured_iteration_s"]) == pytest.approx(want, abs=5e-5), r["id"]
        assert (r["num_gpus"], r["global_batch_size"]) == (t["gpus"], t["gbs"])


def test_rows_other_files_hold_are_left_out_and_exist_there():
    """Each (line, precision) another file holds names that file's row, and is not written."""
    public = {r["id"]: r for r in csv.DictReader(GEN.PUBLIC.open())}
    heldout = {r["id"]: r for r in csv.DictReader(GEN.HELDOUT.open())}
    mine = list(csv.DictReader(FILE.open()))
    lines = {(int(r["source"].rsplit("line ", 1)[1]), r["note"].split("precision '")[1]
              .split("'")[0]) for r in mine}
    by_line = {int(t["line"]): t for t in GEN.table()}
    for (line, prec), rid in GEN.HELD.items():
        held = public.get(rid) or heldout[rid]
        t = by_line[line]
        assert (line, prec) not in lines
        assert (held["num_gpus"], held["global_batch_size"]) == (t["gpus"], t["gbs"]), rid
        assert held["gpu"] == GEN.SYSTEMS[t["system"]][0], rid


def test_left_out_rows_name_what_is_missing():
    """Kimi-K2's Muon: 2 rows, each with its reason (Nemotron 3 Nano's 9 and Nemotron 3
    Super's 14 MXFP8 and NVFP4 rows are benchmarks/training_nemotron3.csv, ``--hybrid``; the
    13 NVFP4 rows left out before the nvfp4 recipe are rows now)."""
    out = GEN.left_out()
    assert len(out) == 2
    assert not any("NVFP4" in x or "Nemotron_3_Super" in x for x in out)
    assert sum("Muon" in x for x in out) == 2
    assert not any("Nemotron_3_Nano" in x for x in out)



def test_moe_rows_here_run_tp_1_so_need_no_expert_tp_cell():
    """58th session: this file's MoE rows all run TP 1, where expert TP has nothing to split
    (the Nemotron 3 rows' cells: tests/test_mamba_block.py)."""
    assert all(r["tp"] == "1" for r in training_rows(FILE) if r["ep"] not in ("", "1"))
