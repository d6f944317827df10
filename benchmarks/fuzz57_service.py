"""The names, emptysections, lifecycle and profiledb surfaces of benchmarks/fuzz57.py
(2026-11-29, robust57): names a user writes, sections given empty, the service's job
lifecycle, and kernel databases a user brings."""

from __future__ import annotations

import copy
import json
import math
import random
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fuzz_checks
import yaml
from fuzz_checks import BASES, REFUSED, Case

CATALOG = Path(__file__).resolve().parent.parent / "src" / "trainsim" / "catalog"
KERNELS = Path(__file__).resolve().parent.parent / "src" / "trainsim" / "data" / "kernels"


def _run(args: list[str]) -> tuple[Any, list[str]]:
    from fuzz51 import _errors, _invoke

    r = _invoke(args)
    return r, _errors(r)


def _one_line(r: Any, lines: list[str], *words: str) -> str | None:
    from fuzz57 import one_line

    return one_line(r, lines, *words)


def _write(d: Path, name: str, data: Any) -> str:
    path = d / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return str(path)


# ------------------------------------------------------------------------------ names

NAMES = ["", " ", "x" * 5000, "模型", "ｍｏｄｅｌ", "[red]x[/]", "[/]", ":warning:", "a\nb", "a\tb",
         "\u202eabc", "x\x00y", "😀" * 60, "a,b", 'a"b', "--set", "[bold]", "\\", "a b c",
         "é" * 300, "\u200b", "null", "1e3", "name: x", "{a}", "%s%d"]
"""Names: blank, very long, other scripts, rich markup and emoji codes, control characters,
bidirectional and zero-width marks, CSV and YAML syntax."""


def _shows(name: str, out: str) -> bool:
    """Whether a table shows a short, printable, one-line ``name`` as written (its markup not
    read: '[red]x[/]' printed, not a red 'x')."""
    if len(name) > 12 or not name.strip() or not name.isprintable() or not name.isascii():
        return True
    return name in out


def name_check(args: list[str], field: str, name: str, where: Callable[[dict], Any],
               shown: bool = True) -> str | None:
    """A run with ``name`` in ``field``: its table shows the name as written, its JSON holds it
    (``where`` reads it back), or it is refused in one line naming the field."""
    r, lines = _run(args + ["--format", "json"])
    if r.exit_code != 0:
        return _one_line(r, lines, field)
    got = where(json.loads(r.stdout))
    if got is not None and got != name and got != name.strip():
        return f"{field}: the JSON holds {str(got)[:40]!r}, not the name written"
    t, tl = _run(args)
    if t.exit_code != 0:
        return f"{field}: the table refused what the JSON answered: {(tl or [''])[0][:80]}"
    if shown and not _shows(name, t.stdout):
        return f"{field}: the table does not show {name!r} as written"
    return None


def names_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        d = Path(workdir)
        gpu = yaml.safe_load((CATALOG / "gpus" / "h100-sxm-80gb.yaml").read_text("utf-8"))
        failures = yaml.safe_load((CATALOG / "failures" / "llama3-405b-16k-h100.yaml")
                                  .read_text("utf-8"))
        for k, name in enumerate(NAMES):
            raw = copy.deepcopy(BASES["dense"])
            raw["model"]["name"] = name
            path = _write(d, f"n_model{k}.json", raw)
            yield f"model.name={name[:40]!r}", (
                lambda a=["simulate", path], n=name: name_check(
                    a, "model.name", n, lambda j: j["config"]["model"]["name"]))
            raw = copy.deepcopy(BASES["dense"])
            raw["name"] = name
            path = _write(d, f"n_run{k}.json", raw)
            yield f"name={name[:40]!r}", (
                lambda a=["simulate", path]: name_check(a, "name", "", lambda j: None))
            g = _write(d, f"n_gpu{k}.yaml", yaml.safe_dump({**gpu, "name": name},
                                                          allow_unicode=True))
            raw = copy.deepcopy(BASES["dense"])
            raw["cluster"]["gpu"] = g
            path = _write(d, f"n_gpucfg{k}.json", raw)
            yield f"cluster.gpu file name={name[:40]!r}", (
                lambda a=["simulate", path], n=name: name_check(
                    a, "name", n, lambda j: j["config"]["cluster"]["gpu"]["name"]))
            f = _write(d, f"n_fail{k}.yaml", yaml.safe_dump({**failures, "name": name},
                                                           allow_unicode=True))
            dense = _write(d, "n_dense.json", BASES["dense"])
            yield f"goodput --failures name={name[:40]!r}", (
                lambda a=["goodput", dense, "--failures", f, "--tokens", "1e9", "--trials", "3"],
                n=name: name_check(a, "name", n, lambda j: None, shown=False))
        from fuzz53 import _pair_check
        from fuzz54 import public_rows

        rows, columns = public_rows()
        one = _pair_check(rows, columns, workdir)
        small = [k for k, r in enumerate(rows) if r["num_gpus"].isdigit()
                 and int(r["num_gpus"]) <= 64]
        for name in rng.sample(NAMES, 12):
            i, j = rng.sample(small, 2)
            yield f"row id={name[:40]!r}", (lambda i=i, j=j, n=name: _row_id(one, i, j, n))
    return cases


