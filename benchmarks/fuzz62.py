"""Input robustness, 2026-11-29 (62nd session, robust62): round 42. Unusual-but-valid
combinations and the edges of the inputs that carry them, plus what robust61 / collfab61 left
open (a forced ``cluster.nccl_algo`` over the context-parallel, HSDP and expert groups; the
service's search / sweep checks; ``trainsim collective``'s missing switches).

- ``layouts``: CP x EP x PP (x vpp, uneven layers), FSDP / HSDP with TP, zero-bubble and
  DualPipe schedules with recompute, MoE with expert TP, CP communication types, under a
  random framework. Oracle: a sane answer the API gives alike, or one line naming a field
  (``model.`` / ``parallel.`` / ``training.`` / ``cluster.``); the service's job check
  refuses exactly what ``simulate`` refuses, in the same words (fuzz59's ``_service_alike``);
- ``fp8gpu``: ``training.dtype: fp8`` x ``fp8_recipe`` x every catalog GPU. Oracle: this
  script's table of which GPUs have fp8 tensor cores (``_FP8``: Ada / Hopper / Blackwell,
  CDNA3 / CDNA4) and which recipes need Blackwell's block scaling (``_BLACKWELL_ONLY``: mxfp8,
  nvfp4, Transformer Engine's ``MXFP8BlockScaling`` / ``NVFP4BlockScaling``): what the GPU
  cannot run is refused naming ``training.``; the rest answers;
- ``forced``: a forced ``cluster.nccl_algo`` x layouts (cp, HSDP, ep / etp, pp with tied
  embeddings) x nodes. Oracle: ``simulate`` (its up-front ``forced_algo_problem``) and the
  pricer (``simulator._simulate``, which skips it) refuse alike, nothing the pricer runs
  refused up front, the service as ``simulate``; a refusal that only the pricer gives (a kind
  one group cannot run where it runs another) is counted apart (``KNOWN_OPEN``);
- ``searchsweep``: ``search`` / ``sweep`` with a forced algorithm or an all-refused grid, the
  CLI against the service's job check (``problem``): the same refusal, or both take it;
- ``collective``: ``trainsim collective`` with ``--nvls`` / ``--no-nvls`` /
  ``--in-network-reduction`` x ``--algorithm`` x ``--fabric`` x backend. Oracle: finite JSON,
  or one line naming an option; SHARP on EFA / TCPX or the flow backend refused;
- ``setpaths``: ``simulate --set`` paths and values (case, spaces, unknown sections and
  fields, empty values, several '=', a section as a value). Oracle: one line naming ``--set``
  or the field, or the answer of the same value written in the config;
- ``yamltypes``: YAML spellings of a field (lists, maps, hex / octal / underscores, ``.inf``,
  ``~``, ``yes``, tags, anchors, duplicate keys, a section as a list). Oracle: one line naming
  the field or the file, or the answer of the plain value;
- ``unknown``: an unknown key at every level (top, each section, a GPU given as a mapping,
  the reliability section). Oracle: one line naming the key;
- ``service``: job bodies of every kind with odd config / options shapes. Oracle:
  ``service.jobs.problem`` never raises; a refusal is 4xx and one line; what it takes runs;
- ``offload``: ``parallel.cpu_offloading_num_layers`` x framework x recompute x pp x graphs.
  Oracle: a profile that records no offloading refuses it naming the field; else one line
  naming ``cpu_offloading`` or another field, or an answer.

Each input must give a sane answer or one ``TrainsimError`` line; a hang is 30 CPU s and any
input over 10 CPU s is its own class.

    PYTHONPATH=src python benchmarks/fuzz62.py [--only layouts,fp8gpu,forced,searchsweep,
        collective,setpaths,yamltypes,unknown,service,offload] [--count N] [--seed S]
        [--every] [--progress] [--refusals]
"""

from __future__ import annotations

import copy
import json
import os
import random
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz57 import _run, json_answer, one_line, write
from fuzz59_runs import _service_alike, cli_run
from fuzz_checks import BASES, REFUSED, Case

fuzz_checks.TIME_LIMIT_S = 300
_WORKDIR = [""]
FIELDS = ("model.", "parallel.", "training.", "cluster.")
FRAMEWORKS = [None, None, "megatron-core", "nemo", "megatron-lm", "torchtitan", "deepspeed",
              "maxtext", "megatron-bridge", "pytorch", "nanotron", "internevo", "automodel"]


def _cli_run(raw: dict[str, Any], what: str, *, api: bool = True) -> tuple[str, Any]:
    """``fuzz59_runs.cli_run`` in this round's folder (``api``: the API's answer alike, not
    resolved again)."""
    return cli_run(raw, what, _WORKDIR[0], api=api, read_back=False)


