"""Input robustness, 2026-11-29 (59th session, robust59): surfaces no round had fuzzed.

- ``ncclver``: ``cluster.nccl_version`` (memory58's field: it sizes NCCL's NVLS buffers) and the
  rows' ``nccl_version`` column in every text a user may write (a git tag, a startup line, a
  YAML number whose zero a float would drop, other digits, a major other than 2, blank), in a
  config file, by ``--set`` and in a row beside another. Oracle: a text this script's own
  reader (``_nccl``: NCCL's names, ASCII) reads as a release answers as that release's plain
  ``2.M.P`` (iteration and memory); any other is refused in one line naming the field;
- ``gafzero``: ``training.gradient_accumulation_fusion`` (mllama58) stated on, off, unset or
  mistyped beside every ZeRO stage, the distributed optimizer and each data-parallel engine,
  under fourteen framework profiles. Oracle: a sane result or one line; an answered run's
  resolved config read back answers the same iteration (fuzz58's ``_resolved_again``);
- ``scopes``: ``training.cuda_graph_scope`` (graphs58's ``mamba`` among them) on dense, MoE and
  hybrid models, with ``cuda_graphs`` on, off or unset, under frameworks with and without
  Megatron-core's scopes. Oracle: a sane result or one line naming the field; a stated scope
  that captures nothing (the answer is the eager run's) is said so in a warning naming it
  (robust56's rule for settings that change nothing);
- ``dspp``: DeepSpeed and Megatron-DeepSpeed pipelines with virtual stages, every
  ``pipeline_schedule`` spelling and ZeRO stage. Oracle: a sane result or one line naming the
  field refused;
- ``searchmoe``: ``search`` of a small MoE model with ``--ep`` and ``--schedules`` texts (lists
  with blanks, sizes past the experts, other digits, unknown and mis-cased schedules).
  Oracle: finite JSON, or one line naming the option;
- ``service``: the inputs above (and a stated output-layer deferral under each framework) as a
  service job's config: the job is refused before it runs exactly where ``simulate`` refuses,
  in the CLI's words (a run the service queues that the CLI refuses fails only in a worker).

Each input must give a sane answer or one ``TrainsimError`` line (``fuzz_checks.outcome``); a
hang is 30 CPU s and any input over 10 CPU s is its own class.

    PYTHONPATH=src python benchmarks/fuzz59.py [--only ncclver,gafzero,scopes,dspp,searchmoe,service]
        [--count N] [--seed S] [--every] [--progress] [--refusals]
"""

from __future__ import annotations

import copy
import csv
import json
import os
import random
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz57 import one_line, write
from fuzz59_runs import (
    dspp_cases,
    gafzero_cases,
    scopes_cases,
    searchmoe_cases,
    service_cases,
)
from fuzz_checks import BASES, REFUSED, Case

fuzz_checks.TIME_LIMIT_S = 300


def _run(args: list[str]) -> tuple[Any, list[str]]:
    from fuzz51 import _errors, _invoke

    r = _invoke(args)
    return r, _errors(r)


# ------------------------------------------------------------------------------ ncclver

NCCL_TEXTS = ["2.19.4", "2.19", "2.19.0", "v2.19.4-1", "2.19.4-1", "2.19.4+cuda12.3",
              " 2.19.4 ", "2.20", "2.10", "2.3", "2.28.3", "2.30", "2.99", "2.0", "2", "3.0",
              "1.9.3", "2.19.4.1", "2_19", "\uff12.19", "\u0662.\u0661\u0669", "2.19-", "v", "",
              "nan", "NCCL 2.19", "02.19", "2.-1", "2.1e1", "-2.19", "2.19.4-1+cuda12.3",
              "V2.19.4", "2.19.4rc1", "2.17.1", "2.16.5", "2.27.3", "2.28"]
"""Texts of ``nccl_version``: NCCL's own names (its git tags ``v2.19.4-1``, its startup line's
``2.19.4+cuda12.3``, ``2.19``), YAML numbers whose trailing zero a float drops (2.20, 2.10), the
releases around memory58's NVLS rules (2.16-2.28), other majors, other digits, blank."""
_NCCL = re.compile(r"v?([0-9]+)\.([0-9]+)(?:\.([0-9]+))?(?:-[0-9]+)?(?:\+\S+)?")


def _nccl(text: str) -> str | None:
    """The plain release (``2.M.P``) a text names by this script's own reader, '' for blank,
    None for no release: NCCL's forms in ASCII digits, major 2."""
    t = text.strip()
    if not t:
        return ""
    got = _NCCL.fullmatch(t)
    if got is None or int(got.group(1)) != 2:
        return None
    return f"2.{int(got.group(2))}.{int(got.group(3) or 0)}"


