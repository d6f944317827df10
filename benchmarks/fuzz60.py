"""Input robustness, 2026-11-29 (60th session, robust60): surfaces no round had fuzzed.

- ``gscopes``: ``training.cuda_graph_scope`` under every entry of every framework profile (all
  124 entries), each scope Megatron-core ever named. Oracle: this script's own reading of
  the releases (``_SCOPE_SINCE``: Megatron-core's ``cuda_graph_scope`` full / attn from
  NVIDIA/Megatron-LM@a606486ece, 2025-03-18, core_v0.12.0; mlp / moe / moe_router /
  moe_preprocess / mamba from 2b343d739f, 2025-12-30, core_v0.16.0; nothing in a stack
  without Megatron-core): a scope its release lacks is refused in one line naming
  ``cuda_graph_scope``; one it has answers (or is refused for another reason, naming a field);
- ``schedzero``: ``parallel.pipeline_schedule`` (every name, torch's class names, other case
  and digits) x ``vpp`` x ``pp`` x ZeRO stage x data-parallel engine under torchtitan,
  Megatron-core, no framework and DeepSpeed. Oracle: a sane result whose resolved config
  answers the same iteration (fuzz58's ``_resolved_again``), or one line naming a field;
- ``hybridpat``: ``model.hybrid_layer_pattern`` strings with MoE and Mamba layers, MTP parts,
  lower case, look-alike characters (full-width ``＊``, a minus sign), spaces, symbols
  Megatron-core has and trainsim does not model, lengths off by one, beside pp, experts and
  graph scopes. Oracle as ``schedzero``, refusals naming ``model.``;
- ``setvals``: ``simulate --set`` with lists, mappings, units and number texts (``80GiB``,
  ``1e-3``, ``[attn, mlp]``, ``{a: 1}``, ``null``, ``0x10``, ``1_000``) on a count, a rate, a
  list field, a section and a path one level too deep. Oracle: a text that is its field's plain
  value in another spelling (a list written as YAML or as ``a;b``) answers as the plain value;
  any other is answered sanely or refused in one line naming the field;
- ``service``: the ``gscopes``, ``schedzero`` and ``hybridpat`` inputs as a simulate job's
  config: the service refuses before queueing exactly what ``simulate`` refuses, in its words
  (fuzz59's ``_service_alike``; one class left open and counted apart: ``KNOWN_OPEN``).

Each input must give a sane answer or one ``TrainsimError`` line (``fuzz_checks.outcome``); a
hang is 30 CPU s and any input over 10 CPU s is its own class.

    PYTHONPATH=src python benchmarks/fuzz60.py [--only gscopes,schedzero,hybridpat,setvals,alloc,service]
        [--count N] [--seed S] [--every] [--progress] [--refusals]
"""

from __future__ import annotations

import copy
import json
import os
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz57 import _run, one_line, write
from fuzz59_runs import _service_alike, _simulated
from fuzz_checks import BASES, REFUSED, Case

fuzz_checks.TIME_LIMIT_S = 300

HYBRID = copy.deepcopy(BASES["dense"])
HYBRID["model"].update(hybrid_layer_pattern="M*M-", ffn_hidden_size=512, mamba_num_heads=8,
                       mamba_head_dim=32, mamba_num_groups=2)
MOE_PLAIN = copy.deepcopy(BASES["moe"])
MOE_PLAIN["parallel"] = {"ep": 2}
HYBRID_MOE = copy.deepcopy(BASES["dense"])
HYBRID_MOE["model"].update(hybrid_layer_pattern="M*ME", ffn_hidden_size=512,
                           mamba_num_heads=8, mamba_head_dim=32, mamba_num_groups=2,
                           num_experts=8, moe_router_topk=2, moe_ffn_hidden_size=256)


