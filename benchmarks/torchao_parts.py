"""What each kind of work holds on the critical path of the torchao / torchtitan rows (a diagnostic:
nothing here feeds trainsim; issue 17, 35th session, newdata35).

    PYTHONPATH=src python benchmarks/torchao_parts.py [FILE]   # ~1 min on 2 idle cores

Every row of ``FILE`` (default ``training_torchao.csv``) is priced again with one kind of work
doubled, in a fresh process each (prices are cached per process), and the step time that kind adds
is printed: the time it holds at x1 (a part hidden behind another adds less than its own time).

* ``gemm``: every GEMM (bf16 or fp8, forward, backward, recompute);
* ``attn``: every attention call (forward and backward);
* ``elem``: every memory-bound kernel (norms, RoPE, SwiGLU, fp8 casts and amaxes, the loss, the
  FSDP2 copy-in/copy-out, the optimizer);
* ``comm``: every collective (FSDP2 all-gathers and reduce-scatters).

The gap column is measured minus predicted seconds: the time the rows miss.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from part_cases import collect, priced_rows, print_case, run

from trainsim import pricing
from trainsim.compute import roofline
from trainsim.validate.training import predict_training_row
from trainsim.workload.ops import Attention, Elementwise, Gemm

HERE = Path(__file__).parent
CASES = ("base", "gemm", "attn", "elem", "comm")
KINDS = {"gemm": Gemm, "attn": Attention, "elem": Elementwise}


def _scale(label: str) -> None:
    if label in KINDS:
        time = roofline.RooflineModel._time
        kind = KINDS[label]

        def scaled(self: roofline.RooflineModel, op) -> float:
            t = time(self, op)
            return 2 * t if isinstance(op, kind) else t

        roofline.RooflineModel._time = scaled
    elif label == "comm":
        comm = pricing.Pricer._comm_time

        def doubled(self: pricing.Pricer, op) -> float:
            return 2 * comm(self, op)

        pricing.Pricer._comm_time = doubled


def _one(row: dict[str, str]) -> tuple[str, float, float | None]:
    # the analytic model alone: a kernel database's hits would not see the doubling
    res = predict_training_row(row, compute_db=None)
    return row["id"], res.measured, res.predicted


def case(label: str, path: Path) -> None:
    _scale(label)
    print_case(_one, path)


def main(path: Path) -> None:
    got = collect(__file__, CASES, path)
    print(f"{'row':42s} {'gpu':13s} {'meas_s':>7s} {'pred_s':>7s}  err%   gap_s "
          + " ".join(f"{c:>6s}" for c in CASES[1:]))
    for r, m, p, added in priced_rows(got, CASES, path):
        adds = " ".join(f"{a:6.3f}" for a in added)
        print(f"{r['id'][:42]:42s} {r['gpu'][:13]:13s} {m:7.3f} {p:7.3f} {100 * (p / m - 1):+6.1f} "
              f"{m - p:6.3f} {adds}")


if __name__ == "__main__":
    run(case, main, HERE / "training_torchao.csv")
