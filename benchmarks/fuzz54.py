"""Input robustness, 2026-11-28 (54th session, robust54): seven surfaces no round had fuzzed.

- ``foreign``: Chakra traces another tool could write (no ``trainsim.stream``; nodes listed in
  any order; 2-4 ranks; sends and receives interleaved at random between ranks; tags unique,
  all 0 or a few reused; some nodes on shared named streams). Oracle: the trace reads (no
  "deadlock") to an iteration between its critical path and the sum of its nodes; a trace whose
  ranks wait on each other in a cycle is refused in one line naming a file and a node;
- ``flipbytes``: a trace trainsim wrote with one to four bytes of one rank's file flipped,
  cut or doubled (robust52 lead 2). Oracle: one line, or a finite, non-negative iteration;
- ``blankopt``: every optional field of the four configs given blank text ('', ' ', a tab)
  at the Python API (``dataclasses.replace``) and in a file. Oracle: blank is None at both;
- ``usergpu``: a user's own GPU file (``cluster.gpu: my.yaml``, the H100's catalog file) with
  one field set to an odd value (full-width digits, 1e400, -1, 0, NaN, inf, text, a list, a
  mapping, the field missing; ``peak_tflops`` with a dtype dropped, added or odd). Oracle: a
  sane result or one line;
- ``numtext``: every count and rate of a config file given as text: full-width, Arabic-Indic
  and superscript digits, a no-break space, '+16', '1.6e1', '0x10', '1,6', '1_6', 'NaN',
  '-inf', '1e400', '-0', '½'. Oracle: one line, or the value the text means (NFKC) read back;
- ``v2optional``: a published row (<= 256 GPUs) with one or two of the optional columns beyond
  format v2 (``moe_first_dense_layers``, ``fp8_param_gather``, ``hf_modules`` in ``options``,
  ``mtp_num_layers``, the bf16 layer counts, ``cpu_offloading_num_layers``, ``optimizer_dtype``,
  ``nvls``, ``fabric``, ``cuda_graph_scope``, ``dp_replicate``) at odd values, beside an
  untouched row (fuzz52's ``valfiles`` oracle);
- ``cliopts``: ``collective``'s, ``export``'s and ``catalog``'s options at odd values (sizes
  like '8:8G', '0:8', '8G:8', NaN, huge GPU counts, unknown algorithms, protocols, topologies,
  ``--ranks`` lists). Oracle: exit 0 with finite JSON, or one error line.

Each input must give a sane answer or one ``TrainsimError`` line (``fuzz_checks.outcome``); a
hang is judged by CPU (30 CPU s) and any input over 10 CPU s is its own class.

    PYTHONPATH=src python benchmarks/fuzz54.py [--only foreign,flipbytes,blankopt,usergpu,numtext,
        v2optional,cliopts] [--count N] [--seed S] [--every] [--progress] [--refusals]
"""
from __future__ import annotations

import copy
import csv
import dataclasses
import json
import math
import os
import random
import re
import sys
import tempfile
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz_checks import BASES, REFUSED, Case, run_config, sane_result

from trainsim.errors import TrainsimError

fuzz_checks.TIME_LIMIT_S = 300
ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------------ foreign

