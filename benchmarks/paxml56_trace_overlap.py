"""How much of each collective XLA overlapped in a measured Pax FSDP step: reads an nsys-jax
archive's NVTX-projected trace (``nvtx_gpu_proj_trace/trace.parquet``: every XLA thunk of a
step as the GPU ran it) and prints, for the last step of ``pjit__wrapped_step_fn``, each
all-gather / reduce-scatter / all-reduce thunk's GPU time, the part of it that ran while a
compute thunk ran, and the compute thunks it overlapped. A check, not an input.

    python benchmarks/paxml56_trace_overlap.py DIR   # DIR: an unzipped nsys-jax archive

The archive read for RESULTS.md (56th session, paxml56) is NVIDIA/JAX-Toolbox
.github/workflows/nsys-jax/test_data/pax_fsdp4_4proc_proc0.zip (added in 2f1f572a, 2024-07-09;
an A100 Pax run with FSDP over 4 processes, the step compiled without a profile-guided latency
estimate). Needs pandas and pyarrow (not trainsim dependencies): ``pip install pandas pyarrow``
in a virtual environment of its own.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

COLLECTIVE = re.compile(r"(all-gather|reduce-scatter|all-reduce)")


def _union(intervals: list[tuple[float, float]]) -> list[list[float]]:
    merged: list[list[float]] = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged


def _covered(union: list[list[float]], s: float, e: float) -> float:
    return sum(max(0.0, min(e, b) - max(s, a)) for a, b in union)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[6].strip(), file=sys.stderr)
        return 2
    try:
        import pandas as pd
    except ImportError:
        print("needs pandas and pyarrow: pip install pandas pyarrow", file=sys.stderr)
        return 2
    path = Path(argv[0]) / "nvtx_gpu_proj_trace" / "trace.parquet"
    if not path.is_file():
        print(f"no {path}: give the folder of an unzipped nsys-jax archive", file=sys.stderr)
        return 2
    t = pd.read_parquet(path)
    name = t["Name"].fillna("")
    steps = t[name.str.startswith("TSL:XlaModule") & name.str.contains("step_fn")]
    if steps.empty:
        print(f"{path}: no XlaModule range of a step function", file=sys.stderr)
        return 2
    step = steps.iloc[-1]
    thunks = t[t["ParentId"] == step["RangeId"]].reset_index(drop=True)
    op = thunks["Name"].str.extract(r"hlo_op=([^,#]+)")[0].fillna("")
    start = thunks["Projected Start"]
    end = start + thunks["Projected Duration"]
    is_coll = op.str.match(COLLECTIVE)
    union = _union(list(zip(start[~is_coll], end[~is_coll])))
    print(f"step: {step['Projected Duration'] / 1e6:.1f} ms, {len(thunks)} thunks")
    total = hidden = 0.0
    for i in thunks.index[is_coll]:
        s, e = start[i], end[i]
        cover = _covered(union, s, e)
        total += e - s
        hidden += cover
        over = [re.sub(r"[.\d]+$", "", o) for o, a, b in zip(op[~is_coll], start[~is_coll],
                                                            end[~is_coll]) if a < e and b > s]
        print(f"{op[i]:>22} {(e - s) / 1e3:8.1f} us  hidden {cover / 1e3:8.1f} us  "
              f"{len(over):3d} thunks: {', '.join(over[:6])}{' ...' if len(over) > 6 else ''}")
    print(f"collectives {total / 1e6:.2f} ms, hidden {hidden / 1e6:.2f} ms "
          f"({hidden / total:.0%})" if total else "no collective thunk")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
