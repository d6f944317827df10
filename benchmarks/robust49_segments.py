"""robust49: the error and the time of ``token_ids``'s binned Poisson block.

``expected_segments`` sums, for each id drawn 0.5 to 50 times on average, the partial segments
beyond its first under the Poisson law: exactly, one id at a time, up to ``MID_LISTED`` such ids;
past it in bins of ``BIN_RATIO`` (``_binned_beyond_first``). This script prices each case both
ways (the exact sum forced by raising the threshold) and prints the relative error of the
partials and the CPU seconds of each.

    PYTHONPATH=src python benchmarks/robust49_segments.py [--big]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from trainsim.compute.embedding_bwd import uniform_segments
from trainsim.workload import token_ids as t

CASES = ((2**16, 262_144), (1e6, 262_144), (1e7, 262_144), (1e6, 2**21), (4e6, 2**21))
BIG = ((1e8, 3_000_000),)  # robust48's 64 s case (exact: ~50 s, ~5 GB)


def _segments(tokens: float, vocab: int) -> tuple[float, float]:
    if vocab > t.VOCAB_LISTED:
        w, ids = t.binned_zipf(vocab)
        return t._binned_segments(tokens, w, ids)
    return t.expected_segments(tokens, t.zipf_weights(vocab))


def _timed(tokens: float, vocab: int, listed: int) -> tuple[tuple[float, float], float]:
    saved, t.MID_LISTED = t.MID_LISTED, listed
    try:
        start = time.process_time()
        out = _segments(tokens, vocab)
        return out, time.process_time() - start
    finally:
        t.MID_LISTED = saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", action="store_true", help="also 1e8 tokens over 3M ids (~1 min)")
    args = ap.parse_args()
    print("| tokens | vocab | mid ids | partials exact | binned | rel. error | exact s | binned s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for tokens, vocab in CASES + (BIG if args.big else ()):
        w = t.binned_zipf(vocab)[0] if vocab > t.VOCAB_LISTED else t.zipf_weights(vocab)
        lam = tokens * w
        mid = int(np.sum((lam > 0.5) & (lam <= t.POISSON_EXACT_MAX)))
        (_, exact), s_exact = _timed(tokens, vocab, 2**62)
        (_, binned), s_binned = _timed(tokens, vocab, 0)
        print(f"| {tokens:.3g} | {vocab:,} | {mid:,} | {exact:.6f} | {binned:.6f} | "
              f"{binned / exact - 1:.1e} | {s_exact:.2f} | {s_binned:.2f} |")
    for tokens, rows in ((4e6, 2**19), (1e8, 2**31)):
        start = time.process_time()
        d, p = uniform_segments(tokens, rows)
        print(f"uniform {tokens:.3g} ids over {rows:,} rows: distinct {d:.9g}, partials {p:.9g}"
              f" ({time.process_time() - start:.2f} s)")


if __name__ == "__main__":
    main()
