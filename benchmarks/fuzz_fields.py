"""Fourth input-robustness sweep (2026-11-25, 18th session, robust4): one field at a time.

fuzz_sweep.py walks config fields on three small bases, fuzz_struct.py breaks the *shape* of
files, fuzz_rows.py writes 1-3 random odd cells into rows. This sweep takes the angles they
left: every column of a format-v2 file set, alone, to each boundary value; whole-file oddities
per format (each required column missing, ids repeated, BOM, CRLF, odd kernel kinds and
collectives); each field of every example config mutated with field-specific values (schedule
names, layout strings, framework versions as releases, tags and dates); GPU and cluster files
for hardware that does not exist; every parallel field through ``--set`` of search, plan,
sweep, goodput and export; pairs of settings each valid alone but not together; and 1e6-GPU
runs under a 30 s wall limit.

    python benchmarks/fuzz_fields.py [--seed 0] [--n 200] [--only columns,files,examples,
                                      hardware,cmdline,joint,huge] [--every]

Each input ends as ``ok`` (a sane result), ``clean`` (one clear error line; the CLI exits 2),
``crash`` (a traceback, an internal error, a multi-line or bare-Python message, a non-finite
or insane result) or ``hang`` (over the wall limit). Prints the counts per surface, each crash
or hang class with its first input; exit 1 if any.
"""
from __future__ import annotations

import argparse
import collections
import copy
import csv
import io
import json
import math
import os
import random
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_checks import classify, deadline
from fuzz_fields_cases import CLUSTER_VALUES, FIELD_VALUES, GPU_FIELD_VALUES, JOINT
from fuzz_rows import UNCLEAR

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src/trainsim/data/validation"
EXAMPLES = ROOT / "examples"
WALL_S = 30
"""Every input must end within this many seconds (the brief's bound for 1e6-GPU runs)."""


class Hang(BaseException):
    """Raised by the alarm; a BaseException so no ``except Exception`` in trainsim eats it."""


# ----------------------------------------------------------------------------- outcomes

def _unclear(msg: str) -> str | None:
    if msg.startswith("internal error"):
        return msg.split(" (a trainsim bug")[0][:90]
    if "\n" in msg.strip():
        return "multi-line error"
    if len(msg) < 12 or msg[0] in "'\"" or any(u in msg for u in UNCLEAR) or "Traceback" in msg:
        return f"unclear error: {msg[:80]}"
    return None


def _finite_json(text: str) -> bool:
    return not any(w.strip('",:[]{}') in ("NaN", "Infinity", "-Infinity") for w in text.split())


def cli(args: list[str]) -> str:
    """Run the command line in-process: 'ok', 'clean' or a crash class."""
    from click.testing import CliRunner

    from trainsim.cli import main
    from trainsim.limits import DEFAULTS
    env = {"TRAINSIM_DEBUG": "1", **dict.fromkeys(DEFAULTS)}
    res = CliRunner().invoke(main, args, env=env)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        if isinstance(res.exception, Hang):
            raise res.exception
        return "crash: " + classify(res.exception)
    if "Traceback" in res.output:
        return "crash: traceback in output"
    if res.exit_code == 0:
        if not _finite_json(res.stdout):
            return "crash: non-finite number in output"
        if args[0] == "validate" and "--format" in args and "json" in args:
            return _validate_rows(res.stdout)
        return "ok"
    if res.exit_code == 1 and args[0] == "plan" and "meets the deadline" in res.output:
        return "clean"
    lines = [ln for ln in res.stderr.splitlines() if ln.strip() and not ln.startswith("warning:")]
    if res.exit_code != 2:
        return f"crash: exit {res.exit_code} {(lines or [''])[-1][:70]}"
    if len(lines) != 1 or not lines[0].startswith("error: "):
        return "crash: not one error line"
    bad = _unclear(lines[0][7:])
    return f"crash: {bad}" if bad else "clean"


