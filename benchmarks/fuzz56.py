"""Input robustness, 2026-11-29 (56th session, robust56): settings a run reads only under fp8,
the search and plan commands' size lists against the model they split, the service's answers
in the request's own names, and windows and sections no iteration reads.

- ``fp8only``: a small run in bf16, fp16 or fp8 (with or without a framework profile) with one
  or two of the training settings read only under fp8 (``fp8_recipe``, ``fp8_param_gather``,
  ``num_layers_at_start_in_bf16`` / ``_end_``, ``attention_output_e5m6``; and
  ``activation_func_fp8_input_store``, which a 16-bit SwiGLU reads too) at a value that asks
  for something or at one that does not. Oracle: a 16-bit run says each asking setting that
  changes its config is ignored (one ``warning`` naming it: Megatron-core reads them under
  ``if self.fp8:`` only, transformer_config.py L1527), never one it reads, never one at the
  value the run holds without it, and none but those once its resolved config is read back;
- ``sizes``: ``search`` and ``plan`` of a small model (4-8 heads, 3-6 layers, a 384-768 token
  sequence, dense or MoE) with ``--tp`` / ``--pp`` / ``--cp`` lists and ``--schedules``, each
  drawn from sizes that split the model and sizes that cannot. Oracle (this script's own
  arithmetic, not trainsim's): where no size of a list can split the model at any GPU count
  (tp divides no head count, pp no layer count, 2*cp no sequence; a schedule with only
  ``--pp 1``) the answer is one line naming that option; otherwise a finite answer or one
  line, every configuration answered within the lists given, no schedule named ``''``;
- ``service``: job bodies through the HTTP API (FastAPI's TestClient, no workers): each kind's
  options at odd values and a ``config`` that is neither a mapping nor text. Oracle: one line
  that names the request's fields, never a CLI flag that is an option of the kind
  (``--tokens`` for ``options.tokens``), whose ``field`` is that option where the message
  names one, and never pydantic's tag of a union member (``config.dict[str,any]``);
- ``rates``: every rate a config states (the training data read, the cluster's links, a GPU
  override, the checkpoint's host copy and storage) at 5e-324 to 0.5 B/s. Oracle: below 1 B/s
  refused naming the field, as the cluster's and the GPU's rates are
  (``config._build.MIN_RATE``); else a finite answer or one line;
- ``windows``: ``goodput --days`` down to 1e-300 and ``sweep --vary`` of each section a config
  may hold (and some it may not). Oracle: a window shorter than one iteration is refused in one
  line (as ``--tokens`` below one global batch is), and a ``--vary`` of a section no point
  reads is refused up front naming ``--vary``, not point by point.

Each input must give a sane answer or one ``TrainsimError`` line (``fuzz_checks.outcome``); a
hang is 30 CPU s and any input over 10 CPU s is its own class.

    PYTHONPATH=src python benchmarks/fuzz56.py [--only fp8only,sizes,service,windows,rates]
        [--count N] [--seed S] [--every] [--progress] [--refusals]
"""
from __future__ import annotations

import copy
import json
import os
import random
import re
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz_checks import BASES, REFUSED, Case

fuzz_checks.TIME_LIMIT_S = 300


# ------------------------------------------------------------------------------ fp8only

ASKING = {"fp8_recipe": ["current", "blockwise", "mxfp8", "delayed"],
          "fp8_param_gather": [True, "true"], "num_layers_at_start_in_bf16": [1, 2],
          "num_layers_at_end_in_bf16": [1], "attention_output_e5m6": [True],
          "activation_func_fp8_input_store": [True]}
"""Values of each setting that ask for something (``delayed`` is TrainingConfig's default
recipe: the oracle asks the run without it whether it changes anything)."""
NOT_ASKING = {"fp8_recipe": [None, ""], "fp8_param_gather": [False], "num_layers_at_start_in_bf16":
              [0], "num_layers_at_end_in_bf16": [0], "attention_output_e5m6": [False],
              "activation_func_fp8_input_store": [False]}
READ_IN_16_BITS = ("activation_func_fp8_input_store",)
"""Settings a 16-bit run reads too (Megatron-core's SwiGLU casts its saved input to fp8 in any
dtype: fused_bias_swiglu.py; transformer_config.py L2467 checks SwiGLU only)."""
FRAMEWORKS = [None, None, "megatron-core", "nemo", "torchtitan", "megatron-bridge"]


