"""Input robustness, twenty-third round (2026-11-26, 35th session, fuzz35): what a held-out
training file from another source holds, per the shared validation README (format v2).

- ``cells``: every README column of a dense and an MoE published row given values other
  sources write (GPU names as vendors and papers print them, framework names and versions,
  Hugging Face model ids, numbers with digit groups, units or a ``k``, precision recipes, ZeRO
  and FSDP words, contradictions, very large and small values). Each row must be predicted
  (finite) or fail alone with a one-line reason that is not "internal error"; the cells this
  round reads (``MUST_READ``) must be predicted, and those it refuses with a reason
  (``MUST_REFUSE``) refused naming it. Seeded pairs of edits follow (``--pairs``);
- ``files``: whole files as other tools write them (CRLF, a UTF-8 BOM, UTF-16 with its BOM,
  Windows-1252, ';' with decimal commas, tabs, header names with spaces, duplicate ids, a row
  whose measurement is no number); ``validate_file`` must read each and predict the rows it
  can, a bad row failing alone;
- ``commands``: ``simulate``, ``search``, ``plan`` and ``sweep`` given the same GPU names and
  model ids: a result or one error line.

    PYTHONPATH=src python benchmarks/fuzz_inputs35.py [--only cells,files,commands]
        [--pairs N] [--seed S]

prints one line per failure class (with its first input) and the counts; exit 1 on any.
``--pairs 400`` is the long variant (tests/test_fuzz35.py runs it under ``-m slow``).
"""
from __future__ import annotations

import argparse
import csv
import io
import math
import os
import random
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz_checks import Case, print_report, run_surfaces
from fuzz_sweep import _cli

from trainsim.errors import TrainsimError
from trainsim.validate import BUNDLED_DIR, PREDICT, _guarded, read_rows, validate_file

SHARED = BUNDLED_DIR  # the shared validation files as trainsim bundles them
DENSE, MOE = "bridge2511-llama3-8b-8", "bridge2511-qwen3-30b-a3b-16"
SHAPE = ["hidden_size", "num_layers", "num_attention_heads", "num_kv_heads", "head_dim",
         "ffn_hidden_size", "vocab_size", "activation", "num_experts", "moe_top_k",
         "moe_ffn_hidden_size"]

GPUS = ["H100 SXM5 80GB", "NVIDIA A100-SXM4-40GB", "H800", "H20", "A800", "L40S", "MI250X",
        "MI300X", "MI325X", "B300", "GB300 NVL72", "TPU v5p", "DGX H100", "HGX B200",
        "B200 192GB", "MI300X 192GB", "H100 80G", "A100 80GB", "GH200", "Gaudi 3", "", "h100"]
FRAMEWORKS = [("Megatron-LM", "core_r0.9.0"), ("NeMo", "2.x"), ("NeMo", "25.09"),
              ("torchtitan", ""), ("DeepSpeed", "0.14"), ("Colossal-AI", "0.4.0"),
              ("MaxText", ""), ("fms-fsdp", ""), ("OLMo", ""), ("nanotron", ""),
              ("Picotron", ""), ("NVIDIA NeMo", "25.04"), ("NVIDIA/Megatron-LM", "core_v0.12.1"),
              ("microsoft/DeepSpeed", "v0.16.0"), ("megatron-core", "0.x"), ("nemo", "dev"),
              ("megatorn-lm", "")]
MODELS = ["meta-llama/Llama-3.1-8B", "Qwen/Qwen2.5-72B", "deepseek-ai/DeepSeek-V2-Lite",
          "mistralai/Mixtral-8x7B", "deepseek-ai/DeepSeek-V3-0324", "GPT-3 (175B)",
          "meta-llama/Llama-4-Scout-17B-16E", "gpt2", "Llama 3 8B"]