def _validate_rows(stdout: str) -> str:
    """A validate run's JSON: each row a finite positive prediction or one clear error."""
    rows = json.loads(stdout)["rows"]
    errors = 0
    for r in rows:
        if r.get("error"):
            bad = _unclear(str(r["error"]))
            if bad:
                return f"crash: row {bad}"
            errors += 1
        elif not (isinstance(r.get("predicted"), (int, float)) and r["predicted"] > 0):
            return f"crash: row prediction {r.get('predicted')!r}"
    return "clean" if errors and errors == len(rows) else "ok"


def row(cells: dict[str, str]) -> str:
    """Predict one training row alone (``validate._guarded``, the analytic pricer)."""
    import functools

    from trainsim.validate import _guarded, predict_training_row
    res = _guarded(functools.partial(predict_training_row, compute_db=None), cells)
    if res.error is not None:
        bad = _unclear(res.error)
        return f"crash: {bad}" if bad else "clean"
    p = res.predicted
    if not (p is not None and math.isfinite(p) and p > 0):
        return f"crash: prediction {p!r}"
    if res.predicted_memory_gib is not None and not math.isfinite(res.predicted_memory_gib):
        return f"crash: memory {res.predicted_memory_gib!r}"
    return "ok"


def simulated(cfg: dict) -> str:
    """Build and simulate a config dict in-process (fuzz_checks' sanity checks)."""
    from fuzz_checks import sane_result

    from trainsim.catalog import run_config_from_dict
    from trainsim.simulator import simulate
    result = simulate(run_config_from_dict(copy.deepcopy(cfg)))
    bad = sane_result(result)
    return f"crash: insane result: {bad}" if bad else "ok"


def outcome(thunk: Callable[[], str]) -> str:
    from trainsim.errors import TrainsimError
    try:
        with deadline(WALL_S, Hang):
            return thunk()
    except Hang:
        return "hang"
    except TrainsimError as exc:
        bad = _unclear(str(exc))
        return f"crash: {bad}" if bad else "clean"
    except Exception as exc:  # noqa: BLE001 - the thing being looked for
        return "crash: " + classify(exc)


# ------------------------------------------------------------------- format v2 columns

BOUNDARY = ["0", "-1", "-0", "1", "99999999999999999999", "1e308", "1e-308", "nan", "NaN", "inf",
            "-inf", "", " ", "\t8\t", "x", "\uff11\uff16", "\u0668", "8e0", "True", "None",
            "null", "[]", "8;8", "\u200b8", "8\u00a0", "0.5", "2.5", "=1+1", "'8'", "8 8"]
TEXT = ["", " ", "x", "\u00e9", "\u4e2d\u6587", "[bold]x", "a\"b", "a,b", "a\nb", "\x00",
        "\ufeff", "x" * 2000, "\u202eevil", "null", "0", "-1", "nan"]
COLUMN_VALUES: dict[str, list[str]] = {
    "tied_embeddings": ["0", "1", "2", "yes", "true", "-1", "nan"],
    "attention_dropout": ["0", "0.1", "1", "1.5", "-0.1", "nan", "inf", "1e-300", "x"],
    "hidden_dropout": ["0", "0.1", "1", "1.0000001", "-1e-9", "nan", "x"],
    "measured_iteration_s": ["0", "-1", "nan", "inf", "1e-300", "1e300", "", "x", "1e-5"],
    "measured_peak_memory_gib": ["0", "-1", "nan", "inf", "1e-300", "1e9", "x", "80"],
    "local_batch_size": ["1", "2", "3", "0", "999999"],
    "pipeline_layout": ["Et|(t|)*{L}L", "E|(t|)*{L}L", "Et*{L}L", "(t|)*{L}", "Et|t|tL",
                        "first:{L},last:0", "first:1,last:1", "Et|(tt|)*9999999999L",
                        "E(t|)*{L}L", "Et|(t|)*-{L}L", "ELt", "tE|L"],
    "framework_version": ["26.04.01", "core_r0.12.0", "core_v0.16.0", "2025-02-30",
                          "2024-13-01", "0000-00-00", "9999-12-31", "v", "0.0.0", "1.2.3.4.5",
                          "26.04", "25.11.01", "24.07", "r0.12.0", "1e3", "-26.04", "nightly"],
    "options": ["tp_overlap;;", ";tp_overlap", "TP_OVERLAP", "tp_overlap ;pp_overlap",
                "ep_overlap;fake_balanced_gate;lamb", "all"],
    "source": TEXT, "note": TEXT, "id": TEXT,
}


