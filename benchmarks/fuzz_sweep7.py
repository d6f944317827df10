"""Seventh input sweep: the leads the sixth left, each a surface checked against an oracle
from outside trainsim (20th session, fuzz7).

- ``service``: the HTTP API (FastAPI's TestClient, no workers) with ``framework_version`` sent
  as a JSON number spelled 9 ways: the job stored must hold the text as sent (what
  ``json.loads(..., parse_float=str)`` reads), or the request is refused in one 422 line;
  bodies that are not plain JSON data (duplicate keys, NaN, bad UTF-8, 100 levels deep): one
  422 line naming ``body``.
- ``sweepjson``: ``sweep --vary training.framework_version=A,B --format json``: each row's value
  is the text the run used (``--set`` reads the same text).
- ``case``: every choice option of every command, from click's own list, in upper and mixed
  case: accepted exactly when its lower case is, as a config's choices are
  (``config._build`` lower-cases them); ``search --recompute`` / ``--dispatcher`` lists too; the
  commands not run (capture, profile, serve, token list ...) by click's reading of the value.
- ``anchors``: top-level keys holding YAML anchors: ``x-``-prefixed read as the config without
  them; any other unknown key refused in one line.
- ``multimodal``: 4 Hugging Face configs wrapped as a composite's ``text_config`` (transformers'
  ``Llama4Config``, ``Gemma3Config``...): the same model as the text config alone, and a
  warning; a composite with a top-level layer count read as before.
- ``kvheads``: the 8 frameworks whose source was read (``SPLITS``, with its citations) x tp in
  1, 2, 4, 8, 16 x KV heads in 1, 2, 4, 8: refused exactly where that source splits the KV heads
  (tp must divide them). The other profiles have no oracle outside trainsim and are not judged.

    python benchmarks/fuzz_sweep7.py [--only service,case,...]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import random
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_checks import REFUSED, only_of, report_sweep, seeded_sample, surface_class
from fuzz_sweep6 import _TMP, BASES, RUN, SKIP, _write_text, run_cases

from trainsim import run_config_from_dict
from trainsim.catalog import load_run_config, model_from_hf_config
from trainsim.errors import TrainsimError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "llama3-8b-h100.yaml"
NUMBERS = ["0.10", "0.1", "24.10", "1.10", "0.100", "25.02", "1e1", "2.0", "0.12"]
"""framework_version sent as a JSON number."""

# ------------------------------------------------------------------------------ service


def _client(stack: contextlib.ExitStack):
    """The app's client, entered on ``stack`` (exited with it: the lifespan's shutdown stops the
    app's threads and unfreezes the collector)."""
    from fastapi.testclient import TestClient

    from trainsim.service import Settings, create_app
    app = create_app(Settings(db_url=f"sqlite:///{_TMP / 'jobs.db'}", workers=0, checkers=0),
                     start_workers=False)
    client = stack.enter_context(TestClient(app))
    token = app.state.store.create_token("fuzz7")
    return client, app, {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}


def service_cases() -> Iterator[tuple[str, Callable[[], str | None]]]:
    """The cases below, with the client they start exited after the last (or when dropped)."""
    with contextlib.ExitStack() as stack:
        yield from _service_cases(stack)


def _service_cases(stack: contextlib.ExitStack) -> Iterator[tuple[str, Callable[[], str | None]]]:
    state: dict[str, Any] = {}

    def post(body: str) -> Any:
        if not state:
            state["c"] = _client(stack)
        client, _, headers = state["c"]
        return client.post("/api/v1/jobs", content=body, headers=headers)

    def number(text: str) -> str | None:
        run = copy.deepcopy(RUN)
        run["training"]["framework_version"] = "@@"
        body = json.dumps({"kind": "simulate", "config": run}).replace('"@@"', text)
        want = json.loads(body, parse_float=str)["config"]["training"]["framework_version"]
        r = post(body)
        if r.status_code == 422 and "\n" not in r.json()["error"]:
            REFUSED[0] += 1
            return None
        if r.status_code != 202:
            return f"status {r.status_code}: {r.text[:80]}"
        job = state["c"][1].state.store.get_job(r.json()["id"])
        got = str(job.request["config"]["training"]["framework_version"])
        return None if got == want else f"silently changed: framework_version={want!r} " \
            f"(HTTP) stored as {got!r}"

    for text in NUMBERS:
        yield f"service framework_version={text}", (lambda t=text: number(t))

    def not_plain(body: str | bytes) -> str | None:
        r = post(body)
        if r.status_code != 422 or r.json().get("field") != "body" or "\n" in r.json()["error"]:
            return f"accepted or unclear: status {r.status_code} {r.text[:80]}"
        REFUSED[0] += 1
        return None

    for name, body in {"duplicate key": '{"kind": "simulate", "kind": "search"}',
                       "NaN": '{"kind": "simulate", "config": {"x": NaN}}',
                       "Infinity": '{"kind": "simulate", "config": {"x": -Infinity}}',
                       "bad UTF-8": b'{"kind": "simulate\xff"}',
                       "deep": '{"kind": "simulate", "config": ' + "[" * 100 + "]" * 100 + "}",
                       "long integer": '{"kind": "simulate", "config": {"x": ' + "9" * 40 + "}}",
                       }.items():
        yield f"service body {name}", (lambda b=body: not_plain(b))