def _named(kind: str, got: Any, *words: str) -> str | None:
    """None for an answer or a refusal naming one of ``words`` (counted), else the finding."""
    if kind == "bad":
        return got
    if kind == "ok":
        return None
    if any(w in got for w in words):
        REFUSED[0] += 1
        return None
    blur = re.sub(r"[0-9]+", "N", re.sub(r"'[^']*'", "'X'", got))
    return f"a refusal naming no field: {blur[:60]}"


# ------------------------------------------------------------------------------ layouts

SCHEDULES = [None, None, "1f1b", "interleaved_1f1b", "gpipe", "zb_h1", "zb_2p", "zbv",
             "dualpipe", "dualpipe_v", "looped_bfs", "interleaved_zb"]


def _layout_run(rng: random.Random) -> dict[str, Any]:
    base = rng.choice(["dense", "moe", "moe", "mla"])
    raw = copy.deepcopy(BASES[base])
    m, p, t, c = raw["model"], raw["parallel"], raw["training"], raw["cluster"]
    m["num_layers"] = rng.choice([4, 5, 6, 7, 8, 9, 12, 12, 16, 16])
    c.update(num_gpus=rng.choice([8, 16, 32]), gpus_per_node=rng.choice([8, 8, 4]))
    p.clear()
    p.update(tp=rng.choice([1, 2, 4]), pp=rng.choice([1, 2, 2, 4]), cp=rng.choice([1, 1, 2, 4]))
    if rng.random() < 0.4:
        p["vpp"] = rng.choice([2, 3])
    if p["tp"] > 1 and (base == "moe" or rng.random() < 0.7):
        p["sequence_parallel"] = True
    if base == "moe":
        p.update(ep=rng.choice([1, 2, 4, 8]), etp=rng.choice([1, 1, 2]))
        if rng.random() < 0.3:
            p["moe_token_dispatcher_type"] = rng.choice(["alltoall", "allgather"])
    r = rng.random()
    if r < 0.25:
        p["zero_stage"] = 3
        if (engine := rng.choice(["fsdp2", "fsdp1", "megatron", None])) is not None:
            p["data_parallel_impl"] = engine
        if rng.random() < 0.5:
            p["dp_replicate"] = 2
    elif r < 0.45:
        p["zero_stage"] = rng.choice([1, 2, 3])
    elif r < 0.6:
        p["distributed_optimizer"] = True
    if (s := rng.choice(SCHEDULES)) is not None:
        p["pipeline_schedule"] = s
    p["recompute"] = rng.choice(["none", "none", "selective", "full"])
    if p["recompute"] == "full" and rng.random() < 0.5:
        p["recompute_num_layers"] = rng.choice([1, 2])
    if p["cp"] > 1 and rng.random() < 0.5:
        p["cp_comm_type"] = rng.choice(["p2p", "a2a", "all_gather"])
    if rng.random() < 0.2:
        p["decoder_first_pipeline_num_layers"] = rng.choice([1, 2, 3])
    if rng.random() < 0.15:
        p["account_for_embedding_in_pipeline_split"] = True
    t.update(global_batch_size=rng.choice([32, 64]), seq_length=rng.choice([512, 1024]))
    if (fw := rng.choice(FRAMEWORKS)) is not None:
        t["framework"] = fw
    else:
        t.pop("framework", None)
    return raw


def _layout_check(raw: dict[str, Any]) -> str | None:
    what = json.dumps(raw["parallel"])
    kind, got = _cli_run(raw, what)
    bad = _named(kind, got, *FIELDS, "--set", "framework", "profile")
    if bad:
        return bad
    return _service_alike(raw, _WORKDIR[0])


def layouts_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for _ in range(250):
            raw = _layout_run(rng)
            yield f"layout {json.dumps(raw['parallel'])} {raw['training'].get('framework')}", (
                lambda c=raw: _layout_check(c))
    return cases


# ------------------------------------------------------------------------------ fp8gpu

_FP8 = {"h100", "h200", "h800", "h20", "gh200", "l40s", "b200", "b300", "gb200", "gb300",
        "rtx-pro-6000-blackwell", "mi300x", "mi325x", "mi350x", "mi355x"}
