"""Fifth input-robustness sweep (2026-11-25, 19th session, fuzz5): random valid combinations
of every dimension at once, and invariants of what comes back.

The earlier sweeps (fuzz_sweep, fuzz_struct, fuzz_rows, fuzz_fields) mutate one field, one
cell or one file at a time around a few bases. This one draws whole runs: a catalog model or
random dims (dense, MoE, MLA), tp / pp / cp / ep / etp / vpp, a pipeline schedule and layout,
recompute kind, modules and layers, a ZeRO stage per data-parallel engine, fp8 recipes,
attention kernels, MoE dispatchers and capacity factors, overlaps, a framework and version,
every catalog GPU and odd cluster shapes (1-72 GPUs a node, 1 GPU, GPUs not a multiple of a
node). Each drawn run must end in a result or one clean ``TrainsimError`` line; a result must
hold the invariants:

- iteration time finite and > 0; memory finite and > 0; MFU and HFU in (0, 1], or up to 2
  where causal attention dominates (``MAX_UTILIZATION``);
- the breakdown (compute, exposed comm, bubble, optimizer, other) sums to the iteration time
  (``Result.breakdown``'s docstring), each part finite and >= 0;
- determinism: the same input simulated twice gives the same ``to_dict()``;
- monotonic sanity: doubling the data-parallel GPUs at a fixed global batch does not increase
  the compute and optimizer time per GPU;
- no silently changed setting: each parallel / training field given reads back as given.

    python benchmarks/fuzz_combos.py [--seed 0] [--n 200] [--only simulate,cli] [--every]

Exit 1 on any failure class (printed with its first input as JSON, to replay with
``--replay 'JSON'``).
"""
from __future__ import annotations

import argparse
import collections
import copy
import itertools
import json
import math
import os
import random
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_checks import classify, deadline
from fuzz_combos_draw import GPUS, REFUSALS, ROOT, _dims, valid_run

from trainsim.catalog import run_config_from_dict
from trainsim.errors import TrainsimError
from trainsim.simulator import simulate

WALL_S = 60
REL = 1e-9
MAX_UTILIZATION = 2.0
"""MFU and HFU count causal attention unhalved (DESIGN.md: 12·l·h·s per token, as PaLM and
Megatron do), while a fused kernel skips the masked half: a run whose time is almost all
causal attention (a 64-wide model at 131,072 tokens: MFU 0.96, HFU 1.02 with recompute, at
about half the executed-FLOP peak) can pass 1, never 2."""


class Hang(BaseException):
    """Raised by the alarm; a BaseException so no ``except Exception`` in trainsim eats it."""


# ------------------------------------------------------------------------------ checks

def invariants(result) -> str | None:
    """What is wrong with a result, or None."""
    t = result.iteration_time_s
    if not (isinstance(t, float) and math.isfinite(t) and t > 0):
        return f"iteration time {t!r}"
    for name in ("mfu", "hfu"):
        v = getattr(result, name)
        if not (math.isfinite(v) and 0 < v <= MAX_UTILIZATION):
            return f"{name} outside (0, {MAX_UTILIZATION}]"
    mem = result.peak_memory_bytes
    if not (math.isfinite(mem) and mem > 0):
        return f"peak memory {mem!r}"
    for k, v in result.breakdown.items():
        if not (math.isfinite(v) and v >= -REL * t):
            return f"breakdown {k} negative or not finite"
    total = sum(result.breakdown.values())
    if not math.isclose(total, t, rel_tol=1e-6):
        return "breakdown does not sum to the iteration time"
    if not (math.isfinite(result.tokens_per_s) and result.tokens_per_s > 0):
        return "tokens/s"
    return None