def column_values(col: str, base: dict[str, str]) -> list[str]:
    vals = COLUMN_VALUES.get(col)
    if vals is None:
        from fuzz_rows import CELLS
        vals = CELLS.get(col, []) + BOUNDARY
    layers = base.get("num_layers") or "4"
    return [v.replace("{L}", layers) for v in vals]


def _published(name: str) -> list[dict[str, str]]:
    from trainsim.validate import read_rows
    return read_rows(DATA / name)[1]


def column_cases(rng: random.Random, work: Path, n: int) -> Iterator[tuple[str, Callable]]:
    """One column of one row set to one value: a small row, an MoE row and published rows."""
    from fuzz_rows import BASES
    pub = _published("training_public.csv")
    cols = list(pub[0]) + ["local_batch_size"]
    bases = [("tiny", BASES["dense"]), ("moe", BASES["moe"]), ("pipe", BASES["pipe"])]
    bases += [(r["id"], r) for r in rng.sample(pub, 6)]
    space = [(b, c, v) for b in range(len(bases)) for c in cols
             for v in column_values(c, bases[b][1])]
    for i, (b, c, v) in enumerate(rng.sample(space, min(n, len(space)))):
        name, base = bases[b]
        cells = {**base, c: v}
        if c.startswith("measured_"):  # read_rows refuses these before any row is predicted
            path = work / f"m{i}.csv"
            path.write_text(_csv([cells], list(cells)), encoding="utf-8")
            yield f"{name} {c}={v!r} (file)", (lambda p=str(path): cli(
                ["validate", p, "--format", "json", "--compute-db", "none"]))
            continue
        yield f"{name} {c}={v!r}", (lambda r=cells: row(r))


# ------------------------------------------------------------------------- whole files

def _csv(rows: list[dict[str, str]], cols: list[str], sep: str = ",", eol: str = "\n") -> str:
    out = io.StringIO()
    w = csv.DictWriter(out, cols, extrasaction="ignore", delimiter=sep, lineterminator=eol)
    w.writeheader()
    w.writerows(rows)
    return out.getvalue()


KERNEL_KINDS = ["gemm", "GEMM", "gemm ", "attention", "attention_fwd_bwd_bwd", "moe_block",
                "memory_bound", "conv2d", "", "all_reduce", "gemm;attention_fwd", "\u00e9"]
COLLECTIVES = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast",
               "send_recv", "allreduce", "ALL_REDUCE", "", "x", "reduce"]
ALGORITHMS = ["ring", "tree", "nvls", "auto", "collnet", "", "x", "RING", "nvls_tree"]


