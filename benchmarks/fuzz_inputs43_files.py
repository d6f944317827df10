"""The file surfaces of benchmarks/fuzz_inputs43.py (2026-11-27, 43rd session, fuzz43): kernel
validation rows of every kind with edited cells (and the edits that must be refused), a
measured-kernel database with one record or field given an odd value, two public training rows
with the newer features' cells edited, and the measured-layers file's records."""
from __future__ import annotations

import copy
import csv
import io
import json
import math
import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path

from fuzz_checks import BASES, run_config
from fuzz_inputs43 import KERNELS_CSV, Case
from fuzz_sweep import _cli

# ------------------------------------------------------------------------- kernel rows

KERNEL_EDITS = {
    "head_dim": ["1", "7", "300", "576", "0", "-64", "nan", "inf", "", "64.5", "1e9"],
    "seq_len": ["1", "0", "-1", "1e12", "nan", "", "7"],
    "heads": ["1", "0", "3", "1e9", "nan"], "kv_heads": ["0", "3", "7", "", "64", "nan"],
    "batch": ["0", "1", "1e9", "-1", ""], "causal": ["2", "yes", "true", "", "-1", "nan"],
    "m": ["0", "1", "-1", "1e15", "nan", "", "1.5"], "n": ["0", "1", "inf"],
    "k": ["0", "1", "7", "1e12"], "groups": ["0", "1", "-1", "1e6", "nan", ""],
    "tokens": ["0", "1", "-1", "1e12", "nan", ""], "hidden": ["0", "1", "7", "nan"],
    "ffn": ["0", "1", "nan", ""], "experts": ["0", "1", "-1", "1e6", ""],
    "top_k": ["0", "1", "1000", "nan", ""], "bytes": ["0", "-1", "1e30", "nan", ""],
    "measured_value": ["0", "-1", "nan", "inf", "", "1e-300", "1e300"],
    "measured_unit": ["ms", "us", "s", "TFLOP/s", "GB/s", "", "TB/s", "bogus"],
    "implementation": ["", "bogus", "flash3", "flash2", "cudnn", "cublas", "deepgemm",
                       "triton", "torch", "liger", "vllm", "flash4"],
    "dtype": ["", "fp8", "bf16", "fp16", "bf16/fp16", "fp32", "int8", "fp4"],
    "gpu": ["", "bogus", "b200", "mi300x", "a100-sxm-40gb", "TPU v5p"],
    "kind": ["", "attention", "gemm", "gemm_grouped", "moe_block", "memory_bound",
             "attention_fwd", "attention_bwd", "attention_fwd_bwd"],
    "note": ["dropout 0.1", "dropout", "harness", "dropout=nan", "dropout 2"],
}


def kernel_cases(workdir: str, seed: int) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        with open(KERNELS_CSV, newline="") as f:
            rows = list(csv.DictReader(f))
        header = list(rows[0])
        by_kind: dict[str, list[dict]] = {}
        for r in rows:
            by_kind.setdefault(r["kind"], []).append(r)
        rng = random.Random(seed)
        picked = [rng.choice(v) for v in by_kind.values()]
        edits = [(col, v) for col, vals in KERNEL_EDITS.items() for v in vals]
        batch: list[tuple[str, dict]] = []
        for base in picked:
            for col, v in edits:
                row = dict(base)
                row[col] = v
                row["id"] = f"{base['id']}-{col}-{len(batch)}"
                batch.append((f"{base['kind']} {col}={v!r}", row))
        # each edited row alone (its answer or its row's error), in files of 40 for speed:
        # a file's answer is a table whose rows each predict or fail alone
        for i in range(0, len(batch), 40):
            chunk = batch[i:i + 40]
            path = os.path.join(workdir, f"kernels_{i}.csv")
            buf = io.StringIO()
            w = csv.DictWriter(buf, header, lineterminator="\n")
            w.writeheader()
            for _label, row in chunk:
                w.writerow(row)
            Path(path).write_text(buf.getvalue())
            label = "; ".join(lbl for lbl, _ in chunk[:3]) + f" ... ({len(chunk)} rows)"
            yield label, (lambda p=path: _validate_rows(p))
    return cases


KERNEL_MUST_REFUSE = [("attention", {"kv_heads": "3"}, "must divide"),
                      ("attention", {"kv_heads": "64"}, "must divide"),
                      ("attention", {"note": "dropout 2"}, "not a probability"),
                      ("gemm_grouped", {"groups": "1e6"}, "more than m")]
"""Kernel rows predicted before this round though they state no kernel that runs (silent
nonsense): a GQA row whose kv_heads do not divide its heads, a dropout 'probability' of 2, a
grouped GEMM with more groups than rows (each group less than one row)."""


