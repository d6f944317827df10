"""fuzz63's surfaces over files and service bodies (round 43, robust63):

- ``rows``: rows of the newest check files (training_maxtext_a3.csv with its
  ``all_reduce_combine_bytes`` column and ``unscanned_layers`` option, training_fastllm.csv,
  training_colossalai.csv) with one cell written otherwise (counts, switches, options lists,
  framework versions, dtypes). Oracle: fuzz53's pair check (the damaged row predicts a finite
  positive time or one error line, the untouched row as before) and, for a count cell, the plain
  value's answer (fuzz58's ``_row_cell``) or an error naming the column;
- ``export``: ``export --chakra --simai`` of fuzz62's layouts under the newest profiles and
  jax62's unscanned stack (fuzz58_files' ``_export_check``: the traces read back to simulate's
  iteration, every send met by its receive);
- ``profile``: ``profile --device cpu --quick`` with odd options (GPU, models, sizes, an --out
  in a folder that is not there / a folder / a damaged file to --merge). Oracle: a database JSON
  written, or one line naming the option;
- ``hf``: the bundled Hugging Face config.json examples with one key written otherwise
  (types, NaN / inf / huge / negative / zero, lists, a second model_type). Oracle: an answer,
  or one line naming the key or the file;
- ``service``: the web form's fields as the page sends them (search: counts as typed text;
  goodput: the YAML text with the new fields and odd YAML; validate: a file name) and API bodies
  with jax62's fields. Oracle: ``service.jobs.problem`` never raises, a refusal is a one-line
  4xx, and what it queues runs (fuzz62's ``_options_check`` rule).
"""

from __future__ import annotations

import copy
import csv
import json
import math
import random
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fuzz_checks
from fuzz57 import _run, json_answer, one_line
from fuzz58 import _count, _switch
from fuzz_checks import BASES, REFUSED, Case

ROOT = Path(__file__).resolve().parent.parent

# ------------------------------------------------------------------------------ rows


def _options_cell(text: str) -> str | None:
    """Options cells are read as written (no plain spelling of their own): None -> graded by
    the pair check alone."""
    return None


ROW_CELLS: dict[str, tuple[Callable[[str], str | None] | None, list[str]]] = {
    "all_reduce_combine_bytes": (_count(1), ["134217728", "67108864", "1", "0", "-1", "1.5",
                                             "134217728.0", " 1024 ", "1e8", "nan", "inf",
                                             "128M", "x", "", "1_024", str(2**53 + 1),
                                             "\uff11"]),
    "dp_replicate": (_count(1), ["1", "2", "4", "0", "-2", "1.5", "2.0", "x", "", "nan",
                                 "3"]),
    "micro_batch_size": (_count(1), ["1", "2", "4", "0", "-1", "2.5", "x", "", "1e0", "8"]),
    "zero_stage": (None, ["0", "1", "2", "3", "4", "-1", "x", "", "2.0", "3.5"]),
    "tied_embeddings": (_switch, ["0", "1", "true", "x", "", "2", "0.0", "yes"]),
    "options": (None, ["", "unscanned_layers", "onehot_embedding;unscanned_layers",
                       "unscanned_layers;unscanned_layers", "bogus", "xla_layers",
                       "UNSCANNED_LAYERS", " unscanned_layers ", ";", "tp_overlap",
                       "unscanned_layers=1", "onehot_embedding"]),
    "framework_version": (None, ["", "2024-04-09", "2023-01-01", "2099-01-01", "x", "0",
                                 "2024-12-03", "2025-09-26", "2024-13-45", " "]),
    "dtype": (None, ["bf16", "fp16", "fp8", "fp32", "BF16", "x", "", "int8", "mxfp8"]),
    "framework": (None, ["", "maxtext", "fast-llm", "colossalai", "Fast-LLM", "x", "paxml",
                         "megatron-core"]),
    "gpus_per_node": (_count(1), ["8", "4", "0", "3", "x", "", "16", "8.0"]),
}
ROW_FILES = ["training_maxtext_a3.csv", "training_fastllm.csv", "training_colossalai.csv"]


def _row_case(one: Callable, rows: list[dict[str, str]], columns: list[str], workdir: str,
              i: int, j: int, col: str, cell: str) -> str | None:
    from fuzz58 import _row_cell

    reader, _ = ROW_CELLS[col]
    if reader is None:
        return one(i, j, {col: cell})
    return _row_cell(one, rows, columns, workdir, i, j, col, cell, {}, reader)


