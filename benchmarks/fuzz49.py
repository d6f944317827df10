"""Input robustness, 2026-11-28 (49th session, robust49): robust48 / edge48's three leads and
four surfaces of the newest inputs.

- ``segments``: the embedding backward's id counts (``token_ids.text_segments``,
  ``embedding_bwd.uniform_segments``) at 1e5 to 1e9 ids a micro-batch over 1 to 2**31 rows:
  finite, ordered (distinct <= partials, distinct <= ids and rows) and under the time limit
  (robust48 lead 3: 1e8 ids over 3M rows took 64 s);
- ``flowkeys``: the flow backend's spans of groups that straddle nodes unevenly, asked in
  both orders: each group's collective costs what it costs on a fresh network (edge48 lead 2:
  two such groups of one shape shared the first one's ranks);
- ``bigm``: every pipeline schedule at 4,096 and 16,384 micro-batches, pp 2 to 16 (robust48
  lead 5): over 10 CPU s is a class even when the task limit allows it;
- ``yamlset``: the newest config fields through a YAML file and ``--set``:
  ``training.vocab_divisible_by``, ``parallel.pipeline_schedule`` with pipeline layouts, and
  option words (recompute, ZeRO, overlap, dtype, attention) in odd spellings;
- ``hf``: Hugging Face config.json files of 2025-26 families (Qwen3-Next, Llama 4, gpt-oss,
  DeepSeek-V3.2, Kimi K2, GLM-4.5, MiniMax, Gemma 3, Nemotron-H, Falcon-H1, LFM2, ...), class
  defaults and hub-shaped edits (Python's ``Infinity``, per-layer lists, wrong types): a priced
  file must count the parameters transformers builds (meta device; within 0.1 %), an
  unsupported one is refused in one line;
- ``export``: ``trainsim export`` (Chakra, SimAI), ``goodput`` and ``sweep`` on unusual configs
  (MoE with DualPipe, ZB-2p, CP, FSDP, MLA, windows, the flow backend, one GPU);
- ``http``: the service's JSON endpoints (FastAPI's TestClient, no workers) with wrong types,
  huge values, unicode names and query values at their edges.

Each input must give a sane answer or one ``TrainsimError`` line (``fuzz_checks.outcome``; 20 s
wall a case is a hang on this loaded box; over 10 CPU s is reported as its own class).

    PYTHONPATH=src python benchmarks/fuzz49.py [--only segments,flowkeys,...] [--count N]
        [--seed S] [--every] [--progress] [--refusals]
"""
from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz48 import _small, _text
from fuzz_checks import BASES, REFUSED, Case, finite, run_config
from fuzz_inputs46_cli import json_answer
from fuzz_sweep import _cli

from trainsim.errors import TrainsimError

fuzz_checks.TIME_LIMIT_S = 20


SAID: list[str] = []
"""The CLI's one-line refusals of the current input (``_said``), for ``--refusals``."""


def _said(args: list[str]) -> str | None:
    """``fuzz_sweep._cli`` on ``args`` (a --format json answer must be JSON); a refusal's line
    is raised again as a TrainsimError so ``--refusals`` groups it (still one line)."""
    SAID.clear()
    bad = _cli(args, answer_check=json_answer(args), refusals=SAID)
    if bad is None and SAID:
        REFUSED[0] -= 1  # counted again by fuzz_checks.outcome
        raise TrainsimError(SAID[0].removeprefix("error: "))
    return bad


# ------------------------------------------------------------------------------ segments