def kernel_refusal_cases() -> Iterator[Case]:
    """Each ``KERNEL_MUST_REFUSE`` edit of a published row of its kind: refused, naming why."""
    from trainsim.validate.kernels import predict_kernel_row
    with open(KERNELS_CSV, newline="") as f:
        rows = list(csv.DictReader(f))
    for kind, edit, reason in KERNEL_MUST_REFUSE:
        base = next(r for r in rows if r["kind"].startswith(kind) and r["heads"] != "3"
                    and (kind != "attention" or int(r["heads"]) % 3 == 1))
        row = dict(base, **edit)

        def check(row=row, reason=reason) -> str | None:
            result = predict_kernel_row(row, compute_db=None)
            if result.error is None or reason not in result.error:
                return f"not refused ({reason!r}): {result.error or result.predicted}"
            return None
        yield f"{kind} {edit}", check


def csv_batches(batch: list[tuple[str, dict]], header: list[str], workdir: str, prefix: str,
                size: int) -> Iterator[Case]:
    """Cases validating ``batch``'s (label, row) pairs ``size`` rows to a CSV file under
    ``workdir`` (``prefix_<i>.csv``), each labelled by its first two rows."""
    for i in range(0, len(batch), size):
        chunk = batch[i:i + size]
        path = os.path.join(workdir, f"{prefix}_{i}.csv")
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, header)
            w.writeheader()
            for _label, row in chunk:
                w.writerow(row)
        label = "; ".join(lbl for lbl, _ in chunk[:2]) + f" ... ({len(chunk)} rows)"
        yield label, (lambda p=path: _validate_rows(p))


def _validate_rows(path: str) -> str | None:
    """Every row of a kernel file predicted (a finite positive value) or failed alone."""
    from trainsim.validate import validate_file
    _kind, rows = validate_file(path)
    for r in rows:
        pred, err = r.predicted, r.error
        if err is not None:
            if "internal error" in str(err) or "\n" in str(err).strip():
                return f"row error text: {str(err)[:80]}"
            continue
        if pred is None:
            continue
        if not (isinstance(pred, (int, float)) and math.isfinite(pred) and pred > 0):
            return f"predicted {pred!r}"
    return None


# ------------------------------------------------------------------------- kernel database

DB_VALUES = [0, -1, 1.5, math.nan, math.inf, 1e308, 2**64, "abc", "", None, [], {}, True]
DB_KERNEL_FIELDS = ["time_s", "m", "n", "k", "batch", "dtype", "heads", "kv_heads", "head_dim",
                    "q_len", "kv_len", "causal", "backward", "impl", "bytes", "kernel", "name",
                    "op", "repeats", "<del>"]
DB_LAYER_FIELDS = ["fwd_s", "bwd_s", "tp", "seq_length", "micro_batch_size", "model", "dtype",
                   "granularity", "peak_memory_bytes", "submodules", "compile", "repeats"]
DB_TOP = {"format": ["trainsim-kernel-db/1", "x", None, 3], "gpu": ["b200-sxm-180gb", "nope",
          None, 1], "kernels": [{}, "x", None, [1]], "layers": [{}, "x", None, [1]]}


def db_cases(workdir: str, seed: int) -> Callable[[], Iterator[Case]]:
    """A measured-kernel database (``cluster.compute_db``) with one record's field, or one
    top-level field, given an odd value: ``simulate`` on an H100 loads it whole."""
    def cases() -> Iterator[Case]:
        from trainsim.validate import BUNDLED_DIR  # noqa: F401 - the package data's home
        src = Path(__file__).resolve().parents[1] / "src/trainsim/data/kernels/h100-sxm-80gb.json"
        base = json.loads(src.read_text())
        rng = random.Random(seed)
        by_op: dict[str, list[int]] = {}
        for i, r in enumerate(base["kernels"]):
            by_op.setdefault(r["op"], []).append(i)
        picks = [rng.choice(v) for v in by_op.values()]
        edits: list[tuple[str, Callable[[dict], None]]] = []
        for i in picks:
            for field in DB_KERNEL_FIELDS:
                for v in (DB_VALUES if field != "<del>" else [None]):
                    def ed(d, i=i, field=field, v=v):
                        rec = d["kernels"][i]
                        if field == "<del>":
                            rec.pop("time_s", None)
                        else:
                            rec[field] = v
                    edits.append((f"kernels[{i}] ({base['kernels'][i]['op']}).{field}={v!r}", ed))
        for field in DB_LAYER_FIELDS:
            for v in DB_VALUES:
                def ed(d, field=field, v=v):
                    d["layers"][0][field] = v
                edits.append((f"layers[0].{field}={v!r}", ed))
        for field, values in DB_TOP.items():
            for v in values:
                def ed(d, field=field, v=v):
                    d[field] = v
                edits.append((f"{field}={v!r}", ed))
        cfg = copy.deepcopy(BASES["dense"])
        for n, (label, ed) in enumerate(edits):
            d = copy.deepcopy(base)
            ed(d)
            p = os.path.join(workdir, f"db{n}.json")
            Path(p).write_text(json.dumps(d))
            c = copy.deepcopy(cfg)
            c["cluster"]["compute_db"] = p
            yield f"compute_db {label}", (lambda c=c: run_config(c))
            if n % 4 == 0:  # the database checked against itself (validate.kernel_db)
                yield f"validate db {label}", (lambda a=["validate", p]: _cli(a))
    return cases


