"""Input robustness, 2026-11-28 (52nd session, robust52): four surfaces no round had fuzzed.

- ``rtconfig``: the resolved config ``simulate --format json`` prints under ``config`` (DESIGN:
  "the resolved config, every default filled in"), read back as a run config, for random MoE,
  latent-MoE, hybrid Mamba, MTP, MLA and dense runs (small bases and presets, random parallel
  and training settings, framework profiles). Oracle: the resolved config, written as JSON and
  as YAML, reads back to the same ``RunConfig`` with no warning the first read did not give,
  and simulates to the same iteration (to the bit); every tenth also through the CLI
  (``simulate FILE --format json``: the same JSON);
- ``rtexport``: Chakra and SimAI export round trips (fuzz51's oracle: the traces read back
  simulate to the printed iteration, groups, sends, the SimAI header) of the hybrid Mamba and
  latent-MoE runs fuzz51's ``exportrt`` never drew;
- ``chakradur``: a Chakra node's duration at and past the schema's range (``uint64
  duration_micros``): 0, 1, 2**53, 2**63, 2**64 - 1 microseconds, varints of 65-70 bits, the
  exact attribute at 5e-324, 1e13, 1.8e13, 1.9e13, 1e308 (one node, two in a row, every node),
  -0.0, as an int64, a float32, a string; read exactly and from whole microseconds. Oracle: a
  finite iteration at least the longest node, or one line naming the file;
- ``http``: the service's job bodies (FastAPI's TestClient, no workers) carrying the newest
  fields and huge numbers: a resolved config of each base posted back, every numeric option of
  the simulate / search / plan / goodput / sweep jobs at 1e400 (as JSON text), 10**30,
  2**63, -1, 0, NaN / Infinity literals and 5,000-digit integers, the hybrid and latent fields
  likewise. Oracle: 2xx, or a 4xx whose ``error`` is one line; never a 5xx.

Each input must give a sane answer or one ``TrainsimError`` line (``fuzz_checks.outcome``); a
hang is judged by CPU (30 CPU s; 300 s wall a backstop) and any input over 10 CPU s is its own
class.

    PYTHONPATH=src python benchmarks/fuzz52.py [--only rtconfig,rtexport,chakradur,http]
        [--count N] [--seed S] [--every] [--progress] [--refusals]
"""
from __future__ import annotations

import copy
import dataclasses
import json
import math
import os
import random
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz_checks import BASES, REFUSED, Case
from fuzz_hybrid51 import HYBRID, LATENT, PARALLEL_DRAWS, TRAINING_DRAWS

from trainsim.errors import TrainsimError

fuzz_checks.TIME_LIMIT_S = 300

PRESETS = ["mixtral-8x7b", "deepseek-v2-lite", "nemotron-h-8b", "nemotron-3-nano-30b-a3b",
           "nemotron-3-super-120b-a12b", "llama3.2-1b"]
SMALL = {"dense": BASES["dense"], "moe": BASES["moe"], "mla": BASES["mla"], "hybrid": HYBRID,
         "latent": LATENT}


def _preset_run(name: str) -> dict[str, Any]:
    return {"model": name, "parallel": {}, "training": {"global_batch_size": 64,
                                                         "seq_length": 4096},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8}}


def _draw(rng: random.Random, base: dict[str, Any], p: float = 0.25) -> dict[str, Any]:
    cfg = copy.deepcopy(base)
    for section, draws in (("parallel", PARALLEL_DRAWS), ("training", TRAINING_DRAWS)):
        for key, values in draws.items():
            if rng.random() < p:
                value = rng.choice(values)
                if value is not None:
                    cfg[section][key] = value
    return cfg


def _bases() -> list[tuple[str, dict[str, Any]]]:
    return list(SMALL.items()) + [(p, _preset_run(p)) for p in PRESETS]


# ------------------------------------------------------------------------------ rtconfig

def _read(path: Path) -> tuple[Any, list[str]]:
    from trainsim.catalog import load_run_config

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        cfg = load_run_config(str(path))
    return cfg, sorted({str(w.message) for w in said})


