"""Input robustness, twenty-fifth round (2026-11-27, 44th session, fuzz44): the features of
sessions 41-43 and the head-width limits of the kernels edge43 left unchecked.

- ``heads``: head widths (dense and MLA's query/key and value) under flash4, ck, flex, triton,
  mem_efficient, sdpa, cudnn and the framework defaults (torchtitan's sdpa/flex included) on
  Hopper, Blackwell, Ampere and MI300X;
- ``features``: ``parallel.fp8_gemm_grid_excludes_exchange`` (DeepGEMM's fixed grid),
  ``training.attention_output_e5m6``, ``activation_func_fp8_input_store``, the DeepEP/HybridEP
  SM counts and ``moe_dispatch_fp8`` with odd values, over dispatchers, dtypes and GPUs;
- ``sets``: ``simulate --set`` of those fields with the text a shell gives;
- ``kernels``: kernel rows of the newer kinds edited: a shape-search winner (``best shape``
  note), grouped GEMMs (DeepGEMM, torch._grouped_mm) and a Triton MoE block, FlashAttention-3 backward rows, FA4 rows;
- ``files``: each validation file kind (training, kernels, collectives, layers JSONL) with a
  malformed structure (a short or long row, a duplicated or missing column, a BOM, NUL bytes,
  a 100k-character cell, a quoted newline, header only, empty);
- ``commands``: ``search``/``plan``/``sweep``/``export`` with the new fields set;
- ``service``: ``POST /api/v1/simulate`` of configs holding the new fields.

Each input must give a sane answer (finite positive times, 0 < MFU <= 2) or one error line
(exit 2, ``error: ...``); a traceback, a hang past 20 s, or NaN/negative output is a failure
class.

    PYTHONPATH=src python benchmarks/fuzz_inputs44.py [--only heads,features,...] [--every]

prints one line per failure class (with its first input) and the counts; exit 1 on any.
"""
from __future__ import annotations

import csv
import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz_checks import BASES, Case, only_of, print_report, run_config, run_surfaces, surface_parser
from fuzz_inputs43 import _edit, _yaml
from fuzz_inputs43_files import csv_batches
from fuzz_sweep import _cli

fuzz_checks.TIME_LIMIT_S = 20
VALIDATION = Path(__file__).resolve().parents[1] / "../shared/validation"
GPUS = ["h100-sxm-80gb", "b200-sxm-180gb", "gb200-nvl72", "a100-sxm-80gb", "mi300x"]


def _case(label: str, cfg: dict) -> Case:
    return label, (lambda c=cfg: run_config(c))


# ------------------------------------------------------------------------- config surfaces

def head_cases() -> Iterator[Case]:
    kernels = ["flash4", "ck", "flex", "triton", "mem_efficient", "sdpa", "cudnn", "flash3"]
    for gpu in GPUS:
        for att in kernels:
            for hd in [7, 60, 100, 128, 160, 192, 256, 264, 320, 504, 512, 576]:
                yield _case(f"{gpu} {att} head_dim={hd}", _edit(
                    "dense", model={"head_dim": hd}, training={"attention": att},
                    cluster={"gpu": gpu}))
            for qk, v, rope in [(128, 128, 64), (64, 512, 0), (448, 512, 64), (128, 64, 64),
                                (192, 256, 64), (8, 8, 0)]:
                yield _case(f"{gpu} {att} mla qk={qk}+{rope} v={v}", _edit(
                    "mla", model={"qk_head_dim": qk, "v_head_dim": v,
                                  "qk_pos_emb_head_dim": rope},
                    training={"attention": att, "dtype": "bf16"}, cluster={"gpu": gpu}))
        for fw in ["torchtitan", "pytorch", "megatron-core", "nemo", "megatron-bridge",
                   "llm-foundry", "deepspeed"]:
            for hd in [160, 256, 320, 512, 600]:
                for att in [None, "sdpa", "flex"]:
                    training = {"framework": fw}
                    if att:
                        training["attention"] = att
                    yield _case(f"{gpu} {fw} attention={att} head_dim={hd}", _edit(
                        "dense", model={"head_dim": hd}, training=training,
                        cluster={"gpu": gpu}))


ODD = [True, False, None, 0, 1, 2, -1, 1.5, math.nan, "yes", "true", "", "abc", [True], {}]


