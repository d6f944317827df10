"""Op lists of a Mamba-2 layer (hybrid symbol ``M``) on one rank: its forward as Megatron-core
runs it in training, and the backward of its fused conv1d + SSD scan.

Forward (NVIDIA/Megatron-LM@d98e8a64 megatron/core/ssm/mamba_layer.py ``MambaLayer.forward``
lines 158-179, mamba_mixer.py ``MambaMixer.forward`` lines 510-527 and ``_ssm_training``
lines 679-733): the pre-norm fused into ``in_proj`` (``TELayerNormColumnParallelLinear``:
column-parallel h -> (2 d_inner + 2 G N + H) / tp, the SP all-gather before it as for QKV),
the ``l b d -> b l d`` copy of its output where the micro-batch holds more than one sequence
(``.contiguous()`` of a permuted view; a view where b = 1), then mamba_ssm's
``mamba_split_conv1d_scan_combined`` called without ``rmsnorm_weight`` and ``outproj_weight``
(so z gates inside the scan), the copy back, the gated module's RMSNorm over d_inner / tp
(``ExtendedRMSNorm`` called on y alone, line 731), ``out_proj`` (row-parallel d_inner / tp
-> h, reduce-scatter or all-reduce as attention's output projection) and the bias-dropout-add.

The fused function (state-spaces/mamba@e9594ce1 mamba_ssm/ops/triton/ssd_combined.py
``MambaSplitConv1dScanCombinedFn.forward`` lines 824-901): ``causal_conv1d_fwd`` over the
x, B, C channels (d_inner + 2 G N) / tp, then ``_mamba_chunk_scan_combined_fwd`` (lines
343-395): ``_chunk_cumsum_fwd``, ``_chunk_state_fwd`` (per head and chunk B^T x: N x Q by Q x P),
``_state_passing_fwd`` (fp32 states in, 16-bit out), ``_bmm_chunk_fwd`` (per group and chunk
C B^T: Q x N by N x Q, fp32 out) and ``_chunk_scan_fwd`` (per head and chunk [C B^T * decay | C]
by [x ; states]: Q x (Q + N) by (Q + N) x P, with D and the z gate). It saves zxBCdt and the
ungated output (``ctx.save_for_backward``, line 888), not the conv output or the states.

Each Triton matmul kernel is priced as ``compute.roofline`` prices a one-kernel grouped GEMM of
equal groups (``Gemm.grouped`` ``triton``): its grid is one program per output tile of every
(sequence, chunk, head) problem, launched once, which is what a Triton grouped GEMM is; the
others (cumsum, state passing, conv1d, the z-gate backward) are memory-bound by the bytes they
must move. The FLOPs of the forward's three matmul kernels are ``model.mamba.scan_flops``
(chunk_scan's k = Q + N joins its two products).

Backward (``MambaSplitConv1dScanCombinedFn.backward`` lines 903-981 and
``_mamba_chunk_scan_combined_bwd`` lines 397-516): the conv1d forward again, then the cumsum,
C B^T, the chunk states and their passing recomputed (lines 441-448), ``_chunk_scan_bwd_dz``,
``_chunk_scan_bwd_dstates``, ``_state_passing_bwd``, ``_chunk_scan_chunk_state_bwd_dx``,
``_chunk_state_bwd_db``, ``_chunk_scan_bwd_dC``, ``_chunk_scan_bwd_dcb``, two
``_bmm_chunk_bwd``, the reverse cumsum of ddA in torch ops, ``_chunk_scan_bwd_ddAcs_stable``,
``_chunk_cumsum_bwd`` and ``causal_conv1d_bwd``: ten matmul kernels (C B^T and the chunk
states recomputed among them) and seven memory-bound ones, one pass each, beside the torch ops
on ``ddA``. Around them the backward issues small torch and pre-hook kernels the
Triton ones need (``scan_workspace``): the copy ``dt_in = dt.clone()`` (line 440), the sums of
the split kernels' fp32 partials (``dB``, ``dC``, ``dcb`` over ``nsplits``), the zeroing of the
buffers the kernels add into atomically, the partial ``dD`` / ``ddA`` sums; and
its recomputed states pass in fp32 (``_state_passing_fwd`` is called without ``out_dtype``,
lines 443-446, so it writes the fp32 states' dtype: ssd_state_passing.py line 206).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import cast

from trainsim.config import RunConfig
from trainsim.config.hybrid import mamba_heads
from trainsim.model.mamba import conv_channels, in_proj_width, inner
from trainsim.workload.elementwise import full_wave_norm, norm_impl, norm_op
from trainsim.workload.ops import ACT_BYTES as ACT
from trainsim.workload.ops import Elementwise, Gemm, GroupedImpl, Op
from trainsim.workload.shard import Shard, linear, tp_enter, tp_exit

SSD = "ssd."
"""Name prefix of the fused function's forward ops: ``workload.layers.backward_of`` replaces
them all by ``scan_backward`` where it meets the last (``SSD_LAST``)."""
SSD_LAST = SSD + "chunk_scan"
TRITON: GroupedImpl = "triton"
STATE_BYTES = 4
"""The chunk states are computed in fp32 (``states_in_fp32=True``)."""


PARAM_PREP_KERNELS = 4
"""``MambaMixer._ssm_training`` (NVIDIA/Megatron-LM@d98e8a64 megatron/core/ssm/mamba_mixer.py
line 694 ``A = -torch.exp(self.cp.get_A_log().float())``, line 711 ``self.cp.get_dt_bias().float()``;
``get_A_log`` / ``get_dt_bias`` return the parameter itself at cp 1, mamba_context_parallel.py
lines 290-297): the cast of ``A_log``, its ``exp``, the negation and the cast of ``dt_bias``, each
one eager kernel: ``Float16Module`` converts both parameters to the 16-bit model dtype
(megatron/core/transformer/module.py lines 458-510, ``convert_module_to_dtype_except_fp32_marked``;
no Mamba parameter is marked ``keep_in_fp32`` at d98e8a64, so the "Keep A_log in fp32" of
mamba_mixer.py line 401 holds only until the wrap). Their backward: the four autograd nodes
(``NegBackward0``, ``ExpBackward0``: grad x result, two ``ToCopyBackward0`` casts back), one kernel
each. The conv weight's ``rearrange`` (line 709) is a view."""
PARAM_PREP_BYTES = (2 + 4) + (4 + 4) + (4 + 4) + (2 + 4)
"""Bytes per head of those four kernels (16-bit in, fp32 out for the casts; fp32 in and out)."""
NORM_DW_KERNELS = 2
"""mamba_ssm's gated RMSNorm backward (state-spaces/mamba@e9594ce1
mamba_ssm/ops/triton/layernorm_gated.py ``_layer_norm_bwd`` line 333, ``dw = _dw.sum(0).to(
weight.dtype)``): after its Triton kernel, the sum of the per-program fp32 ``dw`` partials and
the cast to the weight's dtype, two tensor methods in the Function's backward (``bwd_py_kernels``);
their bytes (a partial row per program, ~SMs x the group width, fp32) are left in the norm's."""


