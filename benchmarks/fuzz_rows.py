"""Cell fuzzing of training-validation rows and of the newest run fields (2026-11-25, robust
session): a sibling of fuzz_struct.py (which breaks a CSV's *structure*) and fuzz_sweep.py
(which walks config *fields*). This one writes odd *cells* into rows the validator tunes:

- ``rows``: a small dense, MoE and pipelined row (the model given by its shape columns, so a
  row tunes in well under a second) or a published row (training_public.csv,
  training_heldout.csv) with 1-3 cells replaced from a battery per column: empty
  tp/pp (the layouts the validator tunes, ``validate.layouts``), pipeline_layout strings, the
  vocabulary's synonyms (``validate.vocab``: attention and kernel-library names, framework
  spellings, fp8 recipes, cp_comm_type), MoE columns, memory_kind, numbers written oddly ('8.0',
  ' 8 ', '1e3', negative, NaN, inf, huge), unknown GPU names. Each row is predicted alone
  (``validate._guarded``): it must give a finite prediction or an error that is one clear line
  (never "internal error", a bare Python message, or a run over the time limit);
- ``files``: the same rows written to a CSV (with odd bytes: not UTF-8, NUL, a BOM, columns
  dropped) and run through ``trainsim validate``: exit 0 or one ``error:`` line;
- ``yaml``: ``trainsim simulate`` of a small config with the newest fields given odd values
  (parallel.delay_wgrad_compute, moe_overlap_ep_comm, cluster.nics_per_gpu, ep beyond the
  experts, vpp not dividing the layers, cp with an odd sequence) as ``--set`` text;
- ``combo``: small runs with the newest mechanisms in random combinations (``COMBO``);
- ``cli``: search/plan/sweep with tiny or absurd arguments.

    python benchmarks/fuzz_rows.py [--seed 0] [--n 300] [--only rows,combo,kernels,files,yaml,cli]

prints one line per failure class (with its first input) and the counts; exit 1 on any failure.
"""
from __future__ import annotations

import argparse
import csv
import functools
import io
import math
import os
import random
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_checks import print_report, run_surfaces
from fuzz_sweep import _cli

from trainsim.validate import _guarded, predict_training_row

COUNT = ["", " ", " 8 ", "8.0", "1e3", "2e0", "-1", "0", "0.5", "nan", "inf", "-inf", "1e400",
         "99999999999", "0x10", "1_000", "\u0668", "x", "8 GPUs", "1,5", "\u00a08"]
