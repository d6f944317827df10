"""What each part of a context-parallel step holds on the critical path of the NeMo long-sequence
rows (a diagnostic: nothing here feeds trainsim; issue 17, 30th session, cp30).

    PYTHONPATH=src python benchmarks/cp_longseq_parts.py [FILE]   # ~1 min on 2 idle cores

Every row of ``FILE`` (default ``training_nemo_longseq.csv``) is priced again with one part
doubled, in a fresh process each (prices are cached per process), and the step time the part
adds is printed: the time it holds at x1.

* ``attn``: every attention call; ``steps``: Transformer Engine's later ring steps
  (``workload.context_parallel.te_ring_forward`` / ``te_ring_backward``); ``diag``: the calls
  that are not ring steps (step 0, or the whole call without CP);
* ``fix``: the ring's elementwise kernels (K/V copies, log-sum-exp merges, output corrections,
  gradient accumulations);
* ``hops``: every CP send/receive (a hidden hop adds only the SMs it holds, ``Pricer.sm_share``);
* ``attn_bwd``: every attention backward call.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from part_cases import collect, priced, priced_rows, print_case, run

from trainsim import pricing
from trainsim.compute import roofline
from trainsim.workload.ops import Attention, Elementwise

HERE = Path(__file__).parent
CASES = ("base", "attn", "steps", "diag", "fix", "hops", "attn_bwd")


def _ring(op) -> bool:
    return op.name.startswith("attn_core.te_ring")


def _doubled(label: str, op) -> bool:
    if isinstance(op, Attention):
        return (label == "attn" or label == "steps" and _ring(op)
                or label == "diag" and not _ring(op) or label == "attn_bwd" and op.backward)
    return label == "fix" and isinstance(op, Elementwise) and _ring(op)


def _scale(label: str) -> None:
    time = roofline.RooflineModel._time

    def scaled(self: roofline.RooflineModel, op) -> float:
        t = time(self, op)
        return 2 * t if _doubled(label, op) else t

    roofline.RooflineModel._time = scaled
    if label == "hops":
        comm = pricing.Pricer._comm_time

        def doubled(self: pricing.Pricer, op) -> float:
            t = comm(self, op)
            return 2 * t if op.group == "cp" else t

        pricing.Pricer._comm_time = doubled


def case(label: str, path: Path) -> None:
    _scale(label)
    print_case(priced, path)


def main(path: Path) -> None:
    got = collect(__file__, CASES, path)
    print(f"{'row':44s} gpu   tp cp    err%  gap_s " + " ".join(f"{c:>8s}" for c in CASES[1:]))
    for r, m, p, added in priced_rows(got, CASES, path):
        adds = " ".join(f"{a:8.3f}" for a in added)
        print(f"{r['id'][:44]:44s} {r['gpu'][:5]} {r['tp']:>2s} {r['cp'] or '1':>2s} "
              f"{100 * (p / m - 1):+6.1f} {m - p:6.2f} {adds}")


if __name__ == "__main__":
    run(case, main, HERE / "training_nemo_longseq.csv")
