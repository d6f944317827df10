"""What Megatron-core's caching allocator holds beyond the allocated peak: one rank's life replayed
through the allocator's rules (``memory.caching_allocator``).

Megatron-core's DDP (from core_v0.6.0, NVIDIA/Megatron-LM 293e10419f, 2024-02-14) lays the
parameters out in one contiguous 16-bit buffer when the distributed optimizer is on: the model is
built first, each weight a tensor of its own, then the buffer and the fp32 gradient buffer are
allocated, and each weight is copied into the buffer and its own storage freed
(megatron/core/distributed/param_and_grad_buffer.py L361-365 at core_v0.6.0, L731-736 at
core_r0.14.0 23e00ed). Nothing calls ``empty_cache`` (``--empty-unused-memory-level`` 0), so
those blocks stay cached: as large as each weight, each a segment of its own, never merged. The
distributed optimizer then makes each shard's fp32 main parameter
(``shard_model_param.clone().float()``, distrib_optimizer.py L379) and the optimizer its two
fp32 moments at the first step (TransformerEngine v2.11 optimizers/fused_adam.py
``initialize_state`` L402-410): requests the size of each parameter's piece of this rank's range
of the buffer, which land in freed weight blocks where they fit and split them. The step's
activations then split what is left. What they cannot use stays reserved: MooreThreads/SimuMax's
B200 runs of core_r0.14.0 measure 0.8-12.9 GiB (3-9 %) of it on the dense Llama 3 cases,
differing by optimizer shard and not within a tensor-parallel group, 2.3-5.9 GiB on the
DeepSeek-V2 / V3 (MLA, MoE) ones (benchmarks/alloc59_simumax_ranks.csv).

The replay (the same allocator as ``memory.plain_step``'s: one stream, frees effective at once):

1. the stage's 16-bit weights in construction order (the embedding on the first stage; per
   layer the QKV and MLP norms, QKV, the projection, FC1, FC2, or MLA's projections and an MoE
   block's router, routed and shared experts; the final norm and the output layer on the
   last), then the two buffers, then the weights freed in reverse; an MoE model's routed
   experts (``allreduce=False`` parameters) get buffers of their own after the dense ones,
   sharded over the expert data-parallel group (distributed_data_parallel.py L196-212,
   L374-385 at 23e00ed), each buffer freeing its own weights;
2. for this rank's range of each buffer (parameters in reverse order, each start padded to 64
   elements, one bucket without ``overlap_grad_reduce``, else buckets of
   ``max(40e6, 1e6 dp)`` elements, each padded to lcm(dp, 128) and split in dp equal ranges:
   param_and_grad_buffer.py at 23e00ed), each piece's 16-bit clone, its fp32 copy, the clone
   freed (the dense optimizer's, then the experts': get_megatron_optimizer chains one per
   buffer kind);
3. two steps of 1F1B (``pp - stage - 1`` warm-up forwards, at most ``MAX_IN_FLIGHT``
   micro-batches in flight) with a Transformer Engine layer's activation-sized 16-bit tensors
   (norm outputs, sequence-parallel gathers, fused QKV, RoPE's rotated Q and K, fused
   attention's output, projection and FC2 outputs with their reduce-scatters, FC1 and the
   activation, bias-dropout-add's 1-byte masks under hidden dropout; the backward's matching gradients; weight gradients accumulate into the fp32
   buffer, so none is allocated), the last stage's 16-bit logits; Adam's moments after the
   first step's backward. MLA and the all-to-all MoE block: ``memory.megatron_moe``. Under
   fp8 GEMMs each linear's first forward also makes Transformer Engine's cached fp8 weight
   copies (Megatron-core passes ``is_first_microbatch``; ``memory.state.FP8_WEIGHT_LAYOUT_BYTES``),
   kept for the run; the activations stay the 16-bit sequence (coarse).

It is coarse: small tensors, the loss's fp32 temporaries, the communication streams' own
pools and the optimizer step's temporaries are left out. The replay's reserved minus allocated,
the largest over the first, middle and last optimizer shards, is what
``memory.allocator.reserved_bytes`` adds for a run it :func:`applies` to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from trainsim.catalog.frameworks import profile_supports
from trainsim.config import RunConfig
from trainsim.memory.megatron_moe import LatentExpertSteps, Mla, Moe
from trainsim.memory.state import FP8_WEIGHT_LAYOUT_BYTES
from trainsim.workload.fp8_gather import fp8_weights_gathered
from trainsim.workload.ops import FUSED_ATTENTION
from trainsim.workload.vocab import padded_vocab

MAX_IN_FLIGHT = 4
"""Micro-batches the replay keeps in flight at most (warm-up forwards plus one): deeper
pipelines' first stages hold more, whose further blocks are not replayed (bounded work)."""
STEPS = 2
"""Steps replayed: the first makes Adam's moments, the second runs with them."""
PARAM_PAD = 64
"""Each parameter's start in the buffer is padded to 64 elements (``_pad_start_of_param_if_needed``)."""
BUCKET_PAD = 128
"""A bucket's end is padded to lcm(dp, 128) elements (``_pad_end_of_bucket_if_needed``)."""
BUCKET_ELEMENTS = 40_000_000
"""``bucket_size`` default with ``overlap_grad_reduce``: max(40e6, 1e6 dp) elements
(megatron/core/distributed/distributed_data_parallel.py L64, megatron/training/training.py L950
at 23e00ed)."""


