"""Measured kernel times: a database of records, each checked against the GPU it ran on.

The database is the JSON written by ``trainsim profile`` (``trainsim-kernel-db/3``; formats 1
and 2, the earlier profilers', are read too: ``LEGACY_IMPL``). Every record is a simulator op (``workload.ops``) with its
measured time on one GPU, alone, at its boost clock.

**Keys.** A record answers only ops of its own kind of kernel:

* GEMMs by dtype, located in (m, n, k, batch);
* attention by implementation (``cudnn``, ``flash2``, ...), head dim, causality, direction,
  dropout and window, located in (query length, key length, GQA ratio, batch x heads); an
  attention with dropout and no record of its own is the same kernel's dropout-free
  measurement times the analytic model's dropout slowdown (``compute.attention_dropout``:
  a Philox number per score), so a profile taken without dropout still prices training
  runs that use it;
* memory-bound ops by kernel family and implementation (``rmsnorm``/``fused``,
  ``swiglu``/``eager``, ``rmsnorm.bwd``/``fused``, ...; ``Elementwise.kernel``), located in bytes.

An op with no record of its kind is not priced here (the chain falls back to the analytic
model): a LayerNorm never borrows an RMSNorm's time, a fused SwiGLU never an eager one's.

**Lookup.** An exact record is its measured time. Otherwise each record of the op's kind says
how far the analytic model (``compute.roofline``, on the database's GPU at its boost clock) was
from the measurement: the log of measured over modelled time. The op takes the Gaussian-
weighted mean of its neighbours' log ratios (width: a factor of ``NEIGHBOUR_FACTOR`` in each
coordinate), pulled toward the mean over all records of its kind by a prior of weight
``PRIOR_WEIGHT``. Near measured shapes the measurements decide; far outside the measured range
the answer is the analytic model calibrated on this same database, never an extrapolated rate.

**Another GPU.** The ratio carries over: the op's time on the target GPU is the analytic model
of the target (tensor rate per dtype, HBM bandwidth, SM count and waves, clocks and power
limit) times the measured ratio. On the measured GPU at its boost clock this is the
measurement itself; a training GPU running at its sustained clock, or an H200, B200 or a
hypothetical GPU, is priced from the same measurements scaled by the bound that limits each
kernel, as SimAI scales measured kernels to new GPUs (Wang et al. 2025, §4.2). One exception
(``chain.same_sms``): between GPUs with the same SMs at the same clock (an H100 SXM and an
H200 SXM) only the modelled share of a memory-bound record moves; the time beyond its modelled
HBM traffic is spent in the SMs and is held. Tested both ways on the bundled H100 and H200
databases (``benchmarks/kernel_db_cross.py``): GEMMs within 4.8-6.2 % (MAPE; -3 % / +3 %
signed), cuDNN attention within 2.3 %, memory-bound 10.5 and 9.6 % (the ratio rule alone: 15.2
and 16.7 %, -15 % and +16 % signed).

**What a record timed.** ``trainsim profile`` times each kernel alone between two CUDA events,
its up to 50 repeats queued back to back behind one sleep kernel so that no launch gap is timed,
on inputs rotated past the L2, and keeps the median (``profile/device.py`` ``measure``): the
kernel's device time as it runs inside a layer, a long GEMM's on a board that has run it for tens
of calls (read as a burst-clock time nonetheless: ``RECORD_LOOP``). The bundled H100 file's 12 GEMMs of each of its 16 layer records sum to what
torch.profiler timed for the same layer's cuBLAS kernels in that run within 0.1 % (mean of the
16 ratios 1.001, sd 0.031); its cuDNN attention records, timed on fresh contiguous tensors, are
~15 % below the same run's attention kernels inside those layers (on views of the fused QKV
output), which no term here adds. ``measure_kernels.py`` (``kernels_h100_measured.csv``) times a CUDA
graph of 10 or 30 calls on one operand pair and keeps the mean per call: its GEMMs take 4.7 %
longer than these records on the 232 shapes both measured (geometric mean; sd of the log ratio
0.067 bf16, 0.096 fp8), its cuDNN attention agrees within ~4 % and its memory-bound kernels are
HBM figures where they do not fit the L2 (``benchmarks/kernel_db_check.py``). Part of that GEMM
offset is the power state: a gapless loop heats the board where a record's sleep-queued call
does not, so a looped row priced from a record takes the roofline's loop slowdown
(``roofline.loop_clock_factor``, ``compute.chain``), which leaves 2.7 % on those 232 shapes
(sd 0.075). The rest is one run's against another's, not a term either method omits (both
exclude launch gaps; graph replay against eager cuBLAS and cuBLAS's choice per context are
candidates that only a GPU can separate).

**Physics.** On load every record is checked against its GPU: none may run faster than the
GPU's peak FLOP/s or HBM bandwidth (a backward that launches no kernel, timed as 1 us for
100 MB, is not a measurement). A failing record is an error that names it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trainsim.compute import roofline
from trainsim.compute.embedding_bwd import scatter_path, uniform_segments
from trainsim.compute.roofline import RooflineModel
from trainsim.config import GPUSpec
from trainsim.config.records import positive_value, record_count
from trainsim.errors import ConfigError
from trainsim.workload.elementwise import bytes_relative_to_fused
from trainsim.workload.ops import (
    ACT_BYTES,
    ATTENTION_IMPLS,
    DTYPE_BYTES,
    Attention,
    Elementwise,
    Gemm,
)
from trainsim.workload.token_ids import CHUNK_ROWS

FORMAT = "trainsim-kernel-db/3"
FORMATS = ("trainsim-kernel-db/1", "trainsim-kernel-db/2", FORMAT)
LEGACY_IMPL = {"flash1": "mem_efficient"}
"""Attention implementations as formats 1 and 2 named them -> the simulator's name: those
profilers labelled PyTorch SDPA's memory-efficient backend (``SDPBackend.EFFICIENT_ATTENTION``,
xFormers' CUTLASS kernels) ``flash1``, the first FlashAttention's family they priced it as; its
records are ``mem_efficient`` (format 3), so a FlashAttention-1 op, which carries each query
row's partial result through HBM once per key block (``attention.flash1_pass_bytes``) where the
memory-efficient kernel does not, never takes their times."""
SDPA_RECORD_IMPL = {"flash2": "sdpa"}
"""Attention implementations as a database's records name them -> the simulator's: every
profiler of these formats ran attention through PyTorch SDPA (``profile.kernels.SDPA_BACKENDS``:
``flash2`` is SDPA's FLASH_ATTENTION backend), so a ``flash2`` record is SDPA's vendored
FlashAttention-2 (``sdpa``), not the flash-attn package (``flash2``) that the FA2 paper, Megatron
and Transformer Engine's flash path run, and answers ``sdpa`` ops only: the bundled H200 file's
32 such records priced the FA2 paper's H100 rows 15 % slow (kernels_published: 3.1 -> 12.4 % from
the 62nd session's ``chain.twin_database``; 5.8 % from the roofline), and the two libraries
are not one kernel's timings: on one B200 in one harness flash-attn 2.7.4 ran 1.06-1.08x SDPA's
backend forward, 1.04-1.07x backward (NVIDIA/cudnn-frontend @bb37575d
benchmark/sdpa_benchmark_training/artifacts/sdpa_bf16_benchmark_results_NVIDIA_B200.csv:
``benchmarks/attn63_sdpa_ratio.py``). Kernel rows of SDPA's backend say ``sdpa`` (or
``sdpa_flash``: ``validate.vocab.ATTENTION_IMPL``). Added 2026-11-29 (63rd session, attn63)."""
ComputeOp = Gemm | Attention | Elementwise

NEIGHBOUR_FACTOR = 2.0
"""Width of a record's influence: a record a factor of 2 away in one coordinate (m, n, k,
sequence, bytes) weighs exp(-1/2) of an exact neighbour."""
PRIOR_WEIGHT = math.exp(-2.0)
"""Weight of the kind's mean log ratio: as much as one record 2 widths away, so the records
decide wherever one lies within a factor of 4, and the calibrated model beyond."""

PROFILED_IMPL = {"rmsnorm": "two_pass", "layernorm": "two_pass", "rmsnorm.bwd": "fused",
                 "layernorm.bwd": "fused", "residual_add": "fused", "gelu": "fused",
                 "swiglu": "eager", "rope": "eager", "cross_entropy": "eager",
                 "embedding": "fused", "fp8_cast_transpose": "eager", "adamw": "fused"}
"""What ``trainsim profile`` runs for each memory-bound family (``profile/kernels.py``; a
``.bwd`` family without an entry of its own takes its forward's): torch's native
``F.rms_norm``/``F.layer_norm`` are one kernel each that reads each row twice
(``vectorized_layer_norm_kernel``: the row's statistics, then the normalising loop over the row
again; aten/src/ATen/native/cuda/layer_norm_kernel.cu), the ``two_pass`` of
``workload.elementwise`` (the H100 database's layer records name that kernel for
``F.rms_norm`` under torch 2.11; its records take 1.5x the time of a fused RMSNorm of the same
size: 142 us for 268 MB where Liger's one-pass kernel takes 95); their backward is labelled by
its kernel count, one (``layer_norm_grad_input_kernel_vectorized``; its gamma gradient's
kernel is not counted apart), without a claim about its passes. The residual add, tanh-GeLU
and the embedding gather are single kernels; SwiGLU is ``silu(gate) * up`` (two kernels), RoPE
is Hugging Face's rotate-half (chunk, neg, cat, two products and a sum), cross-entropy upcasts
the logits to fp32 before ``F.cross_entropy``, the fp8 cast takes the amax, scales, casts and
transposes in separate ops, Adam is ``torch.optim.Adam(fused=True)``. Format-1 records carry
no implementation, so they are read with these."""
RECORD_GAPS = False
"""Whether a record is read as the kernel's device time without the launch gap the analytic model
charges every kernel in a stream (``roofline.LAUNCH_S`` x ``roofline.kernel_launches``): the
record is then compared with the model less its gaps, and an op priced from it pays the gaps on
top (``compute.chain``). ``trainsim profile`` queues its repeats so that no launch gap is timed,
while the roofline's price of the same op carries one, so as shipped a database-priced op pays
no gap of its own (only the ratio of two gapped model times), where a roofline-priced one pays
3 us.

Not shipped (39th session, gemm39; ``benchmarks/gemm39_db_loop.py --whatif``): the training board
moves the right way (public 5.546 -> 5.463 %, held-out 4.327 -> 4.261 %, errata applied 4.43 ->
4.38 %; H100 rows mean signed -2.7 -> -2.1 %), and the measured files' GEMMs too (H100 7.00 ->
6.10 %, H200 8.51 -> 7.24 %), but every memory-bound comparison says the records already hold a
gap's worth of fixed time: the measured files' memory-bound rows, already priced 8.4 % (H100) /
2.6 % (H200) slow from the records, go to 11.3 / 6.1 % (MAPE 12.4 -> 14.8, 12.0 -> 14.5 %), the
cross-GPU scaling of memory-bound records worsens (``benchmarks/kernel_db_cross.py``: 10.5 ->
13.4 %), Liger's cold-call RMSNorm rows from exact records +21 -> +44 %, and the GEMMs' measured
offset it closes is flat in the kernel's length (``RECORD_LOOP``'s pairs), not a per-kernel time.
kernels_published GEMM H200 7.12 -> 8.19 %, H100 10.41 -> 10.47 %. Its gain on the board is the
H100 training rows' known speed, not evidence of the gap."""
RECORD_LOOP = False
"""Whether a record is read against the roofline of a kernel benchmark's loop
(``roofline.loop_clock_factor``, toward the GPU's sustained clock) instead of the burst one.
``trainsim profile`` times a kernel's repeats back to back, queued behind one sleep kernel
(``profile/device.py`` ``measure``: one ``dev.hold``, then ``start.record(); run(i);
end.record()`` per repeat, the median kept), so a long GEMM's record is taken on a board that
has run it for tens of calls. The records show it (``benchmarks/gemm39_db_loop.py``): against
the burst roofline their log(measured / modelled) rises with the kernel's length (Pearson r
0.64 over the H100 database's 167 bf16 GEMMs, 0.80 over the H200's; records under 100 us 7-9 %
faster than the calibrated model, over 3 ms 6-10 % slower); against the loop roofline r is 0.21
/ 0.56 and the spread (sd of the log ratio) 0.053 / 0.051 instead of 0.067 / 0.077; and
``measure_kernels.py``'s CUDA-graph loop times the same shapes at a ratio to the records that
does not grow with the length (r -0.09 over 232 H100 shapes, -0.20 over 209 H200 ones; over 3 ms
+1.3 / +0.3 %), as two loops would, where the burst reading puts them up to 15 % apart.

Not shipped (39th session, gemm39): it takes kernels_published's H200 GEMMs 7.12 -> 4.65 % and
H100's 10.41 -> 10.37 % (every moved MAMF / MSMF row nearer), but the looped measured files
lose the loop slowdown that offset their flat +4.6 % (H100) / +7.1 % (H200) over the records
(GEMM 7.00 -> 7.95 and 8.51 -> 9.80 %), and training prices its long GEMMs up to 15 % faster:
public 5.546 -> 5.831 % (57 H100 rows move, 40 worse: mean signed -2.7 -> -4.3 %), held-out
4.33 -> 4.5 %. In training the H100's GEMMs run at the sustained fraction of the records'
rate even where the records already ran at the sustained clock (Bekman's H200 MSMF 708.5
TFLOP/s at 8192 x 8448 x 20480 against the H200 records' 681-709 at 8192 x 8192 x 14-32 k)."""
TRACED_TILES = False
"""Whether a database's GEMM records are read against a roofline that may also choose the
output tiles its own cuBLAS ran (``roofline.traced_tiles``, read from the kernel names of the
database's layer traces), and a GEMM priced from them (on a Hopper GPU) against the same tiles,
so that the wave quantization the interpolated ratio carries is that of the kernels the records
timed. Both bundled databases (torch 2.11 + CUDA 13) name ``nvjet_sm90_tst_320x128`` and
``_192x192`` kernels for most of their GEMM time; the roofline alone chooses among 128x128,
128x256 and 256x128. Roofline-priced GEMMs (no record of their kind) never read it.

Not shipped (41st session, gemm41; ``benchmarks/gemm41_tiles.py``). For: the H200's GPT-3 175B TP 8
GEMMs (``benchmarks/h200_2026-11-27_s41/kernels_h200_s41.csv``, never fitted) priced with each
shape's own record left out: sd of log(priced / measured) 0.038 -> 0.011 (bf16), 0.046 -> 0.019
(fp8) (the qkv forward, 2,048 x 4,608 x 12,288, is 2.18 waves of 128x256 tiles but exactly 2 of
192x192: -14.5 -> -2.4 % in the validator; that file's GEMMs 3.44 -> 2.32 %); the records left out
one at a time: fp8 MAPE 5.55 -> 5.39 % (H100), 5.40 -> 5.37 / fast-accumulation 4.12 -> 3.75 %
(H200), bf16 4.21 -> 4.24 / 3.69 -> 3.65 %; kernels_published GEMM H200 7.12 -> 6.10 %, H100 10.41
-> 10.31 % (every other cell identical); DeepSeek-V3 H200 file 6.53 -> 5.64 %; held-out 4.243 ->
4.237 %. Against: public 5.474 -> 5.488 % (llm-foundry 6.991 -> 7.076: the small MPT models' weight
gradients, k = tokens, run 13-15 % faster on 2-wave 192x192 grids, rows already priced 10-16 %
fast), the two measured files 7.7 -> 7.8 % (H100) and 8.7 -> 8.8 % (H200) (shape spread unchanged,
0.0577 -> 0.0575 and 0.0591 -> 0.0588; the GEMMs priced 0.2 % faster on files already 3.6 / 6.1 %
fast), check files olmo_core 6.0 -> 6.2, pytorch 8.1 -> 8.2, mlm_strong 4.8 -> 4.9, dgxc2505 14.6
-> 14.7, nanotron 32.6 -> 32.7 % against nemotron4 9.8 -> 9.3, dgxc2502 2.7 -> 2.6, mlperf_partners
5.9 -> 5.8 %."""
RECORD_BWD_TAIL = True
"""Whether a causal FlashAttention-2 backward record is read against the analytic model with
the tail its few CTAs leave (``compute.causal_bwd_tail``; ``roofline.RooflineModel``'s
``bwd_tail``), and an op priced from the records with its own. The H200 database's 16 such
records (batch 1, 4-64 heads, 4k and 8k tokens) run 0.98-1.93x the model without it (sd of the
log ratio 0.18, mean +0.20), within -5 / +1 % with it (sd 0.02, mean -0.02). Without it that
mean was the prior of every shape far from the records, whose thousands of CTAs leave no tail:
the 47th session's H200 FA2 backward at 32k-64k tokens (32 heads) was priced 21-24 % slow, the
41st's at 4k-16k 13-21 % (``benchmarks/h200db48_bwd_tail.py``); with it 2-5 %. The 41st's 512-2048
token rows, which that prior had put within 5 %, go 11-22 % fast: the roofline's own price of a
short FA2 backward on the H200 (16-26 % fast without any database)."""
FAMILY_ALIASES = {"adam": "adamw"}
"""Format-1 family names that the simulator spells differently."""


