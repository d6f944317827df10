"""Input robustness, 2026-11-28 (48th session, robust48): recent Hugging Face config shapes,
every command's flags at their edges, and the newest pipeline paths in combination.

- ``hfrecent``: the class-default config.json of each recent family transformers builds
  (Gemma 3 and its multimodal wrapper, Qwen3-Next, gpt-oss, Llama 4, DeepSeek-V3.2, Kimi K2.5,
  GLM-4.5 / GLM-MoE-DSA, MiniMax-M2, EXAONE 4, OLMo 3, SmolLM3, Seed-OSS, ...) and edits of
  them a hub file holds (Gemma 3's per-layer-type ``rope_parameters`` with linear / YaRN /
  misspelt kinds, ``layer_types`` with no full layer or no pattern, gpt-oss without sinks, Llama
  4 with every second layer MoE and its chunk shorter than the sequence, Kimi K2's 384 experts
  in one group, DeepSeek-V3.2's indexer); oracle: priced, or one line naming what is unsupported;
- ``plan``: ``trainsim plan`` with a huge / tiny global batch, huge / tiny / malformed token
  counts, tiny sequences (robust47's lead 1), deadlines at their edges;
- ``flags``: ``simulate`` / ``sweep`` / ``search`` / ``export`` / ``goodput`` / ``collective``
  flags and ``--set`` values at their edges (0, negative, NaN, inf, 2**63, wrong type);
- ``service``: each job kind's ``options`` at the same edges through ``service.jobs.run`` (the
  worker's path: a result or one ``TrainsimError`` line), and the JSON endpoints' query values;
- ``schedules``: seeded draws of pipeline schedule (1F1B, GPipe, interleaved, ZB-H1/H2/2P, ZB-V,
  interleaved ZB, DualPipe, DualPipeV) x uneven first / last stages x MoE x CP x ZeRO-3 / FSDP x
  recompute x 1 to 4,096 micro-batches (``--count`` of them);
- ``flow``: the flow network backend on odd node sizes, topologies and fabrics.

Each input must give a sane answer or one ``TrainsimError`` line (``fuzz_checks.outcome``; 20 s
a case is a hang).

    PYTHONPATH=src python benchmarks/fuzz48.py [--only hfrecent,plan,...] [--count N]
        [--seed S] [--every] [--progress]
"""
from __future__ import annotations

import copy
import json
import math
import os
import random
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz_checks import BASES, REFUSED, Case, finite, print_report, run_config, surface_parser
from fuzz_inputs46_cli import json_answer
from fuzz_sweep import _cli

from trainsim.catalog import run_config_from_dict
from trainsim.errors import TrainsimError

fuzz_checks.TIME_LIMIT_S = 20
HF_KINDS = ("gemma3_text", "gemma3", "qwen3_next", "gpt_oss", "llama4_text", "llama4",
            "deepseek_v32", "deepseek_v3", "kimi_k25", "glm4_moe", "glm_moe_dsa", "glm4_moe_lite",
            "minimax_m2", "exaone4", "olmo3", "smollm3", "seed_oss", "qwen3_moe", "qwen3",
            "gemma2", "cohere2", "kimi_linear", "qwen3_5_moe", "gemma3n", "deepseek_v4")
EDGES = [0, -1, 1, 2**31, 2**63, 10**30, 1.5, "nan", "inf", "-inf", "1e400", "abc", "", "true",
         "[1]", "{}", "null", " 4 "]
"""Values a flag or ``--set`` field is given (as text on the command line)."""


def _hf_default(kind: str) -> dict[str, Any]:
    from transformers import CONFIG_MAPPING
    return CONFIG_MAPPING[kind]().to_dict()


def _small(d: dict[str, Any]) -> dict[str, Any]:
    """A class-default config cut to few layers (per-layer lists cut alike) so a case is fast."""
    d = copy.deepcopy(d)
    sub = d.get("text_config") if isinstance(d.get("text_config"), dict) else d
    n = sub.get("num_hidden_layers")
    if isinstance(n, int) and n > 8:
        keep = 8 if not isinstance(sub.get("layer_types"), list) else \
            _period_cut(sub["layer_types"], 8)
        sub["num_hidden_layers"] = keep
        for key in ("layer_types", "no_rope_layers", "mlp_layer_types"):
            if isinstance(sub.get(key), list):
                sub[key] = sub[key][:keep]
        if isinstance(sub.get("moe_layers"), list):
            sub["moe_layers"] = [i for i in sub["moe_layers"] if i < keep]
    return d


