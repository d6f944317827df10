"""Megatron-core's combined 1F1B hides each expert exchange behind the compute its schedule puts
beside it (core_v0.15.0 model_chunk_schedule_plan.py ``TransformerLayerSchedulePlan.run``):
the backward's combine beside the forward's attention, the dispatches beside the MLPs, the
forward's combine beside the backward's attention; not behind a pass's whole compute."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import moe_layer_cfg

from trainsim import ep_pairs, simulate
from trainsim.catalog.frameworks import framework_supports
from trainsim.chunks import chunks
from trainsim.pricing import Priced, Pricer, shared
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Comm, Elementwise, Gemm
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.schedule import combined_1f1b
from trainsim.workload.shard import shard_of

BIG, MED, SMALL = (65536, 8192, 8192), (16384, 8192, 8192), (256, 1024, 1024)


def paired_layer(pricer: Pricer, fwd_ops, bwd_ops) -> tuple[Priced, Priced] | None:
    """The forward and backward of one MoE layer priced as a combined-1F1B pair: each pass's
    compute and host wait as it runs alone, and on the backward one ``EP`` segment, the time
    the pair's schedule takes beyond them, where the compute beside an exchange is slowed by
    the SMs the exchange holds (``Pricer.sm_share['ep']``). None where a pass has not the one
    dispatch and one combine node the schedule pairs."""
    got = ep_pairs.moe_sides(pricer, fwd_ops, bwd_ops)
    if got is None:
        return None
    fwd, bwd, f, b = got
    return fwd, ep_pairs.with_exposed(bwd, ep_pairs.exposed(f, b, pricer.sm_share["ep"]))


def _pricer(framework: str | None = None, version: str | None = None, **parallel) -> Pricer:
    return Pricer(moe_layer_cfg("alltoall", ep=32, framework=framework, version=version,
                                experts=32, topk=4, gpus=32, moe_overlap_ep_comm=True,
                                **parallel))


def _passes(attn_f, mlp_f, mlp_b, attn_b, exchange_bytes, wgrad=SMALL):
    """A forward [attention, dispatch, MLP, combine, bda] and its backward, GEMM sizes given."""
    x = exchange_bytes
    fwd = [Gemm("qkv_proj", *attn_f), Comm("moe.dispatch_all_to_all", "all_to_all", x, "ep"),
           Gemm("expert_fc1", *mlp_f), Comm("moe.combine_all_to_all", "all_to_all", x, "ep"),
           Elementwise("mlp_bias_dropout_add", 1e3)]
    bwd = [Elementwise("mlp_bias_dropout_add.bwd", 1e3),
           Comm("moe.combine_all_to_all.bwd", "all_to_all", x, "ep"),
           Gemm("expert_fc1.dgrad", *mlp_b), Gemm("expert_fc1.wgrad", *wgrad),
           Comm("moe.dispatch_all_to_all.bwd", "all_to_all", x, "ep"),
           Gemm("qkv_proj.dgrad", *attn_b)]
    return fwd, bwd


def _features(monkeypatch, *features: str) -> None:
    """The run's profile with these ``ep_pairs`` mechanisms only."""
    monkeypatch.setattr(ep_pairs, "profile_supports", lambda cfg, feature: feature in features)


def _total(pair) -> float:
    return sum(p.duration_s for p in pair)


def test_an_exchange_hides_only_behind_the_compute_beside_it():
    """Small attention, big MLPs: the pooled pricing hides the backward's combine behind the
    backward's MLP; in the pair it runs beside the forward's (short) attention, exposed."""
    pricer = _pricer()
    fwd, bwd = _passes(SMALL, BIG, BIG, SMALL, 2e8)
    pooled = pricer.price(fwd).duration_s + pricer.price(bwd).duration_s
    pair = paired_layer(pricer, fwd, bwd)
    assert pair is not None
    combine = pricer.comm_time(fwd[3])
    big = pricer.compute.time(fwd[2])
    assert big > 2 * combine  # the backward alone hides both its exchanges whole
    assert _total(pair) > pooled + 0.5 * combine


