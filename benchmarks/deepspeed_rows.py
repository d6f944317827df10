"""Every DeepSpeed-family training row, its predicted time taken apart (issue 17 diagnostics;
nothing here feeds trainsim).

    python benchmarks/deepspeed_rows.py             # the views below, a few seconds
    python benchmarks/deepspeed_rows.py --replay    # only the prefetch replay (instant)
    python benchmarks/deepspeed_rows.py --prefetch-2021   # only section 5 (a few seconds)

Views: the public file as given, the public file with ``benchmarks/training_errata.csv``
applied (the rows this file holds), ``benchmarks/training_deepspeed.csv`` and the held-out file
(``deepspeed`` and ``megatron-deepspeed`` rows; the held-out file has none today).

1. Per row: measured and predicted step, signed error, the prediction's parts (``breakdown``:
   compute, exposed communication, pipeline bubble, the rest: host waits, optimizer, data),
   the share of compute in it, micro-batches per step and the gap per micro-batch.
2. ZeRO-3 rows grouped by hidden size across sources: per row, the factor on the predicted
   compute alone, or on the rest of the prediction alone, that would close it; per group, the
   least-squares factors ``a`` on compute and ``b`` on the rest that would reproduce the
   group's measured steps (what-ifs, not a model: they say which part a gap sits in).
3. ZeRO-3 rows that run DeepSpeed >= 0.6 (coalesced, prefetched gathers): the prediction with
   every gather waited for, i.e. the row run as DeepSpeed v0.4.3 - v0.5.10 runs it
   (``framework_version`` 2021-07: a synchronous all-gather per parameter, no prefetch).
4. DeepSpeed v0.6.2's prefetch gate replayed on the row's tensors (microsoft/DeepSpeed v0.6.2
   deepspeed/runtime/zero/partitioned_param_coordinator.py ``fetch_sub_module``: the next
   submodules are prefetched only up to ``min(stage3_max_live_parameters - available,
   stage3_prefetch_bucket_size)`` elements; ``__params_to_release``: a parameter stays gathered
   while its next use is within ``stage3_max_reuse_distance`` elements of module trace): how many
   gathers of a step are issued by the fetch itself (the compute waits for them), under the
   defaults (1e9, 1e9) and under the values of the Azure recipes (3e9, 3e9:
   microsoft/Megatron-DeepSpeed examples/azure/run-175b.sh @ 62bc4562).
5. DeepSpeed v0.3.13's prefetch on the 2021 per-parameter ZeRO-3 rows (not modelled:
   ``sharded_passes.blocking_gathers`` waits for every gather): the gate replayed with
   ``replay(gate="0.3.13")`` (stage3.py ``prefetch_next_sub_modules``: only while the
   gathered-elements counter is under ``stage3_max_live_parameters``, then whole tensors until
   ``stage3_prefetch_bucket_size``) under the release defaults and under the DeepSpeedExamples
   ZeRO-3 config, and a what-if (``prefetch_hidden``) that hides that share of each pass's
   gather wire time under its compute: an upper bound on what the prefetch could save.
"""

from __future__ import annotations

import collections
import contextlib
import csv
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from trainsim import sharded_passes, simulator
from trainsim.priced import Priced
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.errata import corrected_file
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.sharding import ZERO3_PERSISTENCE_THRESHOLD, rank_tensors

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS = ("deepspeed", "megatron-deepspeed")
PREFETCH_BUCKET = 50_000_000
"""``stage3_prefetch_bucket_size`` default and the Azure recipes' value (elements)."""
GATES = {"defaults 1e9/1e9": (1e9, 1e9), "Azure recipe 3e9/3e9": (3e9, 3e9)}
SYNC_PATH_VERSION = "2021-07"
"""The deepspeed profile entry of v0.4.3 - v0.5.10: per-parameter gathers, each synchronised."""


def views() -> list[tuple[str, Path]]:
    """(label, file) of each view, the errata one written to a temporary directory."""
    public = BUNDLED_DIR / "training_public.csv"
    fixed, _ = corrected_file(public, ROOT / "benchmarks" / "training_errata.csv",
                              tempfile.mkdtemp(),
                              keep=lambda r: r.get("framework") in FRAMEWORKS)
    return [("public", public), ("public, errata", fixed),
            ("training_deepspeed", ROOT / "benchmarks" / "training_deepspeed.csv"),
            ("held-out", ROOT / "benchmarks" / "training_heldout.csv")]


def family_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return [r for r in csv.DictReader(fh) if r.get("framework") in FRAMEWORKS]


