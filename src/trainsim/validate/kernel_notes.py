"""Switches a kernel row's free-text note states, read clause by clause: whether a cuBLAS fp8
GEMM ran with fast accumulation (``fast_accum_note``). The kernels files have no column for
it, so the note's words decide; a negation in the mention's clause turns it off."""

from __future__ import annotations

import re

_FAST_ACCUM = re.compile(r"fast[- _]?accum\w*", re.IGNORECASE)
"""A note naming cuBLAS's fp8 fast accumulation (``CUBLASLT_MATMUL_DESC_FAST_ACCUM``,
``torch._scaled_mm(..., use_fast_accum=True)``, "fast-accum")."""
_CLAUSE_END = re.compile(r"[;,()\[\]\n]|\.\s")
"""What ends a clause of a note ("no bias; fast accum": the negation is another clause's)."""
_NEGATION = re.compile(r"(?<![\w.])(?:no|not|without|disabled?|non|never|off|false|none)(?![\w.])",
                       re.IGNORECASE)
"""A word that turns a mention off anywhere in its clause ("without the fp8 fast accum",
"fast accum not used", "non-fast-accum", "use_fast_accum=False", "FAST_ACCUM off")."""
_SWITCH_OFF = re.compile(r"^\s*(?:[=:]\s*)?0(?![\w.])")
"""A switch set to 0 just after the mention ("fast_accum: 0", "..._FAST_ACCUM = 0"); a number
that is not exactly 0 or 1 ("fast accum 0.5 speedup") is no switch."""


def fast_accum_note(note: str) -> bool:
    """Whether a note says its cuBLAS fp8 GEMM ran with fast accumulation on (no split
    accumulator: ``Gemm.fp8_fast_accum``): a mention neither negated before it nor set off
    after it ("FAST_ACCUM on for fp8", "use_fast_accum=True", "fast accum"); "FAST_ACCUM off",
    "use_fast_accum=False", "without fast-accum", "fast accum not used" (a negation anywhere in
    the mention's clause) say the opposite."""
    ends = [e.start() for e in _CLAUSE_END.finditer(note)]
    for m in _FAST_ACCUM.finditer(note):
        start = max((e + 1 for e in ends if e < m.start()), default=0)
        end = min((e for e in ends if e >= m.end()), default=len(note))
        clause = note[start:m.start()] + " " + note[m.end():end]
        if not _NEGATION.search(clause) and not _SWITCH_OFF.match(note[m.end():end]):
            return True
    return False
