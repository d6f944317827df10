"""The attention rate each llm-foundry row's measured time implies: a diagnostic of which kernel
the benchmark runs used. Nothing is fitted and no prediction changes.

    PYTHONPATH=src python benchmarks/foundry_attention_rate.py [training.csv] [--errata] [--markdown]

For every llm-foundry row of the file (default: the bundled public file) the row is priced as
given (``attention`` flash2) with every fused attention kernel's time divided by a factor
``r`` (``r`` = 1: the scoreboard's prediction), and ``r`` is bisected until the predicted
iteration time equals the measured one. ``r`` is then the attention rate the measurement implies,
as a fraction of FlashAttention-2's rate as trainsim prices it, everything else as priced.
Printed beside it: the attention share of the predicted time at ``r`` = 1; ``-`` for ``r``
when no rate in [0.05, 20] matches (the gap is not attention's). ``--errata`` prices the file with
benchmarks/training_errata.csv applied (``attention`` triton for these rows): ``r`` is then a
fraction of the Triton kernel's priced rate.

What to compare ``r`` with: 1 is the kernel the row names; trainsim prices llm-foundry's
``attn_impl: triton`` kernel (llmfoundry/models/layers/flash_attn_triton.py, which the benchmark
harness ran: scripts/train/benchmarking/submit_benchmarks.py L144 and L305 at 5e85bd62,
benchmarks/training_errata.csv) at ``compute.attention.FLASH1_OF_FLASH2`` (0.50) of
FlashAttention-2. No published measurement of that kernel is known: the FlashAttention-2 paper's
"FlashAttention Triton" bars time Triton's own ``triton.ops.flash_attention``
(Dao-AILab/flash-attention@60499abc benchmarks/benchmark_flash_attention.py L17, L113-132).
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from trainsim.compute import chain
from trainsim.validate import BUNDLED_DIR, validate_file
from trainsim.validate.errata import corrected_file
from trainsim.workload.ops import Attention

FRAMEWORK = "llm-foundry"
RATE_RANGE = (0.05, 20.0)
UNFUSED = ("unfused", "eager")


@contextmanager
def attention_rate(rate: float) -> Iterator[None]:
    """Inside it every fused attention kernel runs at ``rate`` times its priced rate (its time
    divided by ``rate``); every other op is priced as usual."""
    original = chain.ChainModel.explain

    def explain(self: chain.ChainModel, op: object) -> tuple[float, str]:
        t, source = original(self, op)  # type: ignore[arg-type]
        if isinstance(op, Attention) and op.impl not in UNFUSED:
            return t / rate, source
        return t, source

    chain.ChainModel.explain = explain  # type: ignore[method-assign]
    try:
        yield
    finally:
        chain.ChainModel.explain = original  # type: ignore[method-assign]


def predict(row: dict[str, str], rate: float, tmp: Path) -> float:
    """The row's predicted iteration time with its attention at ``rate`` of the priced rate."""
    path = tmp / "row.csv"
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(row))
        writer.writeheader()
        writer.writerow(row)
    with attention_rate(rate):
        _, results = validate_file(path)
    if results[0].predicted is None:
        raise RuntimeError(f"{row['id']}: no prediction ({results[0].error})")
    return float(results[0].predicted)


def implied_rate(row: dict[str, str], tmp: Path, iters: int = 40) -> float | None:
    """The attention rate (fraction of the priced one) at which the row's prediction equals
    its measured time, or None when no rate in ``RATE_RANGE`` does."""
    measured = float(row["measured_iteration_s"])
    lo, hi = RATE_RANGE  # predicted time falls as the rate rises
    if not predict(row, hi, tmp) <= measured <= predict(row, lo, tmp):
        return None
    for _ in range(iters):
        mid = (lo * hi) ** 0.5
        if predict(row, mid, tmp) > measured:
            lo = mid
        else:
            hi = mid
    return (lo * hi) ** 0.5


def rows_of(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["framework"] == FRAMEWORK]


def table(path: Path) -> list[dict[str, object]]:
    """One entry per llm-foundry row: id, measured, predicted (as priced), the attention share
    of the prediction and the implied rate."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for row in rows_of(path):
            base = predict(row, 1.0, Path(tmp))
            no_attention = predict(row, 1e9, Path(tmp))
            out.append({"id": row["id"], "seq": int(row["seq_length"]), "gpu": row["gpu"],
                        "measured": float(row["measured_iteration_s"]), "predicted": base,
                        "attention_share": 1.0 - no_attention / base,
                        "implied_rate": implied_rate(row, Path(tmp))})
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?", default=str(BUNDLED_DIR / "training_public.csv"))
    parser.add_argument("--errata", action="store_true",
                        help="apply benchmarks/training_errata.csv first")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    path = Path(args.file)
    if args.errata:
        fixed, _ = corrected_file(path, Path(__file__).resolve().parent / "training_errata.csv",
                                  tempfile.mkdtemp())
        path = Path(fixed)
    entries = table(path)
    head = ["row", "measured s", "predicted s", "error", "attention share", "implied rate"]
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
    else:
        print("  ".join(head))
    for e in sorted(entries, key=lambda e: (-e["seq"], e["id"])):  # type: ignore[operator]
        rate = e["implied_rate"]
        cells = [str(e["id"]), f"{e['measured']:.3f}", f"{e['predicted']:.3f}",
                 f"{100 * (e['predicted'] / e['measured'] - 1):+.1f} %",  # type: ignore[operator]
                 f"{100 * e['attention_share']:.0f} %",  # type: ignore[operator]
                 "-" if rate is None else f"{rate:.2f}"]
        print(("| " + " | ".join(cells) + " |") if args.markdown else "  ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
