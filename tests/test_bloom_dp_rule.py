"""benchmarks/bloom_dp_rule.py (issue 17 item 2 diagnostic): which rows run DeepSpeed's pipe
engine, and that bloom31's DP 2 reading as a rule sets on the public BLOOM rows exactly the cell
their errata set (so it can only reproduce the erratum there)."""

from __future__ import annotations

from pathlib import Path

from helpers import load_script

from trainsim.validate import BUNDLED_DIR
from trainsim.validate.errata import read_errata

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = load_script(ROOT / "benchmarks" / "bloom_dp_rule.py")
PUBLIC = BUNDLED_DIR / "training_public.csv"


def test_pipe_engine_rows_of_the_public_file_are_the_twelve_bloom_rows():
    _, rows = SCRIPT.candidate_rows(PUBLIC)
    ids = [r["id"] for r in rows]
    assert len(ids) == 12 and all(i.startswith("bloom-") for i in ids)
    assert sorted(SCRIPT.dp_of(r) for r in rows) == [4] * 6 + [8] * 6


def test_rows_already_blocked_or_without_a_pipeline_are_not_candidates():
    # every post-fix BLOOM check row carries launch_blocking: none is a candidate
    assert SCRIPT.candidate_rows(ROOT / "benchmarks" / "bloom_sweep_checks.csv")[1] == []
    _, rows = SCRIPT.candidate_rows(ROOT / "benchmarks" / "training_deepspeed.csv")
    assert {r["id"] for r in rows} == {
        "mdsrebase-13b-v100-128-before", "mdsrebase-13b-v100-128-after",
        "mdsrebase-125m-a100-8", "mdsrebase-125m-a100-8-flash1",
        "mdsrebase-2.7b-a100-8-flash1", "mdsrebase-2.7b-a100-8-flash2"}


def test_rule_touches_only_dp_two_and_up_and_is_idempotent():
    row = {"framework": "megatron-deepspeed", "num_gpus": "16", "tp": "8", "pp": "2",
           "cp": "", "options": "fused_kernels"}
    assert SCRIPT.with_rule(row) == row  # DP 1
    row2 = {**row, "num_gpus": "32"}
    ruled = SCRIPT.with_rule(row2)
    assert ruled["options"] == "fused_kernels;launch_blocking"
    assert SCRIPT.with_rule(ruled) == ruled


def test_on_the_public_file_the_rule_sets_what_the_errata_set():
    errata = read_errata(ROOT / "benchmarks" / "training_errata.csv")
    _, rows = SCRIPT.candidate_rows(PUBLIC)
    for r in rows:
        e = errata[(r["id"], "options")]
        assert e["file_value"] == r["options"]
        assert SCRIPT.with_rule(r)["options"] == e["corrected_value"]