def _check_run(raw: dict[str, Any], what: str, *words: str) -> str | None:
    """A sane result whose resolved config answers the same, or a refusal in one line naming
    one of ``words`` (the CLI's: no traceback, one ``error:`` line)."""
    r, lines = _run(["simulate", write(Path(_WORKDIR[0]), "run.json", raw), "--format", "json"])
    if r.exit_code != 0:
        first = (lines[:1] or [""])[0]
        return one_line(r, lines, *(() if any(w in first for w in words) else words[:1]))
    try:
        return _simulated(raw, what)
    except fuzz_checks.TrainsimError as exc:  # the CLI answered what the API refuses
        return f"{what}: the API refuses what the CLI answers: {str(exc)[:60]}"


_WORKDIR = [""]


# ------------------------------------------------------------------------------ gscopes

SCOPES = ["attn", "full", "full_iteration", "mlp", "moe", "moe_router;moe_preprocess", "mamba",
          "attn;moe_router", "ATTN", ["attn"], "attn;mamba"]
LATE = {"mlp", "moe", "moe_router", "moe_preprocess", "mamba"}
_SCOPE_SINCE: dict[str, tuple[Any, Any]] = {
    # framework: (first release with full / attn, first with the later scopes); None: never
    "megatron-core": ((0, 12), (0, 16)),
    "megatron-lm": ("2025-03", "2025-12-30"),   # a606486ece 2025-03-18 (the month holds it)
    "nemo": ((25, 4), None),                    # v2.3.0 pins Megatron-LM@3cdfd613, 2025-05-02
    "megatron-bridge": ((25, 9), (26, 2)),      # v0.1.0rc3: megatron-core>=0.14; v0.3.0 b0cc2706
    "mlperf-nemo": ((5, 1), None),              # 5.0: MCORE_REVISION core_r0.11.0
}
"""This script's own reading of when each stack took Megatron-core's scopes (Megatron-LM
git history, the stacks' pins); a stack not named has none (DeepSpeed, torchtitan, ...)."""
UNRECORDED = ("megascale", "meta-llama3")
"""Profiles that record no graph scopes (published runs, no code to read): anything goes."""


def _release(version: str) -> Any:
    if version[:4].isdigit() and "-" in version:
        return version
    return tuple(int(x) for x in version.split(".")[:2])


def _has_scope(fw: str, version: str, scope: str) -> bool | None:
    """Whether ``fw`` at ``version`` has graph scope ``scope`` (None: unrecorded; ``full_iteration``
    before core_v0.14.0 is not checked: the profiles do not record e7c55de99e, robust60's lead)."""
    if fw in UNRECORDED:
        return None
    since = _SCOPE_SINCE.get(fw)
    if since is None:
        return False
    first = since[1] if scope in LATE else since[0]
    if first is None:
        return False
    return _release(version) >= first


def _entries() -> list[tuple[str, str]]:
    from trainsim.catalog.frameworks import _files, _load

    return [(name, e.since) for name in sorted(_files()) for e in _load(name).entries]


def _gscope_check(fw: str, version: str, scope: Any) -> str | None:
    names = [s.strip().lower() for s in (scope if isinstance(scope, list) else scope.split(";"))]
    base = HYBRID_MOE if "mamba" in names else \
        MOE_PLAIN if {"moe_router", "moe"} & set(names) else BASES["dense"]
    raw = copy.deepcopy(base)
    raw["training"].update(framework=fw, framework_version=version, cuda_graphs=True,
                           cuda_graph_scope=scope)
    if "moe" in names:
        raw["model"]["moe_capacity_factor"] = 1.0
        raw["model"]["moe_pad_expert_input_to_capacity"] = True
    has = [_has_scope(fw, version, n) for n in names]
    r, lines = _run(["simulate", write(Path(_WORKDIR[0]), "gs.json", raw), "--format", "json"])
    first = (lines[:1] or [""])[0]
    if False in has:
        if r.exit_code == 0:
            lacking = names[has.index(False)]
            return f"a graph scope ({'late' if lacking in LATE else 'attn'}) its release lacks taken"
        if "cuda_graph" not in first:  # refused for another reason: so is the run without it?
            plain = copy.deepcopy(raw)
            del plain["training"]["cuda_graph_scope"]
            p, _ = _run(["simulate", write(Path(_WORKDIR[0]), "gs0.json", plain), "--format",
                         "json"])
            if p.exit_code == 0:
                return "a graph scope its release lacks refused for another field"
            return one_line(r, lines)
        return one_line(r, lines, "cuda_graph")
    if r.exit_code != 0:
        if "cuda_graph_scope" in first and "has no" in first:
            return "a graph scope its release has refused"
        return one_line(r, lines, *(() if "." in first else ("training.",)))
    got = json.loads(r.stdout)
    return None if fuzz_checks.finite(got) and got["iteration_time_s"] > 0 else "insane JSON"


