"""Transformer Engine's ring attention (workload.context_parallel.te_ring_forward/_backward):
the ops of one rank against a hand count from AttnFuncWithCPAndKVP2P (TE v2.8
attention/dot_product_attention/context_parallel.py), and the frameworks that run it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from trainsim import ConfigError
from trainsim.catalog import run_config_from_dict
from trainsim.pricing import COMM_SMS, CP, P2P_SMS, Pricer
from trainsim.workload.context_parallel import (
    TE_GRAD_ACC_BYTES,
    TE_OUT_CORRECTION_BYTES,
    te_ring_backward,
    te_ring_forward,
)
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Attention, Comm, Elementwise
from trainsim.workload.shard import shard_of


def _cfg(cp: int, framework: str | None = "megatron-core", version: str | None = "0.12",
         seq: int = 8192, model: str = "llama3-8b", attention: str | None = None, tp: int = 1):
    training = {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": seq,
                "dtype": "bf16"}
    if framework:
        training |= {"framework": framework, "framework_version": version}
    if attention:
        training["attention"] = attention
    return run_config_from_dict({
        "model": model,
        "parallel": {"tp": tp, "pp": 1, "cp": cp, "cp_comm_type": "p2p"},
        "training": training,
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8 * cp * tp, "gpus_per_node": 8},
    })


def _kv(c, local: int) -> int:
    """K and V bytes of ``local`` tokens at tp 1, 16-bit."""
    return local * 2 * c.model.num_kv_heads * c.model.kv_channels * 2


@pytest.mark.parametrize("cp", [2, 4])
def test_forward_is_cp_calls_covering_the_ranks_causal_share(cp):
    """Step 0 causal on the 8192 / cp local tokens, cp-1 calls of all local queries against
    half as many keys (the last rank's share): together about the pairs of a causal kernel of
    the local queries against the whole sequence, 8192 / cp x 8192 / 2 per head. The log-sum-exp
    merges (one a later step) and the output corrections: 4 + 6 (cp - 1) bytes an output
    element, plus two fp32 log-sum-exp terms a row per step."""
    c = _cfg(cp)
    fwd = layer_forward(c, shard_of(c))
    calls = [op for op in fwd if isinstance(op, Attention)]
    local = 8192 // cp
    assert [(a.q_len, a.kv_len, a.causal) for a in calls] == \
        [(local, local, True)] + [(local, local // 2, False)] * (cp - 1)
    # the diagonal's triangle, its own keys included, and cp-1 rectangles of half the keys
    assert sum(a.pairs for a in calls) == local * (local + 1) / 2 + (cp - 1) * local * local / 2
    assert sum(a.pairs for a in calls) == pytest.approx(local * 8192 / 2, rel=1e-3)
    heads, d = c.model.num_attention_heads, c.model.kv_channels
    out = local * heads * d
    corr = next(op for op in fwd if op.name == "attn_core.te_ring_out_correction")
    assert TE_OUT_CORRECTION_BYTES == (4, 6)
    assert corr.bytes == out * (4 + 6 * (cp - 1)) + local * heads * 4 * 2 * cp
    lse = [op for op in fwd if isinstance(op, Elementwise) and op.name.endswith("lse_correction")]
    assert len(lse) == cp - 1 and all(op.bytes == local * heads * 12 for op in lse)
    # torch.cat of K and V into the first send buffer: read and write 16 bits an element
    cat = next(op for op in fwd if op.name == "attn_core.te_ring_kv_cat")
    assert cat.bytes == _kv(c, local) * 2


@pytest.mark.parametrize("cp", [2, 4, 8])
def test_each_forward_hop_runs_under_the_call_before_it(cp):
    """TE issues step i+1's K/V exchange before step i's call on that call's stream (v2.8
    L1356-1372): each of the cp-1 hops directly follows an attention call, which it hides
    behind (``overlap_with_previous`` hides only behind the compute op just before)."""
    c = _cfg(cp, seq=1024 * cp)
    fwd = layer_forward(c, shard_of(c))
    at = [i for i, op in enumerate(fwd) if isinstance(op, Comm) and op.group == "cp"]
    assert len(at) == cp - 1
    assert all(isinstance(fwd[i - 1], Attention) and fwd[i].overlap_with_previous for i in at)
    assert all(fwd[i].bytes == _kv(c, 1024) for i in at)


@pytest.mark.parametrize("cp", [2, 4])
def test_backward_runs_the_steps_in_reverse_each_under_its_hop(cp):
    """The backward: cp calls, the half steps first and the causal diagonal last; each call
    followed by the hop sent before it and waited after it: K/V at step 0, K/V + dK/dV at
    steps 1..cp-2, dK/dV at step cp-1, 2cp-2 K/V-sized transfers and none after the loop.
    dQ copied (2 + 2 bytes) at step 0 then added (2 + 2 + 2); dK/dV on half the keys at the
    half steps, on all of them at the diagonal."""
    c = _cfg(cp)
    bwd = backward_of(layer_forward(c, shard_of(c)), shard_of(c))
    local = 8192 // cp
    calls = [op for op in bwd if isinstance(op, Attention)]
    assert all(a.backward for a in calls)
    assert [(a.kv_len, a.causal) for a in calls] == \
        [(local // 2, False)] * (cp - 1) + [(local, True)]
    kv = _kv(c, local)
    at = [i for i, op in enumerate(bwd) if isinstance(op, Comm) and op.group == "cp"]
    assert [bwd[i].bytes for i in at] == [kv] + [2 * kv] * (cp - 2) + [kv]
    assert sum(bwd[i].bytes for i in at) == (2 * cp - 2) * kv
    assert all(isinstance(bwd[i - 1], Attention) and bwd[i].overlap_with_previous for i in at)
    q = local * c.model.num_attention_heads * c.model.kv_channels
    kv_elems = kv // 2
    acc = [op for op in bwd if op.name.endswith("grad_acc")]
    assert TE_GRAD_ACC_BYTES == (4, 6)
    assert [op.bytes for op in acc] == [(q + kv_elems // 2) * 4] + \
        [(q + kv_elems // 2) * 6] * (cp - 2) + [(q + kv_elems) * 6]
    # nothing of the ring after the last step's accumulation
    assert bwd.index(acc[-1]) > max(at)
    copy = next(op for op in bwd if op.name == "attn_core.te_ring_kv_copy.bwd")
    assert copy.bytes == kv * 2


def test_exposed_cp_time_is_only_the_sm_share_when_hops_are_shorter_than_calls():
    """Each hop shorter than the call it runs under: the ring's exposed CP time is only the
    slowdown of the calls from the SMs the transfers hold (``Pricer.hidden_behind``), nothing
    of a transfer itself."""
    c = _cfg(4, seq=32768)
    sh = shard_of(c)
    fwd = layer_forward(c, sh)
    ops = fwd + backward_of(fwd, sh)
    pricer = Pricer(c)
    hops = [op for op in ops if isinstance(op, Comm) and op.group == "cp"]
    calls = [pricer.price([op]).segments[0][1] for op in ops if isinstance(op, Attention)]
    assert max(pricer.comm_time(h) for h in hops) < min(calls)
    exposed = sum(t for cat, t, _ in pricer.price(ops).segments if cat == CP)
    share = pricer.sm_share["cp"]
    assert share == pricer.sm_share["dp"]  # an NVLink ring: a collective's SMs
    assert exposed == pytest.approx(share * sum(pricer.comm_time(h) for h in hops))


@pytest.mark.parametrize("tp, cp, held", [(8, 4, 2 * P2P_SMS), (8, 2, P2P_SMS), (4, 4, COMM_SMS)])
def test_a_ring_whose_every_peer_is_in_another_node_holds_a_network_peers_channels(tp, cp, held):
    """TP 8 fills each node, so every CP neighbour is in another node and each hop's two-rank
    communicator runs on NCCL's 2 channels of a network peer, as a pipeline send: the calls it
    hides under lose 4 SMs above CP 2 (a lone send's kernel and a lone receive's) and 2 at CP 2
    (one batched kernel), not a collective's 16. TP 4 leaves each rank one neighbour in its own
    node: that pair's kernel holds 16 SMs but only while its NVLink transfer runs, the network
    peer's 2 for the whole hop, so on average fewer than 16 and more than 2."""
    c = _cfg(cp, seq=32768, tp=tp)
    pricer = Pricer(c)
    assert pricer.spans["cp"].nodes > 1
    assert pricer.sm_share["cp"] == held / c.cluster.gpu.num_sms
    sh = shard_of(c)
    fwd = layer_forward(c, sh)
    ops = fwd + backward_of(fwd, sh)
    hops = [op for op in ops if isinstance(op, Comm) and op.group == "cp"]
    exposed = sum(t for cat, t, _ in pricer.price(ops).segments if cat == CP)
    held_s = sum(pricer.comm_time(h) for h in hops)
    if tp == 8:
        assert exposed == pytest.approx(pricer.sm_share["cp"] * held_s)
    else:
        sms = c.cluster.gpu.num_sms
        assert P2P_SMS / sms * held_s < exposed < COMM_SMS / sms * held_s
        assert exposed == pytest.approx(sum(pricer.cp_hop_share(h, pricer.comm_time(h))
                                            * pricer.comm_time(h) for h in hops))