def segment_cases() -> Iterator[Case]:
    from trainsim.compute.embedding_bwd import uniform_segments
    from trainsim.workload.token_ids import text_segments

    def text(tokens: int, vocab: int, tp: int) -> str | None:
        distinct, partials, top, chunk = text_segments(tokens, vocab, tp)
        if not all(math.isfinite(x) for x in (distinct, partials, top, chunk)):
            return "non-finite segments"
        if not (0 < distinct <= partials + 1e-6 and distinct <= tokens + 1
                and 0 < top <= 1 and 0 < chunk <= 32 + 1):
            return "segments out of order"
        return None

    def uniform(tokens: float, rows: int) -> str | None:
        distinct, partials = uniform_segments(tokens, rows)
        if not (math.isfinite(partials) and 0 < distinct <= min(rows, tokens) * (1 + 1e-9)
                and distinct <= partials + 1e-6):
            return "uniform segments out of order"
        return None

    for tokens in (10**5, 10**6, 10**7, 10**8, 10**9):
        for vocab in (32_000, 262_144, 2**21, 3_000_000, 2**26, 2**31):
            for tp in (1, 8):
                yield f"text_segments({tokens:.0e}, {vocab}, tp={tp})", (
                    lambda t=tokens, v=vocab, p=tp: text(t, v, p))
        for rows in (1, 1000, 2**17, 2**21, 2**31):
            yield f"uniform_segments({tokens:.0e}, {rows})", (
                lambda t=tokens, r=rows: uniform(float(t), r))
    for vocab, seq, mbs in ((3_000_000, 131_072, 8), (2**31, 65_536, 16), (262_144, 2**20, 64)):
        cfg = copy.deepcopy(BASES["dense"])
        cfg["model"]["vocab_size"] = vocab
        cfg["training"].update(seq_length=seq, micro_batch_size=mbs, global_batch_size=8 * mbs)
        yield f"simulate vocab={vocab} seq={seq} mbs={mbs}", (lambda c=cfg: run_config(c))


# ------------------------------------------------------------------------------ flowkeys

def flowkey_cases() -> Iterator[Case]:
    from trainsim.catalog import run_config_from_dict
    from trainsim.collectives.placement import placed_span
    from trainsim.network.flow import FlowNetwork
    from trainsim.network.topology import from_cluster

    def pair(gpn: int, nodes: int, first: tuple[int, int], second: tuple[int, int]
             ) -> str | None:
        cfg = copy.deepcopy(BASES["dense"])
        cfg["cluster"].update(num_gpus=gpn * nodes, gpus_per_node=gpn, network_backend="flow")
        cfg["training"]["global_batch_size"] = 2 * gpn * nodes
        cluster = run_config_from_dict(cfg).cluster
        shared = FlowNetwork(from_cluster(cluster))
        spans = [shared.span(*first), shared.span(*second)]
        for (size, stride), span in zip((first, second), spans):
            fresh = FlowNetwork(from_cluster(cluster))
            alone = fresh.span(size, stride)
            for kind in ("all_reduce", "all_to_all"):
                a = shared.collective(kind, 1e7, span).time_s
                b = fresh.collective(kind, 1e7, alone).time_s
                if a != b:
                    return f"{kind} of a group priced on another group's ranks ({a} vs {b})"
        return None

    for gpn in range(2, 9):
        for nodes in range(2, 5):
            uneven = []
            for size in range(2, gpn * nodes + 1):
                for stride in range(1, gpn * nodes):
                    if (size - 1) * stride >= gpn * nodes:
                        continue
                    if placed_span(size, stride, (gpn,) * nodes).uneven_nodes is not None:
                        uneven.append((size, stride))
            for i, a in enumerate(uneven):
                for b in uneven[i + 1:]:
                    if a[0] == b[0]:
                        yield f"flow gpn={gpn} nodes={nodes} {a} then {b}", (
                            lambda g=gpn, n=nodes, x=a, y=b: pair(g, n, x, y))


# ------------------------------------------------------------------------------ bigm

def bigm_cases() -> Iterator[Case]:
    from robust49_schedules import ALL, config
    for micro in (4096, 16384):
        for pp in (2, 4, 8, 16):
            for name in ALL:
                cfg = config(name, pp, micro)
                yield f"{name} pp{pp} m{micro}", (lambda c=cfg: run_config(c))


# ------------------------------------------------------------------------------ yamlset

DIVISIBLE = ["0", "1", "3", "128", "-1", str(2**31), str(2**63), "1.5", "'128'", "null", "true",
             "abc", "1e30", "nan", "[128]", "64 ", "0x80"]
SCHEDULE_WORDS = ["1F1B", "ZB-H1", "zb_2p", "Interleaved1F1B", "ScheduleDualPipeV", "dual pipe",
                  "zbv", "ZBVZeroBubble", "dualpipe", "gpipe", "zb_h3", "", "null", "1f1b ",
                  "ｚｂ_ｈ１", "1f1b\n", "[zb_h1]", "ZB_2P", "interleaved_zb"]
