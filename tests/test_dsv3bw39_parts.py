"""benchmarks/dsv3bw39_parts.py: the DeepSeek-V3 Blackwell diagnostic's arithmetic (the ladder's
gap split, the guide's per-SM DeepEP rate), its data reading (recipe cells, the ladder's column
steps), its what-if patches undone on exit; (slow) the public B200 row's miss is its empty cells."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script

SCRIPT = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "dsv3bw39_parts.py")


def test_gap_split_adds_up_by_hand():
    # 10 -> 8 (no column: 2 s measured, 0 priced), 8 -> 7 (column: 1 s and 1 s),
    # 7 -> 5 (no column: 2 s and 1 s); first gap 4 = 2 + 1 hidden + 0 column + 1 residual
    split = SCRIPT.gap_split([10.0, 8.0, 7.0, 5.0], [6.0, 6.0, 5.0, 4.0], {2})
    assert split == {"first_gap": 4.0, "hidden": 3.0, "column": 0.0, "residual": 1.0}
    assert split["hidden"] + split["column"] + split["residual"] == split["first_gap"]


def test_the_ladder_changes_columns_at_four_steps():
    rows = SCRIPT.read_rows(SCRIPT.LADDER)
    steps = [b["id"].split("256-", 1)[1] for _, b in SCRIPT.step_pairs(rows)]
    assert steps == ["04-deepep", "05-no-upproj-recompute", "06-cuda-graphs", "11-hybridep"]
    assert set(SCRIPT.GUIDE) == set(steps)


def test_guide_rates_per_sm():
    """The guide's EP 32 DeepEP dispatch (400 GB/s on 24 SMs, 16.7 GB/s an SM) is within 3 % of
    the fitted DEEPEP_COPY_BPS_PER_SM (a figure outside its fit), its combine (190, 7.9 GB/s an
    SM) under half of it; the pair's one rate is their harmonic mean per SM, 10.73 GB/s."""
    from trainsim.collectives.ep_kernels import DEEPEP_COPY_BPS_PER_SM

    dispatch, combine, sms = SCRIPT.GUIDE_DEEPEP_GBps
    assert abs(dispatch * 1e9 / sms / DEEPEP_COPY_BPS_PER_SM - 1.0) < 0.03
    assert combine * 1e9 / sms < 0.5 * DEEPEP_COPY_BPS_PER_SM
    assert SCRIPT.GUIDE_DEEPEP_PER_SM_Bps == pytest.approx(2 / (1 / 400 + 1 / 190) / 24 * 1e9)
    assert SCRIPT.GUIDE_DEEPEP_PER_SM_Bps == pytest.approx(10.73e9, rel=1e-3)


def test_recipe_cells_and_variants():
    fix = SCRIPT.recipe_cells(SCRIPT.ROW)
    assert fix["moe_dispatcher"] == "deepep" and "ep_overlap" in fix["options"].split(";")
    assert fix["recompute"] == "selective" and fix["recompute_modules"] == "mla_up_proj;mlp"
    row = next(r for r in SCRIPT.read_rows(SCRIPT.PUBLIC) if r["id"] == SCRIPT.ROW)
    variants = dict(SCRIPT.cell_variants(row, fix))
    groups = 4  # options, dispatcher, layout, recompute with its modules
    assert len(variants) == 2 * groups + 2
    assert variants["as written"] == row
    alone = variants["+ recompute+recompute_modules"]
    assert (alone["recompute"], alone["recompute_modules"]) == ("selective", "mla_up_proj;mlp")
    assert alone["options"] == row["options"] == ""
    assert all(variants["all recipe cells"][k] == v for k, v in fix.items())
    assert variants["all but options"]["options"] == ""


def test_patches_are_undone():
    import trainsim.validate.row_unknowns as ru
    from trainsim import pricing

    before = (pricing.domain_exchange_s, pricing.Pricer._comm_time, ru.tuned_switches)
    with SCRIPT.deepep_guide():
        assert pricing.domain_exchange_s is not before[0]
    with SCRIPT.nccl_channels():
        assert pricing.Pricer._comm_time is not before[1]
    with SCRIPT.tuned_option("ep_overlap"):
        assert ru.tuned_switches is not before[2]
    assert (pricing.domain_exchange_s, pricing.Pricer._comm_time, ru.tuned_switches) == before


def test_deepep_guide_slows_only_large_domains():
    from trainsim import pricing

    size, nvlink = 100e6, 900e9
    plain = [pricing.domain_exchange_s("deepep", size, n, nvlink, 24) for n in (8, 16, 32)]
    with SCRIPT.deepep_guide():
        patched = [pricing.domain_exchange_s("deepep", size, n, nvlink, 24) for n in (8, 16, 32)]
        hybrid = pricing.domain_exchange_s("hybridep", size, 32, nvlink, 32)
    assert patched[:2] == plain[:2]
    assert patched[2] == pytest.approx(size / (24 * SCRIPT.GUIDE_DEEPEP_PER_SM_Bps))
    assert hybrid == pricing.domain_exchange_s("hybridep", size, 32, nvlink, 32)


@pytest.mark.slow
def test_public_b200_row_miss_is_its_empty_cells():
    """As written +40 % or more; with the recipe's cells within 3 %; the options cell (the
    combined-1F1B expert overlap) alone removes most of the miss."""
    row = next(r for r in SCRIPT.read_rows(SCRIPT.PUBLIC) if r["id"] == SCRIPT.ROW)
    variants = dict(SCRIPT.cell_variants(row, SCRIPT.recipe_cells(SCRIPT.ROW)))
    err = {k: SCRIPT.signed(SCRIPT.parts(variants[k]))
           for k in ("as written", "+ options", "all recipe cells")}
    assert err["as written"] > 40.0
    assert abs(err["all recipe cells"]) < 3.0
    assert err["+ options"] < 0.3 * err["as written"]