def _built(cfg: dict[str, Any]) -> tuple[Any, list[str]]:
    from trainsim.catalog import run_config_from_dict

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        rc = run_config_from_dict(copy.deepcopy(cfg))
    return rc, sorted({str(w.message) for w in said})


def _differs(a: Any, b: Any) -> str:
    for section in ("model", "parallel", "training", "cluster"):
        x, y = getattr(a, section), getattr(b, section)
        if x != y:
            names = [f.name for f in dataclasses.fields(x) if getattr(x, f.name) !=
                     getattr(y, f.name)]
            return f"{section}.{names[0] if names else '?'}"
    return "?"


def _rtconfig(cfg: dict[str, Any], workdir: str, via_cli: bool) -> str | None:
    from trainsim.simulator import simulate

    rc, first = _built(cfg)
    result = simulate(rc)
    resolved = result.to_dict()["config"]
    d = Path(tempfile.mkdtemp(dir=workdir))
    for kind, text in (("json", json.dumps(resolved)),
                       ("yaml", yaml.safe_dump(resolved, sort_keys=False))):
        path = d / f"resolved.{kind}"
        path.write_text(text, encoding="utf-8")
        try:
            back, said = _read(path)
        except TrainsimError as exc:  # the run was accepted: its own config must read back
            return f"the resolved config ({kind}) is refused: {str(exc)[:140]}"
        if back != rc:
            return f"the resolved config ({kind}) reads back as another config: {_differs(rc, back)}"
        new = [w for w in said if w not in first]
        if new:
            return f"the resolved config ({kind}) reads back with a new warning: {new[0][:140]}"
        again = simulate(back).iteration_time_s
        if again != result.iteration_time_s:
            return f"the resolved config ({kind}) simulates to {again!r}, not " \
                   f"{result.iteration_time_s!r}"
    if via_cli:
        from fuzz51 import _invoke

        src = d / "run.json"
        src.write_text(json.dumps(cfg), encoding="utf-8")
        one, two = (_invoke(["simulate", str(p), "--format", "json"])
                    for p in (src, d / "resolved.json"))
        if one.exit_code != 0 or two.exit_code != 0:
            return f"simulate exit {one.exit_code} / {two.exit_code} on the run / its resolved config"
        a, b = json.loads(one.stdout), json.loads(two.stdout)
        a.pop("warnings"), b.pop("warnings")  # a replaced setting is not in the resolved config
        if a != b:
            keys = [k for k in a if a.get(k) != b.get(k)]
            return f"simulate's JSON of the resolved config differs: {keys[:3]}"
    return None


def rtconfig_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        bases = _bases()
        for i in range(1500):
            name, base = bases[i % len(bases)]
            cfg = _draw(rng, base, 0.15) if i >= len(bases) else copy.deepcopy(base)
            label = f"{name} " + json.dumps({k: cfg[k] for k in ("parallel", "training")})
            yield label, (lambda c=cfg, v=i % 10 == 0: _rtconfig(c, workdir, v))
    return cases


# ------------------------------------------------------------------------------ rtexport

def _hybrid_layout(rng: random.Random) -> dict[str, Any]:
    name = rng.choice(["hybrid", "latent"])
    cfg = copy.deepcopy(SMALL[name])
    p: dict[str, Any] = {"tp": rng.choice([1, 2]), "pp": rng.choice([1, 2])}
    if p["tp"] > 1:
        p["sequence_parallel"] = True
        p["tp_comm_overlap"] = rng.random() < 0.3
    if p["pp"] > 1:
        p["pipeline_schedule"] = rng.choice([None, "1f1b", "gpipe", "zb_h1", "zb_2p"])
        p["overlap_p2p_comm"] = rng.random() < 0.3
    p["recompute"] = rng.choice(["none", "selective", "full"])
    p["distributed_optimizer"] = rng.random() < 0.5
    p["overlap_grad_reduce"] = rng.random() < 0.5
    dp = rng.choice([1, 2])
    if name == "latent":
        p["ep"] = rng.choice([e for e in (1, 2, 4) if (p["tp"] * dp) % e == 0])
        p["moe_token_dispatcher_type"] = rng.choice(["alltoall", "allgather"])
    gpus = p["tp"] * p["pp"] * dp
    mbs = rng.choice([1, 2])
    cfg["parallel"] = p
    cfg["training"].update(micro_batch_size=mbs,
                           global_batch_size=mbs * dp * rng.choice([1, 4]) * p["pp"])
    cfg["cluster"] = dict(cfg["cluster"], num_gpus=gpus, gpus_per_node=min(gpus, 8))
    return cfg