def _sizes(cfg: RunConfig, sh: Shard) -> tuple[int, int, int, int, int, int, int]:
    """(d_inner, conv channels, heads, groups) on this rank, then the chunk Q (at most the
    sequence), the head width P and the state size N."""
    m, t = cfg.model, sh.tp
    return (inner(m) // t, conv_channels(m) // t, mamba_heads(m) // t,
            m.mamba_num_groups // t, min(m.mamba_chunk_size, sh.q_len), m.mamba_head_dim,
            m.mamba_state_dim)


def mamba_forward(cfg: RunConfig, sh: Shard) -> list[Op]:
    """Forward ops of one Mamba-2 layer for one micro-batch on one rank (module docstring)."""
    m = cfg.model
    h, T, nt = m.hidden_size, sh.tokens, sh.norm_tokens
    d, c, heads, groups, q, p, n = _sizes(cfg, sh)
    ops: list[Op] = []
    norm = norm_impl(m.normalization, h, sh.eager_norms, sh.compiled, sh.norm)
    ops.append(norm_op("mamba_norm", m.normalization, nt * h, norm, sh.stream_bytes,
                       full_wave_norm(norm, sh.compiled)))
    tp_enter(ops, sh, h, "mamba")
    width = in_proj_width(m) // sh.tp
    linear(ops, sh, "in_proj", T, width, h, seq_parallel="gather", norm_fused=True)
    if sh.batch > 1:  # rearrange(zxBCdt, "l b d -> b l d").contiguous(): a copy, and back
        ops.append(Elementwise("zxbcdt_copy", bytes=2 * T * width * ACT, kernel="copy",
                               bwd_bytes=2 * T * width * ACT, bwd_kernels=1))
    # A = -torch.exp(A_log.float()) and dt_bias.float() before the fused call: four eager
    # kernels over the rank's heads (module docstring), and their four autograd backwards
    ops.append(Elementwise("mamba_param_prep", bytes=heads * PARAM_PREP_BYTES,
                           kernels=PARAM_PREP_KERNELS, impl="eager",
                           bwd_bytes=heads * PARAM_PREP_BYTES, bwd_kernels=PARAM_PREP_KERNELS))
    ops.append(Elementwise(SSD + "conv1d", bytes=2 * T * c * ACT, kernel="causal_conv1d"))
    ops += chunk_scan_forward(sh.batch, sh.q_len, heads, groups, q, p, n)
    if sh.batch > 1:  # rearrange(y, "b l d -> l b d").contiguous()
        ops.append(Elementwise("ssm_out_copy", bytes=2 * T * d * ACT, kernel="copy",
                               bwd_bytes=2 * T * d * ACT, bwd_kernels=1))
    # RMSNormGated over d_inner / tp in groups (z already applied): mamba_ssm's Triton
    # layernorm_gated, one program per row; reads y, writes its 16-bit output and rstd
    ops.append(Elementwise("ssm_norm", bytes=T * (2 * d * ACT + groups * STATE_BYTES),
                           kernel=m.normalization, impl="triton", bwd_kernels=1 + NORM_DW_KERNELS,
                           bwd_py_kernels=NORM_DW_KERNELS))
    linear(ops, sh, "out_proj", T, h, d, seq_parallel="scatter")
    tp_exit(ops, sh, h, "mamba")
    mask = 1 if m.hidden_dropout > 0 else 0
    split = sh.eager and mask > 0
    ops.append(Elementwise("mamba_bias_dropout_add",
                           bytes=nt * h * (3 * sh.stream_bytes + mask * (1 + (2 * ACT if split
                                                                                else 0))),
                           kernels=2 if split else 1, kernel="residual_add",
                           impl="eager" if split else "fused"))
    return ops


