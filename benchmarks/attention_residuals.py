"""Where the attention kernel rows miss: the signed time error of every attention row of the
kernel files, grouped by GPU, source, kernel, direction, head dim and causal mask, and spread
over the sequence length.

    python benchmarks/attention_residuals.py              # the bundled kernel files
    python benchmarks/attention_residuals.py --blackwell  # and benchmarks/kernels_blackwell.csv

Rows are priced as ``benchmarks/fit_kernels.py`` prices them (the roofline with its shipped
constants, each GPU alone; a row measured at the power limit at the sustained rate), and marked
``held`` where that script holds their source or shape family out of its fit. A positive error
is a predicted time longer than the measured one (the model too slow). A check, not an input:
nothing here feeds trainsim.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import fit_kernels as fk
import numpy as np

from trainsim.validate import BUNDLED_DIR
from trainsim.workload.ops import Attention

BLACKWELL = Path(__file__).resolve().parent / "kernels_blackwell.csv"


def attention_rows(blackwell: bool) -> list[tuple[fk.Row, str]]:
    """(row, 'fit' or 'held') for the attention rows of the kernel files, as ``fit_kernels``
    splits them; the Blackwell file's rows, never fitted, are 'held'."""
    rows = fk.load([BUNDLED_DIR / f for f in fk.FILES])
    held = fk.split(rows)
    out = [(r, "held" if fk.is_held(r, held) else "fit") for r in rows]
    if blackwell:
        out += [(r, "held") for r in fk.load([BLACKWELL])]
    return [(r, part) for r, part in out if r.kind.startswith("attention")]


def source_label(source: str) -> str:
    """The table's name for a row's source: the basename of its path (the file a repository's
    figures were read from), or the whole text where it names no path. Rows are grouped by the
    whole source, so two files sharing a long prefix stay two lines."""
    return source.rsplit("/", 1)[-1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--blackwell", action="store_true",
                    help="add benchmarks/kernels_blackwell.csv (never fitted)")
    args = ap.parse_args(argv)
    parts = attention_rows(args.blackwell)
    rows = [r for r, _ in parts]
    errors = fk.predict(rows) / np.array([r.measured_s for r in rows]) - 1.0
    groups: dict[tuple[str, ...], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (r, part), e in zip(parts, errors):
        op = next(o for o in r.ops if isinstance(o, Attention))
        k = (r.gpu, r.source, op.impl, r.kind.removeprefix("attention_"),
             f"hd{op.head_dim}", "causal" if op.causal else "full", part)
        groups[k][op.q_len].append(float(e))
    seqs = sorted({s for g in groups.values() for s in g})
    print("signed time error, % (positive: predicted slower than measured), mean over the rows "
          "of each sequence length")
    head = ["gpu", "source", "kernel", "dir", "hd", "mask", "part", "n", "MAPE", "signed"]
    print("| " + " | ".join(head + [f"s{s}" for s in seqs]) + " |")
    print("|" + "---|" * (len(head) + len(seqs)))
    for k in sorted(groups):
        by_seq = groups[k]
        flat = [e for v in by_seq.values() for e in v]
        cells = [f"{100 * sum(by_seq[s]) / len(by_seq[s]):+.0f}" if s in by_seq else ""
                 for s in seqs]
        label = [k[0], source_label(k[1]), *k[2:]]
        print("| " + " | ".join([*label, str(len(flat)),
                                 f"{100 * sum(abs(e) for e in flat) / len(flat):.1f}",
                                 f"{100 * sum(flat) / len(flat):+.1f}", *cells]) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