CELLS: dict[str, list[str]] = {
    "dtype": ["bf16-mixed", "fp8 (delayed)", "fp8 (current scaling)", "fp8-hybrid", "16-mixed",
              "amp_bf16", "bf16_with_fp8_current_scaling_mixed", "mxfp8", "bf16-true", "fp32",
              "BF16", "nvfp4"],
    "fp8_recipe": ["delayed scaling", "Float8CurrentScaling", "block", "tensorwise", "hybrid"],
    "global_batch_size": ["1,024", "1 024", "2k", "128 sequences", "127", "1e9", "0.5"],
    "seq_length": ["8k", "8,192", "8192 tokens", "2^13", "1", "1e7"],
    "num_gpus": ["8 GPUs", "1x8", "12", "1,048,576", "0"],
    "micro_batch_size": ["3", "1 sample", "1e6"],
    "nic_gbps_per_gpu": ["400 Gb/s", "50 GB/s", "400G", "NDR", "1e-9", "3,200"],
    "measured_iteration_s": ["9070 ms", "9.07 s", "~9.07", "9,07", "n/a", "1e-200"],
    "measured_peak_memory_gib": ["70 GiB", "70 GB", "71680 MiB", "~70"],
    "zero_stage": ["ZeRO-1", "3 (FSDP)", "FSDP", "fsdp2", "hybrid_shard", "4"],
    "recompute": ["no", "yes", "activation checkpointing", "Full", "selective AC"],
    "activation": ["GeGLU", "silu", "squared-relu", "gelu_new", "swish"],
    "sequence_parallel": ["yes", "Y", "2"], "distributed_optimizer": ["TRUE", "maybe"],
    "tp": ["TP2", "2", "", "3", "1e3"], "pp": ["", "2", "64"], "cp": ["2", "16"],
    "ep": ["", "8", "1000"], "vpp": ["2", ""], "dp": ["8", "4", "3"],
    "attention": ["FlashAttention-2", "flash_attention_2", "cuDNN", "TE", "triton", "xformers"],
    "options": ["TP overlap, DP overlap", "cuda-graphs", "fsdp"],
    "memory_kind": ["max_memory_allocated", "nvidia-smi", "peak"],
    "moe_dispatcher": ["flex", "all-to-all", "DeepEP"], "cp_comm_type": ["ring", "a2a+p2p"],
    "moe_capacity_factor": ["1.0", "1,25", "inf"], "id": ["\u884c-\u03b1", "", "a,b"],
}
MUST_READ = [
    {"gpu": "H100 SXM5 80GB"}, {"gpu": "DGX H100"}, {"gpu": "B200 192GB"}, {"gpu": "H100 80G"},
    {"gpu": "MI300X 192GB"}, {"dtype": "bf16-mixed"}, {"dtype": "fp8 (current scaling)"},
    {"dtype": "fp8-hybrid"}, {"dtype": "bf16_with_fp8_current_scaling_mixed"},
    {"fp8_recipe": "Float8CurrentScaling"}, {"global_batch_size": "1,024"},
    {"seq_length": "8k"}, {"seq_length": "8192 tokens"}, {"num_gpus": "8 GPUs"},
    {"num_gpus": "1x8"}, {"nic_gbps_per_gpu": "400 Gb/s"}, {"nic_gbps_per_gpu": "50 GB/s"},
    {"measured_iteration_s": "9070 ms"}, {"measured_iteration_s": "~9.07"},
    {"measured_peak_memory_gib": "70 GiB"}, {"zero_stage": "ZeRO-1"},
    {"zero_stage": "3 (FSDP)"}, {"activation": "GeGLU"},
    {"framework": "NVIDIA NeMo", "framework_version": "25.04"},
    {"framework": "NVIDIA/Megatron-LM", "framework_version": "core_r0.9.0"},
    {"framework": "NeMo", "framework_version": "2.x"}, {"framework": "MaxText"},
    {"framework": "Colossal-AI", "framework_version": "0.4.0"}, {"dp": "8"},
    {"dp": "4", "tp": ""},
]
"""Edits of the dense row this round reads: each must be predicted."""
MUST_REFUSE = [
    ({"gpu": "TPU v5p"}, "not a GPU"), ({"gpu": "Gaudi 3"}, "not a GPU"),
    ({"global_batch_size": "2k"}, "1,000 or 1,024"), ({"recompute": "yes"}, "does not say"),
    ({"activation": "silu"}, "gated"), ({"measured_peak_memory_gib": "70 GB"}, "GiB"),
    ({"dp": "4"}, "contradicts"), ({"framework": "megatorn-lm"}, "did you mean"),
    ({"dtype": "fp8 (delayed)", "fp8_recipe": "current"}, "fp8_recipe says"),
    ({"zero_stage": "hybrid_shard"}, "dp_replicate"),
]
"""Edits of the dense row refused with a reason naming the words given."""


def base_rows() -> dict[str, dict[str, str]]:
    _, rows = read_rows(SHARED / "training_public.csv")
    return {r["id"]: r for r in rows if r["id"] in (DENSE, MOE)}


