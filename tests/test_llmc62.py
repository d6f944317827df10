"""cuDNN attention below Hopper (62nd session, llmc62): on an sm 8.x GPU there is no ``wgmma`` /
TMA, so cuDNN's SDPA kernels there are synchronous-``mma`` kernels like FlashAttention-2's and
take the ``flash2`` family's rate and per-row work (``attention.attention_family``). Published
sm80 ratios of cuDNN over SDPA's flash backend: 0.82-1.05 (pytorch/pytorch#126122, #192799,
huggingface/transformers#48163; benchmarks/llmc62_evidence.py)."""

from __future__ import annotations

from pathlib import Path

from helpers import training_rows

from trainsim.catalog import gpu
from trainsim.compute.attention import ATTENTION_FAMILY, attention_family
from trainsim.compute.roofline import RooflineModel
from trainsim.validate.training import predict_training_row
from trainsim.workload.ops import Attention

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "training_llmc.csv"


def _fwd_bwd_rate(gpu_name: str, impl: str, b: int, s: int, h: int, d: int, causal: bool) -> float:
    model = RooflineModel(gpu(gpu_name))
    flops = secs = 0.0
    for bwd in (False, True):
        op = Attention(name="attn", batch=b, heads=h, kv_heads=h, q_len=s, kv_len=s, head_dim=d,
                       causal=causal, backward=bwd, impl=impl)
        flops += op.flops
        secs += model.time(op)
    return flops / secs


def test_family_by_architecture():
    """cuDNN is warp-specialised from Hopper on, FA2-like below it; other kernels and other
    vendors keep their family."""
    assert attention_family("cudnn", 80) == "flash2"
    assert attention_family("cudnn", 90) == attention_family("cudnn", 100) == "cudnn"
    assert attention_family("cudnn", None) == ATTENTION_FAMILY["cudnn"] == "cudnn"
    assert attention_family("flash3", 80) == "cudnn"  # not listed: no sm80 build to price
    assert attention_family("flash2", 90) == "flash2"


def test_a100_cudnn_within_the_published_ratio_of_fa2():
    """At the FA2 paper's head-dim-64 shapes (and llm.c's b64 h12 s1024) the A100's cuDNN
    fwd+bwd is priced within the published sm80 band of FA2's, 0.82-1.05 (main before llmc62:
    0.64 at 512 causal tokens, 0.73 at 1,024, 0.66 for llm.c's backward alone)."""
    for b, s, h, causal in ((32, 512, 32, True), (16, 1024, 32, True), (64, 1024, 12, True),
                            (8, 2048, 32, False), (2, 8192, 32, True)):
        ratio = (_fwd_bwd_rate("a100-sxm-80gb", "cudnn", b, s, h, 64, causal)
                 / _fwd_bwd_rate("a100-sxm-80gb", "flash2", b, s, h, 64, causal))
        assert 0.82 <= ratio <= 1.05, (b, s, h, causal, ratio)


def test_hopper_cudnn_keeps_its_own_family():
    """On the H100 cuDNN stays the warp-specialised family: well above FA2 (which runs there
    at ``AMPERE_KERNEL_ON_HOPPER``), as the Hopper rows measure it."""
    fa2 = _fwd_bwd_rate("h100-sxm-80gb", "flash2", 8, 2048, 16, 128, True)
    cudnn = _fwd_bwd_rate("h100-sxm-80gb", "cudnn", 8, 2048, 16, 128, True)
    assert cudnn > 1.4 * fa2, (cudnn, fa2)


def test_llmc_a100_rows_move_by_attention_only():
    """The two shortest-head A100 llm.c rows (124M at 1,024 tokens, GPT-3 125M at 2,048) come
    nearer their measurement (main before llmc62: +15.6 and +24.3 %) and the H100 row, cuDNN on
    Hopper, stays where llmc61 left it (-0.3 %)."""
    rows = {r["id"]: r for r in training_rows(PATH)}
    err = {rid: predict_training_row(rows[rid]).predicted / float(rows[rid]["measured_iteration_s"]) - 1
           for rid in ("llmc-gpt2-124m-a100-8", "llmc-gpt3-125m-a100-8", "llmc-gpt2-1558m-h100-8")}
    assert 0.0 < err["llmc-gpt2-124m-a100-8"] < 0.13, err
    assert 0.0 < err["llmc-gpt3-125m-a100-8"] < 0.21, err
    assert abs(err["llmc-gpt2-1558m-h100-8"] + 0.003) < 0.002, err
