"""Tenth input sweep (24th session, fuzz10): what the nine earlier sweeps left.

- ``api``: configs built in code (``dataclasses.replace`` on every field of every section and of
  the GPU spec of the Llama 3 8B example and fuzz_checks' MoE and MLA bases) with numbers, text, None, lists, mappings where a list, a mapping or a nested
  config goes. Oracle: one ConfigError line, or a sane, balanced result.
- ``files``: what a path can be besides a file: a named pipe nothing writes to, a pipe read by a
  reader that looks at its first bytes (``validate <(cat rows.csv)``), a folder, an empty name,
  /dev/null, /dev/zero, a line break in the name; and what a file can hold: 0.3-1 MB of YAML, alias
  bombs, BOM, CRLF, CR alone, tabs, UTF-16, Latin-1, NUL, two documents; for simulate, validate,
  goodput, sweep and a Hugging Face config.json. Oracle: one error line within the deadline, or
  a sane answer.
- ``csv``: validation files with a BOM, CRLF, quoted commas, blank lines, Latin-1 bytes, a
  header twice, a column missing, an extra column, ragged rows; and published rows with extreme
  but valid cells (1 GPU, 2^20 GPUs, seq 1, vocab 1, heads that do not divide tp). Oracle: the
  file refused in one line, or every row reported (a one-line reason, or a finite positive
  prediction and memory).
- ``hf``: config.json of the newest families (Qwen3, Qwen3-MoE, Qwen3-Next, DeepSeek-V3,
  Gemma 3, gpt-oss, GLM-4.5, Llama 3.1, Mistral, OLMo 2) with q/k-norm switches, sliding-window
  lists, rope-scaling mappings and MoE fields set to odd values. Oracle: one error line, or a
  positive parameter count; Qwen3-Next's linear-attention layers refused.
- ``service``: ``token``/``serve`` with job-store URLs that are not one, token names with line
  breaks, ``serve`` options it cannot run (in a subprocess, with a timeout: a server that starts
  is a failure, not a hang of the sweep).
- ``env``: the work limits (TRAINSIM_MAX_*) set to text, signs, NaN, other scripts' digits.

    python benchmarks/fuzz_sweep10.py [--seed 0] [--n 400] [--only api,files,csv,hf,service,env]
    python benchmarks/fuzz_sweep10.py --long      # --n 4000 and every api field x value

The default takes about a minute on a loaded 2-core machine. Prints each failure class with its
first inputs and the counts; exit 1 on any failure.
"""

from __future__ import annotations

import copy
import csv
import dataclasses
import io
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_checks import Case, chosen_cases, only_of, report_timed, surface_class, sweep_parser
from fuzz_sweep import _cli
from fuzz_sweep6 import run_cases
from fuzz_sweep9 import balanced

from trainsim.catalog import load_run_config
from trainsim.simulator import simulate

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "llama3-8b-h100.yaml"
GOODPUT = ROOT / "examples" / "goodput-gpt3-175b-1k.yaml"
VALIDATION = ROOT / "src" / "trainsim" / "data" / "validation"
TMP = Path(tempfile.mkdtemp(prefix="fuzz10-"))


def _write(name: str, body: str | bytes) -> Path:
    path = TMP / name
    path.write_bytes(body if isinstance(body, bytes) else body.encode("utf-8"))
    return path


# ------------------------------------------------------------------------------ api

API_VALUES = [0, -1, 1, 3, 2**62, 2**70, 0.5, 1e-300, math.nan, math.inf, -math.inf, "", "x",
              None, True, [], {}, ("x",), (1,), "a,b", {"a": 1}]
"""Values a caller building configs in code might pass to any field."""