def feature_cases() -> Iterator[Case]:
    moe_mla = {"num_experts": 8, "moe_router_topk": 2, "moe_ffn_hidden_size": 128}
    for field in ["fp8_gemm_grid_excludes_exchange", "moe_dispatch_fp8"]:
        for v in ODD:
            for disp in ["alltoall", "allgather", "flex", "deepep", "hybridep"]:
                for dtype in ["fp8", "bf16"]:
                    yield _case(f"moe {field}={v!r} {disp} {dtype}", _edit(
                        "moe", parallel={field: v, "moe_token_dispatcher_type": disp},
                        training={"dtype": dtype}))
            yield _case(f"dense {field}={v!r}", _edit("dense", parallel={field: v},
                                                        training={"dtype": "fp8"}))
            yield _case(f"mla moe {field}={v!r}", _edit(
                "mla", model=moe_mla, parallel={field: v, "ep": 2, "vpp": None,
                                                "moe_token_dispatcher_type": "deepep"}))
    for sms in [0, 1, 20, 131, 132, 133, 10**6, -1, 1.5, math.nan, "20", None]:
        for field in ["moe_deepep_num_sms", "moe_hybridep_num_sms"]:
            for grid in [True, False]:
                for gpu in ["h100-sxm-80gb", "b200-sxm-180gb", "a100-sxm-80gb"]:
                    disp = "deepep" if field == "moe_deepep_num_sms" else "hybridep"
                    yield _case(f"moe {field}={sms!r} grid={grid} {gpu}", _edit(
                        "moe", parallel={field: sms, "fp8_gemm_grid_excludes_exchange": grid,
                                         "moe_token_dispatcher_type": disp},
                        training={"dtype": "fp8"}, cluster={"gpu": gpu}))
    for field in ["attention_output_e5m6", "activation_func_fp8_input_store"]:
        for v in ODD:
            for base, extra in [("mla", {}), ("dense", {"dtype": "fp8"}),
                                ("dense", {"dtype": "bf16"}), ("moe", {"dtype": "fp8"})]:
                for rec in ["none", "selective", "full"]:
                    yield _case(f"{base} {field}={v!r} {extra} {rec}", _edit(
                        base, training={field: v, **extra}, parallel={"recompute": rec}))
            yield _case(f"dense gelu {field}={v!r}", _edit(
                "dense", model={"activation": "gelu"}, training={field: v, "dtype": "fp8"}))
    # all of DeepSeek's switches together on every GPU, pipeline schedule and recipe
    for gpu in GPUS:
        for sched in [None, "1f1b", "dualpipe_v", "interleaved_1f1b"]:
            for recipe in ["blockwise", "delayed", "mxfp8"]:
                cfg = _edit("mla", model=moe_mla, cluster={"gpu": gpu},
                            parallel={"ep": 2, "vpp": 2 if sched == "interleaved_1f1b" else None,
                                      "pipeline_schedule": sched,
                                      "moe_token_dispatcher_type": "deepep",
                                      "fp8_gemm_grid_excludes_exchange": True,
                                      "moe_dispatch_fp8": True, "moe_deepep_num_sms": 20},
                            training={"fp8_recipe": recipe, "attention_output_e5m6": True,
                                      "activation_func_fp8_input_store": True,
                                      "attention": "flash3"})
                yield _case(f"deepseek switches {gpu} {sched} {recipe}", cfg)


SET_FIELDS = ["parallel.fp8_gemm_grid_excludes_exchange", "training.attention_output_e5m6",
              "training.activation_func_fp8_input_store", "parallel.moe_deepep_num_sms",
              "parallel.moe_dispatch_fp8", "training.attention", "model.head_dim",
              "model.v_head_dim"]
SET_VALUES = ["true", "false", "1", "0", "2", "-1", "yes", "no", "on", "", "null", "nan",
              "[true]", "{a: 1}", "flash4", "ck", "512", "576", "1e400"]