SSD_IMPL = "triton_ssd"
"""``Elementwise.impl`` of a memory-bound Triton SSD kernel (the cumsum, the state passing, the
dz kernel and their backwards): priced at ``compute.ssd``'s share of HBM, as the matmul kernels
are over their ``Gemm.ssd_bytes``."""


@dataclass(frozen=True)
class ScanBytes:
    """Sizes of the scan's tensors on one rank, each counted once (state-spaces/mamba@e9594ce1
    mamba_ssm/ops/triton, the 52nd session's ``benchmarks/ssd52_audit.moved_bytes``): ``x``,
    ``bc``, ``dts`` in bytes, ``states`` and ``cb`` in elements."""

    x: float  # x, z, the output or a gradient of one: (token, head) x head_dim, 16-bit
    bc: float  # B or C: (token, group) x state, 16-bit
    dts: float  # dt or dA_cumsum: (token, head), fp32
    states: float  # chunk states: (sequence, chunk, head) x head_dim x state
    cb: float  # C B^T: (sequence, chunk, group) x chunk x chunk


def scan_bytes(per_head: int, per_group: int, chunk: int, head_dim: int, state: int
               ) -> ScanBytes:
    """``ScanBytes`` of ``per_head`` (sequence, chunk, head) and ``per_group`` (sequence, chunk,
    group) problems (the last chunk counted whole)."""
    th, tg = per_head * chunk, per_group * chunk
    return ScanBytes(x=th * head_dim * ACT, bc=tg * state * ACT, dts=th * STATE_BYTES,
                     states=per_head * head_dim * state, cb=per_group * chunk * chunk)


