"""fuzz59's surfaces over whole runs (``gafzero``, ``scopes``, ``dspp``), the search
(``searchmoe``) and the service's job check (``service``); ``benchmarks/fuzz59.py`` runs them."""

from __future__ import annotations

import copy
import json
import math
import random
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fuzz_checks
from fuzz57 import _run, json_answer, one_line, write
from fuzz_checks import BASES, REFUSED, Case, sane_result

from trainsim.errors import TrainsimError


def cli_run(raw: dict[str, Any], what: str, workdir: str, *, api: bool = True,
            read_back: bool = True) -> tuple[str, Any]:
    """``trainsim simulate`` of ``raw`` (written under ``workdir``): ('ok', (iteration, peak))
    with the answer checked (sane; ``api``: the API's answer alike, :func:`_simulated`, which
    ``read_back`` also resolves again), ('refused', its one line), or ('bad', the finding).
    fuzz61's and fuzz62's runs of a config through the command line."""
    r, lines = _run(["simulate", write(Path(workdir), "run.json", raw), "--format", "json"])
    if r.exit_code != 0:
        if "Traceback" in r.output or len(lines) != 1:
            return "bad", one_line(r, lines)
        return "refused", lines[0].removeprefix("error: ")
    bad = json_answer(r.stdout)
    if bad:
        return "bad", bad
    if api:
        try:
            bad = _simulated(raw, what, read_back=read_back)
        except TrainsimError as exc:
            return "bad", f"the API refuses what the CLI answers: {str(exc)[:60]}"
        if bad:
            return "bad", bad
    got = json.loads(r.stdout)
    return "ok", (got["iteration_time_s"], got["peak_memory_bytes"])


def _simulated(raw: dict[str, Any], what: str, read_back: bool = True) -> str | None:
    """A sane result whose resolved config answers the same (``fuzz58_files._resolved_again``),
    or a ``TrainsimError`` (one line, counted by ``fuzz_checks.outcome``)."""
    from fuzz58_files import _resolved_again

    from trainsim.catalog import run_config_from_dict
    from trainsim.simulator import simulate

    result = simulate(run_config_from_dict(copy.deepcopy(raw)))
    bad = sane_result(result)
    if bad:
        return f"insane result: {bad}"
    return _resolved_again(result, what) if read_back else None


# ------------------------------------------------------------------------------ gafzero

FRAMEWORKS = [("megatron-core", "0.9"), ("megatron-core", "0.12"), ("megatron-core", None),
              ("megatron-lm", None), ("megatron-lm", "2021-09"), ("nemo", None),
              ("megatron-bridge", None), ("megatron-llama", None), ("megatron-deepspeed", None),
              ("deepspeed", None), ("torchtitan", None), ("pytorch", None),
              ("llm-foundry", None), (None, None)]
ENGINES = [None, None, "megatron", "deepspeed", "fsdp1", "fsdp2", "megatron_fsdp", "bogus",
           " Megatron ", "FSDP2"]
FUSION = [True, False, None, None, "yes", "off", 0, 1, "", "maybe", 2]


def _gaf_run(rng: random.Random) -> dict[str, Any]:
    cfg = copy.deepcopy(BASES[rng.choice(["dense", "dense", "moe"])])
    fw, version = rng.choice(FRAMEWORKS)
    t = cfg["training"]
    if fw:
        t["framework"] = fw
    if version:
        t["framework_version"] = version
    fusion = rng.choice(FUSION)
    if fusion is not None:
        t["gradient_accumulation_fusion"] = fusion
    p = cfg["parallel"]
    if rng.random() < 0.5:
        p["zero_stage"] = rng.choice([0, 1, 2, 3])
    if rng.random() < 0.4:
        p["distributed_optimizer"] = rng.random() < 0.6
    engine = rng.choice(ENGINES)
    if engine:
        p["data_parallel_impl"] = engine
    if rng.random() < 0.3:
        p["overlap_grad_reduce"] = rng.random() < 0.5
    t["micro_batch_size"] = rng.choice([1, 2])
    return cfg