def gscopes_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for fw, version in _entries():
            for scope in rng.sample(SCOPES, 2):
                yield f"{fw} {version} scope={scope!r}", (
                    lambda f=fw, v=version, s=scope: _gscope_check(f, v, s))
    return cases


# ------------------------------------------------------------------------------ schedzero

SCHEDULES = [None, "1f1b", "interleaved_1f1b", "gpipe", "zb_h1", "zb_h2", "zb_2p", "zb_v",
             "interleaved_zb", "dualpipe", "dualpipe_v", "looped_bfs", "LoopedBFS",
             "ScheduleLoopedBFS", "Schedule1F1B", "ScheduleGPipe", "looped-bfs", " LOOPED_BFS ",
             "\uff4c\uff4f\uff4f\uff50\uff45\uff44_bfs", "bfs", "interleaved", "zbv", ""]
SCHED_FRAMEWORKS = [("torchtitan", None), ("torchtitan", "2024-07"), ("megatron-core", None),
                    (None, None), ("deepspeed", None), ("pytorch", None)]
ENGINES = [None, None, "megatron", "fsdp2", "fsdp1", "deepspeed"]
SCHED_WORDS = ("parallel.", "training.", "pipeline_schedule", "vpp", "virtual_pipeline",
               "zero_stage", "data_parallel_impl")
"""A refusal names one of these (the field written with or without its section)."""


def _sched_run(rng: random.Random) -> tuple[dict[str, Any], str]:
    cfg = copy.deepcopy(BASES["dense"])
    cfg["model"]["num_layers"] = 8
    fw, version = rng.choice(SCHED_FRAMEWORKS)
    t = cfg["training"]
    if fw:
        t["framework"] = fw
    if version:
        t["framework_version"] = version
    t.update(micro_batch_size=1, global_batch_size=16)
    p: dict[str, Any] = {"pp": rng.choice([1, 2, 2, 4])}
    vpp = rng.choice([None, None, 1, 2, 4, "2", 3])
    if vpp is not None:
        p["vpp"] = vpp
    schedule = rng.choice(SCHEDULES)
    if schedule is not None:
        p["pipeline_schedule"] = schedule
    if rng.random() < 0.6:
        p["zero_stage"] = rng.choice([0, 1, 2, 3])
    engine = rng.choice(ENGINES)
    if engine:
        p["data_parallel_impl"] = engine
    cfg["parallel"] = p
    return cfg, f"{fw} {version} {p}"


def schedzero_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for _ in range(110):
            cfg, label = _sched_run(rng)
            yield label, (lambda c=cfg, w=label: _check_run(c, w, *SCHED_WORDS))
    return cases


# ------------------------------------------------------------------------------ hybridpat

PATTERNS = ["M*M-", "M*ME", "m*m-", "M*M-/*E", "M*M-/", "M*M-//", "M＊M-", "M*M\u2212",
            " M*M- ", "M *M-", "M*M-M", "M*M", "", "MMMM", "----", "EEEE", "M*MG", "M*M+",
            "M*|M-", "M*M-/*-", "M*ME/*E/*E", "**--", "*E*E", "M\u200b*M-", "ＭＭＭＭ"]