# ------------------------------------------------------------------------------ sweepjson

def sweep_json(a: str, b: str) -> str | None:
    from click.testing import CliRunner

    from trainsim.cli import main
    r = CliRunner().invoke(main, ["sweep", str(EXAMPLE), "--set", "training.framework=megatron-core",
                                  "--vary", f"training.framework_version={a},{b}",
                                  "--format", "json"])
    if r.exit_code != 0:
        return None if r.exit_code == 2 and r.output.count("\n") == 1 else f"exit {r.exit_code}"
    got = [row["training.framework_version"] for row in json.loads(r.stdout)["rows"]]
    return None if got == [a, b] else f"silently changed: sweep json wrote {got} for {[a, b]}"


def sweepjson_cases() -> Iterator[tuple[str, Callable[[], str | None]]]:
    for a, b in (("0.10", "0.1"), ("0.12", "0.9"), ("24.10", "25.02"), ("0.100", "0.10")):
        yield f"sweepjson {a},{b}", (lambda a=a, b=b: sweep_json(a, b))


# ------------------------------------------------------------------------------ case

LISTS = {"search": {"--recompute": "none,selective", "--dispatcher": "alltoall"}}
"""Comma-list options of names (not click choices)."""


TIMED = {"stats", "simulated", "cache_hits", "elapsed_s", "candidates_per_s", "simulated_per_s"}
"""Keys of search/plan JSON that depend on timing or on what this process already cached."""


def _untimed(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _untimed(v) for k, v in data.items() if k not in TIMED}
    if isinstance(data, list):
        return [_untimed(v) for v in data]
    return data


def _same(name: str, opt: str, spelled: str, value: str) -> str | None:
    """``opt spelled`` and ``opt value`` both accepted with the same output (search and plan:
    their JSON, timings and cache counts aside), or both refused."""
    from click.testing import CliRunner

    from trainsim.cli import main
    as_json = name in ("search", "plan") and opt != "--format"
    tail = ["--format", "json"] if as_json else []
    a, b = (CliRunner().invoke(main, BASES[name] + [opt, x] + tail) for x in (spelled, value))
    if (a.exit_code == 0) != (b.exit_code == 0):
        return f"case matters: {spelled!r} exit {a.exit_code}, {value!r} exit {b.exit_code}"
    if a.exit_code != 0:
        return None
    if as_json or (name in ("search", "plan") and value == "json"):
        same = _untimed(json.loads(a.stdout)) == _untimed(json.loads(b.stdout))
    else:  # a search's table shows its speed and cache counts: numbers masked there
        mask = r"\d[\d,.]*" if name in ("search", "plan") else r"[0-9.]+ s\b"
        same = re.sub(mask, "N", a.stdout) == re.sub(mask, "N", b.stdout)
    return None if same else "case changes the output"