def _period_cut(types: list[str], least: int) -> int:
    """The first multiple of the layer pattern's period at or above ``least`` layers."""
    for period in range(1, len(types) + 1):
        if all(types[i] == types[i % period] for i in range(len(types))):
            return min(len(types), period * math.ceil(least / period))
    return len(types)


def _text(d: dict[str, Any]) -> dict[str, Any]:
    return d["text_config"] if isinstance(d.get("text_config"), dict) else d


def _hf_edits() -> Iterator[tuple[str, str, Callable[[dict], None], bool | None]]:
    """(family, edit name, edit in place, verdict: True must be priced at 8 GPUs, False must be
    refused, None either) of the hub shapes tried."""
    def rope(full: Any, sliding: Any = None) -> Callable[[dict], None]:
        def edit(d: dict) -> None:
            t = _text(d)
            t["rope_parameters"] = {"full_attention": full, "sliding_attention":
                                    sliding or {"rope_type": "default", "rope_theta": 10000.0}}
        return edit

    def put(**kv: Any) -> Callable[[dict], None]:
        return lambda d: _text(d).update(kv)

    for family in ("gemma3_text", "gemma3"):
        yield family, "as is", lambda d: None, True
        yield family, "full linear x8", rope({"rope_type": "linear", "factor": 8.0,
                                              "rope_theta": 1e6}), True
        yield family, "full yarn", rope({"rope_type": "yarn", "factor": 8.0, "rope_theta": 1e6,
                                         "original_max_position_embeddings": 8192}), True
        yield family, "full yarm", rope({"rope_type": "yarm", "factor": 8.0}), False
        yield family, "full bogus", rope({"rope_type": "bogus"}), None
        yield family, "both yarn", rope({"rope_type": "yarn", "factor": 4.0},
                                        {"rope_type": "yarn", "factor": 4.0}), True
        yield family, "nested not a map", rope("linear"), False
        yield family, "nested list", put(rope_parameters=[{"rope_type": "default"}]), False
        yield family, "no full layer", lambda d: _text(d).update(
            layer_types=["sliding_attention"] * _text(d)["num_hidden_layers"]), True
        yield family, "all full", lambda d: _text(d).update(
            layer_types=["full_attention"] * _text(d)["num_hidden_layers"]), True
        yield family, "no pattern", lambda d: _text(d).update(
            layer_types=["full_attention"] + ["sliding_attention"] *
            (_text(d)["num_hidden_layers"] - 1)), False
        yield family, "window null", put(sliding_window=None), True
        yield family, "window 0", put(sliding_window=0), False
        yield family, "window huge", put(sliding_window=2**40), True
        yield family, "types short", lambda d: _text(d).update(
            layer_types=_text(d)["layer_types"][:-1]), False
    yield "gpt_oss", "as is", lambda d: None, True
    yield "gpt_oss", "window 1", put(sliding_window=1), True
    yield "gpt_oss", "no yarn", put(rope_parameters={"rope_type": "default",
                                                     "rope_theta": 150000.0}), True
    yield "gpt_oss", "types all sliding", lambda d: _text(d).update(
        layer_types=["sliding_attention"] * _text(d)["num_hidden_layers"]), True
    yield "gpt_oss", "1 expert per token of 1", put(num_local_experts=1,
                                                    num_experts_per_tok=1), True
    yield "gpt_oss", "topk > experts", put(num_experts_per_tok=999), False
    for family in ("llama4_text", "llama4"):
        yield family, "as is", lambda d: None, True
        yield family, "moe every 2nd", lambda d: _text(d).update(
            interleave_moe_layer_step=2,
            moe_layers=list(range(1, _text(d)["num_hidden_layers"], 2))), True
        yield family, "chunk 0", put(attention_chunk_size=0), False
        yield family, "chunk null", put(attention_chunk_size=None), True
        yield family, "no rope nowhere", lambda d: _text(d).update(
            no_rope_layers=[1] * _text(d)["num_hidden_layers"], layer_types=None), True
        yield family, "moe_layers odd", put(moe_layers=[0, 3, 5]), False
    yield "deepseek_v3", "kimi k2 384 experts", put(n_routed_experts=384, n_group=1,
                                                    topk_group=1, num_experts_per_tok=8), True
    yield "deepseek_v3", "groups not dividing", put(n_group=7), None
    yield "kimi_k25", "as is", lambda d: None, True
    for family in ("deepseek_v32", "glm_moe_dsa"):
        yield family, "as is", lambda d: None, False
        yield family, "index heads 0", put(index_n_heads=0), False
    for family in ("glm4_moe", "glm4_moe_lite", "minimax_m2", "exaone4", "olmo3", "smollm3",
                   "seed_oss", "qwen3_moe", "qwen3", "gemma2", "cohere2"):
        yield family, "as is", lambda d: None, True
    yield "qwen3_next", "as is", lambda d: None, False
    yield "qwen3_next", "interval 1", put(full_attention_interval=1, layer_types=None), False
    for family in ("kimi_linear", "qwen3_5_moe", "gemma3n", "deepseek_v4"):
        yield family, "as is", lambda d: None, False


