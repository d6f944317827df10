"""Input robustness, twenty-first round (2026-11-26, 33rd session, fuzz33): the surfaces the
earlier rounds walked by hand, generated instead.

- ``options``: every option and argument of every command (walked from click's command tree,
  so a new option is fuzzed the day it lands) given values of its kind that are odd: zero,
  negative, huge, a float for an int, NaN/inf, empty, unicode, a NUL; each from a small valid
  base invocation of that command (``serve`` with uvicorn and the app replaced by stubs, so it
  checks its arguments and returns);
- ``pairs``: seeded draws of two or three such options of one command at once;
- ``files``: every argument or option that reads or writes a file given a path that does not
  exist, a directory, an empty file, a binary file, UTF-16 text, a YAML list or scalar, a key
  given twice, nesting 5000 deep, a YAML alias bomb, a NUL in the name; outputs given a
  directory, a missing parent, /dev/full, a suffix no writer knows;
- ``extremes``: valid but odd runs (1 GPU, 1 layer, seq 1, vocab 1, 1M GPUs, tp > heads,
  pp > layers, a batch that does not divide, top-k > experts, an odd sequence under cp) and
  every catalog GPU x dtype, each simulated and its result checked (finite, positive);
- ``http``: every route of the service's API (walked from the app) with malformed bodies and
  query strings;
- ``csv``: a two-row training CSV with its columns reordered, an extra column, a BOM, CRLF
  line ends, a quoted newline in a note, an id given twice: the reorderings must predict the
  same values, the broken ones be refused in one line.

Outcomes (fuzz_checks.outcome): handled (exit 0 with finite, non-negative times and memory, or
exit 2 with one ``error: ...`` line) or a failure class (an exception, a traceback, exit 1/3, a
hang over 20 s, a non-finite or negative number, a reordering that moved a prediction).

    python benchmarks/fuzz_cli33.py [--seed 0] [--only options,files,...] [--all]
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
import fuzz_sweep
from fuzz_checks import DENSE, MOE, Case, run_config

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / "src" / "trainsim" / "data" / "validation"

INTS = ["0", "-1", "1", "2.5", "1e3", "nan", "inf", "", " ", "99999999999999999999999",
        "\u0663", "0x10", "+3", "1_000", "-0", "\x00"]
FLOATS = ["nan", "inf", "-inf", "0", "-0", "1e400", "1e-400", "", "x", "1,5", "\u0663",
          "1e308", "-1", "0x1p3"]
TEXTS = ["", " ", "\x00", "\u00e9\u4e2d\U0001f600", "x" * 5000, "nan", "-1", "0", ",",
         "a,b", "../", "/", "-", "1e999", "\u202e", "\n"]
CHOICES = ["", "X", "\u00e9", " json"]


def _walk(group, prefix=()) -> Iterator[tuple[tuple[str, ...], object]]:
    import click
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            yield from _walk(cmd, prefix + (name,))
        else:
            yield prefix + (name,), cmd


def _bases(work: Path) -> dict[tuple[str, ...], list[str]]:
    """A small valid invocation of every command (a second tuple entry: where the extra option
    goes is the end of the list)."""
    import yaml
    tiny = work / "tiny.yaml"
    tiny.write_text(yaml.safe_dump(DENSE))
    model = work / "moe-model.yaml"
    model.write_text(yaml.safe_dump({"model": MOE["model"]}))
    csv = work / "two.csv"
    _two_rows(csv)
    db = f"sqlite:///{work / 'jobs.db'}"
    return {
        ("simulate",): ["simulate", str(tiny), "--format", "json"],
        ("validate",): ["validate", str(csv), "--format", "json", "--workers", "1"],
        ("search",): ["search", str(model), "--gpus", "8", "--global-batch", "16", "--seq",
                      "256", "--workers", "1", "--format", "json", "--max-vpp", "2"],
        ("plan",): ["plan", str(model), "--tokens", "1B", "--days", "1", "--max-gpus", "16",
                    "--global-batch", "16", "--seq", "256", "--workers", "1", "--format",
                    "json", "--max-vpp", "2"],
        ("sweep",): ["sweep", str(tiny), "--vary", "parallel.tp=1,2", "--format", "json"],
        ("goodput",): ["goodput", str(tiny), "--tokens", "1B", "--trials", "20", "--format",
                       "json"],
        ("export",): ["export", str(tiny), "--simai", str(work / "w.txt")],
        ("capture",): ["capture", str(tiny), "--format", "json", "--seq", "64"],
        ("collective",): ["collective", "--sizes", "8:1K", "--format", "json"],
        ("profile",): ["profile", "--gpu", "h100-sxm-80gb", "--device", "cpu", "--quick",
                       "--out", str(work / "p.json"), "--models", "llama3-8b", "--tp", "8",
                       "--seq", "64"],
        ("catalog",): ["catalog", "gpus", "--format", "json"],
        ("serve",): ["serve", "--db", db, "--port", "0", "--workers", "0", "--checkers", "0"],
        ("token", "create"): ["token", "create", "fuzz", "--db", db],
        ("token", "list"): ["token", "list", "--db", db],
        ("token", "revoke"): ["token", "revoke", "fuzz", "--db", db],
    }


def _two_rows(path: Path) -> None:
    import csv
    with open(SHARED / "training_public.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    keep = [r for r in rows if r["id"] in ("megatron21-t1-1.7B", "megatron21-t1-3.6B")]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(keep)


def _cli(args: list[str], check_json: bool = True) -> str | None:
    """fuzz_sweep._cli with the server stubbed, and no negative time or memory in a JSON
    answer."""
    def negative(stdout: str) -> str | None:
        if check_json and "json" in args:
            with contextlib.suppress(ValueError):
                bad = _negative(json.loads(stdout))
                if bad:
                    return f"negative {bad}"
        return None
    return fuzz_sweep._cli(args, around=_serve_stubbed, answer_check=negative)


TIME_WORDS = ("time_s", "_s", "seconds", "memory", "bytes", "gib", "_gb")
SIGNED = ("error", "ape", "signed", "delta", "diff", "slack", "margin", "bias", "rel", "pct")


def _negative(node, key: str = "") -> str | None:
    """The first key naming a time or a memory that holds a negative number, or None."""
    if isinstance(node, dict):
        for k, v in node.items():
            bad = _negative(v, str(k))
            if bad:
                return bad
    elif isinstance(node, list):
        for v in node:
            bad = _negative(v, key)
            if bad:
                return bad
    elif isinstance(node, (int, float)) and not isinstance(node, bool) and node < 0:
        low = key.lower()
        if any(w in low for w in TIME_WORDS) and not any(w in low for w in SIGNED):
            return f"{key}={node}"
    return None


@contextlib.contextmanager
def _serve_stubbed():
    """``serve`` checks its arguments, opens its store and returns instead of listening."""
    try:
        import uvicorn

        import trainsim.service.app as app_mod
    except ImportError:
        yield
        return
    run, create = uvicorn.run, app_mod.create_app

    def fake_create(settings, *a, **k):
        from trainsim.service.store import Store
        Store(settings.db_url).close()

    uvicorn.run, app_mod.create_app = (lambda *a, **k: None), fake_create
    try:
        yield
    finally:
        uvicorn.run, app_mod.create_app = run, create


# ------------------------------------------------------------------------------ options

def _values(param) -> list[str]:
    import click
    t = param.type
    if isinstance(t, click.Choice):
        return CHOICES + [str(t.choices[0]).upper()]
    if isinstance(t, (click.IntRange,)) or t is click.INT or isinstance(t, click.types.IntParamType):
        return INTS
    if isinstance(t, click.types.FloatParamType):
        return FLOATS
    if isinstance(t, (click.Path, click.File)):
        return []  # the files surface
    return TEXTS


def _is_file(param) -> bool:
    import click
    meta = (param.metavar or param.name or "").upper()
    return isinstance(param.type, (click.Path, click.File)) or any(
        w in meta for w in ("FILE", "CONFIG", "PREFIX", "OUT", "PLOT", "TRACE", "SIMAI",
                            "CHAKRA", "DIRECTORY", "FAILURES", "PROFILE", "COMPUTE_DB"))


def option_cases(rng: random.Random, work: Path, bases: dict) -> Iterator[Case]:
    from trainsim.cli import main
    for path, cmd in _walk(main):
        base = bases.get(path)
        if base is None:
            yield f"{' '.join(path)}: no base invocation", (lambda: "no base invocation")
            continue
        for param in cmd.params:
            if param.name == "help" or getattr(param, "is_flag", False):
                continue
            if _is_file(param) and param.name not in ("failures",):
                continue
            for value in _values(param):
                args = _with(base, param, value)
                label = f"{' '.join(path)} {_name(param)} {value[:40]!r}"
                yield label, (lambda a=args: _cli(a))


def pair_cases(rng: random.Random, work: Path, bases: dict, n: int = 150) -> Iterator[Case]:
    """Seeded draws of two or three options of one command at once, each a plain valid value
    (7 in 10) or an odd one."""
    from trainsim.cli import main
    commands = [(path, cmd) for path, cmd in _walk(main)
                if path in bases and path not in (("capture",), ("profile",))]
    for _ in range(n):
        path, cmd = rng.choice(commands)
        params = [p for p in cmd.params if p.name != "help" and not getattr(p, "is_flag", False)
                  and not _is_file(p) and _values(p)]
        if not params:
            continue
        args = list(bases[path])
        for param in rng.sample(params, min(len(params), rng.randint(2, 3))):
            odd = rng.random() < 0.3  # else a valid value: the pair is the odd part
            args = _with(args, param, rng.choice(_values(param) if odd else _valid(param)))
        yield " ".join(args[:1] + args[2:])[:120], (lambda a=args: _cli(a))


def _valid(param) -> list[str]:
    """Plain valid values of ``param``'s kind (small and large)."""
    import click
    t = param.type
    if isinstance(t, click.Choice):
        return [str(c) for c in t.choices]
    if isinstance(t, click.types.IntParamType):
        return ["1", "2", "3", "8", "16", "1000"]
    if isinstance(t, click.types.FloatParamType):
        return ["0.5", "1", "2", "100"]
    return ["1", "2", "8", "1,2", "2,4,8", "1B", "15T"]


