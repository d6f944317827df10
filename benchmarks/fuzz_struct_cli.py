"""The command-line and HTTP surfaces of benchmarks/fuzz_struct.py (2026-11-24, 15th session):
``--set``/``--format`` text, profile (no GPU) and catalog arguments, search/plan text options,
``sweep --vary`` text, and the service's HTTP API with raw bodies (FastAPI TestClient)."""
from __future__ import annotations

import os
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_sweep import _cli

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / "src" / "trainsim" / "data" / "validation"  # the bundled copies

# ------------------------------------------------------------------------------ flags

FLAG_TEXT = ["", "=", "==", ".", "..", "a.b.c.d=1", "model=", "model=x", "parallel.tp=abc",
             "parallel=3", "parallel.tp=[2]", "parallel.tp={a: 1}", "cluster.gpu=",
             "cluster.gpu=x", "training.dtype=", "model.=1", ".=1", "parallel..tp=2",
             "parallel.tp.=2", "\u00e9=1", "parallel.tp=2=3", "parallel.tp=\u0662",
             "cluster.gpu_overrides=1", "cluster.gpu_overrides.x=1", "model.name=\x00",
             "model=llama3-8b", "model={}", "model=[]", "training={}", "cluster=null",
             "parallel.tp=null", "parallel.tp=~", "parallel.tp=!!int 2", "parallel.tp=&a 2",
             "parallel.tp=*a", "training.seq_length=1_024", "parallel.tp=+2",
             "training.global_batch_size=1e2", "parallel.tp=2.0", "parallel.tp=0b10",
             "cluster.num_gpus=8 ", " parallel.tp=2", "PARALLEL.TP=2", "reliability=1",
             "reliability.bogus=1", "model.num_experts=0", "training.framework=",
             "training.framework=x", "cluster.node=", "cluster.node=x"]
FORMATS = ["json", "table", "JSON", "", "csv", "yaml", " json", "x"]


def flag_cases(rng: random.Random, workdir: Path, n: int) -> Iterator[tuple[str, Callable]]:
    base = str(ROOT / "examples" / "llama3-8b-h100.yaml")
    for s in FLAG_TEXT:
        yield f"--set {s!r}", (lambda a=["simulate", base, "--format", "json", "--set", s]:
                               _cli(a))
    for f in FORMATS:
        for cmd in (["simulate", base], ["validate", str(SHARED / "collectives_public.csv")],
                    ["catalog", "gpus"], ["sweep", base, "--vary", "parallel.tp=1,2"]):
            yield f"{cmd[0]} --format {f!r}", (lambda a=cmd + ["--format", f]: _cli(a))
    profile = [["--device", "cpu", "--quick", "--out", str(workdir / "p.json")],
               ["--device", "cpu", "--quick", "--tp", "x", "--out", str(workdir / "p.json")],
               ["--device", "cpu", "--quick", "--tp", "0", "--out", str(workdir / "p.json")],
               ["--device", "cpu", "--quick", "--seq", "", "--out", str(workdir / "p.json")],
               ["--device", "cpu", "--quick", "--models", "bogus", "--out",
                str(workdir / "p.json")],
               ["--device", "cpu", "--quick", "--gpu", "bogus", "--out",
                str(workdir / "p.json")],
               ["--device", "cuda", "--quick", "--out", str(workdir / "p.json")],
               ["--device", "cpu", "--quick", "--out", str(workdir)],
               ["--device", "cpu", "--quick", "--cp", "-1", "--out", str(workdir / "p.json")],
               ["--device", "cpu", "--quick", "--no-kernels", "--no-layers", "--out",
                str(workdir / "p.json")]]
    for extra in profile:
        yield "profile " + " ".join(extra), (lambda a=["profile"] + extra: _cli(a))
    catalog = [["gpus"], ["models"], ["nodes"], ["x"], [""], ["gpus", "x"], ["frameworks"],
               ["failures"]]
    for extra in catalog:
        yield "catalog " + " ".join(extra), (lambda a=["catalog"] + extra: _cli(a))
    for _ in range(n):
        sets = rng.sample(FLAG_TEXT, 2)
        args = ["simulate", base, "--format", "json"]
        for s in sets:
            args += ["--set", s]
        yield " ".join(args[2:]), (lambda a=args: _cli(a))


