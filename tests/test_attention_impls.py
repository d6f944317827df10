"""Attention kernels priced apart: the orderings their papers report."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from helpers import published_kernel_rows

from trainsim.catalog import gpu, names
from trainsim.compute import RooflineModel
from trainsim.compute.attention import (
    AMPERE_KERNEL_ON_HOPPER,
    ATTENTION_OF_GEMM,
    ATTN_ROW_OVERHEAD_KEYS,
    ampere_kernel_share,
    attention_fraction,
    attention_tile,
    computed_scores,
    diagonal_keys,
    fa2_tile,
    flash1_pass_bytes,
    gqa_group_sum_bytes,
    has_hopper_tensor_cores,
    tile_scores,
)
from trainsim.workload.ops import FUSED_ATTENTION, Attention

CATALOG = ["a100-sxm-80gb", "h100-sxm-80gb", "h800-sxm-80gb", "h200-sxm-141gb",
           "b200-sxm-180gb", "mi300x"]


def rate(gpu_name: str, impl: str, backward: bool = False) -> float:
    """Achieved FLOP/s of a long causal attention (8 x 4k tokens, 32 heads of 128)."""
    op = Attention("a", 8, 32, 32, 4096, 4096, 128, causal=True, backward=backward,
                   impl=impl)  # type: ignore[arg-type]
    return op.flops / RooflineModel(gpu(gpu_name)).time(op)


@pytest.mark.parametrize("name", CATALOG)
@pytest.mark.parametrize("impl", sorted(FUSED_ATTENTION))
def test_every_fused_kernel_has_a_rate_below_the_gemm_ceiling(name, impl):
    """Each fused implementation prices on each catalog GPU below the GEMM ceiling once its
    exponentials and fixed per-row work are counted, and its backward runs at a lower rate
    than its forward."""
    g = gpu(name)
    fwd, bwd = (attention_fraction(impl, b, g) for b in (False, True))
    assert 0 < bwd < fwd
    assert 0 < rate(name, impl, True) < rate(name, impl) < g.gemm_ceiling("bf16")


@pytest.mark.parametrize("name", ["a100-sxm-80gb", "h100-sxm-80gb"])
@pytest.mark.parametrize("backward", [False, True])
def test_flash1_runs_at_half_flash2(name, backward):
    """FlashAttention-2 is about twice as fast as the first FlashAttention (FA2 abstract)."""
    assert rate(name, "flash1", backward) < 0.6 * rate(name, "flash2", backward)


def test_flash1_is_slower_per_flop_at_head_dim_128_than_at_64():
    """The first FlashAttention carries each query row's partial result through HBM once per
    key block (256 keys at head dim 64, 128 at 128: v1.0.9 fmha_fwd_hdim*.cu), so its traffic
    per FLOP doubles from head dim 64 to 128 and an A100 runs its long forward+backward slower
    at 128 (FA2 paper Fig. 4: 110 against 83 TFLOP/s at 16k), where FlashAttention-2 runs
    faster (its exponentials are half as many per FLOP)."""
    m = RooflineModel(gpu("a100-sxm-80gb"))

    def fwd_bwd_rate(impl: str, d: int) -> float:
        ops = [Attention("a", 1, 2048 // d, 2048 // d, 16384, 16384, d, causal=False,
                         backward=b, impl=impl) for b in (False, True)]  # type: ignore[arg-type]
        return sum(op.flops for op in ops) / sum(m.time(op) for op in ops)

    assert fwd_bwd_rate("flash1", 128) < fwd_bwd_rate("flash1", 64)
    assert fwd_bwd_rate("flash2", 128) > 1.05 * fwd_bwd_rate("flash2", 64)


def test_flash1_bytes_per_flop_grow_with_head_dim_not_sequence_nor_for_mem_efficient():
    """FA1's bytes per FLOP grow with the head dimension (the FA1 paper's Theorem 2:
    Theta(s^2 d^2 / M) accesses) and stay about constant in the sequence (both traffic and
    FLOPs grow as s^2: within 20 % from 4k to 16k); one key block is one pass, its inputs and
    outputs; SDPA's memory-efficient kernel (its own implementation, at FA1's rate) moves only
    its inputs and outputs, so it runs faster."""
    def per_flop(d: int, s: int, backward: bool = False) -> float:
        op = Attention("a", 1, 16, 16, s, s, d, causal=True, backward=backward, impl="flash1")
        return flash1_pass_bytes(op) / op.flops

    for backward in (False, True):
        assert per_flop(128, 16384, backward) > 1.8 * per_flop(64, 16384, backward)
        assert per_flop(128, 4096, backward) / 1.2 < per_flop(128, 16384, backward) \
            < 1.2 * per_flop(128, 4096, backward)
    short = Attention("a", 1, 16, 16, 128, 128, 64, causal=False, impl="flash1")
    assert flash1_pass_bytes(short) == pytest.approx(short.bytes, rel=0.05)  # one pass
    m = RooflineModel(gpu("a100-sxm-80gb"))
    ops = {impl: Attention("a", 1, 16, 16, 16384, 16384, 128, causal=False,
                           impl=impl) for impl in ("flash1", "mem_efficient")}  # type: ignore[misc]
    assert m.time(ops["mem_efficient"]) < m.time(ops["flash1"])


@pytest.mark.parametrize("backward", [False, True])
def test_flash1_runs_whole_key_blocks_without_a_causal_mask(backward):
    """Without a causal mask FA1 rounds the keys up to whole blocks (v1.0.9 fmha_api.cpp:
    ``max_seqlen_k`` to multiples of ``blocksize_c``, 256 at head dim 64): 257, 384 and 512
    keys all run 2 passes, so the query rows' traffic (all but K and V) is the same, above
    256 keys' one pass."""
    def row_bytes(kv: int) -> float:
        op = Attention("a", 1, 16, 16, 1024, kv, 64, causal=False, backward=backward,
                       impl="flash1")
        return flash1_pass_bytes(op) - (2 if backward else 1) * 2 * kv * 16 * 64 * 2

    two = [row_bytes(kv) for kv in (257, 384, 512)]
    assert two == pytest.approx([two[0]] * 3) and two[0] > 1.5 * row_bytes(256)