def _hybrid_run(rng: random.Random) -> tuple[dict[str, Any], str]:
    cfg = copy.deepcopy(HYBRID)
    m = cfg["model"]
    m["hybrid_layer_pattern"] = rng.choice(PATTERNS)
    if rng.random() < 0.5:
        m.update(num_experts=8, moe_router_topk=2, moe_ffn_hidden_size=256)
    p: dict[str, Any] = {}
    if rng.random() < 0.4:
        p["pp"] = 2
    if rng.random() < 0.3:
        p["tp"] = 2
    cfg["parallel"] = p
    t = cfg["training"]
    if rng.random() < 0.3:
        t.update(framework="megatron-core", cuda_graphs=True,
                 cuda_graph_scope=rng.choice(["mamba", "attn", "attn;mamba", "moe_router"]))
    label = json.dumps({"pattern": m["hybrid_layer_pattern"], "moe": "num_experts" in m, **p,
                        "scope": t.get("cuda_graph_scope")}, ensure_ascii=False)
    return cfg, label


def hybridpat_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for _ in range(80):
            cfg, label = _hybrid_run(rng)
            yield label, (lambda c=cfg, w=label: _check_run(c, w, "model.", "parallel.",
                                                              "training."))
    return cases


# ------------------------------------------------------------------------------ setvals

SET_FIELDS = {
    # field: (texts that are its plain value in another spelling -> the plain text, others)
    "training.cuda_graph_scope": ({"[attn, moe_router]": "attn;moe_router",
                                   "attn,moe_router": "attn;moe_router",
                                   "'attn;moe_router'": "attn;moe_router", "[attn]": "attn"},
                                  ["{attn: 1}", "[[attn]]", "[1, 2]", "null", "~", "attn;;",
                                   "[]", "80GiB"]),
    "parallel.recompute_modules": ({"[core_attn, mlp]": "core_attn;mlp",
                                    "core_attn,mlp": "core_attn;mlp"},
                                   ["{core_attn: true}", "[[mlp]]", "[1]", "null", "[]"]),
    "training.global_batch_size": ({"16.0": "16", "1.6e1": "16", "+16": "16", "16 ": "16"},
                                   ["80GiB", "0x10", "1_6", "[16]", "{a: 1}", "null", "1e-3",
                                    "16GB", "inf", "nan", "-16", "true"]),
    "cluster.nic_gbit_s_per_gpu": ({"400.0": "400", "4e2": "400"},
                                   ["400Gbps", "400 Gb/s", "[400]", "{a: 1}", "1e-3", "null",
                                    "0x190", "4_00", "inf", "-400"]),
    "cluster.gpu_overrides.hbm_gbyte_s": ({"4e3": "4000", "4000.0": "4000", "4_000": "4000"},
                                          ["4TB/s", "[4000]", "null", "{a: 1}", "-1", "inf",
                                           "0", "1e400"]),
    "cluster.gpu_overrides.peak_tflops.bf16": ({"1e3": "1000", "1000.0": "1000"},
                                               ["1 PFLOP/s", "[1000]", "-1", "nan", "0"]),
    "training.lr": ({}, ["1e-3", "0.001", "[1e-3]", "null"]),
    "training": ({}, ["null", "{}", "[]", "1", "{framework: megatron-core}"]),
    "training.global_batch_size.value": ({}, ["16"]),
    "cluster.gpu.hbm_gib": ({}, ["80", "80GiB"]),
    "parallel.tp": ({"2.0": "2"}, ["2GiB", "[2]", "{a: 1}", "null", "0b10", "two", "1e-3"]),
}
"""Each ``--set`` field with the texts that spell its plain value otherwise (answered as it)
and texts that are something else (answered sanely or refused naming the field)."""


