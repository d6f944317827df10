"""Bases, value batteries and outcome checks of benchmarks/fuzz_sweep.py (2026-11-24, fuzz
session): the three base configs, a battery of values per field kind, and what counts as a
handled input (a sane result, one ``TrainsimError`` line) or a failure class."""

from __future__ import annotations

import argparse
import collections
import contextlib
import copy
import dataclasses
import math
import os
import re
import signal
import sys
import time
import traceback
import typing
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal, get_args, get_origin

from trainsim.catalog import run_config_from_dict
from trainsim.config.cluster import ClusterConfig
from trainsim.config.model import ModelConfig
from trainsim.config.parallel import ALIASES, ParallelConfig
from trainsim.config.training import TrainingConfig
from trainsim.errors import TrainsimError
from trainsim.simulator import simulate

DENSE = {"model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                   "vocab_size": 1024},
         "parallel": {},
         "training": {"global_batch_size": 16, "seq_length": 512},
         "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                     "compute_db": None}}
MOE = {"model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                 "vocab_size": 1024, "num_experts": 8, "moe_router_topk": 2,
                 "moe_ffn_hidden_size": 256},
       "parallel": {"tp": 2, "pp": 2, "ep": 2, "sequence_parallel": True},
       "training": {"global_batch_size": 16, "seq_length": 512},
       "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                   "compute_db": None}}
MLA = {"model": {"hidden_size": 256, "num_layers": 8, "num_attention_heads": 4,
                 "vocab_size": 1024, "kv_lora_rank": 64, "q_lora_rank": 32, "qk_head_dim": 32,
                 "v_head_dim": 32, "qk_pos_emb_head_dim": 16, "position_embedding": "rope"},
       "parallel": {"tp": 2, "pp": 2, "vpp": 2, "sequence_parallel": True,
                    "recompute": "selective"},
       "training": {"global_batch_size": 16, "seq_length": 512, "dtype": "fp8",
                    "framework": "megatron-core"},
       "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8,
                   "compute_db": "auto"}}
"""MLA, interleaved pipeline, fp8, two nodes, the measured-kernel database and a framework
profile: the fields the other two bases leave unread."""
BASES = {"dense": DENSE, "moe": MOE, "mla": MLA}
SECTIONS = {"model": ModelConfig, "parallel": ParallelConfig, "training": TrainingConfig,
            "cluster": ClusterConfig}
CLUSTER_WRITTEN = {"nic_bw_Bps": "nic_gbit_s_per_gpu", "intra_node_bw_Bps": "nvlink_gbyte_s",
                   "extra": None, "gpu": None}
"""Cluster fields written under another name (units), or not written (None)."""
GPU_FIELDS = ["peak_tflops", "hbm_gib", "hbm_gbyte_s", "nvlink_gbyte_s", "mamf_fraction",
              "mamf_fraction_fp8", "tdp_w", "power_limit_w", "price_per_hour", "num_sms"]
TIME_LIMIT_S = 60

INTS = [0, -1, 1, 2, 3, 7, 64, 2**31, 2**53, 2**53 + 1, 10**30, 1.5, 2.0, "8", "abc", True,
        None, math.nan, math.inf, [], {}, "", " 4 ", "1e3"]
FLOATS = [0, 0.0, -1, -0.0, 1e-300, 0.5, 1, 2, 1e300, math.nan, math.inf, -math.inf, "1.5",
          "x", True, None, [], {}, 10**30]
BOOLS = [True, False, "yes", "no", "maybe", 0, 1, 2, None, "true", "", [], 1.0]
STRS = ["", "x", "x" * 500, None, 1, "a\nb", [], {}, "auto", "none"]
TUPLES = [[], ["core_attn"], "mlp,moe_act", ["bogus"], 5, None, [1], {}]


def battery(tp: Any) -> list[Any]:
    """The values tried for a field of type ``tp``."""
    origin = get_origin(tp)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        args = [a for a in get_args(tp) if a is not type(None)]
        return battery(args[0])
    if origin is Literal:
        allowed = list(get_args(tp))
        return allowed + [str(allowed[0]).upper(), "BOGUS", "", None, 1, [], {}]
    if origin in (tuple, list):
        return TUPLES
    if tp is bool:
        return BOOLS
    if tp is int:
        return INTS
    if tp is float:
        return FLOATS
    return STRS


def fields_of(section: str) -> Iterator[tuple[str, Any]]:
    """(name as written, type) of each field of ``section``."""
    cls = SECTIONS[section]
    hints = typing.get_type_hints(cls)
    short = {full: s for s, full in ALIASES.items()}
    for f in dataclasses.fields(cls):
        name = f.name
        if section == "cluster" and name in CLUSTER_WRITTEN:
            if CLUSTER_WRITTEN[name] is None:
                continue
            yield CLUSTER_WRITTEN[name], float
            continue
        if section == "parallel" and name in short:
            yield short[name], hints[name]
        yield name, hints[name]