def read_back(cfg: dict, rc) -> str | None:
    """A parallel or training setting given in ``cfg`` that the built config holds otherwise
    (silently changed or ignored), or None. Spellings the builder normalizes are compared
    after normalizing (schedule names, module lists as tuples)."""
    from trainsim.config.parallel import ALIASES, schedule_name

    for section in ("parallel", "training"):
        for key, given in cfg.get(section, {}).items():
            full = ALIASES.get(key, key) if section == "parallel" else key
            got = getattr(getattr(rc, section), full)
            if key == "pipeline_schedule" and given is not None:
                given = schedule_name(given)
            if key == "sequence_parallel" and rc.parallel.tp == 1:
                continue  # Megatron turns it off at tp 1 (ParallelConfig says so)
            if key == "attention" and given == "sdpa":
                continue  # the kernel torch's SDPA runs on this GPU (profile sdpa_by_arch)
            if isinstance(given, list):
                given, got = sorted(given), sorted(got or ())
            if given != got:
                return f"{section}.{key}={given!r} read back as {got!r}"
    return None


def _simulate(cfg: dict):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return simulate(run_config_from_dict(copy.deepcopy(cfg)))


def doubled(cfg: dict) -> dict:
    """The same run on twice the data-parallel GPUs at the same global batch."""
    out = copy.deepcopy(cfg)
    out["cluster"]["num_gpus"] *= 2
    return out


