"""Input robustness of the hybrid / latent-MoE / Super surfaces, 2026-11-28 (51st session,
fuzzhyb51): inputs the 51st session added and no fuzz round had covered.

- ``fields``: ``model.hybrid_layer_pattern``, the six Mamba fields, ``moe_latent_size``,
  ``mtp_num_layers`` and ``position_embedding`` of a small hybrid model (Mamba, attention, MLP
  and latent-MoE layers) given every value of ``fuzz_checks.battery`` for their type (0,
  negative, 2**53, floats, bools, strings, lists, NaN / inf);
- ``patterns``: layer patterns of odd lengths, symbols, separators ('/' anywhere, doubled,
  trailing), whitespace and unicode look-alikes, with and without experts and MTP depths;
- ``parallel``: random parallel settings (tp, pp, vpp, ep, etp, cp, sp, recompute kinds and
  modules, schedules, fp8 recipes, offload, CUDA graphs, dispatchers) over the small hybrid
  models and the presets nemotron-h-8b, nemotron-3-nano-30b-a3b, nemotron-3-super-120b-a12b;
- ``hfjson``: damaged nemotron_h config.json files (each read field given wrong-typed or
  extreme values, ``num_nextn_predict_layers`` / ``mtp_hybrid_override_pattern`` included);
- ``cli``: ``search``, ``plan`` and ``export`` on hybrid presets with small budgets, ``export``
  with ``--set`` of each hybrid field, and damaged config.json files through ``export`` and
  ``search``;
- ``search``: ``search`` and ``plan`` on the five hybrid presets with random TP / PP / CP / VPP
  / schedule / dispatcher / ZeRO / EP / ETP / recompute / dtype / GPU option sets.

Each input must give a sane answer or one ``TrainsimError`` line (``fuzz_checks.outcome``); a
hang is judged by CPU (30 CPU s; 300 s wall a backstop) and any input over 10 CPU s is its own
class.

    PYTHONPATH=src python benchmarks/fuzz_hybrid51.py [--only fields,patterns,parallel,hfjson,cli,
        search]
        [--count N] [--seed S] [--every] [--progress] [--refusals]
"""
from __future__ import annotations

import json
import math
import os
import random
import sys
from collections.abc import Callable, Iterator
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz_checks import Case, battery, run_config

fuzz_checks.TIME_LIMIT_S = 300

CLUSTER = {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8, "compute_db": None}
HYBRID = {"model": {"hidden_size": 256, "num_layers": 8, "num_attention_heads": 4,
                    "num_kv_heads": 2, "vocab_size": 1024, "ffn_hidden_size": 512,
                    "position_embedding": "none", "activation": "gelu",
                    "normalization": "rmsnorm", "hybrid_layer_pattern": "M-M*M-M*",
                    "mamba_num_heads": 8, "mamba_head_dim": 64, "mamba_num_groups": 2,
                    "mamba_state_dim": 64},
          "parallel": {},
          "training": {"global_batch_size": 16, "seq_length": 512},
          "cluster": CLUSTER}
LATENT = json.loads(json.dumps(HYBRID))
LATENT["model"].update(hybrid_layer_pattern="MEM*MEM*/*E", mtp_num_layers=1, num_experts=8,
                       moe_router_topk=2, moe_ffn_hidden_size=256, moe_latent_size=128,
                       moe_shared_expert_intermediate_size=256)
LATENT["parallel"] = {"tp": 2, "ep": 2, "sequence_parallel": True}
SMALL = {"hybrid": HYBRID, "latent": LATENT}
PRESETS = ["nemotron-h-8b", "nemotron-3-nano-30b-a3b", "nemotron-3-super-120b-a12b"]
FIELDS = {"hybrid_layer_pattern": str, "mamba_num_heads": int, "mamba_head_dim": int,
          "mamba_state_dim": int, "mamba_num_groups": int, "mamba_conv_kernel": int,
          "mamba_chunk_size": int, "moe_latent_size": int, "mtp_num_layers": int,
          "position_embedding": str}
HF = {"model_type": "nemotron_h", "hybrid_override_pattern": "M-M*MEM*", "hidden_size": 256,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1024,
      "intermediate_size": 512, "mamba_num_heads": 8, "mamba_head_dim": 64, "n_groups": 2,
      "ssm_state_size": 64, "n_routed_experts": 8, "num_experts_per_tok": 2,
      "moe_intermediate_size": 256, "moe_shared_expert_intermediate_size": 256}