LAYOUTS = ["Et|tt|tt|tL", "Ett|tt|tt|ttL", "E|tttt|ttt|tL", "Ett|tt|tt|tt|L", "Et*3|(tt|)*1,tL", "first:1,last:1", "balanced", "front_loaded",
           "filled", "E|tttttttt|L", "Ettt|tttttL", "t|t|t|t", "(t|)*1000000", "Et|tt|tt|tm|L",
           "Ｅt|tt|tt|tL", "first:0", "last:8", "first:9", "Et||ttt|ttL", "E t|t t|t t|t L",
           "", "null", "Et|tt|tt|tL|", "balanced,filled"]
OPTION_WORDS = {
    "parallel.recompute": ["Selective", "FULL", " none", "full_block", "yes", "0", "selectiv",
                           "null"],
    "parallel.zero_stage": ["3", "'3'", "three", "4", "1.0", "-0"],
    "parallel.overlap_grad_reduce": ["yes", "no", "on", "off", "True", "1", "2", "maybe"],
    "training.dtype": ["BF16", "bfloat16", "fp8", "FP8-e4m3", "float32", "fp4", "nvfp4", "half"],
    "training.framework": ["Megatron-LM", "megatron_core", "NeMo", "torchtitan", "deepspeed",
                           "megatron-lm@core_r0.12.0", "megatronlm", "ｍegatron"],
    "training.attention": ["flash", "FlashAttention-3", "cudnn", "sdpa", "te", "flash2",
                             "eager", "ck"],
}


def yamlset_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def write(cfg: dict[str, Any], name: str) -> str:
        path = Path(workdir) / name
        path.write_text(json.dumps(cfg))
        return str(path)

    def cases() -> Iterator[Case]:
        base = copy.deepcopy(BASES["dense"])
        base["model"]["num_layers"] = 8
        base["model"]["vocab_size"] = 50_257
        plain = write(base, "y_base.json")
        pp4 = copy.deepcopy(base)
        pp4["parallel"] = {"pp": 4}
        pp4["cluster"]["num_gpus"] = 8
        piped = write(pp4, "y_pp4.json")
        runs: list[list[str]] = []
        for v in DIVISIBLE:
            runs.append(["simulate", plain, "--format", "json",
                         "--set", f"training.vocab_divisible_by={v}"])
            runs.append(["simulate", plain, "--format", "json", "--set", "parallel.tp=2",
                         "--set", f"training.vocab_divisible_by={v}"])
        for v in SCHEDULE_WORDS:
            runs.append(["simulate", piped, "--format", "json",
                         "--set", f"parallel.pipeline_schedule={v}"])
        for lay in LAYOUTS:
            for sched in ("1f1b", "zb_h1", "interleaved_1f1b", "dualpipe_v", "zb_v"):
                extra = ["--set", "parallel.vpp=2"] if sched in ("interleaved_1f1b",) else []
                runs.append(["simulate", piped, "--format", "json", *extra,
                             "--set", f"parallel.pipeline_schedule={sched}",
                             "--set", f"parallel.pipeline_model_parallel_layout={lay}"])
        for field, words in OPTION_WORDS.items():
            for w in words:
                runs.append(["simulate", piped if field.startswith("parallel") else plain,
                             "--format", "json", "--set", f"{field}={w}"])
        for args in runs:
            yield " ".join(args).replace(workdir, "W"), (
                lambda a=args: _said(a))
        # the same fields in a YAML file (the YAML reader, not --set's)
        for field, words in [("training.vocab_divisible_by", DIVISIBLE),
                             ("parallel.pipeline_schedule", SCHEDULE_WORDS),
                             ("parallel.pipeline_model_parallel_layout", LAYOUTS),
                             *OPTION_WORDS.items()]:
            for w in words:
                section, name = field.split(".")
                # the value as YAML text in a block mapping; the other sections as JSON
                # flow mappings (YAML reads them too)
                lines = []
                for sec in ("model", "parallel", "training", "cluster"):
                    if sec == section:
                        lines.append(f"{sec}:\n  {name}: {w if w.strip() else repr(w)}")
                        lines += [f"  {k}: {json.dumps(v)}" for k, v in pp4[sec].items()
                                  if k != name]
                    else:
                        lines.append(f"{sec}: {json.dumps(pp4[sec])}")
                path = Path(workdir) / f"y_{abs(hash((field, w)))}.yaml"
                path.write_text("\n".join(lines) + "\n", encoding="utf-8")
                args = ["simulate", str(path), "--format", "json"]
                yield f"yaml {field}: {w!r}", (lambda a=args: _said(a))
    return cases


