"""benchmarks/mlperf5_axes.py (mlperf30, 2026-11-26): where training_mlperf5.csv's error lives.
The grouping adds up, the data-parallel size and micro-batches it derives from the cells agree
with what each run's log states (the rows' notes), and the pairs it compares do the same work
per GPU."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import load_script

ROOT = Path(__file__).resolve().parents[1]
DIAG = load_script(ROOT / "benchmarks" / "mlperf5_axes.py")
LOG = re.compile(r"log GBS (\d+) = MINIBS (\d+) x DP (\d+), (\d+) micro-batches of (\d+)")


def test_dp_and_microbatches_match_each_runs_log():
    rows = DIAG.read()
    assert len(rows) == 26
    for r in rows:
        gbs, minibs, dp, mbs, size = map(int, LOG.search(r["note"]).groups())
        assert DIAG.dp(r) == dp, r["id"]
        assert DIAG.microbatches(r) == mbs and int(r["micro_batch_size"]) == size, r["id"]
        assert int(r["global_batch_size"]) == gbs == minibs * dp, r["id"]
        assert r["model"] in DIAG.LAYERS
    r = next(r for r in rows if r["id"] == "mlperf50-nvidia-llama3.1-405b-h100-512")
    assert DIAG.layer_passes(r) == pytest.approx(288 * 126 / 8)
    assert DIAG.submitter(r) == "NVIDIA"


def test_group_shares_add_up_and_axes_cover_every_row():
    rows = DIAG.read()
    err = {r["id"]: (-0.1 if DIAG.gpu_name(r) in DIAG.HOPPER else -0.3) for r in rows}
    out = DIAG.group(rows, err)
    for cells in out.values():
        assert sum(c[4] for c in cells) == pytest.approx(100.0)
        assert sum(c[1] for c in cells) == 26
    gen = {c[0]: c for c in out["generation"]}
    assert gen["hopper"][1] == 7 and gen["hopper"][2] == pytest.approx(-10.0)
    assert gen["blackwell"][1] == 19 and gen["blackwell"][3] == pytest.approx(30.0)


def test_pairs_share_the_work_per_gpu_and_differ_in_dp():
    rows = DIAG.read()
    found = DIAG.pairs(rows)
    assert found
    for base, other in found:
        assert DIAG.work_key(base) == DIAG.work_key(other)
        assert DIAG.dp(base) < DIAG.dp(other)
    ids = {(b["id"], o["id"]) for b, o in found}
    assert ("mlperf51-uf-llama3.1-8b-b200-8", "mlperf51-uf-llama3.1-8b-b200-16") in ids


def test_twins_are_one_round_on_both_generations():
    twins = [r for r in DIAG.read(DIAG.BUNDLED_DIR / "training_public.csv") if r["id"] in DIAG.TWINS]
    assert len(twins) == 3
    assert {r["framework_version"] for r in twins} == {"4.1"}
    assert {DIAG.AXES["generation"](r) for r in twins} == {"hopper", "blackwell"}
    assert all("cuda_graphs" not in r["options"] for r in twins)