def test_a_pass_short_of_compute_borrows_its_partners(monkeypatch):
    """A forward whose exchanges outlast its compute (attention, a short MLP), beside a
    backward whose MLP and attention fill the matching phases, its weight gradients (delayed:
    --delay-wgrad-compute) the wait for its own dispatch: the pair hides what the pooled
    forward exposed."""
    pricer = _pricer(delay_wgrad_compute=True)
    fwd, bwd = _passes(MED, SMALL, MED, MED, 2e8, wgrad=MED)
    comm = pricer.comm_time(fwd[1])
    assert pricer.compute.time(fwd[0]) + pricer.compute.time(fwd[2]) < 2 * comm
    pooled = pricer.price(fwd).duration_s + pricer.price(bwd).duration_s
    pair = paired_layer(pricer, fwd, bwd)
    assert pair is not None and _total(pair) < pooled


def test_exchanges_shorter_than_their_phases_cost_only_their_sms():
    """Every exchange shorter than the compute beside it: the pair takes its compute, slowed by
    the SMs the exchanges hold while they run (the host's waits hidden in that time)."""
    pricer = _pricer()
    fwd, bwd = _passes(BIG, BIG, BIG, BIG, 4e7)
    pair = paired_layer(pricer, fwd, bwd)
    assert pair is not None
    compute = sum(pricer.compute.time(op) for op in fwd + bwd if not isinstance(op, Comm))
    comm = sum(pricer.comm_time(op) for op in fwd + bwd if isinstance(op, Comm))
    assert 10 * comm < compute
    assert _total(pair) == pytest.approx(compute + comm * pricer.sm_share["ep"], rel=1e-4)


def test_a_pass_without_its_two_exchange_nodes_is_left_to_the_pooled_pricing():
    pricer = _pricer()
    fwd, bwd = _passes(SMALL, SMALL, SMALL, SMALL, 4e8)
    assert paired_layer(pricer, fwd[:2], bwd) is None
    assert paired_layer(pricer, [Gemm("qkv_proj", *SMALL)], bwd) is None


def test_combined_1f1b_chunks_price_their_moe_layers_as_pairs():
    cfg = moe_layer_cfg("alltoall", ep=8, experts=32, topk=4, gpus=8, moe_overlap_ep_comm=True)
    assert combined_1f1b(cfg)
    pricer, sh = Pricer(cfg), shard_of(cfg)
    lf = layer_forward(cfg, sh, moe=True)
    lb = layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)
    pair = paired_layer(pricer, lf, lb)
    assert pair is not None
    ch = chunks(cfg, pricer, sh)[0]
    assert ch.fwd_parts[2].segments == pair[0].segments
    assert ch.bwd_layers[0].segments == pair[1].segments


def test_the_combine_node_runs_the_unpermute_on_the_communication_stream():
    """What follows the combine exchange in the layer (the alltoall dispatcher's unpermute,
    ``combine_postprocess``, and mlp_bda) runs in the combine node, on the communication stream
    after the exchange (fine_grained_callables.py ``submodule_combine_forward``): beside an
    attention shorter than the exchange, a longer unpermute lengthens the pair by its own time;
    the same time spent in the MLP node would hide behind the exchanges."""
    pricer = _pricer()
    fwd, bwd = _passes(SMALL, SMALL, SMALL, SMALL, 2e8)
    unpermute = Elementwise("unpermute", 2e8, bwd_bytes=2e8)
    fwd2 = fwd[:4] + [unpermute] + fwd[4:]
    bwd2 = bwd[:1] + [Elementwise("unpermute.bwd", 2e8)] + bwd[1:]
    base, moved = _total(paired_layer(pricer, fwd, bwd)), _total(paired_layer(pricer, fwd2, bwd2))
    t = pricer.compute.time(unpermute) + pricer.compute.time(bwd2[1])
    assert t > 0
    assert moved - base == pytest.approx(t, rel=1e-6)
    shared = [Elementwise("shared_act", 2e8)]  # compute-stream work: hides behind the exchanges
    assert _total(paired_layer(pricer, fwd[:4] + shared + fwd[4:], bwd)) < base + 0.5 * t