def _name(param) -> str:
    return param.opts[0] if param.param_type_name == "option" else param.name.upper()


def _with(base: list[str], param, value: str) -> list[str]:
    """``base`` with ``param`` set to ``value`` (replacing the base's own, if it has one)."""
    args = list(base)
    if param.param_type_name == "argument":  # every base has one, after the command words
        args[2 if base[0] == "token" else 1] = value
        return args
    for opt in param.opts:
        if opt in args:
            i = args.index(opt)
            args[i + 1] = value
            return args
    return args + [param.opts[0], value]


# ------------------------------------------------------------------------------ files

def _file_battery(work: Path) -> dict[str, str]:
    d = work / "files"
    d.mkdir(exist_ok=True)
    out = {"missing": str(d / "nope.yaml"), "directory": str(d), "empty": "",
           "nul-name": str(d / "a\x00b.yaml"), "dev-null": "/dev/null",
           "trailing-slash": str(d / "x.yaml") + "/"}
    (d / "x.yaml").write_text("model: llama3-8b\n")
    files = {"empty-file.yaml": b"", "binary.yaml": bytes(range(256)) * 4,
             "utf16.yaml": "model: llama3-8b\n".encode("utf-16"),
             "list.yaml": b"- 1\n- 2\n", "scalar.yaml": b"42\n", "null.yaml": b"~\n",
             "dup.yaml": b"model: llama3-8b\nmodel: llama3-70b\n",
             "deep.yaml": b"[" * 5000 + b"]" * 5000, "deep-map.yaml": b"{a: " * 3000 + b"1"
             + b"}" * 3000,
             "bomb.yaml": b"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a,"
             b" *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c,"
             b" *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e,"
             b" *e, *e, *e, *e, *e, *e]\ng: [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n",
             "tabs.yaml": b"model:\n\tname: x\n", "bom.json": b"\xef\xbb\xbf{}",
             "json-list.json": b"[]", "nan.json": b'{"model": NaN}',
             "csv-as-yaml.yaml": b"id,model\n1,llama3-8b\n",
             "huge-int.yaml": b"parallel: {tp: " + b"9" * 5000 + b"}\n",
             "header-only.csv": b"id,model\n", "bom-only.csv": b"\xef\xbb\xbf",
             "one-col.csv": b"x\n1\n", "no-suffix": b"model: llama3-8b\n",
             "latin1.yaml": "model: caf\u00e9\n".encode("latin-1")}
    for name, data in files.items():
        (d / name).write_bytes(data)
        out[name] = str(d / name)
    return out


