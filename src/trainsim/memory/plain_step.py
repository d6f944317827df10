"""The allocations of a plain PyTorch training step, replayed through the caching allocator.

A plain loop (validation/README.md's ``pytorch`` framework) trains a Hugging Face Llama-style
model on one GPU: fp32 parameters, gradients and AdamW state, bf16 only inside
``torch.autocast``, ``loss = model(input_ids, labels).loss; loss.backward(); opt.step();
opt.zero_grad(set_to_none=True)``. Its reserved memory is what the caching allocator
(``memory.caching_allocator``) makes of the step's sequence of tensor sizes: the forward's
activations come in a few sizes (``T h``, ``T f``, ``T q`` ... bytes); the backward frees them
layer by layer, top down, and in between allocates every weight's fp32 gradient (4 bytes a
parameter, kept until ``zero_grad``) and its 16-bit temporaries. A gradient larger than every
freed block gets a segment of its own; a smaller one splits a freed activation block, which the
next forward then cannot use whole. The optimizer's ``_foreach_sqrt`` list (4 bytes a parameter,
torch/optim/adam.py ``_multi_tensor_adam``) and the next step's activations land in whatever
is left. So reserved exceeds the allocated peak by what these size mismatches strand.

The sequence below is read from the modules (huggingface/transformers@00c238bd
models/llama/modeling_llama.py: ``LlamaRMSNorm``, ``apply_rotary_pos_emb``, ``LlamaAttention``,
``LlamaMLP``, ``LlamaDecoderLayer``; integrations/sdpa_attention.py; loss/loss_utils.py
``ForCausalLMLoss``), autocast's casts (pytorch/pytorch@cfed411f aten/src/ATen/autocast_mode.cpp
``cached_cast``: a weight is cast once per autocast region and cached, an activation at every
matmul), autograd's engine (torch/csrc/autograd/engine.cpp: the ready node with the highest
sequence number runs first, so a weight's fp32 gradient (its cast's ``ToCopyBackward``) is made
right after its matmul's backward; saved tensors are released when their node has run;
input_buffer.cpp accumulates a second gradient in place), FlashAttention-2's backward
(``mha_bwd``: fp32 ``dq_accum``, and GQA's ``dk_expanded``/``dv_expanded`` over all query heads),
non-reentrant checkpointing (torch/utils/checkpoint.py: only the layer's input kept; the
recomputation stops after the last saved tensor) and ``nn.Linear``'s construction (a tied
``lm_head`` allocates its own weight before ``tie_weights`` drops it). Tensors under 1 MiB (norm
statistics, biases' temporaries, the loss) are left out: they live in the small pool.

Each count of bytes alive is checked against ``torch.cuda.max_memory_allocated`` of the H200
step probes (tests/test_plain_step.py); the replay's reserved-minus-allocated is what
``memory.allocator.reserved_bytes`` adds to the analytical allocated peak.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from trainsim.config import RunConfig
from trainsim.limits import check_replay
from trainsim.memory.hf import autocast_fp32_params
from trainsim.workload.ops import GQA_EXPANDED_BWD, MATERIALIZED_SCORES
from trainsim.workload.vocab import padded_vocab

FUSED_BACKWARD = frozenset({"sdpa", "flash2", "cudnn"})
"""Fused kernels whose backward is modelled: FlashAttention-2's ``mha_bwd`` (outputs, an fp32
``dq_accum``, and for GQA ``dk_expanded``/``dv_expanded`` over the query heads:
``workload.ops.GQA_EXPANDED_BWD``) and cuDNN's (outputs and a workspace holding the fp32 dQ
accumulator; GQA handled in the kernel)."""
WARM_STEPS, TIMED_STEPS = 3, 5
"""Steps the replay runs before and after ``reset_peak_memory_stats`` (benchmarks/step_probe.py
``WARM``, ``STEPS``). Reserved never shrinks here, so its peak is that of all eight steps."""


@dataclass(frozen=True)
class Shape:
    """What the sequence depends on: tokens ``T`` (micro-batch x sequence), batch ``b``,
    sequence ``s``, widths, layers, vocabulary, attention and recompute."""

    b: int
    s: int
    h: int
    q: int
    kv: int
    f: int
    heads: int
    layers: int
    vocab: int
    tied: bool
    qkv_bias: bool
    scores: bool  # eager attention: materialized s x s scores
    gqa_expanded: bool  # the fused kernel's backward expands K/V gradients to the query heads
    recompute: bool  # full recompute of every layer (non-reentrant checkpoint)

    @property
    def T(self) -> int:
        return self.b * self.s


class _Replay:
    """Runs the step's allocations through a :class:`CachingAllocator`."""

    def __init__(self, sh: Shape) -> None:
        from trainsim.memory.caching_allocator import CachingAllocator  # plain loops' rows only

        self.sh, self.al = sh, CachingAllocator()
        self.grads: dict[str, int] = {}
        self.cached: list[int] = []  # autocast's weight copies of a checkpointed forward

    def a(self, nbytes: float) -> int:
        return self.al.malloc(int(nbytes))

    def f(self, *handles: int | None) -> None:
        for h in handles:
            if h is not None:
                self.al.free(h)

    # parameters, in nn.Module construction order (LlamaForCausalLM.__init__)
    def params(self) -> list[tuple[str, int]]:
        sh = self.sh
        out = [("embed", sh.vocab * sh.h)]
        for i in range(sh.layers):
            out += [(f"q{i}", sh.q * sh.h)] + ([(f"qb{i}", sh.q)] if sh.qkv_bias else [])
            out += [(f"k{i}", sh.kv * sh.h)] + ([(f"kb{i}", sh.kv)] if sh.qkv_bias else [])
            out += [(f"v{i}", sh.kv * sh.h)] + ([(f"vb{i}", sh.kv)] if sh.qkv_bias else [])
            out += [(f"o{i}", sh.h * sh.q), (f"g{i}", sh.f * sh.h), (f"u{i}", sh.f * sh.h),
                    (f"d{i}", sh.h * sh.f), (f"n1{i}", sh.h), (f"n2{i}", sh.h)]
        out.append(("norm", sh.h))
        if not sh.tied:
            out.append(("head", sh.vocab * sh.h))
        return out

    def grad(self, name: str, nbytes: float) -> None:
        """A weight's fp32 gradient after its matmul's backward: the 16-bit one, then its cast."""
        g16 = self.a(nbytes / 2)
        self.grads[name] = self.a(nbytes)
        self.f(g16)

    # forward
    def _rope(self, x: int, w: int) -> int:
        T = self.sh.T
        m1 = self.a(4 * T * w)  # x * cos: bf16 x fp32 -> fp32
        neg = self.a(T * w)  # -x2 (half the width, 16 bits)
        cat = self.a(2 * T * w)
        self.f(neg)
        m2 = self.a(4 * T * w)  # rotate_half(x) * sin
        self.f(cat)
        out = self.a(4 * T * w)
        self.f(m1, m2)
        return out

    def _norm(self) -> tuple[int, int]:
        T, h = self.sh.T, self.sh.h
        self.f(self.a(4 * T * h))  # pow(2), reduced by mean
        return self.a(4 * T * h), self.a(4 * T * h)  # normed (saved), weight * normed

    def _weight(self, nbytes: float, mode: str) -> int:
        w = self.a(nbytes)
        if mode == "ckpt":  # cached by autocast until the region exits
            self.cached.append(w)
        return w

    def layer_forward(self, x: int, mode: str) -> tuple[dict[str, int | None], int | None]:
        """``mode``: ``keep`` (saved for the backward), ``ckpt`` (checkpointed: nothing saved
        but the input), ``recompute`` (the backward's recomputation, stopped before the
        residual)."""
        sh = self.sh
        T, h, q, kv, f = sh.T, sh.h, sh.q, sh.kv, sh.f
        s: dict[str, int | None] = {"x": x}
        s["n1"], o1 = self._norm()
        s["cq"], s["wq"] = self.a(2 * T * h), self._weight(2 * q * h, mode)
        qo = self.a(2 * T * q)
        s["ck"], s["wk"] = self.a(2 * T * h), self._weight(2 * kv * h, mode)
        ko = self.a(2 * T * kv)
        s["cv"], s["wv"] = self.a(2 * T * h), self._weight(2 * kv * h, mode)
        s["v"] = self.a(2 * T * kv)
        qe, ke = self._rope(qo, q), self._rope(ko, kv)
        self.f(qo, ko)
        ks = None
        if sh.scores:  # eager_attention_forward: repeat_kv, fp32 scores, softmax, cast
            sc = 2 * sh.b * sh.heads * sh.s * sh.s
            if kv < q:  # copies to every query head; the KV-head value is then unused
                ks, s["vs"] = self.a(4 * T * q), self.a(2 * T * q)
                self.f(s.pop("v"))
            else:
                s["vs"] = s.pop("v")
            s["q16"], s["k16"] = self.a(2 * T * q), self.a(2 * T * q)
            raw = self.a(sc)
            scaled = self.a(sc)
            self.f(raw)
            masked = self.a(2 * sc)  # + the fp32 mask
            self.f(scaled)
            s["sm"] = self.a(2 * sc)  # softmax(dtype=float32), saved
            self.f(masked)
            s["p16"] = self.a(sc)  # autocast's cast for the value matmul, saved
            out0 = self.a(2 * T * q)
            s["out"] = self.a(2 * T * q)  # transpose(1, 2).contiguous()
            self.f(out0)
        else:  # SDPA (GQA heads as they are): the kernel saves its 16-bit q, k, v, output
            s["q16"], s["k16"] = self.a(2 * T * q), self.a(2 * T * kv)
            s["out"] = self.a(2 * T * q)
        self.f(qe, ke, ks)
        s["wo"] = self._weight(2 * h * q, mode)
        oo = self.a(2 * T * h)
        self.f(o1)
        s["r1"] = self.a(4 * T * h)
        self.f(oo)
        s["n2"], o2 = self._norm()
        s["cg"], s["wg"] = self.a(2 * T * h), self._weight(2 * f * h, mode)
        s["g"], s["ac"] = self.a(2 * T * f), self.a(2 * T * f)
        s["cu"], s["wu"] = self.a(2 * T * h), self._weight(2 * f * h, mode)
        s["u"], s["pr"] = self.a(2 * T * f), self.a(2 * T * f)
        s["wd"] = self._weight(2 * h * f, mode)
        d = self.a(2 * T * h)
        if mode == "recompute":  # early stop: the down projection's inputs were the last
            self.f(d, o2)
            return s, None
        self.f(o2)
        r2 = self.a(4 * T * h)
        self.f(d)
        if mode == "ckpt":
            self.f(*(v for k, v in s.items() if k != "x" and not k.startswith("w")))
            return {"x": x}, r2
        return s, r2

    # backward
    def _norm_backward(self, g_out: int, normed: int | None, gx: int | None) -> int:
        """RMSNorm's backward; the input's gradient accumulates into ``gx`` (a fresh buffer
        when None)."""
        T, h = self.sh.T, self.sh.h
        gn = self.a(4 * T * h)  # d(weight * normed)/d normed
        self.f(self.a(4 * T * h), g_out, normed)  # the weight's gradient's product
        ga = self.a(4 * T * h)  # * rsqrt
        self.f(self.a(4 * T * h), gn)  # the rsqrt's gradient's product
        t1 = self.a(4 * T * h)  # mean's backward
        t2 = self.a(4 * T * h)  # pow's backward
        self.f(t1, t2)
        if gx is None:
            return ga
        self.f(ga)
        return gx

    def _linear_backward(self, g: int, inp: int | None, w: int | None, name: str, out_w: int,
                         in_w: int) -> int:
        """A matmul's backward: the input's 16-bit gradient, then the weight's fp32 one."""
        T = self.sh.T
        gi = self.a(2 * T * in_w)
        self.f(g, inp, w)
        self.grad(name, 4 * out_w * in_w)
        return gi

    def _to_fp32(self, g16: int, width: int, into: int | None) -> int:
        """The ToCopyBackward of an activation's autocast cast (16 -> 32 bits), accumulated in
        place into ``into``."""
        g = self.a(4 * self.sh.T * width)
        self.f(g16)
        if into is None:
            return g
        self.f(g)
        return into

    def _rope_backward(self, g: int, w: int) -> int:
        T = self.sh.T
        a = self.a(4 * T * w)  # * cos, fp32
        out = self.a(2 * T * w)  # cast to the 16-bit input
        self.f(a)
        c = self.a(4 * T * w)  # * sin
        d = self.a(2 * T * w)
        self.f(c, d, g)
        return out

    def layer_backward(self, i: int, s: dict[str, int | None], gx: int) -> int:
        sh = self.sh
        T, h, q, kv, f = sh.T, sh.h, sh.q, sh.kv, sh.f
        gd = self.a(2 * T * h)  # residual's gradient cast for the 16-bit down projection
        gpr = self._linear_backward(gd, s["pr"], s["wd"], f"d{i}", h, f)
        gac, gu = self.a(2 * T * f), self.a(2 * T * f)
        self.f(gpr, s["ac"], s["u"])
        gcu = self._linear_backward(gu, s["cu"], s["wu"], f"u{i}", f, h)
        go2 = self._to_fp32(gcu, h, None)
        gg = self.a(2 * T * f)
        self.f(gac, s["g"])
        gcg = self._linear_backward(gg, s["cg"], s["wg"], f"g{i}", f, h)
        go2 = self._to_fp32(gcg, h, go2)
        gx = self._norm_backward(go2, s["n2"], gx)
        self.f(s["r1"])
        goo = self.a(2 * T * h)
        gout = self._linear_backward(goo, None, s["wo"], f"o{i}", h, q)
        if sh.scores:
            sc = 2 * sh.b * sh.heads * sh.s * sh.s
            gp = self.a(sc)
            gvs = self.a(2 * T * q)
            self.f(gout, s.get("vs"), s["out"])
            gsm = self.a(2 * sc)
            self.f(gp, s["p16"])
            gin = self.a(2 * sc)
            self.f(gsm, s["sm"])
            gsc = self.a(sc)
            self.f(gin)
            graw = self.a(sc)
            self.f(gsc)
            gq16, gk16 = self.a(2 * T * q), self.a(2 * T * q)
            self.f(graw, s["q16"], s["k16"])
            gv = self.a(2 * T * kv) if kv < q else gvs
            if kv < q:
                self.f(gvs)
            gke = self.a(4 * T * q)
            self.f(gk16)
            if kv < q:
                g = self.a(4 * T * kv)  # repeat_kv's backward: sum over the copies
                self.f(gke)
                gke = g
        else:  # a fused kernel's backward: dq, dk, dv, an fp32 dq accumulator
            gq16, gk16, gv = self.a(2 * T * q), self.a(2 * T * kv), self.a(2 * T * kv)
            acc = self.a(4 * T * q)
            exp = [self.a(2 * T * q), self.a(2 * T * q)] if kv < q and sh.gqa_expanded else []
            self.f(*exp, acc, gout, s["q16"], s["k16"], s["out"], s["v"])
            gke = self.a(4 * T * kv)
            self.f(gk16)
        gqe = self.a(4 * T * q)
        self.f(gq16)
        gk = self._rope_backward(gke, kv)
        gq = self._rope_backward(gqe, q)
        go1 = self._to_fp32(self._linear_backward(gv, s["cv"], s["wv"], f"v{i}", kv, h), h,
                            None)
        go1 = self._to_fp32(self._linear_backward(gk, s["ck"], s["wk"], f"k{i}", kv, h), h,
                            go1)
        go1 = self._to_fp32(self._linear_backward(gq, s["cq"], s["wq"], f"q{i}", q, h), h,
                            go1)
        gx = self._norm_backward(go1, s["n1"], gx)
        self.f(s["x"])
        return gx

    def step(self, first: bool) -> None:
        sh = self.sh
        T, h, V = sh.T, sh.h, sh.vocab
        self.cached = []
        x = self.a(4 * T * h)  # the fp32 embedding output
        mask = self.a(4 * sh.b * sh.s * sh.s) if sh.scores else None
        mode = "ckpt" if sh.recompute else "keep"
        saved = []
        for _ in range(sh.layers):
            s, x = self.layer_forward(x, mode)
            saved.append(s)
        t = self.a(4 * T * h)
        self.f(t)
        nf, of = self.a(4 * T * h), self.a(4 * T * h)
        self.f(mask)
        ch, wh = self.a(2 * T * h), self.a(2 * V * h)
        logits = self.a(2 * T * V)
        up = self.a(4 * T * V)  # logits.float()
        lsm = self.a(4 * T * V)  # cross_entropy's log_softmax, saved
        self.f(up, of, logits)
        self.f(*self.cached)  # autocast exits: its cache (only a checkpointed forward's)
        # backward
        gl = self.a(4 * T * V)  # nll_loss's backward
        gls = self.a(4 * T * V)  # log_softmax's backward
        self.f(gl, lsm)
        g16 = self.a(2 * T * V)  # .float()'s backward
        self.f(gls)
        gch = self._linear_backward(g16, ch, wh, "embed" if sh.tied else "head", V, h)
        gof = self._to_fp32(gch, h, None)
        gx = self._norm_backward(gof, nf, None)
        self.f(x)
        for i in reversed(range(sh.layers)):
            s = saved[i]
            if sh.recompute:
                s, _ = self.layer_forward(s["x"], "recompute")
            gx = self.layer_backward(i, s, gx)
        ge = self.a(4 * V * h)  # embedding_dense_backward
        if sh.tied:
            self.f(ge)  # accumulated in place into lm_head's gradient
        else:
            self.grads["embed"] = ge
        self.f(gx)
        # optimizer: AdamW (foreach): the state on the first step, then _foreach_sqrt's list
        params = [(n, 4 * e) for n, e in self.params()]
        if first:
            for _, nbytes in params:
                self.a(nbytes)
                self.a(nbytes)
        sqrt = [self.a(nbytes) for _, nbytes in params]
        self.f(*sqrt)
        for n, _ in params:  # zero_grad(set_to_none=True)
            self.f(self.grads.pop(n, None))

    def build(self) -> None:
        """The model on the GPU: its fp32 parameters in construction order."""
        for _, e in self.params():
            self.a(4 * e)
        if self.sh.tied:  # nn.Linear's own weight, dropped by tie_weights
            self.f(self.a(4 * self.sh.vocab * self.sh.h))

    def run(self) -> tuple[int, int]:
        """(peak allocated over the timed steps, peak reserved), bytes."""
        self.build()
        for k in range(WARM_STEPS + TIMED_STEPS):
            if k == WARM_STEPS:
                self.al.reset_peaks()
            self.step(first=k == 0)
        return self.al.peak_allocated, self.al.peak_reserved


