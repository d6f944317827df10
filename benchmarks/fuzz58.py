"""Input robustness, 2026-11-29 (58th session, robust58): the newest row columns, the
Megatron-LLaMA profile, trainsim's own files read back, and the planning commands' edges.

- ``rowcols``: the optional row columns defer57, etp57 and mllama58 added
  (``defer_embedding_wgrad_compute`` 0/1, ``wgrad_deferral_limit`` a count from 0, ``etp`` a
  size, ``gradient_accumulation_fusion`` 0/1) written in every text form a
  cell may take (``1.0``, ``' 1 '``, ``yes``, ``4e0``, ``1_000``, full-width digits, ``nan``,
  fractions, negatives, past 2**53), in a format v2 row beside another row, and the same fields
  in a config and ``--set``. Oracle: a form of a value a switch or count reads (this script's
  own reader, ``_switch`` / ``_count``) predicts what that value's plain cell does, the other
  row untouched (fuzz53's pair check); any other form fails its row in one line naming the
  column; a deferral setting that changes nothing is warned of, and a deferral beside the
  fusion stated off (which Megatron-core refuses) refused naming both;
- ``mllama``: runs under ``training.framework: megatron-llama`` (every stated version and some
  that are none, MoE or dense, each sharding, dtype, attention kernel, pipeline shape). Oracle:
  a sane result or one line; an accepted run's resolved config (its JSON ``config``) read back
  answers the same iteration, and a refusal of that read is a FAILURE (trainsim's own file);
- ``exportrt``: ``export --chakra --simai`` of random runs with framework profiles, the deferred
  output-layer weight gradient and expert TP. Oracle (chakra57 lead 2): where ``simulate``
  answers, the export is written (the task limit aside) and trainsim reads back what it wrote:
  the Chakra traces to the iteration (1e-9), the SimAI file with its header; a TrainsimError
  there is a FAILURE, not a refusal;
- ``planedges``: ``plan``'s ``--tokens`` / ``--days`` / ``--max-gpus`` / ``--price``, ``sweep``'s
  ``--vary`` forms and ``--steps``, ``goodput``'s ``--tokens`` / ``--days`` / ``--interval`` /
  ``--trials`` / ``--gpus`` at their edges (0, negative, nan, inf, 1e300, SI suffixes, blank,
  past 2**53, ranges reversed or empty). Oracle: a finite JSON answer, or one error line naming
  the option (or the field) written.

Each input must give a sane answer or one ``TrainsimError`` line (``fuzz_checks.outcome``); a
hang is 30 CPU s and any input over 10 CPU s is its own class.

    PYTHONPATH=src python benchmarks/fuzz58.py [--only rowcols,mllama,exportrt,planedges]
        [--count N] [--seed S] [--every] [--progress] [--refusals]
"""

from __future__ import annotations

import copy
import csv
import json
import math
import os
import random
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz57 import _run, json_answer, one_line, write
from fuzz58_files import exportrt_cases, mllama_cases
from fuzz_checks import BASES, REFUSED, Case

fuzz_checks.TIME_LIMIT_S = 300
ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------------ rowcols

_WORDS = {"true": 1, "false": 0, "yes": 1, "no": 0, "on": 1, "off": 0}


def _number(text: str) -> float | None:
    """A cell's number as a config reads one, by this script's own rule: ASCII, underscores
    only between digits in threes, Python's float syntax."""
    t = text.strip()
    if not t.isascii():
        return None
    if "_" in t and not re.fullmatch(r"[+-]?[0-9]{1,3}(?:_[0-9]{3})+", t):
        return None
    try:
        return float(t.replace("_", ""))
    except ValueError:
        return None


def _switch(text: str) -> str | None:
    """The plain cell ('0' / '1') a switch cell means, '' for an empty one, None for none."""
    t = text.strip().lower()
    if not t:
        return ""
    if t in _WORDS:
        return str(_WORDS[t])
    n = _number(t)
    return str(int(n)) if n in (0.0, 1.0) else None