def consistent(cfg, result) -> str | None:
    """``balanced`` (fuzz_sweep9) and the rates read from the time: tokens/s is the batch's
    tokens over the iteration, per GPU its share, MFU at most HFU (recompute adds FLOPs)."""
    bad = balanced(result)
    if bad:
        return bad
    tokens = cfg.training.global_batch_size * cfg.training.seq_length
    if not math.isclose(result.tokens_per_s, tokens / result.iteration_time_s, rel_tol=1e-9):
        return f"inconsistent: tokens/s {result.tokens_per_s!r}, batch over time " \
               f"{tokens / result.iteration_time_s!r}"
    out = result.to_dict()
    if not math.isclose(out["tokens_per_s_per_gpu"] * cfg.cluster.num_gpus, out["tokens_per_s"],
                        rel_tol=1e-9):
        return "inconsistent: tokens/s per GPU"
    if out["mfu"] > out["hfu"] * (1 + 1e-12):
        return f"inconsistent: mfu {out['mfu']!r} > hfu {out['hfu']!r}"
    return None


def api_cases(rng: random.Random, n: int, every: bool) -> Iterator[Case]:
    from fuzz_checks import BASES

    from trainsim.catalog import run_config_from_dict
    bases = {"llama3-8b": load_run_config(str(EXAMPLE)),
             **{k: run_config_from_dict(copy.deepcopy(BASES[k])) for k in ("moe", "mla")}}

    def one(base, section: str, name: str, value: Any) -> str | None:
        if section == "gpu":
            gpu = dataclasses.replace(base.cluster.gpu, **{name: value})
            cfg = dataclasses.replace(base, cluster=dataclasses.replace(base.cluster, gpu=gpu))
        else:
            part = dataclasses.replace(getattr(base, section), **{name: value})
            cfg = dataclasses.replace(base, **{section: part})
        return consistent(cfg, simulate(cfg))

    drawn = [(label, section, f.name, v) for label, base in bases.items()
             for section, obj in (("model", base.model), ("parallel", base.parallel),
                                  ("training", base.training), ("cluster", base.cluster),
                                  ("gpu", base.cluster.gpu))
             for f in dataclasses.fields(obj) if f.init for v in API_VALUES]
    picked = drawn if every else rng.sample(drawn, min(n, len(drawn)))
    for label, section, name, v in picked:
        yield f"api {label} {section}.{name}={v!r}", \
            lambda a=(bases[label], section, name, v): one(*a)


# ------------------------------------------------------------------------------ files

BASE_YAML = EXAMPLE.read_text()
BOMB = "".join(f"x-{c}: &{c} [{', '.join(['*' + p] * 10 if p else ['x'] * 10)}]\n"
               for p, c in zip(["", *"abcdefgh"], "abcdefghi"))
YAML_BODIES: dict[str, str | bytes] = {
    "bom": "\ufeff" + BASE_YAML, "two boms": "\ufeff\ufeff" + BASE_YAML,
    "crlf": BASE_YAML.replace("\n", "\r\n"), "cr": BASE_YAML.replace("\n", "\r"),
    "tabs": BASE_YAML.replace("  ", "\t"), "utf16": BASE_YAML.encode("utf-16"),
    "latin1": (BASE_YAML + "# caf\u00e9\n").encode("latin-1"), "nul": BASE_YAML + "\x00",
    "two documents": BASE_YAML + "---\n" + BASE_YAML, "alias bomb": BOMB + BASE_YAML,
    "self alias": "x-a: &a [*a]\n" + BASE_YAML,
    "300 KB of keys": BASE_YAML + "x-k: {" + ", ".join(f"k{i}: {i}" for i in range(30_000))
    + "}\n",
    "1 MB flow list": BASE_YAML + "x-l: [" + ",".join(["1"] * 500_000) + "]\n",
    "deep": BASE_YAML + "x-d: " + "[" * 50_000 + "]" * 50_000 + "\n",
    "empty": "", "only a comment": "# nothing\n", "a list": "- 1\n- 2\n",
}
"""Run-config files; a body over the YAML limit must be refused at once (PIPE and size)."""


def _fifo(name: str) -> Path:
    path = TMP / name
    if not path.exists():
        os.mkfifo(path)
    return path


def _timed_cli(args: list[str], within_s: float) -> str | None:
    start = time.perf_counter()
    bad = _cli(args)
    took = time.perf_counter() - start
    return bad or (f"slow: {took:.0f} s" if took > within_s else None)


