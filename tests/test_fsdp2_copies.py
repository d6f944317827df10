"""FSDP2's copies around its collectives (issue 17): each gathered unit's copy-out
(``foreach_all_gather_copy_out``, ``split_with_sizes_copy``) and each backward's copy-in of the
gradients into the reduce-scatter input in the reduce dtype (``foreach_reduce_scatter_copy_in``),
on the compute stream (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py and
_fsdp_param_group.py, torch 2.13.0; copy-in on the compute stream since pytorch/pytorch#129721,
the change profile line ``fsdp2_reduce_scatter_wait`` marks)."""

from __future__ import annotations

import pytest

import trainsim.sharded_passes as sharded_passes_mod
import trainsim.workload.sharding as sharding_mod
from trainsim.catalog import run_config_from_dict
from trainsim.catalog.frameworks import profile_supports
from trainsim.chunks import chunks
from trainsim.model.counts import layer_tensors
from trainsim.pricing import Pricer
from trainsim.sharded_passes import unit_gather_waits
from trainsim.simulator import build_graph, simulate
from trainsim.workload import fsdp2_copies
from trainsim.workload.ops import ACT_BYTES, Comm, Elementwise
from trainsim.workload.shard import shard_of
from trainsim.workload.sharding import fsdp_grad_bytes, fsdp_unit_gathers, rank_grad_elements


def _cfg(framework: str | None = "torchtitan", version: str | None = "2024-12", pp: int = 1,
         zero: int = 3, gbs: int = 16):
    return run_config_from_dict({
        "model": {"preset": "llama3-8b", "num_layers": 4},
        "parallel": {"tp": 1, "pp": pp, "zero_stage": zero, "data_parallel_impl": "fsdp2"},
        "training": {"global_batch_size": gbs, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "bf16", "framework": framework, "framework_version": version},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8},
    })


def test_copy_out_reads_and_writes_every_gathered_byte_once_per_unit():
    units = [[Comm("g", "all_gather", 3e6, "dp_cp")],
             [Comm("g", "all_gather", 5e6, "dp_cp"), Comm("g", "all_gather", 7e6, "edp")]]
    (op,) = fsdp2_copies.copy_out(units)
    assert op.name == fsdp2_copies.COPY_OUT
    assert op.bytes == pytest.approx(2 * (3e6 + 5e6 + 7e6))
    assert op.kernels == 3
    assert fsdp2_copies.copy_out([[]]) == []


def test_copy_in_writes_the_reduce_dtype_and_skips_a_group_of_one():
    # dense: 1e6 elements in 3 units reduced in fp32 over 8 ranks: 2 bytes read, 4 written
    (op,) = fsdp2_copies.copy_in((1e6, 3), (2e6, 2), {"dp_cp": 4, "edp": 2},
                                 {"dp_cp": 8, "edp": 1})
    assert op.bytes == pytest.approx(1e6 * (2 + 4))
    assert op.kernels == 3
    # experts over 4 ranks in bf16 join; a quarter of it for a stage reducing once in 4 passes
    (op,) = fsdp2_copies.copy_in((1e6, 3), (2e6, 2), {"dp_cp": 4, "edp": 2},
                                 {"dp_cp": 8, "edp": 4}, share=0.25)
    assert op.bytes == pytest.approx((1e6 * 6 + 2e6 * 4) / 4)
    assert fsdp2_copies.copy_in((1e6, 3), (0.0, 0), {"dp_cp": 2, "edp": 2},
                                {"dp_cp": 1, "edp": 1}) == []
    # a gradient accumulated in fp32 (the no-sync's unsharded_accumulated_grad) is read at 4
    (op,) = fsdp2_copies.copy_in((1e6, 3), (2e6, 2), {"dp_cp": 4, "edp": 2},
                                 {"dp_cp": 8, "edp": 4}, read_bytes={"dp_cp": 4, "edp": 2})
    assert op.bytes == pytest.approx(1e6 * (4 + 4) + 2e6 * (2 + 2))


def test_grad_elements_count_the_blocks_and_the_root_unit():
    c = _cfg()
    m = c.model
    per_block = sum(n for n, _ in layer_tensors(m, 0))
    (dense, units), (experts, moe_units) = rank_grad_elements(c, range(4), True, True)
    assert dense == pytest.approx(4 * per_block + 2 * m.vocab_size * m.hidden_size)
    assert (units, experts, moe_units) == (5, 0, 0)
    (dense, units), _ = rank_grad_elements(c, range(1, 3), False, False)
    assert (dense, units) == (pytest.approx(2 * per_block), 2)


def _without(monkeypatch, line: str) -> None:
    """The profile as if its feature ``line`` were removed (read by the passes, the copies and
    the sharded-path choice)."""
    def supports(cfg, name):
        return False if name == line else profile_supports(cfg, name)
    for mod in (sharded_passes_mod, fsdp2_copies, sharding_mod):
        monkeypatch.setattr(mod, "profile_supports", supports)


