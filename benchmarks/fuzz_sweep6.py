"""Sixth input sweep (2026-11-25, 20th session, fuzz6): how what a user *types* reaches the
config. The earlier sweeps (fuzz_sweep, fuzz_struct, fuzz_rows, fuzz_fields, fuzz_combos) ask
whether an odd value is refused or simulated sanely; this one asks whether an accepted value is
the value the user meant, with oracles that do not come from trainsim:

- ``numbers``: number spellings (YAML 1.1's base-60 ``1:30`` and octal ``010``, ``0x10``,
  ``1_024``, ``1e3``, ``+8``, ``8.0``, ``.inf``, ``yes``...) in an int, a float and a text
  field (``framework_version``), written in a YAML file, a JSON file and ``--set``: the config
  must hold what YAML 1.2 / JSON / Python read (``EXPECT``), or refuse it in one line;
- ``spellings``: each choice field given the spellings Megatron, NeMo, torchtitan and
  Hugging Face use (``bf16-mixed``, ``fp8-hybrid``, ``selective``, ``Interleaved1F1B``,
  ``bfloat16``...), upper case, padded, dashes for underscores: accepted only as a choice whose
  normalised name is the spelling's, or a documented alias (``ALIASES``); else one line;
- ``files``: config files' structure: a byte-order mark, CRLF, anchors and merge keys,
  two documents, tags, keys that are not text, sections as lists, JSON in a .yaml file;
- ``hf``: Hugging Face config.json files: Gemma 7B's parameter count (8,537,680,896; a
  gated MLP whatever ``hidden_act`` says), switches written as text (``"false"``), Gemma 2/3
  files without ``layer_types`` windowing the layers transformers' config classes do;
- ``cells``: validation rows whose cells are written differently but mean the same (`` 1 ``,
  ``1.0``, ``+1``, ``FULL``, ``Megatron-LM``): the same prediction as the row as published;
- ``terminal``: characters that are not printable (ESC sequences, CR, BEL, C1 CSI, NUL, a
  right-to-left override, a line separator, zero-width characters) in a text the report
  prints (``model.name``, a validation row's id, note, source, model, framework): never on
  stdout or stderr raw;
- ``cli``: every option of every command (click's own list, so a new option is swept too)
  with 0, -1, 1e30, nan, inf, '', full-width and Arabic-Indic digits, text, ``2**8``;
- ``api``: ``trainsim.simulate`` given what is not a RunConfig, ``Result.to_dict`` through
  ``json.dumps(allow_nan=False)``, the resolved config read back equal and simulated equal;
- ``extreme``: valid but extreme runs (1 GPU, 2^20 GPUs, seq 1 and 2^20, vocab 1, one layer,
  pp = layers, mb = gbs, ep = experts, top-k = experts, one kv head, odd head_dim, hidden 1).

    python benchmarks/fuzz_sweep6.py [--seed 0] [--n 3] [--only numbers,cli,...] [--every]

``--n`` values per CLI option (``--every``: the whole battery, and search/plan/export/
capture/profile too); prints each failure class with its first input and the counts; exit 1
on any failure. Spellings a field takes as another word are listed as "review", not failures.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import copy
import csv
import io
import json
import os
import pickle
import random
import re
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_checks import REFUSED, outcome, sane_result, seeded_sample
from fuzz_sweep import _cli

from trainsim import Result, run_config_from_dict, simulate
from trainsim.catalog import load_run_config
from trainsim.errors import TrainsimError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "llama3-8b-h100.yaml"
VALIDATION = ROOT / "src" / "trainsim" / "data" / "validation"
RUN = {"model": "llama3-8b", "parallel": {"tp": 2},
       "training": {"global_batch_size": 128, "seq_length": 8192,
                    "framework": "megatron-core"},
       "cluster": {"node": "dgx-h100", "num_gpus": 8}}
REFUSE = "refuse"

# ------------------------------------------------------------------------------ numbers

EXPECT: dict[str, Any] = {
    "8192": 8192, "+8192": 8192, "8192.0": 8192, "8.192e3": 8192, "8.192e+3": 8192,
    "8_192": 8192, "0x2000": 8192, "0b10000000000000": REFUSE, "0o20000": 8192, "020000": 20000,
    "2:16:32": REFUSE, "2:16:32.0": REFUSE, "1:30": REFUSE, "0": REFUSE, "-8192": REFUSE,
    ".inf": REFUSE, "-.inf": REFUSE, ".nan": REFUSE, "NaN": REFUSE, "yes": REFUSE, "on": REFUSE,
    "8192.5": REFUSE, "1e400": REFUSE, "8k": REFUSE, "[8192]": REFUSE, "{a: 1}": REFUSE,
    "'8192'": 8192, "' 8192 '": 8192, "\uff18\uff11\uff19\uff12": REFUSE,
    "\u0668\u0661\u0669\u0662": REFUSE,
}
"""seq_length as written -> what YAML 1.2 / Python read (020000: 20,000 in YAML 1.2 and
JSON-ish reading, never 8,192 as YAML 1.1's octal; a refusal is as good as the right value
where the oracle is a number; REFUSE: only a refusal is right: YAML 1.1's binary 0b..., which
YAML 1.2 reads as text, and digits of other scripts, which Python's float reads but no config
means)."""
VERSIONS = ["0.10", "0.12", "0.9", "24.10", "25.02", "24.07", "2024.10", "1.10", "0.100",
            "'0.10'", "r0.10.0", "core_r0.10.0", "v0.10", "2025-02", "2025-02-30", "0.10.0"]
"""framework_version as written: the config must hold the text (without YAML quotes), or
refuse it in one line."""


def _read_back(cfg, field: str) -> Any:
    section, name = field.split(".")
    return getattr(getattr(cfg, section), name)


def number_cases() -> Iterator[tuple[str, Callable[[], str | None]]]:
    def check(how: str, text: str, field: str, want: Any) -> str | None:
        data = copy.deepcopy(RUN)
        if how == "set":
            cfg = load_run_config(_write(data, "run.yaml"), [f"{field}={text}"])
        else:
            section, name = field.split(".")
            data[section].pop(name, None)
            body = yaml_text(data).replace(f"{section}:\n", f"{section}:\n  {name}: {text}\n", 1)
            if how == "json":
                try:
                    parsed = json.loads(text)
                except ValueError:
                    return None  # not JSON: the YAML file covers it
                data[section][name] = "@@"
                body = json.dumps(data).replace('"@@"', text)  # the number as written
                want = want if not isinstance(parsed, str) else text.strip('"')
            cfg = load_run_config(_write_text(body, f"run.{'json' if how == 'json' else 'yaml'}"))
        got = _read_back(cfg, field)
        if want == REFUSE:
            return f"accepted {field}={text!r} ({how}) as {got!r}"
        if got != want:
            return f"silently changed: {field}={text!r} ({how}) read as {got!r}, not {want!r}"
        return None

    for text, want in EXPECT.items():
        for how in ("yaml", "json", "set"):
            yield f"numbers {how} seq_length={text!r}", \
                (lambda t=text, w=want, h=how: check(h, t, "training.seq_length", w))
    for text in VERSIONS:
        want = text.strip("'")
        for how in ("yaml", "json", "set"):
            yield f"numbers {how} framework_version={text!r}", \
                (lambda t=text, w=want, h=how: check(h, t, "training.framework_version", w))
        yield f"numbers vary framework_version={text!r}", (lambda w=want: vary(w))


def vary(text: str) -> str | None:
    """``sweep --vary training.framework_version=TEXT,...``: the point's value as written."""
    from trainsim.search.whatif import Vary

    got = str(Vary.parse(f"training.framework_version={text},0.12").values[0])
    return None if got == text else f"silently changed: framework_version={text!r} (vary) " \
        f"read as {got!r}"


