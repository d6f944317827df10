"""FSDP2's copies around its collectives (issue 17): each gathered unit's copy-out
(``foreach_all_gather_copy_out``, ``split_with_sizes_copy``) and each backward's copy-in of the
gradients into the reduce-scatter input in the reduce dtype (``foreach_reduce_scatter_copy_in``),
on the compute stream (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py and
_fsdp_param_group.py, torch 2.13.0; copy-in on the compute stream since pytorch/pytorch#129721,
the change profile line ``fsdp2_reduce_scatter_wait`` marks)."""

from __future__ import annotations

import pytest

import trainsim.sharded_passes as sharded_passes_mod
from trainsim.catalog import run_config_from_dict
from trainsim.catalog.frameworks import profile_supports
from trainsim.chunks import chunks
from trainsim.model.counts import layer_tensors
from trainsim.pricing import Pricer
from trainsim.sharded_passes import unit_gather_waits
from trainsim.simulator import simulate
from trainsim.workload import fsdp2_copies
from trainsim.workload.ops import Comm
from trainsim.workload.shard import shard_of
from trainsim.workload.sharding import fsdp_unit_gathers, rank_grad_elements


def _cfg(framework: str = "torchtitan", version: str = "2024-12", pp: int = 1):
    return run_config_from_dict({
        "model": {"preset": "llama3-8b", "num_layers": 4},
        "parallel": {"tp": 1, "pp": pp, "zero_stage": 3, "data_parallel_impl": "fsdp2"},
        "training": {"global_batch_size": 16, "micro_batch_size": 1, "seq_length": 2048,
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


def test_grad_elements_count_the_blocks_and_the_root_unit():
    c = _cfg()
    m = c.model
    per_block = sum(n for n, _ in layer_tensors(m, 0))
    (dense, units), (experts, moe_units) = rank_grad_elements(c, range(4), True, True)
    assert dense == pytest.approx(4 * per_block + 2 * m.vocab_size * m.hidden_size)
    assert (units, experts, moe_units) == (5, 0, 0)
    (dense, units), _ = rank_grad_elements(c, range(1, 3), False, False)
    assert (dense, units) == (pytest.approx(2 * per_block), 2)


def _passes(c, monkeypatch=None, line: bool | None = None):
    if line is not None:
        def supports(cfg, name):
            return line if name == "fsdp2_reduce_scatter_wait" else profile_supports(cfg, name)
        monkeypatch.setattr(sharded_passes_mod, "profile_supports", supports)
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
    pricer, out, side = _passes(c, monkeypatch, line=True)
    units = fsdp_unit_gathers(c, range(4), True, True)
    out_fwd = pricer.price(fsdp2_copies.copy_out(units)).duration_s
    out_bwd = pricer.price(fsdp2_copies.copy_out(units[1:])).duration_s
    dense, experts = rank_grad_elements(c, range(4), True, True)
    copy_in = pricer.price(fsdp2_copies.copy_in(dense, experts, {"dp_cp": 4, "edp": 4},
                                                {"dp_cp": c.dp, "edp": c.edp})).duration_s
    assert out_fwd > 0 and out_bwd > 0 and copy_in > 0
    monkeypatch.setattr(fsdp2_copies, "applies", lambda cfg: False)
    _, plain, plain_side = _passes(c)
    fwd, bwd = out[0]
    assert fwd.duration_s - plain[0][0].duration_s == pytest.approx(out_fwd, rel=1e-9)
    assert bwd.duration_s - plain[0][1].duration_s == pytest.approx(out_bwd + copy_in,
                                                                    rel=1e-9)
    assert side == plain_side


def test_before_the_torch_change_the_copy_in_runs_on_the_reduce_scatter_stream(monkeypatch):
    c = _cfg()
    _, on_compute, side_on = _passes(c, monkeypatch, line=True)
    _, on_side, side_off = _passes(c, monkeypatch, line=False)
    moved = on_compute[0][1].duration_s - on_side[0][1].duration_s
    assert moved > 0
    assert side_off[0] - side_on[0] == pytest.approx(moved, rel=1e-9)


def test_an_fsdp2_step_is_longer_by_the_copies(monkeypatch):
    c = _cfg()
    with_copies = simulate(c).iteration_time_s
    monkeypatch.setattr(fsdp2_copies, "applies", lambda cfg: False)
    assert simulate(c).iteration_time_s < with_copies