def hfrecent_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def case(d: dict[str, Any], seq: int, gpus: int, must: bool | None, path: Path,
             name: str) -> str | None:
        path.write_text(json.dumps(d))
        cfg = {"model": {"hf_config": str(path)},
               "parallel": {"tp": min(gpus, 8), "sequence_parallel": gpus > 1},
               "training": {"global_batch_size": 2 * gpus, "seq_length": seq},
               "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": gpus, "gpus_per_node": 8,
                           "compute_db": None}}
        try:
            bad = run_config(cfg)
        except TrainsimError as exc:
            text = str(exc)
            if must and not any(w in text for w in ("divide", "memory", "chunk", "per GPU",
                                                    "does not fit", "refuse")):
                return f"valid shape refused: {text[:160]}"
            raise
        if must is False:
            return "priced though unsupported or malformed"
        yarn = "yarn" in name and "no yarn" not in name
        if bad is None and yarn and run_config_from_dict(copy.deepcopy(cfg)).model.rope_scaling \
                != "yarn":
            return "YaRN in the file not priced as YaRN"
        return bad

    def cases() -> Iterator[Case]:
        try:
            defaults = {k: _hf_default(k) for k in HF_KINDS}
        except ImportError:  # transformers missing: the surface has nothing to build from
            return
        for n, (family, name, edit, must) in enumerate(_hf_edits()):
            d = _small(defaults[family])
            edit(d)
            for seq in (1024, 16384):
                for gpus in (1, 8):
                    path = Path(workdir) / f"hf{n}_{seq}_{gpus}.json"
                    verdict = must if must is False or gpus == 8 else None
                    yield f"hf {family} {name} seq={seq} gpus={gpus}", (
                        lambda d=d, s=seq, g=gpus, m=verdict, p=path, n=name:
                        case(d, s, g, m, p, n))
    return cases


def plan_cases() -> Iterator[Case]:
    base = ["plan", "llama3-8b", "--tokens", "1B", "--days", "30", "--format", "json",
            "--max-gpus", "64", "--tp", "1,2", "--pp", "1", "--workers", "1"]
    edits: list[list[str]] = [
        ["--global-batch", str(2**40)], ["--global-batch", str(2**62)],
        ["--global-batch", "1"], ["--global-batch", "0"], ["--global-batch", "-1"],
        ["--global-batch", "1.5"], ["--global-batch", str(10**30)],
        ["--tokens", "1e30"], ["--tokens", "1e400"], ["--tokens", "inf"], ["--tokens", "nan"],
        ["--tokens", "0"], ["--tokens", "-1B"], ["--tokens", "1"], ["--tokens", "1e-9"],
        ["--tokens", "15T"], ["--tokens", "1Q"], ["--tokens", str(2**70)], ["--tokens", "1.5e13"],
        ["--seq", "1"], ["--seq", "16"], ["--seq", "1", "--global-batch", "1"],
        ["--seq", str(2**20)], ["--seq", str(2**40)], ["--seq", "0"],
        ["--days", "1e-12"], ["--days", "1e12"], ["--days", "inf"], ["--days", "nan"],
        ["--max-gpus", "1"], ["--max-gpus", str(2**40)], ["--max-gpus", "0"],
        ["--max-micro-batch", str(2**40)], ["--max-micro-batch", "0"],
        ["--max-vpp", str(2**40)], ["--price", "1e400"], ["--price", "0"], ["--pue", "nan"],
        ["--nic-gbit-s", "1e-300"], ["--nic-gbit-s", "1e300"], ["--tp", str(2**40)],
        ["--tp", "0"], ["--tp", "-2"], ["--pp", "1,1,1"], ["--cp", "nan"],
        ["--set", "training.seq_length=1"], ["--set", "cluster.gpu_overrides.hbm_gib=1e-9"],
        ["--set", "cluster.gpu_overrides.peak_tflops=1e300"],
        ["--tokens", "1e12", "--days", "1e-3", "--max-gpus", str(2**17)]]
    for e in edits:
        args = base + e
        yield " ".join(e), (lambda a=args: _timed_cli(a))


