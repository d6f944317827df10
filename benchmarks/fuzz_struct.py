"""Structural input fuzzing of the files and bodies a user hands trainsim (2026-11-24, 15th
session): a sibling of fuzz_sweep.py, which walks every *field* with values of its kind. This
one mutates the *shape* of the inputs instead:

- ``yaml``: every example config (examples/*.yaml) with a random node replaced by a value of
  another shape (a list where a scalar goes, a mapping, null, unicode, huge/NaN numbers,
  booleans as text), a key dropped, an unknown key added at any level, a section set to null or
  a list, the whole document a scalar;
- ``text``: the example files' text mangled (a byte-order mark, CRLF, tabs, truncation,
  duplicated lines, a key repeated, a line's indentation changed);
- ``gpu``: the GPU spec example (examples/gpu-hypothetical.yaml) mutated the same way and used
  as ``cluster.gpu``;
- ``csv``: training-validation CSVs built from rows of the public file with cells and columns
  mutated (blank, junk, unknown names, columns missing/extra/renamed, BOM, CRLF, header only);
- ``jsonl``: layer records (layers_h100_measured.jsonl) with fields mutated;
- ``flags``: ``--set``/``--format``/other flags of simulate, catalog, profile (no GPU) with odd
  text;
- ``http``: the service's HTTP API (FastAPI TestClient) with raw bodies that are not the JSON
  it expects.

Each input ends in a handled outcome (exit 0 with finite output, or exit 2 with one
``error: ...`` line) or a failure class, as fuzz_sweep.py counts them (fuzz_checks.outcome).

    python benchmarks/fuzz_struct.py [--seed 0] [--n 300] [--only yaml,text,...]

The command-line and HTTP surfaces (flags, search-opts, sweep-odd, http) are in
fuzz_struct_cli.py beside it.
"""
from __future__ import annotations

import argparse
import copy
import json
import math
import os
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz_struct_cli import flag_cases, http_cases, search_opt_cases, sweep_odd_cases
from fuzz_sweep import _cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.yaml") if "gpu-" not in p.name)
GPU_SPEC = ROOT / "examples" / "gpu-hypothetical.yaml"
SHARED = ROOT / "src" / "trainsim" / "data" / "validation"  # the bundled copies

ODD = [None, [], {}, [1, 2], [[1]], {"a": 1}, {"tp": 2}, "", " ", "x", "\u00e9\u4e2d\U0001f600",
       "\x00", "a\nb", "true", "false", "null", "1e3", "8", "-8", "0x10", True, False, 0, -1,
       1, 2, 3, 1.5, -0.0, 1e-300, 1e300, 10**18, 2**63, float("nan"), float("inf"),
       float("-inf"), "nan", "inf", "1_000", "8 ", [None], [{}], "h100-sxm-80gb", "llama3-8b"]
UNKNOWN_KEYS = ["bogus", "", " ", "TP", "tp ", "\u00e9", "model", "1", "x.y", "parallel"]


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, prefix + (i,))
    return out


def _get(node: Any, path: tuple) -> Any:
    for p in path:
        node = node[p]
    return node


def mutate_tree(rng: random.Random, doc: Any) -> tuple[Any, str]:
    """One structural change of ``doc`` and its description."""
    doc = copy.deepcopy(doc)
    paths = _paths(doc)
    path = rng.choice(paths)
    op = rng.choice(["replace", "replace", "replace", "drop", "add", "wrap", "nullsec", "root"])
    where = ".".join(map(str, path)) or "<root>"
    if op == "root":
        value = rng.choice(ODD + [[doc], "model: x"])
        return value, f"document={value!r}"
    if op == "nullsec" and isinstance(doc, dict) and doc:
        key = rng.choice(list(doc))
        doc[key] = rng.choice([None, [], {}, "", 0, [doc[key]]])
        return doc, f"{key}={doc[key]!r}"[:120]
    if not path:
        path = (rng.choice(list(doc)),) if isinstance(doc, dict) and doc else path
        if not path:
            return doc, "unchanged"
        where = str(path[0])
    parent, leaf = _get(doc, path[:-1]), path[-1]
    if op == "drop" and isinstance(parent, dict):
        del parent[leaf]
        return doc, f"drop {where}"
    if op == "add":
        target = _get(doc, path)
        if isinstance(target, dict):
            key = rng.choice(UNKNOWN_KEYS)
            target[key] = rng.choice(ODD)
            return doc, f"{where}.{key!r}={target[key]!r}"
    if op == "wrap":
        parent[leaf] = [parent[leaf]] if rng.random() < 0.5 else {"value": parent[leaf]}
        return doc, f"{where} wrapped: {parent[leaf]!r}"[:120]
    parent[leaf] = rng.choice(ODD)
    return doc, f"{where}={parent[leaf]!r}"[:120]