def as_profiled(family: str, fused_bytes: float) -> tuple[str, str, float]:
    """(database family, implementation, bytes) of what ``trainsim profile`` runs for a
    memory-bound ``family`` (``rmsnorm.bwd``, format 1's ``adam``) sized by the fused op's
    bytes: the family in the simulator's spelling, ``PROFILED_IMPL``'s implementation and the
    bytes that implementation moves."""
    base = family.removesuffix(".bwd")
    kernel = FAMILY_ALIASES.get(base, base) + family[len(base):]
    impl = PROFILED_IMPL.get(kernel, PROFILED_IMPL.get(kernel.removesuffix(".bwd"), "fused"))
    return kernel, impl, fused_bytes * bytes_relative_to_fused(kernel, impl)


def _family(op: ComputeOp) -> tuple | None:
    """The kind of kernel an op is: records answer only ops of their own kind."""
    if isinstance(op, Gemm):
        # a split-accumulator fp8 record never answers a fast-accumulation op, nor a
        # per-tensor-scaled record a block-scaled op, nor a dense record a grouped
        # implementation's (their rates differ: compute.roofline.gemm_rate, block_promotion_k,
        # grouped_efficiency); a GEMM's chunks on TE's userbuffer streams are cuBLAS's dense
        # GEMM, priced at its rate (roofline.GROUPED_STREAMS), so dense records answer them
        grouped = "" if op.grouped == "userbuffers" else op.grouped
        fp8 = op.dtype == "fp8"
        return ("gemm", op.dtype, fp8 and op.fp8_fast_accum, fp8 and op.fp8_block_scales,
                grouped)
    if isinstance(op, Attention):
        return ("attention", op.impl, op.head_dim, op.causal, op.backward, op.dropout,
                op.window)
    if op.kernel:
        # a scatter priced by its shape (``compute.embedding_bwd``) is answered only by
        # records that carry one (their ``zeroed`` table: ``record_scatter``) and ran the same
        # path (PyTorch's feature kernel at most 3072 ids, else the sort and segment sums)
        key = ("elementwise", op.kernel, op.impl)
        return key + (scatter_path(op.scatter),) if op.scatter else key
    return None