"""GPUs with fp8 tensor cores: Ada (L40S, sm89), Hopper (sm90), Blackwell (sm100 / sm120),
AMD CDNA3 (MI300X / MI325X) and CDNA4 (MI350X / MI355X). A100 / A800 (sm80), V100 (sm70) and
MI250X (CDNA2) have none."""
_BLACKWELL = {"b200", "b300", "gb200", "gb300", "rtx-pro-6000-blackwell", "mi350x", "mi355x"}
"""GPUs with block-scaled MX / NVFP4 tensor cores (Blackwell's tcgen05 block scaling; CDNA4's
MX formats)."""
_BLACKWELL_ONLY = {"mxfp8", "nvfp4"}
"""Recipes whose GEMMs need block-scaled tensor cores (Transformer Engine's
``MXFP8BlockScaling`` / ``NVFP4BlockScaling`` assert a Blackwell device)."""


def _gpu_family(name: str) -> str:
    for fam in sorted(_FP8 | {"a100", "a800", "v100", "mi250x"}, key=len, reverse=True):
        if name.startswith(fam):
            return fam
    return name


def _fp8_check(gpu: str, recipe: str | None, fw: str | None) -> str | None:
    raw = copy.deepcopy(BASES["dense"])
    raw["cluster"]["gpu"] = gpu
    raw["training"]["dtype"] = "fp8"
    if recipe:
        raw["training"]["fp8_recipe"] = recipe
    if fw:
        raw["training"]["framework"] = fw
    kind, got = _cli_run(raw, f"{gpu} {recipe} {fw}")
    fam = _gpu_family(gpu)
    cannot = fam not in _FP8 or (recipe in _BLACKWELL_ONLY and fam not in _BLACKWELL)
    if cannot and kind == "ok":
        return ("fp8 taken on a GPU without fp8 tensor cores" if fam not in _FP8 else
                f"fp8_recipe={recipe} (block-scaled) taken on a GPU without block scaling")
    return _named(kind, got, "training.", "cluster.gpu", "fp8")


def fp8gpu_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    gpus = sorted(p.stem for p in (Path(__file__).resolve().parent.parent / "src" / "trainsim"
                                   / "catalog" / "gpus").glob("*.yaml"))

    def cases() -> Iterator[Case]:
        for gpu in gpus:
            for recipe in rng.sample([None, "delayed", "current", "blockwise", "mxfp8",
                                      "nvfp4"], 3):
                fw = rng.choice([None, "megatron-core", "nemo", "torchtitan"])
                yield f"fp8 {gpu} {recipe} {fw}", (
                    lambda g=gpu, r=recipe, f=fw: _fp8_check(g, r, f))
    return cases


# ------------------------------------------------------------------------------ forced

KNOWN_OPEN: list[str] = []
"""Inputs a forced ``cluster.nccl_algo`` is refused for only when priced: a group that runs
the algorithm for one kind but not the kind it prices (tree across nodes under sequence
parallelism's all-gather; an allgather dispatcher's all-gather over the expert group; a
broadcast)."""


def _forced_run(rng: random.Random) -> dict[str, Any]:
    raw = _layout_run(rng)
    c = raw["cluster"]
    c["nccl_algo"] = rng.choice(["tree", "nvls", "nvls_tree", "collnet", "pat", "Tree", "PAT"])
    if c["nccl_algo"] == "collnet" or rng.random() < 0.2:
        c["in_network_reduction"] = True
    c["gpus_per_node"] = rng.choice([1, 2, 4, 8])
    raw["parallel"].pop("pipeline_schedule", None)
    if rng.random() < 0.3:
        raw["model"]["tied_embeddings"] = True
    return raw


def _forced_check(raw: dict[str, Any]) -> str | None:
    from trainsim.catalog import run_config_from_dict
    from trainsim.network.forced_algo import forced_algo_problem
    from trainsim.simulator import _simulate

    try:
        cfg = run_config_from_dict(copy.deepcopy(raw))
    except fuzz_checks.TrainsimError:
        return _service_alike(raw, _WORKDIR[0])
    up = forced_algo_problem(cfg)
    try:
        _simulate(cfg, False, None, None)
        priced = None
    except fuzz_checks.TrainsimError as exc:
        priced = str(exc)
    if up is not None and priced is None:
        return "a forced nccl_algo refused up front that the pricer runs"
    if up is not None and not up.startswith("cluster.nccl_algo="):
        return "an up-front forced-algorithm refusal not naming cluster.nccl_algo"
    if up is None and priced is not None and priced.startswith("cluster.nccl_algo="):
        KNOWN_OPEN.append(json.dumps(raw["parallel"]))
        return None
    return _service_alike(raw, _WORKDIR[0])


def forced_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for _ in range(150):
            raw = _forced_run(rng)
            label = (f"forced {raw['cluster']['nccl_algo']} {raw['cluster']['gpus_per_node']} "
                     f"{json.dumps(raw['parallel'])} {raw['training'].get('framework')}")
            yield label, (lambda c=raw: _forced_check(c))
    return cases


# ------------------------------------------------------------------------------ searchsweep