def parts(row: dict[str, str]) -> dict[str, float] | None:
    """The row's prediction and its parts, seconds (None: the row fails)."""
    res = predict_training_row(row)
    if res.predicted is None:
        return None
    b = res.extra["breakdown"]
    cfg = row_config(row, res.chosen)
    rest = res.predicted - b["compute_s"] - b["exposed_comm_s"] - b["pipeline_bubble_s"]
    return {"measured": res.measured, "predicted": res.predicted, "compute": b["compute_s"],
            "comm": b["exposed_comm_s"], "bubble": b["pipeline_bubble_s"], "rest": rest,
            "microbatches": cfg.num_microbatches, "memory": res.predicted_memory_gib or 0.0,
            "zero": cfg.parallel.zero_stage, "hidden": cfg.model.hidden_size,
            "gather": cfg.parallel.zero3_gather}


def print_rows(label: str, rows: list[dict[str, str]], got: dict[str, dict]) -> None:
    print(f"\n== {label}: {len(rows)} rows")
    if not rows:
        return
    print(f"{'row':44s} {'framework':>9s} {'meas s':>8s} {'pred s':>8s} {'err':>6s} "
          f"{'compute':>8s} {'comm':>7s} {'bubble':>7s} {'rest':>6s} {'comp%':>5s} "
          f"{'mb/step':>7s} {'gap ms/mb':>9s} {'GiB':>5s}")
    by_fw: dict[str, list[float]] = collections.defaultdict(list)
    for r in rows:
        p = got.get(r["id"])
        if p is None:
            print(f"{r['id'][:44]:44s} failed")
            continue
        err = p["predicted"] / p["measured"] - 1
        by_fw[r["framework"]].append(err)
        gap = 1e3 * (p["measured"] - p["predicted"]) / p["microbatches"]
        print(f"{r['id'][:44]:44s} {r['framework'][:9]:>9s} {p['measured']:8.2f} "
              f"{p['predicted']:8.2f} {100 * err:+5.1f}% {p['compute']:8.2f} {p['comm']:7.2f} "
              f"{p['bubble']:7.2f} {p['rest']:6.2f} {100 * p['compute'] / p['predicted']:5.1f} "
              f"{p['microbatches']:7d} {gap:9.2f} {p['memory']:5.1f}")
    for fw, errs in sorted(by_fw.items()):
        e = np.array(errs)
        print(f"   {fw}: {len(e)} rows, MAPE {100 * np.abs(e).mean():.1f} %, "
              f"signed {100 * e.mean():+.1f} %")


def two_factor(group: list[tuple[str, dict]]) -> tuple[float, float, list[float]]:
    """The least-squares ``a``, ``b`` of measured ~ a x compute + b x (predicted - compute)
    over the group, and each row's signed residual of that fit."""
    x = np.array([[p["compute"], p["predicted"] - p["compute"]] for _, p in group])
    y = np.array([p["measured"] for _, p in group])
    (a, b), *_ = np.linalg.lstsq(x, y, rcond=None)
    return float(a), float(b), [float(f / m - 1) for f, m in zip(x @ (a, b), y)]


def replay(tensors: list[float], layers: int, vocab_matrix: float, max_live: float,
           reuse: float, bucket: float = PREFETCH_BUCKET,
           gate: str = "0.6.2") -> tuple[int, float, int, float]:
    """One steady step of DeepSpeed's PartitionedParameterCoordinator over a GPT stack
    with full recompute: a submodule per gathered tensor (``tensors``: one layer's, in forward
    order), the tied word embedding at both ends. Returns (gathers, elements gathered, gathers
    the fetch itself issues, their elements). ``gate`` "0.6.2": after each fetch the next
    submodules' tensors are prefetched up to ``min(max_live - live, bucket)`` elements;
    "0.3.13" (stage3.py ``prefetch_next_sub_modules``): only while ``live < max_live`` (the
    handles are always empty there: the fetch's ``_synchronize_communication`` cleared them),
    then tensors until ``bucket`` elements are reached (``get_params_to_prefetch`` returns once
    the total reaches it: at least one tensor, whatever its size)."""
    numel = {"emb": vocab_matrix}
    names = []
    for i in range(layers):
        layer = [f"{i}.{j}" for j in range(len(tensors))]
        numel.update({n: t for n, t in zip(layer, tensors)})
        names.append(layer)
    trace = ["emb"] + [n for layer in names for n in layer] + ["emb", "emb"]
    for layer in reversed(names):  # recompute forward, then backward
        trace += layer + layer[::-1]
    trace.append("emb")
    gathered = {n: False for n in numel}
    live = 0.0
    queue = collections.deque(enumerate(trace))
    counts = [0, 0.0, 0, 0.0]

    def gather(name: str, own: bool) -> None:
        nonlocal live
        if not gathered[name]:
            gathered[name] = True
            live += numel[name]
            counts[0] += 1
            counts[1] += numel[name]
            if own:
                counts[2] += 1
                counts[3] += numel[name]

    for step, name in enumerate(trace):
        gather(name, own=True)
        while queue and queue[0][0] <= step:
            queue.popleft()
        if gate == "0.3.13":
            room = bucket if live < max_live else 0.0
        else:
            room = min(max_live - live, bucket)
        taken, ahead = 0.0, []
        while queue and taken < room:
            _, nxt = queue.popleft()
            if nxt not in ahead:
                ahead.append(nxt)
                taken += numel[nxt]
        for nxt in ahead:
            gather(nxt, own=False)
        # released unless used again within ``reuse`` elements of the modules after this one
        seen, kept = 0.0, False
        for later in trace[step + 1:]:
            if seen > reuse:
                break
            if later == name:
                kept = True
                break
            seen += numel[later]
        if not kept:
            gathered[name] = False
            live -= numel[name]
    return counts[0], counts[1], counts[2], counts[3]