def _passes(c, monkeypatch=None, line: bool | None = None):
    if line is False:
        _without(monkeypatch, "fsdp2_reduce_scatter_wait")
    pricer = Pricer(c)
    side = [0.0] * c.parallel.pp
    out = unit_gather_waits(c, pricer, chunks(c, pricer, shard_of(c)), side)
    return pricer, out, side


def test_the_forward_and_backward_carry_the_copies_on_the_compute_stream(monkeypatch):
    """Hand sum: each pass minus the same pass without the copies is the copy-out of every
    unit before the forward, and the copy-out of the blocks gathered again plus the copy-in
    (torchtitan reduces in fp32, its profile's ``grad_reduce_dtype``: 2 bytes read, 4 written)
    before the backward."""
    c = _cfg()
    pricer, out, side = _passes(c)
    units = fsdp_unit_gathers(c, range(4), True, True)
    out_fwd = pricer.price(fsdp2_copies.copy_out(units)).duration_s
    out_bwd = pricer.price(fsdp2_copies.copy_out(units[1:])).duration_s
    dense, experts = rank_grad_elements(c, range(4), True, True)
    copy_in = pricer.price(fsdp2_copies.copy_in(dense, experts, {"dp_cp": 4, "edp": 4},
                                                {"dp_cp": c.dp, "edp": c.edp})).duration_s
    assert out_fwd > 0 and out_bwd > 0 and copy_in > 0
    _without(monkeypatch, "fsdp2_copies")
    _, plain, plain_side = _passes(c)
    fwd, bwd = out[0]
    assert fwd.duration_s - plain[0][0].duration_s == pytest.approx(out_fwd, rel=1e-9)
    assert bwd.duration_s - plain[0][1].duration_s == pytest.approx(out_bwd + copy_in,
                                                                    rel=1e-9)
    assert side == plain_side


def test_before_the_torch_change_the_copy_in_runs_on_the_reduce_scatter_stream(monkeypatch):
    c = _cfg()
    _, on_compute, side_on = _passes(c)
    _, on_side, side_off = _passes(c, monkeypatch, line=False)
    moved = on_compute[0][1].duration_s - on_side[0][1].duration_s
    assert moved > 0
    # the side stream takes the whole copy-in; the compute stream sheds it less any all-gather
    # wait its earlier start then exposes (8 us of 4.06 ms here since the 37th session's
    # attention refit: the SDPA backward priced 0.1 % faster)
    assert side_off[0] - side_on[0] >= moved
    assert side_off[0] - side_on[0] == pytest.approx(moved, rel=0.005)


def test_an_fsdp2_step_is_longer_by_the_copies(monkeypatch):
    c = _cfg()
    with_copies = simulate(c).iteration_time_s
    _without(monkeypatch, "fsdp2_copies")
    assert simulate(c).iteration_time_s < with_copies


def test_the_copies_follow_the_profile_line_not_the_engine_name():
    """torch's fully_shard (torchtitan, NeMo Automodel: ``fsdp2_copies``) copies; Meta's own
    FSDP-style sharding of Llama 3, which its profile also calls fsdp2, and a run naming no
    framework do not."""
    assert fsdp2_copies.applies(_cfg())
    assert fsdp2_copies.applies(_cfg("automodel", "0.1"))
    assert not fsdp2_copies.applies(_cfg("meta-llama3", None, zero=2))
    assert not fsdp2_copies.applies(_cfg(None, None))


def _copy_names(graph) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {fsdp2_copies.COPY_OUT: [], fsdp2_copies.COPY_IN: []}
    for t in graph.tasks:
        for _, _, name in getattr(t.detail, "segments", ()):
            if name in found:
                found[name].append(t.label)
    return found


def test_fully_shard_at_zero_stage_2_takes_the_unit_path_with_its_copies(monkeypatch):
    """reshard_after_forward False (zero 2) is still fully_shard: each unit gathered for its
    forward, kept through its backward, reduce-scattered after it: the forward's copy-out of
    every unit, no copy-out before the backward, the copy-in after every backward (2 bytes
    read, 4 written: torchtitan reduces in fp32)."""
    c = _cfg(zero=2)
    graph = build_graph(c, Pricer(c))
    assert graph.fsdp
    found = _copy_names(graph)
    micro = c.schedule_microbatches
    assert len(found[fsdp2_copies.COPY_OUT]) == micro
    assert len(found[fsdp2_copies.COPY_IN]) == micro
    pricer, out, _ = _passes(c)
    units = fsdp_unit_gathers(c, range(4), True, True)
    (dense, n_units), _ = rank_grad_elements(c, range(4), True, True)
    hand_out = pricer.price(fsdp2_copies.copy_out(units)).duration_s
    hand_in = pricer.price([Elementwise(fsdp2_copies.COPY_IN, bytes=dense * (2 + 4),
                                        kernels=n_units, bwd_bytes=0.0, bwd_kernels=0)])
    _without(monkeypatch, "fsdp2_copies")
    _, plain, _ = _passes(c)
    assert out[0][0].duration_s - plain[0][0].duration_s == pytest.approx(hand_out, rel=1e-9)
    assert out[0][1].duration_s - plain[0][1].duration_s == pytest.approx(hand_in.duration_s,
                                                                          rel=1e-9)
    # Meta's zero 2 (no line) reduces once per step: not the unit path
    meta = _cfg("meta-llama3", None, zero=2)
    assert not build_graph(meta, Pricer(meta)).fsdp