def _coords(op: ComputeOp) -> tuple[float, ...]:
    """Where an op lies among the records of its kind (log sizes; ``_family`` fixes the rest)."""
    if isinstance(op, Gemm):
        return (math.log(op.m), math.log(op.n), math.log(op.k), math.log(op.batch))
    if isinstance(op, Attention):
        return (math.log(op.q_len), math.log(op.kv_len), math.log(op.heads / op.kv_heads),
                math.log(op.batch * op.heads))
    return (math.log(max(op.bytes, 1.0)),)


def _exact_key(op: ComputeOp) -> tuple:
    if isinstance(op, Elementwise):
        return (_family(op), round(op.bytes), op.scatter)
    return (_family(op), _coords(op))


def physical_violation(op: ComputeOp, time_s: float, gpu: GPUSpec) -> str | None:
    """Why ``time_s`` cannot be a measurement of ``op`` on ``gpu`` (None when it can): no
    kernel beats the GPU's peak FLOP/s in its dtype or its peak HBM bandwidth."""
    if not (time_s > 0 and math.isfinite(time_s)):
        return f"time {time_s!r} s is not a positive number"
    dtype = op.dtype if isinstance(op, Gemm) else "bf16"
    flops, nbytes = op.flops, op.bytes
    if flops and dtype in gpu.peak_flops and flops / time_s > gpu.flops(dtype):
        return (f"{flops / time_s / 1e12:.0f} TFLOP/s is above the {gpu.name} peak of "
                f"{gpu.flops(dtype) / 1e12:.0f} TFLOP/s ({dtype})")
    if nbytes / time_s > gpu.hbm_bw_Bps:
        return (f"{nbytes / 1e6:.1f} MB in {time_s * 1e6:.2f} us is {nbytes / time_s / 1e12:.1f}"
                f" TB/s, above the {gpu.name} HBM peak of {gpu.hbm_bw_Bps / 1e12:.2f} TB/s")
    return None


