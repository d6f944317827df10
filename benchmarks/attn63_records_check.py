"""The 63rd session's device check for attn63 (``benchmarks/device_checks63_attn63.py``) read
against the bundled H200 database: per case, the profiler's method today, the graph replay, and
the bundled record of the same shape (2026-11-27) where one exists.

    python benchmarks/attn63_records_check.py DIR   # DIR holds device_checks63_attn63.json
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DB = ROOT / "src/trainsim/data/kernels/h200-sxm-141gb.json"
CASE = re.compile(r"(\w+)-s(\d+)-h(\d+)-kv(\d+)$")


def bundled() -> dict[tuple[str, int, int, int, bool], float]:
    """{(impl, seq, heads, kv heads, backward): microseconds} of the bundled hd128 causal
    batch-1 attention records."""
    out = {}
    for r in json.loads(DB.read_text())["kernels"]:
        if r.get("op") == "attention" and r.get("head_dim") == 128 and r.get("batch") == 1:
            out[(r["impl"], r["q_len"], r["heads"], r["kv_heads"], bool(r["backward"]))] = \
                r["time_s"] * 1e6
    return out


def rows(report: dict) -> list[tuple[str, str, float, float, float | None]]:
    """(case, direction, profiler-method us, graph us, bundled record us or None)."""
    recs = bundled()
    out = []
    cases = report["sections"].get("sdpa_records", {}).get("cases", {})
    for case, v in cases.items():
        impl, s, h, kv = CASE.match(case).groups()
        for d, bwd in (("fwd", False), ("bwd", True)):
            rec = recs.get((impl, int(s), int(h), int(kv), bwd))
            out.append((case, d, v[f"profile_{d}_us"], v[f"graph_{d}_us"], rec))
    return out


def main(argv: list[str]) -> None:
    report = json.loads((Path(argv[0]) / "device_checks63_attn63.json").read_text())
    print(f"{'case':26s} dir  profile_us  graph_us  graph/profile  record_us  profile/record")
    for case, d, prof, graph, rec in rows(report):
        tail = f"{rec:9.1f}  {prof / rec:6.3f}" if rec else ""
        print(f"{case:26s} {d}  {prof:10.1f}  {graph:8.1f}  {graph / prof:6.3f}        {tail}")


if __name__ == "__main__":
    main(sys.argv[1:])