def _count(least: int) -> Callable[[str], str | None]:
    def read(text: str) -> str | None:
        """The plain cell a count cell means (whole, ``least`` to 2**53), '' if empty."""
        if not text.strip():
            return ""
        t = text.strip()
        n = _number(t)
        if n is None or not math.isfinite(n) or n != int(n):
            return None
        exact = int(t.replace("_", "")) if re.fullmatch(r"[+-]?[0-9_]+", t) else int(n)
        return str(exact) if least <= exact <= 2**53 else None
    return read


ROW_CELLS = {
    "defer_embedding_wgrad_compute": (_switch, ["0", "1", "0.0", "1.0", " 1 ", "true", "False",
                                                "YES", "on", "Off", "1e0", "2", "-1", "0.5",
                                                "nan", "x", "\uff11", "", "1_0", "+1"]),
    "wgrad_deferral_limit": (_count(0), ["0", "1", "4", "0.0", "4.0", " 4 ", "4e0", "-1", "1.5",
                                         "nan", "inf", "1_0", "1_000", str(2**53 + 1), "1e300",
                                         "x", "\u0664", "", "+4", "0x4"]),
    "etp": (_count(1), ["1", "2", "1.0", "2.0", " 2 ", "2e0", "0", "-2", "1.5", "x", "",
                        "\uff12", "1_0", "4", "8", "nan", str(2**53 + 1)]),
    "gradient_accumulation_fusion": (_switch, ["0", "1", "0.0", " 0 ", "false", "NO", "off",
                                               "2", "-0", "x", "", "\uff10", "nan"]),
}
"""Column -> (this script's reader, the cells tried)."""
DEFER_FRAMEWORKS = ["megatron-core", "nemo", "mlperf-nemo", "megatron-bridge", "torchtitan", ""]


def _row_pair(rows: list[dict[str, str]], columns: list[str], workdir: str,
              rng: random.Random) -> Iterator[Case]:
    from fuzz53 import _pair_check

    one = _pair_check(rows, columns, workdir)
    small = [k for k, r in enumerate(rows) if r["num_gpus"].isdigit() and int(r["num_gpus"]) <= 64]
    moe = [k for k in small if rows[k]["num_experts"].strip()]
    for _ in range(150):
        col = rng.choice(sorted(ROW_CELLS))
        reader, battery = ROW_CELLS[col]
        i = rng.choice(moe if col == "etp" and moe else small)
        j = rng.choice([k for k in small if k != i])
        cell = rng.choice(battery)
        extra: dict[str, str] = {}
        if col != "etp" and rng.random() < 0.6:
            extra["framework"] = rng.choice(DEFER_FRAMEWORKS)
            extra["framework_version"] = ""
        if col == "wgrad_deferral_limit" and rng.random() < 0.7:
            extra["defer_embedding_wgrad_compute"] = "1"
        if col == "gradient_accumulation_fusion" and rng.random() < 0.3:
            extra["defer_embedding_wgrad_compute"] = "1"  # Megatron-core refuses it unfused
        yield f"row {rows[i]['id']} {extra} {col}={cell!r}", (
            lambda i=i, j=j, c=col, v=cell, e=extra, r=reader:
            _row_cell(one, rows, columns, workdir, i, j, c, v, e, r))


