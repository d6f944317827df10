"""The embedding's dense gradient on its way into Megatron's fp32 ``main_grad``
(``workload.head.dense_embedding_grad_ops``): Megatron-core's DDP hook adds it after every
micro-batch's backward where the other weights accumulate inside their wgrad GEMM; a tied
output layer on the same stage adds a zeroed dummy of the table; stacks that add every
gradient outside the GEMM, sharded data parallelism and runs without a framework get nothing
here."""

from __future__ import annotations

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.pricing import Pricer
from trainsim.workload.grad_accumulation import fp32_grad_accumulation
from trainsim.workload.head import dense_embedding_grad_ops, embedding_backward
from trainsim.workload.shard import shard_of
from trainsim.workload.vocab import padded_vocab


def _cfg(preset="llama3-8b", tp=1, pp=1, framework="megatron-core", version="0.14",
         **training):
    t = {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 8192,
         "framework": framework, "framework_version": version, **training}
    if framework is None:
        t.pop("framework"), t.pop("framework_version")
    return run_config_from_dict({
        "model": {"preset": preset}, "parallel": {"tp": tp, "pp": pp},
        "training": t, "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "compute_db": None}})


def _ops(cfg):
    return {op.name: op for op in dense_embedding_grad_ops(cfg, shard_of(cfg))}


def test_fused_megatron_adds_the_vocab_parallel_table_into_fp32_main_grad():
    cfg = _cfg(tp=4, pp=2)
    ops = _ops(cfg)
    assert set(ops) == {"embedding_grad.main_grad_add"}
    rows = padded_vocab(cfg) / 4  # 128,256 padded to 128,512 (128 x TP 4)
    # reads the 16-bit gradient and the fp32 buffer, writes the buffer
    assert ops["embedding_grad.main_grad_add"].bytes == pytest.approx(
        rows * cfg.model.hidden_size * (2 + 4 + 4))
    names = [op.name for op in embedding_backward(cfg, shard_of(cfg))]
    assert names.index("embedding_grad") < names.index("embedding_grad.main_grad_add")


def test_16bit_main_grad_adds_six_bytes_an_element():
    cfg = _cfg(pp=2, grad_reduce_in_fp32=False)
    add = _ops(cfg)["embedding_grad.main_grad_add"]
    assert add.bytes == pytest.approx(cfg.model.vocab_size * cfg.model.hidden_size * 6)


def test_tied_output_layer_on_one_stage_adds_a_zeroed_dummy():
    tied = _cfg(preset="gpt3-175b", tp=8, pp=1)
    assert tied.model.tied_embeddings and tied.model.position_embedding == "learned"
    ops = _ops(tied)
    table = padded_vocab(tied) / 8 * tied.model.hidden_size  # 50,304 padded to 51,200
    pos = tied.model.max_position_embeddings * tied.model.hidden_size
    assert ops["embedding_grad.tied_dummy"].bytes == pytest.approx(table * 8)
    assert ops["embedding_grad.main_grad_add"].bytes == pytest.approx((table + pos) * 10)
    # split over stages the output layer's copy takes its gradient in the GEMM: no dummy
    assert "embedding_grad.tied_dummy" not in _ops(_cfg(preset="gpt3-175b", tp=8, pp=2))


def test_the_add_costs_time_on_the_first_stage_backward():
    cfg = _cfg(pp=2)
    sh = shard_of(cfg)
    pricer = Pricer(cfg)
    with_add = pricer.price(embedding_backward(cfg, sh)).duration_s
    without = pricer.price([op for op in embedding_backward(cfg, sh)
                            if not op.name.startswith("embedding_grad.")]).duration_s
    add = _ops(cfg)["embedding_grad.main_grad_add"].bytes
    assert with_add - without >= add / 3.35e12  # the H100 SXM's HBM peak


@pytest.mark.parametrize("framework,version", [("nanotron", "2024-12"), (None, None)])
def test_no_fused_accumulation_no_extra_add(framework, version):
    assert _ops(_cfg(framework=framework, version=version)) == {}


def test_unfused_megatron_lm_prices_the_embedding_add_with_the_rest():
    cfg = _cfg(framework="megatron-lm", version="2021-04")
    assert _ops(cfg) == {}
    adds = fp32_grad_accumulation(cfg, range(cfg.model.num_layers), True, True)
    assert adds and adds[0].bytes >= 10 * cfg.model.vocab_size * cfg.model.hidden_size