def _dump(doc: Any, path: Path, rng: random.Random) -> None:
    """``doc`` as YAML or (a third of the time, when it is JSON-able) JSON."""
    import yaml
    if rng.random() < 0.33:
        try:
            path = path.with_suffix(".json")
            path.write_text(json.dumps(doc))
            return
        except (TypeError, ValueError):
            path = path.with_suffix(".yaml")
    path.with_suffix(".yaml").write_text(yaml.safe_dump(doc, allow_unicode=True))


def yaml_cases(rng: random.Random, workdir: Path, n: int) -> Iterator[tuple[str, Callable]]:
    import yaml
    bases = {p.name: yaml.safe_load(p.read_text()) for p in EXAMPLES}
    for i in range(n):
        name = rng.choice(list(bases))
        doc, what = mutate_tree(rng, bases[name])
        if rng.random() < 0.3:
            doc, more = mutate_tree(rng, doc)
            what += "; " + more
        stem = workdir / f"y{i}"
        _dump(doc, stem, rng)
        path = stem.with_suffix(".json") if stem.with_suffix(".json").exists() else \
            stem.with_suffix(".yaml")
        cmd = ["goodput", str(path), "--trials", "3", "--format", "json"] \
            if "goodput" in name and rng.random() < 0.5 else \
            ["simulate", str(path), "--format", "json"]
        yield f"{name} {cmd[0]}: {what}"[:200], (lambda a=cmd: _sim_outcome(a))


def _sim_outcome(args: list[str]) -> str | None:
    """As _cli, plus: a simulated iteration that ran has sane headline values."""
    from click.testing import CliRunner

    from trainsim.cli import main
    bad = _cli(args)
    if bad or args[0] != "simulate":
        return bad
    result = CliRunner().invoke(main, args)
    if result.exit_code != 0:
        return None
    d = json.loads(result.stdout)
    for key in ("iteration_time_s", "tokens_per_s", "peak_memory_bytes", "mfu"):
        v = d.get(key)
        if not (isinstance(v, (int, float)) and 0 < v < math.inf):
            return f"insane {key}"
    if not d["mfu"] <= 2:
        return "mfu above 2"
    return None


SCALES = [0, 1e-12, 1e-6, 1e-3, 0.5, 2, 10, 1e3, 1e6, 1e9, 1e12, 1e18, 1e300]


def reliability_cases(rng: random.Random, workdir: Path, n: int
                      ) -> Iterator[tuple[str, Callable]]:
    """goodput of the goodput examples with their reliability section mutated: its shape, or
    one of its numbers (and of the failure profile's) scaled over 24 decades."""
    import yaml
    bases = {p.name: yaml.safe_load(p.read_text()) for p in EXAMPLES if "goodput" in p.name}
    for i in range(n):
        name = rng.choice(sorted(bases))
        doc = copy.deepcopy(bases[name])
        rel = doc.setdefault("reliability", {})
        if rng.random() < 0.5:
            doc["reliability"], what = mutate_tree(rng, rel)
        else:
            key = rng.choice(["checkpoint.interval_s", "recovery.restart_s", "rate_scale",
                              "recovery.heartbeat_timeout_s", "recovery.hang_timeout_s",
                              "checkpoint.optimizer_bytes_per_param", "recovery.repair_s",
                              "straggler.slowdown", "recovery.diagnosis_s", "recovery.init_s_per_gpu_slow",
                              "straggler.node_slowdown", "checkpoint.weight_bytes_per_param"])
            *parents, leaf = key.split(".")
            node = rel
            for p_ in parents:
                node = node.setdefault(p_, {})
            node[leaf] = rng.choice(SCALES)
            what = f"reliability.{key}={node[leaf]!r}"
        path = workdir / f"r{i}.yaml"
        path.write_text(yaml.safe_dump(doc, allow_unicode=True))
        args = ["goodput", str(path), "--trials", rng.choice(["1", "3", "20"]), "--format",
                "json"]
        if rng.random() < 0.3:
            args += ["--days", rng.choice(["1", "30", "1e-3"])]
        yield f"{name}: {what}"[:200], (lambda a=args: _cli(a))


