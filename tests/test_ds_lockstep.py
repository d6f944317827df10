"""DeepSpeed's PipelineEngine step by step (trainsim.ds_lockstep): TrainSchedule's steps as
DeepSpeed v0.5.10 writes them, and each step's transfers a rendezvous of two stages."""

from __future__ import annotations

from collections import Counter

import pytest

import trainsim
from trainsim.bound import lower_bound_s
from trainsim.ds_lockstep import Exchange, transfer
from trainsim.engine import run
from trainsim.interop.chakra import (
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    export_chakra,
    read_chakra,
    read_et,
    trace_files,
)
from trainsim.simulator import Pricer, build_graph
from trainsim.workload.pipe_engine import train_schedule
from trainsim.workload.schedule import schedule

FWD, BWD = "F", "B"
RA, SG, SA, RG = "RecvActivation", "SendGrad", "SendActivation", "RecvGrad"


def cfg(pp: int = 4, gbs: int = 6, dp: int = 1, tp: int = 1, **parallel) -> trainsim.RunConfig:
    return trainsim.run_config_from_dict({
        "model": {"hidden_size": 256, "num_layers": 2 * pp, "num_attention_heads": 4,
                  "vocab_size": 1024},
        "parallel": {"pp": pp, "tp": tp, "data_parallel_impl": "deepspeed", "zero_stage": 1,
                     **parallel},
        "training": {"seq_length": 512, "micro_batch_size": 1, "global_batch_size": gbs},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": pp * tp * dp, "gpus_per_node": 8,
                    "compute_db": None}})


def test_train_schedule_is_deepspeeds_instruction_order():
    """Two stages, three micro-batches, read off TrainSchedule.steps (v0.5.10 schedule.py
    L189-237, _step_to_micro_batch L245-283): 2 (3 + 2 - 1) = 8 steps; stage 0 forwards on
    even steps and sends each activation on the backward step after it, stage 1 receives it
    on its forward step and sends the gradient back on the one after its backward."""
    assert train_schedule(0, 2, 3) == [
        ((), (FWD, 0)), ((SA,), None), ((), (FWD, 1)), ((SA, RG), (BWD, 0)),
        ((), (FWD, 2)), ((SA, RG), (BWD, 1)), ((), None), ((RG,), (BWD, 2))]
    assert train_schedule(1, 2, 3) == [
        ((), None), ((RA,), (FWD, 0)), ((), (BWD, 0)), ((RA, SG), (FWD, 1)),
        ((), (BWD, 1)), ((RA, SG), (FWD, 2)), ((), (BWD, 2)), ((SG,), None)]


@pytest.mark.parametrize("pp", [2, 3, 4, 7])
@pytest.mark.parametrize("m", [1, 2, 5, 9])
def test_steps_pair_up_and_keep_megatrons_pass_order(pp, m):
    """Every step's transfers are with one neighbour, which makes the mirror ones in the same
    order (a send where the other receives); each stage's passes come in 1F1B's order."""
    steps = [train_schedule(s, pp, m) for s in range(pp)]
    mirror = {RA: SA, SG: RG}
    for t in range(2 * (m + pp - 1)):
        for s in range(pp - 1):
            lower, upper = steps[s][t][0], steps[s + 1][t][0]
            if t % 2 != s % 2:  # stage s on a backward step, with the next stage
                assert [mirror[name] for name in upper] == list(lower)
    for s in range(pp):
        passes = [p for _, p in steps[s] if p is not None]
        assert passes == [(p.kind, p.microbatch) for p in schedule(s, pp, 1, m)]


def _reference(c: trainsim.RunConfig) -> dict[tuple[int, str], float]:
    """Each pass's end under DeepSpeed's semantics, by hand from the schedule and the passes'
    durations: a step's exchange starts when both stages have finished their previous step
    and lasts its transfers; a pass follows its stage's exchange."""
    graph = build_graph(c, Pricer(c))
    x = transfer(graph)[0]
    work = {(t.stream[0], t.label): t.duration_s for t in graph.tasks
            if t.stream[1] == "compute" and t.label[:1] in "FB"}
    pp, m = c.parallel.pp, c.num_microbatches
    steps = [train_schedule(s, pp, m) for s in range(pp)]
    ready, ends = [0.0] * pp, {}
    for t in range(len(steps[0])):
        for s in range(pp - 1):
            n = len(steps[s][t][0])
            if t % 2 != s % 2 and n:
                ready[s] = ready[s + 1] = max(ready[s], ready[s + 1]) + n * x
        for s in range(pp):
            if steps[s][t][1] is not None:
                kind, mb = steps[s][t][1]
                label = f"{kind} mb{mb} c0"
                ready[s] += work[(s, label)]
                ends[(s, label)] = ready[s]
    return ends


