"""GPipe, zero-bubble and DualPipeV with ZeRO-3 / FSDP (issue 20, "express every run"): torchtitan
runs every schedule torch ships with FSDP2 on dp > 1 (torchtitan b5bcd76c6
torchtitan/distributed/pipeline_parallel.py: any ``get_schedule_class`` name; fsdp.py: units not
resharded after forward under PP). torch v2.13.0 torch/distributed/pipelining: every backward
runs under the stage's no-sync (stage.py ``backward_maybe_with_nosync`` L781-L849), the stage's
gradients are reduce-scattered once, by ``perform_reduce_grad`` (L1164-L1195), which the runtime
schedules run as REDUCE_GRAD after the stage's m-th W or FULL_BACKWARD (schedules.py
``_add_reduce_grad`` L1252-L1282) and ScheduleGPipe after its last backward (L944-L960); the
runtime schedules gather through ``_add_unshard_reshard`` (L1285-L1365)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

import trainsim
from trainsim.errors import ConfigError
from trainsim.pricing import Pricer
from trainsim.sharded_passes import GATHER_WAIT
from trainsim.simulator import build_graph
from trainsim.workload.pipeline_schedules import virtual_stage
from trainsim.workload.schedule import schedule_peak_in_flight

EXAMPLE = "examples/llama3-8b-h100.yaml"

# torch 2.13.0's ScheduleZBVZeroBubble and ScheduleDualPipeV orders of rank 0, pp 2 (stages 0 and
# 3), 4 micro-batches, lowered by _add_unshard_reshard and _add_reduce_grad, as its _Action
# strings print (RESHARDs, which free memory and run nothing, left out; DualPipeV's
# OVERLAP_F_B pairs written as their two passes, forward first)
ZBV_RANK0 = ("0UNSHARD 3UNSHARD 0F0 0F1 0F2 3F0 3I0 3W0 3F1 3I1 3W1 0F3 0I0 0W0 3F2 3I2 3W2 "
             "0I1 0W1 3F3 3I3 3W3 3REDUCE_GRAD 0I2 0W2 0I3 0W3 0REDUCE_GRAD")
DUALPIPEV_RANK0 = ("0UNSHARD 3UNSHARD 0F0 0F1 0F2 3F0 3I0 3W0 3F1 0F3 3B1 3F2 0B0 3B2 3F3 0B1 "
                   "3B3 3REDUCE_GRAD 0I2 0W2 0I3 0W3 0REDUCE_GRAD")


def _cfg(name: str, *extra: str, pp: int = 2, m: int = 4, vpp: int | None = None):
    vpp = vpp or (2 if name in ("zb_v", "dualpipe_v", "interleaved_zb") else 1)
    return trainsim.load_run_config(EXAMPLE, [
        "parallel.tp=1", "training.micro_batch_size=1", f"model.num_layers={4 * pp}",
        f"training.global_batch_size={2 * m}", f"parallel.pipeline_schedule={name}",
        f"parallel.vpp={vpp}", f"parallel.pp={pp}", f"cluster.num_gpus={2 * pp}",
        "parallel.zero_stage=3", "training.framework=torchtitan", *extra])


def _events(cfg, rank: int) -> list[str]:
    """Rank ``rank``'s passes, UNSHARD gathers and gradient reduce-scatters in the order the
    graph places them, written as torch's _Action strings (global stage, kind, micro-batch)."""
    name, pp = cfg.parallel.pipeline_schedule, cfg.parallel.pp
    out: list[str] = []
    last = -1
    for t in build_graph(cfg, Pricer(cfg)).tasks:
        if t.stream[0] != rank:
            continue
        if t.stream[1] == "compute":
            for kind, mb, c in re.findall(r"\b(F|B|I|W) (?:mb)?(\d+|last) c(\d+)", t.label):
                last = virtual_stage(name, rank, int(c), pp)  # "last": the split last backward
                out.append(f"{last}{kind}{cfg.num_microbatches - 1 if mb == 'last' else mb}")
        hit = re.match(r"FSDP UNSHARD all-gather dp_cp chunk (\d+)", t.label)
        if hit:
            out.append(f"{virtual_stage(name, rank, int(hit[1]), pp)}UNSHARD")
        if t.label.startswith("ZeRO-3 grad reduce-scatter dp_cp"):
            out.append(f"{last}REDUCE_GRAD")
    return out


def _gathers(task) -> bool:
    """Whether a pass task leads with its FSDP units' gathers (``sharded_passes.GATHER_WAIT``)."""
    return any(seg[-1] == GATHER_WAIT for seg in task.detail.segments)