def _row_id(one: Callable, i: int, j: int, name: str) -> str | None:
    from trainsim.errors import TrainsimError

    try:
        return one(i, j, {"id": name})
    except KeyError:  # the row's id was read otherwise (stripped): fuzz52's oracle keys by id
        return None
    except TrainsimError:
        raise


# ------------------------------------------------------------------------------ emptysections

EMPTY = [{}, None, "", "  ", []]
SECTIONS = ["parallel", "training", "reliability", "reliability.checkpoint",
            "reliability.recovery", "reliability.straggler", "cluster.gpu_overrides",
            "description", "name"]


def _put(raw: dict[str, Any], dotted: str, value: Any) -> None:
    node = raw
    parts = dotted.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value


def empty_check(d: Path, section: str, value: Any, k: int) -> str | None:
    """``section`` given ``value``: as left out where it is {} / null / blank, else one line
    naming it."""
    command = "goodput" if section.startswith("reliability") else "simulate"
    extra = ["--tokens", "1e9", "--trials", "3"] if command == "goodput" else []
    raw = copy.deepcopy(BASES["moe"])
    left_out = copy.deepcopy(raw)  # the section left out: what an empty one answers
    node, parts = left_out, section.split(".")
    for p in parts[:-1]:
        node = node.get(p, {})
    node.pop(parts[-1], None)
    want_r, _ = _run([command, _write(d, f"e_clean{k}.json", left_out), *extra, "--format",
                      "json"])
    _put(raw, section, value)
    r, lines = _run([command, _write(d, f"e{k}.json", raw), *extra, "--format", "json"])
    empty = value is None or value == {} or (isinstance(value, str) and not value.strip())
    if section in ("description", "name"):  # free text: any text is read as no section
        empty = not isinstance(value, (list, dict))
    if r.exit_code != 0:
        if empty:
            return f"{section}: an empty section refused"
        return _one_line(r, lines, section.split(".")[-1])
    if not empty:
        return f"{section}={value!r}: taken"
    a, b = json.loads(want_r.stdout), json.loads(r.stdout)
    return None if a == b else f"{section}: an empty section answered otherwise than left out"


def emptysections_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        d = Path(workdir)
        k = 0
        for section in SECTIONS:
            for value in EMPTY:
                k += 1
                yield f"{section}: {value!r}", (
                    lambda s=section, v=value, k=k: empty_check(d, s, v, k))
    return cases


# ------------------------------------------------------------------------------ lifecycle

MAX_ACTIVE = 3
JOBS = {"simulate": {}, "sweep": {"vary": ["training.micro_batch_size=1,2"]},
        "goodput": {"tokens": "1e9", "trials": 5}}


def _service(workdir: str, state: dict[str, Any]) -> dict[str, Any]:
    if not state:
        from fastapi.testclient import TestClient

        from trainsim.service import Settings, create_app
        from trainsim.service.settings import Limits

        app = create_app(Settings(db_url=f"sqlite:///{Path(workdir) / 's57.db'}", workers=0,
                                  checkers=0, limits=Limits(max_active_jobs=MAX_ACTIVE)),
                         start_workers=False)
        client = TestClient(app)
        client.__enter__()
        state.update(client=client, store=app.state.store)
    return state