@pytest.mark.parametrize("framework, version", [("torchtitan", "2024-12"), ("automodel", "0.1")])
def test_fully_shard_under_pipelining_runs_zero_2_as_zero_3(framework, version):
    """Under pipelining torchtitan's and Automodel's units are not resharded after the forward
    at zero 3 either (``fsdp_pp_unsharded`` / ``fsdp_pp_sync_every_microbatch``): at zero 2
    (reshard_after_forward False) the same no-sync mode, the same step and memory."""
    two, three = (_cfg(framework, version, pp=2, zero=z, gbs=32) for z in (2, 3))
    assert sharding_mod.fsdp_pp_mode(two) == sharding_mod.fsdp_pp_mode(three) is not None
    a, b = simulate(two), simulate(three)
    assert a.iteration_time_s == pytest.approx(b.iteration_time_s, rel=1e-12)
    assert a.peak_memory_bytes == pytest.approx(b.peak_memory_bytes, rel=1e-12)
    # Meta's own zero 2 keeps no torch no-sync mode
    assert sharding_mod.fsdp_pp_mode(_cfg("meta-llama3", None, pp=2, zero=2, gbs=32)) is None


@pytest.mark.parametrize("framework, version, mode, read, reduce, gbs, micro", [
    # torchtitan: the stage's no-sync keeps every unit gathered from its chunk's first forward
    # and accumulates the gradients unsharded in fp32; the chunk's last backward copies that
    # fp32 accumulator (unsharded_accumulated_grad_data, 4 bytes read) into the fp32 input
    ("torchtitan", "2024-12", "unsharded", 4, 4, 32, 4),
    # one micro-batch too: the pipeline stage runs its backward without sync and reduces
    # after it, so the reduce reads the fp32 accumulator the cast made (4 bytes)
    ("torchtitan", "2024-12", "unsharded", 4, 4, 8, 1),
    # NeMo Automodel: not resharded after forward, every backward reduce-scatters its 16-bit
    # gradients in bf16 (reduce_dtype bf16): no copy-out before a backward
    ("automodel", "0.1", "sync_every", ACT_BYTES, 2, 32, 4),
])
def test_copies_under_pipelining_match_hand_sums(monkeypatch, framework, version, mode, read,
                                                 reduce, gbs, micro):
    c = _cfg(framework, version, pp=2, gbs=gbs)
    assert c.schedule_microbatches == micro and sharding_mod.fsdp_pp_mode(c) == mode
    assert fsdp_grad_bytes(c)["dp_cp"] == reduce
    pricer, out, _ = _passes(c)
    _without(monkeypatch, "fsdp2_copies")
    _, plain, _ = _passes(c)
    monkeypatch.undo()
    share = 1 / micro if mode == "unsharded" else 1.0
    for v, layers in enumerate(c.virtual_stage_layers()):
        first, last = v == 0, v == 1
        units = fsdp_unit_gathers(c, layers, first, last)
        gathered = sum(g.bytes for unit in units for g in unit if g.kind == "all_gather")
        hand_out = pricer.price([Elementwise(fsdp2_copies.COPY_OUT, bytes=2 * gathered,
                                             kernels=len(units), bwd_bytes=0.0,
                                             bwd_kernels=0)]).duration_s
        (dense, n_units), _ = rank_grad_elements(c, layers, first, last)
        hand_in = pricer.price([Elementwise(
            fsdp2_copies.COPY_IN, bytes=dense * (read + reduce) * share,
            kernels=max(1, round(n_units * share)), bwd_bytes=0.0, bwd_kernels=0)]).duration_s
        assert out[v][0].duration_s - plain[v][0].duration_s == pytest.approx(hand_out,
                                                                              rel=1e-9)
        # no copy-out before a backward: the units stay gathered from the forward
        assert out[v][1].duration_s - plain[v][1].duration_s == pytest.approx(hand_in,
                                                                              rel=1e-9)
    found = _copy_names(build_graph(c, Pricer(c)))
    if mode == "unsharded":  # the copy-out leads each chunk's first forward only
        assert sorted(found[fsdp2_copies.COPY_OUT]) == ["F mb0 c0"] * 2
    else:  # every micro-batch's forward gathers again
        assert len(found[fsdp2_copies.COPY_OUT]) == 2 * micro
    assert len(found[fsdp2_copies.COPY_IN]) == 2 * micro