@pytest.mark.parametrize("backward", [False, True])
def test_flash3_is_faster_than_flash2_on_hopper(backward):
    """FA3 runs 1.5-2x faster than FA2 on H100 (FA3 abstract, §4.1)."""
    speedup = rate("h100-sxm-80gb", "flash3", backward) / rate("h100-sxm-80gb", "flash2", backward)
    assert 1.5 <= speedup <= 2.5


def test_flash2_uses_less_of_hopper_than_of_ampere():
    """FA2 reaches up to 73% of A100's peak but only 35% of H100's (FA2 and FA3 abstracts);
    typical shapes at the sustained clock stay under that 35%."""
    def util(name: str) -> float:
        return rate(name, "flash2") / gpu(name).flops("bf16")

    assert util("h100-sxm-80gb") < 0.6 * util("a100-sxm-80gb")
    assert 0.2 < util("h100-sxm-80gb") < 0.35


def test_flash3_stays_under_its_headline_peak():
    """FA3's typical forward rate is below its 75%-of-peak headline and above FA2's 35%."""
    util = rate("h100-sxm-80gb", "flash3") / gpu("h100-sxm-80gb").flops("bf16")
    assert 0.35 < util < 0.75


def test_cudnn_matches_flash3_and_beats_flash2_on_hopper():
    """cuDNN's fused attention runs with FA3 on H100 (FA3 paper Figs. 5-6), ahead of FA2."""
    h100 = "h100-sxm-80gb"
    assert rate(h100, "cudnn") == pytest.approx(rate(h100, "flash3"))
    assert rate(h100, "cudnn") > 1.5 * rate(h100, "flash2")