def _token(state: dict[str, Any]) -> dict[str, str]:
    state["n"] = state.get("n", 0) + 1
    token = state["store"].create_token(f"t{state['n']}")
    return {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}


def _error(r: Any) -> str | None:
    if r.status_code >= 500:
        return f"HTTP {r.status_code}"
    if r.status_code >= 400:
        try:
            err = r.json().get("error")
        except ValueError:
            return f"HTTP {r.status_code} without a JSON error"
        if not isinstance(err, str) or not err.strip() or "\n" in err.strip():
            return f"HTTP {r.status_code}: an error not one line"
    return None


def lifecycle_check(state: dict[str, Any], ops: list[str], rng: random.Random) -> str | None:
    """One token's sequence ``ops`` against the documented answers."""
    c = state["client"]
    me, other = _token(state), _token(state)
    mine: dict[str, str] = {}  # id -> status
    theirs = c.post("/api/v1/jobs", headers=other, json={
        "kind": "simulate", "config": BASES["dense"]}).json()["id"]

    def expect(r: Any, *codes: int, what: str) -> str | None:
        bad = _error(r)
        if bad:
            return f"{what}: {bad}"
        if r.status_code not in codes:
            return f"{what}: HTTP {r.status_code}, not {'/'.join(map(str, codes))}"
        if r.status_code >= 400:
            REFUSED[0] += 1
        return None

    for op in ops:
        active = sum(1 for s in mine.values() if s in ("queued", "running"))
        job = rng.choice(sorted(mine)) if mine else None
        if op in ("submit", "resubmit"):
            kind = rng.choice(sorted(JOBS))
            r = c.post("/api/v1/jobs", headers=me, json={
                "kind": kind, "config": BASES["dense"], "options": JOBS[kind]})
            if bad := expect(r, 429 if active >= MAX_ACTIVE else 202, what=op):
                return bad
            if r.status_code == 202:
                if r.json()["id"] in mine:
                    return "a submit answered an id already given"
                mine[r.json()["id"]] = "queued"
        elif op == "burst":
            codes: list[int] = []
            body = {"kind": "simulate", "config": BASES["dense"]}

            def post(out: list[int] = codes, b: dict[str, Any] = body) -> None:
                out.append(c.post("/api/v1/jobs", headers=me, json=b).status_code)
            threads = [threading.Thread(target=post) for _ in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if any(x >= 500 for x in codes):
                return "a concurrent submit answered 5xx"
            for j in c.get("/api/v1/jobs?limit=1000", headers=me).json():
                mine.setdefault(j["id"], j["status"])
            now = sum(1 for s in mine.values() if s in ("queued", "running"))
            if now > MAX_ACTIVE:
                return "concurrent submits left more jobs active than max_active_jobs"
        elif op == "cancel" and job:
            r = c.delete(f"/api/v1/jobs/{job}", headers=me)
            if bad := expect(r, 200, what="cancel"):
                return bad
            want = "cancelled" if mine[job] in ("queued", "running") else mine[job]
            if r.json()["status"] != want:
                return f"a cancel of a {mine[job]} job answered {r.json()['status']}"
            mine[job] = want
        elif op == "get" and job:
            r = c.get(f"/api/v1/jobs/{job}", headers=me)
            if bad := expect(r, 200, what="get"):
                return bad
            if r.json()["status"] != mine[job]:
                return f"a {mine[job]} job read back {r.json()['status']}"
        elif op in ("result", "trace", "plot") and job:
            path = f"/api/v1/jobs/{job}" + ("/result" if op == "result" else f"/{op}")
            r = c.get(path, headers=me)
            if bad := expect(r, 409 if op == "result" else 404, what=f"{op} of a {mine[job]} job"):
                return bad
        elif op == "list":
            r = c.get("/api/v1/jobs?limit=1000", headers=me)
            if bad := expect(r, 200, what="list"):
                return bad
            got = {j["id"]: j["status"] for j in r.json()}
            if got != mine:
                return "the list is not the token's jobs as they stand"
        elif op == "foreign":
            verb = rng.choice(["get", "delete"])
            r = getattr(c, verb)(f"/api/v1/jobs/{theirs}", headers=me)
            if bad := expect(r, 404, what=f"{verb} of another token's job"):
                return bad
        elif op == "bogus":
            job_id = rng.choice(["0" * 32, "f" * 32, "A" * 32, "0" * 31, "0" * 33, "..", "%2F",
                                 "g" * 32, " " + "0" * 31, "0" * 32 + "/x"])
            verb = rng.choice(["get", "delete"])
            r = getattr(c, verb)(f"/api/v1/jobs/{job_id}", headers=me)
            want = (404,) if re.fullmatch("[0-9a-f]{32}", job_id) else (404, 422)
            if bad := expect(r, *want, what=f"{verb} of id {job_id!r}"):
                return bad
    return None


def lifecycle_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    state: dict[str, Any] = {}
    ops = ["submit", "submit", "resubmit", "cancel", "cancel", "get", "result", "trace", "plot",
           "list", "foreign", "bogus"]

    def cases() -> Iterator[Case]:
        for _ in range(60):
            seq = [rng.choice(ops) for _ in range(rng.randint(3, 12))]
            if rng.random() < 0.3:
                seq.insert(rng.randrange(len(seq) + 1), "burst")
            seed = rng.random()
            yield " ".join(seq), (lambda s=seq, x=seed: lifecycle_check(
                _service(workdir, state), s, random.Random(x)))
    return cases


# ------------------------------------------------------------------------------ profiledb

def _db_variants() -> dict[str, str]:
    raw = (KERNELS / "h100-sxm-80gb.json").read_text("utf-8")
    db = json.loads(raw)
    out = {"own": raw, "empty": "", "cut_third": raw[: len(raw) // 3],
           "cut_at_end": raw[:-2], "utf16": raw, "bom": "\ufeff" + raw,
           "not_json": "kernels: []"}
    for gpu in ("h200-sxm-141gb", "b200-sxm-180gb", "a100-sxm-80gb", "zz", "", None, 5, "H100"):
        out[f"gpu={gpu!r}"] = json.dumps({**db, "gpu": gpu})
    out["no gpu"] = json.dumps({k: v for k, v in db.items() if k != "gpu"})
    for dtype in ("fp16", "fp8", "fp32", "int8", "", None):
        out[f"dtype={dtype!r}"] = json.dumps({**db, "kernels": [
            {**k, "dtype": dtype} if "dtype" in k else k for k in db["kernels"]]})
    for key, value in (("kernels", None), ("kernels", {}), ("kernels", [1]), ("layers", {}),
                       ("layers", [None]), ("format", None), ("format", "trainsim-kernel-db/4")):
        out[f"{key}={value!r}"] = json.dumps({**db, key: value})
    for field, value in (("time_s", 0), ("time_s", "1e-3"), ("time_s", math.inf), ("m", -1),
                         ("m", 1.5), ("op", "conv"), ("repeats", None)):
        kernels = [dict(k) for k in db["kernels"]]
        kernels[0][field] = value
        out[f"kernels[0].{field}={value!r}"] = json.dumps({**db, "kernels": kernels},
                                                          allow_nan=True)
    return out


def profiledb_check(d: Path, name: str, text: str, k: int) -> str | None:
    path = d / f"db{k}.json"
    if name == "utf16":
        path.write_text(text, encoding="utf-16")
    else:
        path.write_text(text, encoding="utf-8")
    raw = copy.deepcopy(BASES["dense"])
    raw["cluster"]["compute_db"] = str(path)
    r, lines = _run(["simulate", _write(d, f"dbcfg{k}.json", raw), "--format", "json"])
    if r.exit_code != 0:
        bad = _one_line(r, lines)
        if bad is None and f"db{k}.json" not in lines[0]:
            REFUSED[0] -= 1
            return "a refusal not naming the database: " + lines[0][:40]
        return bad
    got = json.loads(r.stdout)
    return None if fuzz_checks.finite(got) and got["iteration_time_s"] > 0 else \
        "a non-finite answer"


def profiledb_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        d = Path(workdir)
        for k, (name, text) in enumerate(_db_variants().items()):
            yield f"compute_db {name}", (lambda n=name, t=text, k=k: profiledb_check(d, n, t, k))
    return cases


__all__ = ["emptysections_cases", "lifecycle_cases", "names_cases", "profiledb_cases"]