def foreign_trace(rng: random.Random, tags: str, shared: bool, cycle: bool
                  ) -> tuple[dict[int, list[Any]], float, float]:
    """Nodes per rank of a random trace (built in one global dependency order, so without
    ``cycle`` no rank waits on another in a cycle; a receive after the sends of its (src, dst,
    tag) in the same order: a pair's messages follow each other on both ranks), its critical path and the sum of its durations (seconds). With
    ``cycle`` a ping-pong whose first send waits for the answer it asks for closes the trace."""
    from trainsim.interop.chakra_et import COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE, ETNode

    ranks = rng.randint(2, 4)
    nodes: dict[int, list[Any]] = {r: [] for r in range(ranks)}
    free = {r: rng.sample(range(1, 10**6), 300) for r in range(ranks)}
    finish: dict[tuple[int, int], float] = {}
    last: dict[tuple[Any, ...], int] = {}

    def new(r: int, name: str, kind: int, deps: list[int], attrs: dict[str, Any],
            after: float = 0.0) -> int:
        nid, us = free[r].pop(), rng.choice([0, 1, 5, 20, 100, 1000])
        if shared and rng.random() < 0.5:
            attrs["trainsim.stream"] = ("string", rng.choice(["s0", "s1"]))
        nodes[r].append(ETNode(nid, name, kind, data_deps=deps, duration_micros=us,
                               attrs=attrs))
        finish[(r, nid)] = max([after, *(finish[(r, d)] for d in deps)]) + us * 1e-6
        return nid

    def earlier(r: int) -> list[int]:
        return [n.id for n in rng.sample(nodes[r], min(len(nodes[r]), rng.choice([0, 1, 2])))]

    def message(a: int, b: int, tag: int, deps_a: list[int] | None = None) -> tuple[int, int]:
        peers = {"comm_src": ("int64", a), "comm_dst": ("int64", b), "comm_tag": ("int64", tag)}
        deps = earlier(a) if deps_a is None else deps_a
        if (a, b, "s") in last:  # a pair's messages in order, whatever their tags
            deps = [*deps, last[(a, b, "s")]]
        s = last[(a, b, "s")] = new(a, f"send {a}->{b}", COMM_SEND_NODE,
                                         list(dict.fromkeys(deps)), dict(peers))
        deps = earlier(b)
        if (a, b, "r") in last:
            deps = [*deps, last[(a, b, "r")]]
        r = last[(a, b, "r")] = new(b, f"recv {a}->{b}", COMM_RECV_NODE,
                                         list(dict.fromkeys(deps)), dict(peers),
                                         after=finish[(a, s)])
        return s, r

    for k in range(rng.randint(3, 40)):
        r = rng.randrange(ranks)
        if rng.random() < 0.35:
            new(r, f"comp {k}", COMP_NODE, earlier(r), {})
            continue
        a, b = rng.sample(range(ranks), 2)
        tag = {"unique": k, "zero": 0, "few": rng.randrange(3)}[tags]
        message(a, b, tag)
    if cycle:  # a -> b, then b -> a after it; a's first send waits for b's answer
        a, b = rng.sample(range(ranks), 2)
        s1, r1 = message(a, b, 10**6)
        _s2, r2 = message(b, a, 10**6 + 1, deps_a=[r1])
        i = next(i for i, n in enumerate(nodes[a]) if n.id == s1)
        nodes[a][i] = dataclasses.replace(nodes[a][i], data_deps=[*nodes[a][i].data_deps, r2])
    total = sum(n.duration_micros for ns in nodes.values() for n in ns) * 1e-6
    return nodes, max(finish.values()), total


def _written(workdir: str, seed: int, tags: str, shared: bool, cycle: bool
             ) -> tuple[Path, float, float]:
    from trainsim.interop.chakra_et import write_et

    rng = random.Random(seed)
    nodes, low, high = foreign_trace(rng, tags, shared, cycle)
    d = Path(tempfile.mkdtemp(dir=workdir))
    for r, ns in nodes.items():
        ns = list(ns)
        rng.shuffle(ns)  # the schema orders no nodes
        write_et(d / f"t.{r}.et", ns)
    return d / "t", low, high


def _foreign(workdir: str, seed: int, tags: str, shared: bool, cycle: bool) -> str | None:
    """The oracle of one ``foreign`` trace; with every tag 0 it also reads as the same trace
    with a tag per message (the k-th receive of a pair and tag is its k-th send)."""
    from trainsim.interop.chakra import read_chakra

    prefix, low, high = _written(workdir, seed, tags, shared, cycle)
    try:
        got = read_chakra(prefix)
    except TrainsimError as exc:
        said = re.sub(r"\d+", "N", str(exc).split("(")[0])[-60:]
        if not cycle:
            return f"a valid foreign trace refused: {said}"
        if ".et: node" not in str(exc):
            return f"a cycle through ranks refused naming no file and node: {said}"
        raise
    if cycle:
        return f"a trace whose ranks wait on each other read as {got!r} s"
    if not (low * (1 - 1e-9) - 1e-15 <= got <= high * (1 + 1e-9) + 1e-15):
        return f"iteration {got!r} s outside [critical path {low!r}, sum {high!r}]"
    if tags == "zero":
        want = read_chakra(_written(workdir, seed, "unique", shared, cycle)[0])
        if not math.isclose(got, want, rel_tol=1e-12):
            return "every tag 0 reads otherwise than a tag per message"
    return None


