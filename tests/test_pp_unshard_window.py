"""torch's pipeline runtime and FSDP (profile ``pp_unshard_window``, torchtitan from 2026-01):
from torch 2.10.0 ScheduleInterleaved1F1B lowers its compute order with _add_unshard_reshard
(max_active_stages=3): the next three local stages are all-gathered from the step's start,
before any receive wait, and a stage leaving that window is resharded and gathered again
(``workload.unshard_window``)."""

from __future__ import annotations

import types

import pytest

import trainsim.workload.unshard_window as window_mod
from trainsim.catalog import run_config_from_dict
from trainsim.catalog.frameworks import profile_supports
from trainsim.engine import run
from trainsim.memory import cache_clear, estimate_stage_memory
from trainsim.model.counts import layer_params
from trainsim.pricing import DP, Pricer
from trainsim.simulator import build_graph
from trainsim.workload.schedule import schedule
from trainsim.workload.unshard_window import lowered, unshard_window

# torch 2.13.0's _add_unshard_reshard on its own ScheduleInterleaved1F1B order of rank 0, pp 2,
# 4 local stages (global stages 0, 2, 4, 6), 4 micro-batches, as its _Action strings print.
# By hand, the first steps: before 0F0 the next three distinct stages are 0, 2, 4 (UNSHARD all);
# before 2F0 they are 2, 4, 6: 0 leaves (RESHARD), 6 enters; before 4F0 they are 4, 6, 0: 2
# leaves and 0 is gathered again, so stage 0 is gathered twice before its third micro-batch.
RANK0_PP2_VPP4_M4 = (
    "0UNSHARD 2UNSHARD 4UNSHARD 0F0 0F1 0RESHARD 6UNSHARD 2F0 2F1 2RESHARD 0UNSHARD 4F0 4F1 "
    "4RESHARD 2UNSHARD 6F0 6F1 0F2 6B0 0F3 0RESHARD 4UNSHARD 6B1 2F2 4B0 2F3 4B1 4F2 2B0 4F3 "
    "4RESHARD 0UNSHARD 2B1 2RESHARD 4UNSHARD 6F2 0B0 6F3 0B1 0RESHARD 2UNSHARD 6B2 6B3 "
    "6RESHARD 0UNSHARD 4B2 4B3 4RESHARD 2B2 2B3 2RESHARD 0B2 0B3 0RESHARD")


def _as_torch(rank: int, pp: int, vpp: int, m: int, window: int = 3) -> str:
    """trainsim's lowering of rank ``rank``'s order, written as torch's _Action strings."""
    order = schedule(rank, pp, vpp, m, torch_warmup=True)
    events, left = lowered(order, window)
    words = []
    for p, (out, new) in zip(order, events):
        words += [f"{c * pp + rank}RESHARD" for c in out]
        words += [f"{c * pp + rank}UNSHARD" for c in new]
        words.append(f"{p.chunk * pp + rank}{p.kind}{p.microbatch}")
    words += [f"{c * pp + rank}RESHARD" for c in left]
    return " ".join(words)


def test_lowering_of_a_four_stage_rank_as_torch_lowers_it():
    assert _as_torch(0, 2, 4, 4) == RANK0_PP2_VPP4_M4


def test_within_the_window_each_chunk_is_gathered_once_at_the_start():
    order = schedule(1, 4, 3, 8, torch_warmup=True)
    events, left = lowered(order, 3)
    assert events[0] == ((), (0, 1, 2))
    assert all(new == () for _, new in events[1:])  # never gathered again
    last = {p.chunk: k for k, p in enumerate(order)}
    for k, (out, _) in enumerate(events):  # released only once its last pass has run
        assert all(last[c] < k for c in out)
    assert sorted(left + tuple(c for out, _ in events for c in out)) == [0, 1, 2]


def test_a_window_below_one_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        lowered(schedule(0, 2, 2, 2, torch_warmup=True), 0)