# ------------------------------------------------------------------------------ outcomes

REFUSED = [0]
"""Inputs refused with one clean error line (a count, for the summary)."""
Case = tuple[str, Callable[[], str | None]]
"""One input of a surface: its label and the thunk that runs it (None: handled, else the class
of its failure)."""
ROUND_CPU_LIMIT_S = 10.0
"""A seeded round's input that was handled but used more CPU seconds than this is its own class
(fuzz49 on)."""
ROUND_CPU_HANG_S = 30.0
"""A seeded round's hang, in CPU seconds (robust49 lead 5; fuzz50 on; ``TIME_LIMIT_S`` of wall
stays a backstop)."""


class Hang(Exception):
    pass


@contextlib.contextmanager
def deadline(seconds: int, hang: type[BaseException] = Hang) -> Iterator[None]:
    """Raise ``hang`` in the body once ``seconds`` have passed (SIGALRM; the main thread)."""
    def _alarm(_sig, _frame):
        raise hang()

    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def cpu_deadline(seconds: float, hang: type[BaseException] = Hang) -> Iterator[None]:
    """Raise ``hang`` in the body once it has used ``seconds`` of this process's CPU (user +
    sys, SIGPROF; the main thread): a hang judged by CPU, not by the wall clock, which a loaded
    box stretches (robust49 lead 5)."""
    def _prof(_sig, _frame):
        raise hang()

    previous = signal.signal(signal.SIGPROF, _prof)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def finite(obj: Any) -> bool:
    """Whether every float in a JSON-like answer (nested dicts and lists) is finite."""
    if isinstance(obj, float):
        return math.isfinite(obj)
    if isinstance(obj, dict):
        return all(finite(v) for v in obj.values())
    if isinstance(obj, list):
        return all(finite(v) for v in obj)
    return True


def sane_result(result) -> str | None:
    """What is wrong with a simulated iteration's values, or None."""
    t = result.iteration_time_s
    if not (isinstance(t, float) and math.isfinite(t) and t > 0):
        return f"iteration time {t!r}"
    for name in ("mfu", "hfu"):
        v = getattr(result, name)
        if not (math.isfinite(v) and 0 < v <= 2):
            return f"{name} {v!r}"
    if not (result.peak_memory_bytes > 0 and math.isfinite(result.peak_memory_bytes)):
        return f"peak memory {result.peak_memory_bytes!r}"
    for k, v in result.breakdown.items():
        if not (math.isfinite(v) and v >= -1e-12):
            return f"breakdown {k}={v!r}"
    if not (math.isfinite(result.tokens_per_s) and result.tokens_per_s > 0):
        return f"tokens/s {result.tokens_per_s!r}"
    return None


def read_back(cfg, section: str, name: str, value: Any) -> str | None:
    """A setting given as a plain valid value that the built config does not hold (a setting
    silently changed), or None. Values the builder converts (units, aliases) are skipped."""
    if section == "cluster" and name in ("nic_gbit_s_per_gpu", "nvlink_gbyte_s"):
        return None
    full = ALIASES.get(name, name) if section == "parallel" else name
    got = getattr(getattr(cfg, section), full, None)
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
        return None
    numbers = isinstance(value, (int, float)) and isinstance(got, (int, float)) \
        and not isinstance(got, bool)
    if numbers and math.isfinite(value) and not math.isclose(got, value, rel_tol=1e-12):
        return f"{section}.{name}={value!r} read back as {got!r}"
    return None