def rtexport_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        from fuzz51 import _round_trip
        for i in range(150):
            cfg = _hybrid_layout(rng)
            per_kernel = i % 5 == 0
            label = json.dumps({"pattern": cfg["model"]["hybrid_layer_pattern"],
                                **{k: cfg[k] for k in ("parallel", "training")}}, sort_keys=True)
            yield f"{'per-kernel ' if per_kernel else ''}{label}", (
                lambda c=cfg, k=per_kernel: _round_trip(c, workdir, k))
    return cases


# ------------------------------------------------------------------------------ chakradur

SCHEMA_MAX_S = (2**64 - 1) * 1e-6
"""The longest node Chakra's ``uint64 duration_micros`` states (mlcommons/chakra@6dc63e14
schema/protobuf/et_def.proto, message Node field 7): past it a duration must be refused."""
US = [0, 1, 2**53, 2**63, 2**64 - 1, 2**64, 2**66, 2**70 - 1]
EXACT: list[tuple[str, Any]] = [("double", 5e-324), ("double", 1e13), ("double", 1.8e13),
                                ("double", 1.9e13), ("double", 1e308), ("double", -0.0),
                                ("int64", 3), ("int64", -3), ("string", "0.5"),
                                ("uint64", 2**64 - 1)]


def chakradur_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        from trainsim.catalog import run_config_from_dict
        from trainsim.interop import wire
        from trainsim.interop.chakra import export_chakra, read_chakra
        from trainsim.interop.chakra_et import N_DUR, encode_metadata, encode_node, read_et

        cfg = copy.deepcopy(BASES["dense"])
        cfg["parallel"]["pp"] = 2
        d = Path(tempfile.mkdtemp(dir=workdir))
        ex = export_chakra(run_config_from_dict(cfg), d / "w")
        data = ex.paths[0].read_bytes()
        nodes = read_et(ex.paths[0])[1]

        def attempt(edited: list[Any], exact: bool, longest: float,
                    extra: bytes = b"", past: bool = False) -> str | None:
            msgs = [encode_node(n) for n in edited]
            msgs[0] += extra
            ex.paths[0].write_bytes(wire.write_delimited([encode_metadata(), *msgs]))
            try:
                t = read_chakra(d / "w", exact=exact)
            finally:
                ex.paths[0].write_bytes(data)
            if past:
                return f"a duration past the schema's uint64 microseconds read as {t!r} s"
            if not (math.isfinite(t) and t >= longest * (1 - 1e-12)):
                return f"read back as {t!r} (its longest node lasts {longest!r} s)"
            return None

        def plain(n: Any) -> Any:
            return dataclasses.replace(n, attrs={k: v for k, v in n.attrs.items()
                                                 if k != "trainsim.duration_s"})

        for us in US:
            for where in ("first", "two", "every"):
                k = {"first": 1, "two": 2, "every": len(nodes)}[where]
                if us < 2**64:
                    edited = [dataclasses.replace(plain(n), duration_micros=us)
                              for n in nodes[:k]] + nodes[k:]
                    yield f"duration_micros={us} {where}", (
                        lambda e=edited, u=us: attempt(e, False, u * 1e-6))
                else:  # past a uint64: written as a second varint of field 7 (the last wins)
                    extra = wire.key(N_DUR, wire.VARINT) + wire.varint(us)
                    yield f"duration_micros={us} (a {us.bit_length()}-bit varint)", (
                        lambda x=extra: attempt([plain(nodes[0]), *nodes[1:]], False, 0.0, x,
                                                past=True))
        for kind, value in EXACT:
            for where in ("first", "two", "every"):
                k = {"first": 1, "two": 2, "every": len(nodes)}[where]
                edited = [dataclasses.replace(n, attrs={**n.attrs, "trainsim.duration_s":
                                                        (kind, value)}) for n in nodes[:k]]
                longest = max(float(value), 0.0) if kind != "string" else 0.0
                past = kind != "string" and float(value) > SCHEMA_MAX_S
                yield f"trainsim.duration_s={kind} {value!r} {where}", (
                    lambda e=edited + nodes[k:], lo=longest, x=past: attempt(e, True, lo,
                                                                             past=x))
    return cases


