"""Issue 16: where a validated row's predicted peak memory comes from, stage by stage, beside the
measured figure: the tool for finding what a memory miss lacks.

    trainsim validate benchmarks/training_heldout.csv --format json > heldout.json
    python benchmarks/memory_rows.py benchmarks/training_heldout.csv --json heldout.json \
        --match tt2412-llama3.1-405b

For each row with a ``measured_peak_memory_gib`` whose id contains ``--match``, the config the
validator simulated (the tuner's choices for empty cells read from ``--json``; without it the
row is tuned again, slowly), then for every pipeline stage its predicted figure of the row's
``memory_kind`` and its parts at the peak moment (``memory.MemoryBreakdown``): weights,
gradients, optimizer state, activations in flight, the named temporaries, and what the caching
allocator holds beyond the allocated peak. The stage marked ``*`` is the one validation compares
(the largest). Nothing here changes a prediction.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys

GiB = 2**30


def _chosen(result: dict | None, rows: list[dict[str, str]]) -> dict[str, dict]:
    """The tuner's settings per row id: from a validate JSON, else by validating again."""
    if result is not None:
        return {r["id"]: r.get("chosen") or {} for r in result["rows"]}
    from trainsim.validate import predict_training_row

    return {r["id"]: predict_training_row(r).to_dict().get("chosen") or {} for r in rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--json", help="a `trainsim validate FILE --format json` output to reuse")
    ap.add_argument("--match", default="", help="only rows whose id contains this")
    args = ap.parse_args(argv)

    from trainsim.memory import estimate_stage_memory
    from trainsim.validate.training import row_config

    result = None
    if args.json:  # read before the rows: a wrong file is one usage line at once
        try:
            with open(args.json, encoding="utf-8") as f:
                result = json.load(f)
        except (OSError, ValueError) as exc:
            ap.error(f"--json {args.json}: {getattr(exc, 'strerror', None) or exc}")
        if not isinstance(result, dict) or not isinstance(result.get("rows"), list) or \
                not all(isinstance(r, dict) and "id" in r for r in result["rows"]):
            ap.error(f"--json {args.json}: not a 'trainsim validate --format json' result")
    try:
        with open(args.csv, newline="", encoding="utf-8") as f:
            rows = [r for r in csv.DictReader(f) if args.match in r.get("id", "")
                    and (r.get("measured_peak_memory_gib") or "").strip()]
    except (OSError, UnicodeDecodeError) as exc:
        ap.error(f"{args.csv}: {getattr(exc, 'strerror', None) or exc}")
    chosen = _chosen(result, rows)
    out = sys.stdout
    for row in rows:
        cfg = row_config(row, chosen.get(row["id"]))
        p, t = cfg.parallel, cfg.training
        kind = (row.get("memory_kind") or "reserved").strip() or "reserved"
        stages = [estimate_stage_memory(cfg, s) for s in range(p.pp)]
        figures = [b.of_kind(kind) / GiB for b in stages]
        top = max(range(p.pp), key=figures.__getitem__)
        measured = float(row["measured_peak_memory_gib"])
        out.write(f"{row['id']}: measured {measured:.1f} GiB {kind}, predicted "
                  f"{figures[top]:.1f} ({100 * (figures[top] / measured - 1):+.1f} %); tp {p.tp} "
                  f"pp {p.pp} vpp {p.vpp} cp {p.cp} dp {cfg.dp} micro-batch "
                  f"{t.micro_batch_size} x {cfg.schedule_microbatches}, recompute "
                  f"{p.recompute}\n")
        for s, (b, fig) in enumerate(zip(stages, figures)):
            temps = ", ".join(f"{n} {v / GiB:.2f}" for n, v in b.temporaries)
            out.write(f" {'*' if s == top else ' '}stage {s}: {fig:6.2f} = weights "
                      f"{b.weights / GiB:.2f} + grads {b.gradients / GiB:.2f} + optimizer "
                      f"{b.optimizer / GiB:.2f} + activations {b.activations / GiB:.2f} + "
                      f"buffers {b.buffers / GiB:.2f} + cached {b.cached / GiB:.2f}"
                      f"{' + context %.2f' % (b.context / GiB) if kind == 'device' else ''}"
                      f" [{b.peak_at}]\n            {temps}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