SEARCH = ["search", "gpt3-350m", "--global-batch", "16", "--seq", "512", "--workers", "1",
          "--max-micro-batch", "1", "--overlap", "off", "--format", "json", "--top", "1"]


def _job_vs_cli(kind: str, args: list[str], config: dict[str, Any],
                options: dict[str, Any]) -> str | None:
    from trainsim.service import Settings
    from trainsim.service.jobs import problem

    r, lines = _run(args)
    if "Traceback" in r.output:
        return "a traceback"
    if r.exit_code != 0 and len(lines) != 1:
        return one_line(r, lines)
    job = problem(kind, copy.deepcopy(config), copy.deepcopy(options),
                  Settings(workers=0, checkers=0))
    cli = None if r.exit_code == 0 else lines[0].removeprefix("error: ")
    if cli is not None and job is None:
        return f"the service queues a {kind} the CLI refuses: {re.sub(r'[0-9]+', 'N', cli)[:50]}"
    if cli is None and job is not None:
        return f"the service refuses a {kind} the CLI answers: {job[2][:50]}"
    if cli is not None and cli != job[2]:
        return f"the service and the CLI refuse one {kind} in two wordings"
    REFUSED[0] += cli is not None
    return None


def _search_case(gpus: int, algo: str, tp: str | None) -> str | None:
    args = [*SEARCH, "--gpus", str(gpus), "--set", f"cluster.nccl_algo={algo}"]
    options = {"model": "gpt3-350m", "gpus": gpus, "global_batch": 16, "seq": 512,
               "max_micro_batch": 1, "overlap": "off", "set": [f"cluster.nccl_algo={algo}"]}
    if algo == "collnet":
        args += ["--set", "cluster.in_network_reduction=true"]
        options["set"].append("cluster.in_network_reduction=true")
    if tp:
        args += ["--tp", tp]
        options["tp"] = tp
    return _job_vs_cli("search", args, {}, options)


def _sweep_case(raw: dict[str, Any], vary: str) -> str | None:
    path = write(Path(_WORKDIR[0]), "sweep.json", raw)
    return _job_vs_cli("sweep", ["sweep", path, "--vary", vary, "--format", "json"], raw,
                       {"vary": [vary]})


def searchsweep_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for _ in range(12):
            gpus, algo = rng.choice([8, 16]), rng.choice(["tree", "pat", "nvls", "collnet"])
            tp = rng.choice([None, "1", "2,8"])
            yield f"search {gpus} {algo} --tp {tp}", (
                lambda g=gpus, a=algo, t=tp: _search_case(g, a, t))
        for _ in range(14):
            raw = copy.deepcopy(BASES["dense"])
            raw["cluster"].update(num_gpus=16, nccl_algo=rng.choice(["pat", "tree", "auto"]))
            vary = rng.choice(["parallel.tp=1,2", "parallel.tp=3,5", "cluster.nccl_algo=pat,ring",
                               "parallel.pp=3,5", "training.global_batch_size=7,9",
                               "cluster.gpus_per_node=1,2"])
            yield f"sweep {raw['cluster']['nccl_algo']} --vary {vary}", (
                lambda c=raw, v=vary: _sweep_case(c, v))
    return cases


# ------------------------------------------------------------------------------ collective

def _collective_check(args: list[str]) -> str | None:
    r, lines = _run(["collective", "--sizes", "1M:4M", "--format", "json", *args])
    fabric = next((args[i + 1] for i, a in enumerate(args) if a == "--fabric"), "infiniband")
    flow = "flow" in args
    sharp = "--in-network-reduction" in args
    if r.exit_code == 0:
        if sharp and (fabric in ("efa", "tcpx") or flow):
            return "--in-network-reduction taken where nothing reduces in the network"
        bad = json_answer(r.stdout)
        if bad:
            return bad
        rows = json.loads(r.stdout)
        if "--no-nvls" in args and any(row["algorithm"].startswith("nvls") for row in rows):
            return "--no-nvls priced an NVLS algorithm"
        if not sharp and any(row["algorithm"] == "collnet" for row in rows):
            return "collnet priced without --in-network-reduction"
        return None
    return one_line(r, lines, "--")


def collective_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for _ in range(40):
            args = ["--gpus", str(rng.choice([8, 16, 32]))]
            if rng.random() < 0.5:
                args += [rng.choice(["--nvls", "--no-nvls"])]
            if rng.random() < 0.5:
                args += ["--in-network-reduction"]
            if rng.random() < 0.6:
                args += ["--algorithm", rng.choice(["auto", "ring", "tree", "nvls", "nvls_tree",
                                                    "collnet", "pat"])]
            if rng.random() < 0.4:
                args += ["--fabric", rng.choice(["infiniband", "efa", "tcpx", "roce"])]
            if rng.random() < 0.2:
                args += ["--backend", "flow"]
            if rng.random() < 0.3:
                args += ["--op", rng.choice(["all_gather", "reduce_scatter", "all_to_all"])]
            yield f"collective {' '.join(args)}", (lambda a=args: _collective_check(a))
    return cases