def _check(row: dict[str, str], must: str | None = None) -> str | None:
    """None where ``row`` is predicted (finite) or fails with one clean line; ``must``:
    'read' (it must be predicted) or the words its refusal must hold."""
    res = _guarded(PREDICT["training"], row)
    if res.error:
        if "internal error" in res.error or "\n" in res.error.strip():
            return "row error: " + res.error[:60]
        if must == "read":
            return "refused a cell this round reads: " + res.error[:70]
        if must and must not in res.error:
            return f"refused without saying {must!r}: " + res.error[:60]
        fuzz_checks.REFUSED[0] += 1
        return None
    if must and must != "read":
        return f"predicted what must be refused ({must!r})"
    p = res.predicted
    if not (isinstance(p, (int, float)) and math.isfinite(p) and p > 0):
        return f"prediction {p!r}"
    return None


def cell_cases(pairs: int, seed: int) -> Iterator[Case]:
    bases = base_rows()
    dense = bases[DENSE]
    edits: list[dict[str, str]] = [{"gpu": g} for g in GPUS]
    edits += [{"framework": f, "framework_version": v} for f, v in FRAMEWORKS]
    for model in MODELS:  # the name alone: shape cells emptied
        edits.append({"model": model, **dict.fromkeys(SHAPE, "")})
    edits += [{col: v} for col, values in CELLS.items() for v in values]
    for name, row in bases.items():
        for edit in edits:
            yield f"{name} {edit}", lambda r={**row, **edit}: _check(r)
    for edit in MUST_READ:
        yield f"must read {edit}", lambda r={**dense, **edit}: _check(r, "read")
    for edit, words in MUST_REFUSE:
        yield f"must refuse {edit}", lambda r={**dense, **edit}, w=words: _check(r, w)
    rng = random.Random(seed)
    for _ in range(pairs):
        a, b = rng.sample(edits, 2)
        name = rng.choice(sorted(bases))
        yield f"{name} {a} + {b}", lambda r={**bases[name], **a, **b}: _check(r)


def _file(work: Path, name: str, text: str, encoding: str = "utf-8") -> Path:
    path = work / name
    path.write_bytes(text.encode(encoding))
    return path


def _table(rows: list[dict[str, str]], sep: str = ",", newline: str = "\r\n",
           header: list[str] | None = None) -> str:
    out = io.StringIO()
    w = csv.writer(out, delimiter=sep, lineterminator=newline)
    cols = list(rows[0])
    w.writerow(header or cols)
    for r in rows:
        w.writerow([r[c] for c in cols])
    return out.getvalue()


def _read_file(path: Path, predicted: int, failed: int = 0) -> str | None:
    """None where ``validate_file`` reads ``path`` and predicts ``predicted`` rows, ``failed``
    failing alone."""
    try:
        _, results = validate_file(path, compute_db="auto")
    except TrainsimError as exc:  # the file as a whole refused: what this surface looks for
        return "file refused: " + str(exc).replace(str(path), path.name)[:70]
    got = sum(1 for r in results if r.predicted is not None)
    bad = [r for r in results if r.error]
    if any("internal error" in (r.error or "") for r in bad):
        return "internal error in a row"
    if (got, len(bad)) != (predicted, failed):
        return f"{got} predicted, {len(bad)} failed (wanted {predicted}, {failed})"
    return None


def file_cases(work: Path) -> Iterator[Case]:
    row = base_rows()[DENSE]
    two = [row, {**row, "id": "second", "gpu": "H100 SXM5 80GB", "global_batch_size": "128"}]
    semi = [{**row, "measured_iteration_s": "9,0701"}, {**row, "id": "b", "nic_gbps_per_gpu": "400,0"}]
    spaced = [c.replace("_", " ").title() if c in ("num_gpus", "global_batch_size") else c
              for c in row]
    files = {
        "crlf.csv": (_table(two), "utf-8", 2, 0),
        "bom.csv": ("\ufeff" + _table(two), "utf-8", 2, 0),
        "utf16.csv": (_table(two, "\t"), "utf-16", 2, 0),
        "utf16-comma.csv": (_table(two), "utf-16", 2, 0),
        "cp1252.csv": (_table([{**row, "note": "\u00b5s \u00a9 2024"}, two[1]]), "cp1252", 2, 0),
        "semicolon.csv": (_table(semi, ";"), "utf-8", 2, 0),
        "tab.csv": (_table(two, "\t", "\n"), "utf-8", 2, 0),
        "cr-only.csv": (_table(two, ",", "\r"), "utf-8", 2, 0),
        "spaced-header.csv": (_table(two, header=spaced), "utf-8", 2, 0),
        "duplicate-ids.csv": (_table([row, row]), "utf-8", 2, 0),
        "bad-measured.csv": (_table([row, {**row, "id": "x", "measured_iteration_s": "n/a"}]),
                             "utf-8", 1, 1),
        "odd-cells.csv": (_table([row, {**row, "id": "y", "gpu": "TPU v5p"},
                                  {**row, "id": "z", "seq_length": "8k",
                                   "measured_iteration_s": "9070 ms"}]), "utf-8", 2, 1),
    }
    for name, (text, encoding, predicted, failed) in files.items():
        path = _file(work, name, text, encoding)
        yield f"file {name}", lambda p=path, n=predicted, f=failed: _read_file(p, n, f)


