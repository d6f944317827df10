"""Prices shared by the simulations of one search (``pricing.shared``, issue 21 item 4): every
result is the one simulated alone, to the bit, and a new token prices anew."""

from __future__ import annotations

import random

from helpers import make_base

from trainsim import simulate
from trainsim.compute import roofline
from trainsim.pricing import Pricer, interned, join, shared
from trainsim.search import SearchSpace
from trainsim.search.space import Candidate
from trainsim.workload.layers import layer_forward
from trainsim.workload.shard import shard_of

SPACE = SearchSpace(recompute=("none", "selective", "full"), zero=(0, 1, 3), max_micro_batch=4,
                    max_cp=2)


def _configs(n: int, seed: int = 7) -> list:
    base = make_base(gpus=16, batch=64)
    keys = list(SPACE.memory_keys(base, 16))
    rng = random.Random(seed)
    out = []
    for key in rng.sample(keys, n):
        variants = SPACE.variants(key)
        out.append(Candidate.to_config(rng.choice(variants), base))
    return out


def _fields(r) -> tuple:
    return (r.iteration_time_s, r.breakdown, r.exposed_comm, r.memory, r.critical_stage,
            r.compute_sources, r.simulation, r.model_flops, r.hardware_flops)


def test_shared_prices_give_every_result_to_the_bit():
    """Forty random candidates simulated alone, then twice inside one ``shared`` (the second
    time every price and every sum of priced passes is taken from the first): equal in every
    field, the compute models' op counts included."""
    cfgs = _configs(40)
    alone = [_fields(simulate(cfg)) for cfg in cfgs]
    with shared(("test", 1)):
        first = [_fields(simulate(cfg)) for cfg in cfgs]
        again = [_fields(simulate(cfg)) for cfg in cfgs]
    assert first == alone
    assert again == alone


def test_a_pricer_inside_shared_returns_the_kept_price():
    """The same op list under the same settings is priced once (the same object back); a
    pricer of other settings (another TP degree) is not handed it."""
    cfgs = _configs(12, seed=3)
    with shared(("test", 2)):
        a, b = Pricer(cfgs[0]), Pricer(cfgs[0])
        ops = layer_forward(cfgs[0], shard_of(cfgs[0]), moe=False)
        assert a.price(ops) is b.price(ops)
        other = next(c for c in cfgs if c.parallel.tp != cfgs[0].parallel.tp)
        assert Pricer(other).price(ops) is not a.price(ops)
    assert Pricer(cfgs[0]).price(ops) is not a.price(ops)  # outside: priced anew


def test_sums_of_kept_passes_are_made_once():
    with shared(("test", 3)):
        x, y = interned((("compute", 1.0, "a"),)), interned((("tp_comm", 2.0, "b"),))
        assert interned((("compute", 1.0, "a"),)) is x
        assert x + y is x + y and join([x, y, x]) is join([x, y, x])
        assert (x + y).segments == join([x, y]).segments
        assert x * 3 is x * 3
    assert x + y is not x + y  # outside: a new object each time


def test_a_new_token_prices_anew(monkeypatch):
    """Prices are kept for one token (one search, over which the model cannot change): under
    a new one a changed constant is priced in."""
    cfg = _configs(1, seed=5)[0]
    with shared(("test", 4)):
        before = simulate(cfg).iteration_time_s
    monkeypatch.setattr(roofline, "HBM_EFFICIENCY", roofline.HBM_EFFICIENCY / 2)
    with shared(("test", 5)):
        after = simulate(cfg).iteration_time_s
    assert after > before
    assert after == simulate(cfg).iteration_time_s


def test_a_batch_runs_the_loop_once_for_twin_graphs(monkeypatch):
    """Selective recompute beside FlashAttention (whose backward recomputes the scores anyway)
    leaves recompute none's passes: in one batch the pair's task graph runs the loop once,
    and both evaluations are the ones simulated alone."""
    import dataclasses

    from trainsim.engine import loop
    from trainsim.search.evaluation import evaluate, evaluate_batch

    base = make_base(gpus=16, batch=64)
    key = next(k for k in SPACE.memory_keys(base, 16)
               if k.recompute == "none" and k.pp == 2 and k.dp > 1)
    pair = [Candidate(key), Candidate(dataclasses.replace(key, recompute="selective"))]
    alone = [evaluate(c, base) for c in pair]
    assert alone[0].iteration_time_s == alone[1].iteration_time_s
    runs = []
    real = loop._run
    monkeypatch.setattr(loop, "_run", lambda tasks, prefix: runs.append(1) or real(tasks, prefix))
    batch = evaluate_batch(base, pair, ("test", 6))
    assert batch == alone
    assert len(runs) == 1