def _timed_cli(args: list[str]) -> str | None:
    return _cli(args, answer_check=json_answer(args))


def _write_cfg(workdir: str, cfg: dict[str, Any], name: str) -> str:
    path = Path(workdir) / name
    path.write_text(json.dumps(cfg))
    return str(path)


SET_FIELDS = ["model.num_layers", "model.hidden_size", "model.vocab_size",
              "model.sliding_window", "model.attention_chunk_size", "model.window_attn_skip_freq",
              "parallel.tp", "parallel.pp", "parallel.vpp", "parallel.cp",
              "parallel.decoder_first_pipeline_num_layers", "parallel.recompute_num_layers",
              "training.global_batch_size", "training.micro_batch_size", "training.seq_length",
              "training.train_tokens", "cluster.num_gpus", "cluster.gpus_per_node",
              "cluster.nic_gbit_s_per_gpu", "cluster.nvlink_gbyte_s", "cluster.price_per_hour",
              "cluster.gpu_overrides.hbm_gbyte_s", "cluster.gpu_overrides.peak_tflops",
              "cluster.gpu_overrides.hbm_gib"]


def flag_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        base = copy.deepcopy(BASES["dense"])
        cfg = _write_cfg(workdir, base, "run.json")
        pp = copy.deepcopy(base)
        pp["parallel"] = {"pp": 2}
        cfg_pp = _write_cfg(workdir, pp, "run_pp.json")
        runs: list[list[str]] = []
        for field in SET_FIELDS:
            for v in EDGES:
                runs.append(["simulate", cfg_pp if field.startswith("parallel") else cfg,
                             "--format", "json", "--set", f"{field}={v}"])
        for v in ("0", "-1", str(2**63), "nan", "1e400", "x"):
            runs.append(["simulate", cfg, "--max-tasks", v])
            runs.append(["export", cfg, "--max-tasks", v, "--simai",
                         str(Path(workdir) / "w.txt")])
            runs.append(["sweep", cfg, "--vary", "cluster.nvlink_gbyte_s=100:900",
                         "--steps", v, "--format", "json"])
            runs.append(["goodput", cfg, "--trials", v, "--tokens", "1B", "--format", "json"])
            runs.append(["goodput", cfg, "--seed", v, "--trials", "5", "--tokens", "1B"])
            runs.append(["goodput", cfg, "--max-trial-rounds", v, "--trials", "5",
                         "--tokens", "1B", "--format", "json"])
            runs.append(["collective", "--gpus", v, "--sizes", "1K:1M", "--format", "json"])
            runs.append(["collective", "--gpus", "16", "--backend", "flow", "--max-flows", v,
                         "--sizes", "1K:64K"])
            runs.append(["search", "llama3-8b", "--gpus", "8", "--seq", "1024", "--tp", "1,2",
                         "--pp", "1", "--workers", "1", "--top", v, "--format", "json"])
            runs.append(["search", "llama3-8b", "--gpus", "8", "--seq", "1024", "--tp", "1",
                         "--pp", "1", "--workers", "1", "--pareto-slowdown", v])
        for vary in ("cluster.nvlink_gbyte_s=nan:900", "cluster.nvlink_gbyte_s=900:100",
                     "cluster.nvlink_gbyte_s=0:0", "cluster.nvlink_gbyte_s=1e-300:1e300",
                     "training.global_batch_size=1:2**40", "training.global_batch_size=8,16,1e400",
                     "model.num_layers=0:4", "parallel.tp=1:3", "cluster.nvlink_gbyte_s=",
                     "cluster.nvlink_gbyte_s=inf,1", "training.seq_length=1:1048576"):
            runs.append(["sweep", cfg, "--vary", vary, "--steps", "3", "--format", "json"])
        for sizes in ("0:1K", "1K:0", "-1:1K", "1:1e30", "1e400:1e400", "1K:1K", "1:2**62",
                      "nan:1K", "1KiB:1MiB", "1:1"):
            runs.append(["collective", "--sizes", sizes, "--format", "json"])
        for nic in ("0", "1e-300", "1e300", "nan", "-1"):
            runs.append(["collective", "--nic-gbit-s", nic, "--gpus", "16", "--sizes", "1M:1M"])
        for gpus in ("1", "2", "3", "7", "72", "73", "1000003", str(2**40)):
            runs.append(["collective", "--gpus", gpus, "--backend", "flow", "--sizes", "1M:1M",
                         "--format", "json"])
            runs.append(["collective", "--gpus", gpus, "--op", "all_to_all", "--sizes", "1M:1M",
                         "--format", "json"])
        for days in ("1e-300", "1e300", "nan", "inf", "-1", "0"):
            runs.append(["goodput", cfg, "--days", days, "--trials", "5", "--format", "json"])
        for tokens in ("1e400", "1e-300", "nan", "-5", "15T", "1.5e13", "1Q", "1 T", "1e18"):
            runs.append(["goodput", cfg, "--tokens", tokens, "--trials", "5",
                         "--format", "json"])
        for gbs in ("0", "1", str(2**40), "-3"):
            runs.append(["search", "llama3-8b", "--gpus", "8", "--seq", "512", "--tp", "1",
                         "--pp", "1", "--workers", "1", "--global-batch", gbs,
                         "--format", "json"])
        for gpus in ("0", "1", "3", str(2**40), "8,8", "8,,16", "nan", "-8"):
            runs.append(["search", "llama3-8b", "--gpus", gpus, "--seq", "512", "--tp", "1",
                         "--pp", "1", "--workers", "1", "--format", "json"])
        for ref in ("tp=8,pp=8", "tp=0", "tp=nan", "tp=1,pp=1,bogus=2", "tp=1,tp=2", "=", ","):
            runs.append(["search", "llama3-8b", "--gpus", "8", "--seq", "512", "--tp", "1",
                         "--pp", "1", "--workers", "1", "--reference", ref])
        for v in ("0", "-1", str(2**40), "nan"):
            runs.append(["export", cfg, "--seq", v, "--simai", str(Path(workdir) / "w.txt")])
            runs.append(["export", cfg, "--mbs", v, "--simai", str(Path(workdir) / "w.txt")])
            runs.append(["export", cfg, "--gbs", v, "--simai", str(Path(workdir) / "w.txt")])
        chk = json_answer
        for args in runs:
            yield " ".join(args).replace(workdir, "W"), (
                lambda a=args: _cli(a, answer_check=chk(a)))
    return cases