def _built(raw: dict[str, Any]) -> tuple[Any, list[str]]:
    """The config of ``raw`` and the trainsim warnings its loading raised."""
    from trainsim.catalog import run_config_from_dict
    from trainsim.errors import TrainsimWarning

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        cfg = run_config_from_dict(copy.deepcopy(raw))
    return cfg, [str(w.message) for w in seen if issubclass(w.category, TrainsimWarning)]


def _ignored(said: list[str]) -> list[str]:
    return [s for s in said if re.match(r"training\.\w+=.* is ignored", s)]


def fp8only_check(raw: dict[str, Any], given: dict[str, Any], read_back: bool) -> str | None:
    """fp8only's oracle for ``raw`` (a run with the settings ``given`` in its training
    section)."""
    cfg, said = _built(raw)
    ignored = _ignored(said)
    if cfg.training.dtype == "fp8":
        return f"an fp8 run warned: {ignored[0][:90]}" if ignored else None
    for name, value in given.items():
        mentioned = [s for s in ignored if s.startswith(f"training.{name}=")]
        without = copy.deepcopy(raw)
        del without["training"][name]
        unstated = getattr(_built(without)[0].training, name)
        asks = value not in (None, "") and bool(getattr(cfg.training, name)) \
            if name != "fp8_recipe" else value not in (None, "")
        changes = getattr(cfg.training, name) != unstated
        if name in READ_IN_16_BITS:
            if mentioned:
                return f"a setting a 16-bit run reads warned as ignored: {name}"
        elif asks and changes and not mentioned:
            return f"an fp8-only setting on a 16-bit run ignored without a word: {name}"
        elif mentioned and not (asks and changes):
            return f"a warning for a setting that changes nothing: {mentioned[0][:80]}"
    if read_back:
        from trainsim.simulator import simulate

        resolved = simulate(cfg).to_dict()["config"]
        again = _ignored(_built({**resolved, "cluster": {**resolved["cluster"],
                                                         "compute_db": None}})[1])
        new = [s for s in again if s.split("=")[0] not in {t.split("=")[0] for t in ignored}]
        if new:  # a setting the run holds without asking for it (robust52's recipe)
            return f"a resolved 16-bit config warned when read back: {new[0][:80]}"
    return None