def test_a_layer_priced_again_inside_shared_is_paired_again():
    """Inside ``pricing.shared`` (a search) an equal op list takes the price kept for the first
    one, whose op objects are not the new list's: the pair reads positions, so every equal
    layer is paired the same, not only the first."""
    cfg = moe_layer_cfg("alltoall", ep=8, experts=32, topk=4, gpus=16, moe_overlap_ep_comm=True)

    def pair(pricer):
        sh = shard_of(cfg)
        lf = layer_forward(cfg, sh, moe=True)
        lb = layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)
        got = paired_layer(pricer, lf, lb)
        assert got is not None
        return got[0].segments, got[1].segments

    alone = pair(Pricer(cfg))
    with shared(("test_ep_pairs", 1)):
        pricer = Pricer(cfg)
        assert pair(pricer) == alone
        assert pair(pricer) == alone
        assert pair(Pricer(cfg)) == alone


def test_a_search_prices_an_overlapped_moe_run_as_simulate_does():
    """A search simulates its candidates inside ``shared``: an ``ep_overlap`` MoE candidate
    simulated there after another of the same layers (another batch) is the run simulated
    alone, to the bit."""
    cfg = moe_layer_cfg("alltoall", ep=8, experts=32, topk=4, gpus=16, moe_overlap_ep_comm=True)
    cfg = replace(cfg, model=replace(cfg.model, num_layers=4))
    other = replace(cfg, training=replace(cfg.training, global_batch_size=64))
    assert combined_1f1b(cfg) and combined_1f1b(other)
    alone = simulate(replace(other)).iteration_time_s
    with shared(("test_ep_pairs", 2)):
        simulate(replace(cfg))
        assert simulate(replace(other)).iteration_time_s == alone


def test_expert_tp_collectives_block_the_mlp_node():
    """The expert-TP all-gather and reduce-scatter run in the MLP node on the compute stream
    (token_dispatcher.py ``dispatch_postprocess`` / ``combine_preprocess``, called from
    ``routed_experts_compute``), not beside it in the dispatch and combine nodes: with every
    exchange hidden, they add their whole time to the pair."""
    # the exchange holding an NVLink node's 32 p2p channels (not the 4 of this group's two
    # nodes): the pair's exposed time then absorbs the host's launches of the four more kernels
    cfg = moe_layer_cfg("alltoall", ep=8, experts=32, topk=4, gpus=32,
                        moe_overlap_ep_comm=True, expert_tensor_parallel_size=2)
    pricer = Pricer(cfg, sm_share={"ep": 32 / cfg.cluster.gpu.num_sms})
    fwd, bwd = _passes(BIG, BIG, BIG, BIG, 4e7)
    y = 4e7
    gather = Comm("moe.etp_all_gather", "all_gather", y, "etp")
    scatter = Comm("moe.etp_reduce_scatter", "reduce_scatter", y, "etp")
    fwd2 = fwd[:2] + [gather] + fwd[2:3] + [scatter] + fwd[3:]
    bwd2 = bwd[:2] + [Comm("moe.etp_reduce_scatter.bwd", "all_gather", y, "etp")] + bwd[2:4] + \
        [Comm("moe.etp_all_gather.bwd", "reduce_scatter", y, "etp")] + bwd[4:]
    t = sum(pricer.comm_time(op) for op in fwd2 + bwd2 if isinstance(op, Comm) and op.group == "etp")
    assert t > 0
    base, more = _total(paired_layer(pricer, fwd, bwd)), _total(paired_layer(pricer, fwd2, bwd2))
    assert more - base == pytest.approx(t, rel=1e-3)


def test_the_dispatch_waits_for_the_weight_gradients_unless_they_are_delayed():
    """Without --delay-wgrad-compute the MLP's backward computes its weight gradients and the
    backward's dispatch waits for them (TransformerLayerNode.backward_dw returns at once);
    delayed, they run beside the dispatch. The run's parallel.delay_wgrad_compute says which;
    left out, Megatron-Bridge's profile delays them (its perf scripts do with the overlap),
    Megatron-core's (its own default) and a run naming no framework do not."""
    fwd, bwd = _passes(SMALL, SMALL, SMALL, SMALL, 2e8, wgrad=BIG)

    def total(pricer: Pricer) -> float:
        return _total(paired_layer(pricer, fwd, bwd))

    pricer = _pricer(delay_wgrad_compute=False)
    wgrad, comm = pricer.compute.time(bwd[3]), pricer.comm_time(fwd[1])
    waits, delayed = total(pricer), total(_pricer(delay_wgrad_compute=True))
    assert waits > delayed + 0.5 * min(wgrad, comm)
    assert total(_pricer()) == pytest.approx(waits)
    assert total(_pricer("megatron-core", "0.17")) == pytest.approx(waits)
    assert total(_pricer("megatron-bridge", "25.11")) == pytest.approx(delayed)
    stated = _pricer("megatron-bridge", "25.11", delay_wgrad_compute=False)
    assert total(stated) == pytest.approx(waits)