def test_sdpa_is_flash2():
    """PyTorch SDPA's 16-bit path is its FlashAttention-2 backend."""
    for name in ("a100-sxm-80gb", "h100-sxm-80gb"):
        assert rate(name, "sdpa") == rate(name, "flash2")
        assert rate(name, "sdpa", True) == rate(name, "flash2", True)


def test_flash4_on_blackwell_beats_flash2():
    """FA4 on B200 runs far above FA2's Ampere-style kernel on the same GPU."""
    assert rate("b200-sxm-180gb", "flash4") > 2 * rate("b200-sxm-180gb", "flash2")


def test_ampere_kernels_keep_their_rate_off_nvidia_hopper():
    """The Hopper penalty applies to NVIDIA GPUs with wgmma only: not to A100 or MI300X."""
    for name in ("a100-sxm-80gb", "mi300x"):
        assert attention_fraction("flash2", False, gpu(name)) == ATTENTION_OF_GEMM["flash2"][0]


def test_ampere_kernels_lose_half_again_on_blackwell_whatever_its_exponential_rate():
    """mma.sync issues 2048 FLOPs an SM a clock on Hopper and Blackwell alike, whose tensor cores
    do 4096 and 8192: the share halves again on B200/GB200 and on Blackwell Ultra, whose doubled
    exponential rate (flops_per_exp 256, as Hopper's) does not change its tensor cores; an
    export-limited Hopper (H20) keeps Hopper's."""
    for name in ("h100-sxm-80gb", "h200-sxm-141gb", "h800-sxm-80gb", "h20-sxm-96gb"):
        assert ampere_kernel_share(gpu(name)) == AMPERE_KERNEL_ON_HOPPER, name
    for name in ("b200-sxm-180gb", "gb200", "b300-sxm-288gb", "gb300"):
        assert ampere_kernel_share(gpu(name)) == pytest.approx(AMPERE_KERNEL_ON_HOPPER / 2), name
    assert gpu("b300-sxm-288gb").flops_per_exp == gpu("h100-sxm-80gb").flops_per_exp
    b200, h100 = gpu("b200-sxm-180gb"), gpu("h100-sxm-80gb")
    frac = ATTENTION_OF_GEMM["flash2"][0]
    assert attention_fraction("sdpa", False, b200) == pytest.approx(frac * AMPERE_KERNEL_ON_HOPPER / 2)
    assert attention_fraction("sdpa", False, h100) == pytest.approx(frac * AMPERE_KERNEL_ON_HOPPER)


def test_hopper_tensor_cores_come_from_the_compute_capability_as_the_peaks_said():
    """Every catalog GPU reads the same from its compute capability as from the rule before
    the field (an NVIDIA GPU with fp8 peaks), and so does it without the field (a user's GPU
    file); an Ada GPU (8.9: fp8 tensor cores, no wgmma) and an RTX Blackwell one (12.x) are not
    read as Hopper."""
    seen = set()
    for name in names("gpus"):
        spec = gpu(name)
        peaks_rule = spec.vendor == "nvidia" and "fp8" in spec.peak_flops
        cc = spec.compute_capability or 0
        if cc == 89 or 120 <= cc < 130:  # Ada (L40S), RTX Blackwell: fp8 peaks, mma.sync only
            assert peaks_rule and not has_hopper_tensor_cores(spec), name
            continue
        assert has_hopper_tensor_cores(spec) == peaks_rule, name
        bare = dataclasses.replace(spec, compute_capability=None)
        assert has_hopper_tensor_cores(bare) == peaks_rule, name
        seen.add((spec.compute_capability is not None, peaks_rule))
    assert {(True, True), (True, False), (False, False)} <= seen  # H100.., A100, MI300X
    ada = dataclasses.replace(gpu("h100-pcie-80gb"), compute_capability=89)
    assert not has_hopper_tensor_cores(ada)