def classify(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    where = next((f"{os.path.basename(fr.filename)}:{fr.name}" for fr in reversed(tb)
                  if "trainsim" in fr.filename), "?")
    return f"{type(exc).__name__} at {where}"


def outcome(thunk: Callable[[], str | None], cpu_s: float | None = None) -> str | None:
    """None if the input was handled (a sane answer or one clean error line), else its class;
    with ``cpu_s`` a hang is ``cpu_s`` CPU seconds (``TIME_LIMIT_S`` of wall stays a backstop)."""
    try:
        with deadline(TIME_LIMIT_S), (cpu_deadline(cpu_s) if cpu_s else contextlib.nullcontext()):
            return thunk()
    except Hang:
        return "hang"
    except TrainsimError as exc:
        text = str(exc)
        if not text or "\n" in text.strip():
            return "multi-line error"
        REFUSED[0] += 1
        return None
    except Exception as exc:  # noqa: BLE001 - the thing being looked for
        return classify(exc)


def run_config(cfg: dict, checks: list[tuple[str, str, Any]] = ()) -> str | None:
    rc = run_config_from_dict(copy.deepcopy(cfg))
    for section, name, value in checks:
        bad = read_back(rc, section, name, value)
        if bad:
            return "silently changed: " + bad
    result = simulate(rc)
    bad = sane_result(result)
    return f"insane result: {bad}" if bad else None


def seeded_sample(made, limit: int, rng):
    """At most ``limit`` of ``made`` drawn with ``rng``, in their order (the tests' fast run of
    a sweep); ``limit`` 0 keeps them all, as they come (a generator stays lazy)."""
    if limit <= 0:
        return made
    made = list(made)
    return [made[i] for i in sorted(rng.sample(range(len(made)), min(limit, len(made))))]


def surface_parser() -> argparse.ArgumentParser:
    """The flags every fuzz_inputs script takes: ``--only a,b`` (those surfaces) and
    ``--every`` (every input of each failure class); a script adds its own."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="", help="comma-separated surfaces to run (default: all)")
    ap.add_argument("--every", action="store_true", help="show every input of each class")
    return ap


def round_parser(seed: int) -> argparse.ArgumentParser:
    """:func:`surface_parser` with the flags of a seeded round (fuzz48-50): ``--count``,
    ``--seed`` (default ``seed``), ``--progress`` and ``--refusals``."""
    ap = surface_parser()
    ap.add_argument("--count", type=int, default=0, help="at most this many inputs a surface "
                    "(seeded sample; 0: all)")
    ap.add_argument("--seed", type=int, default=seed)
    ap.add_argument("--progress", action="store_true", help="a line per 50 inputs (stderr)")
    ap.add_argument("--refusals", action="store_true", help="group the refusals by message")
    return ap


def only_of(args: argparse.Namespace) -> set[str]:
    """The surfaces ``--only`` names (empty: all)."""
    return {s for s in args.only.split(",") if s}


def sweep_parser(doc: str, surfaces: Iterable[str], n: int | None = None,
                 n_help: str = "") -> argparse.ArgumentParser:
    """The flags of an input sweep (fuzz_sweep8 on), described by the first line of ``doc``:
    ``--seed`` (0) and ``--n`` (default ``n``, meaning ``n_help``) where the sweep draws
    (``n`` given), and ``--only`` a comma-separated choice of ``surfaces``; a script adds its
    own."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    if n is not None:
        ap.add_argument("--seed", type=int, default=0)
        ap.add_argument("--n", type=int, default=n, help=n_help)
    ap.add_argument("--only", default="", help=",".join(surfaces))
    return ap


def chosen_cases(makers: dict[str, Callable[[], Iterable[Case]]], only: set[str],
                 order: Iterable[str] | None = None) -> Iterator[Case]:
    """A sweep's cases: those of each surface of ``makers`` (in ``order``, else the dict's)
    that ``only`` names (empty: all), each surface made when its turn comes."""
    for name in makers if order is None else order:
        if not only or name in only:
            yield from makers[name]()


def surface_class(surface: str, bad: str) -> str:
    """A sweep's failure class (``fuzz_sweep6.run_cases``' ``failure_class``, fuzz_sweep7 on):
    the surface and what failed, up to its first ':'."""
    return f"{surface}: {bad.split(':')[0]}"


def report_timed(failures: dict[str, list[str]], counts: collections.Counter,
                 took_s: float) -> int:
    """:func:`report_sweep`, then the sweep's seconds and inputs a minute."""
    status = report_sweep(failures, counts)
    print(f"{took_s:.0f} s, {sum(counts.values()) / max(took_s, 1e-9) * 60:.0f} inputs/min")
    return status


def run_surfaces(surfaces: dict[str, Callable[[], Iterator[tuple[str, Callable]]]],
                 only: set[str]) -> dict:
    """Run every case of every surface (those in ``only`` when it is not empty) through
    :func:`outcome`: how many ran per surface and, per failure class, the inputs that hit it."""
    counts: collections.Counter = collections.Counter()
    failures: dict[str, list[str]] = collections.defaultdict(list)
    for surface, cases in surfaces.items():
        if only and surface not in only:
            continue
        for label, thunk in cases():
            counts[surface] += 1
            bad = outcome(thunk)
            if bad:
                failures[f"{surface}: {bad}"].append(label)
    return {"counts": counts, "failures": failures}


def timed_sweep(surfaces: dict[str, Callable[[], Iterable[tuple[str, Callable]]]], only: set[str],
                count: int, rng, refusals: dict[str, list[str]], cpu_limit_s: float,
                cpu_hang_s: float | None = None, progress: bool = False) -> dict:
    """:func:`run_surfaces` for the seeded rounds (:func:`seeded_round`): at most ``count`` cases a
    surface (:func:`seeded_sample`), refusals noted (:func:`noting`), a case that handled its
    input but used more than ``cpu_limit_s`` CPU seconds its own class, a hang ``cpu_hang_s``
    CPU seconds when given (:func:`outcome`); with ``progress`` a line per 50 inputs."""
    counts: dict[str, int] = {}
    failures: dict[str, list[str]] = {}
    start = time.monotonic()
    for surface, made in surfaces.items():
        if only and surface not in only:
            continue
        for label, thunk in seeded_sample(made(), count, rng):
            counts[surface] = counts.get(surface, 0) + 1
            cpu = time.process_time()
            bad = outcome(noting(thunk, label, refusals), cpu_s=cpu_hang_s)
            used = time.process_time() - cpu
            if bad is None and used > cpu_limit_s:
                bad = f"over {cpu_limit_s:g} CPU s"
            if bad:
                failures.setdefault(f"{surface}: {bad}", []).append(
                    f"{label[:300]} ({used:.1f} CPU s)")
            if progress and sum(counts.values()) % 50 == 0:
                print(f"{sum(counts.values())} inputs, {len(failures)} classes, "
                      f"{time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
    return {"counts": counts, "failures": failures}


def seeded_round(seed: int, argv: list[str] | None,
                 surfaces_of: Callable[[str, Any], dict[str, Callable[[], Iterable]]],
                 cpu_limit_s: float = ROUND_CPU_LIMIT_S,
                 cpu_hang_s: float | None = ROUND_CPU_HANG_S) -> int:
    """A seeded round's ``main`` (fuzz49 onwards): its flags (:func:`round_parser`), warnings
    off, the surfaces ``surfaces_of(workdir, rng)`` builds in a temporary directory with the
    round's seeded ``random.Random``, swept by :func:`timed_sweep` (a handled input over
    ``cpu_limit_s`` CPU seconds its own class, a hang ``cpu_hang_s`` CPU seconds: the rounds'
    ``ROUND_CPU_LIMIT_S`` and ``ROUND_CPU_HANG_S`` unless given), the refusals printed where
    asked and the report's exit status (:func:`print_report`)."""
    import random
    import tempfile
    import warnings

    args = round_parser(seed).parse_args(argv)
    warnings.simplefilter("ignore")
    only = only_of(args)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as workdir:
        refusals: dict[str, list[str]] = {}
        out = timed_sweep(surfaces_of(workdir, rng), only, args.count, rng, refusals,
                          cpu_limit_s, cpu_hang_s=cpu_hang_s, progress=args.progress)
        if args.refusals:
            print_refusals(refusals)
        return print_report(out, every=args.every)


def run_round(main: Callable[[], int]) -> None:
    """A round script's ``__main__``: exit with ``main()``'s status, or with one ``error:`` line
    where a surface's own set-up is refused (a ``TrainsimError`` outside any input: no input's
    class)."""
    try:
        sys.exit(main())
    except TrainsimError as exc:
        sys.exit(f"error: {exc}")


def print_report(out: dict, every: bool = False) -> int:
    """Print :func:`run_surfaces`' result (each failure class with one input, or every input
    with ``every``) and return the exit status: 1 if any input failed."""
    for cls, labels in sorted(out["failures"].items(), key=lambda kv: -len(kv[1])):
        print(f"{len(labels):5d}  {cls}")
        for label in (labels if every else labels[:1]):
            print(f"       e.g. {label}")
    total = sum(out["counts"].values())
    print(f"refused in one line: {REFUSED[0]}")
    print(f"inputs {total}: " + ", ".join(f"{k} {v}" for k, v in out["counts"].items())
          + f"; failure classes {len(out['failures'])}")
    return 1 if out["failures"] else 0


def report_sweep(failures: dict[str, list[str]], counts: collections.Counter,
                 shown: int = 3) -> int:
    """Print each failure class with up to ``shown`` of its inputs and the per-surface input
    counts (sweeps 7 and 8); 1 when any class failed, else 0."""
    for cls, labels in sorted(failures.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(labels):5d}  {cls}")
        for label in labels[:shown]:
            print(f"       {label}")
    total = sum(counts.values())
    print(f"inputs {total} ({', '.join(f'{k} {v}' for k, v in counts.items())}); refused in "
          f"one line {REFUSED[0]}; failure classes {len(failures)}")
    return 1 if failures else 0


def noting(thunk: Callable[[], str | None], label: str,
           refusals: dict[str, list[str]]) -> Callable[[], str | None]:
    """``thunk``, its refusal's text (numbers and paths blurred) noted under ``refusals``."""
    def run() -> str | None:
        try:
            return thunk()
        except TrainsimError as exc:
            key = re.sub(r"/\S+", "PATH", re.sub(r"\d+(\.\d+)?", "N", str(exc)))[:150]
            refusals.setdefault(key, []).append(label)
            raise
    return run


def print_refusals(refusals: dict[str, list[str]]) -> None:
    """The refusals ``noting`` gathered, most frequent message first, with one input each."""
    for text, labels in sorted(refusals.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(labels):5d} refused: {text}\n       e.g. {labels[0]}")