def check_run(cfg: dict, deep: bool = True) -> str | None:
    """None if ``cfg`` ends in a sane result or one clean error line, else the failure."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            changed = read_back(cfg, run_config_from_dict(copy.deepcopy(cfg)))
        if changed:
            return "silently changed: " + changed.split("=")[0]
        a = _simulate(cfg)
    except TrainsimError as exc:
        text = str(exc)
        REFUSALS[text[:60]] += 1
        return "multi-line error" if (not text or "\n" in text.strip()) else None
    REFUSALS["(simulated)"] += 1
    bad = invariants(a)
    if bad or not deep:
        return bad
    b = _simulate(cfg)
    if json.dumps(a.to_dict(), sort_keys=True, default=str) != \
            json.dumps(b.to_dict(), sort_keys=True, default=str):
        return "not deterministic"
    try:
        c = _simulate(doubled(cfg))
    except TrainsimError:
        return None
    if invariants(c):
        return "doubled: " + invariants(c)
    # the step's work moves between parts (a distributed optimizer's step frame zeroes its
    # shard, the rest of the gradient buffer is a compute task: optimizer_tasks.step_tasks)
    # from one rank the first doubling adds the reduction's work: a shard group of one reduces
    # nothing (FSDP2's per-micro-batch copy-in before its reduce-scatter, fsdp2_copies.copy_in;
    # torchtitan applies fully_shard only where dp_shard > 1), so the check starts at two
    work = [r.breakdown["compute_s"] + r.breakdown["optimizer_s"] for r in (a, c)]
    if a.config.shard_ranks > 1 and work[1] > work[0] * (1 + 1e-6):
        return "compute per GPU grows with twice the data-parallel GPUs"
    return None


def outcome(thunk: Callable[[], str | None]) -> str | None:
    try:
        with deadline(WALL_S, Hang):
            return thunk()
    except Hang:
        return "hang"
    except Exception as exc:  # noqa: BLE001 - the thing being looked for
        return classify(exc)


def sweep(seed: int, n: int, deep: bool = True) -> dict[str, list[dict]]:
    """Draw ``n`` runs from ``seed``; the failure classes with the runs that hit them."""
    REFUSALS.clear()  # a module-level tally (fuzz_combos_draw): this sweep's only
    rng = random.Random(seed)
    failures: dict[str, list[dict]] = collections.defaultdict(list)
    counts = collections.Counter()
    for _ in range(n):
        cfg = valid_run(rng)
        bad = outcome(lambda c=cfg: check_run(c, deep))
        counts["failed" if bad else "handled"] += 1
        if bad:
            failures[bad].append(cfg)
    failures["_counts"] = [dict(counts)]
    return failures


# ------------------------------------------------------------------------------ command lines

ODD_CELLS = ["", "0", "-1", "1e308", "nan", "inf", "\u0661\u0662", "８", "2\u200b", "1,5",
             "x" * 300, "\u202e8", "1e-308", "4.0", " 8 ", "true", "None"]
"""Cells written into a validation row (one to three at once)."""


def _cli(args: list[str]):
    """The CLI in-process; a non-TrainsimError escapes (TRAINSIM_DEBUG=1) as itself."""
    from click.testing import CliRunner

    from trainsim.cli import main

    res = CliRunner().invoke(main, args, env={"TRAINSIM_DEBUG": "1", "TRAINSIM_MAX_TASKS": None,
                                              "TRAINSIM_WORKERS": "1"})
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res


def cli_outcome(res, want_json: bool = False) -> str | None:
    """None if the command ended well (exit 0) or in one ``error:`` line (exit 2)."""
    out = res.output
    if "Traceback" in out:
        return "traceback"
    if res.exit_code == 2:
        lines = [ln for ln in res.stderr.splitlines() if ln.strip()
                 and not ln.startswith("warning: ")]
        if len(lines) != 1 or not lines[0].startswith("error: "):
            return "not one error line"
        REFUSALS["(cli refused)"] += 1
        return None
    if res.exit_code != 0:
        return f"exit {res.exit_code}"
    if want_json:
        text = res.stdout
        if "NaN" in text or "Infinity" in text:
            return "NaN or Infinity in the JSON"
        json.loads(text)
    return None


def _field_sets(cfg: dict, rng: random.Random, k: int) -> list[str]:
    """``--set`` arguments: fields of ``cfg`` given again (some to another valid value)."""
    pairs = [(sec, key, val) for sec in ("parallel", "training") for key, val in
             cfg[sec].items() if not isinstance(val, list) and val is not None]
    out = []
    for sec, key, val in rng.sample(pairs, min(k, len(pairs))):
        if isinstance(val, bool):
            val = rng.choice([val, not val])
        elif isinstance(val, int) and rng.random() < 0.3:
            val = rng.choice([1, 2, val * 2])
        text = str(val).lower() if isinstance(val, bool) else str(val)
        out += ["--set", f"{sec}.{key}={text}"]
    return out


def cli_cases(seed: int, n: int, tmp: Path):
    """(label, thunk) per command line: simulate, export, sweep, search, plan and validate
    over drawn runs."""
    rng = random.Random(seed)
    for i in range(n):
        cfg = valid_run(rng)
        path = tmp / f"run{i}.yaml"
        path.write_text(yaml.safe_dump(cfg))
        sets = _field_sets(cfg, rng, rng.randint(0, 3))
        small = cfg["cluster"]["num_gpus"] <= 64
        yield (f"simulate {json.dumps(cfg)} {sets}",
               lambda p=path, s=sets: simulate_outcome(p, s))
        if small:
            yield (f"export {json.dumps(cfg)}", lambda p=path, s=sets: cli_outcome(_cli(
                ["export", str(p), *s, "--simai", str(tmp / "w.txt"),
                 "--chakra", str(tmp / "et"), "--ranks", "0", "--max-tasks", "200000"])))
        vary = rng.choice(["cluster.num_gpus=1,2,7,16", "training.micro_batch_size=1,2,3",
                           "parallel.tp=1,2,4", "training.seq_length=1024:8192",
                           "cluster.gpus_per_node=1,8,72", "parallel.pp=1,2",
                           "parallel.pipeline_schedule=1f1b,zb_v,dualpipe,interleaved_1f1b",
                           "parallel.recompute=none,full", "parallel.zero_stage=0,1,2,3",
                           "training.dtype=bf16,fp8", "cluster.gpu=" + ",".join(GPUS[:4])])
        yield (f"sweep {json.dumps(cfg)} {vary}", lambda p=path, v=vary, s=sets: cli_outcome(
            _cli(["sweep", str(p), "--vary", v, *s, "--format", "json"]), want_json=True))
        if i % 4 == 0:
            model = cfg["model"].get("preset") or _model_file(cfg, tmp / f"m{i}.yaml")
            args = ["search", model, "--gpus", str(rng.choice([1, 2, 8, 12, 16])), "--seq",
                    str(rng.choice([512, 2048, 4096])), "--global-batch",
                    str(rng.choice([16, 48, 64])), "--workers", "1", "--top", "3",
                    "--gpu", rng.choice(GPUS), "--gpus-per-node", str(rng.choice([1, 4, 8, 72])),
                    "--tp", rng.choice(["1", "1,2", "2,4"]), "--pp", rng.choice(["1", "1,2"]),
                    "--format", "json", *_search_sets(sets, rng)]
            if "num_experts" in _dims(cfg["model"]):
                args += ["--ep", rng.choice(["1", "2"]), "--dispatcher", "alltoall"]
            if rng.random() < 0.3:
                args += ["--schedules", rng.choice(["1f1b", "zb_v,1f1b", "dualpipe_v",
                                                    "interleaved_1f1b", "gpipe"])]
            if rng.random() < 0.3:
                args += ["--reference", rng.choice(["tp=1,pp=1", "tp=2,pp=2,vpp=2",
                                                    "tp=1,pp=2,zero=1", "tp=4"])]
            yield (f"search {args}", lambda a=args: search_outcome(a))
        if i % 8 == 0:
            model = cfg["model"].get("preset") or _model_file(cfg, tmp / f"m{i}.yaml")
            args = ["plan", model, "--tokens", rng.choice(["1B", "15T", "1e9", "100"]),
                    "--days", str(rng.choice([0.01, 30, 1e6])), "--max-gpus",
                    str(rng.choice([8, 64, 1024])), "--gpu", rng.choice(GPUS), "--workers", "1",
                    "--format", "json", "--tp", rng.choice(["1,2", "8"]), "--pp", "1,2",
                    "--gpus-per-node", str(rng.choice([1, 8, 72]))]
            yield (f"plan {args}", lambda a=args: cli_outcome(_cli(a), want_json=True))


def simulate_outcome(path: Path, sets: list[str]) -> str | None:
    """simulate's outcome, and each ``--set`` read back in its JSON's resolved config (the
    parallel sizes under their full names, schedule names as trainsim names them)."""
    from trainsim.config.parallel import ALIASES, schedule_name

    res = _cli(["simulate", str(path), *sets, "--format", "json"])
    bad = cli_outcome(res, want_json=True)
    if bad or res.exit_code:
        return bad
    config = json.loads(res.stdout)["config"]
    for item in sets[1::2]:
        key, _, text = item.partition("=")
        section, name = key.split(".")
        name = ALIASES.get(name, name) if section == "parallel" else name
        want, got = yaml.safe_load(text), config[section][name]
        if name == "pipeline_schedule" and want is not None:
            want = schedule_name(str(want))
        if name == "sequence_parallel" and config["parallel"]["tensor_model_parallel_size"] == 1:
            continue  # Megatron turns it off at tp 1 (ParallelConfig says so)
        if name == "attention" and want == "sdpa":
            continue  # the kernel torch's SDPA runs on this GPU (profile sdpa_by_arch)
        if want != got and str(want) != str(got):  # a version 24.07 is kept as written
            return f"--set {section}.{name} read back otherwise"
    return None


SHOWN = {"tp": "tp", "pp": "pp", "cp": "cp", "ep": "ep", "recompute": "recompute",
         "pipeline_schedule": "pipeline_schedule",
         **{k: k for k in ("overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap",
                           "overlap_p2p_comm", "moe_overlap_ep_comm", "sequence_parallel")}}
"""--set parallel.K fields a search's JSON shows in each candidate's config (under that key)."""


def search_outcome(args: list[str]) -> str | None:
    """A search's outcome, and each ``--set parallel.K=V`` it was given held by every ranked
    candidate (a switch set off stays off; a size stays that size)."""
    res = _cli(args)
    bad = cli_outcome(res, want_json=True)
    if bad or res.exit_code:
        return bad
    out = json.loads(res.stdout)
    for flag, value in itertools.pairwise(args):
        if flag != "--set" or not value.startswith("parallel."):
            continue
        key, _, text = value[len("parallel."):].partition("=")
        if key not in SHOWN or (text == "true" and key != "sequence_parallel"):
            continue  # a switch set on stays off where it cannot matter
        for row in out.get("top", []):
            if key == "sequence_parallel" and row["config"]["tp"] == 1:
                continue  # Megatron turns it off at tp 1
            got = row["config"].get(SHOWN[key])
            if str(got).lower() != text.lower() and not (got is None and text == "1f1b"):
                return f"--set parallel.{key} not held by a ranked candidate"
    return None


def _search_sets(sets: list[str], rng: random.Random) -> list[str]:
    """The drawn ``--set`` pairs a search keeps fixed (not the searched sizes)."""
    searched = ("parallel.tp=", "parallel.pp=", "parallel.cp=", "parallel.ep=", "parallel.vpp=")
    out = []
    for flag, value in zip(sets[::2], sets[1::2]):
        if not value.startswith(searched) and rng.random() < 0.7:
            out += [flag, value]
    return out


def _model_file(cfg: dict, path: Path) -> str:
    path.write_text(yaml.safe_dump(cfg["model"]))
    return str(path)


def validate_cases(seed: int, n: int, tmp: Path):
    """Rows of the bundled public file with 1-3 odd cells each, files with a dropped column,
    repeated ids and CRLF line ends, all at once."""
    import csv
    import io

    src = ROOT / "src/trainsim/data/validation/training_public.csv"
    if not src.exists():
        return
    rows = list(csv.DictReader(io.StringIO(src.read_text())))
    header = list(rows[0])
    rng = random.Random(seed)
    for i in range(n):
        picked = [dict(r) for r in rng.sample(rows, 3)]
        for row in picked:
            for col in rng.sample(header, rng.randint(1, 3)):
                row[col] = rng.choice(ODD_CELLS)
        cols = list(header)
        if rng.random() < 0.2:
            cols.remove(rng.choice([c for c in cols if c not in ("id",)]))
        if rng.random() < 0.2:
            picked.append(dict(picked[0]))
        buf = io.StringIO()
        w = csv.DictWriter(buf, cols, extrasaction="ignore",
                           lineterminator="\r\n" if rng.random() < 0.3 else "\n")
        w.writeheader()
        w.writerows(picked)
        path = tmp / f"v{i}.csv"
        path.write_text(buf.getvalue(), encoding="utf-8")
        yield (f"validate {buf.getvalue()[:3000]!r}",
               lambda p=path: cli_outcome(_cli(["validate", str(p), "--format", "json"])))


def run_cli(seed: int, n: int, only: set[str]) -> dict[str, list[str]]:
    import tempfile

    failures: dict[str, list[str]] = collections.defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        cases = []
        if not only or "cli" in only:
            cases.append(cli_cases(seed, n, Path(tmp)))
        if not only or "validate" in only:
            cases.append(validate_cases(seed, n, Path(tmp)))
        for gen in cases:
            for label, thunk in gen:
                REFUSALS["(cli cases)"] += 1
                bad = outcome(thunk)
                if bad:
                    failures[f"{label.split()[0]}: {bad}"].append(label)
    return failures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--every", action="store_true")
    ap.add_argument("--replay", help="a run as JSON (printed by a failure)")
    ap.add_argument("--only", default="", help="simulate,cli,validate")
    args = ap.parse_args(argv)
    only = {w for w in args.only.split(",") if w}
    if args.replay:
        print(outcome(lambda: check_run(json.loads(args.replay))) or "handled")
        return 0
    out: dict = {"_counts": [{}]}
    if not only or "simulate" in only:
        out = sweep(args.seed, args.n)
    counts = out.pop("_counts")[0]
    if not only or only & {"cli", "validate"}:
        out.update(run_cli(args.seed, max(1, args.n // 10), only))
    for cls, runs in sorted(out.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(runs):5d}  {cls}")
        for run in (runs if args.every else runs[:1]):
            print("       " + json.dumps(run))
    print(f"runs {args.n}: {counts}; failure classes {len(out)}")
    if args.every:
        for text, k in REFUSALS.most_common(25):
            print(f"{k:5d}  {text}")
    else:
        print(", ".join(f"{k} {v}" for k, v in REFUSALS.items() if k.startswith("(")
                        and not k.startswith("(built)")))
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