BOOL = ["", "0", "1", "true", "True", "yes", "no", "maybe", "2", "-1", "on", "off", "nan"]
CELLS: dict[str, list[str]] = {
    "tp": ["", "", "1", "2", "4", "8", "3", *COUNT], "pp": ["", "", "1", "2", "4", "3", *COUNT],
    "cp": ["", "1", "2", "3", *COUNT], "ep": ["", "1", "2", "4", "8", "16", "3", *COUNT],
    "vpp": ["", "1", "2", "3", "4", *COUNT],
    "num_gpus": ["1", "2", "3", "8", "16", "4096", *COUNT],
    "gpus_per_node": ["", "1", "4", "8", "72", "3", *COUNT],
    "global_batch_size": ["1", "3", "8", "16", *COUNT],
    "micro_batch_size": ["", "1", "2", "3", *COUNT],
    "seq_length": ["1", "2", "255", "256", "4097", *COUNT],
    "num_layers": ["1", "2", "3", "7", "8", *COUNT],
    "hidden_size": ["", "1", "255", "256", *COUNT],
    "num_attention_heads": ["", "1", "3", "4", *COUNT],
    "num_kv_heads": ["", "1", "2", "3", "4", "8", *COUNT],
    "head_dim": ["", "1", "64", "63", *COUNT],
    "ffn_hidden_size": ["", "1", "512", "513", *COUNT],
    "vocab_size": ["", "1", "1023", "1024", *COUNT],
    "num_experts": ["", "1", "2", "3", "8", "64", *COUNT],
    "moe_top_k": ["", "1", "2", "8", "9", *COUNT],
    "moe_ffn_hidden_size": ["", "1", "256", *COUNT],
    "recompute_num_layers": ["", "1", "2", "9", *COUNT],
    "nic_gbps_per_gpu": ["", "400", "0", "-1", "nan", "inf", "1e400", "x", "1e-300", " 400 "],
    "moe_capacity_factor": ["", "1", "1.25", "0", "-1", "nan", "inf", "x", "1e400", "1e-9"],
    "sequence_parallel": BOOL, "distributed_optimizer": BOOL,
    "zero_stage": ["", "0", "1", "2", "3", "4", "-1", "x", "1.0", "nan"],
    "recompute": ["", "none", "selective", "full", "Full", "FULL", "block", "x",
                  "selective:core_attn", "selective:mlp;moe_act", "selective:", "full:2"],
    "recompute_modules": ["", "core_attn", "mla_up_proj;mlp", "moe_act", "layernorm;moe_act",
                          "moe", "x", ";;", "mlp;mlp", "core_attn,mlp", " mlp "],
    "pipeline_layout": ["", "Et|(tt|)*2tL", "Et|tt|tt|tL", "E|t*2|L", "Et*8L", "Ett|ttL",
                        "(tt|)*4", "Et|(tt|)*3tL", "first:1,last:1", "first:0,last:0",
                        "first:5,last:5", "first:-1", "first:x", "last:", "first:1,first:2",
                        "balanced", "front_loaded", "|", "||", "(", ")", "E", "L", "t*1e9",
                        "Et|(tt|)*99999999tL", "(t|)*-1", "x", "Et|mm|tL", "E|L",
                        "Et|(tt|)*0tL", "Et | tt | ttL", "et|tt|ttl"],
    "attention": ["", "flash", "Flash", "FLASH2", "flash2", "flash3", "fa2", "fa3", "cudnn",
                  "te", "transformer_engine", "flashinfer", "ck", "triton", "torch", "deepep",
                  "hipkittens", "sdpa", "eager", "unfused", "flex", "xformers", "vllm",
                  "thunderkittens", "flash_attention_2", "mem_efficient", "x", "Flash Attention"],
    "framework": ["", "megatron-lm", "megatron-core", "Megatron-LM", "Megatron-Core", "nemo",
                  "NeMo", "megatron-bridge", "mlperf-nemo", "torchtitan", "deepspeed",
                  "megatron-deepspeed", "llm-foundry", "megascale", "bogus", "MEGATRON",
                  "megatron", "mcore", "automodel", "[/]", "[bold]x"],
    "framework_version": ["", "0.8", "26.04", "2024-01", "x", "99.99", "1e3", "-1", "0",
                          "core_v0.16.0", "v0.12", "25.11", "2021-04"],
    "dtype": ["bf16", "fp16", "fp8", "BF16", "FP8", "fp32", "x", "", "mxfp8", "fp4",
              "bfloat16", "float16"],
    "fp8_recipe": ["", "delayed", "current", "mxfp8", "tensorwise", "blockwise", "x",
                   "DELAYED", "nvfp4", "subchannel", "per_tensor"],
    "cp_comm_type": ["", "p2p", "a2a", "all_gather", "allgather", "a2a+p2p", "ring", "x",
                     "p2p;a2a", "P2P", "ulysses"],
    "moe_dispatcher": ["", "alltoall", "allgather", "deepep", "flex", "hybridep", "x",
                       "all_to_all", "AllToAll"],
    "memory_kind": ["", "allocated", "reserved", "device", "x", "DEVICE", "peak"],
    "grad_reduce_dtype": ["", "fp32", "bf16", "fp16", "x", "FP32", "float32"],
    "activation": ["", "gelu", "swiglu", "relu", "x", "squared_relu", "SwiGLU", "geglu"],
    "options": ["", "tp_overlap", "tp_overlap;pp_overlap;dp_overlap", "x", ";", " ; ",
                "tp_overlap;tp_overlap", "ep_overlap", "cuda_graphs", "compile", "lamb",
                "sliding_window", "parallel_block", "fake_balanced_gate", "fused_kernels",
                "launch_blocking", "dp_overlap;x"],
    "gpu": ["h100-sxm-80gb", "a100-sxm-80gb", "b200", "gb200", "H100", "h100", "mi300x",
            "x", "h100-sxm-80gb ", "H100-SXM-80GB", "a100-sxm-40gb", "h200", "v100"],
    "model": ["tiny", "llama3-8b", "mixtral-8x7b", "", "x", "gpt-1.7b", "deepseek-v3", "[/]"],
    "id": ["r", "", "[/]", "[red]r", "a\u00e9", "r" * 300],
    "measured_iteration_s": ["0.1", "1", "1e-3"],
    "measured_peak_memory_gib": ["", "1", "10"],
}

