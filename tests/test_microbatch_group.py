"""Megatron-core's interleaved schedule with micro-batch groups of N per virtual stage
(``--microbatch-group-size-per-virtual-pipeline-stage``, core_v0.10.0+): the simulated order
of every stage against the schedule table written out here from Megatron's code, the checks
it makes, activations in flight, and the framework profiles and tuner that use it.

The reference below follows NVIDIA/Megatron-LM core_v0.12.0
megatron/core/pipeline_parallel/schedules.py, written out independently of trainsim:
``get_schedule_table`` (groups of N micro-batches, chunk-major within a group, the last group
what is left), ``get_pp_rank_microbatches`` (warm-up ``(pp - rank - 1) * 2 + (vpp - 1) * N``,
at most all), ``get_model_chunk_id`` (a backward runs the mirrored chunk of the same table
entry) and the steady loop of ``forward_backward_pipelining_with_interleaving`` (forward k +
warm-up, then backward k; then the remaining backwards).
"""

from __future__ import annotations

import pytest

import trainsim
from trainsim.errors import ConfigError
from trainsim.memory.estimate import activation_bytes_per_layer, estimate_stage_memory
from trainsim.validate.row_settings import training_base, unknowns
from trainsim.workload.schedule import microbatch_group, schedule, schedule_peak_in_flight

EXAMPLE = "examples/llama3-8b-h100.yaml"


def megatron_order(rank: int, pp: int, vpp: int, m: int, n: int) -> list[str]:
    """One rank's passes as 'F mb c' / 'B mb c', from Megatron's table and loop."""
    table = []  # get_schedule_table
    for first in range(0, m, n):
        last = min(m, first + n)  # 'if min_id + N >= num_microbatches': the last group
        table += [(mb, c) for c in range(vpp) for mb in range(first, last)]
    total = m * vpp  # get_pp_rank_microbatches
    warmup = min((pp - rank - 1) * 2 + (vpp - 1) * n, total)

    def fwd(k):
        mb, c = table[k]
        return f"F {mb} {c}"

    def bwd(k):
        mb, c = table[k]
        return f"B {mb} {vpp - 1 - c}"

    out = [fwd(k) for k in range(warmup)]
    for k in range(total - warmup):
        out += [fwd(k + warmup), bwd(k)]
    return out + [bwd(k) for k in range(total - warmup, total)]


def test_reference_reproduces_megatrons_docstring_example():
    """The reference gives the order Megatron's convert_schedule_table_to_order docstring prints
    for PP 2, VP 2, N 3, M 5 with 5 warm-up passes (1/2: forward of chunk 0/1; -2/-1: backward
    of chunk 1/0; backward_order = chunk_id - num_model_chunks of the same table entry)."""
    code = {"F": lambda c: str(c + 1), "B": lambda c: str(c - 2)}
    got = [code[p.split()[0]](int(p.split()[2])) for p in megatron_order(0, 2, 2, 5, 3)]
    # the docstring's backward code names the table's chunk, not the mirrored one it runs
    got = [str(-3 - int(x)) if x.startswith("-") else x for x in got]
    assert " ".join(got) == "1 1 1 2 2 2 -2 1 -2 1 -2 2 -1 2 -1 -1 -2 -2 -1 -1"


def _cfg(pp, vpp, m, n=None, *extra):
    sets = ["parallel.tp=1", f"parallel.pp={pp}", f"parallel.vpp={vpp}",
            f"training.global_batch_size={m}", "training.micro_batch_size=1",
            f"cluster.num_gpus={pp}", f"model.num_layers={pp * vpp}",
            "parallel.overlap_grad_reduce=false", "parallel.overlap_param_gather=false"]
    if n is not None:
        sets.append(f"parallel.microbatch_group_size_per_vp_stage={n}")
    return trainsim.load_run_config(EXAMPLE, sets + list(extra))


@pytest.mark.parametrize("pp,vpp,m,n", [(4, 2, 8, 4), (4, 2, 8, 8), (4, 2, 10, 5), (4, 2, 9, 5),
                                        (2, 2, 5, 3), (2, 3, 8, 3), (4, 3, 12, 6)])