# ------------------------------------------------------------------------------ http

HUGE_TEXT = ["1e400", "-1e400", "1" + "0" * 5000, "NaN", "Infinity", "-Infinity"]
"""Numbers as raw JSON text (json.dumps cannot write them)."""
HUGE = [10**30, 2**63, 2**64, -1, 0, 0.5, 1e308, 5e-324, "1e3", True, None, [], {}]
OPTIONS = {"simulate": {},
           "search": {"gpus": 8, "global_batch": 16, "seq": 512, "top": 1, "tp": "1,2",
                      "pp": "1", "max_micro_batch": 1, "recompute": "none"},
           "plan": {"tokens": "1e9", "days": 30, "max_gpus": 8, "seq": 512, "tp": "1",
                    "pp": "1", "max_micro_batch": 1, "recompute": "none"},
           "goodput": {"tokens": "1e9", "trials": 5},
           "sweep": {"vary": ["training.micro_batch_size=1,2"], "steps": 2}}
"""Each job kind's options around the one fuzzed (small: a job that is queued runs nowhere)."""


def _client(workdir: str, state: dict[str, Any]) -> tuple[Any, dict[str, str]]:
    if not state:
        from fastapi.testclient import TestClient

        from trainsim.service import Settings, create_app
        from trainsim.service.settings import Limits

        app = create_app(Settings(db_url=f"sqlite:///{Path(workdir) / 's52.db'}", workers=0,
                                  checkers=0, limits=Limits(max_active_jobs=10**6,
                                                            sync_timeout_s=0.05)),
                         start_workers=False)
        client = TestClient(app)
        client.__enter__()
        state["c"] = (client, {"Authorization": f"Bearer {app.state.store.create_token('f')}",
                               "Content-Type": "application/json"})
    return state["c"]


def _answered(r: Any) -> str | None:
    if r.status_code >= 500 and r.status_code != 504:  # 504: a /simulate with no worker
        return f"HTTP {r.status_code}: {r.text[:140]}"
    if 400 <= r.status_code < 500:
        try:
            err = r.json().get("error", r.json().get("detail"))
        except ValueError:
            return f"HTTP {r.status_code} without a JSON error: {r.text[:100]}"
        if not isinstance(err, str) or not err.strip() or "\n" in err.strip():
            return f"HTTP {r.status_code} error not one line: {str(err)[:140]}"
        REFUSED[0] += 1
    return None


def _option_paths(kind: str) -> list[str]:
    """Every option of a job kind (the service's table) but the switches for files."""
    from trainsim.service.requests import OPTIONS as KNOWN

    return [k for k in KNOWN[kind] if k not in ("plot", "trace")]