def _pipe_validate() -> str | None:
    """``validate`` of a pipe that a thread writes the collectives file into."""
    import threading
    path = _fifo("rows-pipe.csv")
    text = (VALIDATION / "collectives_public.csv").read_text()

    def write() -> None:
        with open(path, "w") as f:
            f.write(text)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    from click.testing import CliRunner

    from trainsim.cli import main
    result = CliRunner().invoke(main, ["validate", str(path), "--workers", "1", "--format",
                                       "json"])
    writer.join(5)
    if result.exit_code != 0:
        return f"a pipe of rows refused: {result.output.strip()[-100:]}"
    return None if json.loads(result.stdout)["summary"]["n"] == 6 else "rows lost"


def file_cases() -> Iterator[Case]:
    from trainsim.config import safe_load
    safe_load.PIPE_WAIT_S = 0.5  # the sweep's pipes have no writer: do not wait 10 s each
    paths = {"fifo": str(_fifo("no-writer")), "folder": str(TMP), "empty name": "",
             "blank name": " ", "missing": str(TMP / "missing.yaml"), "/dev/null": "/dev/null",
             "/dev/zero": "/dev/zero", "newline in name": "a\nb"}
    # (a NUL cannot reach a command line: execve ends the argument there)
    commands = {"simulate": ["simulate", "{}", "--format", "json"],
                "validate": ["validate", "{}", "--workers", "1", "--format", "json"],
                "goodput": ["goodput", "{}", "--trials", "3", "--format", "json"],
                "sweep": ["sweep", "{}", "--vary", "parallel.tp=1,2", "--format", "json"],
                "hf": ["simulate", "{hf}", "--format", "json"],
                "gpu": ["simulate", "{gpu}", "--format", "json"],
                "compute-db": ["validate", str(VALIDATION / "collectives_public.csv"),
                               "--compute-db", "{}", "--workers", "1"]}
    for what, path in paths.items():
        for name, template in commands.items():
            if name == "hf":
                doc = "model: {hf_config: " + json.dumps(path) + "}\n"
                args = [a.replace("{hf}", str(_write(f"hf-{len(path)}.yaml", doc)))
                        for a in template]
            elif name == "gpu":
                doc = BASE_YAML.replace("gpu: h100-sxm-80gb", "gpu: " + json.dumps(path))
                args = [a.replace("{gpu}", str(_write(f"gpu-{len(path)}.yaml", doc)))
                        for a in template]
            else:
                args = [a.replace("{}", path) for a in template]
            yield f"files {name} {what}", lambda a=args: _timed_cli(a, 15)
    yield "files validate <(pipe)", _pipe_validate
    for what, body in YAML_BODIES.items():
        path = str(_write(f"body-{len(what)}.yaml", body))
        yield f"files yaml {what}", lambda p=path: _timed_cli(["simulate", p, "--format",
                                                                 "json"], 15)


# ------------------------------------------------------------------------------ csv