@pytest.mark.parametrize("pp,gbs,tp", [(2, 3, 1), (4, 6, 1), (4, 2, 2), (5, 9, 1)])
def test_the_engine_runs_the_steps_as_rendezvous(pp, gbs, tp):
    """The simulated passes end where DeepSpeed's steps put them: both stages of a step's
    exchange wait for the later one, a stage with no pass in a step still meets its
    neighbour, and a step that moves only an activation (warm-up) or only a gradient
    (cool-down) lasts one transfer."""
    c = cfg(pp, gbs, tp=tp)
    graph = build_graph(c, Pricer(c))
    tl = run(graph.tasks)
    got = {(t.stream[0], t.label): tl.end_s[i] for i, t in enumerate(graph.tasks)
           if t.stream[1] == "compute" and t.label[:1] in "FB"}
    want = _reference(c)
    assert got.keys() == want.keys()
    for key, end in want.items():
        assert got[key] == pytest.approx(end, rel=1e-12), key


def test_a_warm_up_forward_waits_for_one_transfer_not_two():
    """Before: the pass that sent paid its send and the step's receive, so the first forward
    of stage 1 started two transfers after stage 0's; DeepSpeed's first step moves only the
    activation."""
    c = cfg(2, 4)
    graph = build_graph(c, Pricer(c))
    tl = run(graph.tasks)
    at = {(t.stream[0], t.label): i for i, t in enumerate(graph.tasks)}
    x = transfer(graph)[0]
    assert x > 0
    assert tl.start_s[at[(1, "F mb0 c0")]] == pytest.approx(
        tl.end_s[at[(0, "F mb0 c0")]] + x, rel=1e-12)
    exchanges = [t for t in graph.tasks if isinstance(t.detail, Exchange)]
    assert {len(t.detail.messages) for t in exchanges} == {1, 2}
    assert sum(t.duration_s for t in exchanges) == pytest.approx(2 * 2 * 4 * x)


def test_the_folded_passes_and_the_steps_agree_where_both_transfers_move(monkeypatch):
    """Where a step moves an activation and a gradient (the steady state), the folded passes
    (a pass, its send, the step's receive; the graph before this) were exact: the steady
    period is the same to the last bits; the iteration is shorter by what the warm-up and
    cool-down steps that move one transfer no longer pay, at most one transfer each."""
    c = cfg(4, 64)
    x = transfer(build_graph(c, Pricer(c)))[0]

    def stage0_backward_ends(tl) -> list[float]:
        return [tl.end_s[i] for i, t in enumerate(tl.tasks)
                if t.stream == (0, "compute") and t.label.startswith("B mb")]

    new = trainsim.simulate(c, keep_timeline=True)
    monkeypatch.setattr("trainsim.ds_lockstep.lockstep_applies", lambda tg: False)
    old = trainsim.simulate(c, keep_timeline=True)
    assert 0 < old.iteration_time_s - new.iteration_time_s <= 2 * 2 * (4 - 1) * x
    a, b = stage0_backward_ends(new.timeline), stage0_backward_ends(old.timeline)
    assert len(a) == len(b) == 64
    assert a[40] - a[20] == pytest.approx(b[40] - b[20], rel=1e-12)


@pytest.mark.parametrize("pp,gbs,dp,overlap", [(2, 8, 2, False), (4, 12, 2, True),
                                                (3, 3, 1, False), (6, 30, 1, False)])
def test_the_lower_bound_stays_below_the_steps(pp, gbs, dp, overlap):
    """bound.lower_bound_s under DeepSpeed's steps: a first forward passes on after one
    transfer, as does a last backward."""
    c = cfg(pp, gbs, dp=dp, overlap_grad_reduce=overlap)
    assert 0 < lower_bound_s(c) <= trainsim.simulate(c).iteration_time_s


@pytest.mark.parametrize("overlap", [False, True])
def test_chakra_writes_each_transfer_once_with_its_bytes(overlap, tmp_path):
    """The exported trace reads back to the simulated iteration; each activation and gradient
    is one send and one receive of the same bytes, and the readiness each side waits for is a
    0-byte message."""
    c = cfg(4, 8, dp=2, overlap_grad_reduce=overlap)
    expected = trainsim.simulate(c).iteration_time_s
    export_chakra(c, tmp_path / "w", ranks=None)
    assert read_chakra(tmp_path / "w") == pytest.approx(expected, rel=1e-9)
    sends, recvs = Counter(), Counter()
    for path in trace_files(tmp_path / "w"):
        for n in read_et(path)[1]:
            key = (n.attr("comm_src"), n.attr("comm_dst"), n.attr("comm_tag"),
                   n.attr("comm_size"))
            if n.type == COMM_SEND_NODE:
                sends[key] += 1
            elif n.type == COMM_RECV_NODE:
                recvs[key] += 1
    assert sends == recvs
    sizes = Counter(key[3] for key in sends.elements())
    graph = build_graph(c, Pricer(c))
    nbytes = round(transfer(graph)[1])
    # per pair of stages and data-parallel rank: m activations and m gradients
    assert sizes[nbytes] == 2 * 8 // 2 * 3 * 2
    assert set(sizes) == {0, nbytes}