HF_KEYS = sorted(set(HF) | {"num_nextn_predict_layers", "mtp_hybrid_override_pattern",
                            "moe_latent_size", "layers_block_type", "conv_kernel", "chunk_size",
                            "tie_word_embeddings", "attention_bias", "mlp_bias", "n_group",
                            "use_conv_bias", "sliding_window", "use_bias", "_name_or_path",
                            "attention_dropout", "hidden_dropout", "max_position_embeddings",
                            "mamba_n_groups", "mamba_d_conv", "mamba_chunk_size"})
HF_VALUES = [0, -1, 1, 2, 2**53, 1.5, True, False, "2", "M*", "", [], ["mlp"], {}, None,
             math.nan, math.inf, "x" * 300]
PATTERNS = ["", "M", "*", "-", "E", "/", "M/", "/M", "M//*", "M/*/", "M-M*/", "M-M*//",
            "m-m*", "M -M*", "M\n-M*", "M\u2212M*", "M\u2217", "MMMMMMMM", "********",
            "--------", "EEEEEEEE", "M-M*M-M*/*", "M-M*M-M*/*/*", "M-M*M-M*/M", "M-M*M-M*/E",
            "M-M*M-M*M", "M-M*", "M" * 100_001, "\u00b5-M*M-M*", "M-M*M-M*\x00", "M|M*M-M*",
            "M-M*M-M* ", "M-M*M-M*/ "]


def fields_cases(rng: random.Random) -> Iterator[Case]:
    """Each hybrid field, each base, every battery value."""
    for base_name, base in SMALL.items():
        for name, tp in FIELDS.items():
            for value in battery(tp) + ([0, -1, 2**53, 1.5, True, "8", math.nan] if tp is str
                                        else []):
                cfg = json.loads(json.dumps(base))
                cfg["model"][name] = value
                yield f"{base_name} model.{name}={value!r}"[:160], _sim(cfg)


def patterns_cases(rng: random.Random) -> Iterator[Case]:
    for base_name, base in SMALL.items():
        for pattern in PATTERNS:
            for mtp in (None, 0, 1, 2):
                cfg = json.loads(json.dumps(base))
                cfg["model"]["hybrid_layer_pattern"] = pattern
                if mtp is not None:
                    cfg["model"]["mtp_num_layers"] = mtp
                if len(pattern.split("/")[0]) and len(pattern) < 1000:
                    cfg["model"]["num_layers"] = len(pattern.split("/")[0])
                yield f"{base_name} pattern={pattern[:40]!r} mtp={mtp}", _sim(cfg)


def _sim(cfg: dict) -> Callable[[], str | None]:
    return lambda: run_config(cfg)


PARALLEL_DRAWS: dict[str, list[Any]] = {
    "tp": [1, 2, 4, 8, 3], "pp": [1, 2, 4, 3], "vpp": [None, 2, 3], "ep": [1, 2, 4, 8],
    "etp": [None, 1, 2], "cp": [1, 2, 4], "sequence_parallel": [True, False],
    "recompute": ["none", "selective", "full"],
    "recompute_modules": [None, ["core_attn"], ["mlp"], ["moe_act"], ["layernorm"], ["moe"]],
    "pipeline_schedule": [None, "1f1b", "interleaved_1f1b", "dualpipe", "zb_v", "zb_h1",
                          "gpipe"],
    "cp_comm_type": [None, "p2p", "a2a", "all_gather"],
    "moe_token_dispatcher_type": [None, "alltoall", "allgather", "flex"],
    "cpu_offloading_num_layers": [None, 0, 1, 2], "recompute_num_layers": [None, 1, 2],
    "moe_shared_expert_overlap": [None, True], "moe_overlap_ep_comm": [None, True],
    "zero_stage": [None, 0, 1, 2, 3]}
TRAINING_DRAWS: dict[str, list[Any]] = {
    "dtype": ["bf16", "fp8", "fp16"], "fp8_recipe": [None, "delayed", "current",
                                                     "blockwise", "mxfp8"],
    "cuda_graphs": [None, True, False],
    "cuda_graph_scope": [None, ["full_iteration"], ["attn"], ["mamba"], ["moe_router"],
                         ["mlp", "moe"]],
    "framework": [None, "megatron-core", "nemo", "deepspeed", "torchtitan"],
    "micro_batch_size": [1, 2], "seq_length": [512, 4096, 8192]}


