"""Two exact trims of ``trainsim validate``'s CPU timed by replay (issue 21 item 3, speed44):
the whole command moves by more than they save on this shared 2-core host, so each part's
inputs are recorded from a serial run of the file and replayed alone, the two versions
alternated in one process (best of ``--reps``), their outputs compared.

    PYTHONPATH=src python benchmarks/speed44_replay.py configs [--rows N] [--reps 6] [FILE]
    PYTHONPATH=src python benchmarks/speed44_replay.py pipeline --against /other/tree/src \
        [--rows N] [--reps 4] [FILE]
    PYTHONPATH=src python benchmarks/speed44_replay.py bounds [--rows N] [--reps 6] [FILE]

``configs``: every ``run_config_from_dict`` the tuner makes, replayed row by row inside
``validate.training.row_shared`` with the kept model and cluster sections
(``catalog.shared_sections``) and with every section built (``kept_section`` a plain call);
the configs must be equal. ``pipeline``: every task graph the rows build, its passes placed
by this tree's ``PipelineTasks.pipeline`` and by the other tree's (loaded as a module of its
own); each graph's tasks (stream, duration, dependencies, label, segments, what they slow,
schedule tags) must be the same. ``bounds`` (bound44): every ``lower_bound_s`` the tuner asks,
replayed row by row inside ``validate.training.row_shared``, each with a pricer of its own as
the tuner gives it, with the row's chunks shared (``memo.chunks_shared``) and without; the
bounds must be equal to the bit.
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib.util
import itertools
import time
import warnings
from collections.abc import Callable
from typing import Any

PUBLIC = "../shared/validation/training_public.csv"


def _rows(path: str, n: int | None) -> tuple[Callable[[dict], Any], list[dict]]:
    from trainsim.validate import PREDICT, _guarded, _said, read_rows

    kind, rows = read_rows(path)
    predict = functools.partial(_said, functools.partial(_guarded, functools.partial(
        PREDICT[kind], compute_db="auto")))
    return predict, rows[:n]


def configs(path: str, n: int | None, reps: int) -> None:
    from trainsim import catalog
    from trainsim.errors import ConfigError
    from trainsim.validate import training

    calls: list[tuple[int, dict]] = []
    build = training.run_config_from_dict
    at = [0]

    def recording(data: dict) -> Any:
        import copy
        calls.append((at[0], copy.deepcopy(data)))
        return build(data)

    predict, rows = _rows(path, n)
    training.run_config_from_dict = recording
    try:
        for at[0], row in enumerate(rows):
            predict(row)
    finally:
        training.run_config_from_dict = build

    def replay() -> list:
        out: list = []
        for _, group in itertools.groupby(calls, key=lambda c: c[0]):
            with training.row_shared():
                for _, data in group:
                    try:
                        out.append(training._interned(build(data)))
                    except ConfigError as exc:
                        out.append(str(exc))
        return out

    kept = catalog.kept_section
    ways = {"every section built": lambda kind, raw, extra, make: make(), "sections kept": kept}
    best = dict.fromkeys(ways, float("inf"))
    got: dict[str, list] = {}
    warnings.simplefilter("ignore")
    try:
        for _ in range(reps):
            for name, way in ways.items():
                catalog.kept_section = way
                t = time.process_time()
                got[name] = replay()
                best[name] = min(best[name], time.process_time() - t)
    finally:
        catalog.kept_section = kept
    same = len({repr(v) for v in got.values()}) == 1 and all(
        a == b for a, b in zip(*got.values()))
    print(f"{len(calls):,} configs of {len(rows)} rows, best of {reps} (CPU s): "
          + ", ".join(f"{k} {v:.3f}" for k, v in best.items()) + f"; configs equal: {same}")


def pipeline(path: str, n: int | None, reps: int, against: str) -> None:
    from trainsim import simulator, steady_state
    from trainsim.pipeline_passes import PipelineTasks

    spec = importlib.util.spec_from_file_location(
        "other_pipeline_passes", f"{against}/trainsim/pipeline_passes.py")
    other = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(other)  # type: ignore[union-attr]
    graphs: list[tuple] = []
    build = simulator.build_graph

    def recording(cfg: Any, pricer: Any, layer_source: Any = None,
                  microbatches: int | None = None) -> Any:
        graphs.append((cfg, pricer, layer_source, microbatches))
        return build(cfg, pricer, layer_source, microbatches)

    predict, rows = _rows(path, n)
    simulator.build_graph = steady_state.build_graph = recording
    try:
        for row in rows:
            predict(row)
    finally:
        simulator.build_graph = steady_state.build_graph = build

    def placed(place: Callable) -> tuple[float, list]:
        spent, out = 0.0, []
        gc.disable()
        try:
            for args in graphs:
                g = simulator._TaskGraph(*args)
                t = time.process_time()
                place(g)
                spent += time.process_time() - t
                out.append(([(x.stream, x.duration_s, x.deps, x.label, x.segments, x.slows)
                             for x in g.tasks], g.tags))
        finally:
            gc.enable()
        return spent, out

    ways = {"this tree": PipelineTasks.pipeline, "other tree": other.PipelineTasks.pipeline}
    best = dict.fromkeys(ways, float("inf"))
    same = True
    for rep in range(reps):
        got = {}
        for name in (list(ways) if rep % 2 else list(ways)[::-1]):
            spent, got[name] = placed(ways[name])
            best[name] = min(best[name], spent)
        same = same and got["this tree"] == got["other tree"]
    print(f"{len(graphs)} graphs of {len(rows)} rows, pipeline() best of {reps} (CPU s): "
          + ", ".join(f"{k} {v:.3f}" for k, v in best.items()) + f"; tasks identical: {same}")


def bounds(path: str, n: int | None, reps: int) -> None:
    import contextlib

    from trainsim import memo
    from trainsim.pricing import Pricer
    from trainsim.validate import training

    calls: list[tuple[int, Any]] = []
    bound = training.lower_bound_s
    at = [0]

    def recording(cfg: Any, pricer: Any = None) -> float:
        calls.append((at[0], cfg))
        return bound(cfg, pricer)

    predict, rows = _rows(path, n)
    training.lower_bound_s = recording
    try:
        for at[0], row in enumerate(rows):
            predict(row)
    finally:
        training.lower_bound_s = bound
    built = [0]
    real = memo.chunks

    def counted(*args: Any) -> Any:
        built[0] += 1
        return real(*args)

    def replay() -> list[float]:
        out: list[float] = []
        for _, group in itertools.groupby(calls, key=lambda c: c[0]):
            with training.row_shared():
                out.extend(bound(cfg, Pricer(cfg)) for _, cfg in group)
        return out

    ways = {"chunks per candidate": contextlib.nullcontext, "chunks shared": memo.chunks_shared}
    best = dict.fromkeys(ways, float("inf"))
    got: dict[str, list] = {}
    priced: dict[str, int] = {}
    kept = training.chunks_shared
    memo.chunks = counted  # type: ignore[assignment]
    warnings.simplefilter("ignore")
    try:
        for rep in range(reps):
            for name in (list(ways) if rep % 2 else list(ways)[::-1]):
                training.chunks_shared = ways[name]  # type: ignore[assignment]
                built[0] = 0
                t = time.process_time()
                got[name] = replay()
                best[name] = min(best[name], time.process_time() - t)
                priced[name] = built[0]
    finally:
        training.chunks_shared = kept
        memo.chunks = real  # type: ignore[assignment]
    same = [a.hex() for a in got["chunks shared"]] == [a.hex() for a in got["chunks per candidate"]]
    print(f"{len(calls)} bounds of {len(rows)} rows, best of {reps} (CPU s): "
          + ", ".join(f"{k} {v:.3f} ({priced[k]} chunks priced)" for k, v in best.items())
          + f"; bounds identical: {same}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("configs", "pipeline", "bounds"))
    ap.add_argument("file", nargs="?", default=PUBLIC)
    ap.add_argument("--rows", type=int, default=None, help="the file's first N rows")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--against", help="another tree's src/ (pipeline mode)")
    args = ap.parse_args()
    if args.mode == "configs":
        configs(args.file, args.rows, args.reps or 6)
    elif args.mode == "bounds":
        bounds(args.file, args.rows, args.reps or 6)
    else:
        if not args.against:
            ap.error("pipeline needs --against SRC")
        pipeline(args.file, args.rows, args.reps or 4, args.against)


if __name__ == "__main__":
    main()