OUT_BATTERY = {"missing-parent": "files/none/out.png", "directory": "files",
               "dev-full": "/dev/full", "odd-suffix": "files/out.xyz", "no-suffix": "files/out",
               "empty": "", "nul": "files/o\x00.png", "unicode": "files/\u00e9\u4e2d.svg"}


def file_cases(rng: random.Random, work: Path, bases: dict) -> Iterator[Case]:
    from trainsim.cli import main
    battery = _file_battery(work)
    for path, cmd in _walk(main):
        base = bases.get(path)
        if base is None:
            continue
        for param in cmd.params:
            if param.name == "help" or not _is_file(param):
                continue
            writes = param.name in ("out", "plot", "trace", "simai", "chakra", "out_dir",
                                    "outdir") or (path == ("profile",) and param.name == "out")
            if writes:
                for kind, rel in OUT_BATTERY.items():
                    value = rel if rel.startswith("/") or not rel else str(work / rel)
                    args = _with(base, param, value)
                    yield f"{' '.join(path)} {_name(param)} <{kind}>", (lambda a=args: _cli(a))
            else:
                for kind, value in battery.items():
                    args = _with(base, param, value)
                    yield f"{' '.join(path)} {_name(param)} <{kind}>", (lambda a=args: _cli(a))


# ------------------------------------------------------------------------------ extremes