def test_no_mask_runs_every_step_over_all_received_keys():
    """Without a causal mask every step runs all local queries against all the received K/V
    (AttnFuncWithCPAndKVP2P's non-causal branch): cp calls over local x local pairs, local x
    sequence in all, forward and backward; dK/dV accumulated over all the keys each step."""
    cp, local = 4, 2048
    diag = Attention("attn_core", batch=1, heads=32, kv_heads=8, q_len=local, kv_len=local,
                     head_dim=128, causal=False)
    fwd = te_ring_forward(diag, cp, local)
    calls = [op for op in fwd if isinstance(op, Attention)]
    assert [(a.kv_len, a.causal) for a in calls] == [(local, False)] * cp
    assert sum(a.pairs for a in calls) == pytest.approx(local * local * cp)
    bwd = te_ring_backward(diag, cp, local)
    assert [(a.kv_len, a.causal) for a in bwd if isinstance(a, Attention)] == [(local, False)] * cp
    q, kv = local * 32 * 128, local * 2 * 8 * 128
    assert [op.bytes for op in bwd if op.name.endswith("grad_acc")] == \
        [(q + kv) * 4] + [(q + kv) * 6] * (cp - 1)


@pytest.mark.parametrize("framework,version,attention", [
    ("nemo", "24.07", None), ("megatron-bridge", "25.11", None), ("mlperf-nemo", "5.1", None),
    ("megatron-core", "0.12", None), ("automodel", "0.4", "cudnn")])
