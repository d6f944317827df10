"""One price for a bare Python loop of tensor ops, checked on both frameworks that run one
(issue 17 item 2; a what-if: nothing here feeds trainsim).

    python benchmarks/python_loop_price.py        # ~1 min on one core

Two loops of the same kind are priced by ``compute.host.loop_host_s``:

* DeepSpeed ZeRO-3 before v0.5.5 re-gathers its persistent parameters after every step
  (``workload.zero3_persistent``, v0.3.13 partition_parameters.py ``_allgather_params``): per
  (parameter, rank holding a slice) two ``narrow``, a ``view`` and a ``copy_``. The four 2021
  rows of the public file (Narayanan et al. Table 2) carry 0.3-1.8 million iterations a step.
* nanotron's ZeRO-1 gathers the updated parameters (``workload.sharding.zero1_gather_copies``,
  optim/zero.py ``_all_gather_params``, distributed.py ``all_gather_coalesced``): per (rank,
  tensor) a slice and a ``copy_``, a cat per rank. ``benchmarks/training_nanotron.csv``; 0.2-22
  thousand iterations a step on its ZeRO-1 rows.

The loop is priced at each of: the measured per-op figures (``PY_LAUNCH_S`` a kernel, 9.13 us;
``PY_VIEW_S`` a view, 2.26 us), an eager module's fitted ``HOST_S_PER_KERNEL`` (30 us a kernel,
views free: how the 30th session priced DeepSpeed's loop), and the GPU alone (no host time:
how it priced nanotron's). Printed: the four DeepSpeed rows' signed errors and MAPE, and the
nanotron file's MAPE and its ZeRO-1 rows' mean signed error, at each price.
"""

from __future__ import annotations

import contextlib
import csv
from collections.abc import Iterator
from pathlib import Path

from trainsim.compute import host
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.training import predict_training_row

NANOTRON = Path(__file__).resolve().parent / "training_nanotron.csv"
PRICES = {  # name: (seconds a Python-issued kernel, seconds a Python view)
    "measured": (host.PY_LAUNCH_S, host.PY_VIEW_S),
    "eager module": (host.HOST_S_PER_KERNEL, 0.0),
    "GPU only": (0.0, 0.0),
}


@contextlib.contextmanager
def loop_price(kernel_s: float, view_s: float) -> Iterator[None]:
    """Every bare-Python-loop kernel and view priced at ``kernel_s`` / ``view_s``."""
    saved = host.PY_LAUNCH_S, host.PY_VIEW_S
    host.PY_LAUNCH_S, host.PY_VIEW_S = kernel_s, view_s
    try:
        yield
    finally:
        host.PY_LAUNCH_S, host.PY_VIEW_S = saved


def read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def errors(rows: list[dict[str, str]]) -> list[float]:
    out = []
    for r in rows:
        res = predict_training_row(r)
        if res.predicted is not None:
            out.append(res.predicted / res.measured - 1)
    return out


def main() -> None:
    ds = [r for r in read(BUNDLED_DIR / "training_public.csv")
          if r["framework"] == "deepspeed" and r["framework_version"] < "2021-07"]
    nano = read(NANOTRON)
    z1 = [r for r in nano if r["zero_stage"] == "1"]
    print("price         " + " ".join(f"{r['id'].split('zero3-')[-1]:>14s}" for r in ds)
          + "  DS MAPE  nanotron MAPE  ZeRO-1 signed")
    for name, (kernel_s, view_s) in PRICES.items():
        with loop_price(kernel_s, view_s):
            e_ds, e_nano, e_z1 = errors(ds), errors(nano), errors(z1)
        print(f"{name:13s} " + " ".join(f"{e:+14.1%}" for e in e_ds)
              + f" {sum(map(abs, e_ds)) / len(e_ds):8.2%} {sum(map(abs, e_nano)) / len(e_nano):14.2%}"
              + f" {sum(e_z1) / len(e_z1):+14.1%}")


if __name__ == "__main__":
    main()