EXTREMES = [
    {"cluster": {"num_gpus": 1, "gpus_per_node": 1}, "training": {"global_batch_size": 1}},
    {"model": {"num_layers": 1}}, {"training": {"seq_length": 1}}, {"model": {"vocab_size": 1}},
    {"cluster": {"num_gpus": 10**6}, "training": {"global_batch_size": 10**6}},
    {"parallel": {"tp": 8}}, {"parallel": {"pp": 8}, "model": {"num_layers": 4}},
    {"training": {"global_batch_size": 13}}, {"training": {"global_batch_size": 16,
                                                           "micro_batch_size": 5}},
    {"parallel": {"cp": 2}, "training": {"seq_length": 511}},
    {"parallel": {"cp": 8}, "training": {"seq_length": 7}},
    {"model": {"num_layers": 1, "vocab_size": 1, "hidden_size": 8, "num_attention_heads": 1},
     "training": {"seq_length": 1, "global_batch_size": 1},
     "cluster": {"num_gpus": 1, "gpus_per_node": 1}},
]
MOE_EXTREMES = [{"model": {"moe_router_topk": 16}}, {"model": {"num_experts": 1,
                                                                 "moe_router_topk": 1}},
                {"parallel": {"ep": 8, "tp": 1, "pp": 1}}]


def extreme_cases(rng: random.Random, work: Path, bases: dict) -> Iterator[Case]:
    from trainsim.catalog import names
    for base_name, base, changes in (("dense", DENSE, EXTREMES),
                                     ("moe", MOE, EXTREMES + MOE_EXTREMES)):
        for change in changes:
            cfg = copy.deepcopy(base)
            for section, fields in change.items():
                cfg[section].update(fields)
            yield f"{base_name}: {change}", (lambda c=cfg: run_config(c))
    for framework in names("frameworks"):
        for dtype in ("bf16", "fp16", "fp8"):
            for base_name, base in (("dense", DENSE), ("moe", MOE)):
                cfg = copy.deepcopy(base)
                cfg["training"].update(framework=framework, dtype=dtype)
                yield f"{base_name} {framework} {dtype}", (lambda c=cfg: run_config(c))
    for gpu in names("gpus"):
        for dtype in ("bf16", "fp16", "fp8"):
            for base_name, base in (("dense", DENSE), ("moe", MOE)):
                cfg = copy.deepcopy(base)
                cfg["cluster"]["gpu"] = gpu
                cfg["training"]["dtype"] = dtype
                yield f"{base_name} {gpu} {dtype}", (lambda c=cfg: run_config(c))


