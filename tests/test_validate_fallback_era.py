"""A row on a framework with no profile here that states its date (a ``framework_version``
written as a date) is predicted with the stacks that existed then, each at its entry of that
date; one that states an attention kernel the chosen profile's models never run, with the next
profile whose models run it (catalog.fallback)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from trainsim.catalog.fallback import (
    EARLIER_PROFILES,
    FALLBACK_PROFILES,
    fallback_framework,
    fallback_order,
    ran_by,
    run_date,
)
from trainsim.catalog.frameworks import framework_names
from trainsim.validate.training import predict_training_row

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = ROOT / "src" / "trainsim" / "data" / "validation" / "training_public.csv"
HELDOUT = ROOT / "benchmarks" / "training_heldout.csv"


def _row(path: Path, row_id: str, **cells: str) -> dict[str, str]:
    with open(path, newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == row_id)
    return {**row, "framework": "otherfw", **cells}


def test_the_earlier_stacks_exist():
    assert {p for ps in EARLIER_PROFILES.values() for p in ps} <= set(framework_names())
    assert set(EARLIER_PROFILES) == set(FALLBACK_PROFILES)


@pytest.mark.parametrize("written,date", [
    ("2022-02", "2022-02"), ("2021", "2021"), ("March 2021", "March 2021"),
    ("2024-07-30", "2024-07-30"), ("0.4.2", ""), ("24.07", ""), ("v1.2", ""), ("", ""),
    (None, ""), ("nightly", ""),
])
def test_only_a_date_is_read_as_the_run_date(written, date):
    assert run_date(written) == date


def test_a_stack_existed_from_its_first_entry_a_year_meaning_any_month_of_it():
    assert not ran_by("torchtitan", "2024-03") and ran_by("torchtitan", "2024-04")
    assert not ran_by("megatron-core", "2023-11") and ran_by("megatron-core", "2023")
    assert ran_by("deepspeed", "2021-03") and not ran_by("megatron-deepspeed", "2021-06")
    assert ran_by("pytorch", "2019")  # it reads no dates: taken as existing
    assert all(ran_by(p, "") for p in ("torchtitan", "megatron-core"))


@pytest.mark.parametrize("stage,date,profile", [
    ("3", "2021-03", "deepspeed"),     # before FSDP2: ZeRO-3 as DeepSpeed's own
    ("2", "2023-06", "deepspeed"),
    ("3", "2024-07", "torchtitan"),
    ("3", "", "torchtitan"),
    ("1", "2022-02", "megatron-lm"),   # before Megatron-core's first release
    ("", "2021", "megatron-lm"),
    ("", "2023", "megatron-core"),     # Megatron-core 0.4 was tagged in 2023
    ("1", "2024-02", "megatron-core"),
])
def test_a_dated_run_takes_the_newest_stack_of_its_kind_that_existed(stage, date, profile):
    name, why = fallback_framework(stage, None, False, date)
    assert name == profile
    assert (f"its date {date} is before" in why) == (profile in ("deepspeed", "megatron-lm"))


def test_a_dated_order_tries_the_stacks_of_its_date_then_the_newest():
    order = fallback_order("megatron-lm", "2022-02")
    assert order[:2] == (("megatron-lm", "2022-02"), ("megatron-deepspeed", "2022-02"))
    dated = [p for p, v in order if v == "2022-02"]
    assert dated == ["megatron-lm", "megatron-deepspeed", "deepspeed"]
    # then, where every stack of its date refuses it, the undated order at the newest entries
    tail = order[order.index(("deepspeed", "2022-02")) + 1:]
    assert tail[0] == ("pytorch", "")  # it reads no dates: taken at its newest, as existing
    assert set(tail) == set(fallback_order("megatron-core"))
    assert len(order) == len(set(order))
    # NeMo's Apex entry of its date: 24.07 in 2024-08, not the newest Apex entry (24.12: its
    # entry of the 58th session, Megatron-core 0.10's expert order, keeps the Apex optimizer)
    aug = fallback_order("torchtitan", "2024-08")
    assert aug.index(("nemo", "24.07")) < aug.index(("nemo", "24.12"))
    undated = fallback_order("megatron-core")
    assert [p for p, _ in undated] == ["megatron-core", "torchtitan", "pytorch", "nemo"]


@pytest.mark.parametrize("attention,profile", [
    ("cudnn", "megatron-core"),   # TE / cuDNN attention: torchtitan's models call SDPA / flex
    ("flex", "torchtitan"), ("sdpa", "torchtitan"), ("", "torchtitan"),
    ("unfused", "pytorch"),       # the first after torchtitan whose models run it
])
def test_a_stated_kernel_the_profile_never_runs_passes_to_one_that_runs_it(attention, profile):
    name, why = fallback_framework("3", None, False, "", attention)
    assert name == profile
    assert ("models run no" in why) == (profile != "torchtitan")


def test_a_kernel_no_fallback_runs_keeps_the_first_choice():
    assert fallback_framework("1", "4", False, "", "flash1")[0] == "megatron-core"


def test_a_2021_zero3_row_is_predicted_as_deepspeed_then_ran_it():
    """Narayanan et al. 2021 (arXiv:2104.04473) Table 2's ZeRO-3 baseline, 174.6 B on 384 A100
    (training_public.csv, DeepSpeed 2021-03): named 'otherfw' it was PyTorch FSDP2's (-25.7 %,
    torchtitan's first entry is 2024-04); DeepSpeed at its 2021-03 entry now, as named."""
    row = _row(PUBLIC, "megatron21-t2-zero3-174.6B-384")
    got = predict_training_row(row)
    assert got.error is None, got.error
    assert got.chosen["framework"] == "deepspeed" and got.chosen["framework_version"] == "2021-03"
    named = predict_training_row({**row, "framework": "deepspeed"})
    assert got.predicted == named.predicted
    note = got.extra["read_as"]["framework"]
    assert "before torchtitan's first entry (2024-04)" in note and "run's date" in note


