"""Thirteenth input sweep (26th session, fuzz13): what the twelve earlier sweeps left, each
surface checked against an oracle from outside the code under test where one exists.

- ``hf``: the class-default config.json of every family transformers 5.24.0 builds and trainsim
  reads (fuzz_sweep8's ``HF_FAMILIES``), each key in turn written as an explicit ``null``, left
  out, doubled, given under its class's ``attribute_map`` alias, written as a float (``4096.0``)
  or as text (``"4096"``). The oracle is the parameter count of the model transformers builds
  from the same file on the meta device: trainsim must count within ``HF_TOLERANCE`` or refuse
  in one line naming the key (a core size left out may be refused as missing); a file
  transformers cannot build is only required to be read or refused cleanly. The earlier sweeps
  popped keys of hand-written files (fuzz_sweep10) or set them to odd values (fuzz_sweep11) with
  no count to compare; none wrote a null, an alias or a doubled size against transformers.
- ``plot``: ``--plot`` (new in c283138) on simulate, sweep, validate and goodput with paths that
  cannot be written (a name over the file system's limit, under a file, /dev/full) or odd ones
  (upper-case suffix, no suffix, a hidden name, spaces, non-ASCII): refused in one line before
  any work (nothing on stdout), or the figure written and non-empty.
- ``grid``: ``sweep --vary`` grids that are empty, a single point, duplicates, ranges written
  backwards, floats for integers, 1,000 points, and over the grid limit: one line, or one row
  per distinct value.
- ``determinism``: simulate, sweep, validate and collective ``--format json`` run as separate
  processes under PYTHONHASHSEED 0 and 1: byte-identical (set or dict order must not leak).
- ``service``: validate jobs whose ``options.csv`` upload is empty, a header only, junk, ragged,
  NUL bytes, duplicate ids, non-numeric or unknown cells, with and without ``options.plot``,
  checked as a submission is (``jobs.problem``) and run when accepted: a refusal names
  ``options.csv`` (never the server's temporary file), an accepted job runs and its output
  names no temporary file; simulate and sweep jobs with ``options.plot`` on one point, points
  that fail, a text field: a figure.
- ``scale``: weak scaling, 1 data-parallel group to 2^20 GPUs at a fixed per-GPU batch, for drawn
  catalog models, GPUs and tp/pp: every iteration time finite and positive, never below the
  single-group time by more than ``SCALE_TOLERANCE``; and the same run on a catalog GPU with
  no less of anything (H100 -> H200, B200 -> B300) never slower.

    python benchmarks/fuzz_sweep13.py [--seed 0] [--n 200] [--only hf,plot,grid,...] [--long]

Prints each failure class with its first inputs and the counts; exit 1 on any failure.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import os
import random
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_checks import Case, chosen_cases, only_of, report_timed, surface_class, sweep_parser
from fuzz_sweep6 import run_cases
from fuzz_sweep8 import HF_FAMILIES, HF_TOLERANCE

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "llama3-8b-h100.yaml"
GOODPUT = ROOT / "examples" / "goodput-gpt3-175b-1k.yaml"
VALIDATION = ROOT / "src" / "trainsim" / "data" / "validation"
TMP = Path(tempfile.mkdtemp(prefix="fuzz13-"))
SRC = Path(__import__("trainsim").__file__).resolve().parents[1]

ORACLE_GAPS = {
    ("mpt", "expansion_ratio"): "transformers' MptMLP builds 4 x d_model whatever the ratio; "
                                "trainsim reads llm-foundry's ratio (hf_families docstring)",
    ("helium", "head_dim"): "HeliumAttention's o_proj is hidden x hidden whatever the heads' "
                            "width: a model whose forward cannot run",
    ("helium", "hidden_size"): "the same o_proj: heads x head_dim no longer the width",
    ("helium", "num_attention_heads"): "the same o_proj",
}
"""(family, key) where transformers' count is no oracle for a changed value, and why."""
MODES = ("null", "drop", "double", "alias", "float", "text")
SCALE_TOLERANCE = 0.01
"""Largest relative drop of the iteration time as data-parallel groups are added at a fixed
per-GPU batch: the all-reduce's bandwidth term is flat past a few nodes and NCCL's choice of
algorithm and channels moves its latency term a little (0.2 % seen from 256 to 16,384 GPUs)."""


