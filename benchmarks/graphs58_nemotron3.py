"""graphs58 (58th session, issue 17 item 2): the Nemotron 3 rows with and without their
recipes' TE-scoped CUDA graphs, and where the 57th session's "scoped graphs expose the gradient
reduction" came from; nothing here feeds trainsim.

    PYTHONPATH=src:benchmarks python benchmarks/graphs58_nemotron3.py

**Rows.** Each row of benchmarks/training_nemotron3.csv as the file states it (the recipe's
``cuda_graph_scope`` and ``dp_overlap;cuda_graphs``, ``bridge_archive_rows.HYBRID_GRAPHS``) and
with both cells empty (before this session: the profile's run options, and on NVL72 racks its
MXFP8 rule's whole-layer graphs): signed error, host wait (``other_s``) and exposed
communication.

**The exposed reduction.** Nemotron 3 Super on HGX B300 (26.06, MXFP8) simulated eager, with the
scoped graphs and with whole-layer graphs, each with the options cell ``cuda_graphs`` alone (as
the 57th session's what-if wrote it, which drops the run options' ``dp_overlap``) and with
``dp_overlap;cuda_graphs``: the exposed data-parallel time by case.
"""

from __future__ import annotations

import csv
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

FILE = Path(__file__).resolve().parent / "training_nemotron3.csv"
B300 = "bridgearch2606-nemotron-3-super-120b-a12b-b300-64-mxfp8"
SCOPE = "attn;mamba;moe_router;moe_preprocess"


def _run(row: dict[str, str]) -> dict:
    from trainsim.simulator import simulate
    from trainsim.validate.training import predict_training_row, row_config
    res = predict_training_row(row)
    if res.error:
        return {"error": res.error}
    out = simulate(row_config(row, res.chosen))
    return {"err": res.predicted / res.measured - 1, "other": out.breakdown["other_s"],
            "comm": out.breakdown["exposed_comm_s"], "dp": out.exposed_comm.get("dp", 0.0),
            "overlap": out.config.parallel.overlap_grad_reduce}


def cases(rows: list[dict[str, str]]) -> list[tuple[str, str, dict[str, str]]]:
    out = []
    for r in rows:
        out += [(r["id"], "file", r), (r["id"], "empty", dict(r, options="", cuda_graph_scope=""))]
    b300 = next(r for r in rows if r["id"] == B300)
    for opts in ("cuda_graphs", "dp_overlap;cuda_graphs"):
        out += [("b300", f"{opts} scoped", dict(b300, options=opts, cuda_graph_scope=SCOPE)),
                ("b300", f"{opts} whole", dict(b300, options=opts, cuda_graph_scope=""))]
    out.append(("b300", "dp_overlap eager", dict(b300, options="dp_overlap",
                                                  cuda_graph_scope="")))
    return out


def main() -> int:
    rows = list(csv.DictReader(FILE.open(newline="")))
    todo = cases(rows)
    with ProcessPoolExecutor(max_workers=2) as pool:
        got = list(pool.map(_run, [r for _, _, r in todo], chunksize=2))
    res = {(rid, mode): g for (rid, mode, _), g in zip(todo, got)}
    print("| row | scope (file) | err % file | err % empty cells | other s file / empty |"
          " exposed comm s file / empty |\n|---|---|---:|---:|---:|---:|")
    for r in rows:
        f, e = res[(r["id"], "file")], res[(r["id"], "empty")]
        if "err" not in f or "err" not in e:
            print(f"| {r['id']} | fails: {f.get('error') or e.get('error')} |")
            continue
        print(f"| {r['id']} | {r['cuda_graph_scope'] or '-'} | {100 * f['err']:+.1f} | "
              f"{100 * e['err']:+.1f} | {f['other']:.2f} / {e['other']:.2f} | "
              f"{f['comm']:.2f} / {e['comm']:.2f} |")
    for mode in ("file", "empty"):
        errs = [abs(res[(r["id"], mode)]["err"]) for r in rows if "err" in res[(r["id"], mode)]]
        print(f"\n{mode}: {len(errs)} rows, MAPE {100 * sum(errs) / len(errs):.2f} %, "
              f"max {100 * max(errs):.1f} %")
    print("\n| Super B300 26.06 MXFP8 | overlap_grad_reduce | other s | exposed dp s |\n"
          "|---|---|---:|---:|")
    for (rid, mode), g in res.items():
        if rid == "b300":
            print(f"| {mode} | {g['overlap']} | {g['other']:.3f} | {g['dp']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