# ------------------------------------------------------------------------------ http

BODIES = [b"", b"{", b"}", b"null", b"[]", b"1", b"{}", b'{"a": ' * 3000 + b"1" + b"}" * 3000,
          b'{"kind": "simulate", "config": {"model": "llama3-8b"}, "kind": "sweep"}',
          b'{"kind": "simulate", "config": {"model": "' + b"x" * 200000 + b'"}}',
          b'{"kind": 1e999}', b'{"kind": "simulate", "config": {"parallel": {"tp": -0.0}}}',
          b"\xef\xbb\xbf{}", b'{"kind": "simulate"}\x00', "{\"kind\": \"\u00e9\"}".encode(),
          b'{"kind": "simulate", "config": {"model": "llama3-8b"}, "options": {"format": 1}}',
          b'{"kind": "validate", "options": {"csv": "id\\n1\\n"}}',
          b'{"kind": "validate", "options": {"csv": "' + b"," * 100000 + b'"}}']
QUERIES = ["", "?limit=0", "?limit=-1", "?limit=99999999999999999999", "?limit=nan",
           "?offset=1e3", "?format=x", "?a=%ff", "?limit=1&limit=2"]


def http_cases(rng: random.Random, work: Path, bases: dict) -> Iterator[Case]:
    try:
        from fastapi.testclient import TestClient

        from trainsim.service import Settings, create_app
    except ImportError:
        return
    from fuzz_struct_cli import _http
    app = create_app(Settings(db_url=f"sqlite:///{work / 'http.db'}", workers=0,
                              checkers=0).with_limits(sync_timeout_s=0.05),
                     start_workers=False)
    with TestClient(app, raise_server_exceptions=True) as client:
        auth = {"Authorization": f"Bearer {app.state.store.create_token('fuzz')}"}
        job = client.post("/api/v1/jobs", headers=auth, json={
            "kind": "simulate", "config": {"model": "llama3-8b"}}).json().get("id", "1")
        fill = {"job_id": [str(job), "0", "-1", "99999999999999999999", "1e3", "%C3%A9",
                           "abc", "%00", " 1"],
                "kind": ["gpus", "models", "x", "%00", "GPUS"], "rest": ["a/b", "%2e%2e/x"]}
        for r in app.routes:
            for method in sorted(getattr(r, "methods", None) or ()):
                if method in ("HEAD", "OPTIONS") or r.path.startswith("/static"):
                    continue
                for route in _filled(r.path, fill):
                    bodies = BODIES if method in ("POST", "PUT", "PATCH") else [None]
                    for q in QUERIES if method == "GET" else [""]:
                        for body in bodies:
                            label = f"{method} {route}{q} {body[:50] if body else ''!r}"
                            check = _http if route.startswith("/api/v1/") and \
                                "openapi" not in route else _page
                            yield label, (lambda m=method, u=route + q, b=body, c=check:
                                          c(client, m, u, b, auth))


def _filled(path: str, fill: dict[str, list[str]]) -> list[str]:
    """``path`` with each ``{name}`` (``{name:path}``) given each of its odd values."""
    import re
    m = re.search(r"\{(\w+)(?::\w+)?\}", path)
    if not m:
        return [path]
    return [p for v in fill.get(m.group(1), ["x"])
            for p in _filled(path[:m.start()] + v + path[m.end():], fill)]


def _page(client, method: str, route: str, body: bytes | None, headers: dict) -> str | None:
    """A page that is not the JSON API (the web UI, the API docs): any status below 500."""
    r = client.request(method, route, content=body, headers=headers)
    return f"status {r.status_code}" if r.status_code >= 500 else None


# ------------------------------------------------------------------------------ csv