# ------------------------------------------------------------------------------ setpaths

SET_PATHS = ["parallel.tp=2", "PARALLEL.TP=2", " parallel.tp =2", "parallel.tp= 2 ",
             "parallel..tp=2", ".parallel.tp=2", "parallel.tp.=2", "parallel.tp=", "=2",
             "parallel.tp", "parallel=2", "parallel.tp=2=3", "parallel.bogus=1",
             "bogus.tp=2", "model=gpt3-350m", "cluster.gpu=a100-sxm-80gb",
             "cluster.gpu.peak_tflops=100", "training.global_batch_size=32.0",
             "training.global_batch_size=3.2e1", "parallel.tensor_model_parallel_size=2",
             "parallel.tp=[2]", "parallel.tp={a: 1}", "parallel.tp=null", "parallel.tp=~",
             "training.dtype=FP8", "training.seq_length=1k", "cluster.num_gpus=0x10",
             "parallel.recompute_modules=[mlp]", "parallel.recompute_modules=mlp,core_attn",
             "model.hidden_size=256 ", "training.framework=", "reliability.mtbf_h=10"]


def _set_check(item: str) -> str | None:
    raw = copy.deepcopy(BASES["dense"])
    config = write(Path(_WORKDIR[0]), "set.json", raw)
    r, lines = _run(["simulate", config, "--format", "json", "--set", item])
    if r.exit_code != 0:
        key = item.split("=", 1)[0].strip() or "--set"
        return one_line(r, lines) or (None if any(
            w in lines[0] for w in ("--set", key, key.lower(), "parallel.", "training.",
                                    "cluster.", "model.")) else
            f"a --set refusal naming neither --set nor the field: {item.split('=')[0]}")
    bad = json_answer(r.stdout)
    if bad:
        return bad
    path = item.partition("=")[0]
    parts = [p for p in path.strip().lower().split(".")]
    if len(parts) != 2 or not all(parts):  # (an empty value is null: a field unset)
        return f"--set {item!r} answered (a malformed path)"
    return None


def setpaths_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for item in SET_PATHS:
            yield f"--set {item!r}", (lambda i=item: _set_check(i))
    return cases


# ------------------------------------------------------------------------------ yamltypes

YAML_TP = {"[2]": None, "{a: 1}": None, "2.0": 2, "'2'": 2, "0x2": 2, "0o2": None,
           "1_0": None, ".inf": None, "~": None, "yes": None, "!!str 2": 2, "!!float 2": 2,
           "2 # two": 2, "+2": 2, "02": None, "2e0": 2, "true": None, "-2": None, "''": None,
           "!!binary AAAA": None, "&a 2": 2}
"""A YAML spelling of ``parallel.tp`` and the tp it means (None: refused, naming ``tp`` or the
file's line: a list, a map, YAML 1.1 / 1.2 ambiguities such as an octal ``0o2`` or ``1_0``,
null, a bool, a binary)."""
YAML_FILES = {"top list": "- 1\n- 2\n", "top scalar": "3\n", "empty": "",
              "two docs": "model: {}\n---\nmodel: {}\n", "tab": "model:\n\thidden_size: 1\n",
              "dup": None, "section list": None, "anchor": None, "python tag": None}


def _yaml_base(tp_text: str) -> str:
    d = BASES["dense"]
    return (f"model: {json.dumps(d['model'])}\nparallel:\n  tp: {tp_text}\n"
            f"training: {json.dumps(d['training'])}\ncluster: {json.dumps(d['cluster'])}\n")


def _yaml_run(text: str) -> tuple[Any, list[str]]:
    path = Path(_WORKDIR[0]) / "run.yaml"
    path.write_text(text, encoding="utf-8")
    return _run(["simulate", str(path), "--format", "json"])


def _yaml_check(spelt: str) -> str | None:
    r, lines = _yaml_run(_yaml_base(spelt))
    want = YAML_TP[spelt]
    if want is None:
        if r.exit_code == 0:
            return f"parallel.tp: {spelt} answered"
        return one_line(r, lines) or (None if re.search(r"\btp\b|tensor_model|line \d", lines[0])
                                      else "a YAML refusal naming neither tp nor its line")
    if r.exit_code != 0:
        return one_line(r, lines) or f"parallel.tp: {spelt} refused though it means {want}"
    plain, _ = _yaml_run(_yaml_base(str(want)))
    if plain.exit_code != 0 or json.loads(plain.stdout)["iteration_time_s"] != \
            json.loads(r.stdout)["iteration_time_s"]:
        return f"parallel.tp: {spelt} answered otherwise than {want}"
    return None