def foreign_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for seed in range(600):
            for tags in ("unique", "zero", "few"):
                for shared in (False, True):
                    cycle = seed % 10 == 9
                    yield f"seed {seed} tags {tags} shared {shared} cycle {cycle}", (
                        lambda s=seed, t=tags, h=shared, c=cycle: _foreign(workdir, s, t, h, c))
    return cases


# ------------------------------------------------------------------------------ flipbytes

def flipbytes_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    """robust52 lead 2's flipped bytes: a trace trainsim wrote (dense pp 2, MoE) with one to
    four bytes of one rank's file flipped, cut or doubled. Chakra's format has no checksum, so
    a flip that still parses may name a node otherwise or move a duration; oracle: one line,
    or a finite, non-negative iteration (never a traceback, a hang or a multi-line error)."""
    def cases() -> Iterator[Case]:
        from trainsim.catalog import run_config_from_dict
        from trainsim.interop.chakra import export_chakra, read_chakra

        runs = {"dense": {**copy.deepcopy(BASES["dense"]), "parallel": {"pp": 2}},
                "moe": BASES["moe"]}
        made: dict[str, tuple[Path, list[Path], list[bytes]]] = {}

        def attempt(name: str, seed: int) -> str | None:
            if name not in made:
                d = Path(tempfile.mkdtemp(dir=workdir))
                ex = export_chakra(run_config_from_dict(copy.deepcopy(runs[name])), d / "w")
                made[name] = (d / "w", ex.paths, [p.read_bytes() for p in ex.paths])
            prefix, paths, data = made[name]
            r = random.Random(seed)
            k = r.randrange(len(paths))
            b = bytearray(data[k])
            how = r.choice(["flip", "flip", "cut", "double"])
            for _ in range(r.randint(1, 4)):
                i = r.randrange(len(b))
                if how == "flip":
                    b[i] ^= 1 << r.randrange(8)
                elif how == "cut":
                    del b[i]
                else:
                    b[i:i] = b[i:i + 1]
            paths[k].write_bytes(bytes(b))
            try:
                got = read_chakra(prefix)
            finally:
                paths[k].write_bytes(data[k])
            if not (math.isfinite(got) and got >= 0):
                return f"a damaged trace read as {got!r} s"
            return None

        for name in runs:
            for seed in range(200):
                yield f"{name} #{seed}", (lambda n=name, s=seed: attempt(n, s))
    return cases


# ------------------------------------------------------------------------------ blankopt

def optional_fields() -> list[tuple[str, str]]:
    """(section, field) of every optional scalar field of the four configs."""
    from trainsim.config._build import _scalar_checks
    from trainsim.config.cluster import ClusterConfig
    from trainsim.config.model import ModelConfig
    from trainsim.config.parallel import ParallelConfig
    from trainsim.config.training import TrainingConfig

    out = []
    for section, cls in (("model", ModelConfig), ("parallel", ParallelConfig),
                         ("training", TrainingConfig), ("cluster", ClusterConfig)):
        out += [(section, name) for name, _k, _a, optional in _scalar_checks(cls) if optional]
    return out


def _built_or_refused(make: Callable[[], Any]) -> Any:
    try:
        return make()
    except TrainsimError as exc:
        text = str(exc)
        if not text.strip() or "\n" in text.strip():
            raise AssertionError("a refusal of more than one line") from None
        REFUSED[0] += 1
        return "refused"


def _blank(base: str, section: str, name: str, blank: str) -> str | None:
    from trainsim.catalog import run_config_from_dict

    cfg = BASES[base]
    rc = run_config_from_dict(copy.deepcopy(cfg))

    def api(value: Any) -> Any:
        part = dataclasses.replace(getattr(rc, section), **{name: value})
        return dataclasses.replace(rc, **{section: part})

    a, b = _built_or_refused(lambda: api(blank)), _built_or_refused(lambda: api(None))
    if a != b:
        return "the API reads an optional field's blank text otherwise than None"
    if section == "cluster" and name == "intra_node_bw_Bps":
        return None  # written nvlink_gbyte_s in a file
    from trainsim.config.parallel import ALIASES

    cfg = copy.deepcopy(cfg)
    for short in [k for k, v in ALIASES.items() if v == name]:
        cfg.get(section, {}).pop(short, None)  # the base's 'vpp: 2' and this field are one
    with_blank, with_none = copy.deepcopy(cfg), copy.deepcopy(cfg)
    with_blank.setdefault(section, {})[name] = blank
    with_none.setdefault(section, {})[name] = None
    c = _built_or_refused(lambda: run_config_from_dict(with_blank))
    d = _built_or_refused(lambda: run_config_from_dict(with_none))
    if c != d:
        return "a file reads an optional field's blank text otherwise than null"
    if (a == "refused") != (c == "refused"):
        return "the API and a file disagree on blank text (one refuses)"
    return None