def file_variants(rng: random.Random) -> Iterator[tuple[str, str]]:
    """(label, file text) for whole-file oddities of the three formats."""
    train = [r for r in _published("training_public.csv")][:60]
    rows = rng.sample(train, 2)
    cols = list(rows[0])
    from trainsim.validate.row_settings import TRAINING_REQUIRED
    for c in TRAINING_REQUIRED:
        yield f"training without {c}", _csv(rows, [x for x in cols if x != c])
    yield "training ids repeated", _csv([rows[0], {**rows[1], "id": rows[0]["id"]}], cols)
    yield "training ids empty", _csv([{**r, "id": ""} for r in rows], cols)
    yield "training extra columns", _csv([{**r, "zzz": "1", "tp2": "8"} for r in rows],
                                         cols + ["zzz", "tp2"])
    yield "training BOM", "\ufeff" + _csv(rows, cols)
    yield "training CRLF", _csv(rows, cols, eol="\r\n")
    yield "training CR", _csv(rows, cols, eol="\r")
    yield "training header upper", _csv(rows, cols).replace("tp,pp", "TP,PP", 1)
    yield "training header spaces", _csv(rows, cols).replace(",tp,", ", tp ,", 1)
    yield "training header doubled tp", _csv(rows, cols).replace(",tp,", ",tp,tp,", 1)
    yield "training semicolons", _csv(rows, cols, sep=";")
    yield "training tabs", _csv(rows, cols, sep="\t")
    yield "training only header", _csv([], cols)
    yield "training header twice", _csv(rows, cols) + _csv(rows, cols)
    yield "training blank lines", _csv(rows, cols).replace("\n", "\n\n")
    yield "training trailing comma", _csv(rows, cols).replace("\n", ",\n")
    yield "training kernel columns too", _csv(rows, cols + ["kind", "m", "n", "k"])
    yield "training quoted newline cell", _csv([{**rows[0], "note": "a\nb"}], cols)
    yield "training 100 rows of one", _csv([rows[0]] * 100, cols)  # linear: ~0.1 s a row
    kern = _published("kernels_published.csv")
    krows = rng.sample(kern, 3)
    kcols = list(krows[0])
    for kind in KERNEL_KINDS:
        yield f"kernels kind={kind!r}", _csv([{**r, "kind": kind} for r in krows], kcols)
    for c in ("kind", "gpu", "measured_value", "measured_unit", "m", "dtype"):
        yield f"kernels without {c}", _csv(krows, [x for x in kcols if x != c])
    yield "kernels BOM CRLF", "\ufeff" + _csv(krows, kcols, eol="\r\n")
    coll = _published("collectives_public.csv")
    ccols = list(coll[0])
    for c in COLLECTIVES:
        yield f"collectives collective={c!r}", _csv([{**coll[0], "collective": c}], ccols)
    for a in ALGORITHMS:
        yield f"collectives algorithm={a!r}", _csv([{**coll[0], "algorithm": a}], ccols)
    for c in ("num_gpus", "gpus_per_node", "nic_gbps_per_gpu", "message_bytes",
              "measured_busbw_GBps"):
        for v in ("0", "-1", "nan", "inf", "1e308", "", "x", "3", "1", "0.5", "1e9"):
            yield f"collectives {c}={v!r}", _csv([{**coll[0], c: v}], ccols)
        yield f"collectives without {c}", _csv(coll[:2], [x for x in ccols if x != c])


def file_cases(rng: random.Random, work: Path, n: int) -> Iterator[tuple[str, Callable]]:
    variants = list(file_variants(rng))
    for i, (label, text) in enumerate(rng.sample(variants, min(n, len(variants)))):
        path = work / f"f{i}.csv"
        path.write_text(text, encoding="utf-8", newline="")
        yield label, (lambda p=str(path): cli(["validate", p, "--format", "json",
                                                "--compute-db", "none"]))


# --------------------------------------------------------------------- example configs

NUMBER = [0, -1, 1, 2, 3, 7, 2**31, 10**6, 10**18, 0.5, 1e-300, 1e300, math.nan, math.inf,
          "1e3", "", None, True, "x", [], {}]


def _paths(doc: dict, prefix: str = "") -> Iterator[tuple[str, object]]:
    for k, v in doc.items():
        p = f"{prefix}{k}"
        if isinstance(v, dict):
            yield from _paths(v, p + ".")
        else:
            yield p, v


def _set(doc: dict, path: str, value) -> dict:
    out = copy.deepcopy(doc)
    *heads, last = path.split(".")
    node = out
    for h in heads:
        if not isinstance(node.get(h), dict):
            node[h] = {} if not isinstance(node.get(h), str) else {"preset": node[h]}
        node = node[h]
    node[last] = value
    return out