def _torch_rank_ops(schedules, rank: int, pp: int, vpp: int, m: int) -> list:
    rounds = max(1, m // pp)
    ns = types.SimpleNamespace(n_local_stages=vpp, pp_group_size=pp, _n_microbatches=m,
                               number_of_rounds=rounds, microbatches_per_round=m // rounds)
    return schedules.ScheduleInterleaved1F1B._calculate_single_rank_operations(ns, rank)


@pytest.mark.parametrize(("pp", "vpp", "m"), [(2, 4, 4), (2, 5, 6), (4, 4, 8), (4, 2, 8),
                                              (3, 6, 3), (8, 8, 16)])
def test_the_lowering_is_torchs_own(pp, vpp, m):
    """torch's _add_unshard_reshard is pure Python over _Action lists: called on its own
    interleaved order (no process group), it gives what ``lowered`` gives on trainsim's."""
    torch = pytest.importorskip("torch")
    from torch.distributed.pipelining import schedules
    if tuple(int(x) for x in torch.__version__.split(".")[:2]) < (2, 10):
        pytest.skip("the runtime interleaved schedule is torch >= 2.10")
    for rank in range(pp):
        ops = _torch_rank_ops(schedules, rank, pp, vpp, m)
        mine = schedule(rank, pp, vpp, m, torch_warmup=True)
        assert [str(a) for a in ops if a is not None] == \
            [f"{p.chunk * pp + rank}{p.kind}{p.microbatch}" for p in mine]
        assert " ".join(str(a) for a in schedules._add_unshard_reshard(ops)) == \
            _as_torch(rank, pp, vpp, m)


def test_torchs_interleaved_schedule_is_the_runtime_and_1f1b_is_not():
    torch = pytest.importorskip("torch")
    from torch.distributed.pipelining import schedules
    if tuple(int(x) for x in torch.__version__.split(".")[:2]) < (2, 10):
        pytest.skip("the runtime interleaved schedule is torch >= 2.10")
    runtime = schedules._PipelineScheduleRuntime
    assert issubclass(schedules.ScheduleInterleaved1F1B, runtime)
    assert not issubclass(schedules.Schedule1F1B, runtime)
    assert not issubclass(schedules.ScheduleGPipe, runtime)


def _cfg(vpp: int, version: str = "2026-01", layers: int = 16):
    return run_config_from_dict({
        "model": {"preset": "llama3-8b", "num_layers": layers},
        "parallel": {"tp": 1, "pp": 2, "vpp": vpp, "zero_stage": 3,
                     "data_parallel_impl": "fsdp2", "recompute": "full"},
        "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "bf16", "framework": "torchtitan", "framework_version": version},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 4, "gpus_per_node": 8},
    })


def _without(monkeypatch) -> None:
    """The profile as if its ``pp_unshard_window`` line were removed."""
    def supports(cfg, name):
        return False if name == "pp_unshard_window" else profile_supports(cfg, name)
    monkeypatch.setattr(window_mod, "profile_supports", supports)


def test_the_window_is_dated_from_torch_2_10():
    assert unshard_window(_cfg(2, "2025-12")) is None
    assert unshard_window(_cfg(2, "2026-01")) == 3
    assert unshard_window(_cfg(1, "2026-01")) is None  # Schedule1F1B: no runtime


def _gathers(graph) -> list[int]:
    return [i for i, t in enumerate(graph.tasks) if "UNSHARD all-gather" in t.label]


def test_window_gathers_start_at_the_step_start_not_after_the_receive(monkeypatch):
    c = _cfg(2)
    graph = build_graph(c, Pricer(c))
    assert graph.m == 4
    gathers = _gathers(graph)
    assert len(gathers) == graph.pp * graph.vpp  # each chunk once: the window holds both
    assert all(graph.tasks[i].deps == [] for i in gathers)
    tl = run(graph.tasks)
    later = [i for i in gathers if graph.tasks[i].stream[0] == 1]  # the second stage's
    first_f = next(i for i, t in enumerate(graph.tasks)
                   if t.stream == (1, "compute") and t.label.startswith("F"))
    # issued at once, they run one after another on the sharding group's stream from t = 0
    assert tl.start_s[later[0]] == 0.0 and tl.start_s[later[1]] == tl.end_s[later[0]]
    assert tl.start_s[first_f] > 0.0  # it waits for its receive; the gathers did not
    # no pass waits for its gathers inside it any more
    assert not any(name == "FSDP unit all-gathers" and d > 0 for t in graph.tasks
                   for _, d, name in getattr(t.detail, "segments", ()))
    _without(monkeypatch)
    graph = build_graph(c, Pricer(c))
    assert _gathers(graph) == []
    assert sum(1 for t in graph.tasks for cat, d, name in getattr(t.detail, "segments", ())
               if cat == DP and name == "FSDP unit all-gathers" and d > 0) == graph.pp * graph.vpp


def test_a_chunk_leaving_the_window_is_gathered_again(monkeypatch):
    c = _cfg(4)
    graph = build_graph(c, Pricer(c))
    for s in range(graph.pp):
        events = lowered(schedule(s, graph.pp, 4, graph.m, torch_warmup=True), 3)[0]
        expected = sum(len(new) for _, new in events)
        mine = [i for i in _gathers(graph) if graph.tasks[i].stream[0] == s]
        assert len(mine) == expected > graph.vpp
        # past the step's start each is issued behind the compute enqueued before it
        for i in mine[3:]:
            (dep,) = graph.tasks[i].deps
            assert graph.tasks[dep].stream == (s, "compute")
    assert len(_gathers(graph)) == 11 + 9  # ranks 0 and 1 at pp 2, 4 chunks, 4 micro-batches


def test_only_the_windows_parameters_are_held_unsharded(monkeypatch):
    def peaks():
        cache_clear()
        return [estimate_stage_memory(_cfg(v), 0).allocated for v in (4, 2)]
    wide, narrow = peaks()
    _without(monkeypatch)
    wide_all, narrow_all = peaks()
    assert narrow == narrow_all  # two chunks: the window holds both
    # four chunks: three of them held (the first with the embedding), not four: one chunk's
    # two blocks fewer, in 16 bits
    c = _cfg(4)
    assert wide_all - wide == pytest.approx(2 * 2 * layer_params(c.model, 0), rel=1e-9)