def _yaml_file_check(name: str) -> str | None:
    d = BASES["dense"]
    text = YAML_FILES[name]
    if name == "dup":
        text = _yaml_base("2") + "parallel:\n  tp: 4\n"
    elif name == "section list":
        text = _yaml_base("2").replace("parallel:\n  tp: 2\n", "parallel:\n  - tp: 2\n")
    elif name == "anchor":
        text = (f"base: &b {json.dumps(d['model'])}\nmodel:\n  <<: *b\n  num_layers: 2\n"
                f"training: {json.dumps(d['training'])}\ncluster: {json.dumps(d['cluster'])}\n")
    elif name == "python tag":
        text = _yaml_base("!!python/object/apply:os.getcwd []")
    r, lines = _yaml_run(text)
    if r.exit_code == 0:
        return f"a YAML file ({name}) answered"
    return one_line(r, lines)


def yamltypes_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for spelt in YAML_TP:
            yield f"yaml tp: {spelt}", (lambda s=spelt: _yaml_check(s))
        for name in YAML_FILES:
            yield f"yaml file {name}", (lambda n=name: _yaml_file_check(n))
    return cases


# ------------------------------------------------------------------------------ unknown

UNKNOWN = [("", "bogus"), ("model", "hiden_size"), ("parallel", "tensor_parallel"),
           ("training", "global_batch"), ("cluster", "gpu_per_node"), ("cluster", "Num_GPUs"),
           ("model", "moe"), ("parallel", "fsdp"), ("training", "lr"),
           ("reliability", "mtbf"), ("cluster.gpu", "peak_tflop"), ("model", "_comment"),
           ("", "Model"), ("", "reliabilty")]


def _unknown_check(where: str, key: str) -> str | None:
    raw = copy.deepcopy(BASES["dense"])
    if where == "":
        raw[key] = {"x": 1} if key[0].isupper() or key == "reliabilty" else 1
    elif where == "cluster.gpu":
        raw["cluster"]["gpu"] = {"name": "h100-sxm-80gb", key: 1}
    elif where == "reliability":
        raw["reliability"] = {key: 1}
    else:
        raw[where][key] = 1
    r, lines = _run(["simulate", write(Path(_WORKDIR[0]), "u.json", raw), "--format", "json"])
    if r.exit_code == 0:
        if where == "reliability":
            return None  # simulate reads no reliability section (goodput does)
        return f"an unknown key ({where or 'top'}.{key}) taken in silence"
    return one_line(r, lines, key)


def unknown_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for where, key in UNKNOWN:
            yield f"unknown {where}.{key}", (lambda w=where, k=key: _unknown_check(w, k))
    return cases


# ------------------------------------------------------------------------------ service

ODD = [None, 1, "x", [], [1], {}, {"a": 1}, 1e308, -1, True, "", "8", 2**70, float("nan")]


def _service_check(kind: str, config: Any, options: Any) -> str | None:
    from trainsim.service import Settings
    from trainsim.service.jobs import problem

    try:
        got = problem(kind, copy.deepcopy(config), copy.deepcopy(options),
                      Settings(workers=0, checkers=0))
    except Exception as exc:  # noqa: BLE001 - the finding: a 500
        return f"the job check raises {type(exc).__name__}"
    if got is None:
        return None  # queued: run() is checked by the lifecycle rounds (fuzz57)
    status, _field, text = got
    if not 400 <= status < 500:
        return f"a refusal with status {status}"
    if "\n" in text or not text.strip():
        return "a refusal not one line"
    if "Traceback" in text or "object at 0x" in text:
        return "a refusal quoting Python internals"
    REFUSED[0] += 1
    return None


def service_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    kinds = ["simulate", "sweep", "search", "plan", "goodput", "validate", "memory"]
    keys = ["set", "vary", "gpus", "global_batch", "seq", "tp", "trials", "tokens", "bogus",
            "format", "steps", "top", "reference"]

    def cases() -> Iterator[Case]:
        for _ in range(60):
            kind = rng.choice(kinds)
            config: Any = copy.deepcopy(BASES["dense"])
            r = rng.random()
            if r < 0.3:
                config = rng.choice(ODD)
            elif r < 0.7:
                section = rng.choice(["model", "parallel", "training", "cluster"])
                config[section] = rng.choice(ODD) if rng.random() < 0.5 else \
                    {**config[section], rng.choice(list(config[section]) or ["x"]):
                     rng.choice(ODD)}
            options: Any = {} if rng.random() < 0.6 else rng.choice(ODD)
            if isinstance(options, dict) and rng.random() < 0.7:
                options = {rng.choice(keys): rng.choice(ODD)}
            yield f"service {kind} {str(config)[:40]} {str(options)[:40]}", (
                lambda k=kind, c=config, o=options: _service_check(k, c, o))
    return cases