def test_simulated_order_on_every_stage_is_megatrons_table(pp, vpp, m, n):
    """The event engine runs each stage's passes in the order of Megatron's table (its compute
    stream's forwards and backwards by start time), including a last group shorter than N
    (m 9, N 5) and the Llama 3 paper's example (PP 4, M 10, N 5)."""
    tl = trainsim.simulate(_cfg(pp, vpp, m, n), keep_timeline=True).timeline
    for rank in range(pp):
        idx = [i for i, t in enumerate(tl.tasks) if t.stream == (rank, "compute")
               and t.label.split()[0] in ("F", "B")]
        got = []
        for i in sorted(idx, key=lambda i: tl.start_s[i]):
            kind, mb, chunk = tl.tasks[i].label.split()[:3]  # 'F mb3 c1'
            got.append(f"{kind} {mb[2:]} {chunk[1:]}")
        assert got == megatron_order(rank, pp, vpp, m, n), rank


def test_default_group_is_pp_and_unset_keeps_the_order_before_0_10():
    """N = pp gives the order trainsim ran before (groups of pp); with m == pp, Megatron before
    core_v0.10.0 ran every forward first, from 0.10 on the table's warm-up holds."""
    for rank in range(4):
        assert schedule(rank, 4, 2, 8, group=4) == schedule(rank, 4, 2, 8)
    assert [p.kind for p in schedule(3, 4, 2, 4)] == ["F"] * 8 + ["B"] * 8
    got = [f"{p.kind} {p.microbatch} {p.chunk}" for p in schedule(3, 4, 2, 4, group=4)]
    assert got == megatron_order(3, 4, 2, 4, 4)
    assert got[:6] == ["F 0 0", "F 1 0", "F 2 0", "F 3 0", "F 0 1", "B 0 1"]


@pytest.mark.parametrize("n,match", [(2, r"\[pp=4, micro-batches=8\]"),
                                     (3, r"\[pp=4, micro-batches=8\]"),
                                     (5, "last group of 3"), (9, "micro-batches=8"),
                                     (0, "positive")])
def test_megatrons_checks(n, match):
    """pp <= N <= m and m % N either 0 or >= pp (schedules.py), N >= 1; one-line errors."""
    with pytest.raises(ConfigError, match=match) as err:
        _cfg(4, 2, 8, n)
    assert "\n" not in str(err.value)


def _deadlocks(pp, vpp, m, n):
    """Whether the stages' orders, run with each pass waiting on its neighbour's, get stuck."""
    orders = [schedule(s, pp, vpp, m, group=n) for s in range(pp)]
    done, cur, nv = set(), [0] * pp, pp * vpp
    while any(cur[s] < len(orders[s]) for s in range(pp)):
        moved = False
        for s in range(pp):
            while cur[s] < len(orders[s]):
                p = orders[s][cur[s]]
                v = p.chunk * pp + s
                dep = (("F", p.microbatch, v - 1) if v else None) if p.kind == "F" else (
                    ("B", p.microbatch, v + 1) if v < nv - 1 else ("F", p.microbatch, v))
                if dep is not None and dep not in done:
                    break
                done.add((p.kind, p.microbatch, v))
                cur[s] += 1
                moved = True
        if not moved:
            return True
    return False


def test_groups_below_pp_deadlock_which_is_why_megatron_refuses_them():
    """The checks are what keep the order runnable: the cases asked about, N 2 and 3 with
    pp 4, vpp 2 and m 8, are refused above and their orders get stuck (each rank's next
    forward waits for a micro-batch that is still coming round the pipeline while the
    backward it must pair with waits on it); every case the checks accept runs."""
    assert _deadlocks(4, 2, 8, 2) and _deadlocks(4, 2, 8, 3)
    for pp in (2, 3, 4):
        for vpp in (2, 3):
            for m in range(pp, 3 * pp + 1):
                for n in range(pp, m + 1):
                    if not 0 < m % n < pp:
                        assert not _deadlocks(pp, vpp, m, n), (pp, vpp, m, n)
    # fewer micro-batches than stages, as one group (the flexible rule), runs too
    assert not any(_deadlocks(4, 2, m, m) for m in (1, 2, 3))


def test_activations_in_flight_follow_the_warmup():
    """A middle stage (uniform one-layer chunks) holds 2 (pp-1-rank) + (vpp-1) N + 1
    micro-batch-chunks at its peak: 9 with N 4, 13 with N 8, 21 with N 16 (pp 4, vpp 2,
    rank 1, 16 micro-batches)."""
    per_layer = activation_bytes_per_layer(_cfg(4, 2, 16))
    for n, held in ((4, 9), (8, 13), (16, 21)):
        cfg = _cfg(4, 2, 16, n)
        assert estimate_stage_memory(cfg, 1).activations == pytest.approx(held * per_layer)
        assert schedule_peak_in_flight(1, 4, 2, 16, group=n) == held