def _write(name: str, body: str | bytes) -> Path:
    path = TMP / name
    path.write_bytes(body if isinstance(body, bytes) else body.encode("utf-8"))
    return path


def _process(args: list[str], env: dict | None = None, timeout: int = 300) -> tuple[int, str, str]:
    full = {**os.environ, "PYTHONPATH": str(SRC), "TRAINSIM_DEBUG": "1", **(env or {})}
    done = subprocess.run([sys.executable, "-m", "trainsim", *args], capture_output=True,
                          text=True, timeout=timeout, env=full, cwd=TMP, check=False)
    return done.returncode, done.stdout, done.stderr


def _one_line(rc: int, err: str) -> str | None:
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("warning:")]
    if "Traceback" in err or "internal error" in err:
        return "traceback"
    if rc != 0 and (len(lines) != 1 or not lines[0].startswith("error: ")):
        return f"not one error line: {err.strip()[:120]!r}"
    return None


# ------------------------------------------------------------------------------ hf

def _hf_family_bases() -> dict[str, dict]:
    """Each family's class-default config.json that trainsim reads as it is."""
    from transformers import AutoConfig

    from trainsim.catalog import model_from_hf_config
    from trainsim.model.counts import total_params
    bases = {}
    for kind in HF_FAMILIES:
        try:
            base = AutoConfig.for_model(kind).to_dict()
            total_params(model_from_hf_config(_write("hf-base.json", json.dumps(base))))
        except Exception:  # noqa: BLE001, S112 - not in this transformers, or refused as a whole
            continue
        bases[kind] = base
    return bases


def _reference(cfg: dict) -> int | None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    try:
        conf = AutoConfig.for_model(cfg["model_type"],
                                    **{k: v for k, v in cfg.items() if k != "model_type"})
        with torch.device("meta"):
            return sum(p.numel() for p in AutoModelForCausalLM.from_config(conf).parameters())
    except Exception:  # noqa: BLE001 - transformers refuses or cannot build it: no oracle
        return None


def _variant(base: dict, kind: str, key: str, mode: str) -> dict | None:
    from transformers import AutoConfig
    cfg = copy.deepcopy(base)
    value = cfg[key]
    number = isinstance(value, int) and not isinstance(value, bool)
    if mode == "null":
        cfg[key] = None
    elif mode == "drop":
        cfg.pop(key)
    elif mode == "double":
        if not number or value < 2 or key.endswith("token_id"):
            return None
        cfg[key] = value * 2
    elif mode == "alias":
        names = {f: a for a, f in getattr(type(AutoConfig.for_model(kind)), "attribute_map",
                                          {}).items()}
        if key not in names:
            return None
        cfg[names[key]] = cfg.pop(key)
    elif mode in ("float", "text"):
        if not number:
            return None
        cfg[key] = float(value) if mode == "float" else str(value)
    return cfg


def hf_cases(rng: random.Random, n: int, long: bool) -> Iterator[Case]:
    try:
        import torch  # noqa: F401
        import transformers
    except ImportError:
        return
    transformers.logging.set_verbosity_error()
    logging.disable(logging.WARNING)
    from trainsim.catalog import model_from_hf_config
    from trainsim.errors import TrainsimError
    from trainsim.model.counts import total_params

    skip = {"model_type", "transformers_version", "architectures", "dtype", "torch_dtype",
            "id2label", "label2id", "output_attentions", "output_hidden_states", "return_dict"}

    def one(cfg: dict, kind: str, key: str, mode: str) -> str | None:
        ref = _reference(cfg)
        path = _write("config.json", json.dumps(cfg))
        try:
            got = total_params(model_from_hf_config(path))
        except TrainsimError as exc:
            text = str(exc)
            core = mode == "drop" and "in the Hugging Face config" in text
            if ref is not None and not core and key not in text and mode != "alias":
                return f"valid file refused, key not named: {text[:100]!r}"
            if ref is None and key not in text and not core and mode != "alias":
                return f"refused, key not named: {text[:100]!r}"
            raise
        if ref and abs(got / ref - 1) > HF_TOLERANCE and (kind, key) not in ORACLE_GAPS:
            return (f"silently misread: {got:,} parameters, transformers builds {ref:,} "
                    f"({got / ref - 1:+.1%})")
        return None

    drawn = []
    bases = _hf_family_bases()
    for kind, base in bases.items():
        for key in base:
            if key in skip or key.startswith("_") or isinstance(base[key], bool) \
                    and key != "multi_query":
                continue
            for mode in MODES:
                if mode in ("double", "alias", "float", "text") or base[key] is not None:
                    drawn.append((kind, key, mode))
    if not long:
        drawn = rng.sample(drawn, min(len(drawn), n * 4))
    for kind, key, mode in drawn:
        cfg = _variant(bases[kind], kind, key, mode)
        if cfg is not None:
            yield f"hf {kind}.{key} {mode}", lambda a=(cfg, kind, key, mode): one(*a)


