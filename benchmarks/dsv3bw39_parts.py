"""DeepSeek-V3 on Blackwell, mispriced both ways, taken apart (issue 17 item 2, 39th session; a
diagnostic: nothing here feeds trainsim).

    PYTHONPATH=src python benchmarks/dsv3bw39_parts.py            # 1-3, ~40 s
    PYTHONPATH=src python benchmarks/dsv3bw39_parts.py --tuned    # and 4, ~2 min more

1. **The public B200 row's empty cells.** ``bridge2604p1-deepseek-v3-b200-256`` (+51.9 %) states
   pp 8, vpp 2, ep 32 and MXFP8 and leaves options, layout, dispatcher and recompute to the
   tuner; ``benchmarks/training_errata.csv`` fills them from Megatron-Bridge v0.4.2's
   ``DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2``. The row is priced as written, with each
   recipe cell alone, with all of them and with all but one: which cells carry the +52 %.
2. **The ladder, rung by rung.** ``benchmarks/training_mcore_dsv3_gb200.csv`` (Megatron-LM's
   DeepSeek-V3 GB200 optimization history, 13 rows): for each step that changes a column, the
   measured and the predicted change of the step, beside what the guide says the step bought
   (``GUIDE``). A step priced the wrong way says which relative price is off.
3. **Two exchange what-ifs on the GB200 rows** (the ladder and training_dgxc2505's DeepSeek-V3
   GB200 rows), each a patch of this process only:
   ``deepep_guide``: DeepEP's intranode kernels among more than 16 NVLink peers at the rate the
   guide measured at EP 32 (dispatch ~400, combine ~190 GB/s on 24 SMs: one per-SM rate for the
   pair, ``GUIDE_DEEPEP_PER_SM_Bps``); ``nccl_channels``: NCCL's all-to-all inside one NVLink
   domain held to its channels at NCCL's own per-channel figure
   (``collectives.p2p_channels.all_to_all_channels`` x ``P2P_CHANNEL_Bps``, 32 x 14 GB/s), which
   binds only where a GPU's NVLink is faster than 560 GB/s (Blackwell).
4. ``--tuned``: the Bridge MoE rows of the public file with ``ep_overlap`` (and, separately,
   ``cuda_graphs``) among the switches the tuner chooses for an empty options cell, as the
   validation README's rule for settings a framework leaves to its user would have it: the
   as-written rows against their main prediction.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from step_parts import parts

from trainsim.validate import BUNDLED_DIR

HERE = Path(__file__).resolve().parent
PUBLIC = BUNDLED_DIR / "training_public.csv"
ERRATA = HERE / "training_errata.csv"
LADDER = HERE / "training_mcore_dsv3_gb200.csv"
DGXC = HERE / "training_dgxc2505.csv"
ROW = "bridge2604p1-deepseek-v3-b200-256"
SAME = {"id", "source", "note", "measured_iteration_s", "measured_peak_memory_gib"}

GUIDE_DOC = ("NVIDIA/Megatron-LM@eb0783b6d3 docs/discussions/deepseek-v3-gb200-optimization/"
             "deepseek-v3-gb200-optimization.md")
GUIDE = {
    "04-deepep": "L108: 'we did not get the communication benefits' (DeepEP at EP 32 ~400 GB/s "
                 "dispatch, ~190 combine on 24 SMs); L127: +54.3 TF from the router and "
                 "preprocess CPU overhead (kernels 31 -> 17)",
    "05-no-upproj-recompute": "L127: +44.7 TF; the MLA up projection's recompute is cheap on "
                              "the GPU 'but it also has serious CPU overhead'",
    "06-cuda-graphs": "L154: +84.8 TF (with 2.1.3's fused swizzle); 'the CPU overhead problem "
                      "has been greatly alleviated'",
    "11-hybridep": "L200: +113.6 TF, EP communication and the permute/pad fused (HybridEP "
                   "TMA kernels, 32 SMs in the reproduce guide)",
}
GUIDE_DEEPEP_GBps = (400.0, 190.0, 24)
"""The guide's DeepEP figures at EP 32 on GB200 (L108): dispatch and combine algorithm
bandwidth, GB/s, on that many SMs (DeepEP with the community MNNVL patch, deepseek-ai/DeepEP
PR #218). deepseek-ai/DeepEP PR #420's GB200 table (the hybrid-ep README's DeepEP rows) shows the
same collapse of the combine past 16 ranks: 24 ranks, 16 / 24 / 32 SMs: bf16 dispatch 324.6 /
450.2 / 502.8, combine 126.5 / 163.6 / 207.1 GB/s (16 ranks: combine 278.3 / 378.3 / 442.5)."""
GUIDE_DEEPEP_PER_SM_Bps = 2.0 / (1.0 / GUIDE_DEEPEP_GBps[0] + 1.0 / GUIDE_DEEPEP_GBps[1]) \
    * 1e9 / GUIDE_DEEPEP_GBps[2]
"""One per-SM rate that moves a dispatch and a combine of equal bytes in the time the guide's
two rates take (harmonic mean, per SM): 10.7 GB/s, against ``DEEPEP_COPY_BPS_PER_SM`` 17.1."""


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def recipe_cells(row_id: str, errata: Path = ERRATA) -> dict[str, str]:
    """The cells ``errata`` corrects in row ``row_id``: column -> corrected value."""
    return {e["field"]: e["corrected_value"] for e in read_rows(errata) if e["id"] == row_id}


def signed(g: dict[str, Any]) -> float:
    return 100.0 * (g["predicted"] / g["measured"] - 1.0)


def cell_variants(row: dict[str, str], fix: dict[str, str]) -> list[tuple[str, dict[str, str]]]:
    """The row as written, with each corrected cell alone, with all, and with all but one.
    ``recompute`` and ``recompute_modules`` go together (the modules need selective)."""
    groups: list[tuple[str, ...]] = []
    for key in fix:
        if key == "recompute_modules" and "recompute" in fix:
            continue
        groups.append(("recompute", "recompute_modules") if key == "recompute" and
                      "recompute_modules" in fix else (key,))

    def with_(keys: tuple[str, ...]) -> dict[str, str]:
        out = dict(row)
        out.update({k: fix[k] for k in keys})
        return out

    every = tuple(k for g in groups for k in g)
    out = [("as written", dict(row))]
    out += [(f"+ {'+'.join(g)}", with_(g)) for g in groups]
    out.append(("all recipe cells", with_(every)))
    out += [(f"all but {'+'.join(g)}", with_(tuple(k for k in every if k not in g)))
            for g in groups]
    return out


def cells_table(row_id: str = ROW) -> list[str]:
    row = next(r for r in read_rows(PUBLIC) if r["id"] == row_id)
    lines = ["| variant | settings | predicted s | err % | compute | x ep | bubble | host |",
             "|---|---|---|---|---|---|---|---|"]
    for label, variant in cell_variants(row, recipe_cells(row_id)):
        g = parts(variant)
        lines.append(f"| {label} | {g['setting']} | {g['predicted']:.2f} | {signed(g):+.1f} | "
                     f"{g['compute']:.2f} | {g['ep']:.2f} | {g['bubble']:.2f} | "
                     f"{g['host']:.2f} |")
    return lines


def changed_cells(a: dict[str, str], b: dict[str, str]) -> dict[str, tuple[str, str]]:
    return {k: (a[k], b[k]) for k in a if k not in SAME and a[k] != b[k]}


def step_pairs(rows: list[dict[str, str]]) -> list[tuple[dict[str, str], dict[str, str]]]:
    """Consecutive rows of a ladder whose cells differ (a step that is a column)."""
    return [(a, b) for a, b in itertools.pairwise(rows) if changed_cells(a, b)]


def step_change(before: float, after: float) -> float:
    """A step's change in percent of the step before it."""
    return 100.0 * (after / before - 1.0)


def ladder_table(preds: dict[str, float]) -> list[str]:
    rows = read_rows(LADDER)
    lines = [("| step | cells changed | measured s | predicted s | measured change % | "
              "predicted change % | the guide |"), "|---|---|---|---|---|---|---|"]
    for a, b in step_pairs(rows):
        ma, mb = float(a["measured_iteration_s"]), float(b["measured_iteration_s"])
        pa, pb = preds[a["id"]], preds[b["id"]]
        key = b["id"].split("256-", 1)[1]
        cells = "; ".join(f"{k} {x or '-'} -> {y or '-'}" for k, (x, y) in
                          changed_cells(a, b).items())
        lines.append(f"| {key} | {cells} | {ma:.2f} -> {mb:.2f} | {pa:.2f} -> {pb:.2f} | "
                     f"{step_change(ma, mb):+.1f} | {step_change(pa, pb):+.1f} | "
                     f"{GUIDE.get(key, '')} |")
    return lines


def gap_split(measured: list[float], predicted: list[float],
              column_steps: set[int]) -> dict[str, float]:
    """The first row's gap (measured minus predicted, seconds) split along a ladder of rows:
    what the steps that change no column removed (``hidden``: trainsim prices both rows
    alike), the part of each column step's measured change that trainsim's change misses
    (``column``: measured change minus predicted change, summed), and the last row's own gap
    (``residual``). The three add up to the first row's gap exactly."""
    hidden = column = 0.0
    for i in range(1, len(measured)):
        dm = measured[i - 1] - measured[i]
        dp = predicted[i - 1] - predicted[i]
        if i in column_steps:
            column += dm - dp
        else:
            hidden += dm - dp
    return {"first_gap": measured[0] - predicted[0], "hidden": hidden, "column": column,
            "residual": measured[-1] - predicted[-1]}


def gap_lines(preds: dict[str, float]) -> list[str]:
    rows = read_rows(LADDER)
    steps = {i for i in range(1, len(rows)) if changed_cells(rows[i - 1], rows[i])}
    split = gap_split([float(r["measured_iteration_s"]) for r in rows],
                      [preds[r["id"]] for r in rows], steps)
    return [(f"baseline gap {split['first_gap']:.2f} s = steps that are no column "
             f"{split['hidden']:.2f} s + column steps' unpriced part {split['column']:.2f} s + "
             f"the last row's gap {split['residual']:.2f} s")]


@contextlib.contextmanager
def deepep_guide() -> Iterator[None]:
    """DeepEP's intranode exchange among more than 16 NVLink peers at the guide's EP 32 rate."""
    from trainsim import pricing
    from trainsim.collectives import ep_kernels

    original = pricing.domain_exchange_s

    def patched(dispatcher: str, size_bytes: float, ranks: int, nvlink_Bps: float,
                sms: int | None) -> float:
        t = original(dispatcher, size_bytes, ranks, nvlink_Bps, sms)
        if dispatcher in ep_kernels.SM_BOUND and sms and ranks > 16:
            t = max(t, size_bytes / (sms * GUIDE_DEEPEP_PER_SM_Bps))
        return t

    pricing.domain_exchange_s = patched
    try:
        yield
    finally:
        pricing.domain_exchange_s = original


@contextlib.contextmanager
def nccl_channels() -> Iterator[None]:
    """NCCL's all-to-all dispatcher inside one NVLink domain held to its channels."""
    from trainsim.collectives.p2p_channels import P2P_CHANNEL_Bps, all_to_all_channels
    from trainsim.pricing import Pricer

    original = Pricer._comm_time

    def patched(self: Any, op: Any) -> float:
        t = original(self, op)
        span = self.spans[op.group]
        if op.group == "ep" and op.kind == "all_to_all" and span.nodes == 1 and \
                span.size > 1 and self.cfg.parallel.moe_token_dispatcher_type == "alltoall":
            n = span.size
            t = max(t, (n - 1) / n * op.bytes / (all_to_all_channels(1, n) * P2P_CHANNEL_Bps))
        return t

    Pricer._comm_time = patched
    try:
        yield
    finally:
        Pricer._comm_time = original


def gb200_rows() -> list[tuple[str, dict[str, str]]]:
    out = [("ladder", r) for r in read_rows(LADDER)]
    out += [("dgxc2505", r) for r in read_rows(DGXC)
            if "deepseek" in r["model"] and r["gpu"] == "gb200"]
    return out


def predictions(rows: list[tuple[str, dict[str, str]]]) -> dict[str, dict[str, Any]]:
    return {r["id"]: parts(r) for _, r in rows}


def whatif_tables(base: dict[str, dict[str, Any]]) -> list[str]:
    rows = gb200_rows()
    variants = {"main": base}
    with deepep_guide():
        variants["deepep_guide"] = predictions(rows)
    with nccl_channels():
        variants["nccl_channels"] = predictions(rows)
    head = " | ".join(f"{v} s (err %)" for v in variants)
    lines = [f"| file | row | measured s | {head} |", "|---|---|---|" + "---|" * len(variants)]
    for src, r in rows:
        m = base[r["id"]]["measured"]
        lines.append(f"| {src} | {r['id']} | {m:.2f} | " + " | ".join(
            f"{v[r['id']]['predicted']:.2f} ({signed(v[r['id']]):+.1f})"
            for v in variants.values()) + " |")
    for name, v in variants.items():
        ladder = [abs(signed(v[r["id"]])) for s, r in rows if s == "ladder"]
        lines.append(f"\n{name}: ladder MAPE {sum(ladder) / len(ladder):.1f} %")
        lines += ladder_table({k: g["predicted"] for k, g in v.items()})[2:]
    return lines


@contextlib.contextmanager
def tuned_option(option: str) -> Iterator[None]:
    """Megatron-Bridge's empty options cell with ``option`` among the tuned switches."""
    import trainsim.validate.row_unknowns as ru

    original = ru.tuned_switches

    def patched(row: dict[str, str], profile: Any, on: Any = frozenset()) -> list[str]:
        keys = original(row, profile, on)
        key = ru.SWITCH_KEYS[option]
        acts = option != "ep_overlap" or int(ru._cell(row, "ep") or 1) > 1
        if profile is not None and profile.name == "megatron-bridge" and acts and \
                option not in on and key not in keys:
            keys.append(key)
        return keys

    ru.tuned_switches = patched
    try:
        yield
    finally:
        ru.tuned_switches = original


def tuned_table() -> list[str]:
    from trainsim.validate.training import predict_training_row

    rows = [r for r in read_rows(PUBLIC) if r["framework"] == "megatron-bridge" and
            (r["num_experts"] or r["ep"] not in ("", "1")) and not r["options"]]

    def run() -> dict[str, Any]:
        return {r["id"]: predict_training_row(r) for r in rows}

    base = run()
    out = {}
    for option in ("ep_overlap", "cuda_graphs"):
        with tuned_option(option):
            out[option] = run()
    lines = [("| row | measured s | main err % | tuned ep_overlap err % (chosen) | "
              "tuned cuda_graphs err % |"), "|---|---|---|---|---|"]
    for r in rows:
        b, e, c = base[r["id"]], out["ep_overlap"][r["id"]], out["cuda_graphs"][r["id"]]
        err = (lambda x: 100.0 * (x.predicted / x.measured - 1.0))
        chosen = f"{e.chosen.get('moe_token_dispatcher_type', '-')}, overlap " \
                 f"{e.chosen.get('moe_overlap_ep_comm', False)}"
        lines.append(f"| {r['id']} | {b.measured:.2f} | {err(b):+.1f} | {err(e):+.1f} "
                     f"({chosen}) | {err(c):+.1f} |")
    for name, res in (("main", base), *out.items()):
        ape = [abs(x.predicted / x.measured - 1.0) for x in res.values()]
        lines.append(f"\n{name}: these {len(ape)} rows MAPE {100 * sum(ape) / len(ape):.2f} %")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tuned", action="store_true", help="also table 4 (~2 min)")
    args = ap.parse_args(argv)
    print(f"## 1. {ROW}: the recipe's cells one by one\n")
    print("\n".join(cells_table()))
    base = predictions(gb200_rows())
    print("\n## 2. The ladder's steps that are columns (main)\n")
    print("\n".join(ladder_table({k: g["predicted"] for k, g in base.items()})))
    print()
    print("\n".join(gap_lines({k: g["predicted"] for k, g in base.items()})))
    print("\n## 3. Exchange what-ifs on the GB200 DeepSeek-V3 rows\n")
    print(f"guide per-SM rate {GUIDE_DEEPEP_PER_SM_Bps / 1e9:.2f} GB/s\n")
    print("\n".join(whatif_tables(base)))
    if args.tuned:
        print("\n## 4. Bridge MoE rows with a tuned switch added\n")
        print("\n".join(tuned_table()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
