"""benchmarks/deepspeed_rows.py (issue 17 diagnostics): the replay of DeepSpeed v0.6.2's prefetch
gate on hand-sized stacks, the two-factor what-if on a known split, and the premise of the
synchronous what-if (the 2021-07 profile entry gathers per parameter where 0.6.2 prefetches)."""

from __future__ import annotations

import csv
from pathlib import Path

from helpers import load_script

from trainsim.validate.training import row_config

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = load_script(ROOT / "benchmarks" / "deepspeed_rows.py")


def test_replay_tensors_over_the_live_limit_are_never_prefetched():
    """Every tensor above stage3_max_live_parameters: the prefetch room is negative after each
    fetch, so every gather of the step is the fetch's own (the compute waits for each)."""
    gathers, elements, own, own_elements = SCRIPT.replay([2e9, 3e9], 4, 2.5e9, 1e9, 1e9)
    assert gathers == own and elements == own_elements
    assert gathers > 4 * 2  # forward, recompute and backward re-gathers


def test_replay_small_tensors_are_all_prefetched_but_the_first():
    """Tensors far below the limits: each fetch prefetches the next submodule, so only the
    step's first gather (the word embedding) is issued by a fetch."""
    gathers, _, own, _ = SCRIPT.replay([1e6, 2e6, 3e6], 6, 4e6, 1e9, 1e9)
    assert own == 1 and gathers > 1


def test_replay_reuse_distance_decides_the_regathers():
    """Unbounded reuse distance: nothing is released, each tensor is gathered once per step
    (3 per layer x 2 layers + the embedding). Reuse distance 0: only a tensor whose very next
    use is the next module stays (the head's forward then its backward, a layer's last tensor
    recomputed then run backward), so the 22-step trace takes 22 - 3 gathers."""
    gathers, *_ = SCRIPT.replay([1e6, 2e6, 3e6], 2, 4e6, 1e18, 1e18)
    assert gathers == 3 * 2 + 1
    gathers, *_ = SCRIPT.replay([1e6, 2e6, 3e6], 2, 4e6, 1e18, 0.0)
    trace = 1 + 3 * 2 + 2 + 2 * 6 + 1
    assert gathers == trace - 3


def test_two_factor_recovers_a_known_split():
    group = [(f"r{i}", {"compute": c, "predicted": c + r, "measured": 1.3 * c + 0.7 * r})
             for i, (c, r) in enumerate([(10.0, 5.0), (4.0, 9.0), (7.0, 1.0)])]
    a, b, residuals = SCRIPT.two_factor(group)
    assert abs(a - 1.3) < 1e-9 and abs(b - 0.7) < 1e-9
    assert max(abs(e) for e in residuals) < 1e-9


def test_the_synchronous_what_if_changes_only_the_gather_path():
    """The Azure 530B row prefetches coalesced gathers per block (DeepSpeed 0.6.2); run as the
    2021-07 entry it gathers per parameter, same model, layout and batch."""
    with open(ROOT / "benchmarks" / "training_deepspeed.csv", newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == "dsazure-530b-512gpu-mbs8")
    as_given = row_config(row)
    sync = row_config(dict(row) | {"framework_version": SCRIPT.SYNC_PATH_VERSION})
    assert as_given.parallel.zero3_gather == "per_block"
    assert sync.parallel.zero3_gather == "per_parameter"
    same = ("tp", "pp", "zero_stage")
    assert [getattr(sync.parallel, k) for k in same] == \
        [getattr(as_given.parallel, k) for k in same]
    assert (sync.model, sync.dp, sync.num_microbatches) == \
        (as_given.model, as_given.dp, as_given.num_microbatches)


def test_replay_v0313_gate_prefetches_while_under_the_live_limit():
    """v0.3.13 (stage3.py prefetch_next_sub_modules): small tensors are prefetched after every
    fetch, so only the step's first gather is the fetch's own; tensors each over
    stage3_max_live_parameters leave the counter over the limit after every fetch, so none is
    prefetched."""
    gathers, _, own, _ = SCRIPT.replay([1e6, 2e6, 3e6], 6, 4e6, 1e9, 1e9, gate="0.3.13")
    assert own == 1 and gathers > 1
    gathers, elements, own, own_elements = SCRIPT.replay([2e9, 3e9], 4, 2.5e9, 1e9, 1e9,
                                                         gate="0.3.13")
    assert gathers == own and elements == own_elements


def test_prefetch_what_if_hides_only_gather_wire_time():
    """The what-if takes each pass's gather wire time off, at most the pass's compute, and
    leaves the compute and the host work alone; share 0 is the model as it stands, and the
    patched function is put back."""
    import trainsim.sharded_passes as sp

    with open(ROOT / "src" / "trainsim" / "data" / "validation" / "training_public.csv",
              newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == "megatron21-t2-zero3-174.6B-384")
    base = SCRIPT.parts(row)
    orig = sp.blocking_gathers
    with SCRIPT.prefetch_hidden(0.0):
        same = SCRIPT.parts(row)
    with SCRIPT.prefetch_hidden(1.0):
        hidden = SCRIPT.parts(row)
    assert sp.blocking_gathers is orig
    assert SCRIPT.parts(row)["predicted"] == base["predicted"]  # nothing kept from the what-if
    assert abs(same["predicted"] - base["predicted"]) < 1e-9
    assert hidden["compute"] == base["compute"]
    assert 0 < base["predicted"] - hidden["predicted"] <= base["comm"]