def set_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        mla = _edit("mla", model={"num_experts": 8, "moe_router_topk": 2,
                                  "moe_ffn_hidden_size": 128},
                    parallel={"ep": 2, "vpp": None, "moe_token_dispatcher_type": "deepep"})
        for name, cfg in [("dense", BASES["dense"]), ("mla_moe", mla)]:
            path = _yaml(workdir, f"{name}.yaml", cfg)
            for field in SET_FIELDS:
                for v in SET_VALUES:
                    args = ["simulate", path, "--set", f"{field}={v}", "--format", "json"]
                    yield f"{name} --set {field}={v!r}", (lambda a=args: _cli(a))
                for gpu in ["b200", "mi300x"]:
                    args = ["simulate", path, "--set", f"cluster.gpu={gpu}", "--set",
                            f"{field}={SET_VALUES[0]}"]
                    yield f"{name} {gpu} --set {field}=true", (lambda a=args: _cli(a))
    return cases


# ------------------------------------------------------------------------- kernel rows

def _rows(name: str) -> tuple[list[str], list[dict]]:
    with open(VALIDATION / name, newline="") as f:
        rows = list(csv.DictReader(f))
    return list(rows[0]), rows


KERNEL_EDITS = {
    "m": ["1", "0", "1023", "1e9", "nan", "", "-5"], "n": ["1", "7", "1e9", ""],
    "k": ["1", "16", "1e9", "0"], "dtype": ["fp8", "bf16", "fp16", "fp32", "int8", "fp4", "",
                                            "e5m6", "bf16/fp16"],
    "gpu": ["b200", "mi300x", "a100-sxm-40gb", "h800", "l40s", "v100-sxm-32gb", "bogus"],
    "implementation": ["cublas", "triton", "deepgemm", "cutlass", "torch", "flash4", "ck", ""],
    "groups": ["1", "2", "7", "1e3", "0", ""], "head_dim": ["8", "100", "192", "256", "264",
                                                            "512", "576", "1024"],
    "heads": ["1", "3", "128"], "kv_heads": ["1", "", "128"], "seq_len": ["1", "128", "1e6"],
    "causal": ["0", "1", ""], "batch": ["1", "0", "1e6"],
    "note": ["best shape of a brute-force search", "best shape", "BEST SHAPE; fp8 fast accum",
             "dropout 0.1", "", "best shape dropout 0.1"],
    "measured_value": ["1e-9", "1e9", "0", "nan"], "measured_unit": ["TFLOP/s", "ms", "us"],
}


def kernel_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    """Kernel rows of the newer kinds with one cell edited, 40 rows a file, each row predicted
    (finite, positive) or failed alone in one line."""
    def cases() -> Iterator[Case]:
        header, rows = _rows("kernels_published.csv")
        bases = [next(r for r in rows if "best shape" in r["note"]),
                 next(r for r in rows if "best shape" in r["note"] and r["dtype"] == "fp8"),
                 next(r for r in rows if r["kind"] == "moe_block"
                      and r["implementation"] == "triton"),
                 next(r for r in rows if r["kind"] == "gemm_grouped"
                      and r["implementation"] == "deepgemm"),
                 next(r for r in rows if r["kind"] == "gemm_grouped"
                      and r["implementation"] == "torch"),
                 next(r for r in rows if r["kind"].startswith("attention")
                      and r["implementation"] == "flash3" and "bwd" in r["kind"]),
                 next(r for r in rows if r["implementation"] == "flash4")]
        batch = []
        for base in bases:
            for col, values in KERNEL_EDITS.items():
                for v in values:
                    row = dict(base, **{col: v}, id=f"{base['id']}-{col}-{len(batch)}")
                    batch.append((f"{base['id']} {col}={v!r}", row))
        yield from csv_batches(batch, header, workdir, "kernels44", 40)
    return cases


# ------------------------------------------------------------------------- malformed files

def _mutations(text: str) -> dict[str, bytes]:
    lines = text.splitlines()[:5]
    text = "\n".join(lines) + "\n"
    head, first = lines[0], lines[1] if len(lines) > 1 else ""
    rest = "\n".join(lines[1:4])
    cells = first.split(",")
    return {
        "empty": b"", "header_only": (head + "\n").encode(), "bom": ("\ufeff" + text).encode(),
        "crlf": text.replace("\n", "\r\n").encode(),
        "short_row": (head + "\n" + ",".join(cells[:3]) + "\n" + rest + "\n").encode(),
        "long_row": (head + "\n" + first + ",x,y,z\n" + rest + "\n").encode(),
        "dup_column": (head + "," + head.split(",")[0] + "\n" + first + ",dup\n").encode(),
        "no_header_col0": (",".join(head.split(",")[1:]) + "\n" + rest + "\n").encode(),
        "nul": (head + "\n" + first.replace(",", ",\x00", 1) + "\n").encode(),
        "huge_cell": (head + "\n" + first + "\n" + cells[0] + "x" * 100_000
                      + "," + ",".join(cells[1:]) + "\n").encode(),
        "quoted_newline": (head + "\n" + '"a\nb",' + ",".join(cells[1:]) + "\n").encode(),
        "latin1": (head + "\n" + first.replace(",", ",\xe9", 1) + "\n").encode("latin-1"),
        "binary": bytes(range(256)) * 4,
        "unclosed_quote": (head + "\n" + '"' + first + "\n").encode(),
        "many_columns": (head + "," + ",".join(f"c{i}" for i in range(20_000)) + "\n"
                         + first + "\n").encode(),
        "blank_lines": (head + "\n\n\n" + first + "\n\n").encode(),
        "header_twice": (head + "\n" + head + "\n" + first + "\n").encode(),
    }