def parallel_cases(rng: random.Random) -> Iterator[Case]:
    """Random parallel / training settings over the small hybrids and the presets."""
    bases = [("hybrid", HYBRID), ("latent", LATENT)] + [
        (p, {"model": p, "parallel": {}, "training": {"global_batch_size": 64,
                                                      "seq_length": 4096},
             "cluster": dict(CLUSTER, num_gpus=64)}) for p in PRESETS]
    for i in range(1500):
        name, base = bases[i % len(bases)]
        cfg = json.loads(json.dumps(base))
        for section, draws in (("parallel", PARALLEL_DRAWS), ("training", TRAINING_DRAWS)):
            for key, values in draws.items():
                if rng.random() < 0.25:
                    value = rng.choice(values)
                    if value is not None:
                        cfg[section][key] = value
        label = f"{name} " + json.dumps({k: cfg[k] for k in ("parallel", "training")})
        yield label, _sim(cfg)


def hfjson_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases(rng: random.Random) -> Iterator[Case]:
        for key in HF_KEYS:
            for value in HF_VALUES:
                cfg = dict(HF, **{key: value})
                if key == "num_nextn_predict_layers":
                    cfg["mtp_hybrid_override_pattern"] = "*E"
                if key == "mtp_hybrid_override_pattern":
                    cfg["num_nextn_predict_layers"] = 1
                yield f"config.json {key}={value!r}"[:160], _hf(workdir, cfg)
        for text in ["", "{", "[]", "null", '{"model_type": "nemotron_h"}',
                     '{"model_type": ["nemotron_h"]}', ('{"model_type": "nemotron_h", '
                     '"hybrid_override_pattern": "M*", "hidden_size": NaN}')]:
            yield f"config.json text {text[:40]!r}", _hf_text(workdir, text)
    return cases


def _hf(workdir: str, cfg: dict) -> Callable[[], str | None]:
    return _hf_text(workdir, json.dumps(cfg))


def _hf_text(workdir: str, text: str) -> Callable[[], str | None]:
    def thunk() -> str | None:
        from trainsim.catalog.hf_config import model_from_hf_config
        path = os.path.join(workdir, "config.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        model = model_from_hf_config(path)
        cfg = json.loads(json.dumps(HYBRID))
        cfg["model"] = _model_dict(model)
        return run_config(cfg)
    return thunk


def _model_dict(model: Any) -> dict:
    import dataclasses
    return {f.name: getattr(model, f.name) for f in dataclasses.fields(model)
            if getattr(model, f.name) != f.default}


SETS = [("hybrid_layer_pattern", "M/"), ("hybrid_layer_pattern", "''"),
        ("hybrid_layer_pattern", "[M]"), ("mamba_num_heads", "0"), ("mamba_head_dim", "1e3"),
        ("mamba_state_dim", "2**53"), ("mamba_num_groups", "-1"), ("mamba_conv_kernel", "nan"),
        ("mamba_chunk_size", "9007199254740992"), ("moe_latent_size", "0"),
        ("moe_latent_size", "true"), ("position_embedding", "rope"),
        ("mtp_num_layers", "1e9")]


def cli_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases(rng: random.Random) -> Iterator[Case]:
        from fuzz51 import _errors, _invoke
        for preset in PRESETS:
            run = os.path.join(workdir, f"{preset}.yaml")
            with open(run, "w", encoding="utf-8") as f:
                json.dump({"model": preset, "training": {"global_batch_size": 16,
                                                         "seq_length": 1024},
                           "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16,
                                       "gpus_per_node": 8}}, f)
            runs = [["search", preset, "--gpus", "64", "--global-batch", "64", "--seq", "4096",
                     "--tp", "2,4", "--pp", "1,2",
                     "--max-micro-batch", "1", "--recompute", "selective", "--overlap", "on",
                     "--top", "1"],
                    ["search", preset, "--gpus", "16", "--global-batch", "16", "--seq", "4096",
                     "--tp", "8", "--pp", "2", "--ep", "8",
                     "--cp", "2", "--max-micro-batch", "1", "--recompute", "full",
                     "--overlap", "off", "--top", "1", "--dtype", "fp8"],
                    ["plan", preset, "--tokens", "1B", "--days", "30", "--max-gpus", "64",
                     "--tp", "4", "--pp", "1,2", "--recompute", "selective",
                     "--max-micro-batch", "1", "--overlap", "on"],
                    ["export", run, "--gpus", "16", "--tp", "2", "--sp", "--set", "parallel.pp=2",
                     "--gbs", "16", "--seq", "1024", "--simai", os.path.join(workdir, "trace.txt")],
                    ["export", run, "--gpus", "16", "--tp", "4", "--sp", "--ep", "2",
                     "--gbs", "16", "--seq", "2048", "--chakra", os.path.join(workdir, "tr2"),
                     "--ranks", "0,8"]]
            for args in runs:
                yield " ".join(args), _cli(args, _invoke, _errors)
            for field, value in SETS:
                args = ["export", run, "--gpus", "8", "--gbs", "8", "--seq", "1024",
                        "--set", f"model.{field}={value}", "--simai",
                        os.path.join(workdir, "t3.txt")]
                yield " ".join(args), _cli(args, _invoke, _errors)
        hf = os.path.join(workdir, "hf")
        os.makedirs(hf, exist_ok=True)
        for depths in (2**53, "2", 1.5, -1, 10**6):
            with open(os.path.join(hf, f"c{depths}.json"), "w", encoding="utf-8") as f:
                json.dump(dict(HF, num_nextn_predict_layers=depths,
                               mtp_hybrid_override_pattern="*E"), f)
            for cmd in (["export", os.path.join(hf, f"c{depths}.json"), "--gpus", "8", "--simai",
                         os.path.join(workdir, "t4.txt")],
                        ["search", os.path.join(hf, f"c{depths}.json"), "--gpus", "8",
                         "--global-batch", "8", "--seq", "1024", "--top", "1",
                         "--max-micro-batch", "1", "--overlap", "on"]):
                yield " ".join(cmd), _cli(cmd, _invoke, _errors)
    return cases