SIM_CONFIG = """model: {{preset: "{model}"}}
parallel: {{tp: 1, pp: 1, recompute: full}}
training: {{global_batch_size: 8, seq_length: 2048, micro_batch_size: 1}}
cluster: {{gpu: "{gpu}", num_gpus: 8, gpus_per_node: 8}}
"""


REFUSABLE = ("TPU v5p", "gpt2", "NVIDIA A100-SXM4-40GB")
"""Command inputs that may be refused (a TPU; a model with no preset; an MoE too large for
eight 40 GB GPUs); every other one must answer."""


def _answered(args: list[str], label: str) -> str | None:
    before = fuzz_checks.REFUSED[0]
    bad = _cli(args)
    if bad is None and fuzz_checks.REFUSED[0] > before and \
            not any(word in label for word in REFUSABLE):
        return "refused an input this round reads"
    return bad


def command_cases(work: Path) -> Iterator[Case]:
    gpus = ["H100 SXM5 80GB", "NVIDIA A100-SXM4-40GB", "B200 192GB", "DGX H100", "TPU v5p",
            "MI300X", "GB300 NVL72", "H20"]
    models = ["meta-llama/Llama-3.1-8B", "Qwen/Qwen2.5-7B", "mistralai/Mixtral-8x7B",
              "deepseek-ai/DeepSeek-V2-Lite"]
    for i, (gpu, model) in enumerate(zip(gpus, models * 2)):
        cfg = work / f"sim{i}.yaml"
        cfg.write_text(SIM_CONFIG.format(model=model, gpu=gpu))
        label = f"{gpu} {model}"
        yield f"simulate {label}", lambda c=cfg, t=label: _answered(["simulate", str(c)], t)
        yield f"sweep {label}", lambda c=cfg, t=label: _answered(
            ["sweep", str(c), "--vary", "cluster.nic_gbit_s_per_gpu=200,400"], t)
    small = ["--gpus", "8", "--global-batch", "16", "--seq", "2048", "--workers", "1",
             "--tp", "1,2", "--pp", "1", "--recompute", "full", "--max-micro-batch", "1",
             "--top", "1"]
    for gpu, model in (("B200 192GB", "meta-llama/Llama-3.1-8B"), ("TPU v5p", "Qwen/Qwen2.5-7B"),
                       ("DGX H100", "Llama 3 8B"), ("H100 80G", "gpt2")):
        yield f"search {gpu} {model}", lambda g=gpu, m=model: _answered(
            ["search", m, "--gpu", g, *small], f"{g} {m}")
    for gpu in ("B200 192GB", "TPU v5p"):
        yield f"plan {gpu}", lambda g=gpu: _answered(
            ["plan", "meta-llama/Llama-3.2-1B", "--gpu", g, "--tokens", "1e9", "--days", "30",
             "--seq", "2048", "--global-batch", "64", "--max-gpus", "16", "--workers", "1",
             "--tp", "1", "--pp", "1", "--recompute", "full", "--max-micro-batch", "1"], g)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="comma-separated surfaces")
    ap.add_argument("--pairs", type=int, default=40, help="seeded pairs of cell edits")
    ap.add_argument("--seed", type=int, default=35)
    ap.add_argument("--every", action="store_true", help="list every failing input")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    work = Path(tempfile.mkdtemp(prefix="fuzz35-"))
    surfaces = {"cells": lambda: cell_cases(args.pairs, args.seed),
                "files": lambda: file_cases(work), "commands": lambda: command_cases(work)}
    fuzz_checks.TIME_LIMIT_S = 120
    out = run_surfaces(surfaces, {s for s in args.only.split(",") if s})
    return print_report(out, args.every)


if __name__ == "__main__":
    sys.exit(main())