def chunk_scan_forward(batch: int, seq_len: int, heads: int, groups: int, chunk: int,
                       head_dim: int, state: int, dt_bytes: int = ACT, z: bool = True
                       ) -> list[Op]:
    """The five Triton kernels of ``_mamba_chunk_scan_combined_fwd`` (module docstring) for
    ``batch`` sequences of ``seq_len`` tokens, ``heads`` heads of width ``head_dim`` in
    ``groups`` groups, state ``state``, chunk ``chunk``; ``dt_bytes``: the element size of the
    dt it reads (16-bit in training, a slice of zxBCdt); ``z``: the gate applied in the chunk
    scan, which then also writes the ungated output (the fused training call). Each is priced
    over the bytes it moves (``compute.ssd``): the matmuls' ``Gemm.ssd_bytes``, the others'
    ``bytes``."""
    tokens = batch * seq_len
    problems = batch * math.ceil(seq_len / chunk)  # (sequence, chunk) pairs
    q, p, n = chunk, head_dim, state
    s = scan_bytes(problems * heads, problems * groups, q, p, n)
    return [
        # dt read, its softplus'd copy and the chunk's cumulative dA written in fp32
        Elementwise(SSD + "chunk_cumsum", bytes=tokens * heads * (dt_bytes + 2 * STATE_BYTES),
                    kernel="ssd_cumsum", impl=SSD_IMPL),
        # reads B, x, dt, dA; writes the fp32 states
        Gemm(SSD + "chunk_state", m=n, n=p, k=q, batch=problems * heads, grouped=TRITON,
             ssd_bytes=s.bc + s.x + 2 * s.dts + s.states * STATE_BYTES),
        Elementwise(SSD + "state_passing", kernel="ssd_state_passing", impl=SSD_IMPL,
                    bytes=s.states * (STATE_BYTES + ACT)),
        # reads C and B, writes C B^T in fp32
        Gemm(SSD + "bmm_chunk", m=q, n=q, k=n, batch=problems * groups, grouped=TRITON,
             ssd_bytes=2 * s.bc + s.cb * STATE_BYTES),
        # reads C B^T, x, C, the 16-bit states, dt, dA (and z); writes the output (and the
        # ungated one)
        Gemm(SSD_LAST, m=q, n=p, k=q + n, batch=problems * heads, grouped=TRITON,
             ssd_bytes=s.cb * STATE_BYTES + s.x + s.bc + s.states * ACT + 2 * s.dts
             + s.x * (3 if z else 1))]


def nsplits(per_head: int, heads_per_group: int, num_sms: int) -> int:
    """Head splits of the backward's ``dB`` / ``dC`` / ``dcb`` kernels, each writing its own fp32
    partial that a torch ``sum`` adds (state-spaces/mamba@e9594ce1 ssd_chunk_state.py
    ``_chunk_state_bwd_db`` lines 939-940, ssd_chunk_scan.py ``_chunk_scan_bwd_dC`` and
    ``_chunk_scan_bwd_dcb``): a program takes ``min(ceil(problems x heads / SMs), heads per
    group)`` heads of a group, so a group's heads split in ``ceil(heads per group / that)``;
    ``per_head`` the (sequence, chunk, head) problems. 1 where the SMs are unknown (0)."""
    if num_sms <= 0:
        return 1
    per_program = max(min(math.ceil(per_head / num_sms), heads_per_group), 1)
    return math.ceil(heads_per_group / per_program)