SEARCH_PRESETS = ["nemotron-h-8b", "nemotron-h-47b", "nemotron-h-56b", *PRESETS[1:]]
SEARCH_OPTIONS = {"--tp": ["1,2,4,8", "3", "16"], "--pp": ["1,2,4", "3,5"], "--cp": ["1,2", "2"],
                  "--max-vpp": ["1", "4"], "--schedules": ["1f1b,interleaved_1f1b", "dualpipe",
                                                           "zb_v,zb_h1", "gpipe"],
                  "--dispatcher": ["alltoall,allgather", "deepep", "hybridep"],
                  "--zero": ["0,1", "3", "2"], "--ep": ["1,8", "64"], "--etp": ["1,2"],
                  "--recompute": ["none", "full", "selective"], "--dtype": ["fp8", "fp16"],
                  "--gpu": ["b200", "gb200", "a100-sxm-80gb"]}


def search_cases(rng: random.Random) -> Iterator[Case]:
    """``search`` / ``plan`` on every hybrid preset with random small option sets."""
    from fuzz51 import _errors, _invoke
    for i in range(80):
        preset = SEARCH_PRESETS[i % len(SEARCH_PRESETS)]
        if i % 4 == 3:
            args = ["plan", preset, "--tokens", "10B", "--days", "30", "--max-gpus",
                    rng.choice(["16", "256"]), "--max-micro-batch", "1", "--overlap", "on",
                    "--workers", "1"]
        else:
            args = ["search", preset, "--gpus", rng.choice(["8", "64", "256"]),
                    "--global-batch", rng.choice(["64", "256"]), "--seq",
                    rng.choice(["4096", "8192"]), "--top", "1", "--max-micro-batch", "1",
                    "--overlap", "on", "--workers", "1"]
        for option, values in SEARCH_OPTIONS.items():
            if rng.random() < 0.3:
                args += [option, rng.choice(values)]
        yield " ".join(args), _cli(args, _invoke, _errors)


def _cli(args: list[str], invoke: Callable, errors: Callable) -> Callable[[], str | None]:
    def thunk() -> str | None:
        result = invoke(args)
        lines = errors(result)
        if result.exit_code == 0:
            return None
        if args[0] == "plan" and result.exit_code == 1 and len(lines) == 1 and \
                lines[0].startswith("no plan: no GPU count up to"):
            return None  # plan's answer: no count meets the deadline, one stderr line (robust52)
        if result.exit_code == 2 and any("option" in ln.lower() for ln in lines):
            return "usage error (the harness's own arguments)"
        if len(lines) != 1:
            return f"exit {result.exit_code} with {len(lines)} error lines"
        fuzz_checks.REFUSED[0] += 1
        return None
    return thunk


def main(argv: list[str] | None = None) -> int:
    return fuzz_checks.seeded_round(51, argv, lambda workdir, rng: {
        k: (lambda f=f: f(rng)) for k, f in {
            "fields": fields_cases, "patterns": patterns_cases, "parallel": parallel_cases,
            "hfjson": hfjson_cases(workdir), "cli": cli_cases(workdir),
            "search": search_cases}.items()})


if __name__ == "__main__":
    fuzz_checks.run_round(main)