# ------------------------------------------------------------------------------ hf

HF_FAMILIES = ("gemma3_text", "gemma3", "qwen3_next", "gpt_oss", "llama4_text", "llama4",
               "deepseek_v32", "deepseek_v3", "kimi_k25", "glm4_moe", "glm4_moe_lite",
               "glm_moe_dsa", "minimax_m2", "minimax", "nemotron_h", "falcon_h1",
               "granitemoehybrid", "lfm2", "lfm2_moe", "ernie4_5_moe", "hunyuan_v1_moe",
               "longcat_flash", "mimo_v2_flash", "exaone_moe", "afmoe", "olmo3", "olmo_hybrid",
               "qwen3_5_text", "apertus", "arcee", "seed_oss", "smollm3", "solar_open",
               "flex_olmo", "granitemoeshared", "jais2", "ministral3", "exaone4", "glm4",
               "ernie4_5", "olmoe", "qwen3_moe", "dots1", "mistral4", "step3p5",
               "qwen3_vl_moe_text", "glm4v_moe_text", "hunyuan_v1_dense")


def _hf_params(d: dict[str, Any]) -> int | None:
    """Parameters transformers builds for the (text) config ``d`` on the meta device (the
    causal-LM class, else the base model plus an untied head); None where it cannot."""
    import torch
    from transformers import CONFIG_MAPPING, AutoModel, AutoModelForCausalLM
    t = _text(d)
    kind = t.get("model_type") or d.get("model_type")
    try:
        hc = CONFIG_MAPPING[kind](**t)
    except Exception:  # noqa: BLE001 - a config transformers refuses: no reference count
        return None
    with contextlib.redirect_stderr(open(os.devnull, "w")), torch.device("meta"):
        for cls, head in ((AutoModelForCausalLM, False), (AutoModel, True)):
            try:
                model = cls.from_config(hc)
            except Exception:  # noqa: BLE001, S112 - the next class may build it
                continue
            n = sum(p.numel() for p in model.parameters())
            if head and not getattr(hc, "tie_word_embeddings", True):
                n += hc.vocab_size * hc.hidden_size
            return n
    return None