def yaml_text(data: dict) -> str:
    """``data`` as block YAML, one section a block (json.dumps of each value is flow YAML)."""
    lines = []
    for section, value in data.items():
        if isinstance(value, dict):
            lines.append(f"{section}:")
            lines += [f"  {k}: {json.dumps(v)}" for k, v in value.items()]
        else:
            lines.append(f"{section}: {json.dumps(value)}")
    return "\n".join(lines) + "\n"


_TMP = Path(tempfile.mkdtemp(prefix="fuzz6-"))


def _write_text(body: str | bytes, name: str) -> Path:
    path = _TMP / name
    path.write_bytes(body if isinstance(body, bytes) else body.encode("utf-8"))
    return path


def _write(data: dict, name: str) -> Path:
    return _write_text(yaml_text(data), name)


# ------------------------------------------------------------------------------ spellings

SPELLINGS = {
    "training.dtype": ["bf16-mixed", "bf16_mixed", "16-mixed", "bfloat16", "float16", "fp8-hybrid",
                       "fp8_hybrid", "hybrid", "e4m3", "fp32", "32", "BF16", " bf16 ", "Bf16"],
    "training.grad_reduce_dtype": ["float32", "bfloat16", "FP32", "fp32 ", "torch.float32"],
    "training.fp8_recipe": ["tensorwise", "rowwise", "delayed_scaling", "DelayedScaling",
                            "Float8CurrentScaling", "MXFP8BlockScaling", "mxfp8", "block"],
    "training.attention": ["flash_attention_2", "FlashAttention2", "flash-attn", "te", "fused",
                           "sdpa", "SDPA", "flex_attention", "eager", "cudnn", "flash"],
    "parallel.recompute": ["selective", "Selective", "uniform", "block", "full ", "off", "None",
                           "true", "op"],
    "parallel.pipeline_schedule": ["1F1B", "Interleaved1F1B", "InterleavedZeroBubble",
                                   "ZBVZeroBubble", "GPipe", "DualPipeV", "interleaved-1f1b",
                                   "zero_bubble", "zbv", "1f1b_interleaved"],
    "parallel.data_parallel_impl": ["FSDP", "fsdp", "FSDP2", "hsdp", "ddp", "DDP", "deepspeed",
                                    "zero", "megatron_fsdp"],
    "training.framework": ["Megatron-LM", "megatron_lm", "MegatronLM", "NeMo", "nemo2",
                           "Megatron Bridge", "torchtitan", "TorchTitan", "Megatron-DeepSpeed",
                           "DeepSpeed", "llm-foundry", "llmfoundry", "composer", "mcore"],
    "model.activation": ["SwiGLU", "silu", "swish", "gelu_new", "geglu", "GELU", "relu"],
}
ALIASES = {
    ("training.attention", "eager"): "unfused", ("training.attention", "flash"): "flash2",
    ("parallel.data_parallel_impl", "fsdp"): "fsdp1",
    ("training.framework", "mcore"): "megatron-core",
    ("training.framework", "llmfoundry"): "llm-foundry",
    ("training.framework", "composer"): "llm-foundry",
    ("training.framework", "megatronlm"): "megatron-lm",
    ("parallel.pipeline_schedule", "zbvzerobubble"): "zb_v",  # torchtitan's class names
    ("parallel.pipeline_schedule", "interleavedzerobubble"): "interleaved_zb",
}
"""Spellings a field takes as another word, documented where the field is (the choice lists,
catalog.frameworks' aliases). Others are listed for review."""
REVIEW: list[str] = []