def mangle_text(rng: random.Random, text: str) -> tuple[str, str]:
    lines = text.splitlines()
    op = rng.choice(["bom", "crlf", "tab", "truncate", "dupline", "indent", "unicode", "cr",
                     "nul", "flow", "colon", "drop", "anchor"])
    i = rng.randrange(len(lines)) if lines else 0
    if op == "bom":
        return "\ufeff" + text, op
    if op == "crlf":
        return text.replace("\n", "\r\n"), op
    if op == "cr":
        return text.replace("\n", "\r"), op
    if op == "tab":
        return text.replace("  ", "\t", 1), op
    if op == "truncate":
        k = rng.randrange(len(text) + 1)
        return text[:k], f"truncate at {k}"
    if op == "dupline" and lines:
        lines.insert(i, lines[i])
        return "\n".join(lines), f"line {i + 1} twice: {lines[i]!r}"
    if op == "indent" and lines:
        lines[i] = rng.choice([" ", "    ", ""]) + lines[i].lstrip()
        return "\n".join(lines), f"line {i + 1} reindented"
    if op == "unicode" and lines:
        lines[i] = lines[i].replace(":", "\uff1a", 1) if rng.random() < 0.5 else \
            lines[i] + " \u00e9"
        return "\n".join(lines), f"line {i + 1}: {lines[i]!r}"
    if op == "nul":
        return text[:len(text) // 2] + "\x00" + text[len(text) // 2:], op
    if op == "flow":
        return "{" + text, op
    if op == "colon" and lines:
        lines[i] = lines[i].replace(": ", ":", 1)
        return "\n".join(lines), f"line {i + 1}: {lines[i]!r}"
    if op == "drop" and lines:
        del lines[i]
        return "\n".join(lines), f"line {i + 1} dropped"
    if op == "anchor" and lines:
        lines[i] = lines[i] + " &a" if rng.random() < 0.5 else lines[i].split(":")[0] + ": *a"
        return "\n".join(lines), f"line {i + 1}: {lines[i]!r}"
    return text, "unchanged"


def text_cases(rng: random.Random, workdir: Path, n: int) -> Iterator[tuple[str, Callable]]:
    texts = {p.name: p.read_text() for p in EXAMPLES}
    for i in range(n):
        name = rng.choice(list(texts))
        text, what = mangle_text(rng, texts[name])
        path = workdir / f"t{i}.yaml"
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        yield f"{name}: {what}"[:200], (lambda a=["simulate", str(path), "--format", "json"]:
                                         _sim_outcome(a))


def gpu_cases(rng: random.Random, workdir: Path, n: int) -> Iterator[tuple[str, Callable]]:
    import yaml
    spec = yaml.safe_load(GPU_SPEC.read_text())
    cfg = yaml.safe_load((ROOT / "examples" / "llama3-8b-h100.yaml").read_text())
    for i in range(n):
        doc, what = mutate_tree(rng, spec)
        gpath = workdir / f"g{i}.yaml"
        gpath.write_text(yaml.safe_dump(doc, allow_unicode=True))
        c = copy.deepcopy(cfg)
        c["cluster"] = {"gpu": str(gpath), "num_gpus": 8, "gpus_per_node": 8}
        cpath = workdir / f"gc{i}.yaml"
        cpath.write_text(yaml.safe_dump(c))
        if rng.random() < 0.3:
            cmd = ["search", "llama3-8b", "--gpus", "8", "--gpu", str(gpath), "--global-batch",
                   "16", "--seq", "2048", "--workers", "1", "--format", "json", "--tp", "2",
                   "--pp", "1"]
        else:
            cmd = ["simulate", str(cpath), "--format", "json"]
        yield f"gpu {cmd[0]}: {what}"[:200], (lambda a=cmd: _sim_outcome(a))


HF_DIR = ROOT / "examples" / "hf"
FAILURES_DIR = ROOT / "src" / "trainsim" / "catalog" / "failures"
KERNEL_DB = ROOT / "src" / "trainsim" / "data" / "kernels" / "h100-sxm-80gb.json"


def hf_cases(rng: random.Random, workdir: Path, n: int) -> Iterator[tuple[str, Callable]]:
    """model.hf_config: a Hugging Face config.json of examples/hf mutated."""
    import yaml
    bases = {p.parent.name: json.loads(p.read_text()) for p in HF_DIR.glob("*/config.json")}
    for i in range(n):
        name = rng.choice(sorted(bases))
        doc, what = mutate_tree(rng, bases[name])
        d = workdir / f"hf{i}"
        d.mkdir()
        (d / "config.json").write_text(json.dumps(doc))
        cfg = {"model": {"hf_config": str(d / "config.json")},
               "parallel": {"tp": 8}, "training": {"global_batch_size": 8, "seq_length": 1024},
               "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}}
        path = workdir / f"hf{i}.yaml"
        path.write_text(yaml.safe_dump(cfg))
        yield f"hf {name}: {what}"[:200], (lambda a=["simulate", str(path), "--format", "json"]:
                                           _sim_outcome(a))


def failure_cases(rng: random.Random, workdir: Path, n: int) -> Iterator[tuple[str, Callable]]:
    """goodput --failures PATH: a catalog failure profile mutated."""
    import yaml
    bases = {p.name: yaml.safe_load(p.read_text()) for p in FAILURES_DIR.glob("*.yaml")}
    config = str(ROOT / "examples" / "goodput-gpt3-175b-1k.yaml")
    for i in range(n):
        name = rng.choice(sorted(bases))
        doc, what = mutate_tree(rng, bases[name])
        path = workdir / f"f{i}.yaml"
        path.write_text(yaml.safe_dump(doc, allow_unicode=True))
        args = ["goodput", config, "--failures", str(path), "--trials", "3", "--format", "json"]
        yield f"failures {name}: {what}"[:200], (lambda a=args: _cli(a))


def kernel_db_cases(rng: random.Random, workdir: Path, n: int) -> Iterator[tuple[str, Callable]]:
    """cluster.compute_db PATH: the bundled H100 kernel database with one part mutated."""
    if not KERNEL_DB.exists():
        return
    base = json.loads(KERNEL_DB.read_text())
    config = str(ROOT / "examples" / "llama3-8b-h100.yaml")
    for i in range(n):
        doc = copy.deepcopy(base)
        part = rng.choice(["kernels", "layers", "top"])
        if part == "top":
            doc, what = mutate_tree(rng, {k: v for k, v in doc.items()
                                          if k not in ("kernels", "layers")})
            if isinstance(doc, dict):
                doc.update({k: base[k] for k in ("kernels", "layers") if k not in doc})
        else:
            j = rng.randrange(len(doc[part]))
            rec, what = mutate_tree(rng, doc[part][j])
            doc[part][j] = rec
            what = f"{part}[{j}] {what}"
        path = workdir / f"k{i}.json"
        path.write_text(json.dumps(doc))
        args = ["simulate", config, "--format", "json", "--set", f"cluster.compute_db={path}"]
        if rng.random() < 0.3:
            args = ["validate", str(path), "--format", "json"]
        yield f"kernel-db: {what}"[:200], (lambda a=args: _sim_outcome(a))


# ------------------------------------------------------------------------------ validation

def _training_base() -> tuple[list[str], list[list[str]]]:
    import csv
    with open(SHARED / "training_public.csv", newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    # short-running rows: a few GPUs (the CSV is sorted by nothing; pick by num_gpus)
    k = header.index("num_gpus")
    small = [r for r in body if r[k].isdigit() and int(r[k]) <= 64]
    return header, small[:12], body


CELLS = ["", " ", "x", "-1", "0", "1.5", "1e400", "nan", "inf", "-inf", "1e30", "\u00e9",
         "true", "True", "yes", "2**8", "0x10", "8.0", " 8", "bogus-name", "\"", ";", "[1]",
         "1,2", "none", "NONE", "null"]


def csv_cases(rng: random.Random, workdir: Path, n: int) -> Iterator[tuple[str, Callable]]:
    import csv
    import io
    header, rows, everything = _training_base()
    for i in range(n):
        h = list(header)
        body = [list(r) for r in rng.sample(rows, 2)]
        what = []
        for _ in range(rng.randint(1, 3)):
            op = rng.choice(["cell"] * 12 + ["dropcol", "extracol", "renamecol", "shortrow",
                                             "longrow", "dupcol"])
            col = rng.randrange(len(h))
            if op == "cell":
                # junk, or a real cell of another row (of this column or another one)
                other = rng.choice(everything)
                v = rng.choice([rng.choice(CELLS), other[col % len(other)], rng.choice(other)])
                body[0][col:col + 1] = [v]
                what.append(f"{h[col]}={v!r}")
            elif op == "dropcol":
                what.append(f"drop column {h[col]}")
                del h[col]
                for r in body:
                    del r[col:col + 1]
            elif op == "extracol":
                h.append(rng.choice(["bogus", "", "id", "tp "]))
                for r in body:
                    r.append(rng.choice(CELLS))
                what.append(f"extra column {h[-1]!r}")
            elif op == "renamecol":
                what.append(f"column {h[col]} renamed")
                h[col] = h[col].upper()
            elif op == "shortrow":
                body[0] = body[0][:col]
                what.append(f"row cut after {col} cells")
            elif op == "longrow":
                body[0] = body[0] + ["x"] * rng.randint(1, 3)
                what.append("row longer than header")
            elif op == "dupcol":
                h.append(h[col])
                for r in body:
                    r.append(r[col] if col < len(r) else "")
                what.append(f"column {h[col]} twice")
        buf = io.StringIO()
        csv.writer(buf, lineterminator=rng.choice(["\n", "\r\n"])).writerows([h] + body)
        text = buf.getvalue()
        shape = rng.random()
        if shape < 0.05:
            text, w = "", "empty"
        elif shape < 0.1:
            text, w = text.splitlines(keepends=True)[0], "header only"
        elif shape < 0.15:
            text, w = "\ufeff" + text, "bom"
        else:
            w = ""
        if w:
            what.append(w)
        path = workdir / f"c{i}.csv"
        path.write_text(text)
        cmd = ["validate", str(path), "--format", "json", "--compute-db", "none",
               "--workers", "1"]
        yield "; ".join(what)[:200], (lambda a=cmd: _validate_outcome(a))


def _validate_outcome(args: list[str]) -> str | None:
    """As _cli, plus: a row that failed says why on one line; a row that predicted has a
    finite, positive prediction."""
    from click.testing import CliRunner

    from trainsim.cli import main
    bad = _cli(args)
    if bad:
        return bad
    result = CliRunner().invoke(main, args)
    if result.exit_code != 0:
        return None
    for row in json.loads(result.stdout).get("rows", []):
        if row.get("error"):
            if "\n" in row["error"]:
                return "row error of several lines"
            if "internal error" in row["error"]:
                return "row internal error: " + row["error"].split(":")[1]
        elif not (isinstance(row.get("predicted"), float) and 0 < row["predicted"] < 1e30):
            return f"row predicted {row.get('predicted')!r}"
    return None


def jsonl_cases(rng: random.Random, workdir: Path, n: int) -> Iterator[tuple[str, Callable]]:
    src = SHARED / "layers_h100_measured.jsonl"
    recs = [json.loads(x) for x in src.read_text().splitlines() if x.strip()][:6]
    for i in range(n):
        rec = copy.deepcopy(rng.choice(recs))
        rec2, what = mutate_tree(rng, rec)
        lines = [json.dumps(rec2, allow_nan=True), json.dumps(recs[0])]
        if rng.random() < 0.1:
            lines.insert(1, rng.choice(["", "{", "[]", "null", "1", "\"x\""]))
            what += f"; junk line {lines[1]!r}"
        path = workdir / f"l{i}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        cmd = ["validate", str(path), "--format", "json", "--compute-db", "none",
               "--workers", "1"]
        yield what[:200], (lambda a=cmd: _validate_outcome(a))


# ------------------------------------------------------------------------------ main

def sweep(seed: int, n: int, only: set[str], workdir: Path) -> dict:
    rng = random.Random(seed)
    surfaces = {"yaml": lambda: yaml_cases(rng, workdir, n),
                "text": lambda: text_cases(rng, workdir, n // 2),
                "gpu": lambda: gpu_cases(rng, workdir, n // 3),
                "csv": lambda: csv_cases(rng, workdir, n),
                "jsonl": lambda: jsonl_cases(rng, workdir, n // 3),
                "flags": lambda: flag_cases(rng, workdir, n // 3),
                "http": lambda: http_cases(rng, workdir, n),
                "hf": lambda: hf_cases(rng, workdir, n // 2),
                "failures": lambda: failure_cases(rng, workdir, n // 3),
                "kernel-db": lambda: kernel_db_cases(rng, workdir, n // 3),
                "search-opts": lambda: search_opt_cases(rng, workdir, n // 3),
                "sweep-odd": lambda: sweep_odd_cases(rng, workdir, n // 6),
                "reliability": lambda: reliability_cases(rng, workdir, n // 2)}
    return fuzz_checks.run_surfaces(surfaces, only)


def main(argv: list[str] | None = None) -> int:
    import tempfile
    import warnings
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=300, help="inputs per surface (about)")
    ap.add_argument("--only", default="", help="surfaces: yaml,text,gpu,csv,jsonl,flags,http")
    ap.add_argument("--all", action="store_true", help="print every failing input")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    fuzz_checks.TIME_LIMIT_S = 20  # a hang, as the brief counts one
    with tempfile.TemporaryDirectory() as d:
        out = sweep(args.seed, args.n, {s for s in args.only.split(",") if s}, Path(d))
    return fuzz_checks.print_report(out, every=args.all)


if __name__ == "__main__":
    sys.exit(main())