TINY = {"id": "r", "model": "tiny", "hidden_size": "256", "num_layers": "4",
        "num_attention_heads": "4", "vocab_size": "1024", "gpu": "h100-sxm-80gb",
        "num_gpus": "8", "gpus_per_node": "8", "tp": "1", "pp": "1", "global_batch_size": "16",
        "seq_length": "256", "measured_iteration_s": "0.1"}
BASES = {
    "dense": TINY,
    "dense-mcore": {**TINY, "framework": "megatron-core", "framework_version": "0.8",
                    "dtype": "bf16"},
    "blank-layout": {**TINY, "tp": "", "pp": "", "num_gpus": "16", "num_layers": "8",
                     "framework": "megatron-lm"},
    "moe": {**TINY, "num_experts": "8", "moe_top_k": "2", "moe_ffn_hidden_size": "256",
            "ep": "2", "tp": "2", "framework": "megatron-bridge", "framework_version": "25.11"},
    "pipe": {**TINY, "num_layers": "8", "pp": "2", "vpp": "2", "num_gpus": "16",
             "framework": "nemo", "framework_version": "24.07", "dtype": "fp8",
             "fp8_recipe": "delayed"},
}


TRAINING_FILES = [Path(__file__).resolve().parents[1] / "src/trainsim/data/validation/"
                  "training_public.csv", Path(__file__).resolve().parent / "training_heldout.csv"]


@functools.cache
def published_rows() -> list[dict[str, str]]:
    """The published training rows (bundled public file, held-out file): every framework's
    profile, MoE, MLA and fp8 rows, as bases beside the small ones."""
    from trainsim.validate import read_rows

    return [r for f in TRAINING_FILES if f.exists() for r in read_rows(f)[1]]


def mutated_row(rng: random.Random) -> tuple[str, dict[str, str]]:
    if rng.random() < 0.5:
        row = dict(rng.choice(published_rows()))
        name = row["id"]
    else:
        name = rng.choice(sorted(BASES))
        row = dict(BASES[name])
    changes = []
    for _ in range(rng.randint(1, 3)):
        col = rng.choice(sorted(CELLS))
        row[col] = rng.choice(CELLS[col])
        changes.append(f"{col}={row[col]!r}")
    return f"{name} " + " ".join(changes), row


UNCLEAR = ("invalid literal", "could not convert", "object has no attribute",
           "unsupported operand", "NoneType", "not subscriptable", "object is not", "division by zero",
           "list index", "math domain", "positional argument", "takes no arguments",
           "takes exactly", "unhashable")
"""Python's own wording of a bug surfacing as a message ("f() takes 2 positional arguments but
3 were given"; not a sentence that merely says what a release takes)."""


