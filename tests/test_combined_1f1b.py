"""Megatron-core's combined 1F1B (--overlap-moe-expert-parallel-comm) hides all-to-alls only in
forward/backward pairs (core_v0.15.0 pipeline_parallel/combined_1f1b.py): the warm-up's
forwards and the cool-down's backwards run as without the overlap."""

import itertools
import re

import pytest
from helpers import counted_graphs

from trainsim.catalog import run_config_from_dict
from trainsim.simulator import simulate


def _passes(overlap: bool, pp: int = 2, zero: int = 0) -> tuple[dict[str, float], float]:
    sharding = {"zero_stage": zero} if zero else {"distributed_optimizer": True}
    raw = {"model": "mixtral-8x7b",
           "parallel": {"tp": 1, "pp": pp, "ep": 8, "moe_overlap_ep_comm": overlap,
                        **sharding},
           "training": {"global_batch_size": 32, "seq_length": 4096, "micro_batch_size": 1},
           "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8 * pp}}
    r = simulate(run_config_from_dict(raw), keep_timeline=True)
    tl = r.timeline
    out = {}
    for i, t in enumerate(tl.tasks):
        if t.stream == (0, "compute") and t.label[:1] in "FB":
            label = re.sub(r" part\d+$", "", t.label)  # a pass split per unit: summed
            out[label] = out.get(label, 0.0) + tl.end_s[i] - tl.start_s[i]
    return out, r.iteration_time_s


def _stage0(overlap: bool, **parallel) -> tuple[list[tuple[str, float]], float]:
    """Stage 0's compute passes in schedule order with their times, and the iteration time:
    Mixtral on EP 8 with the all-to-all dispatcher, distributed optimizer."""
    raw = {"model": "mixtral-8x7b",
           "parallel": {"tp": 1, "ep": 8, "moe_overlap_ep_comm": overlap,
                        "moe_token_dispatcher_type": "alltoall", "distributed_optimizer": True,
                        **parallel},
           "training": {"global_batch_size": 32, "seq_length": 4096, "micro_batch_size": 1},
           "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8 * parallel.get("pp", 1)}}
    r = simulate(run_config_from_dict(raw), keep_timeline=True)
    tl = r.timeline
    return ([(t.label, tl.end_s[i] - tl.start_s[i]) for i, t in enumerate(tl.tasks)
             if t.stream == (0, "compute") and t.label[:1] in "FB"], r.iteration_time_s)


def test_unpaired_passes_keep_their_all_to_alls_exposed():
    """pp 2 with virtual stages (Megatron-core needs them for the overlap): the forwards before
    stage 0's first backward and the backwards after its last forward run as without the
    overlap; the passes between are paired."""
    paired, t_paired = _stage0(True, pp=2, vpp=2)
    alone, t_alone = _stage0(False, pp=2, vpp=2)
    assert [label for label, _ in paired] == [label for label, _ in alone]
    kinds = [label[:1] for label, _ in paired]
    first_b, last_f = kinds.index("B"), len(kinds) - 1 - kinds[::-1].index("F")
    assert 1 < first_b < last_f < len(kinds) - 2
    for k, ((label, t_on), (_, t_off)) in enumerate(zip(paired, alone)):
        if k < first_b or k > last_f:
            assert t_on == pytest.approx(t_off, rel=1e-12), label
        else:
            assert t_on < t_off, label
    assert t_paired < t_alone


def test_time_and_memory_pair_passes_only_where_megatron_core_runs_the_overlap():
    """One rule (``workload.schedule.combined_1f1b``) for the time path's pairs and the memory
    estimate's extra forward: Megatron-core asserts EP > 1, virtual stages when pp > 1, no
    full recompute and the alltoall or flex dispatcher (core_v0.15.0 transformer_config.py).
    Outside it the flag hides every pass's exchange, the warm-up's first forward included."""
    from trainsim.combined_1f1b import pairs_passes
    from trainsim.memory.estimate import _a2a_overlap_extra_forward

    def cfg(**parallel):
        return run_config_from_dict({
            "model": "mixtral-8x7b",
            "parallel": {"tp": 1, "ep": 8, "moe_overlap_ep_comm": True,
                         "moe_token_dispatcher_type": "alltoall", **parallel},
            "training": {"global_batch_size": 32, "seq_length": 4096, "micro_batch_size": 1},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16}})
    cases = {"pp2 vpp2": (cfg(pp=2, vpp=2), True), "pp1": (cfg(), True),
             "pp2 vpp1": (cfg(pp=2), False), "full": (cfg(recompute="full"), False),
             "allgather": (cfg(moe_token_dispatcher_type="allgather"), False)}
    for name, (c, runs) in cases.items():
        assert pairs_passes(c) == _a2a_overlap_extra_forward(c) == runs, name
    paired, _ = _stage0(True, pp=2)
    alone, _ = _stage0(False, pp=2)
    assert paired[0][0] == "F mb0 c0" and paired[0][1] < alone[0][1]


def test_without_pipelining_only_the_first_forward_and_last_backward_run_alone():
    paired, _ = _passes(True, pp=1)
    alone, _ = _passes(False, pp=1)
    assert paired["F mb0 c0"] == alone["F mb0 c0"]
    assert paired["F mb1 c0"] < alone["F mb1 c0"]
    assert paired["B mb0 c0"] < alone["B mb0 c0"]


def test_fsdp_without_pipelining_runs_the_first_forward_and_last_backward_alone():
    """core_v0.15.0 schedules.py ``forward_backward_no_pipelining`` calls
    ``combined_1f1b_schedule_for_no_pipelining`` whatever wraps the model: under ZeRO-3 / FSDP
    too, the first forward and the last backward (split per unit, with its gathers and
    reduce-scatters) have no partner; the passes between are paired."""
    paired, t_paired = _passes(True, pp=1, zero=3)
    alone, t_alone = _passes(False, pp=1, zero=3)
    assert paired["F mb0 c0"] == alone["F mb0 c0"]
    last = [k for k in paired if k.startswith("B last")]
    assert last and all(paired[k] == alone[k] for k in last)
    for pair in ("F mb1 c0", "F mb3 c0", "B mb0 c0", "B mb2 c0"):
        assert paired[pair] < alone[pair]
    assert t_paired < t_alone


def test_interleaved_warm_up_forwards_run_alone_including_the_first_after_its_gather():
    """pp 4, vpp 2, dp 16 under Megatron-core (overlap_param_gather, the first chunk bucketed:
    its first forward waits for the gathers): every forward before stage 0's first backward,
    the first one included, runs as without the overlap; the steady ones are paired."""
    def stage0(overlap: bool) -> list[tuple[str, float]]:
        raw = {"model": "mixtral-8x7b",
               "parallel": {"tp": 1, "pp": 4, "vpp": 2, "ep": 8, "moe_overlap_ep_comm": overlap,
                            "moe_token_dispatcher_type": "alltoall",
                            "distributed_optimizer": True, "overlap_param_gather": True},
               "training": {"global_batch_size": 128, "seq_length": 4096, "micro_batch_size": 1,
                            "framework": "megatron-core", "framework_version": "0.15"},
               "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64}}
        tl = simulate(run_config_from_dict(raw), keep_timeline=True).timeline
        return [(t.label, tl.end_s[i] - tl.start_s[i]) for i, t in enumerate(tl.tasks)
                if t.stream == (0, "compute") and t.label[:1] in "FB"]
    paired, alone = stage0(True), stage0(False)
    assert [label for label, _ in paired] == [label for label, _ in alone]
    first_b = next(i for i, (label, _) in enumerate(paired) if label.startswith("B"))
    assert first_b > 1
    for (label, t_on), (_, t_off) in zip(paired[:first_b], alone[:first_b]):
        assert t_on == pytest.approx(t_off, rel=1e-12), label
    steady = [i for i in range(first_b, len(paired)) if paired[i][0].startswith("F")]
    assert steady and all(paired[i][1] < alone[i][1] for i in steady)


def _fine_moe(recompute: str, pp: int, modules: list[str] | None = None) -> dict:
    """Qwen3-235B-A22B's layer (128 experts of 1536, top 8) on 2 layers per stage (two virtual
    stages when pp > 1, as Megatron-core needs for the overlap), fp8, EP 32 over 4 nodes under
    Megatron-Bridge: host-bound passes whose all-to-alls outlast their compute."""
    selective = {"recompute_modules": modules} if modules else {}
    return {"model": {"preset": "qwen3-235b-a22b", "num_layers": 2 * pp},
            "parallel": {"tp": 2, "pp": pp, "vpp": 2 if pp > 1 else 1, "ep": 32,
                         "sequence_parallel": True, "moe_overlap_ep_comm": True,
                         "moe_token_dispatcher_type": "alltoall", "distributed_optimizer": True,
                         "recompute": recompute, **selective},
            "training": {"global_batch_size": 128, "seq_length": 4096, "micro_batch_size": 1,
                         "dtype": "fp8", "fp8_recipe": "current",
                         "framework": "megatron-bridge", "framework_version": "26.04"},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 32 * pp, "gpus_per_node": 8,
                        "compute_db": None}}


def test_recompute_never_makes_a_combined_1f1b_step_faster():
    """Recomputing adds work and never hides more: the all-to-alls hide behind the compute
    stream's whole span, its waits for the host included, so a recomputed forward that fills
    such a wait does not also shrink the exposed exchange (it did: selective was faster).
    Selective recompute only: Megatron-core refuses the overlap with full recompute."""
    for pp in (1, 2):
        times = [simulate(run_config_from_dict(_fine_moe(rec, pp, mods))).iteration_time_s
                 for rec, mods in (("none", None), ("selective", None),
                                   ("selective", ["core_attn", "layernorm", "moe_act"]))]
        assert times[0] < times[1] < times[2], (pp, times)


def _long(pp: int, vpp: int, m: int, zero: int = 0):
    sharding = {"zero_stage": zero} if zero else {"distributed_optimizer": True}
    return run_config_from_dict({
        "model": "mixtral-8x7b",
        "parallel": {"tp": 1, "pp": pp, "vpp": vpp, "ep": 8, "moe_overlap_ep_comm": True,
                     **sharding},
        "training": {"global_batch_size": 8 * m, "seq_length": 4096, "micro_batch_size": 1},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8 * pp}})