def http_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    state: dict[str, Any] = {}

    def post(body: str) -> str | None:
        client, headers = _client(workdir, state)
        return _answered(client.post("/api/v1/jobs", content=body.encode("utf-8"),
                                     headers=headers))

    def cases() -> Iterator[Case]:
        from trainsim.catalog import run_config_from_dict
        from trainsim.simulator import simulate

        resolved = {name: simulate(run_config_from_dict(copy.deepcopy(cfg))).to_dict()["config"]
                    for name, cfg in SMALL.items()}
        def accepted(body: str) -> str | None:
            client, headers = _client(workdir, state)
            r = client.post("/api/v1/jobs", content=body.encode("utf-8"), headers=headers)
            return None if r.status_code == 202 else \
                f"a resolved config posted back: HTTP {r.status_code} {r.text[:120]}"

        for name, cfg in resolved.items():
            for kind in ("simulate", "goodput"):
                body = json.dumps({"kind": kind, "config": cfg, "options": OPTIONS[kind]})
                yield f"{kind} job of the resolved {name} config", (lambda b=body: accepted(b))
        for kind, options in OPTIONS.items():
            base = "hybrid" if kind in ("simulate", "sweep") else "dense"
            if kind in ("search", "plan"):
                options = {"model": "llama3.2-1b", "gpu": "h100-sxm-80gb", **options}
            for key in _option_paths(kind) + ["bogus"]:
                for value in HUGE:
                    body = json.dumps({"kind": kind, "config": SMALL[base],
                                       "options": {**options, key: value}})
                    yield f"{kind} options.{key}={value!r}", (lambda b=body: post(b))
                for text in HUGE_TEXT:
                    body = json.dumps({"kind": kind, "config": SMALL[base],
                                       "options": {**options, key: "@@"}}).replace('"@@"', text)
                    yield f"{kind} options.{key}={text[:12]}", (lambda b=body: post(b))
        for field in ("hybrid_layer_pattern", "mamba_num_heads", "mamba_state_dim",
                      "moe_latent_size", "mtp_num_layers", "num_experts"):
            for text in HUGE_TEXT + ["[1, 2]", '"M" ', '"' + "M" * 200_000 + '"']:
                cfg = copy.deepcopy(LATENT)
                cfg["model"][field] = "@@"
                body = json.dumps({"kind": "simulate", "config": cfg}).replace('"@@"', text)
                yield f"simulate model.{field}={text[:12]}", (lambda b=body: post(b))
    return cases


# ------------------------------------------------------------------------------ rtsearch

SEARCH_PRESETS = {"nemotron-h-8b": 16, "nemotron-3-nano-30b-a3b": 16, "mixtral-8x7b": 16,
                  "deepseek-v2-lite": 16, "llama3.2-1b": 8, "qwen3-30b-a3b": 16}
SEARCH_DRAWS = {"--tp": ["1,2", "1,2,4", "2"], "--pp": ["1", "1,2", "2,4"], "--cp": ["1", "1,2"],
                "--ep": ["1,8", "2,4,8", "8"], "--dispatcher": ["alltoall", "alltoall,deepep"],
                "--schedules": ["1f1b,interleaved_1f1b", "zb_h1,1f1b", "dualpipe,1f1b"],
                "--recompute": ["none", "selective", "none,full"], "--zero": ["0,1", "1,3"],
                "--dtype": ["bf16", "fp8"], "--max-micro-batch": ["1", "2"],
                "--overlap": ["on", "off", "search"]}


def _rtsearch(preset: str, gpus: int, extra: list[str], plan: bool) -> str | None:
    """Each ranked entry's ``parallel`` section (the JSON's "reproduces it under simulate") over
    the search's base simulates to the entry's iteration, to the bit."""
    from fuzz51 import _errors, _invoke

    from trainsim.catalog import run_config_from_dict
    from trainsim.simulator import simulate

    head = ["plan", preset, "--tokens", "1e10", "--days", "30", "--max-gpus", str(gpus)] if plan \
        else ["search", preset, "--gpus", str(gpus), "--global-batch", "32", "--top", "3"]
    r = _invoke([*head, "--seq", "4096", "--workers", "1", "--format", "json", *extra])
    if r.exit_code == 2:
        lines = _errors(r)
        if len(lines) != 1:
            return f"a refusal of {len(lines)} lines"
        raise TrainsimError(lines[0])
    if r.exit_code not in (0, 1) or (r.exit_code == 1 and not plan):
        return f"exit {r.exit_code}: {_errors(r)[:1]}"
    out = json.loads(r.stdout)
    entries = [out[k] for k in ("best", "closest") if out.get(k)] if plan else out["top"]
    for e in entries:
        raw = {"model": preset, "parallel": e["parallel"],
               "training": {"global_batch_size": 2**round(math.log2(4 * 2**20 / 4096)) if plan
                            else 32,
                            "seq_length": 4096, "micro_batch_size": e["config"]["micro_batch_size"],
                            "dtype": e["config"].get("dtype") or
                            (extra[extra.index("--dtype") + 1] if "--dtype" in extra else "bf16")},
               "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": e["config"]["num_gpus"],
                           "gpus_per_node": 8}}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = simulate(run_config_from_dict(raw)).iteration_time_s
        if got != e["iteration_time_s"]:
            return f"{e['label']}: its parallel section simulates to {got!r}, not " \
                   f"{e['iteration_time_s']!r}"
    return None