def service_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    from trainsim.service.settings import Settings
    settings = Settings(db_url=f"sqlite:///{Path(workdir) / 'jobs.db'}", workers=0, checkers=0)
    nan, inf = math.nan, math.inf
    values = [0, -1, 2**63, 10**30, nan, inf, -inf, 1.5, "8", "abc", True, None, [], {}, ""]
    per_kind: dict[str, list[str]] = {
        "simulate": ["trace", "plot", "set"],
        "sweep": ["steps", "vary", "set"],
        "goodput": ["tokens", "days", "gpus", "interval", "seed", "trials", "sweep"],
        "search": ["gpus", "global_batch", "seq", "top", "pareto_slowdown", "tp", "max_vpp",
                   "max_micro_batch", "schedules", "zero"],
        "plan": ["tokens", "days", "global_batch", "seq", "max_gpus", "price", "pue", "grid",
                 "gpu_idle_fraction", "node_overhead"],
        "validate": ["file", "csv"]}
    good = {"simulate": {}, "sweep": {"vary": ["cluster.nvlink_gbyte_s=300:900"], "steps": 2},
            "goodput": {"tokens": "1B", "trials": 5},
            "search": {"gpus": "8", "seq": 512, "tp": "1,2", "pp": "1", "workers": None},
            "plan": {"tokens": "1B", "days": 1, "seq": 512, "tp": "1", "pp": "1",
                     "max_gpus": 16},
            "validate": {"csv": "model,gpus,tp,pp,dp,gbs,seq,measured_mfu\n"
                                "llama3-8b,8,1,1,8,64,1024,0.4\n"}}
    good["search"].pop("workers")

    def run_job(kind: str, options: dict[str, Any]) -> str | None:
        from trainsim.service import jobs
        config = copy.deepcopy(BASES["dense"])
        if kind in ("search", "plan"):  # the model and GPU; the options give the rest
            config = {"model": config["model"], "cluster": {"gpu": "h100-sxm-80gb"}}
        bad = jobs.problem(kind, config, options, settings)
        if bad is not None:
            status, _field, text = bad
            if not (400 <= status < 500) or not text or "\n" in text.strip():
                return f"refusal {status} not one line: {text[:80]}"
            REFUSED[0] += 1
            return None
        out = jobs.run(kind, config, options, settings)
        data = json.loads(out.result)
        return None if finite(data) else "non-finite number in a job result"

    def cases() -> Iterator[Case]:
        for kind, keys in per_kind.items():
            for key in keys:
                for v in values:
                    opts = {**good[kind], key: v}
                    yield f"job {kind} options.{key}={v!r}", (
                        lambda k=kind, o=opts: run_job(k, o))
    return cases