# ------------------------------------------------------------------------------ offload

def _offload_check(fw: str | None, n: Any, recompute: str, pp: int, graphs: bool) -> str | None:
    from trainsim.catalog.frameworks import framework_profile

    raw = copy.deepcopy(BASES["dense"])
    raw["model"]["num_layers"] = 8
    raw["parallel"].update(cpu_offloading_num_layers=n, recompute=recompute, pp=pp)
    if graphs:
        raw["training"]["cuda_graphs"] = True
    if fw:
        raw["training"]["framework"] = fw
    kind, got = _cli_run(raw, f"offload {fw} {n}")
    recorded = None
    if fw:
        try:
            recorded = framework_profile(fw).supports("cpu_offloading")
        except Exception:  # noqa: BLE001 - a name without a profile: the CLI says so
            recorded = None
    if kind == "ok" and recorded is False and isinstance(n, int) and n > 0:
        return "cpu offloading taken under a profile that records none"
    return _named(kind, got, "cpu_offloading", *FIELDS)


def offload_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for _ in range(40):
            fw = rng.choice(FRAMEWORKS)
            n = rng.choice([0, 1, 2, 4, 7, 8, -1, "2", 2.0, 2.5, True])
            rc, pp, graphs = rng.choice(["none", "selective", "full"]), rng.choice([1, 2]), \
                rng.random() < 0.2
            yield f"offload {fw} n={n!r} {rc} pp{pp} graphs={graphs}", (
                lambda f=fw, k=n, r=rc, p=pp, g=graphs: _offload_check(f, k, r, p, g))
    return cases


# ------------------------------------------------------------------------------ combos

def _combo_run(rng: random.Random) -> dict[str, Any]:
    from fuzz60 import _entries

    raw = copy.deepcopy(BASES[rng.choice(["dense", "moe", "mla"])])
    p, t, c = raw["parallel"], raw["training"], raw["cluster"]
    fw, version = rng.choice(_entries())
    t.update(framework=fw, framework_version=version)
    c["gpu"] = rng.choice(["h100-sxm-80gb", "h100-sxm-80gb", "b200-sxm-180gb", "a100-sxm-80gb",
                           "h200-sxm-141gb", "mi300x", "gb200"])
    if c["gpu"] == "gb200":
        c["gpus_per_node"] = 4
    c["compute_db"] = None
    if rng.random() < 0.4:
        t["dtype"] = "fp8"
        if rng.random() < 0.6:
            t["fp8_recipe"] = rng.choice(["delayed", "current", "blockwise", "mxfp8"])
    if rng.random() < 0.3:
        t["cuda_graphs"] = True
        if rng.random() < 0.5:
            t["cuda_graph_scope"] = rng.choice(["full", "attn", "moe_router", "mlp"])
    if rng.random() < 0.3:
        t["attention"] = rng.choice(["flash2", "flash3", "cudnn", "eager", "unfused"])
    if rng.random() < 0.3:
        p["tp_comm_overlap"] = True
    if rng.random() < 0.3:
        p.update(overlap_grad_reduce=True, overlap_param_gather=rng.random() < 0.5)
    if rng.random() < 0.3:
        p["recompute"] = rng.choice(["selective", "full"])
    if rng.random() < 0.2:
        p["cp"] = 2
        c["num_gpus"] = 16
    if rng.random() < 0.2:
        p["zero_stage"] = rng.choice([1, 2, 3])
    t["global_batch_size"] = 32
    return raw


def combos_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for _ in range(200):
            raw = _combo_run(rng)
            t = raw["training"]
            label = (f"combo {t['framework']} {t['framework_version']} {raw['cluster']['gpu']} "
                     f"{json.dumps({k: v for k, v in t.items() if k != 'framework'})} "
                     f"{json.dumps(raw['parallel'])}")
            yield label, (lambda c=raw: _layout_check(c))
    return cases


# ------------------------------------------------------------------------------ options