def test_unfused_attention_is_slowest_at_long_sequences():
    """Megatron's unfused attention (score matrix in HBM) is slower than every fused kernel."""
    for name in ("a100-sxm-80gb", "h100-sxm-80gb"):
        op = Attention("a", 8, 32, 32, 4096, 4096, 128, impl="unfused")
        fused = Attention("a", 8, 32, 32, 4096, 4096, 128, impl="flash1")
        m = RooflineModel(gpu(name))
        assert m.time(op) > m.time(fused)


def test_eager_pytorch_attention_matches_the_flashattention_papers_baseline():
    """PyTorch's eager attention (the FA2 paper's "PyTorch" bars, A100 and H100, 40 rows): its
    matmuls priced as batched GEMMs and its score round trips counted from the ops it runs,
    with no constant of its own, land within 25 % of every bar and 10 % on average (Megatron's
    fused-softmax pricing, which these rows had before, was 54 % off on average)."""

    from trainsim.validate.kernels import predict_kernel_row

    rows = published_kernel_rows(lambda r: "impl=pytorch" in r["note"])
    assert len(rows) == 40
    errors = [abs(r.predicted / r.measured - 1) for r in map(predict_kernel_row, rows)]
    assert max(errors) < 0.25 and sum(errors) / len(errors) < 0.10


def test_eager_attention_keeps_its_scores_like_megatrons_unfused():
    """Eager attention writes the score matrix: memory and selective recompute treat it as
    Megatron's unfused path; a causal mask adds a pass over the scores."""
    from trainsim.workload.ops import MATERIALIZED_SCORES

    assert "eager" in MATERIALIZED_SCORES and "eager" not in FUSED_ATTENTION
    plain = Attention("a", 2, 16, 16, 1024, 1024, 64, causal=False, impl="eager")
    masked = Attention("a", 2, 16, 16, 1024, 1024, 64, causal=True, impl="eager")
    assert masked.bytes > plain.bytes and masked.pairs == plain.pairs


def test_tiles_count_the_padding_and_the_diagonal_blocks():
    """A kernel computes whole tiles: 512 causal tokens in 128-square blocks compute the lower
    triangle plus half of each diagonal block (64 keys a row), forward and backward alike;
    without a mask, 512 rows in 192-row blocks compute 576."""
    exact = 512 * 513 / 2
    for backward in (False, True):
        assert tile_scores(512, 512, True, 128, 128, backward) == pytest.approx(
            exact + 512 * 63.5)
    assert tile_scores(512, 512, False, 192, 128) == 576 * 512
    # the forward wastes half a query block on the diagonal, the backward half a key block
    assert tile_scores(1024, 1024, True, 192, 128) > tile_scores(1024, 1024, True, 128, 128)
    assert tile_scores(1024, 1024, True, 64, 128, True) == tile_scores(1024, 1024, True, 128,
                                                                       128, True)