SCHEDULES = [("1f1b", None), ("gpipe", None), ("interleaved_1f1b", 2), ("zb_h1", None),
             ("zb_h2", None), ("zb_2p", None), ("zb_v", 2), ("interleaved_zb", 2),
             ("dualpipe", None), ("dualpipe_v", 2)]


def _draw_schedule(rng: random.Random) -> tuple[str, dict]:
    moe = rng.random() < 0.5
    cfg = copy.deepcopy(BASES["moe"] if moe else BASES["dense"])
    name, vpp = rng.choice(SCHEDULES)
    pp = rng.choice([2, 2, 4, 3])
    layers = rng.choice([pp * (vpp or 1) * k for k in (1, 2, 3)] + [7, 9, 13])
    par: dict[str, Any] = {"pp": pp, "pipeline_schedule": name}
    if vpp:
        par["vpp"] = vpp
    if moe:
        par["ep"] = rng.choice([1, 2, 4])
        cfg["model"]["moe_layer_freq"] = rng.choice([1, 1, 2])
        cfg["model"]["moe_first_dense_layers"] = rng.choice([0, 0, 1])
    uneven = rng.choice(["", "", "first", "last", "both", "embed"])
    if uneven in ("first", "both"):
        par["decoder_first_pipeline_num_layers"] = rng.choice([0, 1, 2])
    if uneven in ("last", "both"):
        par["decoder_last_pipeline_num_layers"] = rng.choice([0, 1, 2])
    if uneven == "embed":
        par["account_for_embedding_in_pipeline_split"] = True
        par["account_for_loss_in_pipeline_split"] = True
    cp = rng.choice([1, 1, 2])
    tp = rng.choice([1, 1, 2])
    if cp > 1:
        par["cp"] = cp
    if tp > 1:
        par.update(tp=tp, sequence_parallel=rng.random() < 0.7)
    dp_mode = rng.choice(["", "", "zero1", "zero3", "fsdp2"])
    if dp_mode == "zero1":
        par["distributed_optimizer"] = True
    elif dp_mode == "zero3":
        par["zero_stage"] = 3
    elif dp_mode == "fsdp2":
        par.update(zero_stage=3, data_parallel_impl="fsdp2")
    par["recompute"] = rng.choice(["none", "none", "selective", "full"])
    if rng.random() < 0.2:
        par["overlap_p2p_comm"] = True
    gpus = pp * tp * cp * rng.choice([1, 2])
    if moe and gpus % (par["ep"]) and par["ep"] > 1:
        gpus *= par["ep"]
    dp = max(gpus // (pp * tp * cp), 1)
    mbs = rng.choice([1, 1, 2])
    micro = rng.choice([1, pp - 1 or 1, pp, 2 * pp, 3 * pp + 1, 64, 4096])
    cfg["model"]["num_layers"] = layers
    cfg["parallel"] = par
    cfg["training"].update(global_batch_size=micro * mbs * dp, micro_batch_size=mbs,
                           seq_length=rng.choice([256, 512, 2048]))
    cfg["training"]["framework"] = rng.choice([None, "megatron-core", "torchtitan",
                                               "deepspeed", "nemo"])
    if cfg["training"]["framework"] is None:
        cfg["training"].pop("framework")
    cfg["cluster"].update(num_gpus=gpus, gpus_per_node=min(gpus, 8))
    label = (f"{'moe' if moe else 'dense'} L{layers} {name} pp{pp} tp{tp} cp{cp} {dp_mode or 'dp'} "
             f"{uneven or 'even'} {par['recompute']} m{micro} mbs{mbs} "
             f"fw={cfg['training'].get('framework')}")
    return label, cfg


def _builds(cfg: dict) -> bool:
    try:
        run_config_from_dict(copy.deepcopy(cfg))
    except TrainsimError:
        return False
    return True


def schedule_cases(count: int, seed: int) -> Callable[[], Iterator[Case]]:
    """``count`` draws; four in five redrawn (up to 30 times) until the config builds, so most
    reach the simulator instead of the layout checks (the fifth keeps the refusals tried)."""
    def cases() -> Iterator[Case]:
        rng = random.Random(seed)
        for _ in range(count):
            label, cfg = _draw_schedule(rng)
            if rng.random() < 0.8:
                for _ in range(30):
                    if _builds(cfg):
                        break
                    label, cfg = _draw_schedule(rng)
            yield label, (lambda c=cfg: run_config(c))
    return cases


def flow_cases() -> Iterator[Case]:
    for gpn in (1, 2, 3, 7, 8, 16, 72):
        for gpus in sorted({gpn, 2 * gpn, 3 * gpn}):
            for topo in ("rail-optimized", "spine-leaf", "nvl72", "torus", "dgx-h100-superpod"):
                for tp in (1, 2):
                    for moe in (False, True):
                        cfg = copy.deepcopy(BASES["moe" if moe else "dense"])
                        cfg["parallel"] = {"tp": tp, **({"ep": 2} if moe else {})}
                        cfg["cluster"].update(num_gpus=gpus, gpus_per_node=gpn, topology=topo,
                                              network_backend="flow")
                        cfg["training"]["global_batch_size"] = 4 * gpus
                        yield f"flow gpn={gpn} gpus={gpus} {topo} tp={tp} moe={moe}", (
                            lambda c=cfg: run_config(c))


def main(argv: list[str] | None = None) -> int:
    ap = surface_parser()
    ap.add_argument("--count", type=int, default=1500, help="schedule draws")
    ap.add_argument("--seed", type=int, default=48)
    ap.add_argument("--progress", action="store_true", help="a line per 50 inputs (stderr)")
    ap.add_argument("--refusals", action="store_true", help="group the refusals by message")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    only = {s for s in args.only.split(",") if s}
    with tempfile.TemporaryDirectory() as workdir:
        surfaces = {"hfrecent": hfrecent_cases(workdir), "plan": plan_cases,
                    "flags": flag_cases(workdir), "service": service_cases(workdir),
                    "schedules": schedule_cases(args.count, args.seed), "flow": flow_cases}
        counts: dict[str, int] = {}
        failures: dict[str, list[str]] = {}
        refusals: dict[str, list[str]] = {}
        start = time.monotonic()
        for surface, made in surfaces.items():
            if only and surface not in only:
                continue
            for label, thunk in made():
                counts[surface] = counts.get(surface, 0) + 1
                t0 = time.monotonic()
                bad = fuzz_checks.outcome(fuzz_checks.noting(thunk, label, refusals))
                if bad:
                    failures.setdefault(f"{surface}: {bad}", []).append(label)
                if args.progress and time.monotonic() - t0 > 10:
                    print(f"slow {time.monotonic() - t0:.1f}s: {label}", file=sys.stderr)
                if args.progress and sum(counts.values()) % 50 == 0:
                    print(f"{sum(counts.values())} inputs, {len(failures)} classes, "
                          f"{time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
        if args.refusals:
            fuzz_checks.print_refusals(refusals)
        return print_report({"counts": counts, "failures": failures}, every=args.every)


if __name__ == "__main__":
    sys.exit(main())