def scan_backward(fwd: list[Op], num_sms: int = 0) -> list[Op]:
    """The fused conv1d + SSD function's backward, from its forward ops in ``fwd`` (module
    docstring): one op per kernel, the Triton ones over the bytes they move (``compute.ssd``),
    the ``dB``, ``dC`` and ``dcb`` kernels' fp32 partials once per head split on a GPU of
    ``num_sms`` SMs (``nsplits``; one where 0)."""
    by = {op.name: op for op in fwd if op.name.startswith(SSD)}
    conv, cumsum, passing = by[SSD + "conv1d"], by[SSD + "chunk_cumsum"], by[SSD + "state_passing"]
    state, cb = cast(Gemm, by[SSD + "chunk_state"]), cast(Gemm, by[SSD + "bmm_chunk"])
    n, p, q = state.m, state.n, state.k
    per_head, per_group = state.batch, cb.batch
    tokens_heads = per_head * q  # (token, head) pairs (the last chunk counted whole)
    s = scan_bytes(per_head, per_group, q, p, n)
    splits = nsplits(per_head, per_head // per_group, num_sms)
    partial = 2 * s.bc  # a (token, group) x state fp32 partial of dB or dC, one split

    def redo(op: Op) -> Op:
        if op is passing:  # fp32 states out (module docstring)
            return replace(cast(Elementwise, op), name=f"{op.name}.recompute",
                           bytes=s.states * 2 * STATE_BYTES)
        return replace(op, name=f"{op.name}.recompute")

    def mm(name: str, rows: int, cols: int, k: int, batch: int, moved: float) -> Gemm:
        return Gemm(f"{SSD}{name}", m=rows, n=cols, k=k, batch=batch, grouped=TRITON,
                    ssd_bytes=moved)

    return [
        redo(conv),
        # dt_in = dt.clone() (dt a slice of zxBCdt): the first kernel of the scan's backward
        Elementwise(SSD + "dt_clone", bytes=2 * tokens_heads * ACT, kernel="copy", impl="eager",
                    py_kernels=1),
        redo(cumsum), redo(cb), redo(state), redo(passing),
        # reads x, z, the saved output and its gradient; writes dz and the ungated gradient
        Elementwise(SSD + "chunk_scan_bwd_dz", bytes=6 * s.x, kernel="ssd_bwd_dz", impl=SSD_IMPL),
        # reads C, dout, dA; writes the states' gradients in fp32
        mm("chunk_scan_bwd_dstates", n, p, q, per_head,
           s.bc + s.x + s.dts + s.states * STATE_BYTES),
        # reads the states and their gradients in fp32, writes both in 16 bits
        Elementwise(SSD + "state_passing_bwd", bytes=s.states * 2 * (STATE_BYTES + ACT),
                    kernel="ssd_state_passing.bwd", impl=SSD_IMPL),
        mm("chunk_scan_chunk_state_bwd_dx", q, p, q + n, per_head,
           3 * s.x + s.bc + s.cb * STATE_BYTES + s.states * ACT + 3 * s.dts),
        mm("chunk_state_bwd_db", q, n, p, per_head,
           s.x + s.states * ACT + s.bc + 3 * s.dts + splits * partial),
        mm("chunk_scan_bwd_dc", q, n, p, per_head,
           s.states * ACT + s.x + s.bc + 2 * s.dts + splits * partial),
        mm("chunk_scan_bwd_dcb", q, q, p, per_head,
           2 * s.x + 2 * s.dts + splits * s.cb * STATE_BYTES),
        mm("bmm_chunk_bwd_db", q, n, q, per_group, 2 * s.bc + s.cb * STATE_BYTES + partial),
        mm("bmm_chunk_bwd_dc", q, n, q, per_group, 2 * s.bc + s.cb * STATE_BYTES + partial),
        # ddA_cumsum_prev[..., -1] += ..., .flip(-1).cumsum(-1).flip(-1), ddA += ddA_next +
        # ddA_prev: six torch kernels over fp32 (ssd_combined.py lines 500-507)
        Elementwise(SSD + "ddA_reverse_cumsum", bytes=5 * 2 * tokens_heads * STATE_BYTES,
                    kernels=6, py_kernels=6, kernel="copy", impl="eager"),
        mm("chunk_scan_bwd_ddacs", q, q, p, per_head, 2 * s.x + 3 * s.dts + s.cb * STATE_BYTES),
        # reads ddA and ddt (fp32) and dt, writes ddt
        Elementwise(SSD + "chunk_cumsum_bwd", bytes=tokens_heads * (2 * STATE_BYTES + 2 * ACT),
                    kernel="ssd_cumsum.bwd", impl=SSD_IMPL),
        # reads xBC and its gradient, writes the input gradient (weights' gradients beside)
        Elementwise(SSD + "conv1d.bwd", bytes=conv.bytes * 3 / 2, kernel="causal_conv1d.bwd"),
        *scan_workspace(tokens_heads, per_group, q, n, splits),
    ]


SPLIT_SUMS = 3
"""``dB.sum(2)``, ``dC.sum(2)``, ``dcb.sum(2)``: torch sums of the fp32 partials the split
backward kernels write, one per ``nsplits`` head split (state-spaces/mamba@e9594ce1
ssd_chunk_state.py line 961, ssd_chunk_scan.py lines 1508 and 1557)."""
WORKSPACE_KERNELS = 13
"""The backward's other small kernels around its Triton ones (state-spaces/mamba@e9594ce1), the
no-op casts of fp32 to fp32 left out: the autotune ``pre_hook`` zeroing of the buffers the
kernels add into atomically, ``ddt`` and ``dD`` before ``_chunk_scan_chunk_state_bwd_dx``
(ssd_combined.py lines 80-88), ``ddA`` before ``_chunk_state_bwd_db`` (ssd_chunk_state.py lines
386-393) and ``_chunk_scan_bwd_dC`` (ssd_chunk_scan.py lines 518-525), ``dA`` and ``ddt_bias``
before ``_chunk_cumsum_bwd`` (ssd_chunk_state.py lines 91-97), and the ``torch.zeros`` of ``dD``
(ssd_combined.py line 288): 7; ``torch.cumsum`` of ``_chunk_state_bwd_db``'s ``ddA``
(ssd_chunk_state.py line 968): 1; the partial sum of ``_chunk_scan_bwd_ddAcs_stable``
(ssd_chunk_scan.py line 1728): 1; ``dD``'s two sums after ``_chunk_scan_chunk_state_bwd_dx``
(ssd_combined.py lines 335-337): 2, its sum after ``_chunk_scan_bwd_dz`` (ssd_chunk_scan.py line
1416): 1; ``ddA_chunk_cumsum``'s sum after ``_state_passing_bwd`` (ssd_state_passing.py line 280):
1."""
DDA_TILE = 32
"""``BLOCK_SIZE_M_min`` of ``_chunk_scan_bwd_ddAcs_stable``: its fp32 ``ddA`` partials hold one
row per 32 rows of the chunk (ssd_chunk_scan.py line 1709)."""


def scan_workspace(tokens_heads: int, per_group: int, q: int, n: int, splits: int = 1
                   ) -> list[Op]:
    """The backward's small torch and pre-hook kernels (``SPLIT_SUMS``, ``WORKSPACE_KERNELS``)
    from the scan's sizes: ``tokens_heads`` (token, head) pairs, ``per_group`` (sequence, chunk,
    group) problems of chunk ``q`` and state ``n``. The split sums read the fp32 partials of
    ``splits`` head splits (``nsplits``: 2 at Nemotron-H 56B's tp-8 rank shape on 132 SMs) and
    write fp32; the zeroed ``ddt`` and ``ddA`` buffers and the cumsum are (token, head) fp32
    vectors, the ``ddA`` partial sum reads one per 32 chunk rows; the ``dD`` ones are a few values
    per head and chunk. Each is a tensor method the Python of the fused function's backward calls
    with no module, hook or autograd record around it (grad mode is off in a backward):
    ``compute.host.PY_LAUNCH_S`` of host time a kernel."""
    group_state = per_group * q * n  # (token, group) B or C elements
    cb = per_group * q * q  # C B^T elements
    return [
        Elementwise(SSD + "split_sums", bytes=2 * (splits + 1) * group_state * STATE_BYTES
                    + (splits + 1) * cb * STATE_BYTES, kernels=SPLIT_SUMS, py_kernels=SPLIT_SUMS,
                    impl="eager"),
        Elementwise(SSD + "workspace", kernels=WORKSPACE_KERNELS, py_kernels=WORKSPACE_KERNELS,
                    impl="eager",
                    bytes=tokens_heads * STATE_BYTES * (3 + 2 + math.ceil(q / DDA_TILE) + 1)),
    ]


def mamba_backward_flops(cfg: RunConfig, sh: Shard) -> float:
    """FLOPs of the scan's backward kernels (recomputation included) on one rank: what
    ``scan_backward`` prices, for tests and reports."""
    fwd = mamba_forward(cfg, sh)
    return sum(op.flops for op in scan_backward(fwd) if isinstance(op, Gemm))


__all__ = ["SSD", "SSD_IMPL", "SSD_LAST", "ScanBytes", "chunk_scan_forward", "mamba_forward",
           "nsplits", "scan_backward", "scan_bytes", "scan_workspace"]
