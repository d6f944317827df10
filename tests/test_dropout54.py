"""Attention dropout per kernel (54th session; benchmarks/dropout54_fit.py,
benchmarks/kernels_h200_attn_dropout54.csv): the draws are a time per computed score, fitted to
the H200's cuDNN, FlashAttention-2 and memory-efficient kernels with dropout 0.1 and 0, checked
on the 40th session's cuDNN and FA2 runs; FlashAttention-3/4 take no dropout."""

from __future__ import annotations

import importlib.util
import statistics
import sys
from pathlib import Path

import pytest

import trainsim
from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import attention_dropout as ad
from trainsim.errors import ConfigError
from trainsim.workload.ops import Attention

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("dropout54_fit", BENCH / "dropout54_fit.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["dropout54_fit"] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("dropout54_fit", None)


@pytest.fixture(scope="module")
def table(script):
    return script.table(script.read_rows()) + script.table(script.read_rows(script.FA2_HELD))


def kept(table, part, impl, kind, head_dim=None):
    return [r for r in table if r["part"] == part and r["implementation"] == impl
            and r["kind"] == kind and r["measured"] > 1.0
            and (head_dim is None or r["head_dim"] == head_dim)]


def test_the_csv_is_the_runs_json(script):
    """benchmarks/kernels_h200_attn_dropout54.csv is what ``--write-csv`` writes from run 54's
    ``attn_dropout`` (3 kernels x 4 shapes x 2 dropouts x forward / backward), run 7's
    ``cudnn_dropout`` (8 shapes x 2 dropouts x forward / forward + backward) and run 4's graphed
    grid (cuDNN and FA2 x 60 shapes x 2 dropouts x forward / forward + backward)."""
    rows = script.read_rows()
    assert script.all_rows() == rows
    assert len(rows) == 48 + 32 + 480
    assert sum("dropout 0.1" in r["note"] for r in rows) == 280


def test_shipped_clocks_are_the_scripts_fit(script):
    fitted = script.fit(script.read_rows())
    for kernel, pair in ad.DROPOUT_CLOCKS_PER_SCORE.items():
        assert pair == pytest.approx(fitted[kernel], abs=6e-4), kernel


def test_cudnn_hopper_forward_doubles_and_backward_does_not(table):
    """Measured on the H200 (fit and held out): cuDNN's forward takes 1.69-2.64x the time with
    dropout 0.1, its backward 1.17-1.26x. Priced: every fitted forward above 1.9x and backward
    1.15-1.35x; the FA4-on-Blackwell rate share priced them 1.16x and 1.47x."""
    fwd, bwd = kept(table, "fit", "cudnn", "attention_fwd"), kept(table, "fit", "cudnn",
                                                                   "attention_bwd")
    assert len(fwd) == len(bwd) == 4
    for r in fwd:
        assert r["measured"] > 1.9 and r["shipped"] > 1.9 and r["before"] < 1.2, r
    for r in bwd:
        assert 1.15 < r["measured"] < 1.3 and 1.15 < r["shipped"] < 1.35 and r["before"] > 1.45, r


def test_held_out_cudnn_rows_within_their_bounds(table):
    """Run 7 (never fitted: head dim 64 and 128, b 1-4, unmasked): every forward with dropout
    priced within 8 % (was -44..-58 %), its ratio within 0.2 of the measured one (was ~1.0
    off) where the kernel without dropout takes over 0.1 ms (the 55 us one is priced 43: a
    launch-bound eager call); forward + backward within 16 %."""
    fwd = kept(table, "held-out", "cudnn", "attention_fwd")
    both = kept(table, "held-out", "cudnn", "attention_fwd_bwd")
    assert len(fwd) == 8 and len(both) == 7
    for r in fwd:
        assert abs(r["error_shipped"]) < 0.08 and r["error_before"] < -0.4, r
        assert abs(r["shipped"] - r["measured"]) < (0.2 if r["no_dropout_us"] > 100 else 0.4), r
    for r in both:
        assert abs(r["error_shipped"]) < 0.16, r


def test_held_out_graphed_grid(table):
    """Run 4 (CUDA-graph replays, never fitted: b 1-4 x 4-32 heads x 2k-16k tokens x head dim 64
    and 128): cuDNN's forward with dropout priced within 5 % MAPE (was 51 %), every ratio of
    cuDNN and FA2 within 0.15 on average of the measured one (cuDNN's was 1.2 off forward). FA2's
    forward + backward time keeps its no-dropout backward's error (+21 % signed, run 4's README):
    no time bound there."""
    for impl, kind, mape, off in (("cudnn", "attention_fwd", 0.05, 0.15),
                                  ("cudnn", "attention_fwd_bwd", 0.12, 0.1),
                                  ("sdpa", "attention_fwd", 0.1, 0.1),
                                  ("sdpa", "attention_fwd_bwd", None, 0.07)):
        rows = kept(table, "held-out graphed", impl, kind)
        assert len(rows) >= 55, (impl, kind)
        if mape is not None:
            assert statistics.mean(abs(r["error_shipped"]) for r in rows) < mape, (impl, kind)
        assert statistics.mean(abs(r["shipped"] - r["measured"]) for r in rows) < off, (impl, kind)
        assert statistics.mean(abs(r["shipped"] - r["measured"]) for r in rows) < \
            statistics.mean(abs(r["before"] - r["measured"]) for r in rows), (impl, kind)


def test_the_draws_do_not_shrink_with_the_head(table):
    """Held-out head dim 64 (cuDNN forward 2.45 / 2.64x measured): priced per score it is 2.6x;
    as a slower matmul rate it was 1.12x."""
    for r in kept(table, "held-out", "cudnn", "attention_fwd", head_dim=64):
        assert r["shipped"] == pytest.approx(r["measured"], abs=0.2), r
        assert r["measured"] - r["before"] > 1.2, r


def test_measured_added_time_follows_the_scores_not_the_head(script):
    """The mechanism in the data: run 7's cuDNN forward at head dim 128 (b1, 32 heads) and 64
    (b2, 16 heads) computes the same scores, and dropout adds the same time to both (281 and
    271 us), where the no-dropout kernels differ 1.4x."""
    t = {r["id"]: float(r["measured_value"]) for r in script.read_rows()}
    add = {d: t[f"dc40r7-h200-cudnn-causal-{s}-p0.1-fwd"] - t[f"dc40r7-h200-cudnn-causal-{s}-p0.0-fwd"]
           for d, s in ((128, "b1-s4096-h32-d128"), (64, "b2-s4096-h16-d64"))}
    assert add[64] == pytest.approx(add[128], rel=0.1)


def test_fa2_ratios_priced_within_a_tenth(table):
    """FlashAttention-2 (SDPA's flash backend; fitted on run 54, held out runs 1 and 4): the
    backward was priced ~1.5x against 1.11-1.14x measured; the draws price every ratio within
    0.1 of the measured one."""
    fit_bwd = kept(table, "fit", "sdpa", "attention_bwd")
    assert len(fit_bwd) == 4
    for r in fit_bwd:
        assert r["before"] > 1.45 and abs(r["shipped"] - r["measured"]) < 0.03, r
    held = kept(table, "held-out", "sdpa", "attention_fwd") + \
        kept(table, "held-out", "sdpa", "attention_fwd_bwd")
    assert len(held) == 14
    for r in held:
        assert abs(r["shipped"] - r["measured"]) < 0.1, r


def test_mem_efficient_ratios(table):
    rows = kept(table, "fit", "mem_efficient", "attention_fwd") + \
        kept(table, "fit", "mem_efficient", "attention_bwd")
    assert len(rows) == 8
    assert statistics.mean(abs(r["shipped"] - r["measured"]) for r in rows) < 0.05


def _op(impl, backward=False, head_dim=128, heads=16, dropout=True):
    return Attention("attn", batch=1, heads=heads, kv_heads=heads, q_len=4096, kv_len=4096,
                     head_dim=head_dim, causal=True, backward=backward, impl=impl,
                     dropout=dropout)


@pytest.mark.parametrize(("impl", "gpu", "per_score"), [
    ("cudnn", "h100-sxm-80gb", True), ("cudnn", "h200-sxm-141gb", True),
    ("cudnn", "b200-sxm-180gb", False), ("cudnn", "a100-sxm-80gb", False),
    ("flash2", "a100-sxm-80gb", True), ("sdpa", "b200-sxm-180gb", True),
    ("flash1", "h100-sxm-80gb", True), ("mem_efficient", "h100-sxm-80gb", True),
    ("triton", "a100-sxm-80gb", False), ("flash2", "mi300x", False)])
def test_draws_priced_where_the_measured_kernel_runs(impl, gpu, per_score):
    """cuDNN's measured kernels are its Hopper ones; FA1/FA2's and the memory-efficient
    ``mma.sync`` kernels run unchanged on every NVIDIA GPU; elsewhere (cuDNN on Ampere and
    Blackwell, Triton, AMD's kernels) dropout keeps FA4's Blackwell rate share."""
    g = catalog_gpu(gpu)
    for backward in (False, True):
        share = ad.dropout_rate_share(impl, backward, g)
        draws = ad.dropout_draw_s(g, _op(impl, backward), 1e9)
        if per_score:
            assert share == 1.0 and draws > 0
        else:
            assert share == (ad.ATTN_DROPOUT_BWD if backward else ad.ATTN_DROPOUT_FWD)
            assert draws == 0.0
        assert ad.dropout_draw_s(g, _op(impl, backward, dropout=False), 1e9) == 0.0


def test_fa1_draws_twice_fa2s_per_score():
    g = catalog_gpu("h100-sxm-80gb")
    assert ad.dropout_draw_s(g, _op("flash1"), 1e9) == \
        pytest.approx(2 * ad.dropout_draw_s(g, _op("flash2"), 1e9))


def test_draws_scale_with_scores_and_the_sm_clock():
    """A time per score at the SMs' clock: twice the scores twice the time, a power-capped GPU
    (slower clock) longer, the head dim no part of it."""
    g = catalog_gpu("h100-sxm-80gb")
    one = ad.dropout_draw_s(g, _op("cudnn"), 1e9)
    assert ad.dropout_draw_s(g, _op("cudnn"), 2e9) == pytest.approx(2 * one)
    assert ad.dropout_draw_s(g, _op("cudnn", head_dim=64), 1e9) == one
    capped = g.__class__(**{**g.__dict__, "power_limit_w": 500.0})
    assert ad.dropout_draw_s(capped, _op("cudnn"), 1e9) > one


def _run(attention, dropout):
    model = {"name": "t", "hidden_size": 2048, "num_layers": 4, "num_attention_heads": 16,
             "vocab_size": 32000, "attention_dropout": dropout}
    return trainsim.run_config_from_dict({
        "model": model, "training": {"global_batch_size": 8, "seq_length": 2048,
                                     "attention": attention},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}})


@pytest.mark.parametrize("attention", ["flash3", "flash4"])
def test_flash3_and_flash4_with_dropout_are_refused(attention):
    """FlashAttention-3's and -4's flash_attn_func take no dropout_p (flash-attention@0251105a);
    Transformer Engine runs cuDNN instead: the message names it."""
    _run(attention, 0.0)
    with pytest.raises(ConfigError, match=rf"attention={attention} takes no attention dropout"
                                          r".*set training.attention to cudnn"):
        _run(attention, 0.1)
    _run("cudnn", 0.1)
    _run("flash2", 0.1)