def test_delay_wgrad_compute_is_a_run_setting():
    """parallel.delay_wgrad_compute is read from a config mapping (``--set``), None where left
    out, and resolved against the framework profile's default."""
    from trainsim import run_config_from_dict

    base = {"model": {"preset": "qwen3-30b-a3b"},
            "parallel": {"ep": 16, "moe_overlap_ep_comm": True},
            "training": {"global_batch_size": 1024, "micro_batch_size": 1,
                         "seq_length": 4096, "framework": "megatron-bridge",
                         "framework_version": "26.04"},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8}}
    cfg = run_config_from_dict(base)
    assert cfg.parallel.delay_wgrad_compute is None and ep_pairs.delay_wgrad_compute(cfg)
    off = run_config_from_dict({**base, "parallel": {**base["parallel"],
                                                     "delay_wgrad_compute": "false"}})
    assert off.parallel.delay_wgrad_compute is False and not ep_pairs.delay_wgrad_compute(off)


def test_delayed_weight_gradients_without_the_overlap_are_refused():
    """Megatron-core asserts overlap_moe_expert_parallel_comm with delay_wgrad_compute
    (core_v0.16.0 transformer_config.py L1909-1912): an explicit true without
    moe_overlap_ep_comm is a one-line ConfigError naming the field; None or false are fine."""
    from trainsim.config import ParallelConfig
    from trainsim.errors import ConfigError

    with pytest.raises(ConfigError, match=r"^parallel.delay_wgrad_compute=true needs "
                                          r"moe_overlap_ep_comm=true [^\n]*$"):
        ParallelConfig(expert_model_parallel_size=8, delay_wgrad_compute=True)
    assert ParallelConfig(expert_model_parallel_size=8, delay_wgrad_compute=False).delay_wgrad_compute is False
    assert ParallelConfig(expert_model_parallel_size=8).delay_wgrad_compute is None
    assert ParallelConfig(expert_model_parallel_size=8, moe_overlap_ep_comm=True, delay_wgrad_compute=True) \
        .delay_wgrad_compute is True


def test_shared_experts_run_in_the_node_of_the_runs_megatron_core(monkeypatch):
    """The shared experts run in the MLP node in core_v0.14-v0.15 (submodule_moe_forward), in
    the attention node from core_v0.16 (submodule_attn_forward), their backward in the same
    node's: beside a long MLP and a short attention, with exchanges longer than the attention,
    the attention node's extra compute hides its exchange, the MLP node's does not. Bridge
    26.04 (core 0.17) has it, 25.09 (core 0.14) not."""
    pricer = _pricer()
    fwd, bwd = _passes(SMALL, BIG, BIG, SMALL, 2e8)
    shared_f, shared_b = Gemm("shared_fc1", *MED), Gemm("shared_fc1.dgrad", *MED)
    fwd2, bwd2 = fwd[:4] + [shared_f] + fwd[4:], bwd[:1] + [shared_b] + bwd[1:]
    comm = pricer.comm_time(fwd[3])
    t = pricer.compute.time(shared_f)
    assert comm > pricer.compute.time(fwd[0]) + t / 2 and t > comm / 4
    _features(monkeypatch)
    base = _total(paired_layer(pricer, fwd, bwd))
    in_mlp = _total(paired_layer(pricer, fwd2, bwd2))
    _features(monkeypatch, "moe_shared_experts_attn_node")
    in_attn = _total(paired_layer(pricer, fwd2, bwd2))
    assert in_mlp - base > 0.9 * (t + pricer.compute.time(shared_b))  # behind no exchange
    assert in_attn < in_mlp - 0.5 * min(comm, t)
    assert framework_supports("megatron-bridge", "26.04", "moe_shared_experts_attn_node")
    assert not framework_supports("megatron-bridge", "25.09", "moe_shared_experts_attn_node")