def _row(row: dict[str, str], predict: Callable | None = None) -> str | None:
    res = _guarded(predict or functools.partial(predict_training_row, compute_db=None), row)
    if res.error is not None:
        if res.error.startswith("internal error"):
            return res.error.split(" (a trainsim bug")[0][:90]
        if "\n" in res.error.strip() or len(res.error) < 12 or res.error[0] in "'\"" or \
                any(u in res.error for u in UNCLEAR):
            return f"unclear error: {res.error[:80]}"
        return None
    if not (res.predicted is not None and math.isfinite(res.predicted) and res.predicted > 0):
        return f"prediction {res.predicted!r}"
    if res.predicted_memory_gib is not None and not math.isfinite(res.predicted_memory_gib):
        return f"memory {res.predicted_memory_gib!r}"
    return None


def row_cases(rng: random.Random, workdir: Path, n: int) -> Iterator[tuple[str, Callable]]:
    for _ in range(n):
        label, row = mutated_row(rng)
        yield label, (lambda r=row: _row(r))


def _write(rows: list[dict[str, str]], columns: list[str]) -> str:
    out = io.StringIO()
    w = csv.DictWriter(out, columns, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return out.getvalue()


BYTES = [b"\xff\xfe", b"\x00", b"\xe9", b"\xc3\x28", "\ufeff".encode(), b"\r", b"\x1a",
         "\u2028".encode()]


def file_cases(rng: random.Random, workdir: Path, n: int) -> Iterator[tuple[str, Callable]]:
    for i in range(n):
        rows = [mutated_row(rng)[1] for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.3:  # ids repeated or empty
            rows[0]["id"] = rng.choice(["", rows[-1]["id"], " "])
        columns = sorted({c for r in rows for c in r})
        if rng.random() < 0.3:
            columns.remove(rng.choice(columns))
        data = _write(rows, columns).encode()
        if rng.random() < 0.4:
            at = rng.randrange(len(data) + 1)
            data = data[:at] + rng.choice(BYTES) + data[at:]
        path = workdir / f"f{i}.csv"
        path.write_bytes(data)
        fmt = rng.choice(["json", "table"])  # drawn here: the inputs do not depend on the runs
        yield f"{path.name} {data[:200]!r}", (lambda p=str(path), f=fmt: _cli(
            ["validate", p, "--format", f, "--compute-db", "none"]))


YAML_BASE = """model: {hidden_size: 256, num_layers: 4, num_attention_heads: 4, vocab_size: 1024,
        num_experts: 4, moe_router_topk: 2, moe_ffn_hidden_size: 256}
parallel: {tp: 1, pp: 1, ep: 2}
training: {global_batch_size: 16, seq_length: 512, framework: megatron-core}
cluster: {gpu: h100-sxm-80gb, num_gpus: 8, gpus_per_node: 8, compute_db: null}
"""
SETS = {
    "parallel.delay_wgrad_compute": ["true", "false", "1", "2", "x", "null", "[]"],
    "parallel.moe_overlap_ep_comm": ["true", "false", "x", "2", "null"],
    "cluster.nics_per_gpu": ["1", "2", "0", "-1", "0.5", "nan", "inf", "x", "1e9", "null",
                             "8", "3"],
    "parallel.ep": ["1", "2", "4", "8", "16", "3", "0", "x"],
    "parallel.vpp": ["1", "2", "3", "5", "0", "x"],
    "parallel.pp": ["1", "2", "3", "4", "8"],
    "parallel.cp": ["1", "2", "3", "4", "8", "x"],
    "parallel.cp_comm_type": ["p2p", "a2a", "all_gather", "a2a+p2p", "x", "[p2p, a2a]"],
    "training.seq_length": ["1", "3", "511", "513", "512", "7", "x"],
    "parallel.tp": ["1", "2", "3", "8"],
    "model.num_experts": ["1", "2", "3", "4", "0", "64"],
    "model.moe_router_topk": ["1", "2", "4", "5", "0"],
    "parallel.sequence_parallel": ["true", "false"],
    "parallel.pipeline_model_parallel_layout": ["Et|tt|tL", "Et|(t|)*2L", "x", "first:1,last:1",
                                                "|", "E|L", "null"],
    "training.fp8_recipe": ["delayed", "current", "mxfp8", "x", "null"],
    "training.dtype": ["fp8", "bf16", "x"],
    "parallel.moe_token_dispatcher_type": ["alltoall", "deepep", "allgather", "flex", "x"],
    "cluster.num_gpus": ["1", "2", "3", "16", "6"],
    "parallel.microbatch_group_size_per_vp_stage": ["1", "2", "3", "x", "null"],
}


def yaml_cases(rng: random.Random, workdir: Path, n: int) -> Iterator[tuple[str, Callable]]:
    base = workdir / "moe.yaml"
    base.write_text(YAML_BASE)
    for _ in range(n):
        keys = rng.sample(sorted(SETS), rng.randint(1, 4))
        args = ["simulate", str(base), "--format", "json"]
        for k in keys:
            args += ["--set", f"{k}={rng.choice(SETS[k])}"]
        yield " ".join(args[4:]), (lambda a=args: _cli(a))


MODELS = ["llama3-8b", "mixtral-8x7b", "gpt-1.7b", "nosuch", "", "qwen3-30b-a3b", "mpt-125m"]
TINY_ARGS = {"--gpus": ["1", "2", "3", "7", "8", "0", "-1", "x", "1,3", "8,8", "1e3", ""],
             "--global-batch": ["1", "2", "3", "0", "-1", "x", "1000000000"],
             "--seq": ["1", "2", "3", "0", "x", "1000000"],
             "--tp": ["1", "3", "0", "x", ""], "--pp": ["1", "3", "64", "x", ""],
             "--ep": ["1", "3", "8", "x"], "--cp": ["1", "2", "3"],
             "--gpus-per-node": ["1", "3", "8", "0"], "--max-vpp": ["1", "3"],
             "--max-micro-batch": ["1", "3"], "--top": ["1", "0"],
             "--dispatcher": ["deepep", "x", ""], "--schedules": ["1f1b", "zb_v", "dualpipe",
                                                                  "x", ""]}


def cli_cases(rng: random.Random, workdir: Path, n: int) -> Iterator[tuple[str, Callable]]:
    base = workdir / "tiny.yaml"
    base.write_text(YAML_BASE)
    yield "(no arguments)", (lambda: _cli([]))
    for _ in range(n):
        cmd = rng.choice(["search", "search", "plan", "sweep"])
        if cmd == "sweep":
            field = rng.choice(sorted(SETS))
            values = ",".join(rng.sample(SETS[field], min(2, len(SETS[field]))))
            args = ["sweep", str(base), "--vary", f"{field}={values}", "--format", "json"]
        else:
            args = [cmd, rng.choice(MODELS), "--workers", "1"]
            if cmd == "search":
                opts = {"--gpus": rng.choice(TINY_ARGS["--gpus"][:6]),
                        "--global-batch": rng.choice(TINY_ARGS["--global-batch"][:3]),
                        "--seq": rng.choice(["1", "2", "128"])}
                for k in rng.sample(sorted(TINY_ARGS), rng.randint(0, 3)):
                    opts[k] = rng.choice(TINY_ARGS[k])
            else:
                opts = {"--tokens": rng.choice(["1", "1M", "1B", "0", "x", "1e30"]),
                        "--days": rng.choice(["1", "0.001", "1e9", "0", "x"]),
                        "--global-batch": rng.choice(TINY_ARGS["--global-batch"]),
                        "--seq": rng.choice(["1", "2", "2048", "0"])}
            for k, v in opts.items():
                args += [k, v]
            args += ["--format", "json"]
        yield " ".join(args), (lambda a=args: _cli(a))


KERNEL_FILE = Path(__file__).resolve().parents[1] / "src/trainsim/data/validation/kernels_published.csv"
KERNEL_CELLS = {
    "kind": ["gemm", "gemm_grouped", "attention_fwd", "attention_bwd", "attention_fwd_bwd",
             "memory_bound", "moe_block", "x", "", "GEMM"],
    "implementation": ["", "cublas", "vllm", "flash2", "flash3", "flash4", "fa2", "te", "ck",
                       "flashinfer", "triton", "liger", "deepgemm", "tilelang", "cutlass",
                       "torch", "deepep", "hipkittens", "thunderkittens", "flash", "x",
                       "transformer_engine", "flex", "cudnn", "xformers"],
    "dtype": ["bf16", "fp16", "fp8", "fp32", "x", "", "BF16", "fp8/bf16", "mxfp8", "fp8_e4m3"],
    "gpu": CELLS["gpu"] + ["mi300x", "mi355x"],
    "causal": BOOL + ["causal", "yes", "True"],
    "measured_unit": ["ms", "s", "TFLOP/s", "us", "GB/s", "x", "", "tflop/s"],
    **{c: ["", "1", "0", "-1", "2", "3", "7", "1.5", "nan", "inf", "1e400", "x", " 64 ",
           "64.0", "1e3", "99999999999", "128"]
       for c in ("m", "n", "k", "groups", "batch", "seq_len", "heads", "kv_heads", "head_dim",
                 "tokens", "hidden", "ffn", "experts", "top_k", "bytes")},
}


def kernel_cases(rng: random.Random, workdir: Path, n: int) -> Iterator[tuple[str, Callable]]:
    from trainsim.validate import predict_kernel_row, read_rows

    _, rows = read_rows(KERNEL_FILE)
    by_kind: dict[tuple[str, str], dict[str, str]] = {}
    for r in rows:
        by_kind.setdefault((r["kind"], r["implementation"], r["gpu"]), r)
    bases = sorted(by_kind.items())
    for _ in range(n):
        _, row = rng.choice(bases)
        row = dict(row)
        changes = []
        for _ in range(rng.randint(1, 3)):
            col = rng.choice(sorted(KERNEL_CELLS))
            row[col] = rng.choice(KERNEL_CELLS[col])
            changes.append(f"{col}={row[col]!r}")
        yield f"{row['id']} " + " ".join(changes), (
            lambda r=row: _row(r, functools.partial(predict_kernel_row, compute_db=None)))


COMBO = {
    "model": {"num_layers": [2, 3, 4, 6, 8], "num_experts": [None, 2, 4, 8, 16],
              "moe_router_topk": [1, 2, 4], "moe_shared_expert_intermediate_size": [None, 256],
              "moe_first_dense_layers": [0, 1], "moe_layer_freq": [1, 2],
              "kv_lora_rank": [None, 64], "mtp_num_layers": [0, 1], "num_kv_heads": [None, 1, 2],
              "activation": ["gelu", "swiglu"], "sliding_window": [None, 128],
              "moe_capacity_factor": [None, 1.0], "moe_router": ["learned", "fake_balanced"]},
    "parallel": {"tp": [1, 2, 4], "pp": [1, 2, 4], "vpp": [None, 1, 2], "cp": [1, 2],
                 "ep": [1, 2, 4, 8], "expert_tensor_parallel_size": [None, 1, 2],
                 "sequence_parallel": [True, False], "moe_overlap_ep_comm": [True, False],
                 "delay_wgrad_compute": [None, True, False],
                 "moe_token_dispatcher_type": ["alltoall", "allgather", "deepep"],
                 "recompute": ["none", "selective", "full"],
                 "recompute_modules": [None, ["core_attn"], ["moe_act"], ["mlp"]],
                 "cp_comm_type": ["p2p", "a2a", "all_gather"],
                 "distributed_optimizer": [True, False], "zero_stage": [0, 1, 2, 3],
                 "overlap_grad_reduce": [True, False], "overlap_p2p_comm": [True, False],
                 "tp_comm_overlap": [True, False], "moe_dispatch_fp8": [True, False],
                 "pipeline_schedule": [None, "1f1b", "zb_v", "dualpipe", "gpipe"],
                 "account_for_embedding_in_pipeline_split": [True, False],
                 "microbatch_group_size_per_vp_stage": [None, 2, 4]},
    "training": {"dtype": ["bf16", "fp8", "fp16"], "fp8_recipe": ["delayed", "current",
                                                                   "mxfp8", "blockwise"],
                 "micro_batch_size": [1, 2], "seq_length": [128, 256, 512],
                 "framework": [None, "megatron-core", "megatron-bridge", "nemo", "torchtitan",
                               "megatron-lm", "deepspeed"],
                 "cuda_graphs": [True, False], "attention": ["flash2", "flash3", "cudnn",
                                                            "unfused", "sdpa"]},
    "cluster": {"num_gpus": [8, 16, 32], "gpus_per_node": [4, 8], "nics_per_gpu": [1, 2, 4],
                "gpu": ["h100-sxm-80gb", "a100-sxm-80gb", "b200-sxm-180gb", "gb200"],
                "network_backend": ["analytical", "analytical", "flow"]},
}
"""The newest mechanisms (combined 1F1B, delayed weight gradients, DeepEP, the NICs of a
GPU, interleaved and zero-bubble schedules, MLA, MTP) in random combinations: each run builds
and simulates sanely or is refused in one line."""


def combo_cases(rng: random.Random, workdir: Path, n: int) -> Iterator[tuple[str, Callable]]:
    from fuzz_checks import run_config

    for _ in range(n):
        cfg: dict = {"model": {"hidden_size": 256, "num_attention_heads": 4,
                               "vocab_size": 1024, "moe_ffn_hidden_size": 256},
                     "parallel": {}, "training": {"global_batch_size": 32},
                     "cluster": {"compute_db": None}}
        for section, fields in COMBO.items():
            for name, values in fields.items():
                if name in ("gpu", "num_gpus", "seq_length") or rng.random() < 0.4:
                    cfg[section][name] = rng.choice(values)
        model, parallel = cfg["model"], cfg["parallel"]
        if not model.get("num_experts") or rng.random() < 0.3:  # a dense run: no MoE field
            for k in [k for k in model if k.startswith("moe_") or k == "num_experts"]:
                del model[k]
            for k in ("ep", "expert_tensor_parallel_size", "moe_overlap_ep_comm",
                      "delay_wgrad_compute", "moe_token_dispatcher_type", "moe_dispatch_fp8"):
                parallel.pop(k, None)
        elif model.get("moe_router_topk", 2) > model["num_experts"]:
            model["moe_router_topk"] = 1
        if parallel.get("recompute_modules"):
            parallel["recompute"] = "selective"
        if parallel.get("delay_wgrad_compute"):
            parallel["moe_overlap_ep_comm"] = True
        if (parallel.get("vpp") or 1) > 1 and parallel.get("pp", 1) == 1:
            parallel["pp"] = 2
        label = " ".join(f"{s[0]}.{k}={v}" for s in cfg for k, v in cfg[s].items()
                         if s != "model" or k in COMBO["model"])
        yield label, (lambda c=cfg: run_config(c))


SURFACES = {"rows": row_cases, "combo": combo_cases, "kernels": kernel_cases, "files": file_cases, "yaml": yaml_cases, "cli": cli_cases}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n", type=int, default=300, help="inputs per surface")
    p.add_argument("--only", default="", help="comma-separated surfaces")
    p.add_argument("--every", action="store_true", help="print every failing input")
    a = p.parse_args(argv)
    rng = random.Random(a.seed)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        out = run_surfaces({k: (lambda f=f: f(rng, work, a.n)) for k, f in SURFACES.items()},
                           set(filter(None, a.only.split(","))))
    return print_report(out, a.every)


if __name__ == "__main__":
    sys.exit(main())