def _jsonl_mutations(text: str) -> dict[str, bytes]:
    lines = [ln for ln in text.splitlines() if ln.strip()][:4]
    good = "\n".join(lines) + "\n"
    return {"empty": b"", "truncated": good[:-40].encode(), "not_object": b"[1,2]\n3\n",
            "nul": (good + "\x00\n").encode(), "nan": (good + '{"fwd_ms": NaN}\n').encode(),
            "deep": (good + "[" * 100_000 + "]" * 100_000 + "\n").encode(),
            "dup_keys": (lines[0][:-1] + ', "seq": 1}\n').encode(),
            "huge": (good + '{"x": "' + "y" * 1_000_000 + '"}\n').encode(),
            "bom": ("\ufeff" + good).encode(), "binary": bytes(range(256)) * 4,
            "big_int": (lines[0].replace('"seq": ', '"seq": 1' + "0" * 5000, 1) + "\n")
            .encode()}


def file_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for name in ["training_public.csv", "kernels_published.csv", "collectives_public.csv",
                     "kernels_h100_measured.csv"]:
            text = (VALIDATION / name).read_text()
            for mut, data in _mutations(text).items():
                p = os.path.join(workdir, f"{mut}_{name}")
                Path(p).write_bytes(data)
                for fmt in ("table", "json"):
                    args = ["validate", p, "--format", fmt]
                    yield f"{name} {mut} {fmt}", (lambda a=args: _cli(a))
        text = (VALIDATION / "layers_h100_measured.jsonl").read_text()
        for mut, data in _jsonl_mutations(text).items():
            p = os.path.join(workdir, f"{mut}_layers.jsonl")
            Path(p).write_bytes(data)
            yield f"layers {mut}", (lambda a=["validate", p]: _cli(a))
    return cases


# ------------------------------------------------------------------------- commands