def test_a_cp_shard_pays_the_unsplit_kernels_diagonal_per_row():
    """FA3's forward at head dim 64 runs 192-row query blocks over 128-key blocks: a block's
    last row ends 64 or 0 keys short of a 128-key boundary, in turn (32 keys on average), and
    its rows see 1..192 of the block's 192 diagonal keys (95.5 short of 192 on average):
    127.5 keys a row, not the 96 of half a query block. At head dim 256 (128x80 tiles) the
    five blocks of a 640-row period end 32, 64, 16, 48, 0 keys short (32 on average) plus
    63.5: 95.5. A CP rank's causal shard (q_len = kv_len / cp) crosses the diagonal once per
    row as the whole sequence does, so it pays the same per row."""
    assert diagonal_keys(192, 128, False) == 127.5
    assert diagonal_keys(128, 80, False) == 95.5
    assert diagonal_keys(128, 128, False) == diagonal_keys(128, 128, True) == 63.5
    seq, cp = 24 * 384 * 5, 4  # whole periods of every tile shape below

    def padding_per_row(op: Attention) -> float:
        return (computed_scores(op) - op.pairs) / op.q_len

    for head_dim, backward in ((64, False), (256, False), (64, True), (128, True)):
        whole = Attention("a", 1, 8, 8, seq, seq, head_dim, backward=backward, impl="flash3")
        shard = Attention("a", 1, 8, 8, seq // cp, seq, head_dim, backward=backward,
                          impl="flash3")
        assert padding_per_row(shard) == pytest.approx(padding_per_row(whole), abs=1e-6)
    shard = Attention("a", 1, 8, 8, seq // cp, seq, 64, impl="flash3")
    assert padding_per_row(shard) == pytest.approx(127.5 + ATTN_ROW_OVERHEAD_KEYS["cudnn"][0])


def _local_tiles_by_count(seq: int, window: int, bm: int, bn: int, backward: bool) -> int:
    """Scores a sliding-window kernel computes in whole tiles over one sequence, block by
    block as FlashAttention's local kernels choose them (hopper/block.h v2.8.3,
    ``get_n_block_min_max``, ``get_m_block_min_max``, equal query and key lengths): the
    forward's query block [m0, m0 + bm) runs key blocks floor(max(0, m0 - left) / bn) ..
    ceil(min(seq, m0 + bm) / bn), the backward's key block [n0, n0 + bn) query blocks
    floor(n0 / bm) .. ceil(min(seq, n0 + bn + left) / bm); query i sees keys
    i - window + 1 .. i (``Attention.pairs``), so left = window - 1."""
    left, total = window - 1, 0
    q_blocks, kv_blocks = -(-seq // bm), -(-seq // bn)
    if backward:
        for nb in range(kv_blocks):
            last = min(q_blocks, -(-((nb + 1) * bn + left) // bm))
            total += max(0, last - nb * bn // bm)
    else:
        for mb in range(q_blocks):
            last = min(kv_blocks, -(-((mb + 1) * bm) // bn))
            total += max(0, last - max(0, mb * bm - left) // bn)
    return total * bm * bn


def test_a_window_pays_for_its_left_edge_as_for_the_diagonal():
    """FlashAttention's local kernels mask a window's left edge inside the tiles they keep,
    skipping only blocks wholly outside it, with their own tiles: the scores are exactly the
    tiles counted block by block, for sequences and windows that are not whole tile periods;
    per row, a window a whole number of blocks long costs about twice the diagonal's
    padding. A window as long as the sequence is none (the causal kernel's work)."""
    for seq, window in itertools.product((4096, 5000, 61440), (128, 1000, 4095, 4096)):
        if window >= seq:  # no window: below
            continue
        for head_dim, backward in ((64, False), (128, False), (192, False), (256, False),
                                   (64, True), (128, True), (256, True)):
            bm, bn = attention_tile("flash3", head_dim, True, backward, local=True)
            op = Attention("a", 1, 8, 8, seq, seq, head_dim, window=window, backward=backward,
                           impl="flash3")
            row = ATTN_ROW_OVERHEAD_KEYS["cudnn"][backward]  # FA3's family
            rows = -(-seq // bm) * bm
            counted = _local_tiles_by_count(seq, window, bm, bn, backward)
            assert computed_scores(op) - rows * row == counted, (seq, window, bm, bn)
            if window == 4096 and seq == 61440:  # about twice the diagonal past the window
                assert (counted - op.pairs) / seq > 1.9 * diagonal_keys(bm, bn, backward)
    for seq, head_dim, backward in itertools.product((4096, 5000), (64, 256), (False, True)):
        plain = Attention("a", 1, 8, 8, seq, seq, head_dim, backward=backward, impl="flash3")
        for window in (seq, 2 * seq):
            op = Attention("a", 1, 8, 8, seq, seq, head_dim, window=window, backward=backward,
                           impl="flash3")
            assert computed_scores(op) == computed_scores(plain)
    # a CP shard with no window keeps the diagonal alone
    shard = Attention("a", 1, 8, 8, 61440 // 4, 61440, 128, impl="flash3")
    assert (computed_scores(shard) - shard.pairs) / shard.q_len == pytest.approx(
        63.5 + ATTN_ROW_OVERHEAD_KEYS["cudnn"][0])


def test_flash3_local_kernels_take_their_own_forward_tiles():
    """FA3 v2.8.3 hopper/tile_size.h: local forward tiles are 192 x 128 to head dim 96, 128 x
    128 at 128, 128 x 96 at 192, 128 x 64 above; the backward and FA2 keep their tiles."""
    assert attention_tile("flash3", 64, True, False, local=True) == (192, 128)
    assert attention_tile("flash3", 128, True, False, local=True) == (128, 128)
    assert attention_tile("flash3", 192, True, False, local=True) == (128, 96)
    assert attention_tile("flash3", 256, True, False, local=True) == (128, 64)
    assert attention_tile("flash3", 256, True, False) == (128, 80)
    for head_dim in (64, 128, 256):
        for impl in ("flash3", "flash2"):
            assert attention_tile(impl, head_dim, True, True, local=True) == attention_tile(
                impl, head_dim, True, True)
        assert attention_tile("flash2", head_dim, True, False, local=True) == attention_tile(
            "flash2", head_dim, True, False)


def test_flash3_tiles_come_from_its_source_and_cost_most_at_short_sequences():
    """FA3's forward runs 192-row query blocks at head dim 64 and 80-key blocks at 256 (its
    launch templates); the padding costs a 512-token forward more than a 16k one, and cuDNN,
    whose tiles are not published, keeps square 128 blocks."""
    assert attention_tile("flash3", 64, True, False) == (192, 128)
    assert attention_tile("flash3", 256, False, False) == (128, 80)
    assert attention_tile("flash2", 128, True, True) == (64, 128)
    assert attention_tile("cudnn", 64, True, False) == (128, 128)
    h100 = RooflineModel(gpu("h100-sxm-80gb"))

    def ratio(s: int) -> float:
        ops = [Attention("a", 16384 // s, 8, 8, s, s, 256, causal=False, impl=impl)
               for impl in ("flash3", "cudnn")]  # type: ignore[arg-type]
        return h100.time(ops[0]) / h100.time(ops[1])

    assert ratio(512) > ratio(16384) > 0.99


def test_fa2_grouped_query_backward_pays_its_group_sums():
    """FlashAttention-2's backward with 8 KV heads for 32 query heads writes dK and dV per query
    head and sums the groups after (flash_api.cpp ``mha_bwd``): the backward costs that
    traffic and two launches more than its kernel; the forward, multi-head attention and
    cuDNN pay nothing."""
    h100 = gpu("h100-sxm-80gb")
    model = RooflineModel(h100)

    def op(impl: str, kv: int, backward: bool = True) -> Attention:
        return Attention("a", 2, 32, kv, 4096, 4096, 128, causal=True, backward=backward,
                         impl=impl)  # type: ignore[arg-type]

    sums = 2 * 2 * 4096 * 128 * 2 * (32 + 8)
    assert gqa_group_sum_bytes(op("flash2", 8)) == sums
    assert model.time(op("flash2", 8)) > model.time(op("flash2", 32))
    assert gqa_group_sum_bytes(op("flash2", 8, False)) == 0
    assert gqa_group_sum_bytes(op("flash2", 32)) == 0
    assert model.time(op("cudnn", 8)) == model.time(op("cudnn", 32))


def test_flash2_tiles_follow_its_launch_templates_on_each_gpu():
    """FlashAttention-2 picks its tile by head dim, mask, dropout and the GPU's shared memory
    (csrc/flash_attn/src/flash_{fwd,bwd}_launch_template.h @0251105a): head dim 256 forward
    128 x 64 on an A100 but 64 x 64 on an H100 (two CTAs an SM); sm8x GPUs (99 KiB a block)
    64 x 64 causal and 128 x 32 non-causal at 128, smaller backward tiles; dropout 128 x 64 at
    head dim 64 and 128 x 32 at 128; a GPU of unknown capability takes A100's tiles."""
    a100, l40s, h100, b200 = 80, 89, 90, 100
    assert fa2_tile(256, True, False, arch=a100) == (128, 64)
    assert fa2_tile(256, True, False, arch=h100) == (64, 64)
    assert fa2_tile(256, False, False, arch=b200) == (64, 64)
    assert fa2_tile(256, True, False, arch=l40s) == (64, 64)
    assert fa2_tile(128, True, False, arch=l40s) == (64, 64)
    assert fa2_tile(128, False, False, arch=l40s) == (128, 32)
    assert fa2_tile(96, True, False, arch=l40s) == (64, 64)
    assert fa2_tile(96, False, False, arch=l40s) == (128, 64)
    assert fa2_tile(128, True, False, arch=h100) == (128, 64)
    assert fa2_tile(128, False, False, arch=a100) == (128, 64)
    assert fa2_tile(64, True, False, dropout=True, arch=h100) == (128, 64)
    assert fa2_tile(128, True, False, dropout=True, arch=a100) == (128, 32)
    assert fa2_tile(192, True, False, dropout=True, arch=a100) == (64, 64)
    assert fa2_tile(32, True, False, arch=l40s) == (128, 128)
    # backward: >= 144 KiB a block (A100, H100) or sm8x's 99 KiB
    assert [fa2_tile(d, True, True, arch=h100) for d in (32, 64, 96, 128, 192, 256)] == [
        (128, 128), (128, 128), (64, 128), (64, 128), (64, 64), (64, 64)]
    assert [fa2_tile(d, True, True, arch=l40s) for d in (32, 64, 96, 128, 192, 256)] == [
        (128, 128), (64, 128), (64, 128), (64, 64), (64, 64), (64, 32)]
    assert fa2_tile(80, True, False, arch=l40s) == fa2_tile(96, True, False, arch=l40s)
    # sm120 / sm121 (RTX PRO 6000 Blackwell, GB10): sm86's 100 KiB an SM, 99 KiB a block, so
    # sm8x's small backward tiles and 64 x 64 at head dim 256, but not sm8x's causal branch
    for sm12x in (120, 121):
        assert [fa2_tile(d, True, True, arch=sm12x) for d in (64, 128, 256)] == [
            (64, 128), (64, 64), (64, 32)]
        assert fa2_tile(256, True, False, arch=sm12x) == (64, 64)
        assert fa2_tile(128, True, False, arch=sm12x) == (128, 64)
    for d, causal, bwd in itertools.product((64, 128, 256), (False, True), (False, True)):
        assert fa2_tile(d, causal, bwd) == fa2_tile(d, causal, bwd, arch=a100)
        assert attention_tile("sdpa", d, causal, bwd, arch=h100) == fa2_tile(d, causal, bwd,
                                                                             arch=h100)


def test_flash2_on_h100_prices_head_dim_256_in_64_row_tiles():
    """On an H100 a causal FlashAttention-2 forward at head dim 256 computes whole 64 x 64
    tiles (half the diagonal's masked keys of A100's 128 x 64) and its tail of heaviest query
    blocks shrinks: the same op costs the H100 less work per useful score than the 128 x 64
    count would; a local (sliding-window) FA2 kernel takes the non-causal tile."""
    op = Attention("a", 1, 8, 8, 4096, 4096, 256, causal=True, impl="flash2")
    row = ATTN_ROW_OVERHEAD_KEYS["flash2"][0]
    assert computed_scores(op, 90) == tile_scores(4096, 4096, True, 64, 64) + 4096 * row
    assert computed_scores(op, 80) == tile_scores(4096, 4096, True, 128, 64) + 4096 * row
    assert computed_scores(op, 90) < computed_scores(op, 80)
    assert computed_scores(op) == computed_scores(op, 80)
    assert attention_tile("flash2", 128, True, False, local=True, arch=89) == (128, 32)
    assert attention_tile("flash2", 128, True, False, arch=89) == (64, 64)

