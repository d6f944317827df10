"""Input robustness, 2026-11-28 (50th session, robust50): five surfaces no round had fuzzed.

- ``plan``: ``trainsim plan`` / ``goodput`` / ``sweep`` with extreme token counts, days,
  failure rates (a failure-profile YAML), checkpoint intervals, prices, PUE and grids;
- ``cluster``: the cluster section at its edges (odd node counts, ``gpus_per_node`` that does
  not divide the GPUs, NICs at 0 or 1e12 Gbit/s, several NICs a GPU, leaf sizes,
  oversubscription, torus shapes, partial NVLink domains, the flow backend) and topology
  YAML files (``network.load_topology``: planes, tiers, pods, cores);
- ``csv``: ``trainsim validate`` on damaged copies of the training, collectives and kernels
  files: blank, duplicate, mistyped, unicode and out-of-range cells, missing and doubled
  columns, a BOM, CRLF, NUL bytes, a 50,000-row file;
- ``db``: a damaged or foreign kernel database (``trainsim profile``'s JSON) through
  ``validate DB``, ``validate --compute-db DB`` and ``cluster.compute_db``: truncated, empty,
  binary, UTF-16, wrong format, wrong GPU, bad records (NaN, negative, strings, missing keys);
- ``memory``: ZeRO stage x data-parallel implementation x distributed optimizer x recompute
  (granularity, layer count, module lists) x activation offloading x optimizer dtypes.

Each input must give a sane answer or one ``TrainsimError`` line (``fuzz_checks.outcome``); a
hang is judged by CPU (30 CPU s, robust49 lead 5; 300 s wall a backstop) and any input over
10 CPU s is reported as its own class.

    PYTHONPATH=src python benchmarks/fuzz50.py [--only plan,cluster,csv,db,memory] [--count N]
        [--seed S] [--every] [--progress] [--refusals]
"""
from __future__ import annotations

import copy
import csv
import io
import itertools
import json
import math
import os
import random
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from trainsim.errors import TrainsimError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz49
import fuzz_checks
from fuzz49 import _said
from fuzz_checks import BASES, Case, run_config

fuzz_checks.TIME_LIMIT_S = 300
ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "validation"


def _write(workdir: str, name: str, text: str | bytes) -> str:
    path = Path(workdir) / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    return str(path)


def _config(workdir: str, name: str, cfg: dict[str, Any]) -> str:
    return _write(workdir, name, yaml.safe_dump(cfg))


# ------------------------------------------------------------------------------ plan

def _goodput(args: list[str]) -> str | None:
    """``_said`` on a goodput command whose JSON answer must keep a checkpoint interval of at
    least one iteration (a checkpoint is taken between iterations)."""
    from fuzz_sweep import _cli

    def check(out: str) -> str | None:
        d = json.loads(out)
        step, every = d.get("iteration_time_s"), d["checkpoint"]["interval_s"]
        if step and every is not None and every < step * (1 - 1e-12):
            return "a checkpoint interval shorter than one iteration priced"
        return None
    fuzz49.SAID.clear()
    bad = _cli(args, answer_check=check, refusals=fuzz49.SAID)
    if bad is None and fuzz49.SAID:
        fuzz_checks.REFUSED[0] -= 1
        raise TrainsimError(fuzz49.SAID[0].removeprefix("error: "))
    return bad


TOKENS = ["1", "0", "-5", "1e3", "15T", "1.5e13", "1e30", "1e400", "nan", "inf", "abc", "1Q",
          "2**40", "15 T", "15t", "1,000", "", "1e-3", "300B", "1P"]
DAYS = ["1e-9", "1e-4", "0.01", "1", "54", "365000", "1e9", "1e300", "0", "-1", "nan"]
PRICES = ["0", "1e-9", "2.5", "1e6", "1e7", "-1", "nan"]
PUES = ["1", "1.2", "10", "0.9", "11", "inf"]
INTERVALS = ["0", "1", "1s", "0.003", "0.01", "30m", "2h", "1e12", "1e400", "-1", "nan", "inf", "0.001", "30x",
             "1d", "", "1e-9"]
RATES = [0.0, 1e-300, 1e-9, 0.01, 6.5, 1e3, 1e6, 1e9, 1e300, -1.0, math.nan, math.inf, "x"]