def _values_for(path: str, old, layers: int) -> list:
    vals = FIELD_VALUES.get(path)
    if vals is None:
        if isinstance(old, bool):
            vals = [not old, None, "x", 2, "yes"]
        elif isinstance(old, (int, float)):
            vals = NUMBER + [old * 2, old + 1, max(1, old // 2), -old]
        elif isinstance(old, list):
            vals = [[], ["x"], old + old, old[:1], "x", None]
        else:
            vals = ["", "x", None, 1, "\u00e9", "X" * 300]
    return [v.replace("{L}", str(layers)).replace("{H}", str(max(1, layers // 2)))
            if isinstance(v, str) else v for v in vals]


def example_cases(rng: random.Random, work: Path, n: int) -> Iterator[tuple[str, Callable]]:
    """Each field of each example config (and the newest fields) set alone to odd values."""
    space = []
    for ex in sorted(EXAMPLES.glob("*.yaml")):
        doc = yaml.safe_load(ex.read_text())
        if "peak_tflops" in doc:
            continue
        layers = 8
        for path, old in list(_paths(doc)) + [(p, None) for p in FIELD_VALUES]:
            if path.startswith("reliability."):
                continue
            for v in _values_for(path, old, layers):
                space.append((ex.name, path, v))
    for i, (name, path, v) in enumerate(rng.sample(space, min(n, len(space)))):
        doc = _set(yaml.safe_load((EXAMPLES / name).read_text()), path, v)
        doc.setdefault("cluster", {})
        if isinstance(doc["cluster"], dict):
            doc["cluster"].setdefault("compute_db", None)
        f = work / f"ex{i}.yaml"
        f.write_text(yaml.safe_dump(doc, allow_unicode=True))
        cmd = "goodput" if name.startswith("goodput") else "simulate"
        args = [cmd, str(f), "--format", "json"] + (["--trials", "20"] if cmd == "goodput" else [])
        yield f"{name} {path}={v!r}", (lambda a=args: cli(a))


# ------------------------------------------------------------------------------ hardware

def hardware_cases(rng: random.Random, work: Path, n: int) -> Iterator[tuple[str, Callable]]:
    """A GPU file or a cluster no one sells, for simulate (cluster.gpu) and search/plan --gpu."""
    spec = yaml.safe_load((EXAMPLES / "gpu-hypothetical.yaml").read_text())
    from fuzz_checks import DENSE
    space = [("gpu", k, v) for k, vs in GPU_FIELD_VALUES.items() for v in vs]
    space += [("gpu-drop", k, None) for k in spec]
    space += [("cluster", k, v) for k, vs in CLUSTER_VALUES.items() for v in vs]
    picks = [rng.choice(space) for _ in range(n)]
    for i, (kind, key, v) in enumerate(picks):
        gpu = dict(spec)
        cfg = copy.deepcopy(DENSE)
        if kind == "gpu":
            gpu[key] = v
        elif kind == "gpu-drop":
            gpu.pop(key)
        else:
            cfg["cluster"][key] = v
        f = work / f"gpu{i}.yaml"
        f.write_text(yaml.safe_dump(gpu))
        cfg["cluster"]["gpu"] = gpu  # a config takes the spec inline (a mapping)
        c = work / f"hw{i}.yaml"
        c.write_text(yaml.safe_dump(cfg))
        how = rng.choice(["simulate", "simulate", "search", "plan"])
        if how == "simulate":
            args = ["simulate", str(c), "--format", "json"]
        elif how == "search":
            args = ["search", "gpt-1.7b", "--gpu", str(f), "--gpus", "8", "--global-batch", "16",
                    "--seq", "512", "--workers", "1", "--format", "json"]
        else:
            args = ["plan", "gpt-1.7b", "--gpu", str(f), "--tokens", "1B", "--days", "1",
                    "--max-gpus", "64", "--seq", "512", "--workers", "1", "--format", "json"]
        yield f"{how} {kind}.{key}={v!r}", (lambda a=args: cli(a))


# ---------------------------------------------------------------------- command lines

ODD = ["0", "-1", "3", "7", "1e9", "99999999999", "1.5", "nan", "inf", "", "x", "null", "[]",
       "true", "{}", "'4'", "\u0668", "2**3"]


def cmdline_cases(rng: random.Random, work: Path, n: int) -> Iterator[tuple[str, Callable]]:
    """search/plan/sweep/goodput/export with ``--set parallel.F=odd`` for every parallel field."""
    import dataclasses

    from fuzz_checks import DENSE, MOE

    from trainsim.config.parallel import ParallelConfig
    fields = [f.name for f in dataclasses.fields(ParallelConfig)]
    fields += ["tp", "pp", "cp", "ep", "vpp", "etp"]
    base = work / "moe.yaml"
    base.write_text(yaml.safe_dump(MOE))
    dense = work / "dense.yaml"
    good = {**copy.deepcopy(DENSE), "reliability": {"failures": "meta-rsc1-a100"}}
    good["training"]["train_tokens"] = 1e9
    dense.write_text(yaml.safe_dump(good))
    for _ in range(n):
        field = rng.choice(fields)
        value = rng.choice(ODD + FIELD_VALUES.get(f"parallel.{field}", [])[:6])
        if value is None:
            value = "null"
        s = ["--set", f"parallel.{field}={value}"]
        cmd = rng.choice(["search", "plan", "sweep", "goodput", "export", "simulate"])
        if cmd == "search":
            args = ["search", "mixtral-8x7b" if rng.random() < 0.3 else "gpt-1.7b", "--gpus",
                    rng.choice(["8", "16"]), "--global-batch", "16", "--seq", "512",
                    "--workers", "1", "--top", "2", *s]
        elif cmd == "plan":
            args = ["plan", "gpt-1.7b", "--tokens", "1B", "--days", "1", "--max-gpus", "32",
                    "--seq", "512", "--workers", "1", *s]
        elif cmd == "sweep":
            args = ["sweep", str(base), "--vary", "cluster.nvlink_gbyte_s=300,900", *s]
        elif cmd == "goodput":
            args = ["goodput", str(dense), "--trials", "10", *s]
        elif cmd == "export":
            args = ["export", str(dense), "--simai", str(work / "w.txt"), *s]
        else:
            args = ["simulate", str(rng.choice([base, dense])), *s]
        if cmd != "export":
            args += ["--format", "json"]
        yield " ".join(a if a and " " not in a else repr(a) for a in args), (
            lambda a=args: cli(a))


# --------------------------------------------------------------- jointly impossible pairs

def joint_cases(rng: random.Random, work: Path, n: int) -> Iterator[tuple[str, Callable]]:
    """Each jointly impossible pair alone, then random merges of two or three of them."""
    from fuzz_checks import DENSE, MOE
    bases = {"dense": DENSE, "moe": MOE}
    names = sorted(JOINT)
    picks = [[k] for k in names] + [rng.sample(names, rng.randint(2, 3))
                                    for _ in range(max(0, n - len(names)))]
    for pick in picks[:n]:
        cfg = copy.deepcopy(bases[JOINT[pick[0]][0]])
        for k in pick:
            for section, fields in JOINT[k][1].items():
                cfg[section].update(fields)
        if rng.random() < 0.3:  # the same as a file through the command line
            f = work / f"j{len(pick)}.yaml"
            f.write_text(yaml.safe_dump(cfg))
            yield " + ".join(pick) + " (cli)", (lambda p=str(f): cli(["simulate", p, "--format",
                                                                      "json"]))
        else:
            yield " + ".join(pick), (lambda c=cfg: simulated(c))


# --------------------------------------------------------------------------- huge runs

def huge_cases(rng: random.Random, work: Path, n: int) -> Iterator[tuple[str, Callable]]:
    """A million GPUs (and more) with tight deadlines: each must end within WALL_S."""
    from fuzz_checks import DENSE, MOE
    cfgs = []
    for base, gpus, gbs in ((DENSE, 10**6, 10**6), (DENSE, 10**6, 2 * 10**6),
                            (MOE, 10**6, 4 * 10**6), (DENSE, 2**20, 2**20), (DENSE, 10**7, 10**7),
                            (DENSE, 10**6, 10**9)):
        cfg = copy.deepcopy(base)
        cfg["cluster"]["num_gpus"] = gpus
        cfg["training"]["global_batch_size"] = gbs
        cfg["training"]["train_tokens"] = 1e13
        cfg["reliability"] = {"failures": "meta-rsc1-a100"}
        f = work / f"huge{len(cfgs)}.yaml"
        f.write_text(yaml.safe_dump(cfg))
        cfgs.append(str(f))
    m = "1000000"
    cases = [["simulate", cfgs[0], "--format", "json"], ["simulate", cfgs[2], "--format", "json"],
             ["simulate", cfgs[4], "--format", "json"], ["simulate", cfgs[5], "--format", "json"],
             ["search", "gpt-1.7b", "--gpus", m, "--global-batch", m, "--seq", "512",
              "--workers", "1", "--format", "json"],
             ["search", "llama3-8b", "--gpus", m, "--global-batch", "2000000", "--seq", "8192",
              "--workers", "1", "--format", "json"],
             # an MoE search is ~100 s at any scale on one worker (1,024 GPUs too): one split
             ["search", "mixtral-8x7b", "--gpus", "1000000,2000000", "--global-batch", "4000000",
              "--seq", "4096", "--tp", "4", "--pp", "8", "--ep", "8", "--max-vpp", "2",
              "--recompute", "none", "--zero", "1", "--workers", "1", "--format", "json"],
             ["search", "gpt-1.7b", "--gpus", "999983", "--global-batch", "999983", "--seq",
              "512", "--workers", "1", "--format", "json"],
             ["plan", "gpt-1.7b", "--tokens", "1e18", "--days", "0.0001", "--max-gpus", m,
              "--seq", "512", "--workers", "1", "--format", "json"],
             ["plan", "llama3-70b", "--tokens", "1e16", "--days", "0.01", "--max-gpus", "10000000",
              "--workers", "1", "--format", "json"],
             ["sweep", cfgs[0], "--vary", "cluster.num_gpus=1000000,2000000", "--format", "json"],
             ["sweep", cfgs[1], "--vary", "training.global_batch_size=2000000:20000000",
              "--steps", "3", "--format", "json"],
             ["goodput", cfgs[0], "--trials", "5", "--format", "json"],
             ["goodput", cfgs[3], "--days", "1", "--trials", "5", "--format", "json"],
             ["goodput", cfgs[0], "--gpus", "10000000", "--trials", "5", "--format", "json"],
             ["export", cfgs[0], "--simai", str(work / "h.txt")],
             ["export", cfgs[0], "--chakra", str(work / "h"), "--ranks", "0"],
             ["export", cfgs[3], "--gpus", m, "--chakra", str(work / "h2"), "--ranks", "0,999999"],
             ["collective", "--gpus", m, "--format", "json"],
             ["collective", "--gpus", m, "--backend", "flow", "--sizes", "8:1G", "--format",
              "json"],
             ["collective", "--gpus", m, "--op", "all_to_all", "--topology", "torus",
              "--backend", "flow", "--format", "json"]]
    for args in rng.sample(cases, min(n, len(cases))):
        yield " ".join(args), (lambda a=args: cli(a))


SURFACES = {"columns": column_cases, "files": file_cases, "examples": example_cases,
            "hardware": hardware_cases, "cmdline": cmdline_cases, "joint": joint_cases,
            "huge": huge_cases}


def run(seed: int, n: int, only: set[str]) -> dict:
    counts: dict[str, collections.Counter] = {}
    failures: dict[str, list[str]] = collections.defaultdict(list)
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        for surface, make in SURFACES.items():
            if only and surface not in only:
                continue
            c = counts.setdefault(surface, collections.Counter())
            for label, thunk in make(rng, Path(tmp), n):
                got = outcome(thunk)
                kind = got.split(":")[0]
                c[kind] += 1
                if kind in ("crash", "hang"):
                    failures[f"{surface}: {got}"].append(label)
    return {"counts": counts, "failures": failures}


def report(out: dict, every: bool = False) -> int:
    for cls, labels in sorted(out["failures"].items(), key=lambda kv: -len(kv[1])):
        print(f"{len(labels):5d}  {cls}")
        for label in labels if every else labels[:1]:
            print(f"       e.g. {label[:300]}")
    total: collections.Counter = collections.Counter()
    for surface, c in out["counts"].items():
        total.update(c)
        print(f"{surface:9s} " + " ".join(f"{k} {c[k]}" for k in ("ok", "clean", "crash", "hang")))
    print(f"{'total':9s} " + " ".join(f"{k} {total[k]}" for k in ("ok", "clean", "crash", "hang")))
    return 1 if out["failures"] else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n", type=int, default=200, help="inputs per surface (at most)")
    p.add_argument("--only", default="", help="comma-separated surfaces: " + ",".join(SURFACES))
    p.add_argument("--every", action="store_true", help="print every failing input")
    a = p.parse_args(argv)
    return report(run(a.seed, a.n, set(filter(None, a.only.split(",")))), a.every)


if __name__ == "__main__":
    sys.exit(main())
