"""Multi-latent attention's and MoE blocks' tensors in the replay of a Megatron-core rank
(``memory.megatron_step``): their shapes and the order a forward and backward allocate and free
them, as NVIDIA/Megatron-LM core_r0.14.0 (23e00ed) runs them with Transformer Engine
(megatron/core/transformer/multi_latent_attention.py; moe/moe_layer.py, moe/token_dispatcher.py
``MoEAlltoAllTokenDispatcher``, moe/experts.py ``TEGroupedMLP``). Split out of
``memory.megatron_step``, whose ``_Replay`` runs them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Mla:
    """Multi-latent attention's widths (Megatron-core ``MLASelfAttention``): heads on the rank,
    the query and key/value compressions (``q_lora`` 0: full-rank queries), the per-head
    widths without and with rotary embedding and the value's."""

    heads: int
    q_lora: int
    kv_lora: int
    nope: int
    rope: int
    v: int


@dataclass(frozen=True)
class Moe:
    """The stage's MoE blocks: which of its layers have one, the routed experts, those on the
    rank, top-k, an expert's and the shared experts' inner widths on the rank, the experts'
    data-parallel shards, and the rows an expert rank receives per routed token (the capacity
    factor when padded to it)."""

    layers: tuple[bool, ...]
    experts: int
    local: int
    topk: int
    f: int
    shared: int
    edp: int
    recv: float