def rows_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        from fuzz53 import _pair_check

        for name in ROW_FILES:
            with open(ROOT / "benchmarks" / name, newline="", encoding="utf-8") as f:
                rows = list(csv.DictReader(f))
            columns = list(rows[0].keys())
            small = [k for k, r in enumerate(rows)
                     if r["num_gpus"].strip().isdigit() and int(r["num_gpus"]) <= 64]
            if len(small) < 2:
                continue
            one = _pair_check(rows, columns, workdir)
            cols = [c for c in ROW_CELLS if c in columns or c == "options"]
            for _ in range(50):
                col = rng.choice(cols)
                cell = rng.choice(ROW_CELLS[col][1])
                i = rng.choice(small)
                j = rng.choice([k for k in small if k != i])
                if col not in columns:
                    continue
                yield f"row {name} {rows[i]['id']} {col}={cell!r}", (
                    lambda o=one, r=rows, c=columns, a=i, b=j, k=col, v=cell:
                    _row_case(o, r, c, workdir, a, b, k, v))
    return cases


# ------------------------------------------------------------------------------ export

def export_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        from fuzz62 import _layout_run
        from fuzz63 import NEW_PROFILES

        for i in range(60):
            raw = _layout_run(rng)
            raw["cluster"]["num_gpus"] = rng.choice([8, 16])
            if rng.random() < 0.2:
                raw["training"]["framework"] = "maxtext"
                raw["training"]["unscanned_layers"] = True
                raw["parallel"] = {"zero_stage": 3, "dp_replicate": 2,
                                   "all_reduce_combine_bytes": rng.choice([2**20, 2**27])}
            else:
                raw["training"]["framework"] = rng.choice(NEW_PROFILES + [None])
                for k in ("zero_stage", "data_parallel_impl", "dp_replicate",
                          "distributed_optimizer"):
                    raw["parallel"].pop(k, None)
            per_kernel = i % 6 == 0
            yield f"export {raw['training'].get('framework')} {json.dumps(raw['parallel'])}", (
                lambda c=raw, k=per_kernel: _export(c, k))
    return cases


# ------------------------------------------------------------------------------ profile

PROFILE_OPTS = {
    "--gpu": ["h100-sxm-80gb", "H100-SXM-80GB", "bogus", "", "mi300x", "b200-sxm-180gb"],
    "--models": ["llama3-8b", "bogus", "", "llama3-8b,,llama3-8b", "gpt3-350m", " llama3-8b "],
    "--tp": ["1", "0", "-1", "3", "1,2", "x", "", "1.5", "8,8"],
    "--seq": ["512", "0", "-512", "x", "", "1e3", "513", "512,1024"],
    "--cp": ["1", "2", "0", "x", "3"],
    "--mbs": ["1", "0", "-1", "x", "2"],
}


def _profile_check(opts: dict[str, str], out: str) -> str | None:
    d = Path(tempfile.mkdtemp(dir=_WORK[0]))
    if out == "missing folder":
        path = d / "no" / "such" / "db.json"
    elif out == "a folder":
        path = d
    elif out == "damaged merge":
        path = d / "db.json"
        path.write_text("{not json", encoding="utf-8")
        opts = {**opts, "--merge": ""}
    else:
        path = d / "db.json"
    args = ["profile", "--device", "cpu", "--quick", "--no-layers", "--out", str(path)]
    for k, v in opts.items():
        args += [k] if v == "" and k == "--merge" else [k, v]
    with fuzz_checks.cpu_deadline(60):
        r, lines = _run(args)
    if r.exit_code == 0:
        try:
            db = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return "profile exit 0 with no readable database"
        if not fuzz_checks.finite(db):
            return "a non-finite figure in the database"
        return None
    return one_line(r, lines)


_WORK = [""]


def profile_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    _WORK[0] = workdir

    def cases() -> Iterator[Case]:
        for _ in range(30):
            opts = {"--gpu": "h100-sxm-80gb", "--models": "llama3-8b", "--tp": "8",
                    "--seq": "512"}
            for k in rng.sample(sorted(PROFILE_OPTS), rng.choice([1, 1, 2])):
                opts[k] = rng.choice(PROFILE_OPTS[k])
            out = rng.choice(["plain", "plain", "missing folder", "a folder", "damaged merge"])
            yield f"profile {opts} out={out}", (lambda o=opts, w=out: _profile_check(o, w))
    return cases


# ------------------------------------------------------------------------------ hf

HF_VALUES = [None, 0, -1, 1, 2**70, 1.5, "x", "", [], {}, [1, 2], True, math.nan, math.inf,
             1e308, "4096", -0.0]