@dataclass
class _Kind:
    """The records of one kind of kernel, as coordinates and log(measured / modelled)."""

    coords: list[tuple[float, ...]] = field(default_factory=list)
    log_ratio: list[float] = field(default_factory=list)
    _arrays: tuple[np.ndarray, np.ndarray, float] | None = None

    def add(self, coords: tuple[float, ...], log_ratio: float) -> None:
        self.coords.append(coords)
        self.log_ratio.append(log_ratio)
        self._arrays = None

    def ratio(self, x: tuple[float, ...]) -> tuple[float, bool]:
        """(log ratio at ``x``, whether measured neighbours outweigh the prior)."""
        if self._arrays is None:
            r = np.array(self.log_ratio)
            self._arrays = (np.array(self.coords), r, float(r.mean()))
        pts, r, prior = self._arrays
        d2 = (((pts - np.array(x)) / math.log(NEIGHBOUR_FACTOR)) ** 2).sum(axis=1)
        w = np.exp(-0.5 * d2)
        total = float(w.sum())
        return (float(w @ r) + PRIOR_WEIGHT * prior) / (total + PRIOR_WEIGHT), total >= PRIOR_WEIGHT


@dataclass
class KernelDatabase:
    """Measured kernels of one GPU (``spec``), priced against ``analytic`` on that GPU."""

    spec: GPUSpec
    meta: dict[str, Any]
    analytic: RooflineModel
    exact: dict[tuple, float] = field(default_factory=dict)
    kinds: dict[tuple, _Kind] = field(default_factory=dict)
    layers: list[dict[str, Any]] = field(default_factory=list)
    tiles: tuple[tuple[int, int, float], ...] = ()
    """The output tiles beyond ``roofline.gemm_tiles`` that the records' cuBLAS ran
    (``TRACED_TILES``)."""

    @property
    def gpu(self) -> str:
        return self.spec.name

    @classmethod
    def empty(cls, spec: GPUSpec, meta: dict[str, Any] | None = None,
              layers: list[dict[str, Any]] | None = None) -> KernelDatabase:
        """A database of ``spec`` (at its boost clock: ``sustained_of_burst`` 1, one GPU
        alone), priced against its analytic model in the loop the records were timed in:
        ``profile/device.py`` ``measure`` queues its repeats back to back behind one sleep
        kernel, so a long GEMM's record is timed on a board already falling toward its
        sustained clock (``RECORD_LOOP``). ``layers``: the database's layer traces, whose
        kernel names say which GEMM tiles its library ran (``TRACED_TILES``)."""
        burst = dataclasses.replace(spec, sustained_of_burst=1.0)
        loop = spec.sustained_of_burst * spec.power_scale if RECORD_LOOP else None
        layers = [r for r in layers or [] if isinstance(r, dict)]
        tiles = layer_tiles(layers) if TRACED_TILES else ()
        return cls(spec=burst, meta=meta or {},
                   analytic=RooflineModel(burst, loop, tiles, RECORD_BWD_TAIL),
                   layers=layers, tiles=tiles)

    @classmethod
    def load(cls, path: str | Path, lookup_gpu: Callable[[str], GPUSpec],
             skipped: list[str] | None = None) -> KernelDatabase:
        """The database at ``path``. A record that cannot be a measurement on its GPU is an
        error naming it; with a ``skipped`` list it is left out and its reason appended (the
        database checked against itself, ``validate.kernel_db``, reads the rest)."""
        data = _read_json(path)
        if not isinstance(data, dict) or data.get("format") not in FORMATS:
            raise ConfigError(f"{path}: not a kernel database (format {' or '.join(FORMATS)})")
        try:
            spec = lookup_gpu(str(data["gpu"]))
        except KeyError:
            raise ConfigError(f"{path}: kernel database names no 'gpu'") from None
        layers = data.get("layers") or []
        if not isinstance(layers, list):
            raise ConfigError(f"{path}: 'layers' is not a list of records")
        db = cls.empty(spec, {k: v for k, v in data.items() if k not in ("kernels", "layers")},
                       layers)
        rows = data.get("kernels") or []
        if not isinstance(rows, list):
            raise ConfigError(f"{path}: 'kernels' is not a list of records")
        for i, row in enumerate(rows):
            op = op_from_record(row, where=f"{path}: kernels[{i}]", fmt=str(data["format"]))
            time_s = positive_value(row.get("time_s"))
            if time_s is None:
                raise ConfigError(f"{path}: kernels[{i}].time_s={row.get('time_s')!r} is not "
                                  "a positive number")
            why = physical_violation(op, time_s, db.spec)
            if why is None and "zeroed" in row:
                time_s, why = db.without_fill(row, time_s, f"{path}: kernels[{i}]")
                why = why or physical_violation(op, time_s, db.spec)  # what it left
            if why:
                msg = (f"{path}: kernels[{i}] ({record_label(row)}) is not a measurement on "
                       f"{db.gpu}: {why}")
                if skipped is None:
                    raise ConfigError(msg)
                skipped.append(msg)
                continue
            db.add(op, time_s)
        return db

    def without_fill(self, row: dict[str, Any], time_s: float,
                     where: str) -> tuple[float, str | None]:
        """(the record's time less the fill it timed, why that is no time): an ``embedding.bwd``
        record times PyTorch's whole dense embedding backward, which starts by zeroing the
        table it returns (``workload.head.embedding_zero_fill``: the record's ``zeroed`` rows x
        cols, the profiled vocabulary and hidden size, in 16 bits unless it says otherwise).
        The simulator prices that fill as its own op, at the memory-bound rate of the run's
        GPU and for the rank's own table (vocabulary / TP), so the record keeps the rest (the
        sort and the segment reduction, which scale with the tokens): on its GPU, at the
        profiled table, the two ops sum to the record."""
        from trainsim.workload.head import embedding_zero_fill

        z = row["zeroed"]
        if not isinstance(z, dict):
            raise ConfigError(f"{where} ({record_label(row)}): zeroed={z!r} is not a table "
                              "(rows, cols)")
        label = f"{where} ({record_label(row)}): zeroed."
        fill = embedding_zero_fill(record_count(z, "rows", None, label),
                                   record_count(z, "cols", None, label),
                                   record_count(z, "elem_bytes", 2, label))
        rest = time_s - self.analytic.time(fill)
        if rest <= 0.0:
            return time_s, (f"zeroing its {fill.bytes / 1e6:.1f} MB table takes "
                            f"{self.analytic.time(fill) * 1e6:.1f} us, the whole record "
                            f"{time_s * 1e6:.1f} us")
        return rest, None

    def gaps(self, op: ComputeOp) -> float:
        """The launch gaps (s) the analytic model charges ``op`` and a record does not time."""
        return roofline.LAUNCH_S * roofline.kernel_launches(op) if RECORD_GAPS else 0.0

    def modelled(self, op: ComputeOp) -> float:
        """The analytic model's time of ``op`` on this database's GPU, less its launch gaps (all
        of it for an op with no work to price: a zero-byte copy is its launch alone)."""
        t = self.analytic.time(op)
        kernel = t - self.gaps(op)
        return kernel if kernel > 0.0 else t

    def add(self, op: ComputeOp, time_s: float) -> None:
        """Record ``op`` measured at ``time_s`` (checked against the GPU's peaks)."""
        why = physical_violation(op, time_s, self.spec)
        if why:
            raise ConfigError(f"kernel record {op!r} is not a measurement on {self.gpu}: {why}")
        family = _family(op)
        if family is None:
            raise ConfigError(f"kernel record {op.name!r} names no kernel family")
        self.exact[_exact_key(op)] = time_s
        self.kinds.setdefault(family, _Kind()).add(
            _coords(op), math.log(time_s / self.modelled(op)))

    def lookup(self, op: ComputeOp) -> tuple[float, str] | None:
        """(seconds on the database's GPU alone, 'exact' | 'interpolated' | 'calibrated'), or
        None when no record is of the op's kind."""
        family = _family(op)
        kind = self.kinds.get(family) if family is not None else None
        if kind is None and isinstance(op, Attention) and op.dropout:
            # the measured kernel without dropout, slowed by what dropout costs it in the model
            base = dataclasses.replace(op, dropout=False)
            hit = self.lookup(base)
            if hit is None:
                return None
            return (hit[0] * self.modelled(op) / self.modelled(base),
                    f"{hit[1]}, dropout modelled")
        if kind is None:
            return None
        t = self.exact.get(_exact_key(op))
        if t is not None:
            return t, "exact"
        log_ratio, near = kind.ratio(_coords(op))
        return self.modelled(op) * math.exp(log_ratio), (
            "interpolated" if near else "calibrated")


