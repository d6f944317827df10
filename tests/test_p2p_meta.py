"""nanotron's pipeline sends each tensor after two blocking metadata messages, one tensor at a
time, and a Llama forward exchange carries the sequence mask beside the hidden states
(``workload.p2p_meta``, profile ``p2p_tensor_metadata``)."""

from __future__ import annotations

import pytest

from trainsim import run_config_from_dict, simulate
from trainsim import simulator as sim_module
from trainsim.pipeline import pipeline_send_s
from trainsim.pricing import Pricer
from trainsim.simulator import _TaskGraph
from trainsim.workload.p2p_meta import exchange_messages
from trainsim.workload.shard import shard_of


def cfg(framework: str = "nanotron", version: str = "2024-12", nodes: int = 2):
    """8B-shaped, 8 layers, PP 4 over ``nodes`` nodes (TP 8 inside each), 8 micro-batches."""
    return run_config_from_dict({
        "model": {"preset": "llama2-7b", "num_layers": 8},
        "parallel": {"tp": 8, "pp": 4, "sequence_parallel": True},
        "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 4096,
                     "dtype": "bf16", "framework": framework, "framework_version": version},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 32, "gpus_per_node": 8,
                    "fabric": "efa"}})


def test_messages_by_direction():
    """Forward: the first metadata (7 int64), the hidden states' shape and stride (3 + 3
    int64), the hidden states; then the mask's (2 + 2) and the mask, a byte a token. Backward:
    the gradient's three messages."""
    c = cfg()
    sh = shard_of(c)
    act = sh.tokens * 4096 * 2 / 8
    assert exchange_messages(sh, act, True) == [56, 48, act, 56, 32, 4096]
    assert exchange_messages(sh, act, False) == [56, 48, act]


def test_nanotron_sends_priced_message_by_message():
    """The task graph's forward and backward sends are the sums of their messages, each a
    pipeline send on the group's slowest hop (across nodes here); Megatron-core sends the
    hidden states alone, the same both ways."""
    c = cfg()
    pricer = Pricer(c)
    g = _TaskGraph(c, pricer, None)
    sh = shard_of(c)
    act = sh.tokens * 4096 * 2 / 8
    by_hand = [sum(pipeline_send_s(c, pricer, b) for b in exchange_messages(sh, act, fwd))
               for fwd in (True, False)]
    assert g.send_fwd.duration_s == pytest.approx(by_hand[0])
    assert g.send.duration_s == pytest.approx(by_hand[1])
    assert g.send_fwd.duration_s > g.send.duration_s > pipeline_send_s(c, pricer, act)
    mc = cfg("megatron-core", "0.12")
    gm = _TaskGraph(mc, Pricer(mc), None)
    assert gm.send_fwd.duration_s == gm.send.duration_s


def test_step_pays_the_metadata(monkeypatch):
    """The pipelined step takes longer with the messages than with the hidden states alone,
    by no more than every pass of the critical path paying its stage's extra messages
    ((m + pp - 1) forward and backward passes)."""
    c = cfg()
    pricer = Pricer(c)
    sh = shard_of(c)
    act = sh.tokens * 4096 * 2 / 8
    extra = sum(pipeline_send_s(c, pricer, b) for fwd in (True, False)
                for b in exchange_messages(sh, act, fwd)) - 2 * pipeline_send_s(c, pricer, act)
    with_meta = simulate(c).iteration_time_s
    real = sim_module.profile_supports
    monkeypatch.setattr(sim_module, "profile_supports",
                        lambda cf, f: False if f == "p2p_tensor_metadata" else real(cf, f))
    without = simulate(c).iteration_time_s
    assert 0 < with_meta - without <= (8 + 4 - 1) * extra * (1 + 1e-9)
