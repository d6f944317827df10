"""GB200 rows that state 64 GPUs a rack, priced as if packed onto NVL72 racks instead (a
diagnostic: nothing here feeds trainsim; issue 17, 28th session, nvl28).

    PYTHONPATH=src python benchmarks/nvl72_placement.py      # ~1 min on 2 cores

Every bundled GB200 row of more than one rack states ``gpus_per_node`` 64: the Slurm segments
of 16 trays that NeMo's performance scripts ask for (``config.cluster.segment_domains``). The
other placement a scheduler could give the same job fills racks in rank order, the last one
partial (256 GPUs: 72 + 72 + 72 + 40, ``cluster.domain_gpus``). Printed per row: the signed
error as stated and as packed.
"""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

from trainsim.simulator import simulate
from trainsim.validate import predict_training_row
from trainsim.validate.training import row_config

HERE = Path(__file__).parent
FILES = [p for p in sorted(HERE.glob("training_*.csv")) if p.stem != "training_errata"] + \
    [HERE.parent.parent / "shared" / "validation" / "training_public.csv",
     Path("/work/shared/validation/training_public.csv")]
RACK = 72


def packed(num_gpus: int) -> tuple[int, ...]:
    full, rest = divmod(num_gpus, RACK)
    return (RACK,) * full + ((rest,) if rest else ())


def main() -> None:
    seen: set[Path] = set()
    for path in FILES:
        if not path.exists() or path.resolve() in seen:
            continue
        seen.add(path.resolve())
        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
        for row in rows:
            if row.get("gpu") != "gb200" or row.get("gpus_per_node") != "64" or \
                    int(row["num_gpus"]) <= 64:
                continue
            res = predict_training_row(row)
            if res.error:
                print(f"{row['id']}: {res.error}")
                continue
            cfg = row_config(row, res.chosen)
            racks = dataclasses.replace(cfg.cluster, gpus_per_node=RACK,
                                        domain_gpus=packed(cfg.cluster.num_gpus))
            t = simulate(dataclasses.replace(cfg, cluster=racks)).iteration_time_s
            m = res.measured
            print(f"{path.stem[9:]:14s} {row['id']:48s} {(res.predicted / m - 1) * 100:+7.1f} "
                  f"{(t / m - 1) * 100:+7.1f}")


if __name__ == "__main__":
    main()