def replay_row(row: dict[str, str]) -> None:
    cfg = row_config(row)
    if cfg.parallel.zero3_gather != "per_block":  # not the v0.6+ coordinator
        return
    tensors = [n for n, _ in rank_tensors(cfg, [0]) if n >= ZERO3_PERSISTENCE_THRESHOLD]
    vocab = cfg.model.vocab_size * cfg.model.hidden_size / cfg.parallel.tp
    out = []
    for label, (live, reuse) in GATES.items():
        g, ge, own, owne = replay(tensors, cfg.model.num_layers, vocab, live, reuse)
        out.append(f"{label}: {own} of {g} gathers by the fetch ({100 * owne / ge:.0f} % of "
                   f"{ge:.3g} elements)")
    print(f"   {row['id'][:40]:40s} largest tensor {max(tensors):.3g}: " + "; ".join(out))


GATES_2021 = {"v0.3.13 defaults 1e9/1e9, 5e7": (1e9, 1e9, 5e7),
              "DeepSpeedExamples ZeRO-3 config 1e8/1e8, 2.5e7": (1e8, 1e8, 2.5e7)}
"""(stage3_max_live_parameters, stage3_max_reuse_distance, stage3_prefetch_bucket_size):
microsoft/DeepSpeed v0.3.13 deepspeed/runtime/zero/constants.py defaults, and
microsoft/DeepSpeedExamples Megatron-LM-v1.1.5-ZeRO3/examples/ds_zero_stage_3_config.json
@ 2cd968f2 (2021-03-08)."""


@contextlib.contextmanager
def prefetch_hidden(share: float) -> Iterator[None]:
    """What-if, not a model: each per-parameter ZeRO-3 pass (``sharded_passes.
    blocking_gathers``) keeps its gathers' host work and zero-fill / copy-out kernels, and hides
    ``share`` of its gathers' wire time (``dp_comm``) under its own compute, at most all of that
    compute: the bound of v0.3.13's prefetch, whose gather of the next submodule runs on the
    communication stream while this one computes (``_allgather_param`` issues it, the next
    ``fetch_sub_module`` waits for it)."""
    orig = sharded_passes.blocking_gathers

    def hidden(cfg, pricer, chunks, side_s):  # type: ignore[no-untyped-def]
        out = {}
        for v, passes in orig(cfg, pricer, chunks, side_s).items():
            new = []
            for p in passes:
                compute = sum(d for c, d, _ in p.segments if c == "compute")
                wire = sum(d for c, d, _ in p.segments if c == "dp_comm")
                keep = tuple(seg for seg in p.segments if seg[0] != "dp_comm")
                left = wire - min(share * wire, compute)
                new.append(Priced(keep + (("dp_comm", left, "zero3_gather_exposed"),)))
            out[v] = tuple(new)
        return out

    sharded_passes.blocking_gathers = hidden
    simulator.blocking_gathers = hidden
    try:
        yield
    finally:
        sharded_passes.blocking_gathers = orig
        simulator.blocking_gathers = orig