def plan_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        model = _config(workdir, "p_model.yaml", {"hidden_size": 256, "num_layers": 4,
                                                  "num_attention_heads": 4,
                                                  "vocab_size": 1024})
        small = ["plan", model, "--seq", "512", "--max-gpus", "64", "--workers", "1",
                 "--max-micro-batch", "2", "--recompute", "none", "--format", "json"]
        base = {"tokens": "1B", "days": "1"}
        for t in TOKENS:
            yield f"plan --tokens {t}", (lambda t=t: _said(
                [*small, "--tokens", t, "--days", base["days"]]))
        for d in DAYS:
            yield f"plan --days {d}", (lambda d=d: _said(
                [*small, "--tokens", base["tokens"], "--days", d]))
        for t, d in itertools.product(("1e3", "1e15", "1e20"), ("1e-6", "1e6")):
            yield f"plan --tokens {t} --days {d}", (lambda t=t, d=d: _said(
                [*small, "--tokens", t, "--days", d]))
        for p in PRICES:
            yield f"plan --price {p}", (lambda p=p: _said(
                [*small, "--tokens", "1B", "--days", "1", "--price", p]))
        for p in PUES:
            yield f"plan --pue {p}", (lambda p=p: _said(
                [*small, "--tokens", "1B", "--days", "1", "--pue", p]))
        for gb in ("1", "3", "7", "100000", str(2**40)):
            yield f"plan --global-batch {gb}", (lambda g=gb: _said(
                [*small, "--tokens", "1B", "--days", "1", "--global-batch", g]))
        for mg in ("1", "3", "9", str(2**31)):
            yield f"plan --max-gpus {mg}", (lambda m=mg: _said(
                [*small[:4], "--max-gpus", m, *small[6:], "--tokens", "1B", "--days", "1"]))
        cfg = copy.deepcopy(BASES["dense"])
        cfg["training"]["train_tokens"] = 1e9
        conf = _config(workdir, "g_conf.yaml", cfg)
        good = ["goodput", conf, "--trials", "20", "--format", "json"]
        for t in TOKENS:
            yield f"goodput --tokens {t}", (lambda t=t: _said([*good, "--tokens", t]))
        for d in DAYS:
            yield f"goodput --days {d}", (lambda d=d: _said([*good, "--days", d]))
        for i in INTERVALS:
            yield f"goodput --interval {i}", (lambda i=i: _goodput([*good, "--interval", i]))
            yield f"goodput --interval {i} --days 54", (lambda i=i: _goodput(
                [*good, "--interval", i, "--days", "54"]))
        for g in ("1", "3", "100000", str(2**31)):
            yield f"goodput --gpus {g}", (lambda g=g: _said([*good, "--gpus", g]))
        for r in RATES:
            for comp in ("gpu", "node", "job"):
                prof = {"name": "fuzz", "modes": {"m": {"per_1000_component_days": r,
                                                        "component": comp}}}
                path = _config(workdir, f"f_{comp}_{r}.yaml", prof)
                yield f"goodput failures {comp} rate {r}", (lambda p=path: _goodput(
                    [*good, "--failures", p]))
            yield f"goodput --set reliability.rate_scale={r}", (lambda r=r: _goodput(
                [*good, "--set", f"reliability.rate_scale={r}"]))
        for key in ("recovery.restart_s", "recovery.repair_s", "recovery.replacement_s",
                    "checkpoint.interval_s", "checkpoint.weight_bytes_per_param",
                    "recovery.diagnosis_s"):
            for v in ("0", "-1", "1e-9", "1e12", "1e300", "nan", "inf"):
                yield f"goodput --set reliability.{key}={v}", (lambda k=key, v=v: _said(
                    [*good, "--set", f"reliability.{k}={v}"]))
        for v in ("cluster.price_per_gpu_hour=0:1e6", "cluster.price_per_gpu_hour=-1:1",
                  "cluster.pue=1:10", "cluster.pue=0:1", "cluster.nic_gbit_s_per_gpu=0:400",
                  "cluster.nic_gbit_s_per_gpu=1e-6:1e12", "cluster.num_gpus=1:4096",
                  "cluster.num_gpus=8,12,24", "training.global_batch_size=16:1e9",
                  "training.seq_length=1:1e7", "cluster.price_per_gpu_hour=nan:1",
                  "cluster.gpus_per_node=1:72", "training.train_tokens=1:1e30"):
            for steps in ("1", "3", "200"):
                yield f"sweep --vary {v} --steps {steps}", (lambda v=v, s=steps: _said(
                    ["sweep", conf, "--vary", v, "--steps", s, "--format", "json"]))
    return cases


