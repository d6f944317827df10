"""torch's ScheduleLoopedBFS (breadth-first pipeline, issue 20): its order on every stage
against the one read from torch's source, the memory it holds, the data-parallel overlap it
allows, and which frameworks run it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import trainsim
from tests.test_pipeline_schedules import engine_run, fmt
from trainsim.config.parallel import schedule_name
from trainsim.errors import ConfigError
from trainsim.workload.pipeline_schedules import orders, rank_of, virtual_stage
from trainsim.workload.pipeline_schedules_bfs import looped_bfs_peak
from trainsim.workload.schedule import peak_in_flight, schedule, schedule_peak_in_flight

EXAMPLE = "examples/llama3-8b-h100.yaml"

# torch v2.13.0 torch/distributed/pipelining/schedules.py L2706-L2732,
# ScheduleLoopedBFS._calculate_single_rank_operations for pp 2, 2 stages a rank, 3 micro-batches,
# its None padding dropped: rank 0 runs stages 0 and 2, rank 1 stages 1 and 3 (upper case: the
# rank's first stage, lower case its second; F forward, B FULL_BACKWARD, the micro-batch after)
TORCH_PP2_VPP2_M3 = "F0 F1 F2 f0 f1 f2 b2 b1 b0 B2 B1 B0"


def _cfg(*extra: str, schedule: str = "LoopedBFS"):
    sets = ["parallel.tp=1", "parallel.pp=2", "training.global_batch_size=16",
            "training.micro_batch_size=1", "cluster.num_gpus=4", "model.num_layers=8",
            "parallel.vpp=2", f"parallel.pipeline_schedule={schedule}"]
    return trainsim.load_run_config(EXAMPLE, sets + list(extra))


def test_order_matches_torch_source_on_every_stage():
    """Every rank runs all forwards of its first stage, then of its second, then the
    backwards from its last stage down, each stage's micro-batches last to first; rank r
    holds stages r and r + pp."""
    plan = orders("looped_bfs", 2, 2, 3)
    assert [fmt(o) for o in plan] == [TORCH_PP2_VPP2_M3] * 2
    assert [[virtual_stage("looped_bfs", r, c, 2) for c in (0, 1)] for r in (0, 1)] == \
        [[0, 2], [1, 3]]
    assert [rank_of("looped_bfs", v, 0, 2) for v in range(4)] == [0, 1, 0, 1]


@pytest.mark.parametrize("pp,vpp,m", [(1, 1, 3), (2, 1, 4), (2, 2, 3), (3, 2, 5), (4, 3, 2),
                                      (4, 2, 8)])
def test_order_is_torchs_own_where_torch_is_installed(pp, vpp, m):
    """The installed torch's own ``_calculate_single_rank_operations`` gives the same (stage,
    pass, micro-batch) sequence on every rank."""
    sched = pytest.importorskip("torch.distributed.pipelining.schedules")
    for rank, ours in enumerate(orders("looped_bfs", pp, vpp, m)):
        state = SimpleNamespace(_stages=[None] * vpp, pp_group_size=pp, _n_microbatches=m)
        theirs = [a for a in sched.ScheduleLoopedBFS._calculate_single_rank_operations(
            state, rank) if a is not None]
        kinds = {sched._ComputationType.FORWARD: "F", sched._ComputationType.FULL_BACKWARD: "B"}
        assert [(a.stage_index, kinds[a.computation_type], a.microbatch_index)
                for a in theirs] == \
            [(virtual_stage("looped_bfs", rank, p.chunk, pp), p.kind, p.microbatch) for p in ours]


def test_torch_reduces_a_stage_after_its_backward_of_microbatch_0():
    """torch's runtime places a stage's REDUCE_GRAD after its m-th backward (counted), which in
    this order is micro-batch 0's: the last backward the engine releases the reduction at."""
    sched = pytest.importorskip("torch.distributed.pipelining.schedules")
    state = SimpleNamespace(_stages=[None] * 2, pp_group_size=2, _n_microbatches=3)
    ops = sched._add_reduce_grad(
        sched.ScheduleLoopedBFS._calculate_single_rank_operations(state, 1), 3)
    at = [i for i, a in enumerate(ops) if a.computation_type == sched._ComputationType.REDUCE_GRAD]
    assert [(ops[i].stage_index, ops[i - 1].stage_index, ops[i - 1].microbatch_index)
            for i in at] == [(3, 3, 0), (1, 1, 0)]