def test_a_2022_zero1_row_megatron_lm_refused_takes_megatron_deepspeed():
    """BLOOM's 2022-02 sweep (training_public.csv, bigscience tr11 chronicles): ZeRO-1 with TP 8
    and PP 6; Megatron-LM's distributed optimizer came 2022-06, so its 2022-02 entry refuses
    ZeRO-1 and Megatron-DeepSpeed, which ran Megatron's TP/PP on DeepSpeed's ZeRO-1 then,
    predicts it."""
    got = predict_training_row(_row(PUBLIC, "bloom-sweep-181B-tp8-pp6-dp8-mb1"))
    assert got.error is None, got.error
    assert got.chosen["framework"] == "megatron-deepspeed"
    assert "megatron-lm, which its cells select" in got.extra["read_as"]["framework"]
    assert abs(got.predicted / got.measured - 1) < 0.2


def test_a_zero3_row_stating_cudnn_attention_runs_megatron_core_mechanisms():
    """NeMo Automodel's Llama 3 70B on 64 H100 (training_heldout.csv, TE attention stated as
    cudnn, FSDP2 with TE layers): torchtitan's eager models priced it +5.4 %."""
    got = predict_training_row(_row(HELDOUT, "automodel-llama3-70b-64"))
    assert got.error is None, got.error
    assert got.chosen["framework"] == "megatron-core"
    assert abs(got.predicted / got.measured - 1) < 0.1


def test_a_dated_row_no_stack_of_its_date_runs_takes_the_newest_that_does():
    """InternEvo's 7B on 16 A100 (benchmarks/training_internevo.csv, 2023-07): ZeRO-1 in groups
    of 8 (dp_replicate 2), which no stack here offered in 2023 (Megatron-core's distributed-
    optimizer instances came 2024-11-30): megatron-core at its newest entry, not a failure."""
    got = predict_training_row(_row(ROOT / "benchmarks" / "training_internevo.csv",
                                    "internevo2307-7b-a100-16-tp1-zero18"))
    assert got.error is None, got.error
    assert got.chosen["framework"] == "megatron-core" and "framework_version" not in got.chosen