def prefetch_2021() -> None:
    """Section 5: DeepSpeed v0.3.13's prefetch on the 2021 per-parameter ZeRO-3 rows."""
    rows = [r for r in family_rows(BUNDLED_DIR / "training_public.csv")
            if r["zero_stage"] == "3"
            and row_config(r).parallel.zero3_gather == "per_parameter"]
    print("\nDeepSpeed v0.3.13 prefetch gate on the 2021 ZeRO-3 rows, replayed (share of the "
          "step's gathered elements prefetched), and the what-if hiding that share of each "
          "pass's gather wire time under its compute:")
    errs: dict[str, list[float]] = collections.defaultdict(list)
    for r in rows:
        cfg = row_config(r)
        tensors = [n for n, _ in rank_tensors(cfg, [0]) if n >= ZERO3_PERSISTENCE_THRESHOLD]
        vocab = cfg.model.vocab_size * cfg.model.hidden_size / cfg.parallel.tp
        base = parts(r)
        if base is None:
            continue
        err = base["predicted"] / base["measured"] - 1
        cells = [f"{r['id'][:36]:36s} as given {100 * err:+5.1f}%"]
        errs["as given"].append(err)
        for label, (live, reuse, bucket) in GATES_2021.items():
            _, ge, _, owne = replay(tensors, cfg.model.num_layers, vocab, live, reuse, bucket,
                                    gate="0.3.13")
            share = 1 - owne / ge
            with prefetch_hidden(share):
                p = parts(r)
            assert p is not None
            errs[label].append(p["predicted"] / p["measured"] - 1)
            cells.append(f"{label}: {100 * share:3.0f} % prefetched, "
                         f"{100 * (p['predicted'] / p['measured'] - 1):+5.1f}%")
        print("   " + "; ".join(cells))
    for label, e in errs.items():
        a = np.array(e)
        print(f"   {label}: MAPE {100 * np.abs(a).mean():.1f} %, signed {100 * a.mean():+.1f} %")


def main(argv: list[str]) -> None:
    if "--prefetch-2021" in argv:
        prefetch_2021()
        return
    if "--replay" in argv:
        rows = family_rows(ROOT / "benchmarks" / "training_deepspeed.csv")
        print("DeepSpeed v0.6.2 prefetch gate, replayed (gathers per step the compute waits for):")
        for r in rows:
            if r["zero_stage"] == "3":
                replay_row(r)
        return
    zero3: dict[int, list[tuple[str, dict]]] = collections.defaultdict(list)
    for label, path in views():
        rows = family_rows(path)
        got = {r["id"]: parts(r) for r in rows}
        print_rows(label, rows, got)
        if label in ("public", "training_deepspeed"):
            for r in rows:
                p = got[r["id"]]
                if p is not None and p["zero"] == 3 and r["id"] not in dict(zero3[p["hidden"]]):
                    zero3[p["hidden"]].append((r["id"], p))
    print("\nZeRO-3 rows by hidden size: measured ~ a x compute + b x rest (what-if)")
    for hidden, group in sorted(zero3.items()):
        print(f" hidden {hidden}: {len(group)} rows; the factor that alone closes each row, "
              "on compute / on the rest:")
        for rid, p in group:
            rest = p["predicted"] - p["compute"]
            print(f"   {rid[:44]:44s} x{(p['measured'] - rest) / p['compute']:.2f} / "
                  f"x{(p['measured'] - p['compute']) / rest:.2f}")
        if len(group) >= 2:
            a, b, res = two_factor(group)
            print(f"   a = {a:.2f} on compute, b = {b:.2f} on the rest; residuals: "
                  + ", ".join(f"{rid} {100 * e:+.1f}%" for (rid, _), e in zip(group, res)))
    print("\nZeRO-3 rows of DeepSpeed >= 0.6 with every gather waited for (run as "
          f"framework_version {SYNC_PATH_VERSION}):")
    for r in family_rows(ROOT / "benchmarks" / "training_deepspeed.csv"):
        p = parts(r) if r["zero_stage"] == "3" and r["framework"] == "deepspeed" else None
        if p is None or p["gather"] != "per_block":  # the prefetched (v0.6+) path only
            continue
        q = parts(dict(r) | {"framework_version": SYNC_PATH_VERSION})
        if q is None:
            print(f"   {r['id']}: failed")
            continue
        print(f"   {r['id'][:40]:40s} as given {100 * (p['predicted'] / p['measured'] - 1):+5.1f}%"
              f" (comm {p['comm']:.1f} s); synchronous "
              f"{100 * (q['predicted'] / q['measured'] - 1):+5.1f}% (comm {q['comm']:.1f} s)")
    print("\nDeepSpeed v0.6.2 prefetch gate, replayed (gathers per step the compute waits for):")
    for r in family_rows(ROOT / "benchmarks" / "training_deepspeed.csv"):
        if r["zero_stage"] == "3":
            replay_row(r)
    prefetch_2021()


if __name__ == "__main__":
    main(sys.argv[1:])