def _row_cell(one: Callable, rows: list[dict[str, str]], columns: list[str], workdir: str,
              i: int, j: int, col: str, cell: str, extra: dict[str, str],
              reader: Callable[[str], str | None]) -> str | None:
    """Row ``i`` with ``extra`` and ``col=cell``: the pair check, then the row's prediction or
    error against the plain cell's (``reader``), or a refusal naming ``col``."""
    from fuzz52 import _validate

    bad = one(i, j, {**extra, col: cell})
    if bad:
        return bad
    plain = reader(cell)
    d = Path(workdir)

    def outcome(value: str) -> tuple[Any, Any]:
        row = {**rows[i], **extra, col: value}
        with open(d / "rowcols.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=columns)
            w.writeheader()
            w.writerow(row)
        (got,) = _validate(d / "rowcols.csv")["rows"]
        return got.get("predicted"), got.get("error")

    got = outcome(cell)
    if plain is None:
        if got[1] is None:
            return f"column {col}: a cell no {col} reads taken ({got[0]!r})"
        REFUSED[0] += 1
        return None if col in str(got[1]) else f"column {col}: refused not naming it"
    want = outcome(plain)
    if got == want:
        return None
    return f"column {col}: a cell written otherwise than its plain value answered otherwise " \
           f"({'refused' if got[1] else 'taken'}, plain {'refused' if want[1] else 'taken'})"


CONFIG_FIELDS = {"defer_embedding_wgrad_compute": "defer_embedding_wgrad_compute",
                 "wgrad_deferral_limit": "wgrad_deferral_limit",
                 "etp": "expert_tensor_parallel_size"}


def _config_field(col: str, value: Any, via_set: bool, workdir: str) -> str | None:
    """The MoE base under Megatron-core with ``parallel.<field>`` given as ``value`` (in the file
    or by ``--set``) against the plain value's answer (a blank one: the field left out, or a
    refusal naming it)."""
    reader = ROW_CELLS[col][0]
    field = CONFIG_FIELDS[col]
    raw = copy.deepcopy(BASES["moe"])
    raw["training"]["framework"] = "megatron-core"
    if isinstance(value, bool):
        plain = str(int(value)) if col.startswith("defer") else None
    elif isinstance(value, (str, int, float)):
        plain = reader(str(value))
    else:
        plain = ""  # null: the field left out

    def answer(v: Any, set_it: bool, leave_out: bool = False) -> tuple[int, str]:
        r2 = copy.deepcopy(raw)
        if not set_it and not leave_out:
            r2["parallel"][field] = v
        args = ["simulate", write(Path(workdir), "cfgfield.json", r2), "--format", "json"]
        if set_it:
            args += ["--set", f"parallel.{field}={v}"]
        r, lines = _run(args)
        if r.exit_code == 0:
            return 0, json.dumps(json.loads(r.stdout)["iteration_time_s"])
        if "Traceback" in r.output or len(lines) != 1:
            return -1, f"exit {r.exit_code} with {len(lines)} error lines"
        return r.exit_code, lines[0]

    got = answer(value, via_set)
    if got[0] < 0:
        return got[1]
    named = got[0] != 0 and (field in got[1] or col in got[1])
    if got[0] != 0 and not named:
        return f"parallel.{field}: refused not naming it"
    if plain is None:
        if got[0] == 0:
            return f"parallel.{field}: a value no {'switch' if col.startswith('defer') else 'count'}" \
                   " reads taken"
        REFUSED[0] += 1
        return None
    want = answer(None, False, leave_out=True) if plain == "" else answer(int(plain), False)
    if got == want or (plain == "" and named):
        REFUSED[0] += got[0] != 0
        return None
    return f"parallel.{field}: a value written otherwise than its plain number answered otherwise"


IGNORED = [("dense", 1, {"defer_embedding_wgrad_compute": True}),
           ("dense", 1, {"defer_embedding_wgrad_compute": True, "wgrad_deferral_limit": 2}),
           ("moe", 2, {"defer_embedding_wgrad_compute": False, "wgrad_deferral_limit": 4}),
           ("moe", 2, {"wgrad_deferral_limit": 4}), ("dense", 1, {"wgrad_deferral_limit": 1}),
           ("moe", 2, {"defer_embedding_wgrad_compute": True}),
           ("moe", 2, {"defer_embedding_wgrad_compute": True, "wgrad_deferral_limit": 1})]
PAIRS = [({"defer_embedding_wgrad_compute": True}, {"gradient_accumulation_fusion": False}),
         ({"defer_embedding_wgrad_compute": True}, {"gradient_accumulation_fusion": True}),
         ({"defer_embedding_wgrad_compute": False}, {"gradient_accumulation_fusion": False})]
"""(parallel, training) settings of the MoE base (pp 2) under Megatron-core: a deferral stated
beside the weight-gradient fusion stated off, which Megatron-core refuses; controls."""


def _pair(parallel: dict[str, Any], training: dict[str, Any], workdir: str) -> str | None:
    """A pair Megatron-core refuses is refused in one line naming both fields; the others
    answer (or are refused for another reason, in one line)."""
    raw = copy.deepcopy(BASES["moe"])
    raw["training"]["framework"] = "megatron-core"
    raw["parallel"].update(parallel)
    raw["training"].update(training)
    r, lines = _run(["simulate", write(Path(workdir), "pair.json", raw), "--format", "json"])
    refused_by_megatron = parallel.get("defer_embedding_wgrad_compute") and \
        training.get("gradient_accumulation_fusion") is False
    if r.exit_code == 0:
        return "a deferral without gradient accumulation fusion taken (Megatron-core refuses " \
               "it)" if refused_by_megatron else None
    return one_line(r, lines, *(("defer_embedding_wgrad_compute", "gradient_accumulation_fusion")
                                if refused_by_megatron else ()))
"""(base, its pp, settings): a deferral stated where the run defers nothing (no pipeline, or
the switch off / unset) and, as controls, where it defers."""


def _ignored(base: str, settings: dict[str, Any], framework: str | None, workdir: str
             ) -> str | None:
    """A stated setting that changes nothing is said so in a warning naming it (as the fp8-only
    settings of a 16-bit run are, robust56); one that changes the answer needs none."""
    raw = copy.deepcopy(BASES[base])
    if framework:
        raw["training"]["framework"] = framework
    plain, _ = _run(["simulate", write(Path(workdir), "ign0.json", raw), "--format", "json"])
    raw["parallel"].update(settings)
    with warnings.catch_warnings():  # the round turns warnings off; the CLI prints these
        warnings.simplefilter("always")
        r, lines = _run(["simulate", write(Path(workdir), "ign1.json", raw), "--format", "json"])
    if r.exit_code != 0:
        return one_line(r, lines, *[k for k in settings if k in (lines[:1] or [""])[0]][:1])
    if plain.exit_code != 0:
        return None
    same = json.loads(r.stdout)["iteration_time_s"] == json.loads(plain.stdout)["iteration_time_s"]
    warned = [ln for ln in r.stderr.splitlines() if ln.startswith("warning: ")]
    named = [k for k in settings if settings[k] and any(k in ln for ln in warned)]
    if same and settings.get("defer_embedding_wgrad_compute") and \
            "defer_embedding_wgrad_compute" not in named:
        return "a stated output-layer wgrad deferral that changes nothing taken without a word"
    if same and "wgrad_deferral_limit" in settings and "wgrad_deferral_limit" not in named:
        return "a stated wgrad_deferral_limit that changes nothing taken without a word"
    return None


def rowcols_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        from fuzz54 import public_rows

        rows, columns = public_rows()
        columns += [c for c in ROW_CELLS if c not in columns]
        for r in rows:
            for c in ROW_CELLS:
                r.setdefault(c, "")
        yield from _row_pair(rows, columns, workdir, rng)
        for parallel, training in PAIRS:
            yield f"config moe megatron-core {parallel} {training}", (
                lambda p=parallel, t=training: _pair(p, t, workdir))
        for base, _pp, settings in IGNORED:
            for fw in (None, "megatron-core", "nemo", "mlperf-nemo"):
                yield f"config {base} {fw} {settings}", (
                    lambda b=base, s=settings, f=fw: _ignored(b, s, f, workdir))
        for col, (_reader, battery) in ROW_CELLS.items():
            if col not in CONFIG_FIELDS:
                continue  # a training field (mllama58's): its rows only
            for cell in battery:
                for via_set in (False, True):
                    if via_set and (not cell.strip() or cell.startswith("0x")):
                        continue  # YAML reads --set 0x4 as the integer 4, as a file's 0x4
                    yield f"config parallel.{CONFIG_FIELDS[col]}={cell!r}" + \
                        (" --set" if via_set else ""), (
                            lambda c=col, v=cell, s=via_set: _config_field(c, v, s, workdir))
            for value in (True, False, 1.0, 2.5, None):
                yield f"config parallel.{CONFIG_FIELDS[col]}={value!r}", (
                    lambda c=col, v=value: _config_field(c, v, False, workdir))
    return cases


# ------------------------------------------------------------------------------ planedges

TOKENS = ["0", "-1", "1e-3", "15T", "15t", "1.5e13", "1e400", "nan", "inf", "abc", "\uff11\uff15T",
          "1_000T", "15 T", "", "15TT", "1e9", "1e30", "T", "-15T", "0x10", str(2**60)]
DAYS = ["0", "-1", "1e-300", "nan", "inf", "1e300", "30", "1h", "", "\uff13\uff10", "1_0"]
COUNTS = ["0", "1", "-1", "1.5", "2.0", str(2**53 + 1), "", "x", "1e400"]
PRICES = ["-1", "nan", "0", "1e7", "1e-300", ""]
VARY = ["parallel.tp=1:0", "parallel.tp=2:1", "parallel.tp=1,,2", "parallel.tp=", "=1,2",
        "parallel=1", "parallel.tp", "parallel.tp=1:1e9", "training.train_tokens=1T,2T",
        "cluster.gpu=h100-sxm-80gb,bogus", "parallel.tp=1;2", "parallel.tp=1,2,1",
        "training.micro_batch_size=1:2", "cluster.nvlink_gbyte_s=0:900", "model.hidden_size=nan",
        "parallel.tp=1:2:3", "parallel.tp=\uff11,2", "parallel.bogus=1,2", "training.dtype=bf16,fp7",
        "cluster.nic_gbit_s_per_gpu=1e-300,400", "parallel.tp=1_0"]
INTERVALS = ["0", "0s", "1e-300s", "abc", "30m", "-5m", "1e300", "nan", "", "2h", "1_0m", "1d"]


def planedges_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        d = Path(workdir)
        model = write(d, "pe_model.json", {"model": BASES["dense"]["model"]})
        dense = write(d, "pe_dense.json", BASES["dense"])
        small = ["--workers", "1", "--max-micro-batch", "1", "--recompute", "none", "--overlap",
                 "off", "--tp", "1", "--pp", "1", "--seq", "512", "--global-batch", "16"]
        plan = {"--tokens": "1e9", "--days": "30", "--max-gpus": "8"}
        for option, battery in (("--tokens", TOKENS), ("--days", DAYS), ("--max-gpus", COUNTS),
                                ("--price", PRICES), ("--global-batch", COUNTS)):
            for value in battery:
                opts = {**plan, option: value}
                args = ["plan", model, *small, "--format", "json"]
                if option == "--global-batch":
                    args[args.index("--global-batch") + 1] = value
                    opts.pop(option)
                for k, v in opts.items():
                    args += [k, v]
                yield f"plan {option} {value!r}", (lambda a=args, o=option: _edge(a, o))
        for vary in VARY:
            for steps in rng.sample(["5", "0", "1", "2.0", str(2**53 + 1)], 2):
                args = ["sweep", dense, "--vary", vary, "--steps", steps, "--format", "json"]
                yield f"sweep --vary {vary!r} --steps {steps}", (
                    lambda a=args, v=vary, s=steps: _edge(a, "--steps" if s in ("0", str(2**53 + 1))
                                                          else "--vary", v.split("=")[0]))
        for value in TOKENS:
            yield f"plan / goodput / the service --tokens {value!r}", (
                lambda v=value: _tokens_alike(v, model, dense))
        goodput = {"--tokens": TOKENS, "--days": DAYS, "--interval": INTERVALS,
                   "--trials": COUNTS, "--gpus": COUNTS, "--seed": ["-1", "0", "1.0", "x"]}
        for option, battery in goodput.items():
            for value in battery:
                args = ["goodput", dense, option, value, "--format", "json"]
                if option not in ("--tokens", "--days"):
                    args += ["--tokens", "1e9"]
                if option != "--trials":
                    args += ["--trials", "3"]
                yield f"goodput {option} {value!r}", (lambda a=args, o=option: _edge(a, o))
    return cases


def _tokens_alike(value: str, model: str, dense: str) -> str | None:
    """One text of tokens read alike by ``plan``, ``goodput`` and the service's plan and goodput
    jobs: taken by all or refused by all, the CLI's two refusals in the same words (the run's
    own limits aside: a plan with no GPU count that meets the deadline, goodput's trial
    rounds)."""
    from fuzz56 import BASE_OPTIONS

    from trainsim.service import Settings
    from trainsim.service.jobs import problem

    if not value.strip():
        return None  # blank: each command's own "leave --tokens out" (fuzz56)
    plan, _ = _run(["plan", model, "--tokens", value, "--days", "1e300", "--max-gpus", "8",
                    "--workers", "1", "--max-micro-batch", "1", "--recompute", "none",
                    "--overlap", "off", "--tp", "1", "--pp", "1", "--seq", "512",
                    "--global-batch", "16", "--format", "json"])
    good, _ = _run(["goodput", dense, "--tokens", value, "--trials", "1", "--max-trial-rounds",
                    str(2**53), "--format", "json"])
    said = []
    for r in (plan, good):
        lines = [ln for ln in r.stderr.splitlines() if ln.startswith("error: ")]
        said.append(lines[0].removeprefix("error: ") if r.exit_code == 2 and lines else None)
    if said[1] and ("trial-rounds" in said[1] or "interruptions" in said[1]):
        return None  # the run's own limit: its interruptions, not the text
    if (said[0] is None) != (said[1] is None):
        return f"--tokens {'refused by plan, taken by goodput' if said[0] else 'taken by plan, refused by goodput'}"
    if said[0] != said[1]:
        return "--tokens: plan and goodput refuse one text in two wordings"
    settings = Settings(workers=0, checkers=0)
    jobs = [problem("plan", {},
                    {**BASE_OPTIONS["plan"], "tokens": value, "days": 1e300}, settings),
            problem("goodput", BASES["dense"], {**BASE_OPTIONS["goodput"], "tokens": value,
                                                "trials": 1}, settings)]
    refused = [j is not None and j[1] == "options.tokens" for j in jobs]
    if refused[0] != refused[1] or refused[0] != (said[0] is not None):
        return "options.tokens: the service's plan and goodput jobs and the CLI disagree"
    REFUSED[0] += said[0] is not None
    return None


def _edge(args: list[str], option: str, field: str | None = None) -> str | None:
    """A finite JSON answer, or one line naming ``option`` (or ``field``)."""
    r, lines = _run(args)
    if r.exit_code == 0:
        return json_answer(r.stdout)
    if "Traceback" in r.output or len(lines) != 1:
        return one_line(r, lines)
    if option in lines[0] or (field and field in lines[0]):
        REFUSED[0] += 1
        return None
    if field is None and option.lstrip("-").replace("-", "_") in lines[0]:
        REFUSED[0] += 1
        return None
    start = re.sub(r"\d+", "N", re.sub(r"/\S+", "PATH", lines[0]))[:70]
    return f"{args[0]} {option}: a refusal not naming it: {start}"


# ------------------------------------------------------------------------------ main

def surfaces(workdir: str, rng: random.Random) -> dict[str, Callable[[], Iterator[Case]]]:
    return {"rowcols": rowcols_cases(workdir, rng), "mllama": mllama_cases(workdir, rng),
            "exportrt": exportrt_cases(workdir, rng), "planedges": planedges_cases(workdir, rng)}


def main(argv: list[str] | None = None) -> int:
    return fuzz_checks.seeded_round(58, argv, surfaces)


__all__ = ["main", "surfaces"]

if __name__ == "__main__":
    fuzz_checks.run_round(main)