def test_frameworks_on_te_attention_run_the_te_ring(framework, version, attention):
    c = _cfg(2, framework, version, attention=attention)
    assert shard_of(c).cp_te_ring
    assert any(op.name == "attn_core.te_ring1" for op in layer_forward(c, shard_of(c)))


@pytest.mark.parametrize("framework,version,attention", [
    ("deepspeed", None, None), ("llm-foundry", None, None), (None, None, None),
    ("automodel", "0.4", "flash2")])
def test_other_p2p_rings_keep_one_kernel_beside_a_hidden_exchange(framework, version, attention):
    """A framework without TE's ring for the run's kernel (or none named): one attention over
    the local queries and the whole sequence, (cp - 1) K/V blocks hidden behind it."""
    c = _cfg(4, framework, version, attention=attention)
    sh = shard_of(c)
    assert not sh.cp_te_ring
    fwd = layer_forward(c, sh)
    calls = [op for op in fwd if isinstance(op, Attention)]
    assert [(a.q_len, a.kv_len) for a in calls] == [(2048, 8192)]
    hops = [op for op in fwd if isinstance(op, Comm) and op.group == "cp"]
    assert [(h.name, h.bytes) for h in hops] == [("attn_core.cp_kv_exchange", 3 * _kv(c, 2048))]
    assert not any(op.name.startswith("attn_core.te_ring") for op in fwd)


def test_te_ring_refuses_sliding_window_attention():
    """TE asserts that p2p context parallelism cannot run a sliding window (v2.8
    attn_forward_func_with_cp): the run is refused in one error line (not priced with a
    windowed half-key step); a2a, or a framework without TE's ring, is accepted."""
    c = _cfg(2, "megatron-bridge", "25.11")
    assert c.parallel.cp_te_ring == ("flash2", "flash3", "cudnn", "ck")  # ck: ROCm TE's ring
    with pytest.raises(ConfigError, match="sliding-window") as err:
        replace(c, model=replace(c.model, sliding_window=128))
    assert "\n" not in str(err.value)
    replace(c, model=replace(c.model, sliding_window=128),
            parallel=replace(c.parallel, cp_comm_type="a2a"))
    generic = _cfg(2, None)
    assert generic.parallel.cp_te_ring == ()
    replace(generic, model=replace(generic.model, sliding_window=128))