ODD_LISTS = ["", ",", " ", "1,,2", "0", "-1", "x", "1e3", "1:4", "2,2", "nan", "8,", "\u00e0",
             "1,2,3,4,5,6,7,8,9,10", "1.5", "2**3", "[1,2]", "1 2", "\x00", "+2", "0x2"]
SEARCH_TEXT = {"--tp": ["1", "2", "1,2"], "--pp": ["1", "2"], "--cp": ["1", "2"],
               "--ep": ["1", "2", "8"], "--etp": ["1", "2"], "--recompute": ["none", "full",
                                                                            "selective"],
               "--zero": ["0", "1", "3"], "--dispatcher": ["alltoall", "allgather", "deepep"],
               "--schedules": ["1f1b", "interleaved", "zero-bubble", "dualpipe"],
               "--reference": ["tp=2,pp=1", "tp=1", "tp=2,pp=2,ep=2"],
               "--gpus": ["8", "4,8", "16"], "--gpu": ["h100-sxm-80gb", "a100-sxm-80gb"]}


def search_opt_cases(rng: random.Random, workdir: Path, n: int) -> Iterator[tuple[str, Callable]]:
    """search/plan of a tiny MoE model with the options that take text given odd text."""
    import yaml
    from fuzz_checks import MOE
    path = workdir / "moe-model.yaml"
    path.write_text(yaml.safe_dump({"model": MOE["model"]}))
    for _ in range(n):
        cmd = rng.choice(["search", "search", "plan"])
        args = [cmd, str(path), "--workers", "1", "--format", "json", "--seq", "256",
                "--global-batch", "16", "--max-vpp", "2"]
        args += ["--gpus", "8"] if cmd == "search" else ["--tokens", "1B", "--days", "1",
                                                          "--max-gpus", "16"]
        opts = rng.sample(sorted(set(SEARCH_TEXT) - {"--gpus"} if cmd == "plan"
                                 else SEARCH_TEXT), rng.randint(1, 3))
        for opt in opts:
            args += [opt, rng.choice(ODD_LISTS) if rng.random() < 0.5
                     else rng.choice(SEARCH_TEXT[opt])]
        yield " ".join([cmd] + args[9:]), (lambda a=args: _cli(a))


VARY_ODD = ["parallel.tp=", "=1,2", "x=1:2", "parallel.tp=1:", "parallel.tp=2:1",
            "training.dtype=1:2", "model=llama3-8b,llama3-70b", "parallel.tp=1:8:2",
            "cluster.gpu=h100-sxm-80gb,a100-sxm-80gb", "cluster.gpu_overrides.hbm_gib=1e-300:1",
            "parallel=1,2", "parallel.tp=1,1,1", "training.seq_length=8192:1",
            "cluster.num_gpus=8:8", "parallel.tp=nan:8", "parallel.tp=1:inf",
            "training.global_batch_size=128,128.5", "parallel.sequence_parallel=true,false",
            "parallel.recompute=full,x", "cluster.node=dgx-h100,x", "model.num_layers=32,",
            "parallel.tp.x=1,2", "parallel.tp=\u0661,2"]


def sweep_odd_cases(rng: random.Random, workdir: Path, n: int) -> Iterator[tuple[str, Callable]]:
    base = str(ROOT / "examples" / "llama3-8b-h100.yaml")
    for v in VARY_ODD:
        yield f"sweep --vary {v!r}", (lambda a=["sweep", base, "--format", "json", "--steps",
                                                "2", "--vary", v]: _cli(a))
    for _ in range(n):
        args = ["sweep", base, "--format", rng.choice(["json", "csv"]), "--steps",
                rng.choice(["1", "2", "3"])]
        for v in rng.sample(VARY_ODD, 2):
            args += ["--vary", v]
        yield " ".join(args[2:]), (lambda a=args: _cli(a))


# ------------------------------------------------------------------------------ http