@pytest.mark.parametrize("text", ["LoopedBFS", "ScheduleLoopedBFS", "looped-bfs", "LOOPED_BFS"])
def test_torchtitan_spellings_name_it(text):
    """torch's get_schedule_class name and class name, in any case, name the schedule."""
    assert schedule_name(text) == "looped_bfs"


def test_any_number_of_chunks_and_microbatches():
    """torch takes the stages it is given: one per rank, or three, and micro-batches that
    the pipeline size does not divide (no interleaved 1F1B check)."""
    assert _cfg("parallel.vpp=1").parallel.vpp == 1
    assert _cfg("parallel.vpp=4").parallel.vpp == 4
    assert _cfg("training.global_batch_size=6").num_microbatches == 3
    with pytest.raises(ConfigError, match="multiple of pipeline_model_parallel_size"):
        _cfg("training.global_batch_size=6", schedule="interleaved_1f1b")


def test_bubble_is_pp_minus_1_chunk_passes_with_enough_microbatches():
    """Equal passes, free sends, m >= pp: every rank streams its m vpp forwards and backwards
    without a gap once the first arrives, so the makespan is (m vpp + pp - 1)(t_f + t_b)."""
    for pp, vpp, m in [(2, 2, 3), (4, 2, 4), (4, 3, 6), (3, 1, 5)]:
        makespan, started = engine_run("looped_bfs", pp, m, t_f=1.0, t_i=1.5, t_w=0.5, vpp=vpp)
        assert makespan == pytest.approx((m * vpp + pp - 1) * 3.0)
        assert started == [fmt(o) for o in orders("looped_bfs", pp, vpp, m)]
    slow, _ = engine_run("looped_bfs", 4, 2, vpp=2)  # m < pp: the loop back waits
    assert slow > (2 * 2 + 3) * 3.0


def test_holds_every_microbatch_of_every_chunk():
    """No backward runs before the last forward: the peak is m times the rank's chunk weights,
    in O(vpp) steps, the walk's value (negative weights too)."""
    for m, w in [(5, {0: 1.0, 1: 2.5}), (7, {0: 3.0, 1: -1.0, 2: 0.5}), (3, {0: -2.0, 1: 4.0})]:
        vpp = len(w)
        walk = peak_in_flight(schedule(0, 4, vpp, m, "looped_bfs"), w)
        assert looped_bfs_peak(m, w, vpp) == pytest.approx(walk)
        assert schedule_peak_in_flight(1, 4, vpp, m, "looped_bfs", weight=w) == \
            pytest.approx(walk)
    assert schedule_peak_in_flight(0, 4, 3, 9, "looped_bfs") == 27.0
    assert looped_bfs_peak(9, {0: 1.0, 1: 2.0}, 2) == 27.0


def test_memory_is_gpipes_at_one_chunk_and_above_interleaved():
    """End to end: at one chunk a rank holds what GPipe holds; at two, more than interleaved
    1F1B's warm-up holds."""
    one = trainsim.simulate(_cfg("parallel.vpp=1"))
    assert one.peak_memory_bytes == trainsim.simulate(
        _cfg("parallel.vpp=1", schedule="gpipe")).peak_memory_bytes
    two = trainsim.simulate(_cfg())
    assert two.peak_memory_bytes > trainsim.simulate(
        _cfg(schedule="interleaved_1f1b")).peak_memory_bytes


def _rank_tasks(cfg, s):
    tl = trainsim.simulate(cfg, keep_timeline=True).timeline
    return [(t, tl.start_s[i], tl.start_s[i] + t.duration_s)
            for i, t in enumerate(tl.tasks) if t.stream[0] == s]