@pytest.mark.parametrize(("framework", "version", "attn_node"), [
    ("megatron-core", "0.15", False), ("megatron-core", "0.16", True),
    ("megatron-core", "0.17", True), ("megatron-lm", "2025-12", False),
    ("megatron-lm", "2026-01-16", True), ("megatron-bridge", "25.11", False),
    ("megatron-bridge", "26.02", True)])
def test_shared_experts_attention_node_by_version(framework, version, attn_node):
    """Megatron-LM 1501c0f (2026-01-16) moved combined 1F1B's shared experts into the attention
    node: core_v0.16.0 holds it, core_v0.15.x not; Megatron-Bridge v0.3.0 (26.02) pins b0cc2706
    (2026-02-23), which holds it, v0.2.x (25.11) pins 0d8e0714 / cba6b0ed, which do not."""
    assert framework_supports(framework, version, "moe_shared_experts_attn_node") is attn_node


def test_a_recomputed_input_layernorm_runs_in_the_attention_backward(monkeypatch):
    """The input layernorm recomputed by its hook on the attention's output runs at the start
    of the attention's backward (transformer_layer.py input_layernorm_checkpoint), beside the
    forward's combine; the pre-MLP layernorm's, hooked on the experts' output, in the MLP's."""
    _features(monkeypatch)
    pricer = _pricer()
    fwd, bwd = _passes(SMALL, BIG, BIG, SMALL, 2e8)
    norm = Elementwise("attn_norm", 2e8)
    fwd2 = [norm] + fwd
    bwd2 = [Elementwise("recompute.attn_norm", 2e8)] + bwd + [Elementwise("attn_norm.bwd", 1e3)]
    comm, t = pricer.comm_time(fwd[3]), pricer.compute.time(bwd2[0])
    assert comm > pricer.compute.time(fwd[0]) + t + pricer.compute.time(norm) and t > 0
    base = _total(paired_layer(pricer, fwd2, bwd2[1:]))
    # beside the forward's exposed combine, the re-run hides; in the MLP's backward it would not
    assert _total(paired_layer(pricer, fwd2, bwd2)) - base < 0.5 * t


@pytest.mark.parametrize("tp", [1, 2])
def test_the_shared_experts_ops_and_only_they_carry_the_prefix_the_pairing_reads(tp):
    """``ep_pairs`` tells the shared experts' ops by ``SHARED_EXPERT_PREFIX``: the layer with
    shared experts has exactly the ops of the one without plus the prefixed ones (their TP
    collectives included), and the layer without has none."""
    from trainsim.workload.moe_block import SHARED_EXPERT_PREFIX

    def names(shared: int | None) -> list[str]:
        cfg = moe_layer_cfg("alltoall", ep=8, gpus=16, tensor_model_parallel_size=tp,
                            sequence_parallel=tp > 1)
        cfg = replace(cfg, model=replace(cfg.model, moe_shared_expert_intermediate_size=shared))
        return [op.name for op in layer_forward(cfg, shard_of(cfg), moe=True)]

    plain, with_shared = names(None), names(1024)
    extra = [n for n in with_shared if n not in plain]
    assert extra and all(n.startswith(SHARED_EXPERT_PREFIX) for n in extra)
    assert not any(n.startswith(SHARED_EXPERT_PREFIX) for n in plain)
    assert len(with_shared) == len(plain) + len(extra)