def blankopt_cases() -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for section, name in optional_fields():
            for base in BASES:
                for blank in ("", " ", "\t"):
                    yield f"{base} {section}.{name}={blank!r}", (
                        lambda b=base, s=section, n=name, x=blank: _blank(b, s, n, x))
    return cases


# ------------------------------------------------------------------------------ usergpu

ODD = ["\uff11\uff16", "1e400", -1, 0, math.nan, math.inf, "x", [1], {"a": 1}, "", None, True,
       1e-300, 2**64, "12 ", "1_2"]
PEAKS = [{"drop": "bf16"}, {"drop": "fp8"}, {"add": ("fp4", 5000)}, {"add": ("bogus", 1)},
         {"set": ("bf16", math.nan)}, {"set": ("bf16", -1)}, {"set": ("bf16", "x")},
         {"set": ("bf16", 0)}, {"set": ("fp8", 1e400)}, {"set": ("bf16", "\uff19\uff18\uff19")}]


def _usergpu(workdir: str, field: str, value: Any) -> str | None:
    spec = yaml.safe_load((ROOT / "src/trainsim/catalog/gpus/h100-sxm-80gb.yaml").read_text())
    spec["name"] = "my-gpu"
    spec.pop("aliases", None)
    if field == "peak_tflops":
        peaks = dict(spec["peak_tflops"])
        op, arg = next(iter(value.items()))
        if op == "drop":
            peaks.pop(arg)
        else:
            peaks[arg[0]] = arg[1]
        spec["peak_tflops"] = peaks
    elif value == "<missing>":
        spec.pop(field, None)
    else:
        spec[field] = value
    d = Path(tempfile.mkdtemp(dir=workdir))
    (d / "my.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    cfg = copy.deepcopy(BASES[fuzz_checks_base(field)])
    cfg["cluster"]["gpu"] = str(d / "my.yaml")
    if isinstance(value, dict) and "drop" in value and value["drop"] == "fp8" or \
            field in ("mamf_fraction_fp8",):
        cfg["training"]["dtype"] = "fp8"
    return run_config(cfg)


def fuzz_checks_base(field: str) -> str:
    return "moe" if len(field) % 2 else "dense"


def usergpu_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        spec = yaml.safe_load((ROOT / "src/trainsim/catalog/gpus/h100-sxm-80gb.yaml").read_text())
        for field in spec:
            if field in ("name", "aliases", "source", "peak_tflops"):
                continue
            for value in [*ODD, "<missing>"]:
                yield f"{field}={value!r}", (lambda f=field, v=value: _usergpu(workdir, f, v))
        for value in PEAKS:
            yield f"peak_tflops {value!r}", (lambda v=value: _usergpu(workdir, "peak_tflops", v))
        for value in ["", "x" * 300, "\u202egnp", "h100-sxm-80gb", 5]:
            yield f"name={value!r}", (lambda v=value: _usergpu(workdir, "name", v))
    return cases


# ------------------------------------------------------------------------------ numtext

TEXTS = ["\uff11\uff16", "16\u00a0", "\u0661\u0666", "\u00b9\u2076", "+16", "1.6e1", "0x10",
         "1,6", "1_6", "16_", "NaN", "-inf", "1e400", "-0", "\u00bd", "16.", ".5e2", "16e0 ",
         "\u221216", "\uff11\uff16.\uff10", "16\u200b"]
NUMERIC = {"training": ["global_batch_size", "seq_length", "micro_batch_size", "train_tokens",
                        "num_workers"],
           "model": ["hidden_size", "num_layers", "vocab_size", "ffn_hidden_size"],
           "parallel": ["tp", "dp_replicate", "recompute_num_layers"],
           "cluster": ["num_gpus", "gpus_per_node", "nic_gbit_s_per_gpu", "pue",
                       "price_per_gpu_hour"]}


def meant(text: str) -> float | None:
    """The number ``text`` means to a reader (NFKC digits, '_' between digits), or None."""
    t = unicodedata.normalize("NFKC", text).strip().replace("\u2212", "-")
    if "_" in t and not all(p.isdigit() for p in t.split("_")):
        return None
    try:
        v = float(t.replace("_", ""))
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def _numtext(section: str, name: str, text: str) -> str | None:
    from trainsim.catalog import run_config_from_dict

    cfg = copy.deepcopy(BASES["dense"])
    cfg[section][name] = text
    rc = run_config_from_dict(cfg)
    want = meant(text)
    if want is None:
        return f"{section}.{name}={text!r} (no number) accepted"
    field = {"nic_gbit_s_per_gpu": "nic_bw_Bps"}.get(name, name)
    got = getattr(getattr(rc, section), field)
    if name == "nic_gbit_s_per_gpu":
        want *= 1e9 / 8
    if got is not None and not math.isclose(float(got), want, rel_tol=1e-12):
        return f"{section}.{name}={text!r} read as {got!r}, not {want!r}"
    return None


def numtext_cases() -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for section, names in NUMERIC.items():
            for name in names:
                for text in TEXTS:
                    yield f"{section}.{name}={text!r}", (
                        lambda s=section, n=name, t=text: _numtext(s, n, t))
    return cases


# ------------------------------------------------------------------------------ v2optional

OPTIONAL_CELLS = {
    "moe_first_dense_layers": ["0", "1", "3", "-1", "1.5", "nan", "1e400", "\u0663", "", "64"],
    "fp8_param_gather": ["0", "1", "yes", "2", "nan", "", " 1 ", "true"],
    "options": ["hf_modules", "hf_modules;tp_overlap", "HF_MODULES", "hf_modules;hf_modules",
                "hf_modules;cuda_graphs"],
    "mtp_num_layers": ["0", "1", "2", "-1", "nan", ""],
    "num_layers_at_start_in_bf16": ["0", "1", "2", "1e9", "-1", ""],
    "num_layers_at_end_in_bf16": ["0", "1", "1.5", ""],
    "cpu_offloading_num_layers": ["0", "1", "1000", "-2", "x"],
    "optimizer_dtype": ["bf16", "fp16", "fp32", "", "fp8", "BF16 "],
    "nvls": ["0", "1", "", "2", "off"],
    "fabric": ["efa", "ib", "", "x", "EFA"],
    "cuda_graph_scope": ["attn;moe_router", "", "bogus", "attn,,mlp"],
    "dp_replicate": ["1", "2", "", "0", "3"]}
"""The optional columns beyond format v2 (``validate.row_settings``) at odd values."""


def public_rows() -> tuple[list[dict[str, str]], list[str]]:
    """The bundled public file's rows, each with every optional cell (blank where unstated)."""
    src = ROOT / "src" / "trainsim" / "data" / "validation" / "training_public.csv"
    with open(src, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    columns = list(rows[0].keys())
    columns += [c for c in OPTIONAL_CELLS if c not in columns]
    for r in rows:
        for c in columns:
            r.setdefault(c, "")
    return rows, columns


def v2optional_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        from fuzz53 import _pair_check

        rows, columns = public_rows()
        one = _pair_check(rows, columns, workdir)
        small = [k for k, r in enumerate(rows) if r["num_gpus"].isdigit()
                 and int(r["num_gpus"]) <= 256]
        for _ in range(150):
            i, j = rng.sample(small, 2)
            cells = {c: rng.choice(OPTIONAL_CELLS[c])
                     for c in rng.sample(sorted(OPTIONAL_CELLS), rng.choice([1, 2]))}
            if "options" in cells and rows[i]["options"]:
                cells["options"] = rows[i]["options"] + ";" + cells["options"]
            yield f"{rows[i]['id']} {cells!r}"[:300], (lambda i=i, j=j, c=cells: one(i, j, c))
    return cases


# ------------------------------------------------------------------------------ cliopts

COLLECTIVE = {"--gpu": ["h100", "H100", "b200-sxm-180gb", "\uff48100", "", "x" * 300, "mi300x"],
              "--gpus": ["1", "2", "7", "16", "1024", "100000", "2147483648"],
              "--gpus-per-node": ["1", "4", "8", "72", "3", "1000"],
              "--nic-gbit-s": ["400", "1e-300", "nan", "inf", "1e300", "-1", "\uff14\uff10\uff10"],
              "--op": ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast",
                       "reduce"],
              "--sizes": ["8:8G", "1:1", "0:8", "8G:8", "8:8:8", ":", "1e3:2e3", "nan:8",
                          "-8:8", "8:18446744073709551616", "1K:1M", "\uff18:16", "8", "1P:1P"],
              "--algorithm": ["auto", "ring", "tree", "nvls", "nvls_tree", "collnet", "pat",
                              "RING", "bogus", ""],
              "--protocol": ["auto", "LL", "LL128", "Simple", "simple", "ll", "bogus"],
              "--backend": ["analytical", "flow"],
              "--topology": ["rail-optimized", "spine-leaf", "nvl72", "torus", "bogus", ""],
              "--max-flows": ["1", "10", "50000000"]}
EXPORT = {"--tp": ["1", "2", "3", "8"], "--ep": ["1", "2"], "--seq": ["512", "1", "100000"],
          "--gpus": ["8", "16", "9"], "--gbs": ["16", "1", "7"], "--mbs": ["1", "3"],
          "--ranks": ["0", "0,8", "", "-1", "1e3", "0,0", "\u0660", "0,,1", "15", "16", "all"],
          "--max-tasks": ["1", "100", "500000"], "--per-kernel": [None], "--sp": [None],
          "--no-sp": [None]}


def _cli(args: list[str], json_out: bool) -> str | None:
    from fuzz51 import _errors, _invoke

    r = _invoke(args)
    if r.exit_code != 0:
        lines = _errors(r)
        if len(lines) != 1 or "Traceback" in r.output:
            return f"exit {r.exit_code} with {len(lines)} error lines"
        REFUSED[0] += 1
        return None
    if json_out:
        try:
            got = json.loads(r.stdout)
        except ValueError:
            return "stdout is not JSON"
        if not fuzz_checks.finite(got):
            return "a non-finite figure in the JSON"
    return None


def cliopts_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for _ in range(400):
            args = ["collective"]
            for flag, values in COLLECTIVE.items():
                if rng.random() < 0.4:
                    args += [flag, rng.choice(values)]
            if "--backend" in args and "flow" in args and "--gpus" in args:
                k = args.index("--gpus")
                args[k + 1] = rng.choice(["8", "16", "64"])  # the flow backend's own limit
            args += ["--format", "json"]
            yield " ".join(args), (lambda a=args: _cli(a, True))
        d = Path(tempfile.mkdtemp(dir=workdir))
        run = d / "run.json"
        run.write_text(json.dumps(BASES["dense"]), encoding="utf-8")
        for k in range(150):
            args = ["export", str(run), "--chakra", str(d / f"w{k}" / "t"),
                    "--simai", str(d / f"w{k}.txt")]
            for flag, values in EXPORT.items():
                if rng.random() < 0.3:
                    v = rng.choice(values)
                    args += [flag] if v is None else [flag, v]
            yield " ".join(args[2:]), (lambda a=args: _cli(a, False))
        for kind in ("gpus", "nodes", "models", "frameworks", "GPUS", "", "x", "gpus/.."):
            for fmt in ("table", "json", "names"):
                yield f"catalog {kind!r} {fmt}", (
                    lambda k=kind, f=fmt: _cli(["catalog", k, "--format", f], f == "json"))
    return cases


# ------------------------------------------------------------------------------ main

def main(argv: list[str] | None = None) -> int:
    return fuzz_checks.seeded_round(54, argv, lambda workdir, rng: {
        "foreign": foreign_cases(workdir), "flipbytes": flipbytes_cases(workdir, rng),
        "blankopt": blankopt_cases(),
        "usergpu": usergpu_cases(workdir), "numtext": numtext_cases(),
        "v2optional": v2optional_cases(workdir, rng), "cliopts": cliopts_cases(workdir, rng)})


__all__ = ["foreign_trace", "meant", "optional_fields", "sane_result"]

if __name__ == "__main__":
    fuzz_checks.run_round(main)