# ------------------------------------------------------------------------------ plot

def plot_cases() -> Iterator[Case]:
    runs = {"simulate": ["simulate", str(EXAMPLE)],
            "sweep": ["sweep", str(EXAMPLE), "--vary", "parallel.tp=1,2"],
            "validate": ["validate", str(VALIDATION / "collectives_public.csv"), "--workers",
                         "1"],
            "goodput": ["goodput", str(GOODPUT), "--trials", "3"]}
    afile = _write("a-file.txt", "x")
    (TMP / "plots").mkdir(exist_ok=True)
    paths = {"name over NAME_MAX": str(TMP / ("p" * 300 + ".png")),
             "under a file": str(afile / "x.png"), "/dev/full": "/dev/full",
             "upper-case suffix": str(TMP / "plots" / "a.PNG"),
             "no suffix": str(TMP / "plots" / "b"), "hidden name": str(TMP / "plots" / ".png"),
             "spaces and accents": str(TMP / "plots" / "caf\u00e9 d\u00e9j\u00e0 vu.svg"),
             "pdf": str(TMP / "plots" / "c.pdf"), "two suffixes": str(TMP / "plots" / "d.svg.png"),
             "path over PATH_MAX": str(TMP / "/".join(["q" * 200] * 25)) + ".png"}

    def one(args: list[str], path: str) -> str | None:
        rc, out, err = _process([*args, "--plot", path])
        bad = _one_line(rc, err)
        if bad:
            return bad
        if rc != 0:
            if out.strip():
                return "refused after the work (a result printed first)"
            # only a write the device refuses can fail after the work; all else before it,
            # as click's usage error naming the option
            if not path.startswith("/dev/") and "'--plot'" not in err:
                return f"refused after the work, --plot not named: {err.strip()[:100]!r}"
            return None
        p = Path(path)
        if path.startswith("/dev/") or (p.exists() and p.stat().st_size > 0):
            return None
        return "exit 0 but no figure written"

    for command, args in runs.items():
        for what, path in paths.items():
            yield f"plot {command} {what}", lambda a=args, p=path: one(a, p)


# ------------------------------------------------------------------------------ grid

def grid_cases() -> Iterator[Case]:
    grids = {"one point": (["parallel.tp=2"], 1), "duplicates": (["parallel.tp=2,2,2"], 1),
             "range": (["parallel.tp=1:4"], None), "backwards range": (["parallel.tp=4:1"], None),
             "floats for ints": (["parallel.tp=1.0,2.0"], 2),
             "1,000 batches": (["training.global_batch_size=" + ",".join(
                 str(8 * i) for i in range(1, 1001))], 1000),
             "over the limit": (["training.global_batch_size=" + ",".join(
                 str(8 * i) for i in range(1, 301)), "parallel.pp=" + ",".join(
                     str(i) for i in range(1, 301))], None),
             "only commas": (["parallel.tp=,,,"], None), "blank": (["parallel.tp= "], None),
             "two fields": (["parallel.tp=1,2", "training.micro_batch_size=1,2"], 4),
             "text field": (["training.dtype=bf16,fp8,BF16"], None),
             "unknown field": (["parallel.tpp=1,2"], None),
             "huge value": (["cluster.num_gpus=" + str(2**62)], None),
             "nan": (["training.global_batch_size=nan"], None)}

    def one(vary: list[str], rows: int | None) -> str | None:
        args = ["sweep", str(EXAMPLE), "--format", "json"]
        for v in vary:
            args += ["--vary", v]
        rc, out, err = _process(args)
        bad = _one_line(rc, err)
        if bad or rc != 0:
            return bad
        data = json.loads(out)
        points = data if isinstance(data, list) else data.get("points", data.get("rows", []))
        for p in points:
            for k, v in (p.items() if isinstance(p, dict) else []):
                if isinstance(v, float) and not math.isfinite(v):
                    return f"non-finite {k}"
        if rows is not None and len(points) != rows:
            return f"{len(points)} rows for {rows} distinct values"
        return None

    for what, (vary, rows) in grids.items():
        yield f"grid {what}", lambda v=vary, r=rows: one(v, r)


