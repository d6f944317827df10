"""What context parallelism costs on the critical path of the Blackwell CP-2 rows (a diagnostic:
nothing here feeds trainsim; issue 17, 28th session, cp29).

    python benchmarks/cp_blackwell_parts.py          # ~2 min on 2 cores

Every Blackwell row with cp > 1 in ``training_nemo_perf.csv``, ``training_dgxc2505.csv`` and the
public file (errata applied) runs Transformer Engine's p2p ring (``AttnFuncWithCPAndKVP2P``,
``workload.context_parallel.te_ring_forward`` / ``te_ring_backward``). Each row is priced again
with one part of that ring changed (Blackwell GPUs only) and the step time it adds printed:

* ``steps``: the ring's later-step attention calls (forward and backward; step 0 is the layer's
  own causal call) priced x2: the time they hold on the critical path at x1;
* ``fix``: the ring's own elementwise kernels (K/V copies, log-sum-exp merges, output
  corrections, gradient accumulations) x2;
* ``hops``: every CP send/receive x2, which is also what Transformer Engine from v2.4 does to
  a CP-2 hop on Blackwell: ``batch_p2p_comm`` only where ``device_compute_capability < (10, 0)
  and cp_size == 2`` (0828aa860, #1722; v2.5 f05f12c97 attention/dot_product_attention/
  context_parallel.py L489-492, L1535-1538), so the lone ``isend``/``irecv`` of one peer pair
  run one after the other on its two-rank communicator, one direction at a time;
* ``attn``: every attention call x2 (for scale: the attention on the critical path);
* ``dp``: every data-parallel collective (groups dp_cp, dp_rep) x2, ``pp``: every pipeline
  send x2 (for scale: what those hold on the critical path; not CP).

``x_steps`` is the factor on the later-step calls alone that would close the row's gap; a CP
mechanism that is the gap should need about the same factor on every CP-2 row and leave the
rows without CP (25.07 405B TP 2, the B200 TP-1 rows) unexplained by nothing.
"""

from __future__ import annotations

import csv
import sys
import tempfile
from multiprocessing import Pool
from pathlib import Path

from trainsim import pricing
from trainsim.compute import roofline
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.errata import corrected_file
from trainsim.workload.ops import Attention, Elementwise

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nemo25_blackwell_gap
from nemo25_blackwell_gap import _one

HERE = Path(__file__).parent
BLACKWELL = ("b200-sxm-180gb", "gb200", "gb300")
CASES = ("base", "steps", "fix", "hops", "attn", "dp", "pp")


def rows() -> list[tuple[str, dict[str, str]]]:
    """(file, row) for every Blackwell row with context parallelism."""
    out = []
    tmp = Path(tempfile.mkdtemp())
    public, _ = corrected_file(BUNDLED_DIR / "training_public.csv",
                               HERE / "training_errata.csv", tmp)
    for name, path in (("nemo_perf", HERE / "training_nemo_perf.csv"),
                       ("dgxc2505", HERE / "training_dgxc2505.csv"), ("public", public)):
        with path.open(newline="") as fh:
            out += [(name, r) for r in csv.DictReader(fh)
                    if r["gpu"] in BLACKWELL and (r["cp"] or "1") != "1"]
    return out


def _ring(op) -> bool:
    return op.name.startswith("attn_core.te_ring")


def _scale(label: str) -> None:
    time = roofline.RooflineModel._time

    def scaled(self: roofline.RooflineModel, op) -> float:
        t = time(self, op)
        if (self.gpu.compute_capability or 0) < 100:
            return t
        if label == "attn" and isinstance(op, Attention):
            return 2 * t
        if label == "steps" and isinstance(op, Attention) and _ring(op):
            return 2 * t
        if label == "fix" and isinstance(op, Elementwise) and _ring(op):
            return 2 * t
        return t

    roofline.RooflineModel._time = scaled
    groups = {"hops": ("cp",), "dp": ("dp_cp", "dp_rep"), "pp": ("pp",)}.get(label)
    if groups:
        comm = pricing.Pricer._comm_time

        def doubled(self: pricing.Pricer, op) -> float:
            t = comm(self, op)
            hop = label != "hops" or op.kind == "send_recv"
            return 2 * t if op.group in groups and hop else t

        pricing.Pricer._comm_time = doubled


def case(label: str) -> None:
    """One case in a fresh process (prices are cached per process): id, measured, predicted."""
    _scale(label)
    with Pool(2) as pool:
        for rid, m, p in pool.map(_one, [r for _, r in rows()]):
            print(f"{rid},{m},{p if p is not None else ''}", flush=True)


def run_case(label: str) -> dict[str, tuple[float, float | None]]:
    return nemo25_blackwell_gap.run_case(label, __file__)


def main() -> None:
    got = {label: run_case(label) for label in CASES}
    print(f"{'file':9s} {'row':42s} {'release':12s} tp pp cp dtype    err%   gap_s "
          f" steps_s  fix_s  hops_s  attn_s    dp_s    pp_s  x_steps")
    for name, r in rows():
        m, p = got["base"][r["id"]]
        if p is None:
            continue
        gap = m - p
        add = {k: got[k][r["id"]][1] - p for k in CASES[1:]}
        xs = 1 + gap / add["steps"] if add["steps"] > 1e-9 else float("nan")
        rel = f"{r['framework'][:6]} {r['framework_version'][:5]}"
        dt = (r["fp8_recipe"] or "fp8")[:7] if r["dtype"] == "fp8" else r["dtype"]
        print(f"{name:9s} {r['id'][:42]:42s} {rel:12s} {r['tp']:>2s} {r['pp']:>2s} "
              f"{r['cp']:>2s} {dt:7s} {100 * gap / -m:+6.1f} {gap:7.3f} {add['steps']:7.3f} "
              f"{add['fix']:6.3f} {add['hops']:7.3f} {add['attn']:7.3f} {add['dp']:7.3f} "
              f"{add['pp']:7.3f} {xs:8.2f}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "case":
        case(sys.argv[2])
    else:
        main()