def test_layers_pair_by_position_as_the_chunk_schedule_plan_pops_them():
    """``TransformerModelChunkSchedulePlan.run`` (core_v0.16.0 lines 467-504) pairs forward
    layer i with the backward chunk's ``pop_layer()``, its layer n-1-i, then runs the
    backward's leftover layers alone, then the forward's. Hand-made sides (share 0):
    an MoE pair exposes 3+3+3+3 - (2+4) = 6 (phase 1 max(3, 1), phase 2 max(3+3, 3+1),
    phase 3 max(3, 2)); a dense partner, whose nodes outlast the exchanges, hides them all;
    an MoE backward with no partner exposes its two exchanges, 6."""
    moe = (ep_pairs.Side(attn=1, mlp=1, wgrad=0, dispatch=3, combine=3, node=0, busy=2),
           ep_pairs.Side(attn=2, mlp=2, wgrad=0, dispatch=3, combine=3, node=0, busy=4))
    dense = (ep_pairs.Side(attn=4, mlp=4, wgrad=0, dispatch=0, combine=0, node=0, busy=8),
             ep_pairs.Side(attn=8, mlp=8, wgrad=0, dispatch=0, combine=0, node=0, busy=16))
    ex = ep_pairs.chunk_exposed
    assert ex((dense, moe, moe), (dense, moe, moe), 0.0) == [0.0, 6.0, 0.0]
    assert ex((moe,), (moe, moe), 0.0) == [6.0, 6.0]  # f0 beside b1, then b0 alone
    assert ex((moe, dense), (moe,), 0.0) == [6.0, 0.0]  # f1 (dense) alone: nothing exposed


def _mixed_chunk(first_dense: int, layers: int = 3):
    """One chunk (pp 1) of ``layers`` synthetic layers, the first ``first_dense`` dense, under
    the combined 1F1B: MoE layers of medium GEMMs with exchanges longer than their compute,
    dense layers whose attention and MLP outlast any exchange."""
    cfg = moe_layer_cfg("alltoall", ep=32, experts=32, topk=4, gpus=32,
                        moe_overlap_ep_comm=True)
    cfg = replace(cfg, model=replace(cfg.model, num_layers=layers,
                                     moe_first_dense_layers=first_dense))
    mid = (4096, 4096, 4096)
    moe_f, _ = _passes(mid, mid, mid, mid, 4e8)
    big = (65536, 16384, 16384)
    dense_f = [Gemm("qkv_proj", *big), Elementwise("mlp_norm", 1e3), Gemm("fc1", *big)]

    def source(c, sh, is_moe):
        return list(moe_f if is_moe else dense_f)

    # the exchanges' SMs only: the H100's GEMMs priced as if they shared the SMs left (an
    # override of the share holds for the GEMMs too; their static schedule has its own test)
    held = Pricer(cfg).sm_share["ep"]
    pricer, sh = Pricer(cfg, sm_share={"ep": held}), shard_of(cfg)
    ch = chunks(cfg, pricer, sh, source)[0]
    exposed = sum(seg[1] for seg in ch.bwd.segments if seg[2] == ep_pairs.PAIR_EXPOSED)
    return pricer, moe_f, dense_f, exposed


def test_a_mixed_dense_and_moe_chunk_pairs_each_forward_with_the_mirrored_backward():
    """Layers [dense, MoE, MoE] in one chunk: forward 0 (dense) beside backward 2 (MoE),
    forward 1 beside backward 1 (MoE beside MoE), forward 2 (MoE) beside backward 0 (dense).
    Beside a dense pass, whose nodes outlast every exchange, the MoE pass's two exchanges (X/2
    of the four's X) cost only the SMs they hold (share s of their time), its host wait h
    hidden: s X/2 - h each. The MoE pair exposes its four exchanges less its GEMMs' time c
    beside them, slowed by s, and the host waits h: X - (1 - s) c - h. In all
    X (1 + s) - (1 - s) c - 2 h; pairing each MoE layer with its own backward (the earlier
    pricing) gave 2 (X - (1 - s) c - h)."""
    pricer, moe_f, dense_f, got = _mixed_chunk(first_dense=1)
    s = pricer.sm_share["ep"]
    sh = shard_of(pricer.cfg)
    moe_b = backward_of(moe_f, sh)
    x = sum(pricer.comm_time(op) for op in moe_f + moe_b if isinstance(op, Comm))
    c = sum(pricer.compute.time(op) for op in moe_f + moe_b if isinstance(op, Gemm))
    h = sum(seg[1] for ops in (moe_f, moe_b) for seg in pricer.price(ops).segments
            if seg[0] == "host")
    dense = min(pricer.compute.time(op) for op in dense_f + backward_of(dense_f, sh)
                if isinstance(op, Gemm) and not op.name.endswith("wgrad"))
    assert dense > x > 10 * (c + h)  # the regime the expectation is derived in
    assert got == pytest.approx(x * (1 + s) - (1 - s) * c - 2 * h, rel=1e-9)
    assert got < 0.6 * 2 * (x - (1 - s) * c - h)