def _set_answer(base: dict[str, Any], field: str, text: str) -> tuple[int, str]:
    r, lines = _run(["simulate", write(Path(_WORKDIR[0]), "set.json", base), "--format", "json",
                     "--set", f"{field}={text}"])
    if r.exit_code == 0:
        got = json.loads(r.stdout)
        bad = None if fuzz_checks.finite(got) else "non-finite"
        return 0, bad or json.dumps([got["iteration_time_s"], got["peak_memory_bytes"]])
    if "Traceback" in r.output or len(lines) != 1:
        return -1, f"exit {r.exit_code} with {len(lines)} error lines"
    return r.exit_code, lines[0]


def _set_check(field: str, text: str, plain: str | None) -> str | None:
    base = copy.deepcopy(BASES["moe"] if "recompute" in field else BASES["dense"])
    if field.startswith("training.cuda_graph_scope"):
        base = copy.deepcopy(BASES["moe"])
        base["training"].update(framework="megatron-core", cuda_graphs=True)
    if "recompute" in field:
        base["parallel"]["recompute"] = "selective"
    got = _set_answer(base, field, text)
    if got[0] < 0:
        return got[1]
    if got[1] == "non-finite":
        return "a non-finite figure"
    if plain is not None:
        want = _set_answer(base, field, plain)
        if got != want:
            return (f"--set {field.split('.')[0]}: a value spelt otherwise answered otherwise "
                    f"({'refused' if got[0] else 'taken'}, plain {'refused' if want[0] else 'taken'})")
        REFUSED[0] += got[0] != 0
        return None
    if got[0] == 0:
        return None
    named = field.split(".")[-1]
    if named in got[1] or field in got[1]:
        REFUSED[0] += 1
        return None
    return f"--set {field}: a refusal not naming the field: {got[1][:60]}"


def setvals_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for field, (same, other) in SET_FIELDS.items():
            for text, plain in same.items():
                yield f"--set {field}={text}", (lambda f=field, t=text, p=plain:
                                                _set_check(f, t, p))
            for text in other:
                yield f"--set {field}={text}", (lambda f=field, t=text: _set_check(f, t, None))
    return cases


# ------------------------------------------------------------------------------ alloc

SWITCHES = [True, False, "true", "yes", "on", "1", 1, 0, "off", "", "maybe", 2,
            "expandable_segments:True", None, [True], 1.0, "TRUE", " true "]
ALLOC_FRAMEWORKS = [("torchtitan", None), ("torchtitan", "2024-07"), ("megatron-core", None),
                    (None, None), ("deepspeed", None), ("pytorch", None)]


def _memory(raw: dict[str, Any]) -> tuple[str, Any]:
    """('ok', (iteration, allocated, reserved, the switch as built)) or ('refused', message)."""
    from trainsim.catalog import run_config_from_dict
    from trainsim.simulator import simulate

    try:
        cfg = run_config_from_dict(copy.deepcopy(raw))
        m = simulate(cfg).to_dict()
    except fuzz_checks.TrainsimError as exc:
        return "refused", str(exc)
    return "ok", (m["iteration_time_s"], m["memory"]["allocated_bytes"],
                  m["memory"]["reserved_bytes"], cfg.training.expandable_segments)


def _alloc_check(raw: dict[str, Any], switch: Any, label: str) -> str | None:
    """The switch answered as the plain bool the config holds, reserved never below allocated
    and never above the caching allocator's without expandable segments; else one line naming
    the field. The resolved config reads back to the same iteration."""
    if switch is not None:
        raw["training"]["expandable_segments"] = switch
    r, lines = _run(["simulate", write(Path(_WORKDIR[0]), "alloc.json", raw), "--format",
                     "json"])
    if r.exit_code != 0:
        first = (lines[:1] or [""])[0]
        return one_line(r, lines, *(() if "." in first else ("expandable_segments",)))
    kind, got = _memory(raw)
    if kind != "ok":
        return f"the API refuses what the CLI answers: {got[:60]}"
    _, allocated, reserved, on = got
    if reserved < allocated * (1 - 1e-12):
        return "reserved below allocated"
    plain = copy.deepcopy(raw)
    plain["training"]["expandable_segments"] = on
    if _memory(plain)[1] != got:
        return "expandable_segments spelt otherwise answered otherwise than the bool it holds"
    if on:
        plain["training"]["expandable_segments"] = False
        kind0, off = _memory(plain)
        if kind0 == "ok" and reserved > off[2] * (1 + 1e-12):
            return "expandable segments reserve more than the caching allocator without them"
    return _simulated(raw, label)