def test_combined_1f1b_steady_state_agrees_with_the_full_simulation():
    """The steady pairs of the combined 1F1B are (backward, forward), so the truncated runs
    cut after the last of them, before the cool-down's lone backwards: the period is proven
    (it was not: every such run was simulated in full) and the extrapolation agrees with the
    full simulation to 1e-9 on the iteration time and every breakdown entry."""
    for pp, vpp, m, zero in ((1, 1, 1024, 0), (1, 1, 1024, 3), (2, 2, 512, 0), (4, 2, 128, 0)):
        cfg = _long(pp, vpp, m, zero)
        fast = simulate(cfg)
        assert fast.simulation["method"] == "steady-state", (pp, vpp, zero, fast.simulation)
        full = simulate(cfg, keep_timeline=True)  # a timeline asked for: every micro-batch
        assert fast.iteration_time_s == pytest.approx(full.iteration_time_s, rel=1e-9, abs=0)
        for key, value in full.breakdown.items():
            assert fast.breakdown[key] == pytest.approx(
                value, rel=1e-9, abs=1e-9 * full.iteration_time_s), (pp, vpp, zero, key)


def test_combined_1f1b_steady_state_cost_does_not_grow_with_microbatches():
    """Eight times the micro-batches cost the shortcut the same truncated runs."""
    with counted_graphs() as built:
        a, b = simulate(_long(4, 2, 128)), simulate(_long(4, 2, 1024))
    assert built and built[:len(built) // 2] == built[len(built) // 2:]
    assert b.iteration_time_s > 7 * a.iteration_time_s


def _dense_then_moe():
    """Four layers on pp 2 with two virtual stages, one layer each: virtual stage 0 dense,
    1-3 MoE (``moe_first_dense_layers`` 1), EP 8, the combined 1F1B."""
    from dataclasses import replace

    from helpers import moe_layer_cfg

    from trainsim.config import RunConfig
    base = moe_layer_cfg("alltoall", ep=8, experts=32, topk=8, gpus=16)
    model = replace(base.model, num_layers=4, moe_first_dense_layers=1, hidden_size=4096,
                    num_attention_heads=32, ffn_hidden_size=8192, moe_ffn_hidden_size=2048)
    return RunConfig(model=model, cluster=base.cluster,
                     training=replace(base.training, global_batch_size=64, seq_length=4096),
                     parallel=replace(base.parallel, moe_overlap_ep_comm=True,
                                      pipeline_model_parallel_size=2,
                                      virtual_pipeline_model_parallel_size=2))


def test_a_steady_backward_pairs_with_the_layers_of_the_forward_beside_it():
    """Interleaved, stage 0 holds a dense chunk (virtual stage 0) and an MoE one (2): a steady
    backward runs beside the forward after it, often of the other chunk, and its exposed
    exchanges are those of that forward's layers beside its own (model_chunk_schedule_plan.py
    ``TransformerModelChunkSchedulePlan.run``), not those of its own chunk's forward; the
    lower bound (``bound``) stays below the simulated time."""
    from trainsim.bound import lower_bound_s
    from trainsim.chunks import chunks
    from trainsim.ep_pairs import PAIR_EXPOSED, chunk_exposed
    from trainsim.pricing import Pricer
    from trainsim.workload.schedule import combined_1f1b
    from trainsim.workload.shard import shard_of

    cfg = _dense_then_moe()
    assert combined_1f1b(cfg)
    pricer = Pricer(cfg)
    ch = chunks(cfg, pricer, shard_of(cfg))
    share = pricer.sm_share["ep"]
    r = simulate(cfg, keep_timeline=True)
    tl = r.timeline
    passes = [t for t in tl.tasks if t.stream == (0, "compute") and t.label[:1] in "FB"]
    chunk_of = {"c0": 0, "c1": 2}  # stage 0's virtual stages
    seen = set()
    for b, f in itertools.pairwise(passes):
        if b.label[:1] != "B" or f.label[:1] != "F" or b.label.startswith("B last"):
            continue
        v_b, v_f = chunk_of[b.label.split()[-1]], chunk_of[f.label.split()[-1]]
        got = sum(seg[1] for seg in b.detail.segments if seg[2] == PAIR_EXPOSED)
        want = sum(chunk_exposed(ch[v_f].pair_sides, ch[v_b].pair_sides, share,
                                 pricer.ep_gemm_share))
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15), (b.label, f.label)
        seen.add((v_b, v_f))
    assert {(0, 2), (2, 0), (2, 2)} <= seen
    own = sum(chunk_exposed(ch[2].pair_sides, ch[2].pair_sides, share, pricer.ep_gemm_share))
    across = sum(chunk_exposed(ch[0].pair_sides, ch[2].pair_sides, share, pricer.ep_gemm_share))
    assert own > 0 and across != own  # the MoE backward beside a dense forward is not as own
    assert lower_bound_s(cfg) <= r.iteration_time_s


def test_a_search_pairs_chunks_of_other_layers_as_simulate_does():
    """Inside ``pricing.shared`` (a search) the dense and MoE chunks pair across as
    ``simulate`` pairs them alone, to the bit, the steady state's shortcut included."""
    from dataclasses import replace

    from trainsim.pricing import shared
    cfg = _dense_then_moe()
    other = replace(cfg, training=replace(cfg.training, global_batch_size=128))
    alone = simulate(replace(other)).iteration_time_s
    with shared(("test_combined_1f1b", 1)):
        simulate(replace(cfg))
        assert simulate(replace(other)).iteration_time_s == alone


def test_chunks_of_other_layers_keep_the_steady_state_exact():
    """A backward's pairing depends on the chunk of the forward beside it, which repeats with
    the schedule's period: the shortcut's extrapolation agrees with the full simulation."""
    from dataclasses import replace
    cfg = _dense_then_moe()
    cfg = replace(cfg, training=replace(cfg.training, global_batch_size=2048))
    fast = simulate(cfg)
    assert fast.simulation["method"] == "steady-state", fast.simulation
    full = simulate(cfg, keep_timeline=True)
    assert fast.iteration_time_s == pytest.approx(full.iteration_time_s, rel=1e-9, abs=0)
