"""The kernel rows the roofline's constants are fitted on, and their held-out split
(``fit_kernels.py`` fits and reports; this module loads and splits).

Data: the kernel files bundled with trainsim (``kernels_published.csv``: papers, READMEs and
benchmark PRs; ``kernels_h100_measured.csv``: one H100 measured by the team). Each kind's
rows are split by *source* (the ``source`` column up to its first space after the repository
or paper name): sources are ordered by a hash of their name and held out in that order until
at least 20 % of the kind's rows are out; the largest source always stays. Each source left
in the fit is then split by *shape family* (``family``: the model and tensor-parallel size a
GEMM was cut from, the sequence length of an attention row), families held out by the same
hash order until at least 20 % of that source's rows are out, so no constant sees more than
80 % of any source. The
split depends only on source and family names, never on the errors.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainsim.compute import roofline
from trainsim.validate import kernels
from trainsim.validate.kernels import (
    BURST,
    L2_RESIDENT,
    SUSTAINED,
    TIME_UNITS,
    kernel_ops,
)

FILES = ("kernels_published.csv", "kernels_h100_measured.csv")
HOLD_OUT = 0.20


@dataclasses.dataclass
class Row:
    kind: str
    gpu: str
    source: str
    ops: list[Any]
    measured_s: float
    family: str = ""
    sustained: bool = False
    """Measured at the power-limited sustained clock (``validate.kernels.SUSTAINED``)."""
    full_source: str = ""
    """The ``source`` cell as written (``source`` is its coarse ``source_key``)."""
    burst: bool = False
    """Timed with the board idle between calls (``validate.kernels.BURST``): no loop clock."""
    profiled: bool = False
    """Kernel durations summed by a profiler, read so (``validate.kernels.UNTIMED_GAPS``, not
    shipped): the roofline's launch gaps are not priced."""


MODEL_TP = re.compile(r"^([a-z][a-z0-9.]*-[0-9.]+[bm]-tp\d+)-")
"""A GEMM row's shape family in a measured file: the model and TP size whose layer it is
(``llama3-70b-tp4-qkv-fwd-m1024`` -> ``llama3-70b-tp4``), from the row's note or id."""


EXPERTS_OF = re.compile(r"\bexperts of ([a-z][\w.-]*)")
"""A grouped-GEMM row's shape family: the MoE model whose experts it ran ('experts of
qwen3-30b-a3b fc1, ...' -> ``qwen3-30b-a3b``)."""


def family(r: dict[str, str]) -> str:
    """Rows that share a shape: a GEMM's model and TP size, a grouped GEMM's MoE model, an
    attention row's sequence length, otherwise the row alone."""
    if r["kind"].strip().startswith("attention"):
        return f"s{r.get('seq_len', '').strip()}"
    experts = EXPERTS_OF.search(r.get("note") or "")
    if experts:
        return experts.group(1)
    for text in ((r.get("note") or "").split(";")[0].strip(), r["id"].split("-", 3)[-1]):
        m = MODEL_TP.match(text)
        if m:
            return m.group(1)
    # otherwise the id's words without sizes: ``h100m-gemm-fp8-odd-m128-n2112`` -> ``odd``
    words = [w for w in r["id"].split("-")[3:] if not any(c.isdigit() for c in w)]
    return "-".join(words) or r["id"]


SOURCE_CLAUSE = re.compile(r" \(| @|[;,]| '")
"""Where a source cell's name ends and its commit, figure or caveats begin."""


def source_label(r: Row) -> str:
    """A row's source as ``--by-source`` prints it: the ``source`` cell up to its first
    clause ('vllm-project/vllm PR #23280'), finer than ``source_key`` ('vllm-project/vllm
    PR', which lumps that repository's PRs together for the split)."""
    full = r.full_source or r.source
    return full[:m.start()] if (m := SOURCE_CLAUSE.search(full)) else full


def source_key(source: str) -> str:
    """A source's name without its commit, figure or caveats: 'microsoft/vidur data/...'."""
    return " ".join(source.split()[:2]).split("@")[0].strip(" ,(")


def untimed_gaps(r: dict[str, str]) -> bool:
    """The validator's reading of a row's harness as launch gaps not timed (off unless
    ``validate.kernels.UNTIMED_GAPS`` is set)."""
    pattern = kernels.UNTIMED_GAPS
    return pattern is not None and bool(pattern.search(f"{r['source']} {r.get('note') or ''}"))


def load(files: Sequence[Path]) -> list[Row]:
    rows = []
    for path in files:
        with open(path, newline="") as fh:
            for r in csv.DictReader(fh):
                if L2_RESIDENT.search(r.get("note") or ""):
                    continue  # not an HBM figure (the validator leaves these out too)
                ops, flops = kernel_ops(r)
                value, unit = float(r["measured_value"]), r["measured_unit"].strip()
                t = flops / (value * 1e12) if unit == "TFLOP/s" else value * TIME_UNITS[unit]
                rows.append(Row(r["kind"].strip(), r["gpu"].strip(), source_key(r["source"]),
                                ops, t, family(r), bool(SUSTAINED.search(r.get("note") or "")),
                                r["source"].strip(),
                                bool(BURST.search(f"{r['source']} {r.get('note') or ''}")),
                                untimed_gaps(r)))
    return rows


FITTED = ("gemm", "attention_fwd", "attention_bwd", "attention_fwd_bwd", "grouped", "memory_bound")
DOMAIN = {"gemm_grouped": "grouped", "moe_block": "grouped"}
"""Kinds whose rows inform the same constants, split and fitted as one."""


def domain(r: Row) -> str:
    return DOMAIN.get(r.kind, r.kind)


def grouped_family(r: Row) -> str | None:
    """The one-kernel grouped implementation a row's GEMMs run (None: not one)."""
    impls = {op.grouped for op in r.ops if getattr(op, "grouped", "")}
    impls &= set(roofline.GROUPED_OF_GEMM)
    return impls.pop() if len(impls) == 1 else None


def _hash_order(names: set[str]) -> list[str]:
    return sorted(names, key=lambda s: hashlib.sha1(s.encode()).hexdigest())


def split(rows: list[Row]) -> dict[str, set[str]]:
    """Held-out groups per kind: whole sources, and shape families (``source|family``) of
    the sources left in the fit (see the module docstring)."""
    out: dict[str, set[str]] = {}
    by_kind: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in rows:
        by_kind[domain(r)][r.source] += 1
    for kind, counts in by_kind.items():
        total, held = sum(counts.values()), 0
        largest = max(counts, key=lambda s: counts[s])
        out[kind] = set()
        for src in _hash_order(set(counts)):
            if held >= HOLD_OUT * total:
                break
            if src != largest:
                out[kind].add(src)
                held += counts[src]
        if kind not in FITTED:
            continue  # not fitted here: every row is reported as held out
        for src in set(counts) - out[kind]:  # each source left in the fit, by shape family
            fams: dict[str, int] = defaultdict(int)
            for r in rows:
                if domain(r) == kind and r.source == src:
                    fams[r.family] += 1
            held = 0
            for fam in _hash_order(set(fams)):
                if held >= HOLD_OUT * counts[src] or len(fams) < 2:
                    break
                out[kind].add(f"{src}|{fam}")
                held += fams[fam]
    return out


def is_held(r: Row, held: dict[str, set[str]]) -> bool:
    groups = held.get(domain(r), set())
    return r.source in groups or f"{r.source}|{r.family}" in groups