def layer_tiles(layers: list[dict[str, Any]]) -> tuple[tuple[int, int, float], ...]:
    """``roofline.traced_tiles`` of every kernel a database's layer traces name."""
    names = (str(k.get("name", "")) for layer in layers
             for k in (layer.get("kernels") or []) if isinstance(k, dict))
    return roofline.traced_tiles(names)


def record_scatter(row: dict[str, Any], family: str, nbytes: float) -> tuple[float, ...]:
    """The scatter an ``embedding.bwd`` record timed (``Elementwise.scatter``), read from the
    table it zeroed: ``trainsim profile`` draws ``tokens`` ids uniformly over the table's rows
    (``profile.kernels``, ``torch.randint``) and counts the op's bytes as tokens x cols x
    (2 + 8) (``workload.head.embedding_scatter``); () where the record names no table."""
    z = row.get("zeroed")
    if family != "embedding.bwd" or not isinstance(z, dict):
        return ()
    said = row.get("scatter")  # the profiler states the ids it drew (``profile.kernels.text_ids``)
    if isinstance(said, list) and len(said) == 6 and all(isinstance(x, (int, float)) for x in said):
        return tuple(float(x) for x in said)
    try:
        rows, cols = int(z["rows"]), int(z["cols"])
    except (KeyError, TypeError, ValueError):
        return ()  # ``KernelDatabase.without_fill`` names the bad table
    if rows <= 0 or cols <= 0:
        return ()
    tokens = round(nbytes / (cols * (ACT_BYTES + 2 * 4)))
    distinct, partials = uniform_segments(tokens, rows)
    return (float(tokens), float(cols), distinct, partials, 1.0 / rows,
            uniform_segments(CHUNK_ROWS, rows)[0])