def _hf_check(example: str, key: str, value: Any, drop: bool) -> str | None:
    src = ROOT / "examples" / "hf" / example / "config.json"
    data = json.loads(src.read_text(encoding="utf-8"))
    if drop:
        data.pop(key, None)
    else:
        data[key] = value
    d = Path(tempfile.mkdtemp(dir=_WORK[0]))
    hf = d / "config.json"
    hf.write_text(json.dumps(data), encoding="utf-8")
    run = copy.deepcopy(BASES["dense"])
    run["model"] = {"hf_config": str(hf), "num_layers": 2}
    (d / "run.json").write_text(json.dumps(run), encoding="utf-8")
    with fuzz_checks.cpu_deadline(60):
        r, lines = _run(["simulate", str(d / "run.json"), "--format", "json"])
    if r.exit_code == 0:
        return json_answer(r.stdout)
    if "Traceback" in r.output or len(lines) != 1:
        return one_line(r, lines)
    if key in lines[0] or "config.json" in lines[0] or "model." in lines[0]:
        REFUSED[0] += 1
        return None
    start = re.sub(r"\d+", "N", re.sub(r"/\S+", "PATH", lines[0]))[:60]
    return f"an HF config refusal naming neither the key nor the file: {start}"


def hf_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    _WORK[0] = workdir

    def cases() -> Iterator[Case]:
        examples = sorted(p.parent.name for p in (ROOT / "examples" / "hf").glob("*/config.json"))
        for _ in range(80):
            ex = rng.choice(examples)
            keys = sorted(json.loads((ROOT / "examples" / "hf" / ex / "config.json")
                                     .read_text(encoding="utf-8")))
            key = rng.choice(keys)
            drop = rng.random() < 0.15
            value = rng.choice(HF_VALUES)
            yield f"hf {ex} {key}={'(dropped)' if drop else repr(value)}", (
                lambda e=ex, k=key, v=value, x=drop: _hf_check(e, k, v, x))
    return cases


# ------------------------------------------------------------------------------ service

FORM_SEARCH = {"gpus": ["8", "8,16", "", "0", "8.0", "1e1", "eight", "8 ", "-8", "2,048"],
               "global_batch": ["16", "16.0", "", "0", "1e1", "x", "-16", "1.5"],
               "seq": ["512", "512.0", "5e2", "", "x", "0"],
               "tp": ["", "1", "1,2", "0", "x", "3", "1,,2"],
               "pp": ["", "1", "2", "x", "0"],
               "top": ["1", "0", "x", "", "1.5", "1e9"],
               "gpu": ["h100-sxm-80gb", "", "bogus", "H100-SXM-80GB", "mi300x"]}
GOODPUT_TEXT = [
    ("model: gpt3-350m\ntraining: {global_batch_size: 16, seq_length: 512, train_tokens: 1e9}\n"
    "cluster: {gpu: h100-sxm-80gb, num_gpus: 8}\n"),
    ("model: gpt3-350m\ntraining: {global_batch_size: 16, seq_length: 512, train_tokens: 1e9, "
    "framework: maxtext, unscanned_layers: true}\nparallel: {zero_stage: 3, dp_replicate: 2, "
    "all_reduce_combine_bytes: 134217728}\ncluster: {gpu: h100-sxm-80gb, num_gpus: 8}\n"),
    ("model: gpt3-350m\ntraining: {global_batch_size: 16, seq_length: 512, train_tokens: 1e9}\n"
    "parallel: {all_reduce_combine_bytes: 1024}\ncluster: {gpu: h100-sxm-80gb, num_gpus: 8}\n"),
    ("model: gpt3-350m\ntraining: {global_batch_size: 16, seq_length: 512, train_tokens: 1e9}\n"
    "cluster: {gpu: h100-sxm-80gb, num_gpus: 8}\nreliability: {failures: bogus}\n"),
    ("model: gpt3-350m\ntraining: {global_batch_size: 16, seq_length: 512, train_tokens: .nan}\n"
    "cluster: {gpu: h100-sxm-80gb, num_gpus: 8}\n"),
    "model: gpt3-350m\n\ttraining: {}\n", "", "- a\n- b\n", "model: [\n", "42",
    ("model: gpt3-350m\ntraining: {global_batch_size: 16, seq_length: 512, train_tokens: 1e9}\n"
    "cluster: {gpu: h100-sxm-80gb, num_gpus: 8}\nreliability: {mtbf_h: -1}\n"),
    ("model: gpt3-350m\ntraining: {global_batch_size: 16, seq_length: 512, train_tokens: 1e9, "
    "framework: fast-llm}\nparallel: {cpu_offloading_num_layers: 2}\n"
    "cluster: {gpu: h100-sxm-80gb, num_gpus: 8}\n")]