# ------------------------------------------------------------------------- training rows

ROW_BASES = ["nemo2407-llama2-13b-16", "bridge2511-qwen3-30b-a3b-16"]
ROW_EDITS: dict[str, list[str]] = {
    "pipeline_layout": ["first:0,last:0", "first:0", "last:40", "first:41", "first:-1",
                        "first:nan", "first:10,last:10", "E|(t|)*39tL", "x", "first:N",
                        "first: 5 , last : 5", "first:5;last:5", "first:1.5", "Et|tL", "E|L"],
    "vpp": ["0", "1", "3", "-1", "nan", "", "40", "41", "2.5"],
    "pp": ["3", "0", "40", "41", "inf"],
    "head_dim": ["1", "7", "300", "576", "0", "nan", "1e9"],
    "fp8_recipe": ["blockwise", "mxfp8", "mx", "block", "current", "", "bogus", "delayed"],
    "attention": ["flash3", "cudnn", "flash1", "eager", "sdpa", "", "bogus", "te"],
    "options": ["cuda_graphs;compile", "bogus", ";;", "tp_overlap;ep_overlap", "pp_overlap"],
    "micro_batch_size": ["0", "3", "1e6", "nan"],
    "global_batch_size": ["1", "7", "1e9"],
    "num_experts": ["1", "0", "1e6"], "moe_top_k": ["0", "9", "1000"],
}


def row_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    """Two public training rows (an interleaved fp8 dense row, an MoE row) with one cell of
    the new features edited, through ``validate_file``: each row predicted (finite, positive)
    or failed alone with a one-line reason."""
    def cases() -> Iterator[Case]:
        from trainsim.validate import BUNDLED_DIR
        with open(Path(BUNDLED_DIR) / "training_public.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        header = list(rows[0])
        bases = [r for r in rows if r["id"] in ROW_BASES]
        batch = []
        for base in bases:
            for col, values in ROW_EDITS.items():
                for v in values:
                    row = dict(base, **{col: v})
                    if col == "fp8_recipe" and v:
                        row["dtype"] = "fp8"
                    row["id"] = f"{base['id']}-{len(batch)}"
                    batch.append((f"{base['id']} {col}={v!r}", row))
        yield from csv_batches(batch, header, workdir, "training", 20)
    return cases


LAYER_EDITS: dict[str, list] = {
    "shape.h": [0, -1, 7, 1.5, math.nan, 2**40, "4096", None], "shape.heads": [0, 3, 7, None],
    "shape.kv": [0, 3, 64, None, "x"], "shape.ffn": [0, 1, None, math.inf],
    "shape.head_dim": [1, 7, 300, 576, 0], "seq": [0, 1, -4096, math.nan, 10**12, "4k"],
    "mbs": [0, 2, -1, 1.5, None], "mode": ["", "bogus", "compile", None, 1],
    "dtype": ["fp8", "fp32", "", None, "bogus"],
    "attn": ["flash3", "cudnn", "eager", "", "x", None],
    "family": ["", "mixtral", "deepseek", "x", None],
    "fwd_ms": [0, -1, math.nan, math.inf, "x", 1e300],
    "fwd_bwd_ms": [0, -1, math.nan, 1e-300, None], "kind": ["kernel", "", None, "layer "],
    "params": [0, -1, None], "peak_extra_bytes": [-1, math.nan, None],
    "saved_activation_bytes": [-1, 1e30, None], "device": ["", "NVIDIA B200", "x", None],
}


def layers_cases(workdir: str, seed: int) -> Callable[[], Iterator[Case]]:
    """The measured-layers file (``layers_h100_measured.jsonl``) with one record's field given
    an odd value, through ``trainsim validate``: its other records predicted, that one
    predicted or failed alone, or the file refused in one line."""
    def cases() -> Iterator[Case]:
        src = KERNELS_CSV.parent / "layers_h100_measured.jsonl"
        records = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
        rng = random.Random(seed)
        for field, values in LAYER_EDITS.items():
            for v in values:
                i = rng.randrange(len(records))
                recs = copy.deepcopy(records[:6] + [records[i]])
                rec = recs[-1]
                if field.startswith("shape."):
                    rec.setdefault("shape", {})[field[6:]] = v
                else:
                    rec[field] = v
                p = os.path.join(workdir, f"layers_{field}_{len(str(v))}.jsonl")
                Path(p).write_text("".join(json.dumps(r) + "\n" for r in recs))
                yield f"layers[{i}].{field}={v!r}", (lambda a=["validate", p]: _cli(a))
    return cases