BODIES = [b"", b"{", b"null", b"[]", b"1", b'"x"', b"{}", b'{"kind": null}',
          b'{"kind": "simulate"}', b'{"kind": "simulate", "config": null}',
          b'{"kind": "simulate", "config": "llama3-8b"}',
          b'{"kind": "simulate", "config": {"model": "llama3-8b"}, "options": null}',
          b'{"kind": "simulate", "config": {"model": "llama3-8b"}, "options": []}',
          b'{"kind": "simulate", "config": {"model": NaN}}',
          b'{"kind": "simulate", "config": {"model": Infinity}}',
          b'{"kind": "simulate", "config": {"model": 1' + b"0" * 5000 + b"}}",
          b'{"kind": "simulate", "config": {"model": "llama3-8b", "model": "x"}}',
          b'{"kind": "simulate", "config": ' + b"[" * 2000 + b"]" * 2000 + b"}",
          b'\xff\xfe{}', b'{"kind": "\xc3\x28"}', b'{"config": {"parallel": {"tp": 1e999}}}',
          b'{"kind": "sweep", "config": {"model": "llama3-8b"}, "options": {"vary": "x"}}',
          b'{"kind": "sweep", "config": {"model": "llama3-8b"}, "options": {"vary": [null]}}',
          b'{"kind": "goodput", "config": {"model": "llama3-8b"}, "options": {"tokens": []}}',
          b'{"kind": "validate", "config": {}, "options": {"csv": "\\u0000"}}',
          b'{"kind": "search", "config": {"model": {"x": 1}}, "options": {}}',
          b'{"kind": "plan", "config": {"model": "llama3-8b"}, "options": {"days": "1e999"}}']
ROUTES = [("POST", "/api/v1/jobs"), ("POST", "/api/v1/simulate"), ("GET", "/api/v1/jobs"),
          ("GET", "/api/v1/jobs?limit=-1"), ("GET", "/api/v1/jobs?limit=x"),
          ("GET", "/api/v1/jobs?limit=1e999"), ("GET", "/api/v1/jobs?status=x"),
          ("GET", "/api/v1/jobs?offset=-5"), ("GET", "/api/v1/jobs/0"),
          ("GET", "/api/v1/jobs/-1/result"), ("GET", "/api/v1/jobs/%00"),
          ("DELETE", "/api/v1/jobs/99999999999999999999999"),
          ("GET", "/api/v1/catalog/gpus"), ("GET", "/api/v1/catalog/%C3%A9"),
          ("GET", "/api/v1/validation/files"), ("GET", "/api/v1/jobs/1/plot"),
          ("GET", "/api/v1/jobs/1/trace"), ("PUT", "/api/v1/jobs"), ("GET", "/api/v1/health")]


def http_cases(rng: random.Random, workdir: Path, n: int) -> Iterator[tuple[str, Callable]]:
    try:
        from fastapi.testclient import TestClient

        from trainsim.service import Settings, create_app
    except ImportError:
        return
    app = create_app(Settings(db_url=f"sqlite:///{workdir / 'jobs.db'}", workers=0,
                              checkers=0).with_limits(sync_timeout_s=0.05),
                     start_workers=False)
    # exited after the last case (or when the cases are dropped): the lifespan's shutdown stops
    # the app's threads and unfreezes the collector
    with TestClient(app, raise_server_exceptions=True) as client:
        auth = {"Authorization": f"Bearer {app.state.store.create_token('fuzz')}"}
        heads = [auth, {}, {"Authorization": "Bearer x"},
                 {**auth, "Content-Type": "text/plain"}]
        for method, route in ROUTES:
            for body in (BODIES if method in ("POST", "PUT") else [None]):
                h = rng.choice(heads) if rng.random() < 0.2 else auth
                yield f"{method} {route} {body[:60] if body else ''!r}", \
                    (lambda m=method, r=route, b=body, hh=h: _http(client, m, r, b, hh))


def _http(client, method: str, route: str, body: bytes | None, headers: dict) -> str | None:
    r = client.request(method, route, content=body, headers={**headers,
                       "Content-Type": headers.get("Content-Type", "application/json")})
    if r.status_code >= 500 and r.status_code != 504:
        return f"status {r.status_code}"
    try:
        data = r.json()
    except ValueError:
        return f"status {r.status_code}: not JSON"
    one_line_error = isinstance(data, dict) and set(data) == {"error", "field"} and \
        bool(data["error"]) and "\n" not in data["error"]
    if r.status_code >= 400 and not one_line_error:
        return f"status {r.status_code}: an error body that is not one line naming a field"
    return None
