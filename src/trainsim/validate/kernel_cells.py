"""A kernel row's cells as the kernels check reads them (``validate.kernels``): sizes, dtype,
the causal switch, the unit and the kernel library the row names, and the fp8 block-scaling and
activation-quantization conditions its note states."""

from __future__ import annotations

import math
import re

from trainsim.compute.roofline import FP8_OWN_PROMOTION, FP8_SCALE_BLOCK_K
from trainsim.config import ascii_float
from trainsim.config._build import switch
from trainsim.config.records import MAX_COUNT
from trainsim.errors import ConfigError
from trainsim.validate.common import _cell
from trainsim.validate.vocab import DTYPE_SYNONYMS, UNITS, word
from trainsim.workload.ops import DTYPE_BYTES, Elementwise, Fp8BlockScales, Op

_NOTE_IMPL = re.compile(r"\bimpl=([\w.-]+)")


def _int(row: dict[str, str], key: str) -> int:
    """A size cell (m, heads, tokens ...): a whole number from 1 to 2**53. ``int()`` of
    4096.5 was 4096, silently; ASCII digits only (``ascii_float``), as ``common.count_cell``."""
    if _cell(row, key) is None:
        raise ConfigError(f"a {row.get('kind')} row needs the '{key}' column")
    text = _cell(row, key)
    try:
        value = ascii_float(text)  # type: ignore[arg-type]
    except ConfigError as exc:  # '1_0': underscores in threes only (config._build.digit_groups)
        raise ConfigError(f"column '{key}'={exc}") from None
    except ValueError:
        raise ConfigError(f"column '{key}'={text!r} is not a number") from None
    if not (1 <= value <= MAX_COUNT and value == int(value)):  # no empty, partial or endless kernel
        raise ConfigError(f"column '{key}'={text!r} must be a whole number from 1 to 2**53")
    return int(value)


def _dtype(row: dict[str, str]) -> str:
    """'bf16/fp16' (a source that measured both at one rate) reads as bf16."""
    dtype = word((_cell(row, "dtype") or "bf16").split("/")[0])
    return DTYPE_SYNONYMS.get(dtype, dtype)


def _causal(row: dict[str, str]) -> bool:
    """The row's ``causal`` cell read as every other switch is (``_build.switch``: 0/1 also as
    '1.0', true/false, yes/no, on/off); empty: not causal."""
    text = _cell(row, "causal") or "0"
    try:
        return switch(text, "")
    except ConfigError:
        raise ConfigError(f"column 'causal'={row.get('causal')!r} must be 0 or 1") from None


def measured_unit(row: dict[str, str]) -> str:
    """The row's unit in the README's spelling (any case; 'TFLOPS', 'sec', 'µs' read too)."""
    text = (row.get("measured_unit") or "").strip()
    return UNITS.get(text.lower(), text)


def implementation(row: dict[str, str]) -> str:
    """The kernel library a row measured. A note's ``impl=NAME`` names it where one figure
    compares several kernels (the FlashAttention papers' rows carry the paper's kernel in the
    implementation column and the bar's kernel in the note)."""
    return implementation_as_written(row)[1].lower()


def implementation_as_written(row: dict[str, str]) -> tuple[str, str]:
    """(where the row names its kernel library: 'note impl' or 'implementation', the name as
    written there), for messages that point at what the user wrote."""
    m = _NOTE_IMPL.search(row.get("note") or "")
    if m:
        return "note impl", m.group(1).strip()
    return "implementation", (row.get("implementation") or "").strip()


def implementation_label(row: dict[str, str]) -> str:
    """The row's library as its messages name it: the column that holds it and the name as
    written there (``implementation_as_written``)."""
    where, written = implementation_as_written(row)
    return f"{where}={written!r}"


_BLOCK_SCALES = re.compile(r"\bblock[- ]?(wise[- ])?scal|\bblock-fp8\b", re.IGNORECASE)
"""A note saying the fp8 operands carry a scale per block of k (e.g. "128x128 block scales",
"blockwise scaling"); the kernels files have no recipe column."""


_OUTER_SCALES = re.compile(r"\b1\s*x\s*128\s*(by|-by-)\s*1\s*x\s*128\b", re.IGNORECASE)
"""A note saying both operands carry a scale per 1x128 (e.g. "block scales 1x128 by 1x128",
the blockwise recipe's weight gradient): each output element's scale is a row's times a
column's (``Gemm.fp8_block_scales`` ``outer``)."""


def block_scales(row: dict[str, str]) -> Fp8BlockScales:
    """How a block-scaled fp8 row's kernel promotes its partial sums (``Gemm.fp8_block_scales``):
    DeepGEMM (``FP8_OWN_PROMOTION``) beside the tensor cores, any other library between k
    blocks (CUTLASS's SM90 block-scaled mainloop, cuBLASLt's block-scaled kernels); between
    blocks with a per-element scale product where both operands are scaled per 1x128
    (``_OUTER_SCALES``, whichever library: DeepGEMM's 1D1D kernel waits for its wgmma too,
    ``compute.roofline.PROMOTION_OPS``)."""
    note = row.get("note") or ""
    if _dtype(row) != "fp8" or not _BLOCK_SCALES.search(note):
        return ""
    if _OUTER_SCALES.search(note):
        return "outer"
    return "overlapped" if implementation(row) in FP8_OWN_PROMOTION else "serial"


QUANT_IN_CALL = re.compile(r"\bw8a8\b(?!\S*noquant)", re.IGNORECASE)
"""A note naming a W8A8 linear op's column (weights and activations in 8 bits, e.g.
"w8a8-block-fp8-cutlass"): the timed call hands the op a 16-bit activation, which the op
quantizes before its GEMM (``activation_quant``); a "-noquant" column times the GEMM alone."""


def activation_quant(row: dict[str, str], m: int, k: int) -> list[Op]:
    """The activation quantization kernel a block-scaled W8A8 row's timed call runs before its
    GEMM (``QUANT_IN_CALL``), else nothing. vLLM's kernel benchmark of block-scaled fp8
    (vllm-project/vllm benchmarks/kernels/bench_block_fp8_gemm.py as of PR #23280,
    ``build_w8a8_block_fp8_runner``) times ``W8A8BlockFp8LinearOp.apply`` on a bf16 input:
    ``_run_cutlass`` (vllm/model_executor/layers/quantization/utils/fp8_utils.py) quantizes it
    per 1 x 128 group (``input_quant_op``, one kernel) and only then runs the CUTLASS GEMM. The
    kernel reads the m x k 16-bit activation and writes it back in fp8 with one fp32 scale per
    group. Per-token and per-tensor activation scales (another kernel count: a per-tensor scale
    needs a max pass first) have no row here, so only block-scaled rows get it."""
    if not block_scales(row) or not QUANT_IN_CALL.search(row.get("note") or ""):
        return []
    groups = m * math.ceil(k / FP8_SCALE_BLOCK_K)
    return [Elementwise("activation_quant", m * k * (DTYPE_BYTES["bf16"] + DTYPE_BYTES["fp8"])
                        + groups * DTYPE_BYTES["fp32"])]
