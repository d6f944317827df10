"""torchtitan's eager Llama under its per-op selective checkpointing, and its eager loss, measured
with PyTorch autograd against the model (issue 16).

The block is written the way torchtitan 9dec370a (2024-12-26, the commit the held-out tt2412 rows
ran) computes it: torchtitan/models/norms.py ``RMSNorm`` (``self._norm(x.float()).type_as(x) *
self.weight``), torchtitan/models/llama/model.py ``Attention`` (separate wq, wk, wv, wo;
``apply_rotary_emb`` on ``view_as_complex(xq.float())``; ``repeat_kv`` before
``F.scaled_dot_product_attention(xq, xk, xv, is_causal=True)``) and ``FeedForward``
(``w2(F.silu(w1(x)) * w3(x))``). Each block is wrapped in a non-reentrant checkpoint whose
policy is parallelisms/parallelize_llama.py ``_custom_policy``: save the outputs of ops in
``_save_list`` (``aten.mm``, the SDPA kernels, ``reduce_scatter_tensor``, ``abs``, ``max``) except
every second ``aten.mm``, recompute the rest. On CPU, SDPA runs as
``_scaled_dot_product_flash_attention_for_cpu``, the CPU twin of the CUDA flash kernel in the
list, with the same outputs (the attention output and an fp32 log-sum-exp per head and row).

Bytes are the live CPU tensors that ``torch.distributed._tools.mem_tracker.MemTracker`` counts:
one layer's share is what three blocks keep after their forward minus what one block keeps,
halved. The loss is train.py's ``cross_entropy(pred.flatten(0, 1).float(), labels)`` with
``del pred`` before ``loss.backward()``.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

import trainsim
from trainsim.memory.estimate import activation_bytes_per_layer, estimate_stage_memory

DT = torch.bfloat16
H, HEADS, KV_HEADS, FFN, S, B = 256, 8, 2, 704, 128, 2
CPU = torch.device("cpu")


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim, dtype=DT))

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rope(x, freqs):
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * freqs.view(1, x.shape[1], 1, -1)).flatten(3).type_as(x)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        d = H // HEADS
        lin = lambda i, o: nn.Linear(i, o, bias=False, dtype=DT)
        self.wq, self.wk, self.wv, self.wo = lin(H, H), lin(H, KV_HEADS * d), lin(H, KV_HEADS * d), lin(H, H)
        self.w1, self.w2, self.w3 = lin(H, FFN), lin(FFN, H), lin(H, FFN)
        self.attention_norm, self.ffn_norm = RMSNorm(H), RMSNorm(H)

    def attention(self, x, freqs):
        b, s, _ = x.shape
        d, rep = H // HEADS, HEADS // KV_HEADS
        q = rope(self.wq(x).view(b, s, HEADS, d), freqs)
        k = rope(self.wk(x).view(b, s, KV_HEADS, d), freqs)
        v = self.wv(x).view(b, s, KV_HEADS, d)
        k = k[:, :, :, None].expand(b, s, KV_HEADS, rep, d).reshape(b, s, HEADS, d)  # repeat_kv
        v = v[:, :, :, None].expand(b, s, KV_HEADS, rep, d).reshape(b, s, HEADS, d)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           is_causal=True)
        return self.wo(o.transpose(1, 2).contiguous().view(b, s, -1))

    def forward(self, x, freqs):
        h = x + self.attention(self.attention_norm(x), freqs)
        return h + self.w2(F.silu(self.w1(self.ffn_norm(h))) * self.w3(self.ffn_norm(h)))


SAVE_LIST = {torch.ops.aten.mm.default,
             torch.ops.aten._scaled_dot_product_efficient_attention.default,
             torch.ops.aten._scaled_dot_product_flash_attention.default,
             torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
             torch.ops.aten.abs.default, torch.ops.aten.max.default}


def per_op_sac(block):
    from torch.utils.checkpoint import (
        CheckpointPolicy,
        checkpoint,
        create_selective_checkpoint_contexts,
    )

    def context():
        meta = defaultdict(int)

        def policy(ctx, func, *args, **kwargs):
            key = f"{'recompute' if ctx.is_recompute else 'forward'}_mm_count"
            if func == torch.ops.aten.mm.default:
                meta[key] += 1
            save = func in SAVE_LIST and not (func == torch.ops.aten.mm.default and meta[key] % 2 == 0)
            return CheckpointPolicy.MUST_SAVE if save else CheckpointPolicy.PREFER_RECOMPUTE
        return create_selective_checkpoint_contexts(policy)

    return lambda x, freqs: checkpoint(block, x, freqs, use_reentrant=False, context_fn=context,
                                       preserve_rng_state=False)


def _mem_tracker():
    """torch.distributed._tools.mem_tracker, imported by the tests that count with it, not when
    the module is collected: it pulls in torch.distributed and the compiler's stack (~2.9 CPU s a
    process, measured 2026-11-28), which every xdist worker paid at collection, whether or not it
    ran one of these tests (suite49)."""
    return pytest.importorskip("torch.distributed._tools.mem_tracker")


def live(tracker, kind: str = "current") -> int:
    """Bytes of live CPU tensors but parameters (the blocks' weights are not activations)."""
    snap = tracker.get_tracker_snapshot(kind).get(CPU, {})
    return snap.get("Total", 0) - snap.get(_mem_tracker()._MemRefType.PARAM, 0)


def kept_after_forward(n_blocks: int) -> int:
    torch.manual_seed(0)
    blocks = [Block() for _ in range(n_blocks)]
    freqs = torch.polar(torch.ones(S, H // HEADS // 2), torch.rand(S, H // HEADS // 2))
    x = torch.randn(B, S, H, dtype=DT, requires_grad=True)
    tracker = _mem_tracker().MemTracker()
    with tracker:
        base = live(tracker)
        h = x
        for block in blocks:
            h = per_op_sac(block)(h, freqs)
        kept = live(tracker) - base
        h.sum().backward()  # the checkpoints' recomputation runs (and checks the policy replays)
    return kept


def cfg_torchtitan(**training):
    return trainsim.run_config_from_dict({
        "model": {"num_layers": 2, "vocab_size": 1024, "max_position_embeddings": S,
                  "hidden_size": H, "num_attention_heads": HEADS, "num_kv_heads": KV_HEADS,
                  "ffn_hidden_size": FFN, "activation": "swiglu", "normalization": "rmsnorm",
                  "position_embedding": "rope", "add_bias_linear": False,
                  "tied_embeddings": False},
        "parallel": {"tp": 1, "pp": 1, "cp": 1, "recompute": "selective"},
        "training": {"global_batch_size": B, "micro_batch_size": B, "seq_length": S,
                     "framework": "torchtitan", "framework_version": "2024-12", **training},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 1, "gpus_per_node": 8},
    })


def test_per_op_sac_block_keeps_what_the_model_counts():
    """Per token: the block's input (2h), the kept matmul outputs wq, wv, w1, w2 (2(q + kv + f
    + h)), the SDPA output (2q) and its fp32 log-sum-exp (4 per head): 3616 B here, exactly."""
    per_layer = (kept_after_forward(3) - kept_after_forward(1)) / 2
    cfg = cfg_torchtitan()
    q, kv = H, KV_HEADS * H // HEADS
    hand = B * S * (2 * H + 2 * (q + kv + FFN + H) + 2 * q + 4 * HEADS)
    assert per_layer == hand
    assert activation_bytes_per_layer(cfg) == pytest.approx(hand, rel=1e-9)


def test_eager_cross_entropy_holds_twelve_bytes_per_logit_at_its_backward():
    """train.py's eager loss on 16-bit logits: the fp32 log-softmax output (saved, 4), the nll
    backward's fp32 gradient (4) and the log-softmax backward's fp32 result (4) are alive
    together, 12 bytes per logit, what the model's loss temporary counts."""
    tokens, vocab, hidden = B * S, 4000, 8  # 16-bit weight gradient: 0.5 % of the logits
    torch.manual_seed(0)
    h = nn.Parameter(torch.randn(tokens, hidden, dtype=DT))  # not counted: what feeds the loss
    w = nn.Parameter(torch.randn(vocab, hidden, dtype=DT))
    labels = torch.randint(0, vocab, (tokens,))
    tracker = _mem_tracker().MemTracker()
    with tracker:
        base = live(tracker)
        pred = h @ w.t()
        loss = F.cross_entropy(pred.float(), labels)
        del pred
        loss.backward()
    peak = live(tracker, "peak") - base
    assert peak == pytest.approx(12 * tokens * vocab, rel=0.01)  # the grads of h, w come later
    cfg = cfg_torchtitan()
    temps = dict(estimate_stage_memory(cfg, 0).temporaries)
    assert temps["logits and fp32 softmax"] == pytest.approx(
        12 * B * S * cfg.model.vocab_size, rel=1e-9)


def saved_by_compiled_block() -> int:
    """Bytes a torch.compile'd block (min-cut partitioner, as Inductor runs it) saves for its
    backward, deduplicated by storage; parameters and the RoPE table left out."""
    torch.manual_seed(0)
    block = Block()
    fn = torch.compile(per_op_sac(block), backend="aot_eager_decomp_partition", fullgraph=True)
    freqs = torch.polar(torch.ones(S, H // HEADS // 2), torch.rand(S, H // HEADS // 2))
    x = torch.randn(B, S, H, dtype=DT, requires_grad=True)
    fn(x, freqs).sum().backward()  # compile once
    skip = {t.untyped_storage().data_ptr() for t in [*block.parameters(), freqs]}
    seen: dict[int, int] = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in skip:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(x, freqs)
    out.sum().backward()
    return sum(seen.values())


def test_compiled_per_op_sac_drops_the_w2_output_no_backward_reads():
    """Under torch.compile the policy only tags the graph; the partitioner saves what the
    backward reads, so w2's output (consumed by the residual add alone) is not kept: 2h bytes
    per token fewer than eager, 3104 B here."""
    q, kv = H, KV_HEADS * H // HEADS
    hand = B * S * (2 * H + 2 * (q + kv + FFN) + 2 * q + 4 * HEADS)
    assert saved_by_compiled_block() == hand
    assert activation_bytes_per_layer(cfg_torchtitan(compile=True)) == pytest.approx(hand, rel=1e-9)
    eager = activation_bytes_per_layer(cfg_torchtitan())
    assert eager - hand == pytest.approx(B * S * 2 * H, rel=1e-9)


def _fsdp_cfg(version="2024-12", pp=1, tp=1, compile_=False):
    return trainsim.run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"tp": tp, "pp": pp, "recompute": "selective", "zero_stage": 3,
                     "sequence_parallel": tp > 1},
        "training": {"global_batch_size": 16, "micro_batch_size": 2, "seq_length": 8192,
                     "compile": compile_, "framework": "torchtitan",
                     "framework_version": version},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})


@pytest.mark.parametrize("tp", [1, 2])
def test_freed_logits_leave_two_bytes_per_logit_reserved_at_the_loss(tp):
    """torchtitan's ``del pred``: the eager loss (12 bytes per logit; loss_parallel's 16) peaks
    beside a free block of 2 bytes per logit that its second fp32 buffer cannot use. Hand
    calculation of the best-fit layout, in bytes per logit: [logits 2][copy 4][log-softmax 4];
    the copy and the logits freed (6 free); zeros_like takes 4 of them; the next 4 goes past
    the end: 2 + 4 + 4 + 4 reserved for 12 allocated."""
    cfg = _fsdp_cfg(tp=tp)
    b = estimate_stage_memory(cfg, 0)
    assert b.peak_at.endswith("at the loss")
    logits = 16 * 8192 / 8 * 128256 / tp  # local batch 2 x 8192 tokens
    side = b.reserved - b.allocated - 2 * logits
    assert side == pytest.approx(estimate_stage_memory(_fsdp_cfg(version="2024-05", tp=tp), 0).cached)
    assert side > 0  # FSDP2's all-gather pool is still there


def test_no_hole_when_the_loss_keeps_its_logits():
    """A compiled loss (torchtitan >= 2025-04 under compile) saves the 16-bit logits, and
    pipelining keeps each micro-batch's output: nothing is freed below the loss's buffers."""
    compiled = estimate_stage_memory(_fsdp_cfg(version="2025-04", compile_=True), 0)
    assert compiled.cached == pytest.approx(
        estimate_stage_memory(_fsdp_cfg(version="2024-05", compile_=True), 0).cached)
    from trainsim.memory.allocator import freed_logits_hole
    assert freed_logits_hole(_fsdp_cfg(pp=2), 1) == 0.0
    assert freed_logits_hole(_fsdp_cfg(), 0) == pytest.approx(2 * 2 * 8192 * 128256)