def test_a_statically_scheduled_gemm_loses_half_its_time_beside_an_exchange():
    """Hand count of ``exposed`` with the GEMMs' share g = 1/2 and the exchange's SMs s = 0.1
    (f: attention 1 s all GEMM, MLP 1 s all GEMM; b: attention 2 s no GEMM, MLP 2 s all
    GEMM; every exchange 3 s): phase 1 = 3 + 1 x 1/2 = 3.5; phase 2 = max(3 + 3, 3 + 1) +
    min(6, 3) x 1/2 = 7.5; phase 3 = 3 + 2 x 0.1 = 3.2; less the passes' 2 + 4 s: 8.2 s.
    With the SMs' share alone: 3.1 + 6.3 + 3.2 - 6 = 6.6 s."""
    f = ep_pairs.Side(attn=1, mlp=1, wgrad=0, dispatch=3, combine=3, node=0, busy=2,
                      attn_gemm=1, mlp_gemm=1)
    b = ep_pairs.Side(attn=2, mlp=2, wgrad=0, dispatch=3, combine=3, node=0, busy=4,
                      attn_gemm=0, mlp_gemm=2)
    assert ep_pairs.exposed(f, b, 0.1, 0.5) == pytest.approx(8.2)
    assert ep_pairs.exposed(f, b, 0.1) == pytest.approx(6.6)
    assert ep_pairs.exposed(f, b, 0.1, 0.1) == pytest.approx(6.6)


def test_the_gemms_share_is_half_on_hopper_and_the_held_share_elsewhere():
    """``Pricer.ep_gemm_share``: STATIC_TILE_GEMM_SHARE (1/2) where the GPU's GEMMs keep a
    static tile schedule (sm_arch 90), the exchange's SMs on Blackwell, and an override of
    the exchange's share (its own SMs) for the GEMMs too."""
    from trainsim.catalog import gpu
    from trainsim.pricing import STATIC_TILE_GEMM_SHARE

    hopper = moe_layer_cfg("alltoall", ep=32, gpus=32, moe_overlap_ep_comm=True)
    assert hopper.cluster.gpu.sm_arch == 90
    assert Pricer(hopper).ep_gemm_share == STATIC_TILE_GEMM_SHARE == 0.5
    assert Pricer(hopper, sm_share={"ep": 0.0}).ep_gemm_share == 0.0
    blackwell = replace(hopper, cluster=replace(hopper.cluster, gpu=gpu("b200-sxm-180gb")))
    assert blackwell.cluster.gpu.sm_arch == 100
    p = Pricer(blackwell)
    assert p.ep_gemm_share == p.sm_share["ep"] < 0.5


def test_hopper_gemms_beside_an_exchange_expose_more_of_it():
    """One MoE chunk of two layers whose exchanges outlast their GEMMs: on the H100 the pair
    exposes the exchanges less half the GEMMs' time beside them, not less (1 - s) of it."""
    _, _, _, held = _mixed_chunk(first_dense=0, layers=2)
    cfg = moe_layer_cfg("alltoall", ep=32, experts=32, topk=4, gpus=32,
                        moe_overlap_ep_comm=True)
    cfg = replace(cfg, model=replace(cfg.model, num_layers=2, moe_first_dense_layers=0))
    mid = (4096, 4096, 4096)
    moe_f, _ = _passes(mid, mid, mid, mid, 4e8)
    pricer, sh = Pricer(cfg), shard_of(cfg)
    ch = chunks(cfg, pricer, sh, lambda c, s, m: list(moe_f))[0]
    static = sum(seg[1] for seg in ch.bwd.segments if seg[2] == ep_pairs.PAIR_EXPOSED)
    s = pricer.sm_share["ep"]
    moe_b = backward_of(moe_f, sh)
    c = sum(pricer.compute.time(op) for op in moe_f + moe_b if isinstance(op, Gemm))
    # two pairs, each with its GEMMs' c beside the exchanges: (1 - s) c hidden before, c / 2 now
    assert static - held == pytest.approx(2 * (0.5 - s) * c, rel=1e-6)