def test_gradient_reduction_follows_each_chunks_last_backward():
    """Each chunk's gradients are reduced in its backward of micro-batch 0 (its last: the graph
    labels it "last"), after every other backward of the chunk, so the last chunk's reduction
    runs while the first chunk still computes its backwards."""
    cfg = _cfg("parallel.distributed_optimizer=true", "parallel.overlap_grad_reduce=true")
    assert cfg.dp == 2
    for s in range(2):
        tasks = _rank_tasks(cfg, s)
        compute = [(t.label, b, e) for t, b, e in tasks if t.stream[1] == "compute"]
        assert not any(lb.startswith("B mb0 ") for lb, _, _ in compute)
        last = {c: min(b for lb, b, _ in compute if lb.startswith(f"B last c{c} ")) for c in (0, 1)}
        others = {c: max(e for lb, _, e in compute if lb.startswith("B mb") and
                         lb.endswith(f" c{c}")) for c in (0, 1)}
        reduce = {c: min(b for t, b, _ in tasks if t.stream[1] == "dp" and "grad" in t.label
                         and f" c{c} " in t.label) for c in (0, 1)}
        for c in (0, 1):
            assert others[c] <= last[c] < reduce[c]
        assert reduce[1] < others[0]  # hidden behind chunk 0's backwards


# torch 2.13.0's _add_unshard_reshard (max_active_stages 3) on its own ScheduleLoopedBFS order
# of rank 0, pp 2, 4 local stages (0, 2, 4, 6), 2 micro-batches, as its _Action strings print:
# stage 0 leaves the window once the forwards reach stage 6 and is gathered again for the
# backwards once stage 6's are done
RANK0_PP2_VPP4_M2 = (
    "0UNSHARD 2UNSHARD 4UNSHARD 0F0 0F1 0RESHARD 6UNSHARD 2F0 2F1 4F0 4F1 6F0 6F1 6B1 6B0 "
    "6RESHARD 0UNSHARD 4B1 4B0 4RESHARD 2B1 2B0 2RESHARD 0B1 0B0 0RESHARD")


def _lowered_as_torch(rank: int, pp: int, vpp: int, m: int) -> str:
    from trainsim.workload.unshard_window import lowered

    order = schedule(rank, pp, vpp, m, "looped_bfs")
    events, left = lowered(order, 3)
    words = []
    for p, (out, new) in zip(order, events):
        words += [f"{c * pp + rank}RESHARD" for c in out] + [f"{c * pp + rank}UNSHARD" for c in new]
        words.append(f"{p.chunk * pp + rank}{p.kind}{p.microbatch}")
    return " ".join(words + [f"{c * pp + rank}RESHARD" for c in left])


def test_torchs_runtime_window_lowers_the_order_as_torch_does():
    """The window of gathered stages (``workload.unshard_window``) lowers this order as
    torch's _add_unshard_reshard does: by the string read from torch, and, where torch is
    installed, by torch's own function on its own order."""
    assert _lowered_as_torch(0, 2, 4, 2) == RANK0_PP2_VPP4_M2
    sched = pytest.importorskip("torch.distributed.pipelining.schedules")
    assert issubclass(sched.ScheduleLoopedBFS, sched._PipelineScheduleRuntime)
    for pp, vpp, m in [(2, 4, 2), (2, 5, 3), (4, 4, 4), (3, 2, 5)]:
        for rank in range(pp):
            state = SimpleNamespace(_stages=[None] * vpp, pp_group_size=pp, _n_microbatches=m)
            ops = sched.ScheduleLoopedBFS._calculate_single_rank_operations(state, rank)
            assert " ".join(str(a) for a in sched._add_unshard_reshard(ops)) == \
                _lowered_as_torch(rank, pp, vpp, m)