# ------------------------------------------------------------------------------ determinism

def determinism_cases() -> Iterator[Case]:
    runs = {"simulate": ["simulate", str(EXAMPLE)],
            "simulate moe": ["simulate", str(ROOT / "examples" / "deepseek-v3-h800.yaml")],
            "sweep": ["sweep", str(EXAMPLE), "--vary", "parallel.tp=1,2,4"],
            "validate": ["validate", str(VALIDATION / "collectives_public.csv"), "--workers",
                         "1"],
            "validate kernels": ["validate", str(VALIDATION / "kernels_published.csv"),
                                 "--workers", "1"],
            "collective": ["collective", "--sizes", "8:1M"]}

    def one(args: list[str]) -> str | None:
        outs = []
        for seed in ("0", "1"):
            rc, out, err = _process([*args, "--format", "json"], env={"PYTHONHASHSEED": seed})
            if rc != 0:
                return _one_line(rc, err) or f"refused: {err.strip()[:100]!r}"
            outs.append(out)
        return None if outs[0] == outs[1] else "output differs between PYTHONHASHSEED 0 and 1"

    for what, args in runs.items():
        yield f"determinism {what}", lambda a=args: one(a)


# ------------------------------------------------------------------------------ service

SMALL_RUN = {"model": "llama3.2-1b", "parallel": {"tp": 1},
             "training": {"global_batch_size": 8, "seq_length": 1024},
             "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}}


def _uploads() -> dict[str, str]:
    lines = (VALIDATION / "training_public.csv").read_text().splitlines()
    coll = (VALIDATION / "collectives_public.csv").read_text().splitlines()
    head, row = lines[0], lines[1]
    return {"empty": "", "header only": head + "\n", "junk": "a,b\n1,2\n",
            "ragged": head + "\n1,2\n", "nul": head + "\n\x00\n", "bom": "\ufeff" + head + "\n"
            + row + "\n", "crlf": head + "\r\n" + row + "\r\n",
            "duplicate ids": f"{head}\n{row}\n{row}\n",
            "non-numeric cell": head + "\n" + row.replace(",8,", ",x,", 1) + "\n",
            "unknown gpu": head + "\n" + row.replace("h100", "zz100", 1) + "\n",
            "blank lines": head + "\n\n" + row + "\n\n", "one collective": "\n".join(coll[:2]) + "\n",
            "extra column": head + ",extra\n" + row + ",1\n"}


def service_cases() -> Iterator[Case]:
    from trainsim.errors import TrainsimError
    from trainsim.service import Settings, jobs
    settings = Settings(db_url=f"sqlite:///{TMP / 'jobs.db'}", workers=0, checkers=0)

    def one(kind: str, config: dict, options: dict) -> str | None:
        bad = jobs.problem(kind, config, options, settings)
        if bad is not None:
            status, field, message = bad
            if not 400 <= status < 500 or "\n" in message:
                return f"refusal {status}: {message[:80]!r}"
            if "trainsim-job" in message or tempfile.gettempdir() in message:
                return f"refusal names the server's temporary file: {message[:90]!r}"
            if "csv" in options and field != "options.csv":
                return f"upload refused as {field!r}, not options.csv"
            return None
        try:
            out = jobs.run(kind, config, options, settings)
        except TrainsimError as exc:
            return f"accepted (202), refused when run: {str(exc)[:80]!r}"
        text = json.dumps({k: v for k, v in vars(out).items() if isinstance(v, str)})
        if "trainsim-job" in text:
            return "output names the server's temporary file"
        if options.get("plot") and not out.plot:
            return "options.plot true but no figure"
        return None

    for what, text in _uploads().items():
        for plot in (False, True):
            yield f"service validate {what} plot={plot}", \
                lambda o={"csv": text, "plot": plot}: one("validate", {}, o)
    for what, vary in {"one point": ["parallel.tp=1"], "a failing point": ["parallel.tp=1,3"],
                       "text field": ["training.dtype=bf16,fp8"]}.items():
        yield f"service sweep plot {what}", \
            lambda v=vary: one("sweep", SMALL_RUN, {"vary": v, "plot": True})
    yield "service simulate plot", lambda: one("simulate", SMALL_RUN, {"plot": True})


# ------------------------------------------------------------------------------ scale

SCALE_MODELS = ("llama3-8b", "gpt3-5b", "mixtral-8x7b", "deepseek-v2-lite", "gemma-2-9b",
                "qwen2.5-7b", "falcon-7b", "gpt-oss-20b")
SCALE_GPUS = ("h100-sxm-80gb", "a100-sxm-80gb", "b200-sxm-180gb", "mi300x", "h200-sxm-141gb")
BETTER = {"h100-sxm-80gb": "h200-sxm-141gb", "b200-sxm-180gb": "b300-sxm-288gb"}
"""A catalog GPU and one with no less compute, memory or bandwidth of any kind."""


def scale_cases(rng: random.Random, n: int) -> Iterator[Case]:
    from trainsim.catalog import run_config_from_dict
    from trainsim.errors import TrainsimError
    from trainsim.simulator import simulate

    def run(model: str, gpu: str, tp: int, pp: int, dp: int, micro: int) -> float:
        cfg = {"model": model, "parallel": {"tp": tp, "pp": pp},
               "training": {"seq_length": 2048, "micro_batch_size": 1,
                            "global_batch_size": dp * micro},
               "cluster": {"gpu": gpu, "gpus_per_node": 8, "num_gpus": dp * tp * pp}}
        t = simulate(run_config_from_dict(cfg)).iteration_time_s
        if not (isinstance(t, float) and math.isfinite(t) and t > 0):
            raise ValueError(f"iteration time {t!r} at dp {dp}")
        return t

    def weak(model: str, gpu: str, tp: int, pp: int, micro: int) -> str | None:
        first = run(model, gpu, tp, pp, 1, micro)  # a TrainsimError: refused as a whole
        for e in (1, 3, 6, 10, 14, 20):
            try:
                t = run(model, gpu, tp, pp, 2 ** e, micro)
            except TrainsimError as exc:
                return f"refused at dp 2^{e} though dp 1 ran: {str(exc)[:90]!r}"
            if t < first * (1 - SCALE_TOLERANCE):
                return f"more data-parallel GPUs faster: dp 1 {first:.4f} s, 2^{e} {t:.4f} s"
        if gpu in BETTER:
            better = run(model, BETTER[gpu], tp, pp, 8, micro)
            base = run(model, gpu, tp, pp, 8, micro)
            if better > base * (1 + 1e-9):
                return f"{BETTER[gpu]} slower than {gpu}: {better:.4f} > {base:.4f} s"
        return None

    for _ in range(n):
        a = (rng.choice(SCALE_MODELS), rng.choice(SCALE_GPUS), rng.choice((1, 2, 4, 8)),
             rng.choice((1, 2, 4)), rng.choice((4, 8, 16)))
        yield f"scale {' '.join(map(str, a))}", lambda a=a: weak(*a)


# ------------------------------------------------------------------------------ driver

SURFACES = ("hf", "plot", "grid", "determinism", "service", "scale")


def cases(only: set[str], rng: random.Random, n: int, long: bool) -> Iterator[Case]:
    table = {"hf": lambda: hf_cases(rng, n, long), "plot": plot_cases, "grid": grid_cases,
             "determinism": determinism_cases, "service": service_cases,
             "scale": lambda: scale_cases(rng, n // 10 if not long else n)}
    yield from chosen_cases(table, only, SURFACES)


def main(argv: list[str] | None = None) -> int:
    ap = sweep_parser(__doc__, SURFACES, 200, "hf variants / 4, scale runs x 10")
    ap.add_argument("--long", action="store_true", help="every hf variant, --n scale runs")
    args = ap.parse_args(argv)
    only = only_of(args)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        failures, counts = run_cases(cases(only, random.Random(args.seed), args.n, args.long), surface_class)
    return report_timed(failures, counts, time.perf_counter() - start)


if __name__ == "__main__":
    sys.exit(main())