OPTION_VALUES = {
    "sweep": {"vary": [["parallel.tp=1:8"], ["parallel.tp="], ["=1,2"], ["parallel.tp=1,,2"],
                       ["parallel.tp=2,2"], ["model.num_layers=2:8"], ["training.dtype=fp8,bf16"]],
              "steps": [0, 1, 2, 10**6, "3", 2.5, -1]},
    "search": {"gpus": ["8,0", "-8", "8.5", "1e1", "8,8", "08", 8, "8 16"],
               "top": [0, -1, 10**9, "2"], "rank_by": ["bogus", "LAYOUT", "layout"],
               "tp": ["3", "1,2,3", "0", "x"], "recompute": ["bogus", "none", "FULL"],
               "pareto_slowdown": [0.5, 1, "inf", float("inf")]},
    "goodput": {"tokens": ["1T", "abc", -1, 0, 1e30, "1e12"], "days": [0, -1, 1e-9, "x", 1e9],
                "trials": [0, 1, 10**9, "5"], "interval": ["1h", "0s", "-1h", "x", 3600]},
    "plan": {"tokens": ["1T", 0, "x", 1e30], "days": [0, 1e-9, 30, "30"],
             "max_gpus": [0, 1, 2**40], "price": [-1, 0, "2.5"], "grid": [0, -1, 1e9]},
}


def _options_check(kind: str, key: str, value: Any) -> str | None:
    from trainsim.service import Settings
    from trainsim.service.jobs import problem

    options: dict[str, Any] = {key: value}
    config: Any = copy.deepcopy(BASES["dense"])
    if kind in ("search", "plan"):
        config = {}
        options.update({"model": "gpt3-350m", "max_micro_batch": 1, "overlap": "off",
                        "tp": options.get("tp", "1"), "pp": "1"})
        if kind == "search":
            options.setdefault("gpus", 8)
            options.update(global_batch=16, seq=512)
        else:
            options.setdefault("tokens", "1e9")
            options.setdefault("days", 1)
    if kind == "sweep" and key != "vary":
        options["vary"] = ["parallel.tp=1,2"]
    if kind == "goodput":
        config["training"]["train_tokens"] = 1e9
        options.setdefault("trials", 3)
    try:
        got = problem(kind, copy.deepcopy(config), copy.deepcopy(options),
                      Settings(workers=0, checkers=0))
    except Exception as exc:  # noqa: BLE001 - the finding: a 500
        return f"the {kind} job check raises {type(exc).__name__}"
    if got is not None:
        status, _field, text = got
        if not 400 <= status < 500 or "\n" in text:
            return f"a {kind} refusal with status {status} or of several lines"
        REFUSED[0] += 1
        return None
    from trainsim.service.jobs import run

    try:  # queued: it must run (a refusal now is a job the check could have refused)
        with fuzz_checks.cpu_deadline(20):
            run(kind, copy.deepcopy(config), copy.deepcopy(options),
                Settings(workers=0, checkers=0))
    except fuzz_checks.Hang:
        return None  # long, not wrong (the job's own limits bound it)
    except fuzz_checks.TrainsimError as exc:
        return f"a {kind} job queued, then refused: {re.sub(r'[0-9]+', 'N', str(exc))[:50]}"
    except Exception as exc:  # noqa: BLE001 - the finding: a failed job
        return f"a {kind} job queued, then failed with {type(exc).__name__}"
    return None


def options_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for kind, keys in OPTION_VALUES.items():
            for key, values in keys.items():
                for value in values:
                    yield f"options {kind} {key}={value!r}", (
                        lambda k=kind, o=key, v=value: _options_check(k, o, v))
    return cases


# ------------------------------------------------------------------------------ main

def surfaces(workdir: str, rng: random.Random) -> dict[str, Callable[[], Iterator[Case]]]:
    _WORKDIR[0] = workdir
    return {"layouts": layouts_cases(workdir, rng), "fp8gpu": fp8gpu_cases(workdir, rng),
            "forced": forced_cases(workdir, rng), "searchsweep": searchsweep_cases(workdir, rng),
            "collective": collective_cases(workdir, rng),
            "setpaths": setpaths_cases(workdir, rng), "yamltypes": yamltypes_cases(workdir, rng),
            "unknown": unknown_cases(workdir, rng), "service": service_cases(workdir, rng),
            "offload": offload_cases(workdir, rng), "combos": combos_cases(workdir, rng),
            "options": options_cases(workdir, rng)}


def main(argv: list[str] | None = None) -> int:
    status = fuzz_checks.seeded_round(62, argv, surfaces)
    if KNOWN_OPEN:
        print(f"left open: {len(KNOWN_OPEN)} forced-algorithm inputs refused only when priced "
              f"(a kind one group cannot run beside one it can), e.g. {KNOWN_OPEN[0]}")
    return status


__all__ = ["main", "surfaces"]

if __name__ == "__main__":
    fuzz_checks.run_round(main)