def _nccl_answer(raw: dict[str, Any], value: str | None, via_set: bool, workdir: str
                 ) -> tuple[int, str]:
    """(exit status, iteration and memory, or the one error line) of ``raw`` with
    ``cluster.nccl_version`` = ``value`` (None: left out) in the file or by ``--set``."""
    r2 = copy.deepcopy(raw)
    if value is not None and not via_set:
        r2["cluster"]["nccl_version"] = value
    args = ["simulate", write(Path(workdir), "nccl.json", r2), "--format", "json"]
    if value is not None and via_set:
        args += ["--set", f"cluster.nccl_version={value}"]
    r, lines = _run(args)
    if r.exit_code == 0:
        got = json.loads(r.stdout)
        return 0, json.dumps([got["iteration_time_s"], got["peak_memory_bytes"]])
    if "Traceback" in r.output or len(lines) != 1:
        return -1, f"exit {r.exit_code} with {len(lines)} error lines"
    return r.exit_code, lines[0]


def _nccl_config(base: str, text: str, via_set: bool, workdir: str) -> str | None:
    raw = copy.deepcopy(BASES[base])
    raw["cluster"]["compute_db"] = None
    got = _nccl_answer(raw, text, via_set, workdir)
    if got[0] < 0:
        return got[1]
    plain = _nccl(text)
    if plain is None:
        if got[0] == 0:
            return "cluster.nccl_version: a text that names no NCCL release taken"
        REFUSED[0] += 1
        return None if "nccl_version" in got[1] else "cluster.nccl_version: refused not naming it"
    want = _nccl_answer(raw, plain or None, False, workdir)
    if got == want:
        REFUSED[0] += got[0] != 0
        return None
    return "cluster.nccl_version: a release written otherwise than 2.M.P answered otherwise " \
           f"({'refused' if got[0] else 'taken'}, plain {'refused' if want[0] else 'taken'})"


def _nccl_row(one: Callable, rows: list[dict[str, str]], columns: list[str], workdir: str,
              i: int, j: int, cell: str) -> str | None:
    """Row ``i`` with its ``nccl_version`` cell written so: the pair check, then the row's
    prediction and memory against the plain release's, or a refusal naming the column."""
    from fuzz52 import _validate

    bad = one(i, j, {"nccl_version": cell})
    if bad:
        return bad
    d = Path(workdir)

    def outcome(value: str) -> tuple[Any, ...]:
        with open(d / "ncclrow.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=columns)
            w.writeheader()
            w.writerow({**rows[i], "nccl_version": value})
        (got,) = _validate(d / "ncclrow.csv")["rows"]
        return got.get("predicted"), got.get("predicted_memory_gib"), got.get("error")

    got = outcome(cell)
    plain = _nccl(cell)
    if plain is None:
        if got[2] is None:
            return "column nccl_version: a cell that names no NCCL release taken"
        REFUSED[0] += 1
        return None if "nccl_version" in str(got[2]) else "column nccl_version: refused not naming it"
    if got == outcome(plain):
        return None
    return "column nccl_version: a release written otherwise than 2.M.P answered otherwise"


def ncclver_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        from fuzz53 import _pair_check
        from fuzz54 import public_rows

        for text in NCCL_TEXTS:
            for via_set in (False, True):
                if via_set and not text.strip():
                    continue  # --set x= is the field given blank: fuzz54's blankopt
                yield f"config dense nccl_version={text!r}" + (" --set" if via_set else ""), (
                    lambda t=text, s=via_set: _nccl_config("dense", t, s, workdir))
        rows, columns = public_rows()
        if "nccl_version" not in columns:
            columns.append("nccl_version")
        for r in rows:
            r.setdefault("nccl_version", "")
        one = _pair_check(rows, columns, workdir)
        # rows on NVLS GPUs (H100 and later) small enough to predict quickly
        nvls = [k for k, r in enumerate(rows) if r["num_gpus"].isdigit()
                and int(r["num_gpus"]) <= 64 and r["gpu"].startswith(("h100", "h200", "b200"))]
        for _ in range(30):
            i, j = rng.sample(nvls, 2)
            cell = rng.choice(NCCL_TEXTS)
            yield f"row {rows[i]['id']} nccl_version={cell!r}", (
                lambda i=i, j=j, c=cell: _nccl_row(one, rows, columns, workdir, i, j, c))
    return cases


# ------------------------------------------------------------------------------ main

def surfaces(workdir: str, rng: random.Random) -> dict[str, Callable[[], Iterator[Case]]]:
    return {"ncclver": ncclver_cases(workdir, rng), "gafzero": gafzero_cases(workdir, rng),
            "scopes": scopes_cases(workdir, rng), "dspp": dspp_cases(workdir, rng),
            "searchmoe": searchmoe_cases(workdir, rng), "service": service_cases(workdir, rng)}


def main(argv: list[str] | None = None) -> int:
    return fuzz_checks.seeded_round(59, argv, surfaces)


__all__ = ["main", "one_line", "surfaces"]

if __name__ == "__main__":
    fuzz_checks.run_round(main)