def fp8only_cases(rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for _ in range(400):
            raw = copy.deepcopy(BASES["dense"])
            dtype = rng.choice(["bf16", "bf16", "fp16", "fp8"])
            raw["training"]["dtype"] = dtype
            if rng.random() < 0.5:
                raw["model"]["activation"] = "swiglu"
            fw = rng.choice(FRAMEWORKS)
            if fw:
                raw["training"]["framework"] = fw
            given: dict[str, Any] = {}
            for name in rng.sample(sorted(ASKING), rng.choice([1, 1, 2])):
                pool = ASKING[name] if rng.random() < 0.75 else NOT_ASKING[name]
                given[name] = rng.choice(pool)
            raw["training"].update(given)
            label = f"{dtype} {fw or 'no framework'} {given}"
            back = rng.random() < 0.2
            yield label, (lambda r=raw, g=given, b=back: fp8only_check(r, g, b))
    return cases


# ------------------------------------------------------------------------------ sizes

def _model(rng: random.Random) -> dict[str, Any]:
    heads = rng.choice([4, 6, 8])
    model = {"hidden_size": 64 * heads, "num_layers": rng.choice([3, 4, 6]),
             "num_attention_heads": heads, "vocab_size": 1024}
    if rng.random() < 0.3:
        model["num_kv_heads"] = 2
    if rng.random() < 0.25:
        model.update(num_experts=4, moe_router_topk=2, moe_ffn_hidden_size=128)
    return model


def _splits(model: dict[str, Any], seq: int) -> dict[str, Callable[[int], bool]]:
    """Whether a size can split the model at some GPU count (this script's arithmetic: tp a
    divisor of the heads that divides the KV heads or is a multiple of them, as a run with no
    framework splits them; pp at most the layers and, dense, a divisor of them; 2*cp a divisor
    of the sequence)."""
    layers, moe = model["num_layers"], "num_experts" in model
    kv = model.get("num_kv_heads", model["num_attention_heads"])
    return {"tp": lambda t: model["num_attention_heads"] % t == 0 and (kv % t == 0 or t % kv == 0),
            "pp": lambda p: p <= layers and (moe or layers % p == 0),
            "cp": lambda c: c == 1 or seq % (2 * c) == 0}


SIZES = {"tp": [1, 2, 3, 4, 5, 6, 8, 16], "pp": [1, 2, 3, 4, 5, 8], "cp": [1, 2, 3, 4, 5, 8]}
SCHEDULES = ["1f1b", "zb_v", "interleaved_1f1b", "zb_h1", "gpipe"]


def _refused(r: Any, lines: list[str]) -> str | None:
    """None for a refusal in one line (counted in ``REFUSED``), else the finding."""
    if len(lines) != 1:
        return f"exit {r.exit_code} with {len(lines)} error lines"
    REFUSED[0] += 1
    return None


def sizes_check(args: list[str], lists: dict[str, list[int]], splits: dict[str, Callable],
                schedules: bool) -> str | None:
    """sizes' oracle for a search or plan command line ``args`` (``lists``: the sizes given
    per option)."""
    from fuzz51 import _errors, _invoke

    r = _invoke(args)
    lines = _errors(r)
    if "Traceback" in r.output:
        return "a traceback"
    text = "\n".join(lines)
    if "['']" in text or "= is fixed" in text:
        return "a schedule named '' (Megatron's 1F1B) in a refusal"
    none_split = [k for k, v in lists.items() if not any(splits[k](x) for x in v)]
    if schedules and lists.get("pp") == [1] and "pp" not in none_split:
        none_split.append("schedules")
    if none_split:
        if r.exit_code == 0:
            return f"--{none_split[0]}: no size splits the model, answered"
        if len(lines) != 1 or not any(f"--{k}" in lines[0] for k in none_split):
            return (f"--{none_split[0]}: no size splits the model, refused without naming "
                    f"it: {lines[-1][:60] if lines else ''}")
        REFUSED[0] += 1
        return None
    if r.exit_code != 0:
        return _refused(r, lines)
    got = json.loads(r.stdout)
    if not fuzz_checks.finite(got):
        return "a non-finite figure in the JSON"
    configs = [e["config"] for e in got.get("top", []) + got.get("pareto", [])] if \
        "top" in got else [got["best"]["config"]] if got.get("best") else []
    for c in configs:
        for k, v in lists.items():
            if c.get(k) not in v:
                return f"an answer outside --{k} {v}: {k}={c.get(k)}"
    return None


def sizes_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        import yaml

        d = Path(tempfile.mkdtemp(dir=workdir))
        for k in range(160):
            model = _model(rng)
            seq = rng.choice([384, 512, 768])
            path = d / f"m{k}.yaml"
            path.write_text(yaml.safe_dump({"model": model}), encoding="utf-8")
            command = rng.choice(["search", "search", "plan"])
            args = [command, str(path), "--workers", "1", "--format", "json", "--seq", str(seq),
                    "--global-batch", "16", "--max-micro-batch", "1", "--recompute", "none",
                    "--overlap", "off"]
            args += ["--gpus", "8", "--top", "2"] if command == "search" else \
                ["--tokens", "1e9", "--days", "1e6", "--max-gpus", "8"]
            lists: dict[str, list[int]] = {}
            for name in rng.sample(sorted(SIZES), rng.choice([1, 1, 2])):
                lists[name] = sorted(rng.sample(SIZES[name], rng.choice([1, 1, 2])))
                args += [f"--{name}", ",".join(map(str, lists[name]))]
            schedules = rng.random() < 0.3
            if schedules:
                args += ["--schedules", ",".join(rng.sample(SCHEDULES, rng.choice([1, 2])))]
            label = " ".join(args[:1] + [json.dumps(model, separators=(",", ":"))] + args[2:])
            splits = _splits(model, seq)
            yield label, (lambda a=args, li=lists, s=splits, h=schedules:
                          sizes_check(a, li, s, h))
    return cases


# ------------------------------------------------------------------------------ service

ODD = [-1, 0, "abc", 1e300, [], {}, True, " x ", "1,5T", 2**70, 0.5, "\uff12", "1e999",
       ["a=b"], "parallel.tp=2", "tp=1,2", "zz.y=1,2"]
CONFIGS_NOT = [[1], 5, None, True, 1.5]
BASE_OPTIONS = {"simulate": {}, "sweep": {"vary": ["training.micro_batch_size=1,2"]},
                "goodput": {"tokens": "1e9", "trials": 5},
                "search": {"model": "llama3.2-1b", "gpus": 8, "global_batch": 16, "seq": 512,
                           "tp": "1", "pp": "1", "max_micro_batch": 1, "recompute": "none"},
                "plan": {"model": "llama3.2-1b", "tokens": "1e9", "days": 30, "max_gpus": 8,
                         "seq": 512, "tp": "1", "pp": "1", "max_micro_batch": 1,
                         "recompute": "none"}}
FLAG = re.compile(r"(?<![\w-])--([a-z][a-z-]*[a-z])\b")


def service_check(client_of: Callable[[], tuple[Any, dict[str, str]]], kind: str,
                  body: str) -> str | None:
    """service's oracle for one job ``body`` of ``kind``."""
    from trainsim.service.requests import OPTIONS

    client, headers = client_of()
    r = client.post("/api/v1/jobs", content=body.encode("utf-8"), headers=headers)
    if r.status_code >= 500:
        return f"HTTP {r.status_code}"
    if r.status_code < 400:
        return None
    try:
        got = r.json()
    except ValueError:
        return f"HTTP {r.status_code} without a JSON error"
    err, field = str(got.get("error", "")), str(got.get("field", ""))
    if not err.strip() or "\n" in err.strip():
        return "an error not one line"
    flags = [m for m in FLAG.findall(err) if m.replace("-", "_") in OPTIONS.get(kind, {})]
    if flags:
        return f"a refusal names the CLI flag --{flags[0]}, not options.{flags[0].replace('-', '_')}"
    if "dict[" in err or "dict[" in field or field.endswith(".str"):
        return "pydantic's tag of a union member in the refusal"
    named = re.match(r"options\.(\w+)", err)
    if named and field != f"options.{named.group(1)}":
        return f"a refusal of options.{named.group(1)} with field {field!r}"
    REFUSED[0] += 1
    return None


def service_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    state: dict[str, Any] = {}

    def client_of() -> tuple[Any, dict[str, str]]:
        from fuzz52 import _client

        return _client(workdir, state)

    def cases() -> Iterator[Case]:
        from trainsim.service.requests import OPTIONS

        for kind, options in BASE_OPTIONS.items():
            config = {} if kind in ("search", "plan") else BASES["dense"]
            for key in [k for k in OPTIONS[kind] if k not in ("plot", "trace")]:
                for value in ODD:
                    body = json.dumps({"kind": kind, "config": config,
                                       "options": {**options, key: value}})
                    yield f"{kind} options.{key}={value!r}", (
                        lambda k=kind, b=body: service_check(client_of, k, b))
            for value in CONFIGS_NOT:
                body = json.dumps({"kind": kind, "config": value, "options": options})
                yield f"{kind} config={value!r}", (
                    lambda k=kind, b=body: service_check(client_of, k, b))
    return cases


# ------------------------------------------------------------------------------ windows

DAYS = ["1e-300", "1e-12", "1e-9", "1e-7", "1e-6", "1e-3", "1", "30"]
SECTIONS = ["reliability", "Reliability", "x-anchors", "name", "description", "model",
            "parallel", "training", "cluster", "Training", "reliability.checkpoint"]
FIELDS = {"model": "num_layers=2,4", "parallel": "tp=1,2", "training": "micro_batch_size=1,2",
          "cluster": "nvlink_gbyte_s=300,900"}


def days_check(args: list[str], iteration_s: float, days: float) -> str | None:
    from fuzz51 import _errors, _invoke

    r = _invoke(args)
    lines = _errors(r)
    if days * 86400 < iteration_s:
        if r.exit_code == 0:
            return "a --days window shorter than one iteration answered"
        if len(lines) != 1 or "days" not in lines[0]:
            return "a --days window shorter than one iteration refused without naming it"
        REFUSED[0] += 1
        return None
    if r.exit_code != 0:
        return _refused(r, lines)
    return None if fuzz_checks.finite(json.loads(r.stdout)) else "a non-finite figure"


def vary_check(args: list[str], section: str) -> str | None:
    from fuzz51 import _errors, _invoke

    r = _invoke(args)
    lines = _errors(r)
    if section in FIELDS:
        if r.exit_code != 0 and len(lines) != 1:
            return f"exit {r.exit_code} with {len(lines)} error lines"
        return None
    if r.exit_code == 0:
        return f"--vary {section}.*: a section no point reads, answered"
    if len(lines) != 1 or not lines[0].startswith("error: --vary"):
        return f"--vary {section}.*: refused point by point, not up front"
    REFUSED[0] += 1
    return None


def windows_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        from trainsim.catalog import run_config_from_dict
        from trainsim.simulator import simulate

        d = Path(tempfile.mkdtemp(dir=workdir))
        runs = {}
        for name in ("dense", "moe"):
            path = d / f"{name}.json"
            path.write_text(json.dumps(BASES[name]), encoding="utf-8")
            it = simulate(run_config_from_dict(copy.deepcopy(BASES[name]))).iteration_time_s
            runs[name] = (path, it)
        for _ in range(60):
            name = rng.choice(sorted(runs))
            path, it = runs[name]
            days = rng.choice(DAYS)
            args = ["goodput", str(path), "--days", days, "--trials", "3", "--format", "json"]
            yield f"goodput {name} --days {days}", (
                lambda a=args, i=it, x=float(days): days_check(a, i, x))
        for _ in range(60):
            name = rng.choice(sorted(runs))
            section = rng.choice(SECTIONS)
            field = FIELDS.get(section, "x=1,2")
            args = ["sweep", str(runs[name][0]), "--vary", f"{section}.{field}", "--format",
                    "json"]
            yield f"sweep {name} --vary {section}.{field}", (
                lambda a=args, s=section: vary_check(a, s))
    return cases


# ------------------------------------------------------------------------------ rates

RATES = {("training", "data_read_bw_Bps"): "simulate",
         ("cluster", "nic_gbit_s_per_gpu"): "simulate", ("cluster", "nvlink_gbyte_s"): "simulate",
         ("cluster.gpu_overrides", "hbm_gbyte_s"): "simulate",
         **{("reliability.checkpoint", k): "goodput" for k in (
             "host_copy_bw_Bps", "storage_write_bw_Bps", "storage_read_bw_Bps",
             "node_storage_bw_Bps")}}
"""Every rate a run's config states, in its unit (the cluster's and the GPU's in Gbit/s or
GB/s, the rest in B/s), and the command that reads it."""
TINY = [5e-324, 1e-300, 1e-12, 0.5, 1e-9]


def rate_check(args: list[str], field: str, below: bool) -> str | None:
    """rates' oracle: a rate below 1 B/s (``below``) is refused naming ``field``, as the
    cluster's and the GPU's are (``config._build.MIN_RATE``); otherwise a finite answer or one
    line."""
    from fuzz51 import _errors, _invoke

    r = _invoke(args)
    lines = _errors(r)
    if r.exit_code == 0:
        if not fuzz_checks.finite(json.loads(r.stdout)):
            return f"{field}: a non-finite figure in the JSON"
        return f"{field}: a rate below 1 B/s answered" if below else None
    if len(lines) != 1:
        return f"exit {r.exit_code} with {len(lines)} error lines"
    if below and field.split(".")[-1] not in lines[0]:
        return f"{field}: a rate below 1 B/s refused blaming another field"
    REFUSED[0] += 1
    return None


def rates_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    scale = {"nic_gbit_s_per_gpu": 1e9 / 8, "nvlink_gbyte_s": 1e9, "hbm_gbyte_s": 1e9}

    def cases() -> Iterator[Case]:
        d = Path(tempfile.mkdtemp(dir=workdir))
        for k, ((sec, field), value) in enumerate((key, v) for key in RATES for v in TINY):
            raw = copy.deepcopy(BASES["dense"])
            node = raw
            for part in sec.split("."):
                node = node.setdefault(part, {})
            node[field] = value
            path = d / f"r{k}.json"
            path.write_text(json.dumps(raw), encoding="utf-8")
            args = [RATES[sec, field], str(path), "--format", "json"]
            if args[0] == "goodput":
                args += ["--tokens", "1e9", "--trials", "3"]
            below = value * scale.get(field, 1.0) < 1
            yield f"{args[0]} {sec}.{field}={value!r}", (
                lambda a=args, f=f"{sec}.{field}", b=below: rate_check(a, f, b))
    return cases


# ------------------------------------------------------------------------------ main

def surfaces(workdir: str, rng: random.Random) -> dict[str, Callable[[], Iterator[Case]]]:
    return {"fp8only": fp8only_cases(rng), "sizes": sizes_cases(workdir, rng),
            "service": service_cases(workdir), "windows": windows_cases(workdir, rng),
            "rates": rates_cases(workdir)}


def main(argv: list[str] | None = None) -> int:
    return fuzz_checks.seeded_round(56, argv, surfaces)


__all__ = ["fp8only_check", "service_check", "sizes_check", "surfaces"]

if __name__ == "__main__":
    fuzz_checks.run_round(main)