def alloc_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for _ in range(60):
            raw = copy.deepcopy(BASES[rng.choice(["dense", "dense", "moe"])])
            fw, version = rng.choice(ALLOC_FRAMEWORKS)
            t = raw["training"]
            if fw:
                t["framework"] = fw
            if version:
                t["framework_version"] = version
            t["micro_batch_size"] = rng.choice([1, 2])
            if "num_experts" not in raw["model"] and rng.random() < 0.5:
                raw["parallel"]["zero_stage"] = rng.choice([0, 1, 2, 3])
            switch = rng.choice(SWITCHES)
            label = f"{fw} {version} expandable_segments={switch!r} {raw['parallel']}"
            yield label, (lambda c=raw, s=switch, w=label: _alloc_check(c, s, w))
    return cases


# ------------------------------------------------------------------------------ service

KNOWN_OPEN: list[str] = []
"""Inputs of the one class this round leaves open: a zero-bubble or DualPipe schedule beside
ZeRO-3 or FSDP outside torchtitan is refused only when priced (``pipeline.ScheduledPipeline``,
``sharded_schedule_problem``: "with ZeRO-3/FSDP is modelled as torch's pipelining runs it ...";
before fsdppp60 "... gathers is not modelled"), so the service queues it (robust60's lead)."""


def _service_sched(cfg: dict[str, Any], label: str) -> str | None:
    bad = _service_alike(cfg, _WORKDIR[0])
    if bad and "the service queues" in bad and "with ZeRO-3/FSDP" in bad:
        KNOWN_OPEN.append(label)
        return None
    return bad


def service_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        entries = _entries()
        for fw, version in rng.sample(entries, 25):
            raw = copy.deepcopy(BASES["dense"])
            raw["training"].update(framework=fw, framework_version=version, cuda_graphs=True,
                                   cuda_graph_scope="attn")
            yield f"service {fw} {version} attn", (lambda c=raw: _service_alike(c, workdir))
        for _ in range(20):
            cfg, label = _sched_run(rng)
            yield f"service schedzero {label}", (lambda c=cfg, w=label: _service_sched(c, w))
        for _ in range(15):
            cfg, label = _hybrid_run(rng)
            yield f"service hybridpat {label}", (lambda c=cfg: _service_alike(c, workdir))
    return cases


# ------------------------------------------------------------------------------ main

def surfaces(workdir: str, rng: random.Random) -> dict[str, Callable[[], Iterator[Case]]]:
    _WORKDIR[0] = workdir
    return {"gscopes": gscopes_cases(workdir, rng), "schedzero": schedzero_cases(workdir, rng),
            "hybridpat": hybridpat_cases(workdir, rng), "setvals": setvals_cases(workdir, rng),
            "alloc": alloc_cases(workdir, rng), "service": service_cases(workdir, rng)}


def main(argv: list[str] | None = None) -> int:
    status = fuzz_checks.seeded_round(60, argv, surfaces)
    if KNOWN_OPEN:
        print(f"left open: {len(KNOWN_OPEN)} service inputs a schedule with ZeRO-3/FSDP "
              f"refuses only when priced, e.g. {KNOWN_OPEN[0]}")
    return status


__all__ = ["main", "surfaces"]

if __name__ == "__main__":
    fuzz_checks.run_round(main)