# ------------------------------------------------------------------------------ cluster

CLUSTER_KEYS: dict[str, list[Any]] = {
    "num_gpus": [1, 2, 3, 6, 7, 12, 24, 100, 1000, 4096],
    "gpus_per_node": [1, 2, 3, 4, 5, 6, 7, 8, 16, 72, 1000],
    "nic_gbit_s_per_gpu": [0, 1e-9, 1e-3, 1, 400, 1e6, 1e12, 1e300, math.inf],
    "nics_per_gpu": [0, 1, 2, 4, 8, 9, 1.5],
    "topology": ["rail-optimized", "spine-leaf", "nvl72", "torus", "Rail_Optimized",
                 "fat-tree", ""],
    "nodes_per_leaf": [0, 1, 3, 7, 32, 10**6, 1.5],
    "oversubscription": [0, 0.5, 1, 3, 1e9, math.nan, -1],
    "network_backend": ["analytical", "flow"],
    "fabric": ["infiniband", "efa", "roce", "RoCE", "ethernet"],
    "torus_dims": [None, [3], [2, 2], [1, 1, 1], [0], [4, 4, 4], [-2, 2]],
    "nvlink_gbyte_s": [1e-6, 1, 900, 1e9],
    "in_network_reduction": [True, False],
}


def cluster_cases(rng: random.Random) -> Callable[[], Iterator[Case]]:
    from trainsim.catalog import run_config_from_dict

    def one(change: dict[str, Any]) -> str | None:
        cfg = copy.deepcopy(BASES["dense"])
        cfg["cluster"].update(change)
        n = change.get("num_gpus", 8)
        if isinstance(n, int) and n > 0:
            cfg["training"]["global_batch_size"] = 2 * n
        rc = run_config_from_dict(cfg)
        if rc.cluster.num_gpus % max(1, min(rc.cluster.num_gpus, rc.cluster.gpus_per_node)) \
                and rc.cluster.domain_gpus is None:
            return "a partial last node read as whole nodes"
        return run_config(cfg)

    def topo(spec: dict[str, Any]) -> str | None:
        from trainsim.network.topology import load_topology
        path = Path(tempfile.gettempdir()) / f"fuzz50_topo_{os.getpid()}.yaml"
        path.write_text(yaml.safe_dump(spec))
        t = load_topology(path)
        caps = [link.bw_Bps for link in t.links]
        if any(not (math.isfinite(c) and c > 0) for c in caps):
            return "a link of non-finite or non-positive capacity"
        return None

    def cases() -> Iterator[Case]:
        for key, values in CLUSTER_KEYS.items():
            for v in values:
                yield f"cluster {key}={v!r}", (lambda k=key, v=v: one({k: v}))
        for _ in range(400):
            change = {k: rng.choice(v) for k, v in rng.sample(sorted(CLUSTER_KEYS.items()), 3)}
            yield f"cluster {change}", (lambda c=change: one(c))
        for gpn, doms in ((8, [8, 8, 4]), (72, [72, 40]), (8, [4, 4, 4, 4]), (8, [9, 7]),
                          (8, [0, 16]), (8, [8.5, 7.5]), (8, []), (72, [64, 64])):
            n = sum(d for d in doms if isinstance(d, (int, float)))
            yield f"domain_gpus {doms}", (lambda g=gpn, d=doms, n=n: one(
                {"gpus_per_node": g, "num_gpus": int(n) or 8, "domain_gpus": d}))
        base = {"builder": "rail_fat_tree", "nodes": 4, "gpus_per_node": 8}
        edits: list[dict[str, Any]] = [
            {}, {"nodes": 0}, {"nodes": 3}, {"nodes": 10**6}, {"gpus_per_node": 3},
            {"nic_Gbps": 0}, {"nic_Gbps": 1e12}, {"nic_Gbps": "x"}, {"planes": "separate"},
            {"planes": "bogus"}, {"planes": 2}, {"tiers": 1}, {"tiers": 3}, {"tiers": 0},
            {"tiers": 9}, {"nodes_per_leaf": 0}, {"nodes_per_leaf": 3},
            {"oversubscription": 0}, {"oversubscription": -2}, {"oversubscription": 1e9},
            {"nodes_per_pod": 2}, {"nodes_per_pod": 0}, {"cores": 0}, {"cores": 3},
            {"core_oversubscription": 0}, {"spines": 0}, {"spines": 1000},
            {"link_latency_us": -1}, {"link_latency_us": "nan"}, {"scale_up": "pcie"},
            {"scale_up": "bogus"}, {"nvlink_gen": 0}, {"nvlink_gen": 99}, {"bogus_key": 1},
            {"builder": "bogus"}, {"builder": None}, {"nodes": 2.5}, {"nodes": True},
            {"nodes": None}, {"nodes_per_leaf": 10**6}]
        torus = {"builder": "torus", "dims": [4, 4], "dim_GBps": [100, 100]}
        for e in ({}, {"dims": 5}, {"dims": [4, 2.5]}, {"dims": [100, 100, 100],
                  "dim_GBps": [1, 1, 1]}, {"dim_GBps": [100, "x"]}, {"dim_GBps": [100, 0]},
                  {"kinds": ["ring", "bogus"]}):
            yield f"topology {torus | e}", (lambda e=e: topo({**torus, **e}))
        for e in edits:
            yield f"topology {e}", (lambda e=e: topo({**base, **e}))
        for name in ("dgx-h100-superpod", "dgx-a100-superpod", "rail-optimized"):
            for e in ({"nodes": 1}, {"nodes": 7}, {"gpus_per_node": 1}, {"planes": "separate"}):
                def read(n=name, e=e) -> str | None:
                    from trainsim.network.topology import load_topology
                    load_topology(n, **e)
                    return None
                yield f"load_topology({name}, {e})", read
    return cases