def rtsearch_cases(rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        presets = list(SEARCH_PRESETS)
        for i in range(36):
            preset = presets[i % len(presets)]
            extra: list[str] = []
            for option, values in SEARCH_DRAWS.items():
                if rng.random() < 0.3:
                    extra += [option, rng.choice(values)]
            plan = i % 6 == 5
            yield f"{'plan' if plan else 'search'} {preset} {' '.join(extra)}", (
                lambda p=preset, x=extra, pl=plan: _rtsearch(p, SEARCH_PRESETS[p], x, pl))
    return cases


# ------------------------------------------------------------------------------ valfiles

CELLS = ["0", "-1", "1e400", "1" + "0" * 30, str(2**63), "1e-300", "nan", "inf", "1,024",
         "1e3", "", "x", "2.5"]
"""A numeric cell of a kernels CSV as another tool may write it (1e400: a float's overflow)."""
RECORD_VALUES: list[Any] = [0, -1, 10**30, 2**63, 1e-300, 1e308, 2.5, "8", None, [], True]
"""A layers record's number (shape, seq, mbs, a time) as another tool may write it."""
RECORD_RAW = ["1e400", "NaN", "-Infinity", "1" + "0" * 5000]


def _kernel_rows() -> list[dict[str, str]]:
    """Two rows of each (kind, implementation) of the bundled kernels files and benchmarks'
    SSD rows (the Triton SSD chunk scan: 2,560-5,120 groups)."""
    import csv

    from trainsim.validate import common  # noqa: F401  (the package's data folder below)

    here = Path(__file__).resolve().parent
    data = here.parent / "src" / "trainsim" / "data" / "validation"
    out: dict[tuple[str, str], list[dict[str, str]]] = {}
    for path in (data / "kernels_published.csv", data / "kernels_h100_measured.csv",
                 here / "kernels_ssd.csv"):
        with open(path, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                kept = out.setdefault((row["kind"], row["implementation"]), [])
                if len(kept) < 2:
                    kept.append(row)
    return [r for rows in out.values() for r in rows]


def _validate(path: Path) -> dict[str, Any]:
    from fuzz51 import _errors, _invoke

    r = _invoke(["validate", str(path), "--format", "json"])
    if r.exit_code != 0:
        lines = _errors(r)
        if len(lines) != 1:
            raise AssertionError(f"validate exit {r.exit_code} with {len(lines)} lines")
        raise TrainsimError(lines[0])  # the file refused in one line
    return json.loads(r.stdout)


def _rows_checked(got: dict[str, Any], clean: dict[str, Any], damaged: str) -> str | None:
    rows = {r["id"]: r for r in got["rows"]}
    for rid, row in rows.items():
        err = row.get("error")
        if rid == damaged:
            if err is not None and (not str(err).strip() or "\n" in str(err).strip()):
                return f"the damaged row's error is not one line: {str(err)[:100]}"
            p = row.get("predicted")
            if err is None and not (isinstance(p, (int, float)) and math.isfinite(p) and p > 0):
                return f"the damaged row predicted {p!r} with no error"
        elif row.get("predicted") != clean[rid].get("predicted"):
            return f"an untouched row {rid} predicted {row.get('predicted')!r}, not " \
                   f"{clean[rid].get('predicted')!r}"
    failed = sum(1 for r in got["rows"] if r.get("error") is not None)
    if got["summary"].get("failed") != failed:
        return f"summary.failed {got['summary'].get('failed')} of {failed} rows with an error"
    return None


def valfiles_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        import csv

        rows = _kernel_rows()
        columns = list(rows[0].keys())
        numeric = [c for c in columns if c not in ("id", "source", "gpu", "kind",
                                                   "implementation", "dtype", "note",
                                                   "measured_unit", "causal")]
        d = Path(tempfile.mkdtemp(dir=workdir))
        clean_of: dict[str, dict[str, Any]] = {}

        def write(path: Path, chosen: list[dict[str, str]]) -> None:
            with open(path, "w", newline="", encoding="utf-8") as f:
                w = csv.DictWriter(f, fieldnames=columns)
                w.writeheader()
                w.writerows(chosen)

        def one(i: int, column: str, cell: str) -> str | None:
            other = rows[(i + 1) % len(rows)]
            pair = [dict(rows[i]), other]
            key = f"{rows[i]['id']}|{other['id']}"
            if key not in clean_of:
                write(d / "clean.csv", pair)
                clean_of[key] = {r["id"]: r for r in _validate(d / "clean.csv")["rows"]}
            pair[0][column] = cell
            write(d / "damaged.csv", pair)
            return _rows_checked(_validate(d / "damaged.csv"), clean_of[key], rows[i]["id"])

        for i, row in enumerate(rows):
            for column in numeric:
                if not row[column].strip():
                    continue  # a cell its kind does not read (checked by fuzz15)
                for cell in CELLS:
                    yield f"kernels {row['id']} {column}={cell[:12]}", (
                        lambda i=i, c=column, v=cell: one(i, c, v))
        # layers records
        src = Path(__file__).resolve().parent.parent / "src" / "trainsim" / "data" / \
            "validation" / "layers_h100_measured.jsonl"
        records = [json.loads(x) for x in src.read_text(encoding="utf-8").splitlines()[:3]]

        def record(j: int, path: tuple[str, ...], value: Any, raw: str | None) -> str | None:
            recs = copy.deepcopy(records)
            target = recs[j]
            for k in path[:-1]:
                target = target[k]
            target[path[-1]] = "@@" if raw is not None else value
            text = "\n".join(json.dumps(r) for r in recs)
            if raw is not None:
                text = text.replace('"@@"', raw)
            (d / "layers.jsonl").write_text(text + "\n", encoding="utf-8")
            (d / "clean.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n",
                                           encoding="utf-8")
            if "layers" not in clean_of:
                clean_of["layers"] = {r["id"]: r for r in _validate(d / "clean.jsonl")["rows"]}
            got = _validate(d / "layers.jsonl")
            damaged = got["rows"][j]["id"] if j < len(got["rows"]) else None
            return _rows_checked(got, clean_of["layers"], damaged)

        paths = [("shape", "h"), ("shape", "ffn"), ("shape", "heads"), ("shape", "kv"),
                 ("seq",), ("mbs",), ("fwd_ms",), ("fwd_bwd_ms",), ("params",),
                 ("saved_activation_bytes",)]
        for j in range(len(records)):
            for path in paths:
                for value in RECORD_VALUES:
                    yield f"layers record {j} {'.'.join(path)}={value!r}", (
                        lambda j=j, p=path, v=value: record(j, p, v, None))
                for raw in RECORD_RAW:
                    yield f"layers record {j} {'.'.join(path)}={raw[:12]}", (
                        lambda j=j, p=path, r=raw: record(j, p, None, r))
    return cases


# ------------------------------------------------------------------------------ main

def main(argv: list[str] | None = None) -> int:
    return fuzz_checks.seeded_round(52, argv, lambda workdir, rng: {
        "rtconfig": rtconfig_cases(workdir, rng), "rtexport": rtexport_cases(workdir, rng),
        "chakradur": chakradur_cases(workdir), "http": http_cases(workdir),
        "valfiles": valfiles_cases(workdir, rng), "rtsearch": rtsearch_cases(rng)})


if __name__ == "__main__":
    fuzz_checks.run_round(main)