def _answer(raw: dict[str, Any]) -> tuple[str, Any]:
    """('ok', iteration) or ('refused', the message)."""
    from trainsim.catalog import run_config_from_dict
    from trainsim.simulator import simulate

    try:
        return "ok", simulate(run_config_from_dict(copy.deepcopy(raw))).iteration_time_s
    except TrainsimError as exc:
        return "refused", str(exc)


def _gaf_check(cfg: dict[str, Any]) -> str | None:
    """A sane result read back alike (:func:`_simulated`); an engine written in another case or
    with spaces (ParallelConfig reads ' Megatron ' as megatron) answers as its plain name."""
    engine = cfg["parallel"].get("data_parallel_impl")
    plain = engine.strip().lower() if isinstance(engine, str) else engine
    if plain != engine:
        same = copy.deepcopy(cfg)
        same["parallel"]["data_parallel_impl"] = plain
        got, want = _answer(cfg), _answer(same)
        if got[0] != want[0] or (got[0] == "ok" and got[1] != want[1]):
            return "an engine written in another case or with spaces answered otherwise " \
                   f"({got[0]}, plain {want[0]})"
    return _simulated(cfg, "gafzero")


def gafzero_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for _ in range(110):
            cfg = _gaf_run(rng)
            label = f"{cfg['training']} {cfg['parallel']}"
            yield label, (lambda c=cfg: _gaf_check(c))
    return cases


# ------------------------------------------------------------------------------ scopes