def _norm(text: Any) -> str:
    return re.sub(r"[\s_\-.]", "", str(text).lower())


def spelling_cases() -> Iterator[tuple[str, Callable[[], str | None]]]:
    def check(field: str, text: str) -> str | None:
        pipelined = ["parallel.pp=2"] if field == "parallel.pipeline_schedule" else []
        cfg = load_run_config(_write(RUN, "run.yaml"), [*pipelined, f"{field}={text}"])
        if field == "training.grad_reduce_dtype":  # read into grad_reduce_in_fp32
            got = "fp32" if cfg.training.grad_reduce_in_fp32 else "bf16 or fp16"
        else:
            got = _read_back(cfg, field)
        alias = ALIASES.get((field, _norm(text)), ALIASES.get((field, text.strip().lower())))
        if _norm(got) == _norm(text) or (alias is not None and alias == got):
            return None
        REVIEW.append(f"{field}={text!r} -> {got!r}")
        return None

    for field, texts in SPELLINGS.items():
        for text in texts:
            yield f"spellings {field}={text!r}", (lambda f=field, t=text: check(f, t))


# ------------------------------------------------------------------------------ files

def file_cases() -> Iterator[tuple[str, Callable[[], str | None]]]:
    ok = yaml_text(RUN)
    plain_json = json.dumps(RUN)
    bodies = {
        "bom.yaml": b"\xef\xbb\xbf" + ok.encode(), "bom.json": b"\xef\xbb\xbf" + plain_json.encode(),
        "crlf.yaml": ok.replace("\n", "\r\n"), "cr.yaml": ok.replace("\n", "\r"),
        "json_in.yaml": plain_json, "yaml_in.json": ok, "tabs.yaml": ok.replace("  ", "\t"),
        "anchor.yaml": ok.replace("training:\n", "training: &t\n") + "x: *t\n",
        "merge.yaml": "base: &b {global_batch_size: 128, seq_length: 8192}\n" + ok,
        "merge_in.yaml": ok.replace("training:\n", "training:\n  <<: {seq_length: 4096}\n"),
        "merge_list.yaml": ok.replace("training:\n", "training:\n  <<: [{micro_batch_size: 2}, "
                                                     "{micro_batch_size: 4}]\n"),
        "two_docs.yaml": ok + "---\n" + ok, "doc_end.yaml": ok + "...\n",
        "doc_start.yaml": "---\n" + ok, "tag_float.yaml": ok.replace('"tp": 2', "tp: !!float 2"),
        "tag_str.yaml": ok.replace("num_gpus: 8", "num_gpus: !!str 8"),
        "tag_custom.yaml": ok.replace("num_gpus: 8", "num_gpus: !gpus 8"),
        "int_key.yaml": ok + "parallel2: {1: 2}\n", "bool_key.yaml": ok.replace("tp:", "yes:"),
        "null_value.yaml": ok.replace("parallel:\n  tp: 2", "parallel:"),
        "section_list.yaml": ok.replace("parallel:\n  tp: 2", "parallel: [tp, 2]"),
        "section_text.yaml": ok.replace("parallel:\n  tp: 2", "parallel: tp=2"),
        "model_list.yaml": ok.replace('model: "llama3-8b"', "model: [llama3-8b]"),
        "upper_section.yaml": ok.replace("parallel:", "Parallel:"),
        "utf16.yaml": ok.encode("utf-16"), "latin1.yaml": (ok + "# caf\xe9\n").encode("latin-1"),
        "nul.yaml": ok + "\x00\n", "long_line.yaml": ok + "# " + "x" * 100_000 + "\n",
        "empty.yaml": "", "comment.yaml": "# nothing\n", "null.yaml": "null\n", "list.yaml": "- 1\n",
        "scalar.yaml": "llama3-8b\n", "deep.yaml": "a: " + "[" * 200 + "]" * 200 + "\n",
    }
    reference = load_run_config(_write_text(ok, "reference.yaml"))
    same = {"bom.yaml", "bom.json", "crlf.yaml", "cr.yaml", "json_in.yaml", "doc_end.yaml",
            "doc_start.yaml", "tag_float.yaml", "tag_str.yaml", "long_line.yaml",
            "merge_in.yaml"}
    fields = {"merge_list.yaml": ("training.micro_batch_size", 2)}  # the first map wins
    for name, body in bodies.items():
        def run(n=name, b=body) -> str | None:
            try:
                cfg = load_run_config(_write_text(b, n))
            except TrainsimError as exc:
                if n in same or n in fields:
                    return f"refused a valid file: {n}: {exc}"
                raise
            if n in same and cfg != reference:
                return f"silently changed: {n} reads another config than {ok!r}"
            if n in fields and _read_back(cfg, fields[n][0]) != fields[n][1]:
                return f"silently changed: {n} {fields[n][0]} is {_read_back(cfg, fields[n][0])}"
            return sane_result(simulate(cfg))
        yield f"files {name}", run