FORM_GOODPUT = {"trials": ["1", "3", "", "0", "x", "1.5", "1e2", "-1"],
                "interval": ["", "1h", "30m", "0s", "x", "-1h", "3600", "1e9h"]}
VALIDATE_FILES = ["training_fastllm.csv", "training_colossalai.csv", "../README.md", "",
                  "bogus.csv", "training_maxtext_a3.csv", "/etc/passwd", "TRAINING_FASTLLM.CSV"]


def _job(kind: str, config: Any, options: Any) -> str | None:
    from trainsim.service import Settings
    from trainsim.service.jobs import problem, run

    try:
        got = problem(kind, copy.deepcopy(config), copy.deepcopy(options),
                      Settings(workers=0, checkers=0))
    except Exception as exc:  # noqa: BLE001 - the finding: a 500
        return f"the {kind} job check raises {type(exc).__name__}"
    if got is not None:
        status, _field, text = got
        if not 400 <= status < 500 or "\n" in text or not text.strip():
            return f"a {kind} refusal with status {status} or not one line"
        REFUSED[0] += 1
        return None
    try:
        with fuzz_checks.cpu_deadline(20):
            run(kind, copy.deepcopy(config), copy.deepcopy(options),
                Settings(workers=0, checkers=0))
    except fuzz_checks.Hang:
        return None
    except fuzz_checks.TrainsimError as exc:
        return f"a {kind} job queued, then refused: {re.sub(r'[0-9]+', 'N', str(exc))[:60]}"
    except Exception as exc:  # noqa: BLE001 - the finding: a failed job
        return f"a {kind} job queued, then failed with {type(exc).__name__}"
    return None


def service_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        from fuzz63 import _xla_run

        for _ in range(40):
            opts = {"gpu": "h100-sxm-80gb", "gpus": "8", "global_batch": "16", "seq": "512",
                    "tp": "1", "pp": "1", "top": "1"}
            for k in rng.sample(sorted(FORM_SEARCH), rng.choice([1, 2])):
                v = rng.choice(FORM_SEARCH[k])
                if v:
                    opts[k] = v
                else:
                    opts.pop(k, None)
            opts.update(plot=True, max_micro_batch=1, overlap="off")
            yield f"form search {opts}", (
                lambda o=opts: _job("search", {"model": "gpt3-350m"}, o))
        for _ in range(30):
            text = rng.choice(GOODPUT_TEXT)
            opts = {"plot": True}
            for k, values in FORM_GOODPUT.items():
                if (v := rng.choice(values)):
                    opts[k] = v
            opts.setdefault("trials", "2")
            yield f"form goodput {text[:50]!r} {opts}", (
                lambda t=text, o=opts: _job("goodput", t, o))
        for f in VALIDATE_FILES:
            yield f"form validate {f!r}", (lambda x=f: _job("validate", {}, {"file": x}))
        for _ in range(40):
            raw = _xla_run(rng)
            yield f"api simulate {json.dumps(raw['parallel'])} {raw['training']}", (
                lambda c=raw: _api_alike(c))
    return cases


def _api_alike(raw: dict[str, Any]) -> str | None:
    from fuzz59_runs import _service_alike

    if not fuzz_checks.finite(raw):  # a JSON file holds no NaN / inf (the file is refused, by
        return _job("simulate", raw, {})  # design): the service's own refusal is graded
    return _service_alike(raw, _WORK[0])


def _export(cfg: dict[str, Any], per_kernel: bool) -> str | None:
    from fuzz58_files import _export_check

    bad = _export_check(cfg, _WORK[0], per_kernel)
    if bad and "SimAI's workload format has no second data-parallel group" in bad:
        REFUSED[0] += 1  # HSDP: SimAI's format has one data-parallel group (by design)
        return None
    return bad


def surfaces(workdir: str, rng: random.Random) -> dict[str, Callable[[], Iterator[Case]]]:
    _WORK[0] = workdir
    return {"rows": rows_cases(workdir, rng), "export": export_cases(workdir, rng),
            "profile": profile_cases(workdir, rng), "hf": hf_cases(workdir, rng),
            "service": service_cases(workdir, rng)}


__all__ = ["surfaces"]