# ------------------------------------------------------------------------------ csv

def _rows(path: Path, n: int) -> tuple[list[str], list[list[str]]]:
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = [r for r, _ in zip(reader, range(n))]
    return header, rows


def _csv_text(header: list[str], rows: list[list[str]], newline: str = "\n") -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator=newline).writerows([header, *rows])
    return out.getvalue()


CELL_VALUES = ["", " ", "abc", "-1", "0", "1e400", "nan", "inf", "1,5", "１２８", "8 ", "0x10",
               "1e-300", "2**31", "TRUE", "é", "\u200b8", "99999999999999999999", "None"]


def csv_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def validate(path: str) -> str | None:
        return _said(["validate", path, "--format", "json", "--workers", "1",
                      "--compute-db", "none"])

    def cases() -> Iterator[Case]:
        sources = {"training": (SHARED / "training_public.csv", 3),
                   "collectives": (SHARED / "collectives_public.csv", 3),
                   "kernels": (SHARED / "kernels_published.csv", 4)}
        k = 0
        for kind, (src, n) in sources.items():
            header, rows = _rows(src, n)

            def add(label: str, text: str | bytes, kind: str = kind) -> Case:
                nonlocal k
                k += 1
                path = _write(workdir, f"v{k}.csv", text)
                return f"{kind}: {label}", (lambda p=path: validate(path=p))

            yield add("as is", _csv_text(header, rows))
            yield add("BOM", "\ufeff" + _csv_text(header, rows))
            yield add("CRLF", _csv_text(header, rows, "\r\n"))
            yield add("CR only", _csv_text(header, rows, "\r"))
            yield add("BOM+CRLF", "\ufeff" + _csv_text(header, rows, "\r\n"))
            yield add("empty file", "")
            yield add("header only", _csv_text(header, []))
            yield add("blank lines", _csv_text(header, rows).replace("\n", "\n\n"))
            yield add("NUL byte", _csv_text(header, rows).replace(",", ",\x00", 1))
            yield add("latin-1", _csv_text(header, rows).encode("utf-8") + b"x,\xe9\xff\n")
            yield add("utf-16", _csv_text(header, rows).encode("utf-16"))
            yield add("duplicate rows", _csv_text(header, rows + rows))
            yield add("upper-cased header", _csv_text([h.upper() for h in header], rows))
            yield add("spaced header", _csv_text([f" {h} " for h in header], rows))
            yield add("short row", _csv_text(header, [rows[0][: len(header) // 2]]))
            yield add("long row", _csv_text(header, [rows[0] + ["x", "y"]]))
            yield add("tab-separated", _csv_text(header, rows).replace(",", "\t"))
            yield add("semicolons", _csv_text(header, rows).replace(",", ";"))
            yield add("quoted newline", _csv_text(header, [[c + "\n" if i == 0 else c
                                                           for i, c in enumerate(rows[0])]]))
            yield add("huge cell", _csv_text(header, [[c if i else "x" * 200_000
                                                       for i, c in enumerate(rows[0])]]))
            for i, col in enumerate(header):
                yield add(f"missing column {col}", _csv_text(
                    header[:i] + header[i + 1:], [r[:i] + r[i + 1:] for r in rows]))
                yield add(f"doubled column {col}", _csv_text(
                    header + [col], [r + [r[i]] for r in rows]))
                for v in rng.sample(CELL_VALUES, 4):
                    bad = [list(r) for r in rows]
                    bad[0][i] = v
                    yield add(f"{col}={v!r}", _csv_text(header, bad))
            if kind == "training":
                big = [list(rows[0]) for _ in range(50_000)]
                for j, r in enumerate(big):
                    r[0] = f"row{j}"
                    r[header.index("gpu")] = "no-such-gpu"
                yield add("50,000 rows (each refused)", _csv_text(header, big))
    return cases


# ------------------------------------------------------------------------------ db

def db_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    src = ROOT / "src" / "trainsim" / "data" / "kernels" / "h100-sxm-80gb.json"

    def cases() -> Iterator[Case]:
        text = src.read_text()
        data = json.loads(text)
        kern = SHARED / "kernels_published.csv"
        header, rows = _rows(kern, 400)
        gcol = header.index("gpu") if "gpu" in header else None
        h100 = [r for r in rows if gcol is None or r[gcol] == "h100-sxm-80gb"][:4]
        kfile = _write(workdir, "db_kernels.csv", _csv_text(header, h100))
        conf = copy.deepcopy(BASES["dense"])
        variants: list[tuple[str, str | bytes]] = [
            ("as is", text), ("empty", ""), ("truncated 1/2", text[: len(text) // 2]),
            ("truncated 100", text[:100]), ("binary", bytes(range(256)) * 8),
            ("utf-16", text.encode("utf-16")), ("BOM", "\ufeff" + text),
            ("a list", "[]"), ("a number", "3"), ("null", "null"), ("yaml", "a: 1\n"),
            ("csv", "a,b\n1,2\n"), ("NaN literal", text.replace("3.097599931061268e-05", "NaN", 1)),
            ("Infinity literal", text.replace("3.097599931061268e-05", "Infinity", 1))]

        def edited(name: str, edit: Callable[[dict], None]) -> None:
            d = copy.deepcopy(data)
            edit(d)
            variants.append((name, json.dumps(d)))

        def set_rec(section: str, i: int, key: str, value: Any) -> Callable[[dict], None]:
            def e(d: dict) -> None:
                d[section][i][key] = value
            return e

        def drop_rec(section: str, i: int, key: str) -> Callable[[dict], None]:
            def e(d: dict) -> None:
                d[section][i].pop(key, None)
            return e

        edited("format 9", lambda d: d.update(format="trainsim-kernel-db/9"))
        edited("no format", lambda d: d.pop("format"))
        edited("format number", lambda d: d.update(format=3))
        edited("gpu h200 (foreign)", lambda d: d.update(gpu="h200-sxm-141gb"))
        edited("gpu unknown", lambda d: d.update(gpu="no-such-gpu"))
        edited("gpu missing", lambda d: d.pop("gpu"))
        edited("gpu a list", lambda d: d.update(gpu=["h100-sxm-80gb"]))
        edited("kernels missing", lambda d: d.pop("kernels"))
        edited("kernels empty", lambda d: d.update(kernels=[]))
        edited("kernels a dict", lambda d: d.update(kernels={}))
        edited("layers missing", lambda d: d.pop("layers"))
        edited("layers a string", lambda d: d.update(layers="x"))
        edited("a kernel a string", lambda d: d["kernels"].__setitem__(0, "x"))
        edited("a layer null", lambda d: d["layers"].__setitem__(0, None))
        edited("kernels a number", lambda d: d.update(kernels=5))
        edited("kernels a string", lambda d: d.update(kernels="x"))
        edited("layers a number", lambda d: d.update(layers=5))
        edited("notes a number", lambda d: d.update(notes=5))
        edited("notes of numbers", lambda d: d.update(notes=[1, 2]))
        edited("layers[0].kernels of strings", lambda d: d["layers"][0].update(kernels=["x"]))
        edited("layers[0].submodules of strings",
               lambda d: d["layers"][0].update(submodules={"a": "x"}))
        edited("kernels[0] a list", lambda d: d["kernels"].__setitem__(0, [1]))
        for sec in ("kernels", "layers"):
            rec = data[sec][0]
            for key in list(rec):
                edited(f"{sec}[0] without {key}", drop_rec(sec, 0, key))
                for v in (None, "x", -1, 0, 1e300, [], {}, True):
                    if isinstance(rec[key], (int, float)) and not isinstance(rec[key], bool) \
                            or v in (None, "x"):
                        edited(f"{sec}[0].{key}={v!r}", set_rec(sec, 0, key, v))
        gemm = next((i for i, r in enumerate(data["kernels"]) if r.get("op") == "gemm"), None)
        if gemm is not None:
            for key in data["kernels"][gemm]:
                for v in (None, "x", -1, 0, 1e300, 2.5, [], {}):
                    edited(f"gemm kernels[{gemm}].{key}={v!r}", set_rec("kernels", gemm, key, v))
        def merged(path: str) -> str | None:
            from trainsim.profile.run import check_base, read_db, write_db
            from trainsim.profile.schema import ProfileError
            base = read_db(path)
            check_base(base, "h100-sxm-80gb", path)
            new = {**{k: data[k] for k in ("format", "gpu", "driver", "torch", "cuda",
                                             "created", "command", "compile")},
                   "device_name": base.get("device_name"), "notes": [],
                   "kernels": [data["kernels"][0]], "layers": []}
            try:
                write_db(new, Path(workdir) / "merged.json", base)
            except ProfileError as exc:
                return f"--merge base accepted before measuring, refused after: {exc}"[:160]
            return None

        for i, (name, body) in enumerate(variants):
            path = _write(workdir, f"db{i}.json", body)
            yield f"profile --merge ({name})", (lambda p=path: merged(p))
            yield f"validate DB ({name})", (lambda p=path: _said(
                ["validate", p, "--format", "json", "--workers", "1"]))
            yield f"validate kernels --compute-db ({name})", (lambda p=path: _said(
                ["validate", kfile, "--compute-db", p, "--format", "json", "--workers", "1"]))
            c = copy.deepcopy(conf)
            c["cluster"]["compute_db"] = path
            yield f"simulate cluster.compute_db ({name})", (lambda c=c: run_config(c))
        for special in (workdir, str(Path(workdir) / "missing.json"), "/dev/null", ""):
            c = copy.deepcopy(conf)
            c["cluster"]["compute_db"] = special
            yield f"simulate cluster.compute_db={special!r}", (lambda c=c: run_config(c))
            yield f"validate --compute-db {special!r}", (lambda p=special: _said(
                ["validate", kfile, "--compute-db", p, "--format", "json", "--workers", "1"]))
    return cases


# ------------------------------------------------------------------------------ memory

MEMORY_KEYS: dict[str, list[Any]] = {
    "parallel.zero_stage": [0, 1, 2, 3],
    "parallel.data_parallel_impl": ["megatron", "deepspeed", "fsdp1", "fsdp2", "ddp"],
    "parallel.distributed_optimizer": [True, False],
    "parallel.recompute": ["none", "selective", "full"],
    "parallel.recompute_num_layers": [None, 0, 1, 2, 4, 100],
    "parallel.recompute_modules": [None, [], ["core_attn"], ["mlp"], ["moe_act"],
                                   ["layernorm"], ["core_attn", "mlp", "layernorm", "moe"],
                                   ["bogus"], ["mla_up_proj"], ["shared_experts"]],
    "parallel.cpu_offloading_num_layers": [0, 1, 2, 3, 4, 100, -1],
    "parallel.overlap_param_gather": [True, False],
    "parallel.dp_replicate": [1, 2, 4],
    "training.use_precision_aware_optimizer": [True, False],
    "training.optimizer_dtype": ["fp32", "bf16", "fp16"],
    "training.exp_avg_dtype": ["fp32", "bf16", "fp8"],
    "training.optimizer": ["adam", "sgd", "lamb"],
    "training.micro_batch_size": [1, 2, 16],
}


def memory_cases(rng: random.Random) -> Callable[[], Iterator[Case]]:
    def one(base: str, change: dict[str, Any]) -> str | None:
        cfg = copy.deepcopy(BASES[base])
        for path, v in change.items():
            sec, key = path.split(".")
            cfg[sec][key] = v
        mbs = cfg["training"].get("micro_batch_size", 1)
        cfg["training"]["global_batch_size"] = max(cfg["training"]["global_batch_size"],
                                                   8 * mbs * 2)
        return run_config(cfg)

    def cases() -> Iterator[Case]:
        for base in ("dense", "moe", "mla"):
            for key, values in MEMORY_KEYS.items():
                for v in values:
                    yield f"{base} {key}={v!r}", (lambda b=base, k=key, v=v: one(b, {k: v}))
            for _ in range(250):
                change = {k: rng.choice(v) for k, v in
                          rng.sample(sorted(MEMORY_KEYS.items()), rng.randint(3, 6))}
                yield f"{base} {change}", (lambda b=base, c=change: one(b, c))
    return cases


def _peak(change: dict[str, Any], model: dict[str, Any] | None = None) -> float:
    from trainsim.catalog import run_config_from_dict
    from trainsim.simulator import simulate
    cfg = copy.deepcopy(BASES["dense"])
    cfg["model"].update(model or {"hidden_size": 2048, "num_layers": 8,
                                  "num_attention_heads": 16, "vocab_size": 32_000})
    cfg["training"].update(global_batch_size=64, seq_length=2048)
    for path, v in change.items():
        sec, key = path.split(".")
        cfg[sec][key] = v
    return simulate(run_config_from_dict(cfg)).peak_memory_bytes


ORDERS: list[tuple[str, dict[str, Any], str, list[Any]]] = [
    ("offloaded layers", {}, "parallel.cpu_offloading_num_layers", [0, 1, 3, 7]),
    ("full-recompute layers", {"parallel.recompute": "full"}, "parallel.recompute_num_layers",
     [1, 2, 4, 8]),
    ("megatron sharding", {}, "parallel.distributed_optimizer", [False, True]),
    ("deepspeed stage", {"parallel.data_parallel_impl": "deepspeed"}, "parallel.zero_stage",
     [0, 1, 2, 3]),
    ("recompute granularity", {}, "parallel.recompute", ["none", "selective", "full"]),
    ("selective modules", {"parallel.recompute": "selective"}, "parallel.recompute_modules",
     [["core_attn"], ["core_attn", "layernorm"], ["core_attn", "layernorm", "mlp"]]),
    ("fsdp2 stage", {"parallel.data_parallel_impl": "fsdp2"}, "parallel.zero_stage", [2, 3]),
    ("megatron stage", {"parallel.distributed_optimizer": True}, "parallel.zero_stage", [1, 3]),
    ("optimizer state dtype", {"parallel.distributed_optimizer": True,
                               "training.use_precision_aware_optimizer": True},
     "training.exp_avg_dtype", ["fp32", "bf16", "fp8"]),
]
"""(name, fixed settings, the varied field, values from most to least memory held): each
step along the values must not raise the peak (a step that should shed memory and adds it is
silent nonsense)."""


def memorder_cases() -> Iterator[Case]:
    for name, fixed, key, values in ORDERS:
        for mbs in (1, 4):
            for extra in ({}, {"parallel.tp": 2, "parallel.sequence_parallel": True},
                          {"parallel.pp": 2}):
                def check(fixed=fixed, key=key, values=values, mbs=mbs, extra=extra
                          ) -> str | None:
                    if "cpu_offloading" in key and "parallel.pp" in extra:
                        return None  # refused: Megatron-core offloads without PP only
                    peaks = [_peak({**fixed, **extra, "training.micro_batch_size": mbs,
                                    key: v}) for v in values]
                    for (a, pa), (b, pb) in itertools.pairwise(zip(values, peaks)):
                        if pb > pa * (1 + 1e-9):
                            return f"{key}={b!r} holds more than {a!r} ({pb:.4g} > {pa:.4g} B)"
                    return None
                yield f"{name} mbs={mbs} {extra}", check


# ------------------------------------------------------------------------------ main

def main(argv: list[str] | None = None) -> int:
    return fuzz_checks.seeded_round(50, argv, lambda workdir, rng: {
        "plan": plan_cases(workdir), "cluster": cluster_cases(rng),
        "csv": csv_cases(workdir, rng), "db": db_cases(workdir),
        "memory": memory_cases(rng), "memorder": lambda: memorder_cases()})


if __name__ == "__main__":
    fuzz_checks.run_round(main)