def record_label(row: dict[str, Any]) -> str:
    """A record as an error message names it."""
    if row.get("op") == "elementwise":
        return f"elementwise {row.get('name')} ({row.get('kernel', '?')})"
    keys = ("m", "n", "k", "dtype") if row.get("op") == "gemm" else (
        "impl", "heads", "kv_heads", "q_len", "head_dim", "causal", "backward")
    return f"{row.get('op')} " + " ".join(f"{k}={row[k]}" for k in keys if k in row)


def _read_json(path: str | Path) -> Any:
    """A database file's data, read within the safe loader's bounds (size, nesting, numbers)."""
    from trainsim.config.safe_load import parse, read_text

    return parse(read_text(path, "kernel database"), str(path), "json")


def record_impl(row: dict, fmt: str) -> str | None:
    """The attention implementation an attention record of format ``fmt`` names, read in the
    current format's words (``LEGACY_IMPL``), or None where the record names none."""
    impl = row.get("impl")
    if impl is None:
        return None
    name = LEGACY_IMPL.get(str(impl), str(impl)) if fmt != FORMAT else str(impl)
    return SDPA_RECORD_IMPL.get(name, name)


def op_from_record(row: dict[str, Any], where: str = "kernel database",
                   fmt: str = FORMAT) -> ComputeOp:
    """The simulator op a database record of format ``fmt`` measured."""
    if not isinstance(row, dict):
        raise ConfigError(f"{where} is not a record")
    kind = row.get("op")

    def size(key: str, default: Any = None) -> int:
        return record_count(row, key, default, f"{where} ({record_label(row)}): ")

    def flag(key: str, default: bool) -> bool:
        value = row.get(key, default)
        if not isinstance(value, bool) and value not in (0, 1):
            raise ConfigError(f"{where} ({record_label(row)}): {key}={value!r} must be true or "
                              "false")
        return bool(value)

    try:
        if kind == "gemm":
            dtype = str(row.get("dtype", "bf16"))
            if dtype not in DTYPE_BYTES:
                raise ConfigError(f"{where} ({record_label(row)}): dtype={dtype!r} is not one of "
                                  f"{', '.join(DTYPE_BYTES)}")
            # fp8_fast_accum: measured without the split accumulator (torch._scaled_mm
            # use_fast_accum=True); absent, the split-accumulator default
            return Gemm("db", size("m"), size("n"), size("k"), dtype, size("batch", 1),
                        fp8_fast_accum=flag("fp8_fast_accum", False))
        if kind == "attention":
            impl = record_impl(row, fmt) or "sdpa"
            if impl not in ATTENTION_IMPLS:
                raise ConfigError(f"{where}: unknown attention impl {impl!r}")
            window = row.get("window")
            return Attention("db", size("batch"), size("heads"), size("kv_heads"),
                             size("q_len"), size("kv_len"), size("head_dim"),
                             flag("causal", True), None if window is None else size("window"),
                             backward=flag("backward", False), impl=impl,  # type: ignore[arg-type]
                             dropout=flag("dropout", False))
        if kind == "elementwise":
            name = str(row["name"])
            family = str(row.get("kernel") or name.split(".")[0])
            nbytes = float(row["bytes"])
            if not 0 < nbytes < math.inf:
                raise ConfigError(f"{where} ({record_label(row)}): bytes={row['bytes']!r} must "
                                  "be a positive number")
            if "impl" in row:
                impl = str(row["impl"])
            else:  # format 1: the fused op's bytes beside what the profiler ran
                family, impl, nbytes = as_profiled(family, nbytes)
            return Elementwise(name, nbytes, kernels=size("kernels", 1), kernel=family,
                               impl=impl, scatter=record_scatter(row, family, nbytes))
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"{where} ({record_label(row)}): bad or missing field {exc}") from None
    raise ConfigError(f"{where} has unknown op {kind!r} (gemm, attention or elementwise)")
