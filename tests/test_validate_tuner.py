"""The validator's tuner and its defaults for silent cells."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from trainsim.errors import ConfigError
from trainsim.validate import row_settings, training


def test_an_empty_gpus_per_node_is_the_catalog_node_of_the_gpu():
    assert row_settings.node_size({"gpu": "gb200", "num_gpus": "144"}) == 72  # NVL72 racks
    # 256 GPUs do not fill NVL72 racks: whole trays of 4, the racks filled evenly (64 each, as
    # Megatron-Bridge's GB200 256-GPU runs state), not 72, which no 256-GPU job can use
    assert row_settings.node_size({"gpu": "gb200", "num_gpus": "256"}) == 64
    # 76 or 100 GPUs (19, 25 trays) were refused (no even fill of 2 racks by whole trays); in
    # Slurm segments of 1 and 5 trays they are 72 + 4 and 60 + 40 GPUs, the most in one domain
    # is the node size (tests/test_domain_placement.py checks the shares)
    assert row_settings.node_size({"gpu": "gb200", "num_gpus": "76"}) == 72
    assert row_settings.node_size({"gpu": "gb200", "num_gpus": "100"}) == 60
    with pytest.raises(ConfigError, match="gpus_per_node"):  # not whole 4-GPU trays
        row_settings.node_size({"gpu": "gb200", "num_gpus": "74"})
    assert row_settings.node_size({"gpu": "gb300", "num_gpus": "216"}) == 72
    assert row_settings.node_size({"gpu": "h100-sxm-80gb", "num_gpus": "12"}) == 8  # refused
    assert row_settings.node_size({"gpu": "h100-sxm-80gb", "num_gpus": "1024"}) == 8
    assert row_settings.node_size({"gpu": "h100-sxm-80gb", "num_gpus": "4"}) == 4


def test_the_node_of_a_gpu_is_its_smallest_catalog_node_whatever_the_name_order(monkeypatch):
    """V100 comes as the 8-GPU DGX-1 and the 16-GPU DGX-2: a silent row is the server, in any
    listing order of the catalog's nodes; the tray rule reads the nodes' ``gpus_per_tray``."""
    from trainsim.catalog import names, node
    listed = list(names("nodes"))
    for order in (listed, listed[::-1]):
        monkeypatch.setattr(row_settings, "names", lambda kind, o=order: o)
        assert row_settings.node_size({"gpu": "v100-sxm-32gb", "num_gpus": "64"}) == 8
    trays = {n: node(n).get("gpus_per_tray") for n in listed}
    assert {n: t for n, t in trays.items() if t} == {"gb200-nvl72": 4, "gb300-nvl72": 4}


def test_the_node_of_a_gpu_is_found_by_the_catalog_entry_its_name_resolves_to():
    # "GB200" and "NVIDIA GB200" name gb200: its NVL72 rack, not a default 8-GPU node
    assert row_settings.node_size({"gpu": "GB200", "num_gpus": "144"}) == 72
    assert row_settings.node_size({"gpu": "NVIDIA GB200", "num_gpus": "144"}) == 72
    assert row_settings.node_size({"gpu": "no-such-gpu", "num_gpus": "16"}) == 8


def _fake_configs(monkeypatch, memory, hbm=80.0):
    """tune() over plain choices: a config is its choice; memory(choice) decides the fit."""
    def build(raw):
        choice = dict(raw["parallel"], **raw["training"])
        return SimpleNamespace(choice=choice, parallel=SimpleNamespace(pp=1),
                               cluster=SimpleNamespace(gpu=SimpleNamespace(hbm_bytes=hbm)))
    monkeypatch.setattr(training, "run_config_from_dict", build)
    monkeypatch.setattr(training, "offload_admitted", lambda cfg: True)
    monkeypatch.setattr(training, "stage_memory",
                        lambda cfg, s: SimpleNamespace(total=memory(cfg.choice)))


def test_the_tuner_finds_a_setting_two_single_steps_away(monkeypatch):
    """Deeper interleaving fits only with recompute, and recompute alone is slower: a descent
    from (none, vpp 1) never moves, one from the first recompute setting finds (full, vpp 8)."""
    _fake_configs(monkeypatch, lambda c: 70.0 if c["vpp"] == 1 or c["recompute"] == "full"
                  else 90.0)
    times = {("none", 1): 10.0, ("full", 1): 12.0, ("none", 8): 5.0, ("full", 8): 7.0}
    raw = {"parallel": {}, "training": {}}
    unknown = {"recompute": ["none", "full"], "vpp": [1, 8]}
    _, choice = training.tune(raw, unknown,
                              lambda c: times[(c.choice["recompute"], c.choice["vpp"])])
    assert choice == {"recompute": "full", "vpp": 8}


def test_a_recompute_choice_its_bounds_rule_out_is_not_descended(monkeypatch):
    """Once a descent has found 5.0, a recompute choice whose every fitting setting is bounded
    at 5.0 or more is skipped (never simulated); one with a single setting bounded below is
    descended; equal times keep the earlier recompute choice, as without the bound."""
    _fake_configs(monkeypatch, lambda c: 70.0)
    times = {("none", 1): 6.0, ("none", 8): 5.0, ("selective", 1): 7.0, ("selective", 8): 5.0,
             ("full", 1): 9.0, ("full", 8): 8.0}
    bounds = {("selective", 1): 4.0, ("selective", 8): 4.9, ("full", 1): 5.0, ("full", 8): 7.0}
    raw = {"parallel": {}, "training": {}}
    unknown = {"recompute": ["none", "selective", "full"], "vpp": [1, 8]}
    key = lambda c: (c.choice["recompute"], c.choice["vpp"])
    seen: list[tuple] = []

    def evaluate(c):
        seen.append(key(c))
        return times[key(c)]

    _, choice = training.tune(raw, unknown, evaluate, lambda c: bounds.get(key(c), 0.0))
    assert choice == {"recompute": "none", "vpp": 8}  # selective ties at 5.0: the first wins
    assert ("selective", 1) in seen and not any(r == "full" for r, _ in seen)
    _, without = training.tune(raw, unknown, lambda c: times[key(c)])
    assert without == choice


def test_a_start_beaten_below_its_bound_is_never_simulated(monkeypatch):
    """A descent's start is simulated only to answer a comparison: where the first candidate
    is bounded below the start's bound and simulated faster than that bound, it is faster than
    the start whatever the start's time, and the start is never simulated (its bound rejects
    it later). Where the candidate is not that fast, the start is simulated as before. Either
    way the choice is the one made without bounds, and no setting is simulated that the
    tuner without this rule (the start always simulated) would not have simulated."""
    _fake_configs(monkeypatch, lambda c: 70.0)
    key = lambda c: c.choice["vpp"]
    unknown = {"vpp": [1, 2, 8]}
    for times, start_bound, start_run in (({1: 10.0, 2: 6.0, 8: 5.0}, 9.0, False),
                                          ({1: 10.0, 2: 9.5, 8: 5.0}, 9.0, True),  # not below
                                          ({1: 7.0, 2: 8.0, 8: 5.0}, 6.5, True)):  # the start wins
        bounds = {1: start_bound, 2: 5.5, 8: 4.9}  # each at most the time it bounds
        assert all(bounds[v] <= times[v] for v in times)
        seen: list[int] = []

        def evaluate(c, times=times, seen=seen):
            seen.append(key(c))
            return times[key(c)]

        _, choice = training.tune({"parallel": {}, "training": {}}, unknown, evaluate,
                                  lambda c, bounds=bounds: bounds[key(c)])
        _, without = training.tune({"parallel": {}, "training": {}}, unknown,
                                   lambda c, times=times: times[key(c)])
        assert choice == without == {"vpp": 8}
        assert (1 in seen) == start_run and len(seen) == len(set(seen))
        # the tuner as it was: the start simulated first, a candidate whose bound is no
        # faster than the current time skipped
        current, old = 1, {1}
        for v in (2, 8):
            if bounds[v] < times[current]:
                old.add(v)
                current = v if times[v] < times[current] else current
        assert set(seen) <= old


def test_a_recompute_choice_is_ruled_in_by_the_setting_like_the_best_first(monkeypatch):
    """Whether a recompute choice is ruled out does not depend on the order its settings are
    bounded in: the one the fewest descended fields away from the best so far is bounded first,
    so where it alone is below the best, it is the only bound asked before that descent (in
    the candidate lists' order it is read last, after seven others). The choice is the one made
    without bounds."""
    _fake_configs(monkeypatch, lambda c: 70.0)
    unknown = {"recompute": ["none", "full"], "vpp": [1, 2, 4, 8], "mbs": [1, 2]}
    key = lambda c: (c.choice["recompute"], c.choice["vpp"], c.choice["mbs"])
    times = {(r, v, b): (10.0 if r == "none" else 10.5) - v * 0.5 - b * 0.25
             for r in unknown["recompute"] for v in unknown["vpp"] for b in unknown["mbs"]}
    times[("full", 8, 2)] = 5.0  # the fastest: only full recompute's descent finds it
    # (none, 8, 2) ends the first descent at 5.5; of full recompute's settings only (full, 8, 2)
    # is bounded below that
    bounds = {k: t - 1.0 if k[0] == "none" or k == ("full", 8, 2) else max(t - 1.0, 5.5)
              for k, t in times.items()}
    assert all(bounds[k] <= times[k] for k in times)
    asked: list[tuple] = []

    def bound(c):
        asked.append(key(c))
        return bounds[key(c)]

    raw = {"parallel": {}, "training": {}}
    _, choice = training.tune(raw, unknown, lambda c: times[key(c)], bound)
    _, without = training.tune(raw, unknown, lambda c: times[key(c)])
    assert choice == without == {"recompute": "full", "vpp": 8, "mbs": 2}
    assert min(times[k] for k in times if k[0] == "none") == 5.5
    first_full = next(i for i, k in enumerate(asked) if k[0] == "full")
    assert asked[first_full] == ("full", 8, 2)


def test_the_tuner_with_bounds_chooses_as_without_them_over_random_settings(monkeypatch):
    """Over random times, fits and bounds (each at most its time), the tuner with bounds makes
    the choice it makes without them, and simulates no setting more than once."""
    import random

    rng = random.Random(45)
    unknown = {"recompute": ["none", "selective", "full"], "vpp": [1, 2, 4], "mbs": [1, 2, 4]}
    key = lambda c: (c.choice["recompute"], c.choice["vpp"], c.choice["mbs"])
    for _ in range(200):
        fit = {k: rng.random() < 0.8 for k in itertools.product(*unknown.values())}
        _fake_configs(monkeypatch, lambda c, fit=fit: 70.0
                      if fit[(c["recompute"], c["vpp"], c["mbs"])] else 90.0)
        times = {k: rng.uniform(1.0, 2.0) for k in fit}
        bounds = {k: t * rng.choice((rng.uniform(0.5, 1.0), 1.0)) for k, t in times.items()}
        seen: list[tuple] = []

        def evaluate(c, times=times, seen=seen):
            seen.append(key(c))
            return times[key(c)]

        raw = {"parallel": {}, "training": {}}
        _, choice = training.tune(raw, unknown, evaluate, lambda c, b=bounds: b[key(c)])
        _, without = training.tune(raw, unknown, lambda c, t=times: t[key(c)])
        assert choice == without and len(seen) == len(set(seen))


def test_the_tuner_without_a_fitting_setting_returns_the_least_memory(monkeypatch):
    _fake_configs(monkeypatch, lambda c: 100.0 - c["vpp"])
    _, choice = training.tune({"parallel": {}, "training": {}}, {"vpp": [1, 2]},
                                lambda c: pytest.fail("nothing fits: nothing is simulated"))
    assert choice == {"vpp": 2}


def test_a_bug_on_one_row_fails_that_row_only(monkeypatch):
    """An unexpected exception while simulating a row is that row's error (named as a bug);
    the file's other rows are still predicted."""
    import csv

    from trainsim.validate import BUNDLED_DIR

    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        row = next(csv.DictReader(fh))

    def broken(cfg, **kwargs):
        raise IndexError("list index out of range")

    monkeypatch.setattr(training, "simulate", broken)
    res = training.predict_training_row(row)
    assert res.predicted is None and res.error.startswith("internal error: IndexError")


def test_an_moe_row_silent_on_ep_tries_every_expert_parallel_size_that_divides():
    row = {"model": "gpt-oss-120b", "gpu": "h100-sxm-80gb", "num_gpus": "64", "tp": "1",
           "pp": "1", "ep": "", "micro_batch_size": "1", "vpp": "1", "recompute": "full",
           "sequence_parallel": "0"}
    unknown = row_settings.unknowns(row, None)
    assert unknown["ep"] == [1, 2, 4, 8, 16, 32, 64]  # 128 experts over 64 ranks
    row.update(tp="2", num_gpus="16")
    assert row_settings.unknowns(row, None)["ep"] == [1, 2, 4, 8]
    row.update(ep="8")
    assert "ep" not in row_settings.unknowns(row, None)
    row.update(model="llama3-8b", ep="")
    assert "ep" not in row_settings.unknowns(row, None)  # dense: nothing to spread


def test_torchtitan_pipeline_defaults_fix_micro_batches_and_looped_stages():
    """torchtitan at 2024-12 (pipelining_utils.py @ 9dec370a) runs as many micro-batches as PP
    ranks and gives a looped schedule 2 stages per rank unless the user splits the layers:
    a row silent on both gets local batch / pp and vpp 1 or 2, not the whole tuned range."""
    row = {"model": "llama3.1-405b", "gpu": "h100-sxm-96gb-500w", "num_gpus": "512",
           "tp": "8", "pp": "8", "cp": "1", "global_batch_size": "256",
           "micro_batch_size": "", "vpp": "", "recompute": "full", "sequence_parallel": "1",
           "framework": "torchtitan", "framework_version": "2024-12"}
    unknown = row_settings.unknowns(row, row_settings.row_profile(row))
    assert unknown["micro_batch_size"] == [4]  # local batch 32 over 8 micro-batches
    assert unknown["vpp"] == [1, 2]
    later = dict(row, framework_version="2025-06")  # micro-batch size and layers per stage
    unknown = row_settings.unknowns(later, row_settings.row_profile(later))
    assert unknown["micro_batch_size"] == [1, 2, 4, 8]
    assert unknown["vpp"] == [1, 2, 3, 4, 6, 8]
    unpiped = dict(row, pp="1")
    assert row_settings.unknowns(unpiped, row_settings.row_profile(unpiped))["micro_batch_size"] == \
        [1, 2, 4, 8]


def test_a_megatron_core_row_stating_pipeline_overlap_interleaves_by_any_divisor_of_its_stages():
    """Megatron-core 0.8 overlaps pipeline sends only in the interleaved schedule (arguments.py
    turns overlap_p2p_comm off without --num-layers-per-virtual-pipeline-stage) and takes any
    divisor of the layers per stage: a row stating pp_overlap with 92 layers on pp 4 (23 per
    stage) is tuned over vpp 23 alone, 112 on pp 16 over 7, 96 on pp 6 over 2, 4, 8 and 16.
    Without the option, or on one layer per stage, the tuner keeps its short list."""
    row = {"model": "gpt-1.7b", "num_layers": "92", "gpu": "h100-sxm-80gb", "num_gpus": "1536",
           "tp": "8", "pp": "4", "cp": "1", "global_batch_size": "768", "micro_batch_size": "",
           "vpp": "", "recompute": "", "sequence_parallel": "1",
           "options": "tp_overlap;dp_overlap;pp_overlap", "framework": "megatron-core",
           "framework_version": "0.8"}
    profile = row_settings.row_profile(row)
    assert row_settings.unknowns(row, profile)["vpp"] == [23]
    assert row_settings.unknowns(dict(row, num_layers="112", pp="16"), profile)["vpp"] == [7]
    assert row_settings.unknowns(dict(row, num_layers="96", pp="6"), profile)["vpp"] == \
        [2, 4, 8, 16]
    short = [1, 2, 3, 4, 6, 8]
    assert row_settings.unknowns(dict(row, options="tp_overlap;dp_overlap"), profile)["vpp"] == \
        short
    assert row_settings.unknowns(dict(row, num_layers="4"), profile)["vpp"] == short
    assert row_settings.unknowns(dict(row, num_layers="90"), profile)["vpp"] == short  # uneven