def _hf_edits(family: str, d: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    yield "as is", d
    t = _text(d)
    e = copy.deepcopy(d)
    _text(e)["time_step_limit"] = [0.0, math.inf]
    yield "Infinity in time_step_limit", e
    for key in ("num_attention_heads", "num_key_value_heads", "intermediate_size",
                "head_dim", "num_experts_per_tok", "sliding_window", "rope_theta"):
        if key in t:
            for v in (None, "8", 0, -1, 1.5, math.inf, [t[key]]):
                e = copy.deepcopy(d)
                _text(e)[key] = v
                yield f"{key}={v!r}", e
    if isinstance(t.get("layer_types"), list) and t["layer_types"]:
        for kind in ("conv", "mamba", "linear_attention", "chunked_attention",
                     "sliding_attention", "Full_Attention", ""):
            e = copy.deepcopy(d)
            types = _text(e)["layer_types"]
            types[len(types) // 2] = kind
            yield f"layer_types[mid]={kind!r}", e


def hf_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    from trainsim.catalog import run_config_from_dict
    from trainsim.model.counts import mtp_params, total_params

    def case(d: dict[str, Any], path: Path, check_params: bool) -> str | None:
        path.write_text(json.dumps(d))
        cfg = {"model": {"hf_config": str(path)}, "parallel": {"tp": 8,
                                                                "sequence_parallel": True},
               "training": {"global_batch_size": 16, "seq_length": 2048},
               "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                           "compute_db": None}}
        rc = run_config_from_dict(copy.deepcopy(cfg))
        if check_params:
            ours = total_params(rc.model) - mtp_params(rc.model)
            theirs = _hf_params(d)
            if theirs and abs(ours / theirs - 1) > 1e-3:
                return (f"priced with {ours / theirs - 1:+.2%} of transformers' parameters "
                        "(an architecture read as another)")
        return run_config(cfg)

    def cases() -> Iterator[Case]:
        try:
            from transformers import CONFIG_MAPPING
        except ImportError:
            return
        for family in HF_FAMILIES:
            try:
                d = _small(CONFIG_MAPPING[family]().to_dict())
            except Exception:  # noqa: BLE001, S112 - a family this transformers lacks
                continue
            for n, (name, edited) in enumerate(_hf_edits(family, d)):
                path = Path(workdir) / f"hf_{family}_{n}.json"
                yield f"hf {family} {name}", (
                    lambda e=edited, p=path, c=name == "as is": case(e, p, c))
    return cases


# ------------------------------------------------------------------------------ export

def _unusual() -> dict[str, dict[str, Any]]:
    dense, moe, mla = (copy.deepcopy(BASES[k]) for k in ("dense", "moe", "mla"))
    out: dict[str, dict[str, Any]] = {"dense": dense, "moe": moe, "mla": mla}
    one = copy.deepcopy(dense)
    one["cluster"].update(num_gpus=1, gpus_per_node=1)
    one["training"]["global_batch_size"] = 2
    out["one gpu"] = one
    dp = copy.deepcopy(moe)
    dp["model"]["num_layers"] = 8
    dp["parallel"] = {"tp": 1, "pp": 4, "ep": 2, "pipeline_schedule": "dualpipe"}
    dp["training"]["global_batch_size"] = 32
    out["moe dualpipe"] = dp
    dpv = copy.deepcopy(dp)
    dpv["parallel"].update(pipeline_schedule="dualpipe_v", vpp=2)
    out["moe dualpipe_v"] = dpv
    zb = copy.deepcopy(dense)
    zb["model"]["num_layers"] = 8
    zb["parallel"] = {"pp": 4, "pipeline_schedule": "zb_2p"}
    zb["training"]["global_batch_size"] = 16
    out["zb_2p"] = zb
    cp = copy.deepcopy(dense)
    cp["parallel"] = {"cp": 2, "tp": 2, "sequence_parallel": True}
    cp["training"]["seq_length"] = 8192
    out["cp2 tp2"] = cp
    fsdp = copy.deepcopy(dense)
    fsdp["parallel"] = {"zero_stage": 3, "data_parallel_impl": "fsdp2"}
    out["fsdp2"] = fsdp
    win = copy.deepcopy(dense)
    win["model"].update(sliding_window=128, window_attn_skip_freq=2)
    out["window"] = win
    flow = copy.deepcopy(moe)
    flow["cluster"].update(num_gpus=6, gpus_per_node=3, network_backend="flow")
    flow["parallel"] = {"ep": 2}
    flow["training"]["global_batch_size"] = 24
    out["flow uneven"] = flow
    nodes = copy.deepcopy(dense)
    nodes["cluster"].update(num_gpus=16, gpus_per_node=8)
    nodes["parallel"] = {"tp": 4, "pp": 2, "vpp": 2, "pipeline_schedule": "interleaved_zb"}
    out["interleaved_zb 2 nodes"] = nodes
    return out


def export_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for name, cfg in _unusual().items():
            path = Path(workdir) / f"x_{name.replace(' ', '_')}.json"
            path.write_text(json.dumps(cfg))
            p = str(path)
            out = str(Path(workdir) / "out")
            runs = [["export", p, "--simai", out + ".txt"],
                    ["export", p, "--chakra", out],
                    ["export", p, "--chakra", out, "--per-kernel", "--ranks", "0"],
                    ["export", p, "--chakra", out, "--ranks", "0,9999"],
                    ["export", p, "--chakra", out, "--ranks", "x"],
                    ["export", p, "--simai", out + ".txt", "--seq", "1", "--mbs", "3"],
                    ["goodput", p, "--tokens", "1B", "--trials", "5", "--format", "json"],
                    ["goodput", p, "--days", "1e-6", "--trials", "3", "--format", "json"],
                    ["sweep", p, "--vary", "cluster.nic_gbit_s_per_gpu=1:3200", "--steps", "3",
                     "--format", "json"],
                    ["sweep", p, "--vary", "training.micro_batch_size=1,2,3", "--format",
                     "json"],
                    ["sweep", p, "--vary", "parallel.pipeline_schedule=1f1b,zb_h1,dualpipe",
                     "--format", "json"]]
            for args in runs:
                yield f"{name}: " + " ".join(args[:1] + args[2:]).replace(workdir, "W"), (
                    lambda a=args: _said(a))
    return cases


# ------------------------------------------------------------------------------ http

def http_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def answered(r: Any) -> str | None:
        if r.status_code in (200, 202):
            try:
                return None if finite(r.json()) else "non-finite number in a 200 answer"
            except ValueError:
                return None  # a plot / HTML answer
        if 400 <= r.status_code < 500:
            try:
                err = r.json().get("error", "")
            except (ValueError, AttributeError):
                return f"{r.status_code} answer is not a JSON error: {r.text[:80]}"
            if not err or "\n" in str(err).strip():
                return f"{r.status_code} without one error line: {r.text[:80]}"
            REFUSED[0] += 1
            return None
        if r.status_code == 504 and "sync_timeout_s" in r.text:
            return None  # a valid body queued with no worker to run it (the harness's)
        return f"status {r.status_code}: {r.text[:80]}"

    dense = BASES["dense"]
    bodies: list[tuple[str, Any]] = [
        ("kind int", {"kind": 7, "config": dense}),
        ("kind unicode", {"kind": "ｓimulate", "config": dense}),
        ("kind list", {"kind": ["simulate"], "config": dense}),
        ("config str", {"kind": "simulate", "config": "llama3-8b"}),
        ("config list", {"kind": "simulate", "config": [dense]}),
        ("config null", {"kind": "simulate", "config": None}),
        ("options list", {"kind": "simulate", "config": dense, "options": [1]}),
        ("options str", {"kind": "simulate", "config": dense, "options": "trace"}),
        ("unknown top key", {"kind": "simulate", "config": dense, "bogus": 1}),
        ("options misspelt", {"kind": "simulate", "config": dense, "option": {"trace": True}}),
        ("no kind", {"config": dense}),
        ("empty", {}),
        ("a list", [1, 2]),
        ("a number", 5),
        ("huge int", {"kind": "simulate", "config": {**dense, "training": {
            **dense["training"], "global_batch_size": 10**400}}}),
        ("unicode model name", {"kind": "simulate", "config": {**dense, "model": {
            **dense["model"], "name": "模型-🚀-\u202e"}}}),
        ("unicode gpu", {"kind": "simulate", "config": {**dense, "cluster": {
            **dense["cluster"], "gpu": "Ｈ100"}}}),
        ("unicode key", {"kind": "simulate", "config": {**dense, "modèle": {}}}),
        ("surrogate", {"kind": "simulate", "config": {**dense, "model": {
            **dense["model"], "name": "\ud800"}}}),
        ("preset unicode", {"kind": "simulate", "config": "llama3-8ｂ"}),
        ("sweep vary huge", {"kind": "sweep", "config": dense, "options": {
            "vary": ["cluster.nvlink_gbyte_s=1:1e308"], "steps": 10**9}}),
        ("search gpus unicode", {"kind": "search", "config": {"model": dense["model"]},
                                 "options": {"gpus": "８"}}),
        ("plan tokens huge", {"kind": "plan", "config": {"model": dense["model"]},
                              "options": {"tokens": "1e400", "days": 1}}),
        ("goodput nan", {"kind": "goodput", "config": dense, "options": {"days": "NaN"}}),
        ("validate unicode csv", {"kind": "validate", "config": {}, "options": {
            "csv": "model,gpus\nллама,8\n"}}),
    ]
    raw_bodies = [("NaN literal", '{"kind": "simulate", "config": {"model": {"hidden_size": NaN}}}'),
                  ("Infinity literal", ('{"kind": "simulate", "config": {"training": '
                                        '{"global_batch_size": Infinity}}}')),
                  ("deep", '{"kind": "simulate", "config": {"model": ' + "[" * 5000
                   + "]" * 5000 + "}}"),
                  ("not json", "kind=simulate"), ("bom", "\ufeff{}"), ("empty text", ""),
                  ("latin-1", b'{"kind": "simulate", "config": {"model": {"name": "\xe9"}}}'),
                  ("huge number text", '{"kind": "simulate", "config": {"training": '
                                       '{"seq_length": 1' + "0" * 5000 + "}}}")]
    gets = ["/api/v1/jobs?limit=0", "/api/v1/jobs?limit=1e400", "/api/v1/jobs?limit=-1",
            "/api/v1/jobs?offset=99999999999999999999999", "/api/v1/jobs?limit=abc",
            "/api/v1/jobs/" + "0" * 32, "/api/v1/jobs/" + "g" * 32, "/api/v1/jobs/%00",
            "/api/v1/jobs/" + "0" * 32 + "?wait_s=nan", "/api/v1/jobs/" + "0" * 32
            + "?wait_s=1e400", "/api/v1/jobs/" + "0" * 32 + "?wait_s=-1",
            "/api/v1/jobs/ジョブ", "/api/v1/jobs/" + "0" * 32 + "/result",
            "/api/v1/jobs/" + "0" * 32 + "/plot", "/api/v1/jobs/" + "0" * 32 + "/bogus",
            "/api/v1/catalog/gpus", "/api/v1/catalog/ｇpus", "/api/v1/catalog/" + "x" * 5000,
            "/api/v1/catalog/%F0%9F%9A%80", "/api/v1/validation/files", "/api/v1/health"]

    def cases() -> Iterator[Case]:
        with contextlib.ExitStack() as stack:
            state: dict[str, Any] = {}

            def client() -> tuple[Any, dict[str, str]]:
                if not state:
                    from fastapi.testclient import TestClient

                    from trainsim.service import Settings, create_app
                    from trainsim.service.settings import Limits

                    # no workers: a valid /simulate body waits out sync_timeout_s (then 504)
                    app = create_app(Settings(db_url=f"sqlite:///{Path(workdir) / 'h.db'}",
                                              workers=0, checkers=0,
                                              limits=Limits(sync_timeout_s=0.5)),
                                     start_workers=False)
                    c = stack.enter_context(TestClient(app))
                    token = app.state.store.create_token("fuzz49")
                    state["c"] = (c, {"Authorization": f"Bearer {token}"})
                return state["c"]

            def post(path: str, body: Any, raw: bool = False, refuse: bool = False
                     ) -> str | None:
                c, headers = client()
                content = body if raw else json.dumps(body, ensure_ascii=False).encode(
                    "utf-8", "surrogatepass")
                r = c.post(path, content=content,
                           headers={**headers, "Content-Type": "application/json"})
                if refuse and r.status_code < 300:
                    return "a body's unknown key accepted in silence"
                return answered(r)

            def get(path: str) -> str | None:
                c, headers = client()
                return answered(c.get(path, headers=headers))

            for name, body in bodies:
                for path in ("/api/v1/jobs", "/api/v1/simulate"):
                    if path.endswith("simulate") and isinstance(body, dict) \
                            and body.get("kind") not in (None, "simulate"):
                        continue
                    refuse = name in ("unknown top key", "options misspelt")
                    yield f"POST {path} {name}", (
                        lambda p=path, b=body, x=refuse: post(p, b, refuse=x))
            for name, text in raw_bodies:
                yield f"POST /api/v1/jobs raw {name}", (
                    lambda t=text: post("/api/v1/jobs", t, raw=True))
            for path in gets:
                yield f"GET {path[:80]}", (lambda p=path: get(p))
    return cases


# ------------------------------------------------------------------------------ main

def main(argv: list[str] | None = None) -> int:
    return fuzz_checks.seeded_round(49, argv, lambda workdir, rng: {
        "segments": segment_cases, "flowkeys": flowkey_cases, "bigm": bigm_cases,
        "yamlset": yamlset_cases(workdir), "hf": hf_cases(workdir),
        "export": export_cases(workdir), "http": http_cases(workdir)},
                                    cpu_hang_s=None)


if __name__ == "__main__":
    fuzz_checks.run_round(main)