def applies(cfg: RunConfig) -> bool:
    """The replayed loop: a plain PyTorch step (``memory.hf.autocast_fp32_params``) on one GPU,
    a dense Llama-style model (RMSNorm, SwiGLU, no parallel block, no q/k norm), SDPA or eager
    attention, no or full recompute, the default allocator (no expandable segments), one
    micro-batch a step."""
    m, p, t = cfg.model, cfg.parallel, cfg.training
    return (autocast_fp32_params(cfg) and cfg.cluster.num_gpus == 1 and p.pp == 1
            and p.tp == 1 and p.cp == 1 and not m.is_moe and not m.is_mla
            and not m.parallel_block and not m.qk_layernorm and not m.post_sublayer_norm
            and m.normalization == "rmsnorm" and m.activation == "swiglu"
            and t.attention in FUSED_BACKWARD | MATERIALIZED_SCORES
            and p.recompute in ("none", "full") and not t.expandable_segments
            and cfg.schedule_microbatches == 1
            and (p.recompute == "none" or len(cfg.recomputed_layers) == m.num_layers))


def shape_of(cfg: RunConfig) -> Shape:
    m, t = cfg.model, cfg.training
    return Shape(b=t.micro_batch_size, s=t.seq_length, h=m.hidden_size, q=m.q_size,
                 kv=m.kv_size, f=m.ffn_size, heads=m.num_attention_heads, layers=m.num_layers,
                 vocab=padded_vocab(cfg), tied=bool(m.tied_embeddings), qkv_bias=bool(m.qkv_bias),
                 scores=t.attention in MATERIALIZED_SCORES,
                 gqa_expanded=t.attention in GQA_EXPANDED_BWD,
                 recompute=cfg.parallel.recompute == "full")


@lru_cache(maxsize=256)
def replay(sh: Shape) -> tuple[int, int]:
    """(peak allocated over the timed steps, peak reserved) of the replayed loop, bytes."""
    return _Replay(sh).run()


def fragmentation_bytes(cfg: RunConfig) -> float | None:
    """Reserved minus allocated at their peaks in the replay, or None where it does not apply."""
    if not applies(cfg):
        return None
    check_replay(cfg.model.num_layers, WARM_STEPS + TIMED_STEPS)
    alloc, res = replay(shape_of(cfg))
    return float(res - alloc)