@dataclass(frozen=True)
class Shape:
    """One rank of one pipeline stage: widths, the tokens of a micro-batch on the rank ``T``,
    layers on the stage, the first / last stage, tensor parallelism (with sequence
    parallelism), the micro-batches replayed and their warm-up, the optimizer's shards."""

    h: int
    f: int
    q: int
    kv: int
    vocab: int
    gated: bool
    T: int
    layers: int
    first: bool
    last: bool
    tied: bool
    tp: int
    sp: bool
    microbatches: int
    warmup: int
    dp: int
    bucket: int | None
    dropout: bool = False
    mla: Mla | None = None
    moe: Moe | None = None
    fp8: tuple[float, ...] = ()
    """Bytes per weight element of each fp8 copy Transformer Engine caches (empty: 16-bit)."""


Saved = tuple[list[int | None], list[int | None], bool]
"""A layer's tensors kept for its backward: the attention's, the MLP's or MoE block's, whether MoE."""


class _Replay(LatentExpertSteps):
    def __init__(self, sh: Shape) -> None:
        from trainsim.memory.caching_allocator import CachingAllocator

        self.sh, self.al = sh, CachingAllocator()
        self.first_forward = True

    def a(self, n: float) -> int:
        return self.al.malloc(int(n))

    def f(self, *hs: int | None) -> None:
        for h in hs:
            if h is not None:
                self.al.free(h)

    def tensors(self) -> list[tuple[int, bool]]:
        """The stage's parameters (elements, a routed expert's) in construction order: the
        embedding on the first stage; per layer :meth:`attention_tensors` then
        :meth:`mlp_tensors`; the final norm and the output layer on the last."""
        sh, t = self.sh, self.sh.tp
        out = [(sh.vocab * sh.h // t, False)] if sh.first else []
        for is_moe in self.moe_layers:
            out += [(n, e) for n, e, _ in self.attention_tensors() + self.mlp_tensors(is_moe)]
        if sh.last:
            out.append((sh.h, False))
            if not (sh.tied and sh.first):  # the output layer (a copy of a tied embedding)
                out.append((sh.vocab * sh.h // t, False))
        return out

    @property
    def moe_layers(self) -> tuple[bool, ...]:
        sh = self.sh
        return sh.moe.layers if sh.moe else (False,) * sh.layers

    def attention_tensors(self) -> list[tuple[int, bool, bool]]:
        """A layer's attention parameters (elements, a routed expert's, a linear's weight):
        the QKV norm, fused QKV, the projection; under MLA the input norm, the query down- and
        up-projections, the key/value down- and up-projections with their norms, the
        projection."""
        sh, t = self.sh, self.sh.tp
        if not sh.mla:
            return [(sh.h, False, False), ((sh.q + 2 * sh.kv) * sh.h // t, False, True),
                    (sh.h * sh.q // t, False, True)]
        a = sh.mla
        q = [(a.q_lora * sh.h, False, True), (a.q_lora, False, False),
             (a.heads * (a.nope + a.rope) * a.q_lora, False, True)] if a.q_lora else [
            (a.heads * (a.nope + a.rope) * sh.h, False, True)]
        return [(sh.h, False, False), *q, ((a.kv_lora + a.rope) * sh.h, False, True),
                (a.kv_lora, False, False), (a.heads * (a.nope + a.v) * a.kv_lora, False, True),
                (sh.h * a.heads * a.v, False, True)]

    def mlp_tensors(self, is_moe: bool) -> list[tuple[int, bool, bool]]:
        """The MLP's (its norm, FC1, FC2) or the MoE block's (its norm, the router, each local
        expert's FC1 then each one's FC2: Transformer Engine ``GroupedLinear`` holds a weight per
        expert, then the shared experts' FC1 and FC2: moe_layer.py L124/L154/L163 at 23e00ed)."""
        sh, t = self.sh, self.sh.tp
        fc1 = 2 if sh.gated else 1
        if not (is_moe and sh.moe):
            return [(sh.h, False, False), (fc1 * sh.f * sh.h // t, False, True),
                    (sh.h * sh.f // t, False, True)]
        e = sh.moe
        out = [(sh.h, False, False), (e.experts * sh.h, False, False)]
        out += [(fc1 * e.f * sh.h, True, True)] * e.local + [(sh.h * e.f, True, True)] * e.local
        if e.shared:
            out += [(fc1 * e.shared * sh.h, False, True), (sh.h * e.shared, False, True)]
        return out

    def fp8_copies(self, tensors: list[tuple[int, bool, bool]]) -> None:
        """Transformer Engine's cached fp8 weights (row-wise, column-wise), made by each linear's
        first forward (``is_first_microbatch``: ``memory.state.FP8_WEIGHT_LAYOUT_BYTES``) and
        kept."""
        if not (self.sh.fp8 and self.first_forward):
            return
        for n, _, matrix in tensors:
            for per in self.sh.fp8:
                if matrix and per:
                    self.a(per * n)

    def params(self) -> list[int]:
        """Elements of the parameters in Megatron's (dense) buffer, in construction order."""
        return [n for n, expert in self.tensors() if not expert]

    def expert_params(self) -> list[int]:
        """Elements of the routed experts' parameters (their own buffer), in construction order."""
        return [n for n, expert in self.tensors() if expert]

    def shards(self, rank: int, ps: list[int] | None = None, dp: int | None = None) -> list[int]:
        """Elements of each parameter of ``ps`` (the dense buffer's by default) in data-parallel
        rank ``rank``'s ranges of a buffer sharded ``dp`` ways."""
        ps = self.params() if ps is None else ps
        dp = self.sh.dp if dp is None else dp
        div = math.lcm(dp, BUCKET_PAD)
        spans: list[tuple[int, int]] = [(0, 0)] * len(ps)
        ranges, start, bucket_start = [], 0, 0
        for i in reversed(range(len(ps))):
            start = -(-start // PARAM_PAD) * PARAM_PAD
            spans[i] = (start, start + ps[i])
            start += ps[i]
            if self.sh.bucket is not None and start - bucket_start >= self.sh.bucket:
                end = -(-start // div) * div
                ranges.append((bucket_start, end))
                bucket_start = start = end
        if start > bucket_start or not ranges:
            ranges.append((bucket_start, -(-start // div) * div))
        mine = [(lo + rank * (hi - lo) // dp, lo + (rank + 1) * (hi - lo) // dp)
                for lo, hi in ranges]
        return [sum(max(0, min(b, e) - max(a, s)) for a, b in mine) for s, e in spans]

    def build(self, rank: int) -> list[int]:
        """The weights, Megatron's buffers (the dense one, then the experts' with the expert
        data-parallel group: distributed_data_parallel.py L374/L379 at 23e00ed), each moving
        its weights in and freeing them; then each optimizer's fp32 main shards (the dense
        one's, then the experts': get_megatron_optimizer's chained optimizers)."""
        tensors = self.tensors()
        weights = [(self.a(2 * n), expert) for n, expert in tensors]
        dense, experts = self.params(), self.expert_params()
        for ps, mine in ((dense, False), (experts, True)):
            if not ps:
                continue
            self.a(2 * sum(ps))  # the 16-bit parameter buffer
            self.a(4 * sum(ps))  # the fp32 gradient buffer
            self.f(*(w for w, e in reversed(weights) if e == mine))
        shards = [n for n in self.shards(rank) if n]
        if experts and self.sh.moe:
            edp = self.sh.moe.edp
            shards += [n for n in self.shards(rank % edp, experts, edp) if n]
        for n in shards:
            tmp = self.a(2 * n)
            self.a(4 * n)
            self.f(tmp)
        return shards

    def _gather(self) -> int | None:
        sh = self.sh
        return self.a(2 * sh.T * sh.h) if sh.sp else None

    def _row_out(self) -> int:
        """A row-parallel linear's output, reduce-scattered under sequence parallelism."""
        sh = self.sh
        p = self.a(2 * sh.T * sh.h)
        if not sh.sp:
            return p
        rs = self.a(2 * sh.T * sh.h // sh.tp)
        self.f(p)
        return rs

    def attention_forward(self, x: int) -> tuple[list[int | None], int]:
        sh = self.sh
        T, h, t, loc = sh.T, sh.h, sh.tp, self.loc
        self.fp8_copies(self.attention_tensors())
        if sh.mla:
            return self.mla_forward(x)
        ln1 = self.a(2 * loc * h)
        g = self._gather()
        qkv = self.a(2 * T * (sh.q + 2 * sh.kv) / t)
        self.f(g)
        qr, kr = self.a(2 * T * sh.q / t), self.a(2 * T * sh.kv / t)
        o = self.a(2 * T * sh.q / t)
        p = self._row_out()
        m1 = self.a(loc * h) if sh.dropout else None  # bias-dropout-add's 1-byte mask
        r1 = self.a(2 * loc * h)
        self.f(p)
        return [x, ln1, qkv, qr, kr, o, m1], r1

    def mlp_forward(self, r1: int) -> tuple[list[int | None], int]:
        sh = self.sh
        T, h, t, loc = sh.T, sh.h, sh.tp, self.loc
        ln2 = self.a(2 * loc * h)
        g = self._gather()
        fc1 = self.a(2 * T * (2 if sh.gated else 1) * sh.f / t)
        self.f(g)
        act = self.a(2 * T * sh.f / t)
        p = self._row_out()
        m2 = self.a(loc * h) if sh.dropout else None
        out = self.a(2 * loc * h)
        self.f(p)
        return [r1, ln2, fc1, act, m2], out

    def layer_forward(self, x: int, moe: bool = False) -> tuple[Saved, int]:
        sa, r1 = self.attention_forward(x)
        self.fp8_copies(self.mlp_tensors(moe))
        sm, out = (self.moe_forward if moe else self.mlp_forward)(r1)
        return (sa, sm, moe), out

    def _dgrad(self) -> int:
        """A column-parallel linear's input gradient (and its norm's): back to the rank's
        tokens; the weight gradient re-gathers the input under sequence parallelism."""
        sh = self.sh
        gl = self._gather()
        d = self.a(2 * sh.T * sh.h)
        self.f(gl)
        if sh.sp:
            rs = self.a(2 * self.loc * sh.h)
            self.f(d)
            d = rs
        dx = self.a(2 * self.loc * sh.h)  # the norm's backward
        self.f(d)
        return dx

    def mlp_backward(self, saved: list[int | None], g: int) -> int:
        sh = self.sh
        T, t = sh.T, sh.tp
        r1, ln2, fc1, act, m2 = saved
        self.f(m2)
        gg = self._gather()
        dact = self.a(2 * T * sh.f / t)
        self.f(gg, act)
        dfc1 = self.a(2 * T * (2 if sh.gated else 1) * sh.f / t)
        self.f(dact, fc1)
        dx = self._dgrad()
        self.f(dfc1, ln2, r1)
        g2 = self.a(2 * self.loc * sh.h)  # plus the residual's gradient
        self.f(dx, g)
        return g2

    def attention_backward(self, saved: list[int | None], g2: int) -> int:
        sh = self.sh
        T, t = sh.T, sh.tp
        if sh.mla:
            return self.mla_backward(saved, g2)
        x, ln1, qkv, qr, kr, o, m1 = saved
        self.f(m1)
        gg = self._gather()
        do = self.a(2 * T * sh.q / t)
        self.f(gg)
        dq, dk, dv = self.a(2 * T * sh.q / t), self.a(2 * T * sh.kv / t), self.a(2 * T * sh.kv / t)
        self.f(do, o, qr, kr)
        dqkv = self.a(2 * T * (sh.q + 2 * sh.kv) / t)
        self.f(dq, dk, dv, qkv)
        dx = self._dgrad()
        self.f(dqkv, ln1, x)
        g3 = self.a(2 * self.loc * sh.h)
        self.f(dx, g2)
        return g3

    def layer_backward(self, saved: Saved, g: int) -> int:
        sa, sm, moe = saved
        g2 = (self.moe_backward if moe else self.mlp_backward)(sm, g)
        return self.attention_backward(sa, g2)

    @property
    def loc(self) -> int:
        sh = self.sh
        return sh.T // sh.tp if sh.sp else sh.T

    def forward(self) -> tuple[list, int]:
        sh = self.sh
        x = self.a(2 * self.loc * sh.h)  # the embedding's output or the received activation
        layers = []
        for is_moe in self.moe_layers:
            s, x = self.layer_forward(x, is_moe)
            layers.append(s)
        self.first_forward = False
        if sh.last:
            ln = self.a(2 * self.loc * sh.h)
            logits = self.a(2 * sh.T * sh.vocab / sh.tp)
            layers.append([x, ln, logits])
            return layers, -1
        return layers, x

    def backward(self, layers: list, out: int) -> None:
        sh = self.sh
        if sh.last:
            x, ln, logits = layers.pop()
            g = self.a(2 * self.loc * sh.h)
            self.f(logits, ln, x)
        else:
            self.f(out)
            g = self.a(2 * self.loc * sh.h)  # the received gradient
        for s in reversed(layers):
            g = self.layer_backward(s, g)
        self.f(g)

    def step(self) -> None:
        sh = self.sh
        inflight = [self.forward() for _ in range(sh.warmup)]
        for _ in range(sh.microbatches - sh.warmup):
            inflight.append(self.forward())
            self.backward(*inflight.pop(0))
        while inflight:
            self.backward(*inflight.pop(0))

    def run(self, rank: int, steps: int = STEPS, persistent: bool = True) -> int:
        """Peak reserved minus peak allocated since the start, bytes; ``persistent``: the
        construction and the optimizer's state too (else the steps' activations alone)."""
        shards = self.build(rank) if persistent else []
        for k in range(steps):
            self.step()
            if k == 0:
                for n in shards:
                    self.a(4 * n)  # exp_avg
                    self.a(4 * n)  # exp_avg_sq
        return self.al.peak_reserved - self.al.peak_allocated


def applies(cfg: RunConfig) -> bool:
    """Megatron's DDP with the distributed optimizer where the profile lays parameters out in
    its buffer (feature ``ddp_param_buffer``), without expandable segments, for what the replay
    covers: fused attention (MLA too), dense or MoE blocks with the all-to-all dispatcher (no
    latent MoE, hybrid layers or multi-token prediction), no recompute, no interleaving, 16-bit
    training or fp8 GEMMs on 16-bit parameters whose fp8 copies Transformer Engine caches
    (profile feature ``te_weight_cache``)."""
    m, p, t = cfg.model, cfg.parallel, cfg.training
    moe_ok = not m.is_moe or (p.moe_token_dispatcher_type == "alltoall"
                              and m.moe_latent_size is None and m.mtp_num_layers == 0)
    return (p.data_parallel_impl == "megatron" and p.distributed_optimizer
            and p.zero_stage in (0, 1) and not t.expandable_segments
            and profile_supports(cfg, "ddp_param_buffer") and moe_ok
            and m.hybrid_layer_pattern is None and not m.parallel_block
            and t.attention in FUSED_ATTENTION and p.recompute == "none" and (p.vpp or 1) == 1
            and (t.dtype in ("bf16", "fp16") or (
                t.dtype == "fp8" and not fp8_weights_gathered(cfg)
                and bool(profile_supports(cfg, "te_weight_cache")))))


def shape_of(cfg: RunConfig, stage: int) -> Shape:
    m, p, t = cfg.model, cfg.parallel, cfg.training
    dp = cfg.dp * p.cp
    warmup = min(p.pp - stage - 1, MAX_IN_FLIGHT - 1, cfg.schedule_microbatches - 1)
    mla = Mla(heads=m.num_attention_heads // p.tp, q_lora=m.q_lora_rank or 0,
              kv_lora=m.kv_lora_rank, nope=m.qk_head_dim, rope=m.qk_pos_emb_head_dim,
              v=m.v_head_dim) if m.is_mla else None
    fp8: tuple[float, ...] = ()
    if t.dtype == "fp8":
        row, col = FP8_WEIGHT_LAYOUT_BYTES[t.fp8_recipe]
        if cfg.cluster.gpu.fp8_any_layout and t.fp8_recipe in ("delayed", "current"):
            col = 0.0  # no transposed copy where the tensor cores take either layout
        fp8 = (row, col)
    moe = None
    if m.is_moe:
        experts = m.num_experts or 0
        moe = Moe(layers=tuple(m.is_moe_layer(i) for i in cfg.virtual_ranges[stage]),
                  experts=experts, local=experts // p.ep, topk=m.moe_router_topk,
                  f=m.expert_ffn_size // p.etp,
                  shared=(m.moe_shared_expert_intermediate_size or 0) // p.tp,
                  edp=cfg.edp, recv=m.moe_recv_factor())
    return Shape(h=m.hidden_size, f=m.ffn_size, q=m.q_size, kv=m.kv_size, vocab=padded_vocab(cfg),
                 gated=m.activation == "swiglu", T=t.micro_batch_size * t.seq_length // p.cp,
                 layers=cfg.stage_layer_counts[stage], first=stage == 0, last=stage == p.pp - 1,
                 tied=bool(m.tied_embeddings), tp=p.tp, sp=p.sequence_parallel and p.tp > 1,
                 microbatches=min(cfg.schedule_microbatches, warmup + 2), warmup=warmup, dp=dp,
                 bucket=max(BUCKET_ELEMENTS, 1_000_000 * dp) if p.overlap_grad_reduce else None,
                 dropout=m.hidden_dropout > 0, mla=mla, moe=moe, fp8=fp8)


@lru_cache(maxsize=256)
def replay(sh: Shape) -> int:
    """The largest reserved-minus-allocated over the first, middle and last optimizer shard."""
    return max(_Replay(sh).run(r) for r in sorted({0, sh.dp // 2, sh.dp - 1}))


def reserve_bytes(cfg: RunConfig, stage: int) -> float | None:
    """Bytes reserved beyond the allocated peak on stage ``stage``, or None where the replay does
    not apply."""
    if not applies(cfg):
        return None
    return float(replay(shape_of(cfg, stage)))