def test_torchtitan_fsdp_run_reduces_and_regathers_per_stage():
    """torchtitan with FSDP (dp 2, pp 2, 4 stages a rank): simulated, each stage's gradients
    reduce-scattered after its backward of micro-batch 0, and stage 0 gathered a second time
    for its backwards (the window of 3)."""
    cfg = _cfg("training.framework=torchtitan", "parallel.vpp=4",
               "training.global_batch_size=8")
    assert cfg.dp == 2 and cfg.parallel.data_parallel_impl == "fsdp2"
    tasks = _rank_tasks(cfg, 0)
    dp = [(t.label, b) for t, b, _ in tasks if t.stream[1] == "dp"]
    assert [lb for lb, _ in dp if "UNSHARD" in lb] == [
        f"FSDP UNSHARD all-gather dp_cp chunk {c}" for c in (0, 1, 2, 3, 0)]
    ends = [e for t, _, e in tasks if t.label.startswith("B last c")]
    reduces = [b for lb, b in dp if "grad reduce-scatter" in lb]
    assert len(reduces) == 4 and all(r >= e for r, e in zip(reduces, ends))
    for c in range(4):  # the "last" backward is the chunk's last: micro-batch 0's
        first = min(b for t, b, _ in tasks if t.label.startswith(f"B last c{c}"))
        assert all(e <= first for t, _, e in tasks if t.label.startswith("B mb")
                   and t.label.endswith(f" c{c}"))


@pytest.mark.parametrize("framework", ["megatron-lm", "megatron-bridge", "deepspeed"])
def test_refused_where_the_framework_does_not_run_it(framework):
    """Megatron and DeepSpeed have no looped BFS: refused in one line naming the profile key."""
    with pytest.raises(ConfigError, match="ScheduleLoopedBFS") as err:
        _cfg(f"training.framework={framework}", "parallel.sequence_parallel=false",
             "parallel.vpp=1")
    assert "\n" not in str(err.value)


def test_torchtitan_runs_it_from_october_2024():
    """torchtitan takes any torch schedule name from 205983a09 (2024-10-10); its July 2024
    choices did not list LoopedBFS."""
    assert _cfg("training.framework=torchtitan").parallel.pipeline_schedule == "looped_bfs"
    assert _cfg("training.framework=torchtitan",
                "training.framework_version=2024-10").parallel.pipeline_schedule == "looped_bfs"
    with pytest.raises(ConfigError, match="torchtitan 2024-07"):
        _cfg("training.framework=torchtitan", "training.framework_version=2024-07")


def test_search_offers_it_at_any_chunk_count_and_refuses_it_under_megatron():
    """``--schedules`` takes it at vpp 1 and more; a framework without it is refused."""
    from trainsim.search.rules import schedules_fit
    from trainsim.search.space import SearchSpace

    assert [schedules_fit(("looped_bfs",), 4, v, 8) for v in (1, 2, 3)] == [("looped_bfs",)] * 3
    base = SimpleNamespace(framework=("megatron-lm", None), model=SimpleNamespace(
        hybrid_layer_pattern=None))
    with pytest.raises(ConfigError, match="--schedules looped_bfs: megatron-lm"):
        SearchSpace(schedules=("looped_bfs",)).held_by(base)


def test_steady_state_shortcut_takes_it_exactly():
    """The periodic shortcut (``steady_bfs``: a period in every chunk's run) proves it from two
    truncated runs, within 1e-9 of the whole iteration simulated (tests/test_steady_bfs.py)."""
    from helpers import assert_same_simulation

    from trainsim.steady_state import plan

    cfg = _cfg("training.global_batch_size=512", "training.framework=torchtitan")
    found, why = plan(cfg)
    assert found is not None and found.m_a == 4 and why == ""
    fast = trainsim.simulate(cfg)
    assert fast.simulation["method"] == "steady-state", fast.simulation
    assert_same_simulation(fast, trainsim.simulate(cfg, keep_timeline=True))


def test_search_schedule_bound_stays_below_the_simulation():
    """The search's busiest-compute-stream bound for a named schedule (the layers' F and B
    passes of each rank's order) never exceeds the simulated iteration, FSDP included."""
    from trainsim.search.schedule_bound import layer_pass_s, layered_busy_s

    for cfg in (_cfg("training.framework=torchtitan", "parallel.vpp=4",
                     "training.global_batch_size=8"),
                _cfg("parallel.distributed_optimizer=true"),
                _cfg("training.framework=torchtitan", "parallel.vpp=1")):
        bound = max(layered_busy_s(cfg, lambda kind, c=cfg: layer_pass_s(c, kind)))
        assert 0 < bound <= trainsim.simulate(cfg).iteration_time_s