def _unrun(group: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """The commands and subcommands the sweep does not run (``SKIP``: a server, the token store,
    torch), as 'token list'."""
    import click

    for name in sorted(group.commands):
        cmd, path = group.commands[name], f"{prefix}{name}"
        if isinstance(cmd, click.Group):
            yield from _unrun(cmd, f"{path} ")
        elif path.split()[0] in SKIP:
            yield path, cmd


def _parsed_same(param: Any, value: str) -> str | None:
    """Click reads ``value.upper()`` for ``param`` as it reads ``value`` (what the command then
    gets), or refuses both."""
    import click

    def read(text: str) -> str:
        try:
            return str(param.type.convert(text, param, None))
        except click.BadParameter:
            return "refused"
    a, b = read(value.upper()), read(value)
    return None if a == b else f"case matters: {value.upper()!r} -> {a}, {value!r} -> {b}"


def case_cases() -> Iterator[tuple[str, Callable[[], str | None]]]:
    import click

    from trainsim.cli import main
    for name in sorted(main.commands):
        if name in SKIP or name not in BASES:
            continue
        for param in main.commands[name].params:
            opts = [o for o in param.opts if o.startswith("--")]
            values = list(param.type.choices) if isinstance(param.type, click.Choice) else []
            for v in values if opts else []:
                for spelled in (v.upper(), v.title()):
                    if spelled != v:
                        yield f"case {name} {opts[0]} {spelled}", (
                            lambda n=name, o=opts[0], v=v, s=spelled: _same(n, o, s, v))
    for path, cmd in _unrun(main):  # capture, profile, token list ...: parsed, not run
        for param in cmd.params:
            opts = [o for o in param.opts if o.startswith("--")]
            values = list(param.type.choices) if isinstance(param.type, click.Choice) else []
            for v in values if opts else []:
                yield f"case {path} {opts[0]} {v.upper()} (parsed)", (
                    lambda p=param, v=v: _parsed_same(p, v))
    for name, options in LISTS.items():
        for opt, value in options.items():
            yield f"case {name} {opt} {value.upper()}", (
                lambda n=name, o=opt, v=value: _same(n, o, v.upper(), v))


# ------------------------------------------------------------------------------ anchors

ANCHORED = "{key}: &base\n  tp: 2\nmodel: llama3-8b\nparallel:\n  <<: *base\n  pp: 1\n" \
    "training: {{global_batch_size: 128, seq_length: 8192}}\ncluster: {{node: dgx-h100, " \
    "num_gpus: 8}}\n"


def anchor_cases() -> Iterator[tuple[str, Callable[[], str | None]]]:
    want = run_config_from_dict({"model": "llama3-8b", "parallel": {"tp": 2, "pp": 1},
                                 "training": {"global_batch_size": 128, "seq_length": 8192},
                                 "cluster": {"node": "dgx-h100", "num_gpus": 8}})

    def read(key: str) -> str | None:
        path = _write_text(ANCHORED.format(key=key), "anchors.yaml")
        try:
            cfg = load_run_config(path)
        except TrainsimError as exc:
            if key.startswith("x-"):
                return f"wrong refusal: {key}: {exc}"
            raise
        if not key.startswith("x-"):
            return f"accepted: unknown top-level key {key!r}"
        return None if cfg == want else f"silently changed: {key} config differs"

    for key in ("x-base", "x-defaults", "x-", "x-a.b", "defaults", "base", ".base", "X-base",
                "_base", "xbase", "extensions"):
        yield f"anchors {key}", (lambda k=key: read(k))


# ------------------------------------------------------------------------------ multimodal

def _hf_texts() -> dict[str, dict]:
    gemma = {"model_type": "gemma", "hidden_act": "gelu", "hidden_size": 3072, "head_dim": 256,
             "intermediate_size": 24576, "max_position_embeddings": 8192,
             "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 16,
             "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "vocab_size": 256000}  # gemma-7b
    llama = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
             "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
             "vocab_size": 128256, "hidden_act": "silu", "rms_norm_eps": 1e-5,
             "rope_theta": 500000.0, "max_position_embeddings": 8192}
    moe = dict(llama, model_type="mixtral", num_local_experts=8, num_experts_per_tok=2,
               vocab_size=32000)
    qwen = dict(llama, model_type="qwen2", attention_bias=True, tie_word_embeddings=False,
                vocab_size=152064, intermediate_size=18944, hidden_size=3584,
                num_attention_heads=28, num_key_value_heads=4, num_hidden_layers=28)
    return {"gemma": gemma, "llama": llama, "mixtral": moe, "qwen2": qwen}


def multimodal_cases() -> Iterator[tuple[str, Callable[[], str | None]]]:
    import dataclasses

    def wrapped(name: str, text: dict, top_layers: bool) -> str | None:
        alone = model_from_hf_config(_write_text(json.dumps(text), f"{name}-text.json"))
        shell = {"model_type": f"{name}_vl", "text_config": text,
                 "vision_config": {"hidden_size": 1152, "num_hidden_layers": 27}}
        if top_layers:
            shell.update(text)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                m = model_from_hf_config(_write_text(json.dumps(shell), f"{name}-vl.json"))
            except TrainsimError as exc:
                return f"wrong refusal: {name} composite config: {exc}"
        said = any("text_config" in str(w.message) for w in caught)
        if said == top_layers:
            return f"warning {'given' if said else 'missing'} for {name} (top layers {top_layers})"
        same = dataclasses.replace(m, name=alone.name) == alone
        return None if same else f"silently changed: {name} text_config read differently"

    for name, text in _hf_texts().items():
        for top in (False, True):
            yield f"multimodal {name} top-layers={top}", (
                lambda n=name, t=text, top=top: wrapped(n, t, top))


# ------------------------------------------------------------------------------ kvheads

SPLITS = {"torchtitan": True, "megatron-deepspeed": True, "nemo": True, "mlperf-nemo": True,
          "automodel": True,
          "megatron-core": False, "megatron-lm": False, "megatron-bridge": False}
"""Whether each framework's latest profiled release needs tp to divide the KV heads, from its
source: torchtitan (apply_tp: n_kv_heads // tp, @258f6082; a config error since fa8e6ccc9,
#2577), Megatron-DeepSpeed (transformer.py divide(num_key_value_heads, world_size), @f4157bea),
NeMo and MLPerf NeMo (Megatron-core before core_v0.16.0: attention.py divide(num_query_groups,
tp)), NeMo Automodel (parallelizer.py validate_tp_mesh asserts num_key_value_heads % tp == 0,
v0.1.0 to v0.5.0); Megatron-core from core_v0.16.0 (#2565), Megatron-LM from 2025-12-07 and Megatron-Bridge
26.02 give each rank one query group when they are fewer. Other frameworks: not judged (their
only oracle would be the profile's ``kv_heads_split``, the code under test)."""


def kvheads_cases() -> Iterator[tuple[str, Callable[[], str | None]]]:
    from trainsim.catalog.frameworks import framework_names

    def one(framework: str, tp: int, kv: int) -> str | None:
        run = copy.deepcopy(RUN)
        run["training"] = {"global_batch_size": 128, "seq_length": 4096, "framework": framework}
        run["parallel"] = {"tp": tp, "sequence_parallel": False}
        run["model"] = {"preset": "llama3-8b", "num_kv_heads": kv}
        run["cluster"]["num_gpus"] = 16
        split = SPLITS[framework]
        fits = not kv % tp or (not split and not tp % kv)
        try:
            run_config_from_dict(run)
        except TrainsimError as exc:
            if "num_kv_heads" in str(exc):
                return None if not fits else f"wrong refusal: {framework} tp={tp} kv={kv}"
            REFUSED[0] += 1
            return None  # refused for another reason (a framework's own limits)
        return None if fits else f"accepted: {framework} tp={tp} over kv={kv} (splits them)"

    unknown = set(SPLITS) - set(framework_names())
    if unknown:
        raise SystemExit(f"SPLITS names frameworks with no profile: {sorted(unknown)}")
    for framework in SPLITS:
        for tp in (1, 2, 4, 8, 16):
            for kv in (1, 2, 4, 8):
                yield f"kvheads {framework} tp={tp} kv={kv}", (
                    lambda f=framework, t=tp, k=kv: one(f, t, k))


SURFACES = ["service", "sweepjson", "case", "anchors", "multimodal", "kvheads"]


def cases(only: set[str], limit: int = 0, seed: int = 0) -> Iterator[tuple[str, Any]]:
    """Each chosen surface's inputs; with ``limit`` > 0 a seeded sample of at most that many per
    surface (the tests' fast run; 0, the default, runs them all)."""
    rng = random.Random(seed)
    makers = {"service": service_cases, "sweepjson": sweepjson_cases, "case": case_cases,
              "anchors": anchor_cases, "multimodal": multimodal_cases,
              "kvheads": kvheads_cases}
    for name in SURFACES:
        if not only or name in only:
            made = seeded_sample(makers[name](), limit, rng)
            yield from made


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help=",".join(SURFACES))
    ap.add_argument("--limit", type=int, default=0,
                    help="at most this many seeded inputs per surface (0: all)")
    ap.add_argument("--seed", type=int, default=0, help="the --limit sample's seed")
    args = ap.parse_args(argv)
    only = only_of(args)
    failures, counts = run_cases(cases(only, args.limit, args.seed), surface_class)
    return report_sweep(failures, counts)


if __name__ == "__main__":
    sys.exit(main())