def _csv_text(rows: list[dict[str, str]], columns: list[str]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def _validate_file(body: str | bytes, name: str) -> str | None:
    """``validate`` of ``body``: refused in one line, or every row reported sanely."""
    from click.testing import CliRunner

    from trainsim.cli import main
    path = str(_write(name, body))
    result = CliRunner().invoke(main, ["validate", path, "--format", "json", "--workers", "1"],
                                env={"TRAINSIM_DEBUG": "1"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    if result.exit_code != 0:
        return _cli(["validate", path, "--format", "json", "--workers", "1"])
    out = json.loads(result.stdout)
    for row in out["rows"]:
        if row.get("error"):
            if "\n" in row["error"] or "internal error" in row["error"].lower():
                return f"unclear row error: {row['error'][:80]!r}"
            continue
        p, mem = row["predicted"], row.get("predicted_peak_memory_gib")
        if not (isinstance(p, (int, float)) and math.isfinite(p) and p > 0):
            return f"prediction {p!r}"
        if mem is not None and not (math.isfinite(mem) and mem > 0):
            return f"memory {mem!r}"
    if out["summary"]["failed"] != sum(1 for r in out["rows"] if r.get("error")):
        return "summary failed count differs from the rows with an error"
    return None


EXTREME = {
    "num_gpus": ["1", "1048576", "3", "7"], "gpus_per_node": ["1", "72", "3", "1048576"],
    "seq_length": ["1", "2", "3", "1048576", "1000003"], "vocab_size": ["1", "2", "3", "7"],
    "hidden_size": ["1", "2", "3", "8", "1000000"], "num_layers": ["1", "2", "3", "1001"],
    "num_attention_heads": ["1", "3", "5", "7", "1024"], "num_kv_heads": ["1", "3", "5", "7"],
    "head_dim": ["1", "3", "8", "1024"], "ffn_hidden_size": ["1", "3", "7"],
    "global_batch_size": ["1", "2", "3", "1048576"], "micro_batch_size": ["1", "3", "1048576"],
    "tp": ["1", "3", "5", "7", "16", "64"], "pp": ["1", "3", "7", "64"], "cp": ["1", "3", "8"],
    "ep": ["1", "3", "64"], "vpp": ["1", "3", "1000"],
    "nic_gbps_per_gpu": ["0.001", "1e-9", "1e6", "1"],
    "num_experts": ["1", "2", "3", "1024"], "moe_top_k": ["1", "3", "64"],
    "moe_ffn_hidden_size": ["1", "3"], "recompute_num_layers": ["1", "3", "1000"],
    "moe_capacity_factor": ["0.001", "1e-9", "1000"],
}
"""Valid but extreme cells of a published row (the shapes and sizes users fuzz first)."""


def csv_cases(rng: random.Random, n: int) -> Iterator[Case]:
    with (VALIDATION / "training_public.csv").open(encoding="utf-8") as f:
        reader = csv.DictReader(f)
        columns, rows = list(reader.fieldnames or []), list(reader)
    three = rows[:3]
    text = _csv_text(three, columns)
    bodies: dict[str, str | bytes] = {
        "bom": "\ufeff" + text, "crlf": text.replace("\n", "\r\n"),
        "blank lines": text.replace("\n", "\n\n"), "header only": text.splitlines()[0] + "\n",
        "latin1": text.replace("published", "publi\u00e9").encode("latin-1"),
        "quoted comma": _csv_text([{**r, "note": 'a, "b", c'} for r in three], columns),
        "header twice": text + text.splitlines()[0] + "\n",
        "column missing": _csv_text(three, [c for c in columns if c != "num_gpus"]),
        "extra column": _csv_text([{**r, "zzz": "1"} for r in three], [*columns, "zzz"]),
        "ragged long": text.rstrip("\n") + ",1,2,3\n", "ragged short": text + "x,y\n",
        "quote open": text + '"unterminated\n', "NUL": text + "\x00\n",
        "semicolons": text.replace(",", ";"), "tabs": text.replace(",", "\t"),
        "duplicate ids": _csv_text([three[0], three[0]], columns),
    }
    for what, body in bodies.items():
        yield f"csv {what}", lambda b=body, w=what: _validate_file(b, f"csv-{len(w)}.csv")
    for _ in range(max(1, n // 10)):
        picked = [dict(rows[i]) for i in rng.sample(range(len(rows)), 3)]
        changes = []
        for row in picked:
            for _ in range(rng.randint(1, 2)):
                column = rng.choice(list(EXTREME))
                row[column] = rng.choice(EXTREME[column])
                changes.append(f"{row['id']}.{column}={row[column]}")
        body = _csv_text(picked, columns)
        yield f"csv extreme {'; '.join(changes)}", \
            lambda b=body: _validate_file(b, "csv-extreme.csv")


# ------------------------------------------------------------------------------ hf

def _hf_bases() -> dict[str, dict]:
    llama = {"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
             "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
             "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "hidden_act": "silu",
             "max_position_embeddings": 131072, "tie_word_embeddings": False}
    qwen_moe = {"moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8,
                "decoder_sparse_step": 1, "norm_topk_prob": True}
    return {
        "llama": {**llama, "model_type": "llama", "head_dim": 128, "rope_scaling": {
            "factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
            "original_max_position_embeddings": 8192, "rope_type": "llama3"}},
        "mistral": {**llama, "model_type": "mistral", "vocab_size": 32000,
                    "sliding_window": 4096},
        "olmo2": {**llama, "model_type": "olmo2", "num_key_value_heads": 32},
        "qwen3": {**llama, "model_type": "qwen3", "hidden_size": 1024, "intermediate_size": 3072,
                  "num_hidden_layers": 28, "num_attention_heads": 16, "head_dim": 128,
                  "vocab_size": 151936, "use_sliding_window": False, "max_window_layers": 28,
                  "layer_types": ["full_attention"] * 28, "tie_word_embeddings": True},
        "qwen3_moe": {**llama, **qwen_moe, "model_type": "qwen3_moe", "hidden_size": 2048,
                      "num_hidden_layers": 48, "num_key_value_heads": 4, "head_dim": 128,
                      "vocab_size": 151936, "mlp_only_layers": []},
        "qwen3_next": {**llama, **qwen_moe, "model_type": "qwen3_next", "hidden_size": 2048,
                       "num_hidden_layers": 48, "num_attention_heads": 16,
                       "num_key_value_heads": 2, "head_dim": 256, "num_experts": 512,
                       "shared_expert_intermediate_size": 512, "vocab_size": 151936,
                       "full_attention_interval": 4, "linear_num_key_heads": 16,
                       "linear_num_value_heads": 32, "linear_conv_kernel_dim": 4},
        "deepseek_v3": {**llama, "model_type": "deepseek_v3", "hidden_size": 7168,
                        "intermediate_size": 18432, "moe_intermediate_size": 2048,
                        "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
                        "n_group": 8, "topk_group": 4, "first_k_dense_replace": 3,
                        "num_hidden_layers": 61, "num_attention_heads": 128,
                        "num_key_value_heads": 128, "q_lora_rank": 1536, "kv_lora_rank": 512,
                        "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
                        "vocab_size": 129280, "num_nextn_predict_layers": 1,
                        "rope_scaling": {"factor": 40, "type": "yarn", "beta_fast": 32}},
        "gemma3_text": {**llama, "model_type": "gemma3_text", "hidden_size": 1152,
                        "intermediate_size": 6912, "num_hidden_layers": 26,
                        "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256,
                        "vocab_size": 262144, "sliding_window": 512, "sliding_window_pattern": 6,
                        "hidden_activation": "gelu_pytorch_tanh"},
        "gpt_oss": {**llama, "model_type": "gpt_oss", "hidden_size": 2880,
                    "intermediate_size": 2880, "num_local_experts": 32, "num_experts_per_tok": 4,
                    "num_hidden_layers": 24, "num_attention_heads": 64, "head_dim": 64,
                    "vocab_size": 201088, "sliding_window": 128, "swiglu_limit": 7.0,
                    "layer_types": ["sliding_attention", "full_attention"] * 12,
                    "attention_bias": True},
        "glm4_moe": {**llama, "model_type": "glm4_moe", "intermediate_size": 10944,
                     "moe_intermediate_size": 1408, "n_routed_experts": 128,
                     "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 1,
                     "num_hidden_layers": 46, "num_attention_heads": 96, "head_dim": 128,
                     "vocab_size": 151552, "partial_rotary_factor": 0.5, "use_qk_norm": False},
    }


HF_FIELDS: dict[str, list[Any]] = {
    "sliding_window": [[4096] * 4, [None, 4096], 0, 1, -5, 4096.0, "4096"],
    "layer_types": [["sliding_attention"] * 3, [], ["full_attention", "bogus"],
                    ["linear_attention", "full_attention"] * 24, "full_attention", [0, 1]],
    "rope_scaling": [{"rope_type": "dynamic", "factor": 2.0}, {"type": "linear", "factor": 0},
                     {"rope_type": "longrope", "short_factor": [1.0]}, {"rope_type": "yarn"},
                     {"rope_type": "llama3", "factor": "x"}, {"rope_type": 5}, [], "yarn"],
    "rope_parameters": [{"rope_type": "default", "rope_theta": 10000}, {"rope_theta": -1},
                        {"rope_theta": "x"}, [], {"full_attention": {"rope_theta": 1e6}}],
    "use_qk_norm": [True, "maybe", 1, 2], "qk_norm": [True, "yes"], "norm_topk_prob": ["x"],
    "num_experts_per_tok": [0, 1000, -1, 2.5], "num_experts": [0, 1, 1_000_000, 2.5],
    "moe_intermediate_size": [0, -1, None], "decoder_sparse_step": [0, -1, 100, 2.5],
    "mlp_only_layers": [[0, 1], [100], [-1], "0", [0.5]],
    "first_k_dense_replace": [-1, 1000, 2.5], "n_group": [0, 3, 1000], "topk_group": [0, 1000],
    "head_dim": [0, 1, 7, 100000, None], "num_key_value_heads": [0, 3, 5, 1000, None],
    "num_attention_heads": [0, 3, 7, 1], "hidden_size": [1, 3, 7, 10**9],
    "num_hidden_layers": [0, 1, 10**6], "vocab_size": [0, 1, 2**40],
    "intermediate_size": [0, 1, 3], "max_position_embeddings": [0, 1, -1, 10**12],
    "partial_rotary_factor": [0, 2, -1, "x"], "attention_chunk_size": [0, -1, 1],
    "num_nextn_predict_layers": [-1, 100, 2.5], "full_attention_interval": [0, -1, 1, 100],
    "tie_word_embeddings": ["false", 2, None], "text_config": [{}, 5, {"hidden_size": 4}],
    "max_window_layers": [0, -1, 1000, 5], "sliding_window_pattern": [0, 1, -1, 2.5, 1000],
    "attn_logit_softcapping": [0, -1, math.inf], "linear_conv_kernel_dim": [4, None],
}
"""Fields of the newest families' config.json and odd values for each."""


def hf_cases(rng: random.Random, n: int) -> Iterator[Case]:
    from trainsim.catalog import model_from_hf_config
    from trainsim.catalog.hf_families import LINEAR_INTERVAL_TYPES
    from trainsim.model.counts import total_params

    def one(base: dict, field: str, value: Any) -> str | None:
        cfg = {**copy.deepcopy(base), field: value}
        if value is None:
            cfg.pop(field)
        path = _write("config.json", json.dumps(cfg))
        layers = cfg.get("layer_types")
        interval = cfg.get("full_attention_interval")
        # only a class that has the interval and widths makes linear-attention layers of them
        # (Qwen3-Next; transformers ignores the keys in a Mistral, Qwen3-MoE or DeepSeek file)
        hybrid = cfg.get("model_type") in LINEAR_INTERVAL_TYPES
        linear = hybrid and not isinstance(layers, list) and (
            interval not in (None, 1) or interval is None and cfg.get("linear_conv_kernel_dim"))
        count = total_params(model_from_hf_config(path))  # a TrainsimError: a clean refusal
        if linear:
            return "silently read: linear-attention layers (no layer_types) as softmax attention"
        if not (isinstance(count, int) and count > 0):
            return f"parameters {count!r}"
        return None

    drawn = [(name, base, field, v) for name, base in _hf_bases().items()
             for field, values in HF_FIELDS.items() for v in values]
    for name, base, field, v in rng.sample(drawn, min(n, len(drawn))):
        yield f"hf {name}.{field}={v!r}", lambda a=(base, field, v): one(*a)
    for name, base in _hf_bases().items():
        yield f"hf {name} as written", lambda b=base: one(b, "model_type", b["model_type"])


# ------------------------------------------------------------------------------ service

def _serve(args: list[str]) -> str | None:
    """``serve`` in a subprocess: refused in one line, exit 2, within 30 s (a server that
    starts is killed and reported)."""
    cmd = [sys.executable, "-m", "trainsim.cli", "serve", "--workers", "0", "--checkers", "0",
           *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    try:
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=30,
                              env=env, cwd=TMP)
    except subprocess.TimeoutExpired:
        return "served (not refused before starting)"
    lines = [ln for ln in done.stderr.splitlines() if ln.strip() and not
             ln.startswith(("warning: ", "trainsim service on"))]
    if done.returncode != 2 or len(lines) != 1 or not lines[0].startswith("error: "):
        return f"exit {done.returncode}: {done.stderr.strip()[-120:]!r}"
    return None


def service_cases() -> Iterator[Case]:
    try:
        import sqlalchemy  # noqa: F401
    except ImportError:
        return
    folder, junk = TMP / "store-folder", _write("junk.db", "not a database\n")
    folder.mkdir(exist_ok=True)
    good = f"sqlite:///{TMP / 'jobs.db'}"
    urls = ["foo://x", "SQLITE:///x.db", "sqlite:x", "sqlite://", "sqlite:///:memory:",
            "mysql://u:pw@h/x", "", " ", f"sqlite:///{folder}", f"sqlite:///{junk}",
            f"sqlite:///{junk}/x.db", "postgresql://u@127.0.0.1:1/x", "sqlite:///\x00"]
    for url in urls:
        yield f"service token list --db {url!r}", \
            lambda u=url: _cli(["token", "list", "--db", u])
    for name in ["a\nb", "\x1b[31mred", "", " ", "x" * 10_000, "\u00fcn\u00ef", "a\tb"]:
        yield f"service token create {name[:20]!r}", \
            lambda v=name: _cli(["token", "create", v, "--db", good])
    for args in (["--workers", "100000"], ["--checkers", "10000000"],
                 ["--host", "bad host", "--port", "0"], ["--host", "192.0.2.1", "--port", "0"],
                 ["--host", "", "--port", "99999"], ["--db", "foo://x", "--port", "0"],
                 ["--db", f"sqlite:///{folder}", "--port", "0"]):
        yield f"service serve {' '.join(args)}", lambda a=args: _serve(a)


# ------------------------------------------------------------------------------ env

def env_cases() -> Iterator[Case]:
    from trainsim.limits import DEFAULTS

    def one(name: str, text: str) -> str | None:
        old = os.environ.get(name)
        os.environ[name] = text
        try:
            from trainsim.limits import limit
            try:
                value = limit(name)
            except Exception as exc:  # a WorkLimitError is the refusal
                from trainsim.errors import TrainsimError
                if isinstance(exc, TrainsimError) and "\n" not in str(exc):
                    return None
                raise
            stripped = text.strip()
            if stripped and not stripped.isascii():
                return f"silently read: {name}={text!r} as {value!r}"
            if not (value > 0):
                return f"limit {value!r}"
            return None
        finally:
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old

    for name in DEFAULTS:
        for text in ["abc", "-1", "0", "nan", "inf", "1e400", "", " ", "1.5", "9" * 30,
                     "\u0661\u0660", "\uff18", "1_000", "0x10"]:
            yield f"env {name}={text!r}", lambda a=(name, text): one(*a)


# ------------------------------------------------------------------------------ driver

SURFACES = ("api", "files", "csv", "hf", "service", "env")


def cases(only: set[str], rng: random.Random, n: int, every: bool) -> Iterator[Case]:
    table = {"api": lambda: api_cases(rng, n, every), "files": file_cases,
             "csv": lambda: csv_cases(rng, n), "hf": lambda: hf_cases(rng, n),
             "service": service_cases, "env": env_cases}
    yield from chosen_cases(table, only, SURFACES)


def main(argv: list[str] | None = None) -> int:
    ap = sweep_parser(__doc__, SURFACES, 400, "drawn api fields, hf fields, csv/10")
    ap.add_argument("--long", action="store_true", help="--n 4000 and every api field x value")
    args = ap.parse_args(argv)
    only = only_of(args)
    n = max(args.n, 4000) if args.long else args.n
    start = time.perf_counter()
    failures, counts = run_cases(cases(only, random.Random(args.seed), n, args.long), surface_class)
    return report_timed(failures, counts, time.perf_counter() - start)


if __name__ == "__main__":
    sys.exit(main())