# ------------------------------------------------------------------------------ cells

CELLS = {"tp": [" 2 ", "2.0", "+2", "02", "2e0"], "framework": [" megatron-lm ",
         "Megatron-LM", "MEGATRON-LM", "megatron_lm"], "recompute": ["FULL", " full", "Full"],
         "dtype": ["BF16", " bf16 "], "gpu": ["A100-SXM-80GB", " a100-sxm-80gb "],
         "sequence_parallel": [" 1 ", "1.0", "true", "True"], "num_gpus": ["64.0", "6.4e1"],
         "options": ["fused_kernels;", " fused_kernels ", ";fused_kernels"],
         "measured_iteration_s": [" 3.697 ", "3.6970", "+3.697"]}
"""Cells of one published row (megatron21-t1-3.6B, and the cells it leaves as published where
a variant would change its meaning) written as the same value differently. Full-width '\uff12'
left this list in fuzz8 (21st session): a cell reads ASCII digits only, as a config does since
fixin; fuzz_sweep8's ``cells`` surface checks that it is refused."""


def cell_cases() -> Iterator[tuple[str, Callable[[], str | None]]]:
    src = VALIDATION / "training_public.csv"
    rows = list(csv.DictReader(io.StringIO(src.read_text(encoding="utf-8"), newline="")))
    row = next(r for r in rows if r["id"] == "megatron21-t1-3.6B")
    row = {**row, "dtype": "bf16", "sequence_parallel": "1", "options": "fused_kernels",
           "framework_version": "2023-01", "recompute": "full"}
    cols = list(rows[0])

    def predict(r: dict) -> tuple[Any, Any]:
        s = io.StringIO()
        w = csv.DictWriter(s, cols, lineterminator="\n")
        w.writeheader()
        w.writerow(r)
        path = _write_text(s.getvalue(), "row.csv")
        from trainsim.validate import validate_file
        got = validate_file(str(path), workers=1)[1][0].to_dict()
        return got.get("predicted"), got.get("measured"), got.get("error")

    base: list[Any] = []

    def check(col: str, text: str) -> str | None:
        if not base:
            base.append(predict(row))
        got = predict({**row, col: text})
        if got != base[0]:
            return f"silently changed: cell {col}={text!r} predicts {got}, as published {base[0]}"
        return None

    for col, texts in CELLS.items():
        for text in texts:
            yield f"cells {col}={text!r}", (lambda c=col, t=text: check(c, t))