def test_dualpipe_pair_pricing_shares_nothing_it_changed():
    """DualPipe prices its overlapped pairs with a pricer of its own (pipeline.pair_pricer;
    until the 39th session one whose SM shares it set to zero): such a pricer must not hand
    wrong prices to a 1F1B run with the expert overlap on the same cluster, nor take wrong
    ones, in either order."""
    import dataclasses

    import trainsim
    from trainsim import simulate
    from trainsim.pricing import shared
    moe = {"name": "tinymoe", "hidden_size": 1024, "num_layers": 8, "num_attention_heads": 16,
           "num_kv_heads": 4, "vocab_size": 32000, "activation": "swiglu",
           "position_embedding": "rope", "normalization": "rmsnorm", "tied_embeddings": False,
           "add_bias_linear": False, "num_experts": 8, "moe_router_topk": 2,
           "moe_ffn_hidden_size": 1024}

    def cfg(parallel):
        return trainsim.run_config_from_dict({
            "model": moe, "parallel": {"tp": 1, "pp": 2, "ep": 4, **parallel},
            "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 2048,
                         "dtype": "bf16"},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8}})
    dual = cfg({"pipeline_schedule": "dualpipe"})
    paired = dataclasses.replace(cfg({"moe_overlap_ep_comm": True}), cluster=dual.cluster)
    alone = (simulate(dual).iteration_time_s, simulate(paired).iteration_time_s)
    for n, order in enumerate(((dual, paired), (paired, dual))):
        with shared(("dualpipe-test", n)):
            got = {id(c): simulate(c).iteration_time_s for c in order}
        assert (got[id(dual)], got[id(paired)]) == alone


def test_a_search_base_makes_one_cluster_per_gpu_count():
    """The shared prices are kept by the cluster's identity: a base asked twice for a GPU count
    other than its own must give the same cluster object (else nothing is shared and the store
    grows by a cluster per simulation)."""
    import trainsim
    from trainsim.search.space import Base
    base = Base.of(trainsim.load_run_config("examples/llama3-8b-h100.yaml"))
    other = base.cluster.num_gpus * 2
    assert base.cluster_for(other) is base.cluster_for(other)
    assert base.cluster_for(other).num_gpus == other
    assert base.cluster_for(base.cluster.num_gpus) is base.cluster


def test_batches_with_unpickled_bases_share_their_prices(monkeypatch):
    """A worker receives the search's base unpickled anew with every batch; its batches must
    still price each op list once (the prices are kept by the cluster's identity), and give
    the evaluations of the base itself, to the bit."""
    import pickle

    from trainsim import pricing
    from trainsim.search.evaluation import evaluate, evaluate_batch

    base = make_base(gpus=16, batch=64)
    rng = random.Random(13)
    keys = rng.sample(list(SPACE.memory_keys(base, 16)), 6)
    batches = [[Candidate(k)] for k in keys] * 2  # the second round prices nothing new
    alone = [[evaluate(c, base) for c in b] for b in batches]
    priced = []
    real = pricing.Pricer._price_ops
    monkeypatch.setattr(pricing.Pricer, "_price_ops",
                        lambda self, *a: priced.append(1) or real(self, *a))
    got = [evaluate_batch(pickle.loads(pickle.dumps(base)), b, ("test", 7)) for b in batches]
    assert got == alone
    first = len(priced)
    again = [evaluate_batch(pickle.loads(pickle.dumps(base)), b, ("test", 7)) for b in batches]
    assert again == alone
    assert len(priced) == first  # every op list of the second pass taken from the first


def test_a_pricer_of_another_dispatcher_is_not_handed_the_price():
    """Two runs on one cluster that differ only in the token dispatcher price the same expert
    all-to-all apart inside ``shared``: DeepEP's kernels bound it, NCCL's does not (with the
    exchange kernels holding as many SMs as NCCL's all-to-all, the SM shares agree)."""
    from dataclasses import replace

    from trainsim import run_config_from_dict
    from trainsim.workload.ops import Comm
    nccl = run_config_from_dict({
        "model": {"name": "toy-moe", "hidden_size": 1024, "num_layers": 4,
                  "num_attention_heads": 8, "vocab_size": 32000, "activation": "swiglu",
                  "num_experts": 8, "moe_router_topk": 2, "moe_ffn_hidden_size": 512},
        "parallel": {"ep": 8, "moe_deepep_num_sms": 32},  # the all-to-all's, one node
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 4096},
        "cluster": {"node": "dgx-h100", "num_gpus": 8}})
    deepep = replace(nccl, parallel=replace(nccl.parallel, moe_token_dispatcher_type="deepep"))
    ops = [Comm("moe.dispatch", "all_to_all", 256e6, "ep")]
    alone = Pricer(deepep).price(ops)
    with shared(("test", "dispatcher")):
        first = Pricer(nccl).price(ops)
        kept = Pricer(deepep).price(ops)
    assert Pricer(deepep).sm_share == Pricer(nccl).sm_share
    assert kept.segments == alone.segments != first.segments


def test_pricers_of_one_cluster_share_one_network_inside_shared():
    """Inside ``shared`` the pricers of one cluster share its analytical network (whose
    collective prices are a pure function of the cluster and the collective), so each
    collective is priced once; outside, and on the flow backend, each pricer builds its own.
    Every collective is priced the same either way, to the bit."""
    import dataclasses

    from trainsim.workload.ops import Comm

    cfgs = _configs(12, seed=11)
    ops = [Comm("g", kind, size, group) for kind in ("all_reduce", "reduce_scatter", "all_gather")
           for size in (1e6, 3.3e8) for group in ("dp", "dp_cp", "tp", "tp_dp_cp")]
    alone = [[Pricer(cfg).comm_time(op) for op in ops] for cfg in cfgs]
    with shared(("test", 8)):
        pricers = [Pricer(cfg) for cfg in cfgs]
        assert len({id(p.net) for p in pricers}) == 1  # one cluster, one network
        assert [[p.comm_time(op) for op in ops] for p in pricers] == alone
        flow = dataclasses.replace(cfgs[0], cluster=dataclasses.replace(
            cfgs[0].cluster, network_backend="flow"))
        assert Pricer(flow).net is not Pricer(flow).net
    assert Pricer(cfgs[0]).net is not Pricer(cfgs[0]).net