def test_weighted_peak_equals_the_walk_with_groups():
    """The O(N vpp) weighted peak equals the walk over the whole order, with N dividing m and
    not (a short last group)."""
    from trainsim.workload.schedule import peak_in_flight

    for pp, vpp, m, n in ((4, 2, 16, 8), (4, 3, 12, 6), (4, 2, 9, 5), (2, 3, 8, 3)):
        weight = {0: 3.0, 1: 1.0, 2: 2.5}
        for rank in range(pp):
            order = schedule(rank, pp, vpp, m, group=n)
            assert schedule_peak_in_flight(rank, pp, vpp, m, weight=weight, group=n) == \
                pytest.approx(peak_in_flight(order, weight), rel=1e-14)


def test_steady_state_shortcut_agrees_with_the_full_run():
    """A long iteration with N = 2 pp takes the periodic shortcut (period N micro-batches) and
    matches the full simulation; a short last group is simulated in full."""
    cfg = _cfg(4, 2, 400, 8)
    short = trainsim.simulate(cfg)
    assert short.simulation["method"] == "steady-state"
    full = trainsim.simulate(cfg, keep_timeline=True)
    assert short.iteration_time_s == pytest.approx(full.iteration_time_s, rel=1e-9)
    odd = trainsim.simulate(_cfg(4, 2, 404, 8))
    assert "short last group" in odd.simulation["reason"]


def test_profiles_and_the_tuner():
    """Megatron-core has the flag from 0.10 (before: an error); Llama 3's stack runs m < pp
    as one group and its rows tune N; a row of another framework does not."""
    base = ["training.framework=megatron-core"]
    with pytest.raises(ConfigError, match="microbatch_group_size_per_vp_stage is not in"):
        _cfg(4, 2, 8, 8, *base, "training.framework_version=core_v0.9.0")
    assert _cfg(4, 2, 8, 8, *base, "training.framework_version=core_v0.10.0").parallel \
        .microbatch_group_rule == "megatron"
    # Megatron-LM from 4295be1a (2024-11-01); before it, N is not a flag
    with pytest.raises(ConfigError, match="microbatch_group_size_per_vp_stage is not in"):
        _cfg(4, 2, 8, 8, "training.framework=megatron-lm", "training.framework_version=2024-09")
    assert _cfg(4, 2, 8, None, "training.framework=megatron-lm",
                "training.framework_version=2025-01").parallel.microbatch_group_rule == "megatron"
    for version in ("25.09", "26.06"):  # Megatron-Bridge runs Megatron-core >= 0.14
        assert _cfg(4, 2, 8, None, "training.framework=megatron-bridge",
                    f"training.framework_version={version}").parallel \
            .microbatch_group_rule == "megatron"
    with pytest.raises(ConfigError, match="multiple"):
        _cfg(4, 2, 2)  # no framework: m % pp == 0 as before
    # (the example's distributed optimizer is no stage of meta-llama3's FSDP2: its ZeRO-2)
    meta = _cfg(4, 2, 2, None, "training.framework=meta-llama3",
                "parallel.zero_stage=2")  # 2 micro-batches, pp 4
    assert meta.parallel.microbatch_group_rule == "flexible" and microbatch_group(meta) == 2
    with pytest.raises(ConfigError, match="one group, N = 2"):
        _cfg(4, 2, 2, 4, "training.framework=meta-llama3", "parallel.zero_stage=2")
    row = {"id": "x", "model": "llama3-8b", "gpu": "h100-sxm-80gb", "num_gpus": "64",
           "gpus_per_node": "8", "tp": "8", "pp": "4", "global_batch_size": "64",
           "seq_length": "8192", "measured_iteration_s": "1", "framework": "meta-llama3"}
    _, unknown = training_base(row)
    assert unknown["microbatch_group_size_per_vp_stage"] == [None, 8, 16]
    from trainsim.catalog.frameworks import framework_profile
    assert "microbatch_group_size_per_vp_stage" not in unknowns(
        dict(row, framework="megatron-core"), framework_profile("megatron-core", "0.12"))