class LatentExpertSteps:
    """The MLA and MoE steps of ``megatron_step._Replay`` (which supplies ``sh``, ``a``, ``f``,
    ``loc`` and ``_gather`` / ``_row_out``)."""

    sh: Any
    loc: int

    def a(self, n: float) -> int:
        raise NotImplementedError

    def f(self, *hs: int | None) -> None:
        raise NotImplementedError

    def _gather(self) -> int | None:
        raise NotImplementedError

    def _row_out(self) -> int:
        raise NotImplementedError

    def mla_forward(self, x: int) -> tuple[list[int | None], int]:
        """MLA (multi_latent_attention.py at 23e00ed): the input norm, the query's down- and
        (normed) up-projection, the key/value's likewise, RoPE's query and key concatenated
        with their unrotated parts, the value a view of the up-projection's output."""
        sh, a = self.sh, self.sh.mla
        T, h, loc = sh.T, sh.h, self.loc
        qk = a.heads * (a.nope + a.rope)
        ln1 = self.a(2 * loc * h)
        g = self._gather()
        qd = qn = None
        if a.q_lora:
            qd = self.a(2 * T * a.q_lora)
            qn = self.a(2 * T * a.q_lora)
        q = self.a(2 * T * qk)
        kvd = self.a(2 * T * (a.kv_lora + a.rope))
        kvn = self.a(2 * T * a.kv_lora)
        kv = self.a(2 * T * a.heads * (a.nope + a.v))
        self.f(g)
        query, key = self.a(2 * T * qk), self.a(2 * T * qk)
        self.f(q)
        o = self.a(2 * T * a.heads * a.v)
        p = self._row_out()
        m1 = self.a(loc * h) if sh.dropout else None
        r1 = self.a(2 * loc * h)
        self.f(p)
        return [x, ln1, qd, qn, kvd, kvn, kv, query, key, o, m1], r1

    def moe_forward(self, r1: int) -> tuple[list[int | None], int]:
        """An MoE block with the all-to-all dispatcher (moe_layer.py, token_dispatcher.py at
        23e00ed): the norm, the router's logits and fp32 probabilities, the fused permute, the
        all-to-all, the local experts' order (more than one), each expert's FC1, activation and
        FC2 (grouped), back in the same steps, the shared experts beside them."""
        sh, e = self.sh, self.sh.moe
        n, h, loc = self.loc, sh.h, self.loc
        rows = n * e.topk * e.recv
        ln2 = self.a(2 * loc * h)
        logits = self.a(2 * n * e.experts)
        probs = self.a(4 * n * e.experts)
        self.f(logits)
        perm = self.a(2 * rows * h)
        recv = self.a(2 * rows * h)
        self.f(perm)
        if e.local > 1:
            srt = self.a(2 * rows * h)
            self.f(recv)
            recv = srt
        fc1 = self.a(2 * rows * (2 if sh.gated else 1) * e.f)
        act = self.a(2 * rows * e.f)
        y = self.a(2 * rows * h)
        if e.local > 1:
            u = self.a(2 * rows * h)
            self.f(y)
            y = u
        back = self.a(2 * rows * h)
        self.f(y)
        moe_out = self.a(2 * n * h)
        self.f(back)
        s1 = sa = None
        if e.shared:
            s1 = self.a(2 * n * (2 if sh.gated else 1) * e.shared)
            sa = self.a(2 * n * e.shared)
            so = self.a(2 * n * h)
            c = self.a(2 * n * h)
            self.f(moe_out, so)
            moe_out = c
        m2 = self.a(loc * h) if sh.dropout else None
        out = self.a(2 * loc * h)
        self.f(moe_out)
        return [r1, ln2, probs, recv, fc1, act, s1, sa, m2], out

    def moe_backward(self, saved: list[int | None], g: int) -> int:
        sh, e = self.sh, self.sh.moe
        n, h = self.loc, sh.h
        rows = n * e.topk * e.recv
        gated = 2 if sh.gated else 1
        r1, ln2, probs, recv, fc1, act, s1, sa, m2 = saved
        self.f(m2)
        ds = None
        if e.shared:
            dsa = self.a(2 * n * e.shared)
            self.f(sa)
            ds1 = self.a(2 * n * gated * e.shared)
            self.f(dsa, s1)
            ds = self.a(2 * n * h)
            self.f(ds1)
        dback = self.a(2 * rows * h)  # unpermute's backward, then the all-to-all's
        dy = self.a(2 * rows * h)
        self.f(dback)
        if e.local > 1:
            u = self.a(2 * rows * h)
            self.f(dy)
            dy = u
        dact = self.a(2 * rows * e.f)
        self.f(dy, act)
        dfc1 = self.a(2 * rows * gated * e.f)
        self.f(dact, fc1)
        dx = self.a(2 * rows * h)
        self.f(dfc1, recv)
        for _ in range(2 if e.local > 1 else 1):  # the order's, the all-to-all's backward
            d = self.a(2 * rows * h)
            self.f(dx)
            dx = d
        dtok = self.a(2 * n * h)  # the permute's backward
        self.f(dx)
        dlog = self.a(4 * n * e.experts)
        self.f(probs)
        dr = self.a(2 * n * h)
        self.f(dlog)
        dln = self.a(2 * n * h)
        self.f(dtok, ds, dr)
        dn = self.a(2 * self.loc * h)  # the norm's backward
        self.f(dln, ln2, r1)
        g2 = self.a(2 * self.loc * h)
        self.f(dn, g)
        return g2

    def mla_backward(self, saved: list[int | None], g2: int) -> int:
        sh, a = self.sh, self.sh.mla
        T, h = sh.T, sh.h
        qk = a.heads * (a.nope + a.rope)
        x, ln1, qd, qn, kvd, kvn, kv, query, key, o, m1 = saved
        self.f(m1)
        gg = self._gather()
        do = self.a(2 * T * a.heads * a.v)
        self.f(gg)
        dq, dk, dv = self.a(2 * T * qk), self.a(2 * T * qk), self.a(2 * T * a.heads * a.v)
        self.f(do, o)
        dkv = self.a(2 * T * a.heads * (a.nope + a.v))
        self.f(dv, kv)
        dkvn = self.a(2 * T * a.kv_lora)
        self.f(dkv)
        dkvd = self.a(2 * T * (a.kv_lora + a.rope))  # the norm's, with the rotary key's part
        self.f(dkvn, kvn, dk, key)
        dqq = self.a(2 * T * qk)  # RoPE's backward
        self.f(dq, query)
        if a.q_lora:
            dqn = self.a(2 * T * a.q_lora)
            self.f(dqq)
            dqq = self.a(2 * T * a.q_lora)
            self.f(dqn, qn)
        gl = self._gather()
        d1 = self.a(2 * T * h)
        self.f(dqq, qd)
        d2 = self.a(2 * T * h)
        self.f(dkvd, kvd, gl)
        d = self.a(2 * T * h)
        self.f(d1, d2)
        if sh.sp:
            rs = self.a(2 * self.loc * h)
            self.f(d)
            d = rs
        dx = self.a(2 * self.loc * h)
        self.f(d, ln1, x)
        g3 = self.a(2 * self.loc * h)
        self.f(dx, g2)
        return g3