def csv_cases(rng: random.Random, work: Path, bases: dict) -> Iterator[Case]:
    import csv
    import io
    src = work / "two.csv"
    text = src.read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    header, body = rows[0], rows[1:]
    reference: dict = {}

    def write(name: str, data: bytes) -> Path:
        p = work / name
        p.write_bytes(data)
        return p

    def dump(h, b, nl="\n") -> bytes:
        buf = io.StringIO()
        csv.writer(buf, lineterminator=nl).writerows([h] + b)
        return buf.getvalue().encode("utf-8")

    order = list(range(len(header)))
    rng.shuffle(order)
    same = {
        "as-is": dump(header, body),
        "reordered": dump([header[i] for i in order], [[r[i] for i in order] for r in body]),
        "bom": b"\xef\xbb\xbf" + dump(header, body),
        "crlf": dump(header, body, "\r\n"),
        "quoted-newline": dump(header, [r[:-1] + [r[-1] + "\nsecond line"] for r in body]),
        "trailing-blank-lines": dump(header, body) + b"\n\n",
    }
    for name, data in same.items():
        yield f"csv {name}", (lambda n=name, d=data: _same(write(f"{n}.csv", d), reference))
    refused = {
        "extra-column": dump(header + ["bogus"], [r + ["1"] for r in body]),
        "extra-cell": dump(header, [r + ["1"] for r in body]),
        "short-row": dump(header, [r[:-5] for r in body]),
        "duplicate-id": dump(header, [body[0], body[0]]),
        "duplicate-column": dump(header + ["tp"], [r + ["2"] for r in body]),
        "nul-byte": dump(header, body).replace(b"fp16", b"fp\x0016", 1),
        "latin1-note": dump(header, body).replace(b"published", "publi\u00e9d".encode(
            "latin-1"), 1),
        "bom-twice": b"\xef\xbb\xbf\xef\xbb\xbf" + dump(header, body),
        "cr-only": dump(header, body, "\r"),
    }
    for name, data in refused.items():
        p = write(f"{name}.csv", data)
        yield f"csv {name}", (lambda a=["validate", str(p), "--format", "json", "--workers",
                                        "1"]: _cli(a))


def _same(path: Path, reference: dict) -> str | None:
    """Validate ``path``; its predictions must equal the first file's."""
    from click.testing import CliRunner

    from trainsim.cli import main
    r = CliRunner().invoke(main, ["validate", str(path), "--format", "json", "--workers", "1"],
                           env={"TRAINSIM_DEBUG": "1"})
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    if r.exit_code != 0:
        return f"exit {r.exit_code}: {r.stderr.strip()[:80]}"
    data = json.loads(r.stdout)
    rows = data["rows"] if isinstance(data, dict) else data
    got = {row["id"]: row.get("predicted") for row in rows}
    if not reference:
        reference.update(got)
        return None
    return None if got == reference else f"predictions moved: {got} vs {reference}"


# ------------------------------------------------------------------------------ main

SURFACES = {"options": option_cases, "pairs": pair_cases, "files": file_cases, "extremes": extreme_cases,
            "http": http_cases, "csv": csv_cases}


def main(argv: list[str] | None = None) -> int:
    import tempfile
    import warnings
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default="", help=",".join(SURFACES))
    ap.add_argument("--all", action="store_true", help="print every failing input")
    ap.add_argument("--budget-s", type=float, default=1800, help="stop new cases after this")
    ap.add_argument("--pairs", type=int, default=150, help="draws of the pairs surface")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    fuzz_checks.TIME_LIMIT_S = 20  # a hang, as the brief counts one
    only = {s for s in args.only.split(",") if s}
    rng = random.Random(args.seed)
    start = time.monotonic()
    counts: Counter = Counter()
    failures: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        bases = _bases(work)
        for surface, gen in SURFACES.items():
            if only and surface not in only:
                continue
            cases = gen(rng, work, bases, args.pairs) if gen is pair_cases else \
                gen(rng, work, bases)
            for label, thunk in cases:
                if time.monotonic() - start > args.budget_s:
                    break
                counts[surface] += 1
                bad = fuzz_checks.outcome(thunk)
                if bad:
                    failures.setdefault(f"{surface}: {bad}", []).append(label)
    out = {"counts": counts, "failures": failures}
    print(f"{time.monotonic() - start:.0f} s")
    return fuzz_checks.print_report(out, every=args.all)


if __name__ == "__main__":
    sys.exit(main())
