"""Multi-token prediction at depth D > 1 (46th session, mtp46): every depth looks the shifted
tokens up in the one embedding module the rank holds (NVIDIA/Megatron-LM@d98e8a64
megatron/core/transformer/multi_token_prediction.py L2127 ``embedding=embedding`` for each
layer; GPTModel builds that module where ``pre_process or mtp_process``, models/gpt/
gpt_model.py L173), so autograd sums the D table gradients and the parameter's hook adds once;
and ``eh_proj`` sharded as Megatron-core runs it (``workload.head.mtp_eh_proj``; the pricing it
replaced in benchmarks/mtp46_eh_proj.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from helpers import load_script

from trainsim.catalog import run_config_from_dict
from trainsim.chunks import chunks
from trainsim.pricing import Pricer
from trainsim.workload.head import mtp_eh_proj, mtp_input_backward
from trainsim.workload.ops import Comm, Gemm
from trainsim.workload.shard import shard_of

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "mtp46_eh_proj.py"


def _cfg(depth: int, pp: int = 2, tp: int = 1, sp: bool = False):
    return run_config_from_dict({
        "model": {"preset": "deepseek-v3", "num_layers": 8, "mtp_num_layers": depth},
        "parallel": {"tp": tp, "pp": pp, "ep": 8, "sequence_parallel": sp},
        "training": {"global_batch_size": 16, "micro_batch_size": 1, "seq_length": 4096,
                     "framework": "megatron-core", "framework_version": "0.14"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8 * pp * tp}})


def _names(ops):
    return [op.name for op in ops]


def test_a_later_depth_sums_its_table_gradient_into_the_first():
    cfg = _cfg(2)
    sh = shard_of(cfg)
    first, again = _names(mtp_input_backward(cfg, sh)), _names(mtp_input_backward(cfg, sh, True))
    assert "embedding_grad.main_grad_add" in first and "mtp_embedding_grad.sum" not in first
    assert "mtp_embedding_grad.sum" in again and "embedding_grad.main_grad_add" not in again
    # at pp 1 every depth sums into the main model's lookup already
    one = _cfg(2, pp=1)
    assert _names(mtp_input_backward(one, shard_of(one))) == \
        _names(mtp_input_backward(one, shard_of(one), True))


def _head_bwd(depth: int, pp: int) -> float:
    cfg = _cfg(depth, pp=pp)
    out = chunks(cfg, Pricer(cfg), shard_of(cfg))
    return out[max(out)].bwd_head.duration_s


def test_each_depth_adds_the_table_gradient_once_per_rank():
    """The second depth's backward costs the first's less the hook's add plus autograd's sum
    (no depth-dependent constant: both from head.py's ops)."""
    d0, d1, d2 = (_head_bwd(d, 2) for d in (0, 1, 2))
    cfg = _cfg(2)
    sh, pricer = shard_of(cfg), Pricer(cfg)
    add = pricer.price([op for op in mtp_input_backward(cfg, sh)
                        if op.name == "embedding_grad.main_grad_add"]).duration_s
    total = pricer.price([op for op in mtp_input_backward(cfg, sh, True)
                          if op.name == "mtp_embedding_grad.sum"]).duration_s
    assert add > total > 0
    assert d2 - d1 == pytest.approx((d1 - d0) - add + total, rel=1e-9)
    # at pp 1 each depth costs the same
    e0, e1, e2 = (_head_bwd(d, 1) for d in (0, 1, 2))
    assert e2 - e1 == pytest.approx(e1 - e0, rel=1e-9)


@pytest.mark.parametrize("sp", [False, True])
def test_eh_proj_is_sharded_with_its_collectives(sp):
    mod = load_script(SCRIPT)
    cfg = _cfg(1, tp=2, sp=True)  # MoE at TP > 1 needs SP: the shard without it for sp False
    sh = shard_of(cfg) if sp else replace(shard_of(cfg), sp=False, sp_gathered_saved=False)
    h = cfg.model.hidden_size
    fwd, bwd = mtp_eh_proj(cfg, sh)
    gemm = next(op for op in fwd if isinstance(op, Gemm))
    assert (gemm.m, gemm.n, gemm.k) == (sh.tokens, h // 2, 2 * h)
    wgrad = next(op for op in bwd if op.name == "mtp_proj.wgrad")
    assert (wgrad.m, wgrad.n) == (2 * h, h // 2)  # the rank's h / TP output rows
    comms = [(op.name, op.kind) for op in fwd + bwd if isinstance(op, Comm)]
    assert ("mtp_proj.output_all_gather", "all_gather") in comms
    assert all(not op.in_tp_overlap for op in fwd + bwd if isinstance(op, Comm))
    if sp:  # input gathered, output's rows re-gathered in backward, input grad reduce-scattered
        assert ("mtp_proj.all_gather", "all_gather") in comms
        assert ("mtp_proj.sp_split.bwd", "all_gather") in comms
        assert any(kind == "reduce_scatter" for _, kind in comms)
    else:  # the copy-to-TP region's backward all-reduces the 2h input gradient
        ar = [op for op in bwd if isinstance(op, Comm) and op.kind == "all_reduce"]
        assert len(ar) == 1 and ar[0].bytes == sh.tokens * 2 * h * 2
    # at TP 1 the same GEMM and backward GEMMs as the unsharded pricing it replaced
    one = _cfg(1, tp=1)
    s1 = shard_of(one)
    ref_f, ref_b = mod.full_eh_proj(one, s1)
    got_f, got_b = mtp_eh_proj(one, s1)
    assert [(g.m, g.n, g.k) for g in got_f if isinstance(g, Gemm)] == \
        [(g.m, g.n, g.k) for g in ref_f if isinstance(g, Gemm)]
    assert [(g.m, g.n, g.k) for g in got_b if isinstance(g, Gemm)] == \
        [(g.m, g.n, g.k) for g in ref_b if isinstance(g, Gemm)]
