"""The plain PyTorch step's allocations replayed through the caching allocator, against the H200
step probes (benchmarks/h200_2026-11-27/step_probe.json and clip_step_probe.json).

    PYTHONPATH=src python benchmarks/replay_steps.py            # one line per measured case
    PYTHONPATH=src python benchmarks/replay_steps.py --steps    # reserved after each step

For every uncompiled case the probes ran: the replay's peak allocated (the completeness check of
the allocation sequence: it must sit on ``max_memory_allocated``), its peak reserved, and its
reserved-minus-allocated against the measured one (what ``memory.allocator.reserved_bytes``
adds to the analytical allocated peak). Nothing is fitted: the replay has no free constant.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from trainsim.catalog import model as catalog_model
from trainsim.memory import plain_step

GIB = 2**30
PROBES = ("step_probe.json", "clip_step_probe.json")
HERE = Path(__file__).resolve().parent / "h200_2026-11-27"


def cases(folder: Path = HERE) -> list[dict]:
    """The measured uncompiled cases, each once (the clipped run repeats the unclipped cases:
    clipping allocates only small-pool scalars), the clipped run's figures kept last."""
    seen: dict[tuple, dict] = {}
    for name in PROBES:
        for r in json.loads((folder / name).read_text())["results"]:
            if "allocated_gib" in r and not r.get("compile"):
                seen[(r["model"], r["seq"], r["mbs"], r["recompute"], r["attention"])] = r
    return list(seen.values())


def shape(r: dict) -> plain_step.Shape:
    """The replay's shape of a probe case (SDPA ran cuDNN's kernel: pytorch.yaml sdpa_by_arch)."""
    m = catalog_model(r["model"])
    return plain_step.Shape(
        b=r["mbs"], s=r["seq"], h=m.hidden_size, q=m.q_size, kv=m.kv_size, f=m.ffn_size,
        heads=m.num_attention_heads, layers=m.num_layers, vocab=m.vocab_size,
        tied=bool(m.tied_embeddings), qkv_bias=bool(m.qkv_bias),
        scores=r["attention"] == "eager", gqa_expanded=False,
        recompute=r["recompute"] == "full")


def per_step(sh: plain_step.Shape) -> list[tuple[float, float]]:
    """(peak allocated, reserved) after each of the replay's steps, GiB."""
    rp = plain_step._Replay(sh)
    rp.build()
    out = []
    for k in range(plain_step.WARM_STEPS + plain_step.TIMED_STEPS):
        rp.al.reset_peaks()
        rp.step(first=k == 0)
        out.append((rp.al.peak_allocated / GIB, rp.al.reserved / GIB))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", action="store_true", help="reserved after each replayed step")
    args = ap.parse_args()
    err_alloc, err_excess = [], []
    print("| case | allocated replay / measured GiB | reserved replay / measured GiB | "
          "reserved - allocated replay / measured GiB |")
    print("|---|---:|---:|---:|")
    for r in cases():
        sh = shape(r)
        alloc, res = (x / GIB for x in plain_step.replay(sh))
        ma, mr = r["allocated_gib"], r["reserved_gib"]
        err_alloc.append(abs(alloc / ma - 1))
        err_excess.append(abs((res - alloc) - (mr - ma)))
        name = f"{r['model']} s{r['seq']} mb{r['mbs']} {r['recompute']} {r['attention']}"
        print(f"| {name} | {alloc:.2f} / {ma:.2f} | {res:.2f} / {mr:.2f} | "
              f"{res - alloc:+.2f} / {mr - ma:+.2f} |")
        if args.steps:
            print("|  per step (peak allocated/reserved) | "
                  + " ".join(f"{a:.1f}/{b:.1f}" for a, b in per_step(sh)) + " | | |")
    n = len(err_alloc)
    print(f"\n{n} cases: allocated off by {100 * sum(err_alloc) / n:.2f} % on average "
          f"(max {100 * max(err_alloc):.2f} %); reserved - allocated off by "
          f"{sum(err_excess) / n:.2f} GiB on average (max {max(err_excess):.2f} GiB)")


if __name__ == "__main__":
    main()