def command_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        small = ["--gpus", "8", "--global-batch", "16", "--seq", "512", "--workers", "1",
                 "--set", "model.hidden_size=256", "--set", "model.num_layers=4",
                 "--set", "model.num_attention_heads=4", "--set", "model.vocab_size=1024"]
        for gpu in ["h100", "b200", "mi300x"]:
            for extra in (["--set", "training.attention=flash4"],
                          ["--set", "training.attention=ck"],
                          ["--set", "model.head_dim=512", "--set", "training.attention=flash4"],
                          ["--set", "model.head_dim=600", "--set", "training.attention=ck"],
                          ["--set", "model.head_dim=192", "--set", "training.attention=flash4"],
                          ["--set", "parallel.fp8_gemm_grid_excludes_exchange=true",
                           "--dtype", "fp8"],
                          ["--set", "parallel.fp8_gemm_grid_excludes_exchange=2"],
                          ["--set", "training.attention_output_e5m6=true", "--dtype", "fp8"],
                          ["--set", "model.num_experts=4", "--set",
                           "parallel.fp8_gemm_grid_excludes_exchange=true", "--dispatcher",
                           "flex,alltoall", "--ep", "1,2,4", "--dtype", "fp8"]):
                for cmd in ("search", "plan"):
                    args = [cmd, "llama3-8b", "--gpu", gpu, *small, *extra]
                    if cmd == "plan":
                        args = [a for a in args if a not in ("--gpus", "8", "--global-batch",
                                                             "16")]
                        args += ["--tokens", "1e9", "--max-gpus", "16"]
                    yield " ".join(args), (lambda a=args: _cli(a))
        mla = _yaml(workdir, "mla44.yaml", _edit(
            "mla", model={"num_experts": 8, "moe_router_topk": 2, "moe_ffn_hidden_size": 128},
            parallel={"ep": 2, "vpp": None, "moe_token_dispatcher_type": "deepep",
                      "fp8_gemm_grid_excludes_exchange": True},
            training={"attention_output_e5m6": True, "attention": "flash3"}))
        for vary in ["parallel.fp8_gemm_grid_excludes_exchange=true,false",
                     "parallel.fp8_gemm_grid_excludes_exchange=0:1",
                     "training.attention_output_e5m6=true,false,maybe",
                     "training.attention=flash3,flash4,ck,cudnn",
                     "parallel.moe_deepep_num_sms=0:200", "model.v_head_dim=64,512,576"]:
            args = ["sweep", mla, "--vary", vary, "--steps", "3", "--format", "json"]
            yield " ".join(args), (lambda a=args: _cli(a))
        out = os.path.join(workdir, "exp")
        for extra in (["--set", "parallel.fp8_gemm_grid_excludes_exchange=true",
                       "--set", "training.dtype=fp8"],
                      ["--set", "training.attention_output_e5m6=true",
                       "--set", "training.dtype=fp8"],
                      ["--set", "training.attention=flash4", "--gpu", "b200-sxm-180gb"],
                      ["--set", "training.attention=ck", "--gpu", "mi300x"],
                      ["--set", "model.head_dim=576", "--set", "training.attention=flash4"]):
            for target in (["--simai", out + ".txt"], ["--chakra", out, "--ranks", "0"]):
                args = ["export", "deepseek-v2-lite", "--tp", "2", "--ep", "2", "--gpus", "8",
                        "--gbs", "8", "--seq", "512", *extra, *target, "--max-tasks", "200000"]
                yield " ".join(args), (lambda a=args: _cli(a))
    return cases


# ------------------------------------------------------------------------- service

def service_cases() -> Iterator[Case]:
    try:
        from fastapi.testclient import TestClient

        from trainsim.service import Settings, create_app
    except ImportError:
        return
    db = os.path.join(tempfile.mkdtemp(), "jobs.db")
    app = create_app(Settings(db_url=f"sqlite:///{db}", workers=0, checkers=0).with_limits(
        sync_timeout_s=15.0), start_workers=False)
    client = TestClient(app, raise_server_exceptions=False)
    client.__enter__()
    auth = {"Authorization": f"Bearer {app.state.store.create_token('fuzz44')}"}
    plain = [v for v in ODD if not (isinstance(v, float) and math.isnan(v))]  # JSON's own
    edits = [("parallel", "fp8_gemm_grid_excludes_exchange", v) for v in plain] + \
            [("training", "attention_output_e5m6", v) for v in plain] + \
            [("training", "attention", v) for v in ["flash4", "ck", "flex", 1, None]] + \
            [("model", "head_dim", v) for v in [512, 576, 7, "x", -1]]

    def post(cfg: dict) -> str | None:
        r = client.post("/api/v1/simulate", json={"config": cfg}, headers=auth)
        if r.status_code == 200:
            return None
        body = r.json()
        if r.status_code in (400, 413, 422, 503, 504) and isinstance(body, dict) \
                and body.get("error") and "\n" not in body["error"]:
            return None
        return f"status {r.status_code}: {str(body)[:80]}"

    for gpu in ["h100-sxm-80gb", "b200-sxm-180gb", "mi300x"]:
        for section, field, v in edits:
            cfg = _edit("moe", **{section: {field: v}}, cluster={"gpu": gpu})
            yield f"service {gpu} {section}.{field}={v!r}", (lambda c=cfg: post(c))


def main(argv: list[str] | None = None) -> int:
    ap = surface_parser()
    args = ap.parse_args(argv)
    only = only_of(args)
    with tempfile.TemporaryDirectory() as workdir:
        surfaces = {"heads": head_cases, "features": feature_cases,
                    "sets": set_cases(workdir), "kernels": kernel_cases(workdir),
                    "files": file_cases(workdir), "commands": command_cases(workdir),
                    "service": service_cases}
        out = run_surfaces(surfaces, only)
    return print_report(out, every=args.every)


if __name__ == "__main__":
    sys.exit(main())