# ------------------------------------------------------------------------------ hf

GEMMA_7B = {"architectures": ["GemmaForCausalLM"], "head_dim": 256, "hidden_act": "gelu",
            "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 3072,
            "intermediate_size": 24576, "max_position_embeddings": 8192, "model_type": "gemma",
            "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 16,
            "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "vocab_size": 256000}
"""google/gemma-7b's config.json (the fields trainsim reads): 8,537,680,896 parameters (the
Gemma report's 8.54B; the keras-hub gemma_7b_en preset; catalog/models/gemma-7b.yaml)."""
HF_SWITCHES = {"tie_word_embeddings": "tied_embeddings", "attention_bias": "qkv_bias"}
"""config.json switches and the model field each sets: Gemma's ``attention_bias`` biases q/k/v
and o_proj, never its MLP (``GemmaMLP`` bias=False), so it reads as ``qkv_bias``."""


def hf_cases() -> Iterator[tuple[str, Callable[[], str | None]]]:
    from trainsim.catalog import model_from_hf_config
    from trainsim.model.counts import total_params

    def params(cfg: dict, want: int) -> str | None:
        got = total_params(model_from_hf_config(_write_text(json.dumps(cfg), "config.json")))
        return None if got == want else f"silently changed: parameters {got:,}, not {want:,}"

    yield "hf gemma-7b", lambda: params(GEMMA_7B, 8_537_680_896)

    def windows(cfg: dict, period: int) -> str | None:
        # the layer_types transformers' config class fills in where the file lists none
        # (Gemma2Config, Gemma3TextConfig: sliding where (i + 1) % period, else full)
        listed = {**cfg, "layer_types": ["sliding_attention" if (i + 1) % period else
                                         "full_attention" for i in range(cfg["num_hidden_layers"])]}
        got, want = (model_from_hf_config(_write_text(json.dumps(c), "config.json"))
                     for c in (cfg, listed))
        return None if got == want else (f"silently changed: {cfg['model_type']} without "
                                         f"layer_types reads window_attn_skip_freq "
                                         f"{got.window_attn_skip_freq}, transformers "
                                         f"{want.window_attn_skip_freq}")
    gemma2 = {**GEMMA_7B, "model_type": "gemma2", "sliding_window": 4096, "num_hidden_layers": 42}
    for extra, period in (({}, 2), ({"sliding_window_pattern": 6}, 2)):
        yield f"hf gemma2 windows {extra}", lambda e=extra, p=period: windows({**gemma2, **e}, p)
    for extra, period in (({}, 6), ({"sliding_window_pattern": 6}, 6),
                          ({"sliding_window_pattern": 4}, 4)):
        yield f"hf gemma3_text windows {extra}", \
            lambda e=extra, p=period: windows({**gemma2, "model_type": "gemma3_text", **e}, p)
    for key, field in HF_SWITCHES.items():
        for text, want in (("false", False), ("true", True), ("False", False), (0, False),
                           (1, True), ("no", False), ("on", True), ("", None), ("maybe", None)):
            def switch(k=key, f=field, t=text, w=want) -> str | None:
                path = _write_text(json.dumps({**GEMMA_7B, k: t}), "config.json")
                got = getattr(model_from_hf_config(path), f)
                if w is None:
                    return f"accepted {k}={t!r} as {got!r}"
                return None if got == w else f"silently changed: {k}={t!r} read as {got!r}"
            yield f"hf {key}={text!r}", switch


# ------------------------------------------------------------------------------ terminal

CONTROLS = ["\x1b[31mRED\x1b[0m", "a\nb", "a\rb", "bell\x07", "\x9b2J", "tab\there", "\x00",
            "evil\u202egnp.exe\u2028line2", "zero\u200bwidth\ufeff"]
"""Not printable (``str.isprintable``): C0/C1 controls, a right-to-left override and a line
separator (Unicode Cf, Zl: they reorder or break the printed line), zero-width characters."""


def _raw_controls(text: str) -> list[str]:
    return sorted({c for c in text if not c.isprintable() and c != "\n"})


def terminal_cases() -> Iterator[tuple[str, Callable[[], str | None]]]:
    """A control character in a text the report prints (a model name, a validation row's id
    or note) must not reach the terminal raw: refused, or printed as its escape."""
    from click.testing import CliRunner

    from trainsim.cli import main

    def table(args: list[str]) -> str | None:
        r = CliRunner().invoke(main, args, env={"TRAINSIM_DEBUG": "1"})
        if r.exception is not None and not isinstance(r.exception, SystemExit):
            raise r.exception
        raw = _raw_controls(r.stdout) + _raw_controls(r.stderr)
        return f"raw control characters {raw!r} printed" if raw else None

    src = VALIDATION / "training_public.csv"
    rows = list(csv.DictReader(io.StringIO(src.read_text(encoding="utf-8"), newline="")))
    for text in CONTROLS:
        yield f"terminal model.name={text!r}", \
            (lambda t=text: table(["simulate", str(EXAMPLE), "--set", f"model.name={t}"]))
        for col in ("id", "note", "source", "model", "framework"):
            s = io.StringIO()
            w = csv.DictWriter(s, list(rows[0]), lineterminator="\n")
            w.writeheader()
            w.writerow({**rows[0], col: rows[0][col] + text})
            path = _write_text(s.getvalue(), f"ctl-{col}.csv")
            yield f"terminal validate {col}={text!r}", \
                (lambda p=path: table(["validate", str(p), "--workers", "1"]))


# ------------------------------------------------------------------------------ cli

BATTERY = ["0", "-1", "1e30", "nan", "inf", "", " ", "\uff18", "\u0668", "x", "2**8", "1.5",
           "-0", "9" * 40, "\x00", "a\nb"]
BASES: dict[str, list[str]] = {
    "simulate": ["simulate", str(EXAMPLE)],
    "validate": ["validate", str(VALIDATION / "collectives_public.csv"), "--workers", "1"],
    "sweep": ["sweep", str(EXAMPLE), "--vary", "parallel.tp=1,2"],
    "goodput": ["goodput", str(ROOT / "examples" / "goodput-gpt3-175b-1k.yaml"), "--trials", "3"],
    "catalog": ["catalog", "gpus"],
    "collective": ["collective", "--sizes", "8:64"],
    "search": ["search", "llama3-8b", "--gpus", "8", "--global-batch", "16", "--seq", "2048",
               "--workers", "1", "--tp", "2", "--pp", "1", "--recompute", "none", "--zero", "1",
               "--overlap", "on", "--max-micro-batch", "1"],
    "plan": ["plan", "llama3-8b", "--tokens", "1B", "--days", "10", "--workers", "1", "--tp",
             "2", "--pp", "1", "--recompute", "none", "--zero", "1", "--overlap", "on",
             "--max-micro-batch", "1", "--max-gpus", "16"],
    "export": ["export", str(EXAMPLE), "--simai", str(_TMP / "w.txt")],
}
SLOW = {"search", "plan", "export"}
SKIP = {"serve", "token", "capture", "profile"}
"""serve starts a server; token writes the service's store; capture and profile need torch
(their no-torch line is checked by fuzz_combos)."""
PATHS = {"--trace", "--plot", "--out", "--chakra", "--simai"}


def cli_cases(rng: random.Random, n: int, every: bool) -> Iterator[tuple[str, Callable]]:
    from trainsim.cli import main

    for name in sorted(main.commands):
        if name in SKIP or name not in BASES or (name in SLOW and not every):
            continue
        for param in main.commands[name].params:
            opts = [o for o in param.opts if o.startswith("--")]
            if not opts or param.is_flag or opts[0] in ("--help",) or param.hidden:
                continue
            opt = opts[0]
            values = BATTERY if every else rng.sample(BATTERY, min(n, len(BATTERY)))
            if opt in PATHS:
                values = [str(_TMP / "no" / "such" / "dir" / "f"), str(_TMP), "/dev/full", ""]
            for v in values:
                args = BASES[name] + [opt, v] + (["--format", "json"] if opt != "--format"
                                                 and name != "export" else [])
                yield f"cli {name} {opt} {v!r}", (lambda a=args: _cli(a))


# ------------------------------------------------------------------------------ api

def api_cases() -> Iterator[tuple[str, Callable[[], str | None]]]:
    def not_a_config(value: Any) -> str | None:
        simulate(value)
        return f"simulate({type(value).__name__}) accepted"

    for value in (None, 1, "examples/llama3-8b-h100.yaml", {"model": "llama3-8b"}, [], b"x"):
        yield f"api simulate({value!r})", (lambda v=value: not_a_config(v))

    def round_trip(data: dict) -> str | None:
        cfg = run_config_from_dict(copy.deepcopy(data))
        result = simulate(cfg)
        text = json.dumps(result.to_dict(), allow_nan=False)
        again = run_config_from_dict(json.loads(text)["config"])
        if again != cfg:
            return "config read back from to_dict differs"
        if simulate(again).to_dict() != result.to_dict():
            return "config read back simulates differently"
        if not isinstance(pickle.loads(pickle.dumps(result)), Result):
            return "result does not pickle"
        return sane_result(result)

    for name, data in extreme_runs().items():
        yield f"api round-trip {name}", (lambda d=data: round_trip(d))


# ------------------------------------------------------------------------------ extreme

def extreme_runs() -> dict[str, dict]:
    def run(model=None, parallel=None, training=None, cluster=None) -> dict:
        return {"model": {"hidden_size": 1024, "num_layers": 8, "num_attention_heads": 8,
                          "vocab_size": 32000, **(model or {})},
                "parallel": dict(parallel or {}),
                "training": {"global_batch_size": 64, "seq_length": 2048, **(training or {})},
                "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                            **(cluster or {})}}
    one = {"num_gpus": 1, "gpus_per_node": 1}
    moe = {"num_experts": 8, "moe_router_topk": 2}
    return {
        "1 gpu": run(cluster=one), "2^20 gpus": run(training={"global_batch_size": 2**20},
                                                   cluster={"num_gpus": 2**20}),
        "seq 1": run(training={"seq_length": 1}),
        "seq 2^20": run(training={"seq_length": 2**20, "global_batch_size": 8}),
        "seq 2^20 cp 8": run(parallel={"cp": 8}, training={"seq_length": 2**20,
                                                          "global_batch_size": 1}),
        "vocab 1": run(model={"vocab_size": 1}), "one layer": run(model={"num_layers": 1}),
        "pp = layers": run(parallel={"pp": 8}),
        "pp = layers, vpp 2": run(model={"num_layers": 16}, parallel={"pp": 8, "vpp": 2}),
        "mb = gbs": run(training={"micro_batch_size": 64, "global_batch_size": 64}, cluster=one),
        "ep = experts": run(model=moe, parallel={"ep": 8}),
        "top-k = experts": run(model={**moe, "moe_router_topk": 8}, parallel={"ep": 8}),
        "one expert": run(model={"num_experts": 1, "moe_router_topk": 1}),
        "kv heads 1": run(model={"num_kv_heads": 1}),
        "kv heads 1, tp 8": run(model={"num_kv_heads": 1}, parallel={"tp": 8}),
        "head_dim 67": run(model={"head_dim": 67}), "heads 1": run(model={"num_attention_heads": 1}),
        "hidden 1": run(model={"hidden_size": 1, "num_attention_heads": 1}),
        "hidden 1001, 7 heads": run(model={"hidden_size": 1001, "num_attention_heads": 7}),
        "ffn 1": run(model={"ffn_hidden_size": 1}), "1000 layers": run(model={"num_layers": 1000}),
        "72 a node": run(training={"global_batch_size": 72},
                         cluster={"num_gpus": 72, "gpus_per_node": 72}),
        "1 a node": run(cluster={"gpus_per_node": 1}),
        "fp8 on 1 gpu": run(training={"dtype": "fp8"}, cluster=one),
        "zero3 on 1 gpu": run(parallel={"zero_stage": 3, "data_parallel_impl": "deepspeed"},
                              cluster=one),
        "window 1": run(model={"sliding_window": 1}),
    }


def extreme_cases() -> Iterator[tuple[str, Callable[[], str | None]]]:
    for name, data in extreme_runs().items():
        yield f"extreme {name}", (lambda d=data: sane_result(simulate(run_config_from_dict(
            copy.deepcopy(d)))))


# ------------------------------------------------------------------------------ main

SURFACES = ["numbers", "spellings", "files", "hf", "cells", "terminal", "api", "extreme",
            "cli"]


def cases(only: set[str], rng: random.Random, n: int, every: bool,
          limit: int = 0) -> Iterator[tuple[str, Any]]:
    """Each chosen surface's inputs; with ``limit`` > 0 a seeded sample of at most that many per
    surface (the tests' fast run; 0, the default, runs them all)."""
    makers = {"numbers": number_cases, "spellings": spelling_cases, "files": file_cases,
              "hf": hf_cases, "cells": cell_cases, "terminal": terminal_cases, "api": api_cases,
              "extreme": extreme_cases,
              "cli": lambda: cli_cases(rng, n, every)}
    for name in SURFACES:
        if not only or name in only:
            made = seeded_sample(makers[name](), limit, rng)
            yield from made


def run_cases(labelled: Iterator[tuple[str, Callable[[], object]]],
              failure_class: Callable[[str, str], str],
              ) -> tuple[dict[str, list[str]], collections.Counter]:
    """Run each (label, thunk) quietly; per failure class (``failure_class(surface, what)``, the
    surface being the label's first word), the labels that failed, and the inputs per surface."""
    failures: dict[str, list[str]] = collections.defaultdict(list)
    counts: collections.Counter = collections.Counter()
    with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, thunk in labelled:
            surface = label.split()[0]
            counts[surface] += 1
            bad = outcome(thunk)
            if bad:
                failures[failure_class(surface, bad)].append(f"{label}: {bad}")
    return failures, counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=3, help="values per CLI option")
    ap.add_argument("--every", action="store_true")
    ap.add_argument("--only", default="", help=",".join(SURFACES))
    ap.add_argument("--limit", type=int, default=0,
                    help="at most this many seeded inputs per surface (0: all)")
    args = ap.parse_args(argv)
    only = {w for w in args.only.split(",") if w}

    def failure_class(surface: str, bad: str) -> str:
        if bad.startswith(("silently", "accepted")):
            return bad.split("=")[0]
        return re.sub(r"\d+(\.\d+)?", "N", bad.split(":")[0] + ": " + surface)

    failures, counts = run_cases(cases(only, random.Random(args.seed), args.n, args.every, args.limit),
                                 failure_class)
    for cls, labels in sorted(failures.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(labels):5d}  {cls}")
        for label in (labels if args.every else labels[:1]):
            print(f"       {label}")
    for line in REVIEW:
        print(f"review  {line}")
    total = sum(counts.values())
    print(f"inputs {total} ({', '.join(f'{k} {v}' for k, v in counts.items())}); refused in "
          f"one line {REFUSED[0]}; failure classes {len(failures)}; spellings to review "
          f"{len(REVIEW)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