HYBRID = {"model": {"hidden_size": 256, "num_layers": 8, "num_attention_heads": 4,
                    "num_kv_heads": 2, "vocab_size": 1024, "ffn_hidden_size": 512,
                    "position_embedding": "none", "activation": "gelu",
                    "normalization": "rmsnorm", "hybrid_layer_pattern": "M-M*M-M*",
                    "mamba_num_heads": 8, "mamba_head_dim": 64, "mamba_num_groups": 2,
                    "mamba_state_dim": 64},
          "parallel": {}, "training": {"global_batch_size": 16, "seq_length": 512},
          "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                      "compute_db": None}}
SCOPES = ["attn", "mamba", "attn;mamba", "mamba,attn", "mlp", "moe_router",
          "moe_router;moe_preprocess", "full", "full_iteration", "", " MAMBA ", "mamba;mamba",
          "bogus", ["mamba"], ["attn", "mamba"], [], "attn,", "mamba;moe_router"]
SCOPE_FRAMEWORKS = [("megatron-core", None), ("megatron-core", "0.15"), ("megatron-core", "0.16"),
                    ("megatron-bridge", None), ("megatron-lm", None), ("nemo", None),
                    ("deepspeed", None), ("megatron-deepspeed", None), ("llm-foundry", None),
                    (None, None)]
"""Frameworks the scopes are tried under: Megatron-core's own releases and the stacks on it,
and stacks with CUDA graphs of their own or none (their profile says which)."""


def _scope_check(base: str, scope: Any, graphs: bool | None, fw: str | None,
                 version: str | None, workdir: str) -> str | None:
    raw = copy.deepcopy(HYBRID if base == "hybrid" else BASES[base])
    t = raw["training"]
    if fw:
        t["framework"] = fw
    if version:
        t["framework_version"] = version
    eager = copy.deepcopy(raw)
    if graphs is not None:
        t["cuda_graphs"] = graphs
    t["cuda_graph_scope"] = scope
    with warnings.catch_warnings():  # the round turns warnings off; the CLI prints these
        warnings.simplefilter("always")
        r, lines = _run(["simulate", write(Path(workdir), "scope.json", raw), "--format", "json"])
    if r.exit_code != 0:
        return one_line(r, lines, *(("cuda_graph",) if "cuda_graph" in (lines[:1] or [""])[0]
                                    else ()))
    eager["training"]["cuda_graphs"] = False
    e, _ = _run(["simulate", write(Path(workdir), "eager.json", eager), "--format", "json"])
    if e.exit_code != 0:
        return None
    got = json.loads(r.stdout)["iteration_time_s"]
    if not math.isfinite(got) or got <= 0:
        return "a non-finite iteration"
    names = [s for s in (scope if isinstance(scope, list) else str(scope).replace(",", ";")
                         .split(";")) if str(s).strip()]
    whole = {"full", "full_iteration"}
    captures_nothing = got == json.loads(e.stdout)["iteration_time_s"]
    warned = [ln for ln in r.stderr.splitlines() if ln.startswith("warning: ")
              and "cuda_graph_scope" in ln]
    if names and not {n.strip().lower() for n in names} <= whole and captures_nothing \
            and not warned:
        return "a stated graph scope that captures nothing taken without a word"
    return None


def scopes_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for _ in range(100):
            base = rng.choice(["dense", "moe", "hybrid"])
            scope = rng.choice(SCOPES)
            graphs = rng.choice([True, True, False, None])
            fw, version = rng.choice(SCOPE_FRAMEWORKS)
            yield f"{base} {fw} {version} cuda_graphs={graphs} scope={scope!r}", (
                lambda b=base, s=scope, g=graphs, f=fw, v=version:
                _scope_check(b, s, g, f, v, workdir))
    return cases


# ------------------------------------------------------------------------------ dspp

SCHEDULES = [None, "1f1b", "interleaved_1f1b", "gpipe", "zb_h1", "zb_v", "dualpipe", "1F1B",
             " interleaved ", "bogus", "", "combined_1f1b"]


def _dspp_run(rng: random.Random) -> tuple[dict[str, Any], str]:
    cfg = copy.deepcopy(BASES[rng.choice(["dense", "dense", "moe"])])
    fw = rng.choice(["deepspeed", "megatron-deepspeed"])
    cfg["training"]["framework"] = fw
    p: dict[str, Any] = {"pp": rng.choice([2, 4])}
    if "num_experts" in cfg["model"]:
        p.update(tp=1, ep=2)
    vpp = rng.choice([None, 1, 2, 2, "2"])
    if vpp is not None:
        p["vpp"] = vpp
    schedule = rng.choice(SCHEDULES)
    if schedule is not None:
        p["pipeline_schedule"] = schedule
    if rng.random() < 0.5:
        p["zero_stage"] = rng.choice([0, 1, 2, 3])
    cfg["parallel"] = p
    cfg["model"]["num_layers"] = 8
    cfg["cluster"]["num_gpus"] = 8
    cfg["training"].update(micro_batch_size=1, global_batch_size=16)
    return cfg, f"{fw} {p}"


def dspp_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for _ in range(60):
            cfg, label = _dspp_run(rng)
            yield label, (lambda c=cfg: _dspp_check(c, workdir))
    return cases


def _dspp_check(cfg: dict[str, Any], workdir: str) -> str | None:
    r, lines = _run(["simulate", write(Path(workdir), "dspp.json", cfg), "--format", "json"])
    if r.exit_code != 0:
        first = (lines[:1] or [""])[0]
        named = [w for w in ("vpp", "pipeline_schedule", "zero", "ep", "pp", "virtual",
                             "schedule") if w in first]
        return one_line(r, lines, *(() if named else ("parallel.",)))
    got = json.loads(r.stdout)
    return None if fuzz_checks.finite(got) and got["iteration_time_s"] > 0 else "insane JSON"


# ------------------------------------------------------------------------------ searchmoe

EP = ["1,2", "2", "0", "3", "2,,4", "x", "16", "-2", "2.0", "\uff12", "", "1,2,4,8", "2;4",
      "9007199254740993"]
SCHEDULE_LISTS = ["1f1b", "dualpipe", "zb_v", "interleaved_1f1b", "bogus", "", "1f1b,,dualpipe",
                  "DualPipe", "zbv", "1f1b,1f1b", "gpipe", "dualpipev", "combined_1f1b"]


def searchmoe_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        model = write(Path(workdir), "sm_model.json", {"model": BASES["moe"]["model"]})
        small = ["search", model, "--gpus", "8", "--global-batch", "16", "--seq", "512",
                 "--workers", "1", "--max-micro-batch", "1", "--recompute", "none",
                 "--overlap", "off", "--tp", "1", "--top", "2", "--format", "json"]
        for ep in EP:
            yield f"search --ep {ep!r}", (lambda e=ep: _search(
                [*small, "--pp", "1", "--ep", e], "--ep"))
        for sched in SCHEDULE_LISTS:
            ep = rng.choice(["1", "2"])
            yield f"search --schedules {sched!r} --ep {ep}", (lambda s=sched, e=ep: _search(
                [*small, "--pp", "2", "--ep", e, "--schedules", s], "--schedules"))
    return cases


def _search(args: list[str], option: str) -> str | None:
    r, lines = _run(args)
    if r.exit_code == 0:
        return json_answer(r.stdout)
    if "Traceback" in r.output or len(lines) != 1:
        return one_line(r, lines)
    if option in lines[0] or "no configuration" in lines[0] or "no valid" in lines[0]:
        REFUSED[0] += 1
        return None
    return f"search {option}: a refusal not naming it: {lines[0][:70]}"


# ------------------------------------------------------------------------------ service

def _service_alike(raw: dict[str, Any], workdir: str) -> str | None:
    """A simulate job's config checked by the service (``service.jobs.problem``) against
    ``simulate`` of the same file: refused by both in the same words, or by neither."""
    from trainsim.service import Settings
    from trainsim.service.jobs import problem

    r, lines = _run(["simulate", write(Path(workdir), "svc.json", raw), "--format", "json"])
    cli = None if r.exit_code == 0 else (lines[:1] or ["?"])[0].removeprefix("error: ")
    job = problem("simulate", copy.deepcopy(raw), {}, Settings(workers=0, checkers=0))
    if cli is None and job is not None:
        return f"the service refuses a config simulate answers: {job[2][:70]}"
    if cli is not None and job is None:
        return f"the service queues a config simulate refuses: {cli[:70]}"
    if cli is not None and cli != job[2]:
        return "the service and simulate refuse one config in two wordings"
    REFUSED[0] += cli is not None
    return None


def service_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        from fuzz59 import NCCL_TEXTS

        for text in rng.sample(NCCL_TEXTS, 12):
            raw = copy.deepcopy(BASES["dense"])
            raw["cluster"]["nccl_version"] = text
            yield f"service nccl_version={text!r}", (lambda c=raw: _service_alike(c, workdir))
        for _ in range(20):
            cfg = _gaf_run(rng)
            yield f"service gafzero {cfg['training']} {cfg['parallel']}", (
                lambda c=cfg: _service_alike(c, workdir))
        for _ in range(15):
            cfg, label = _dspp_run(rng)
            yield f"service dspp {label}", (lambda c=cfg: _service_alike(c, workdir))
        for fw, version in FRAMEWORKS:
            for pp, fusion in ((2, None), (2, False), (1, None)):
                raw = copy.deepcopy(BASES["moe"])
                raw["parallel"].update(pp=pp, defer_embedding_wgrad_compute=True)
                raw["cluster"]["num_gpus"] = 4 * pp
                t = raw["training"]
                if fw:
                    t["framework"] = fw
                if version:
                    t["framework_version"] = version
                if fusion is not None:
                    t["gradient_accumulation_fusion"] = fusion
                yield f"service deferral {fw} {version} pp {pp} fusion {fusion}", (
                    lambda c=raw: _service_alike(c, workdir))
    return cases


__all__ = ["TrainsimError", "dspp_cases", "gafzero_cases", "scopes_cases", "searchmoe_cases",
           "service_cases"]