def test_a_kernel_only_a_later_stack_runs_takes_that_stack_at_its_newest_entry():
    """A 2022 ZeRO-3 row stating cuDNN attention: no stack of 2022 here runs it (DeepSpeed's
    reference model is unfused, Megatron-LM's 2022 entries too); Megatron-core at its newest
    entry, the one whose models were checked, not its entry of 2022."""
    from trainsim.catalog.fallback import fallback_choice

    name, version, why = fallback_choice("3", None, False, "2022", "cudnn")
    assert (name, version) == ("megatron-core", "") and "run no cudnn attention" in why
    assert fallback_choice("3", None, False, "2021-03", "unfused")[:2] == ("deepspeed", "2021-03")


@pytest.mark.parametrize("stage,replicas,date,chosen", [
    # Megatron-core at 2024-12 runs cuDNN attention but refuses ZeRO-3 (Megatron-FSDP is
    # core_v0.12.0's) and has no optimizer instances before 2024-11-30: its newest entry runs both
    ("3", "1", "2024-12-09", ("megatron-core", "")),
    ("3", "4", "2024-12-09", ("megatron-core", "")),
    ("3", "4", "2025-06", ("megatron-core", "2025-06")),  # Megatron-FSDP and instances by then
    # ZeRO-2: no stack here runs it with cuDNN attention; the first that runs the kernel
    ("2", None, "2024-12-09", ("megatron-core", "2024-12-09")),
])
def test_the_kernel_skip_takes_a_stack_that_also_runs_the_stated_sharding(stage, replicas, date,
                                                                          chosen):
    """data54's MaxText rows (cuDNN attention, FSDP over every GPU, 2024-12 / 2025-01): the skip
    past torchtitan went to Megatron-core of their date, which refuses ZeRO-3, so they ended on
    Megatron-DeepSpeed (no cuDNN attention), and with replicas on torchtitan with its eager
    SDPA models; the skip now takes the first stack that runs the kernel and accepts the
    row's ZeRO stage and replicas as its checks do."""
    from trainsim.catalog.fallback import _accepts, fallback_choice

    assert fallback_choice(stage, replicas, False, date, "cudnn")[:2] == chosen
    assert not _accepts("megatron-core", "2024-12-09", "3", None)
    assert not _accepts("megatron-core", "2024-06", "1", "2")  # instances from 2024-11-30
    assert _accepts("megatron-core", "", "3", "4") and _accepts("torchtitan", "", "3", "4")
    assert _accepts("megatron-core", "2024-06", "", "")  # nothing stated, nothing checked


def test_maxtext_rows_with_replicas_keep_the_stack_of_the_rows_without():
    """dgxc-benchmarking's MaxText Llama 3 70B fp8 at 256 GPUs (FSDP 256) and 512 GPUs (FSDP 128
    x 4 replicas, benchmarks/training_dgxc_maxtext.csv), named as a framework with no profile
    here (MaxText has one since the 55th session): one stack's mechanisms for both, not a
    profile switch at the first replica (the measured steps are flat, 9.488 and 9.244 s; the
    switch to torchtitan had +14.6 -> +41.5 %), and Megatron-FSDP predicts each within 25 %."""
    path = ROOT / "benchmarks" / "training_dgxc_maxtext.csv"
    got = [predict_training_row({**_row(path, f"dgxc-maxtext-llama3-70b-fp8-h100-{n}"),
                                 "framework": "levanter"})
           for n in (256, 512)]
    assert all(g.error is None for g in got), [g.error for g in got]
    assert {g.chosen["framework"] for g in got} == {"megatron-core"}
    assert all(abs(g.predicted / g.measured - 1) < 0.25 for g in got)
