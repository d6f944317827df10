"""A seeded input sweep of every config field, the CLI's --set, goodput's reliability section,
collective's options and the service's job runner (2026-11-24, fuzz session).

Each input ends in one of: a sane result (finite, positive time; utilisation in (0, 2]; every
setting that was read back is the one written), one ``TrainsimError`` line, or a failure,
classed by what went wrong and where (an exception escaping, a non-finite or negative value, a
setting silently changed, a run over its time limit). The earlier fuzzers (tests/test_fuzz*.py)
mutate about 70 fields; this one walks all of them with a battery of values of each field's
kind, on a dense and a MoE base, then random combinations.

    python benchmarks/fuzz_sweep.py [--seed 0] [--random 1000] [--only config,set,...]

prints one line per failure class (with its first input) and the counts; exit 1 on any failure.
The bases, value batteries and outcome checks are in fuzz_checks.py beside it.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import math
import os
import random
import sys
import typing
from collections.abc import Callable, Iterator
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # fuzz_checks, beside it
import fuzz_checks
from fuzz_checks import (
    BASES,
    DENSE,
    GPU_FIELDS,
    MOE,
    REFUSED,
    SECTIONS,
    battery,
    fields_of,
    outcome,  # noqa: F401 - tests/test_fuzz_fields.py reads it here
    run_config,
    sane_result,  # noqa: F401 - tests/test_fuzz_fields.py reads it here
)

# ------------------------------------------------------------------------------ surfaces

def config_cases(rng: random.Random, n_random: int) -> Iterator[tuple[str, Callable]]:
    """Every field x its battery on both bases, then random 2-4 field combinations."""
    table = [(s, name, tp) for s in SECTIONS for name, tp in fields_of(s)]
    table += [("gpu_overrides", name, float) for name in GPU_FIELDS]
    for base_name, base in BASES.items():
        for section, name, tp in table:
            for value in battery(tp):
                cfg = copy.deepcopy(base)
                if section == "gpu_overrides":
                    cfg["cluster"]["gpu_overrides"] = {name: value}
                    checks = []
                else:
                    cfg[section][name] = value
                    checks = [(section, name, value)]
                label = f"{base_name}: {section}.{name}={value!r}"[:160]
                yield label, (lambda c=cfg, k=checks: run_config(c, k))
    for _ in range(n_random):
        base_name = rng.choice(list(BASES))
        cfg = copy.deepcopy(BASES[base_name])
        changes = []
        for _ in range(rng.randint(2, 4)):
            section, name, tp = rng.choice(table)
            value = rng.choice(battery(tp))
            if section == "gpu_overrides":
                cfg["cluster"].setdefault("gpu_overrides", {})[name] = value
            else:
                cfg[section][name] = value
            changes.append(f"{section}.{name}={value!r}")
        yield f"{base_name}: " + ", ".join(changes)[:160], (lambda c=cfg: run_config(c))


EXTREMES = [
    {"parallel": {"tp": 3}}, {"parallel": {"tp": 8}, "model": {"num_attention_heads": 4}},
    {"parallel": {"pp": 8}}, {"parallel": {"pp": 8}, "cluster": {"num_gpus": 8}},
    {"training": {"global_batch_size": 12, "micro_batch_size": 1}},
    {"training": {"global_batch_size": 16, "micro_batch_size": 3}},
    {"training": {"seq_length": 1}}, {"model": {"vocab_size": 1}},
    {"cluster": {"num_gpus": 1, "gpus_per_node": 1}, "training": {"global_batch_size": 1}},
    {"cluster": {"num_gpus": 1}}, {"cluster": {"num_gpus": 10**6}},
    {"cluster": {"num_gpus": 10**6}, "training": {"global_batch_size": 10**6}},
    {"model": {"num_experts": 4, "moe_router_topk": 8}},
    {"model": {"num_experts": 6}, "parallel": {"ep": 4}},
    {"model": {"num_experts": 1, "moe_router_topk": 1}},
    {"model": {"num_layers": 1}, "parallel": {"pp": 2}},
    {"model": {"hidden_size": 1, "num_attention_heads": 1}},
    {"model": {"num_kv_heads": 3}}, {"model": {"num_kv_heads": 8}},
    {"model": {"head_dim": 1}}, {"model": {"ffn_hidden_size": 1}},
    {"parallel": {"vpp": 3}}, {"parallel": {"cp": 8}, "training": {"seq_length": 8}},
    {"parallel": {"cp": 3}}, {"training": {"micro_batch_size": 32}},
    {"model": {"max_position_embeddings": 1}}, {"model": {"sliding_window": 1}},
    {"model": {"mtp_num_layers": 100}}, {"parallel": {"recompute_num_layers": 100,
                                                      "recompute": "full"}},
    {"model": {"moe_first_dense_layers": 100}}, {"model": {"moe_layer_freq": 100}},
    {"model": {"moe_shared_expert_intermediate_size": 1}},
    {"model": {"moe_router_group_topk": 100}}, {"parallel": {"etp": 8}},
    {"cluster": {"gpus_per_node": 3}}, {"cluster": {"gpus_per_node": 10**6}},
    {"cluster": {"nodes_per_leaf": 10**6}}, {"cluster": {"torus_dims": [3, 3]}},
    {"cluster": {"topology": "torus", "torus_dims": [1]}},
    {"cluster": {"topology": "torus", "torus_dims": [2, 2, 2, 2, 2, 2, 2, 2, 2, 2]}},
    {"training": {"train_tokens": 1}}, {"training": {"num_workers": 10**6}},
]


def extreme_cases() -> Iterator[tuple[str, Callable]]:
    for base_name, base in BASES.items():
        for change in EXTREMES:
            cfg = copy.deepcopy(base)
            for section, fields in change.items():
                cfg[section].update(fields)
            yield f"{base_name}: {change}", (lambda c=cfg: run_config(c))


def _cli(args: list[str], around: Callable[[], Any] = contextlib.nullcontext,
         answer_check: Callable[[str], str | None] | None = None,
         refusals: list[str] | None = None) -> str | None:
    """Run the CLI on ``args`` (inside ``around()``); a one-line refusal or a finite answer
    passes, anything else is named. ``answer_check`` looks at a successful answer's stdout;
    ``refusals`` collects each one-line refusal's text."""
    from click.testing import CliRunner

    from trainsim.cli import main
    from trainsim.limits import DEFAULTS
    env = {"TRAINSIM_DEBUG": "1", **dict.fromkeys(DEFAULTS)}
    with around():
        result = CliRunner().invoke(main, args, env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    if "Traceback" in result.output:
        return "traceback in output"
    if result.exit_code == 0:
        if any(w.strip('",:[]') in ("NaN", "Infinity", "-Infinity")
               for w in result.stdout.split()):
            return "non-finite number in output"
        return answer_check(result.stdout) if answer_check else None
    if result.exit_code == 1 and args[0] == "plan" and "meets the deadline" in result.output:
        return None
    lines = [ln for ln in result.stderr.splitlines()
             if ln.strip() and not ln.startswith("warning: ")]
    if result.exit_code != 2:
        return f"exit {result.exit_code}"
    if len(lines) != 1 or not lines[0].startswith("error: "):
        return "not one error line"
    REFUSED[0] += 1
    if refusals is not None:
        refusals.append(lines[0])
    return None


SET_VALUES = ["0", "-1", "1", "3", "1.5", "abc", "nan", "inf", "1e400", "", "true", "[1]",
              "{a: 1}", "null", "2**8", "0x10", "8:00", " ", "'8'", "1e3"]


def set_cases(rng: random.Random, workdir: str, n: int) -> Iterator[tuple[str, Callable]]:
    """`simulate --set section.field=value` with text values, as a shell gives them."""
    import yaml
    path = os.path.join(workdir, "base.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(DENSE, f)
    names = [f"{s}.{name}" for s in SECTIONS for name, _ in fields_of(s)]
    names += [f"cluster.gpu_overrides.{g}" for g in GPU_FIELDS]
    names += ["model", "parallel", "bogus.x", "model.bogus", "cluster.gpu_overrides",
              "model.hidden_size.x", ".tp", "parallel.", "=", "parallel.tp.x.y"]
    for _ in range(n):
        key = rng.choice(names)
        value = rng.choice(SET_VALUES)
        args = ["simulate", path, "--format", "json", "--set", f"{key}={value}"]
        yield " ".join(args[4:]), (lambda a=args: _cli(a))
    for bad in ["tp", "=3", "parallel.tp", "parallel.tp==2", "a=b=c", "\x00=1"]:
        args = ["simulate", path, "--set", bad]
        yield " ".join(args[2:]), (lambda a=args: _cli(a))


def reliability_fields() -> list[tuple[str, Any]]:
    """(path under reliability, type) of every reliability field."""
    from trainsim.reliability.config import (
        CheckpointConfig,
        RecoveryConfig,
        ReliabilityConfig,
        StragglerConfig,
    )
    out = []
    for prefix, cls in (("", ReliabilityConfig), ("recovery.", RecoveryConfig),
                        ("checkpoint.", CheckpointConfig), ("straggler.", StragglerConfig)):
        hints = typing.get_type_hints(cls)
        out += [(prefix + f.name, hints[f.name]) for f in dataclasses.fields(cls)
                if not dataclasses.is_dataclass(hints[f.name])]
    return out + [("bogus", int), ("checkpoint.bogus", int)]


FAILURES = ["llama3-405b-16k-h100", "meta-rsc1-a100", "bogus", "", 1, None, {}, [],
            {"name": "x", "modes": {}},
            {"name": "x", "modes": {"gpu": {"rate_per_s": 1e300, "component": "gpu"}}},
            {"name": "x", "modes": {"gpu": {"rate_per_s": -1, "component": "gpu"}}},
            {"name": "x", "modes": {"gpu": {"rate_per_s": 1e-3, "component": "x"}}}]


def goodput_cases(rng: random.Random, workdir: str, n: int) -> Iterator[tuple[str, Callable]]:
    """`goodput` of a config with each reliability field set from its battery (the field walk
    is sampled: n inputs), through the CLI."""
    import yaml
    table = reliability_fields()
    for i in range(n):
        cfg = copy.deepcopy(DENSE)
        rel: dict = {}
        for _ in range(rng.randint(1, 2)):
            path, tp = rng.choice(table)
            value = rng.choice(FAILURES if path == "failures" else battery(tp))
            *parents, leaf = path.split(".")
            node = rel
            for p in parents:
                node = node.setdefault(p, {})
            node[leaf] = value
        cfg["reliability"] = rel
        path = os.path.join(workdir, f"rel{i}.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(cfg, f)
        args = ["goodput", path, "--tokens", rng.choice(["1B", "1e12", "1"]), "--trials",
                rng.choice(["1", "20"]), "--format", "json"]
        yield f"reliability={rel!r}"[:160], (lambda a=args: _cli(a))


COLLECTIVE = {"--gpus": ["1", "2", "3", "8", "16", "1024", "0", "-1", "1e9", "1.5", "x"],
              "--gpus-per-node": ["1", "3", "8", "72", "0", "1000"],
              "--nic-gbit-s": ["0", "1e-9", "400", "1e300", "nan", "-1"],
              "--op": ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast",
                       "send_recv", "x"],
              "--sizes": ["1", "0", "8:1G", "1G:8", "1:1e30", "x", "8,16", "-8", "1K:1M:2"],
              "--algorithm": ["ring", "tree", "nvls", "collnet", "auto", "pat", "x"],
              "--protocol": ["simple", "ll", "ll128", "auto", "x"],
              "--topology": ["torus", "spine-leaf", "nvl72", "rail-optimized", "x"],
              "--backend": ["analytical", "flow", "x"], "--max-flows": ["1", "0", "x"]}


def collective_cases(rng: random.Random, n: int) -> Iterator[tuple[str, Callable]]:
    for _ in range(n):
        args = ["collective", "--format", "json"]
        for opt in rng.sample(sorted(COLLECTIVE), rng.randint(1, 4)):
            args += [opt, rng.choice(COLLECTIVE[opt])]
        if "--backend" in args and args[args.index("--backend") + 1] == "flow" and \
                "--gpus" in args and args[args.index("--gpus") + 1] in ("1024", "1e9"):
            continue  # a 1,024-GPU flow run is minutes: speed, not handling
        yield " ".join(args[3:]), (lambda a=args: _cli(a))


def service_cases(rng: random.Random, n: int) -> Iterator[tuple[str, Callable]]:
    """Jobs run as a worker runs them (service.jobs.run), with random options."""
    from trainsim.service import Settings
    from trainsim.service.jobs import OPTIONS
    settings = Settings(db_url="sqlite://", workers=0, checkers=0)
    values = [None, 0, -1, 1, 2, 10**9, 1.5, "x", "", True, [], {}, ["parallel.tp=3"],
              ["x=1"], "parallel.tp=abc", ["cluster.num_gpus=1:8"], "8", "15T", "1e400",
              math.nan]
    for _ in range(n):
        kind = rng.choice(["simulate", "sweep", "goodput", "validate"])
        options = {}
        for key in rng.sample(sorted(OPTIONS[kind]), min(2, len(OPTIONS[kind]))):
            options[key] = rng.choice(values)
        if kind == "sweep" and "vary" not in options:
            options["vary"] = ["cluster.nvlink_gbyte_s=300:900"]
        if kind == "goodput":
            options.setdefault("tokens", "1B")
            options["trials"] = rng.choice([1, 5, 0, -1, "x"])
        if kind == "validate" and rng.random() < 0.5:
            options["csv"] = rng.choice(["", "id\n", "a,b\n1,2\n", "id,model\nx,llama3-8b\n",
                                         "\x00", 5])
        cfg = copy.deepcopy(DENSE)

        def thunk(k=kind, c=cfg, o=options):
            return _service_outcome(k, c, o, settings)
        yield f"{kind} options={options!r}"[:160], thunk


def _service_outcome(kind: str, cfg: dict, options: dict, settings) -> str | None:
    """None when a service job ran to a finite result or was refused naming one option."""
    from trainsim.service.jobs import RequestError, run
    try:
        out = run(kind, cfg, options, settings)
    except RequestError as exc:
        if not exc.field.startswith("options.") or "\n" in str(exc):
            return f"request error naming {exc.field!r}, not one option"
        return None
    low = out.result.lower()
    if any(w.strip('",:[]') in ("nan", "infinity", "-infinity") for w in low.split()):
        return "non-finite in result"
    return None


SEARCH_JOB_VALUES = {
    "gpus": [8, "8", 3, 0, -1, "x", [8, 16], 1.5, None], "global_batch": [8, 7, 0, "x", 1e30],
    "seq": [1, 256, 3, 0, "abc"], "tp": ["1,2", 3, "x", 0], "pp": [1, "2", 0],
    "top": [0, 1, -1, "x", 1e9], "rank_by": ["split", "x", 1], "reference": ["tp=2", "x", 3],
    "pareto_slowdown": [0.5, "nan", math.inf, 1.25], "tokens": ["1B", 0, -1, "x", 1e300],
    "days": [1, 0, -1, "x", 1e-9], "max_gpus": [8, 0, -1, 2**60], "price": [-1, math.nan, 1e300],
    "pue": [0.5, 100], "grid": [-1, 1e300], "gpu_idle_fraction": [2, -1],
    "node_overhead": [math.inf, -1], "dtype": ["fp4", 1], "recompute": ["x", ""],
    "zero": ["4", 5], "overlap": ["maybe", 1], "max_vpp": [0, -1, 100],
    "max_micro_batch": [0, 1e9], "exhaustive": ["x", 1], "plot": ["x", 1],
    "set": [["model.num_experts=4"], "x", [1]], "model": [None, "x", 5], "gpu": ["x", 1],
    "gpus_per_node": [0, 3, "x"], "nic_gbps": [0, -1, "x"], "cp": [0, 2]}


def service_search_cases(rng: random.Random, n: int) -> Iterator[tuple[str, Callable]]:
    """search and plan jobs of the tiny model (service.jobs.run) with two options changed."""
    from trainsim.service import Settings
    from trainsim.service.jobs import OPTIONS
    settings = Settings(db_url="sqlite://", workers=0, checkers=0)
    for _ in range(n):
        kind = rng.choice(["search", "plan"])
        opts: dict = ({"gpus": 8, "global_batch": 8, "seq": 256} if kind == "search" else
                      {"tokens": "1B", "days": 1, "max_gpus": 8, "seq": 256, "global_batch": 8})
        for key in rng.sample(sorted(OPTIONS[kind]), 2):
            if key in SEARCH_JOB_VALUES:
                opts[key] = rng.choice(SEARCH_JOB_VALUES[key])

        def thunk(k=kind, o=opts):
            return _service_outcome(k, {"model": dict(DENSE["model"])}, o, settings)
        yield f"{kind} options={opts!r}"[:160], thunk


def _write_config(workdir: str, name: str, cfg: dict) -> str:
    import yaml
    path = os.path.join(workdir, name)
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    return path


def export_cases(rng: random.Random, workdir: str, n: int) -> Iterator[tuple[str, Callable]]:
    """`export --chakra/--simai` and `simulate --trace` of the edge configs (EXTREMES) and of
    random field changes."""
    outs = os.path.join(workdir, "out")
    os.makedirs(outs, exist_ok=True)
    table = [(s, name, tp) for s in SECTIONS for name, tp in fields_of(s)]
    for i in range(n):
        base_name = rng.choice(list(BASES))
        cfg = copy.deepcopy(BASES[base_name])
        if rng.random() < 0.5:
            change = rng.choice(EXTREMES)
            for section, fields in change.items():
                cfg[section].update(fields)
        else:
            section, name, tp = rng.choice(table)
            change = {section: {name: rng.choice(battery(tp))}}
            cfg[section].update(change[section])
        path = _write_config(workdir, f"exp{i}.yaml", cfg)
        kind = rng.choice(["chakra", "simai", "trace"])
        if kind == "trace":
            args = ["simulate", path, "--trace", os.path.join(outs, f"t{i}.json")]
        else:
            args = ["export", path, f"--{kind}", os.path.join(outs, f"e{i}")]
            if kind == "chakra":
                args += ["--ranks", rng.choice(["0", "0,1", "7", "8", "-1", "0-3", "x", ""])]
            for opt, values in (("--tp", ["1", "2", "3", "8"]), ("--gpus", ["1", "8", "12"]),
                                ("--gbs", ["1", "16", "7"]), ("--seq", ["1", "64", "100"]),
                                ("--ep", ["1", "2", "3"]), ("--cp", ["1", "2", "3"])):
                if rng.random() < 0.2:
                    args += [opt, rng.choice(values)]
        label = f"{base_name} {change}: {' '.join(args[2:])}".replace(outs + "/", "")
        yield label[:200], (lambda a=args: _cli(a))


VARY = ["cluster.nvlink_gbyte_s=300:900", "parallel.tp=1,2,3", "training.seq_length=1:8",
        "model.num_layers=0:4", "cluster.num_gpus=1,8,1000000", "parallel.pp=1:16",
        "training.global_batch_size=1,7,16", "cluster.gpu_overrides.hbm_gib=0:80",
        "cluster.gpu_overrides.peak_tflops=1e-9,1e9", "model.num_experts=1,8",
        "training.dtype=fp8,bf16,x", "cluster.nic_gbit_s_per_gpu=0:400",
        "parallel.recompute=none,full", "model.vocab_size=1,2", "cluster.pue=0.5:20",
        "training.micro_batch_size=1:100", "cluster.topology=torus,nvl72",
        "model.hidden_size=1:256", "parallel.ep=1,2,3"]


def sweep_cases(rng: random.Random, workdir: str, n: int) -> Iterator[tuple[str, Callable]]:
    path = _write_config(workdir, "sweep.yaml", DENSE)
    mpath = _write_config(workdir, "sweep_moe.yaml", MOE)
    for _ in range(n):
        args = ["sweep", rng.choice([path, mpath]), "--format", "json",
                "--steps", rng.choice(["1", "2", "3"])]
        for v in rng.sample(VARY, rng.randint(1, 2)):
            args += ["--vary", v]
        yield " ".join(args[4:]), (lambda a=args: _cli(a))


def search_cases(rng: random.Random, workdir: str, n: int) -> Iterator[tuple[str, Callable]]:
    """`search` and `plan` of the tiny models on few GPUs (each a bounded search)."""
    path = _write_config(workdir, "smodel.yaml", {"model": DENSE["model"]})
    mpath = _write_config(workdir, "smoe.yaml", {"model": MOE["model"]})
    for _ in range(n):
        cmd = rng.choice(["search", "plan"])
        args = [cmd, rng.choice([path, mpath]), "--workers", "1", "--format", "json",
                "--seq", rng.choice(["1", "2", "256", "3"])]
        if cmd == "search":
            args += ["--gpus", rng.choice(["1", "2", "8", "3", "6"]),
                     "--global-batch", rng.choice(["1", "8", "7", "1024"])]
        else:
            args += ["--tokens", rng.choice(["1", "1M", "1B"]), "--days",
                     rng.choice(["1e-6", "1", "1e6"]), "--max-gpus", rng.choice(["1", "8"]),
                     "--global-batch", rng.choice(["1", "8", "7"])]
        for opt, values in (("--tp", ["1", "3", "1,2"]), ("--pp", ["1", "4", "3"]),
                            ("--cp", ["1", "2"]), ("--zero", ["0", "3"]),
                            ("--recompute", ["none", "full"]), ("--dtype", ["fp8", "bf16"]),
                            ("--max-vpp", ["1", "3"]), ("--max-micro-batch", ["1", "3"]),
                            ("--gpus-per-node", ["1", "3", "8"]),
                            ("--set", ["model.num_experts=4", "parallel.ep=2",
                                       "training.micro_batch_size=3", "cluster.pue=1e3",
                                       "model.moe_router_topk=8", "model.num_layers=1"])):
            if rng.random() < 0.2:
                args += [opt, rng.choice(values)]
        yield " ".join(args[1:]), (lambda a=args: _cli(a))


KERNEL_CELLS = {"m": ["1", "0", "-1", "1e9", "1.5", "x", ""], "n": ["1", "0", "1e12"],
                "k": ["1", "0", "3"], "dtype": ["fp8", "fp4", "x", "int8"],
                "kind": ["gemm", "attention", "x", "grouped_gemm", "rmsnorm"],
                "measured_value": ["1e-300", "1e300", "0", "-1", "nan"],
                "measured_unit": ["TFLOP/s", "us", "ms", "s", "GB/s", "x"],
                "gpu": ["a100-sxm-80gb", "x", "mi300x"], "groups": ["0", "1", "1e9"],
                "seq_len": ["1", "0", "1e9"], "heads": ["0", "1", "3"],
                "head_dim": ["1", "0"], "causal": ["true", "x", "2"]}
COLLECTIVE_CELLS = {"num_gpus": ["1", "0", "3", "1e9", "x"], "gpus_per_node": ["0", "3", "1e6"],
                    "nic_gbps_per_gpu": ["0", "1e-300", "1e300", "nan"],
                    "collective": ["all_to_all", "x", "broadcast"],
                    "message_bytes": ["0", "1", "1e30", "-1"],
                    "algorithm": ["tree", "nvls", "x", "collnet", ""],
                    "measured_busbw_GBps": ["1e-300", "1e300", "0"], "gpu": ["x", "mi300x"]}


def validate_cases(rng: random.Random, workdir: str, n: int) -> Iterator[tuple[str, Callable]]:
    """`validate` of kernel and collective CSVs with cells from each column's battery."""
    sep = ","
    kernel_header = ("id,source,gpu,kind,implementation,dtype,m,n,k,groups,batch,seq_len,heads,"
                     "kv_heads,head_dim,causal,tokens,hidden,ffn,experts,top_k,bytes,"
                     "measured_value,measured_unit").split(sep)
    kernel_good = ("ok,x,h100-sxm-80gb,gemm,cublas,bf16,1024,1024,1024,,,,,,,,,,,,,,500,"
                   "TFLOP/s").split(sep)
    coll_header = ("id,source,gpu,num_gpus,gpus_per_node,nic_gbps_per_gpu,collective,"
                   "message_bytes,algorithm,measured_busbw_GBps").split(sep)
    coll_good = "ok,x,h100-sxm-80gb,8,8,400,all_reduce,1048576,ring,100".split(sep)
    for i in range(n):
        if rng.random() < 0.5:
            header, good, cells = kernel_header, kernel_good, KERNEL_CELLS
        else:
            header, good, cells = coll_header, coll_good, COLLECTIVE_CELLS
        row = dict(zip(header, good))
        row["id"] = "bad"
        for col in rng.sample(sorted(cells), rng.randint(1, 3)):
            row[col] = rng.choice(cells[col])
        path = os.path.join(workdir, f"v{i}.csv")
        with open(path, "w") as f:
            f.write(",".join(header) + "\n" + ",".join(row[h] for h in header) + "\n"
                    + ",".join(good) + "\n")
        args = ["validate", path, "--format", "json", "--compute-db",
                rng.choice(["none", "auto"])]
        label = ", ".join(f"{k}={v}" for k, v in row.items() if v != dict(zip(header, good))[k])
        yield label[:160], (lambda a=args: _cli(a))


# ------------------------------------------------------------------------------ main

def sweep(seed: int, n_random: int, only: set[str], workdir: str) -> dict:
    rng = random.Random(seed)
    surfaces = {
        "config": lambda: config_cases(rng, n_random),
        "extreme": extreme_cases,
        "set": lambda: set_cases(rng, workdir, 400),
        "goodput": lambda: goodput_cases(rng, workdir, 400),
        "collective": lambda: collective_cases(rng, 250),
        "service": lambda: service_cases(rng, 150),
        "service-search": lambda: service_search_cases(rng, 60),
        "export": lambda: export_cases(rng, workdir, 300),
        "sweep": lambda: sweep_cases(rng, workdir, 150),
        "validate": lambda: validate_cases(rng, workdir, 300),
        "search": lambda: search_cases(rng, workdir, 60),
    }
    return fuzz_checks.run_surfaces(surfaces, only)


def main(argv: list[str] | None = None) -> int:
    import tempfile
    import warnings
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--random", type=int, default=1000, help="random config combinations")
    ap.add_argument("--only", default="", help="surfaces: config,extreme,set,goodput,...")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as d:
        out = sweep(args.seed, args.random, {s for s in args.only.split(",") if s}, d)
    return fuzz_checks.print_report(out)


if __name__ == "__main__":
    sys.exit(main())