def _torch_events(cls, rank: int, pp: int, m: int) -> list[str]:
    """torch's own lowering (pure Python over _Action lists, no process group)."""
    sched = pytest.importorskip("torch.distributed.pipelining.schedules")
    state = SimpleNamespace(pp_group_size=pp, _n_microbatches=m, n_local_stages=2,
                            num_stages=2 * pp, _num_stages=2 * pp, _stages=[None, None],
                            number_of_rounds=max(1, m // pp), rank=rank,
                            microbatches_per_round=m // max(1, m // pp))
    ops = getattr(sched, cls)._calculate_single_rank_operations(state, rank)
    ops = sched._add_reduce_grad(sched._add_unshard_reshard(ops), m)
    out: list[str] = []
    for a in map(str, ops):
        if "RESHARD" not in a:
            out += a[1:a.index(")")].split(";") if a.startswith("(") else [a]
    return out


@pytest.mark.parametrize(("name", "want"), [("zb_v", ZBV_RANK0), ("dualpipe_v", DUALPIPEV_RANK0)])
def test_v_schedules_gather_and_reduce_where_torch_does(name, want):
    """Each chunk gathered once, before the step's first pass (torch 2.10+'s window of 3 holds
    both), and each stage's gradients reduce-scattered right after its m-th B or W."""
    assert " ".join(_events(_cfg(name), 0)) == want


@pytest.mark.parametrize("name, cls", [("zb_v", "ScheduleZBVZeroBubble"),
                                       ("dualpipe_v", "ScheduleDualPipeV"),
                                       ("interleaved_zb", "ScheduleInterleavedZeroBubble")])
@pytest.mark.parametrize(("pp", "m"), [(2, 4), (2, 8), (4, 8), (4, 12), (3, 6)])
def test_torchs_runtime_schedules_are_torchs_own_on_every_rank(name, cls, pp, m):
    """Where torch is installed: its own order, UNSHARD and REDUCE_GRAD placement, every rank
    (interleaved zero-bubble: torch's one warm-up forward a hop, rounds of m // (m // pp))."""
    cfg = _cfg(name, pp=pp, m=m)
    for rank in range(pp):
        assert _events(cfg, rank) == _torch_events(cls, rank, pp, m)


def test_gpipe_gathers_once_and_reduces_after_its_last_backward():
    """torch's ScheduleGPipe (a PipelineScheduleSingle, no window): the units gathered inside
    the first forward, every forward before any backward, one reduce-scatter after the last."""
    cfg = _cfg("gpipe", m=6)
    ev = _events(cfg, 0)
    assert ev == [f"0F{i}" for i in range(6)] + [f"0B{i}" for i in range(6)] + ["0REDUCE_GRAD"]
    graph = build_graph(cfg, Pricer(cfg))
    fwd = [t for t in graph.tasks if t.stream == (0, "compute") and t.label.startswith("F ")]
    gathers = [_gathers(t) for t in fwd]
    assert gathers == [True] + [False] * 5


def test_gpipe_with_fsdp_matches_1f1b_time_and_holds_every_microbatch():
    """Equal passes: GPipe's makespan is 1F1B's ((m + pp - 1)(t_f + t_b)); its memory holds all
    m micro-batches' activations where 1F1B holds pp."""
    g, o = (trainsim.simulate(_cfg(n, m=8)) for n in ("gpipe", "1f1b"))
    assert g.iteration_time_s == pytest.approx(o.iteration_time_s, rel=1e-3)
    assert g.peak_memory_bytes > o.peak_memory_bytes


@pytest.mark.parametrize("name", ["zb_h1", "zb_h2", "zb_2p", "zb_v", "interleaved_zb",
                                  "dualpipe_v"])
def test_zero_bubble_with_fsdp_beats_1f1b_with_fsdp(name):
    """The split backward fills the bubble that 1F1B + FSDP leaves, with the same gathers and
    reductions; the data-parallel time stays what 1F1B's is within the pass pricing."""
    zb, ref = trainsim.simulate(_cfg(name, m=8)), trainsim.simulate(_cfg("1f1b", m=8))
    assert zb.iteration_time_s < ref.iteration_time_s
    assert zb.breakdown["pipeline_bubble_s"] < ref.breakdown["pipeline_bubble_s"]


def test_reduce_scatter_starts_after_the_stage_last_w_and_the_step_waits():
    """The reduce-scatter of each chunk starts only once its last W has ended; the optimizer
    step of the rank starts after every reduce-scatter."""
    cfg = _cfg("zb_h1", m=8)
    tl = trainsim.simulate(cfg, keep_timeline=True).timeline
    on = [(t, tl.start_s[i], tl.start_s[i] + t.duration_s) for i, t in enumerate(tl.tasks)
          if t.stream[0] == 0]
    last_w = max(e for t, _, e in on if re.match(r"W mb\d+ c0$", t.label))
    rs = [(b, e) for t, b, e in on if t.label.startswith("ZeRO-3 grad reduce-scatter")]
    assert len(rs) == 1 and rs[0][0] >= last_w
    step = min(b for t, b, _ in on if "optim" in t.label.lower() or "adam" in t.label.lower())
    assert step >= rs[0][1]


def test_before_the_runtime_window_the_first_forward_of_each_chunk_gathers():
    """torchtitan before its 2026-01 entry (torch < 2.10: no UNSHARD actions): each chunk's
    first forward leads with its units' gathers, no other pass does."""
    cfg = _cfg("zb_v", "training.framework_version=2025-12", m=8)
    graph = build_graph(cfg, Pricer(cfg))
    assert not any("UNSHARD" in t.label for t in graph.tasks)
    for rank in range(2):
        fwd = [t for t in graph.tasks if t.stream == (rank, "compute") and "F mb" in t.label]
        lead = {c: next(t for t in fwd if t.label.endswith(f"c{c}") or f" c{c} &" in t.label)
                for c in (0, 1)}
        for t in fwd:
            assert _gathers(t) == (t in lead.values())


def test_activation_peak_over_1f1b_is_the_schedules_walk():
    """Memory: the unsharded units and gradients are the same whatever the order; what moves is
    the activations in flight, ``schedule_peak_in_flight`` times one micro-batch's, on the last
    stage (the output layer's logits make it the peak rank here): one micro-batch's read off
    GPipe's m in flight against 1F1B's 1 there."""
    m, pp = 8, 2
    peak = {n: trainsim.simulate(_cfg(n, m=m)).peak_memory_bytes
            for n in ("gpipe", "1f1b", "zb_h1", "zb_h2")}
    walk = {n: schedule_peak_in_flight(pp - 1, pp, 1, m, n) for n in ("gpipe", "zb_h1", "zb_h2")}
    walk["1f1b"] = schedule_peak_in_flight(pp - 1, pp, 1, m)
    assert walk["gpipe"] == m and walk["1f1b"] == 1
    per_mb = (peak["gpipe"] - peak["1f1b"]) / (m - 1)
    for n in ("zb_h1", "zb_h2"):  # (pp - 1 - s) more forwards, W held at 32/34 of a micro-batch
        assert walk[n] > 1
        assert peak[n] - peak["1f1b"] == pytest.approx((walk[n] - 1) * per_mb, rel=1e-3)


def test_the_periodic_shortcut_gives_the_full_simulation():
    cfg = _cfg("zb_v", m=512)
    a, b = trainsim.simulate(cfg), trainsim.simulate(cfg, keep_timeline=True)
    assert a.simulation["method"] == "steady-state"
    assert a.iteration_time_s == pytest.approx(b.iteration_time_s, rel=1e-9)


def test_dualpipe_with_fsdp_is_refused_in_one_line():
    with pytest.raises(ConfigError, match="dualpipe_v") as err:
        trainsim.simulate(_cfg("dualpipe", m=8))
    assert "\n" not in str(err.value)


def test_a_framework_that_regathers_every_microbatch_is_refused_in_one_line():
    """Megatron-FSDP (default profile's ZeRO-3 under PP: gathers and reduces every micro-batch)
    has no zero-bubble schedule; the refusal names the profile line that would allow it."""
    cfg = trainsim.load_run_config(EXAMPLE, [
        "parallel.tp=1", "training.micro_batch_size=1", "model.num_layers=8",
        "training.global_batch_size=8", "parallel.pipeline_schedule=zb_h1", "parallel.pp=2",
        "cluster.num_gpus=4", "parallel.zero_stage=3"])
    with pytest.raises(ConfigError, match="fsdp_pp_unsharded") as err:
        trainsim.simulate(cfg)
    assert "\n" not in str(err.value)


def test_search_offers_the_schedules_with_zero3_where_they_run():
    """``search --schedules`` keeps ZeRO-3 beside the named schedules under torchtitan's profile
    (was: every named schedule skipped at zero 3), never beside DualPipe, and not under a
    profile that regathers every micro-batch; the whole-pass ones (GPipe, looped BFS) always."""
    from trainsim.search.space import _sharded_fits

    titan, bridge = SimpleNamespace(framework=("torchtitan", None)), \
        SimpleNamespace(framework=("megatron-bridge", None))
    assert all(_sharded_fits(titan, s) for s in ("", "gpipe", "looped_bfs", "zb_h1", "zb_v",
                                                 "interleaved_zb", "dualpipe_v"))
    assert not _sharded_fits(titan, "dualpipe")
    assert not _sharded_fits(bridge, "zb_v") and _sharded_fits(bridge, "gpipe")


def test_interleaved_zero_bubble_refuses_what_torch_refuses():
    """torch: "Zero bubble requires the number of microbatches to be a multiple of the number of
    rounds" (max(1, m // pp)): 9 micro-batches at pp 4 run in 2 rounds."""
    with pytest.raises(ConfigError, match="multiple") as err:
        trainsim.simulate(_cfg("interleaved_zb", "parallel.zero_stage=2", pp=4, m=9))
    assert "\n" not in str(err.value)
