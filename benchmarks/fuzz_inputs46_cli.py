"""The ``hf`` and ``commands`` surfaces of benchmarks/fuzz_inputs46.py (2026-11-28, fuzz46):
Hugging Face config.json variants, and the commands' extreme flags."""
from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fuzz_checks
from fuzz_checks import Case, run_config
from fuzz_sweep import _cli

ROOT = Path(__file__).resolve().parents[1]
ROPE = [{"type": "linear", "factor": 2.0}, {"rope_type": "llama3", "factor": 8.0,
        "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
        {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096},
        {"rope_type": "yarn"}, {"type": "dynamic", "factor": 2.0},
        {"rope_type": "longrope", "short_factor": [1.0] * 64, "long_factor": [2.0] * 64},
        {"type": "su"}, {"rope_type": "mrope", "mrope_section": [16, 24, 24]}, {"type": "default"},
        {"rope_type": "bogus"}, {"type": "yarn", "factor": "x"}, {"type": "yarn", "factor": -1},
        "yarn", [], 3, {}, {"factor": 2.0}, {"type": None},
        {"rope_type": "linear", "type": "yarn", "factor": 2.0},
        {"rope_type": "YaRN", "factor": 4.0},
        {"rope_type": "Yarn"}, {"type": "LINEAR", "factor": 2.0}, {"rope_type": " yarn "}]
VALUES: dict[str, list[Any]] = {
    "architectures": [["FooForCausalLM"], [], "LlamaForCausalLM", None,
                      ["LlamaForSequenceClassification"], ["MambaForCausalLM"],
                      ["T5ForConditionalGeneration"], ["LlamaForCausalLM", "MistralForCausalLM"],
                      [3]],
    "model_type": ["foo", "", None, 3, "mamba", "t5", "bert", "LLAMA", "qwen3_next", "jamba",
                   "rwkv"],
    "hidden_size": [0, -1, 4096.5, "4096", 1e12, True, None],
    "num_key_value_heads": [0, 3, 64, None, 32], "head_dim": [0, 1, 127, None, 100000],
    "hidden_act": ["relu", "gelu_pytorch_tanh", "SiLU", "swish", None, "quick_gelu", "relu2"],
    "torch_dtype": ["float8", "int8", "float32", None, "auto"], "vocab_size": [0, 1, 2**40],
    "num_hidden_layers": [0, 10**6], "intermediate_size": [0, None],
    "tie_word_embeddings": ["yes", 2], "sliding_window": [0, -1, 10**9, 4096, "4096"],
    "max_position_embeddings": [0, -1], "text_config": [{}, {"hidden_size": 8}, 3],
    "num_experts": [0, 1, 8, -1], "rope_theta": [0, -1, "x"]}
ROPE_KINDS = ("default", "linear", "dynamic", "yarn", "longrope", "llama3", "proportional")
"""transformers 5.24.0's RoPE kinds (modeling_rope_utils.py ROPE_INIT_FUNCTIONS and 'default'),
looked up by exact name: another case of one is a KeyError when the model is built."""


def json_answer(args: list[str]) -> Callable[[str], str | None] | None:
    """Where ``args`` ask for ``--format json``: stdout must be one JSON document."""
    if "--format" not in args or args[args.index("--format") + 1] != "json":
        return None

    def check(out: str) -> str | None:
        try:
            json.loads(out)
        except ValueError:
            return "--format json answer is not JSON"
        return None
    return check


def _hf(path: str, rope: Any) -> str | None:
    cfg = {"model": {"hf_config": path}, "parallel": {},
           "training": {"global_batch_size": 8, "seq_length": 1024},
           "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "compute_db": None}}
    kind = str(rope.get("rope_type", rope.get("type", ""))) if isinstance(rope, dict) else ""
    bad = run_config(copy.deepcopy(cfg))
    if bad is None and kind not in ROPE_KINDS and kind.strip().lower() in ROPE_KINDS:
        return "rope_scaling kind transformers cannot build read as plain RoPE"
    return bad


def hf_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        base = json.loads((ROOT / "examples/hf/llama3-8b/config.json").read_text())
        made: list[tuple[str, Any]] = [(f"drop {k}", {x: v for x, v in base.items() if x != k})
                                       for k in base]
        made += [(f"rope_scaling={json.dumps(r)[:50]}", {**base, "rope_scaling": r}) for r in ROPE]
        made += [(f"{k}={v!r}", {**base, k: v}) for k, vs in VALUES.items() for v in vs]
        made += [("empty", {}), ("list", [1]), ("only model_type", {"model_type": "llama"}),
                 ("nested text_config", {"text_config": {"text_config": base}})]
        for i, (label, data) in enumerate(made):
            path = os.path.join(workdir, f"hf{i}.json")
            Path(path).write_text(json.dumps(data))
            rope = data.get("rope_scaling") if isinstance(data, dict) else None
            yield f"hf {label}", (lambda p=path, r=rope: _hf(p, r if isinstance(r, dict) else {}))
    return cases


SMALL = ["--set", "model.hidden_size=256", "--set", "model.num_layers=4", "--set",
         "model.num_attention_heads=4", "--set", "model.num_kv_heads=4", "--set",
         "model.vocab_size=1024", "--workers", "1"]
SEARCH_FLAGS = [["--top", "0"], ["--top", "-1"], ["--top", "100000"], ["--tp", ""], ["--tp", "3"],
                ["--tp", "0"], ["--tp", "-2"], ["--tp", "64"], ["--pp", "1000"],
                ["--recompute", ""],
                ["--recompute", "bogus"], ["--zero", "4"], ["--schedules", ""],
                ["--schedules", "1f1b,bogus"], ["--dispatcher", "x"], ["--max-vpp", "0"],
                ["--max-micro-batch", "0"], ["--gpus-per-node", "3"], ["--gpus-per-node", "16"],
                ["--gpus-per-node", "100000"], ["--nic-gbit-s", "0"], ["--nic-gbit-s", "inf"],
                ["--nic-gbit-s", "1e-300"], ["--pareto-slowdown", "-1"], ["--reference", "tp=3"],
                ["--reference", "bogus"], ["--gpu", "h10"], ["--gpu", "/nonexistent.yaml"],
                ["--cp", "3"], ["--ep", "2"], ["--global-batch", "1"], ["--seq", "1"],
                ["--seq", "10000000"], ["--rank-by", "layot"], ["--overlap", "serch"],
                ["--tp", "1,1,1,1"], ["--gpus", "0"], ["--gpus", "-8"], ["--gpus", "12"],
                ["--gpus", "7"], ["--gpus", "8,0"], ["--gpus", "8,,16"], ["--gpus", "65537"],
                ["--gpus", "1e3"], ["--gpus", "abc"]]
PLAN_FLAGS = [["--tokens", "0"], ["--tokens", "-1"], ["--tokens", "1e30"], ["--tokens", "15X"],
              ["--tokens", "15T", "--days", "0.0001"], ["--tokens", "1e9", "--days", "1e9"],
              ["--tokens", "1e9", "--max-gpus", "1"], ["--tokens", "1e9", "--max-gpus", "3"],
              ["--tokens", "1e9", "--price", "-1"], ["--tokens", "1e9", "--pue", "0.5"],
              ["--tokens", "1e9", "--grid", "-1"], ["--tokens", "1e9", "--gpu-idle-fraction", "2"],
              ["--tokens", "1e9", "--seq", "1"], ["--tokens", "1e9", "--gpus-per-node", "3"]]
SWEEP_FLAGS = [["--vary", "parallel.tp=0:8"], ["--vary", "parallel.tp=8:1"],
               ["--vary", "parallel.tp="],
               ["--vary", "parallel.tp=1:2", "--steps", "100000"], ["--vary", "bogus.x=1,2"],
               ["--vary", "parallel.TP=1,2"], ["--vary", "cluster.num_gpus=8,12,7"],
               ["--vary", "cluster.gpu=h100,b20"], ["--vary", "training.dtype=bf16,fp8,fp4"],
               ["--vary", "training.global_batch_size=nan:1"], ["--vary", "parallel.tp=1,2",
                                                                  "--vary", "parallel.tp=2,4"]]
GOODPUT_FLAGS = [["--tokens", "0"], ["--tokens", "1e40"], ["--gpus", "7"], ["--gpus", "100000000"],
                 ["--interval", "0"], ["--interval", "5x"], ["--trials", "100000000"],
                 ["--days", "0"],
                 ["--days", "1e9"], ["--failures", "meta-rsc"], ["--max-trial-rounds", "1"],
                 ["--seed", "99999999999999999999999"]]
COLLECTIVE_FLAGS = [["--sizes", "0:8"], ["--sizes", "8:1"], ["--sizes", "1e300:1e301"],
                    ["--gpus", "3"], ["--gpus", "100000"], ["--gpus-per-node", "3"],
                    ["--algorithm", "rign"], ["--protocol", "simpel"], ["--protocol", "ll128"],
                    ["--topology", "torus", "--gpus", "7"], ["--topology", "spine-lef"],
                    ["--op", "allreduce"], ["--backend", "flow", "--gpus", "16384"],
                    ["--backend", "flow", "--gpus", "8192"], ["--backend", "flow", "--op",
                                                              "all_to_all", "--gpus", "512"]]
CHOICES = [(["collective", "--op", "allreduce"], "all_reduce"), (["catalog", "gpu"], "gpus"),
           (["collective", "--format", "jsn"], "json"),
           (["search", "llama3-8b", "--gpus", "8", "--seq", "512", "--global-batch", "8",
             "--rank-by", "layot"], "layout")]


def _suggests(args: list[str], meant: str) -> str | None:
    from click.testing import CliRunner

    from trainsim.cli import main
    result = CliRunner().invoke(main, args)
    if f"did you mean '{meant}'?" not in result.output:
        return "a wrong choice answered without its nearest value"
    fuzz_checks.REFUSED[0] += 1
    return None


def command_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        runs: list[list[str]] = []
        search = ["search", "llama3-8b", "--global-batch", "16", "--seq", "512", *SMALL]
        for flags in SEARCH_FLAGS:
            gpus = [] if "--gpus" in flags else ["--gpus", "8"]
            runs += [search + gpus + flags + ["--format", f] for f in ("json", "table")]
        for flags in PLAN_FLAGS:
            runs += [["plan", "llama3-8b", *SMALL, "--max-gpus", "16", *flags, "--format", f]
                     for f in ("json", "table")]
        example = str(ROOT / "examples/llama3-8b-h100.yaml")
        for flags in SWEEP_FLAGS:
            runs += [["sweep", example, *flags, "--format", f] for f in ("json", "csv")]
        goodput = str(ROOT / "examples/goodput-gpt3-175b-1k.yaml")
        for flags in GOODPUT_FLAGS:
            tokens = [] if {"--tokens", "--days"} & set(flags) else ["--tokens", "1e10"]
            runs += [["goodput", goodput, *flags, *tokens, "--format", f]
                     for f in ("json", "table")]
        config = str(ROOT / "examples/llama3-8b-h100.yaml")
        for flags in [["--tp", "3"], ["--gpus", "7"], ["--ranks", "0,999"], ["--ranks", "-1"],
                      ["--seq", "1"], ["--gbs", "1"], ["--cp", "3"], ["--gpu", "h10"]]:
            runs.append(["export", config, *flags, "--simai", os.path.join(workdir, "w.txt"),
                         "--set", "model.num_layers=4"])
        for flags in COLLECTIVE_FLAGS:
            runs.append(["collective", *flags, "--format", "json"])
        for args in runs:
            yield " ".join(args), (lambda a=args: _cli(a, answer_check=json_answer(a)))
        for args, meant in CHOICES:
            yield " ".join(args), (lambda a=args, m=meant: _suggests(a, m))
    return cases
