"""Where ``trainsim validate``'s wall and row CPU go, by process and by candidate config (issue
21 item 3, speed47v). Two measurements, no prediction changed (the wrappers call the originals
and give back what they return):

``workers``: the command line run in this process as ``python -m trainsim validate FILE
[ARGS]`` runs it (its output to ``--out``), every row's prediction timed in whichever process
makes it (``validate._said`` wrapped before the pool forks, so the workers inherit the wrapper;
each process appends its rows to its own file in a temporary directory, removed after). It
prints the parent's phases (seconds since the process started, from ``/proc``: interpreter
ready, ``trainsim.cli`` imported, rows read, pool started and shut down, output written), and
per worker its rows, their CPU (``time.thread_time``), its first row's CPU, its first start and
last end: how even the split is and how long one worker idles while the other ends.

``configs``: every training row predicted serially in this process with
``validate.training``'s ``run_config_from_dict``, ``_peak_within``, ``simulate`` and
``lower_bound_s`` wrapped; each candidate config the tuner built is classed by the furthest it
got (simulated, bounded, fits but never bounded, refused for memory or by a config error), with
the CPU of its build and memory check, and the row CPU of tuned (several candidates) and untuned
rows.

    PYTHONPATH=src python benchmarks/speed47v_wall.py workers [FILE] [--out PATH] [-- ARGS...]
    PYTHONPATH=src python benchmarks/speed47v_wall.py configs [FILE] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any

PUBLIC = "../shared/validation/training_public.csv"


def process_start() -> float:
    """This process's start (``time.time`` scale), from ``/proc/self/stat`` and ``/proc/uptime``
    (clock ticks: ~10 ms); now where ``/proc`` cannot be read."""
    try:
        stat = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return time.time() - (uptime - int(stat[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return time.time()


def _note(folder: str, t0: float, what: str, **more: Any) -> None:
    with open(os.path.join(folder, f"{os.getpid()}.jsonl"), "a") as fh:
        fh.write(json.dumps({"what": what, "t": time.time() - t0, "cpu": time.process_time(),
                             **more}) + "\n")


def workers(path: str, args: list[str], out: str) -> dict[str, Any]:
    """The command line's parent phases and each worker's rows (see the module's text)."""
    t0 = process_start()
    folder = tempfile.mkdtemp(prefix="speed47v_")
    try:
        _note(folder, t0, "script")
        from trainsim import cli
        from trainsim import validate as v

        _note(folder, t0, "imported")
        said, read, pool = v._said, v.read_rows, v._in_workers
        _HOOK[:] = [said, folder, t0]

        def timed_read(p):  # type: ignore[no-untyped-def]
            got = read(p)
            _note(folder, t0, "rows read")
            return got

        def timed_pool(*a, **k):  # type: ignore[no-untyped-def]
            _note(folder, t0, "pool started")
            try:
                return pool(*a, **k)
            finally:
                _note(folder, t0, "pool shut down")

        v._said, v.read_rows, v._in_workers = _timed_said, timed_read, timed_pool
        try:
            with open(out, "w") as fh, _stdout(fh):
                cli.main(["validate", path, *args], prog_name="trainsim", standalone_mode=False)
        finally:
            v._said, v.read_rows, v._in_workers = said, read, pool
        _note(folder, t0, "output written")
        return timeline(folder, os.getpid())
    finally:
        shutil.rmtree(folder, ignore_errors=True)


_HOOK: list[Any] = []
"""The original ``validate._said``, the event folder and the process start, for
:func:`_timed_said` (a module function: the pool pickles it by name, the forked workers find
it set)."""


def _timed_said(predict: Any, row: dict[str, str]) -> Any:
    said, folder, t0 = _HOOK
    t, c = time.time(), time.thread_time()
    got = said(predict, row)
    _note(folder, t0, "row", id=row.get("id", "?"), start=t - t0, end=time.time() - t0,
          row_cpu=time.thread_time() - c)
    return got


@contextmanager
def _stdout(fh: Any) -> Any:
    """``sys.stdout`` and file descriptor 1 sent to ``fh`` (click and rich write to either)."""
    sys.stdout.flush()
    saved, keep = sys.stdout, os.dup(1)
    os.dup2(fh.fileno(), 1)
    sys.stdout = fh
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stdout = saved
        os.dup2(keep, 1)
        os.close(keep)


def timeline(folder: str, parent: int) -> dict[str, Any]:
    """The events of every process in ``folder``: the parent's phases, and per process its rows
    (the parent's too where it predicted rows itself, ``--workers 1``)."""
    events = {int(p.stem): [json.loads(line) for line in p.read_text().splitlines()]
              for p in Path(folder).glob("*.jsonl")}
    phases = {e["what"]: {"t": round(e["t"], 3), "cpu": round(e["cpu"], 3)}
              for e in events.get(parent, []) if e["what"] != "row"}
    procs = []
    for pid, evs in sorted(events.items()):
        rows = sorted((e for e in evs if e["what"] == "row"), key=lambda e: e["start"])
        if rows:
            procs.append({"parent": pid == parent, "rows": len(rows),
                          "row_cpu": round(sum(r["row_cpu"] for r in rows), 3),
                          "first_row_cpu": round(rows[0]["row_cpu"], 3),
                          "first_start": round(rows[0]["start"], 3),
                          "last_end": round(max(r["end"] for r in rows), 3),
                          "largest": [[r["id"], round(r["row_cpu"], 3)] for r in
                                      sorted(rows, key=lambda r: -r["row_cpu"])[:3]],
                          "last": [[r["id"], round(r["row_cpu"], 3)] for r in rows[-2:]]})
    ends = [p["last_end"] for p in procs]
    cpus = [p["row_cpu"] for p in procs]
    return {"phases": phases, "processes": procs,
            "row_cpu": round(sum(cpus), 3),
            "cpu_spread": round(max(cpus) - min(cpus), 3) if cpus else 0.0,
            "end_spread": round(max(ends) - min(ends), 3) if ends else 0.0}


@contextmanager
def recorded(log: list[dict[str, Any]]) -> Any:
    """Inside it, ``validate.training``'s config builds, memory checks, simulations and bounds
    append their config's id, kind and CPU to ``log``; the originals are put back on exit."""
    from trainsim.validate import training

    names = ("run_config_from_dict", "_peak_within", "simulate", "lower_bound_s")
    saved = {n: getattr(training, n) for n in names}

    def wrap(name: str, kind: str) -> Any:
        original = saved[name]

        def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
            t = time.process_time()
            try:
                got = original(*args, **kwargs)
            except Exception:
                log.append({"kind": "refused", "cfg": None, "cpu": time.process_time() - t})
                raise
            cfg = got if kind == "config" else args[0]
            log.append({"kind": kind, "cfg": id(cfg), "cpu": time.process_time() - t,
                        "value": got if kind in ("memory", "bound") else None,
                        "hbm": args[1] if kind == "memory" else None})
            if kind == "config":
                log[-1]["keep"] = got  # the id stays this config's while the row runs
            return got
        return wrapper

    for name, kind in zip(names, ("config", "memory", "sim", "bound")):
        setattr(training, name, wrap(name, kind))
    try:
        yield log
    finally:
        for name, original in saved.items():
            setattr(training, name, original)


FATES = ("simulated", "bounded", "fits, not bounded", "refused for memory", "memory not asked")
"""A candidate config's furthest step: simulated; bounded, never simulated; fits in memory but
neither bounded nor simulated; over the GPU's memory; built, memory never checked (a config the
tuner's final ``simulate`` or the layout pick built outside the memory check). A build that
raised (a ConfigError: the setting is invalid) is counted apart, with its CPU."""


def row_configs(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Per row: id, CPU, whether tuned (more than one candidate asked for, built or refused),
    the refused builds and their CPU, per fate the configs and their build and memory-check
    CPU, and the CPU of simulations and bounds."""
    from trainsim.validate.training import predict_training_row

    out, log = [], []
    with recorded(log), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for row in rows:
            log.clear()
            t = time.process_time()
            predict_training_row(row)
            cpu = time.process_time() - t
            by_cfg: dict[int, dict[str, Any]] = {}
            refused = [e["cpu"] for e in log if e["kind"] == "refused"]
            for e in log:
                if e["kind"] == "refused":
                    continue
                c = by_cfg.setdefault(e["cfg"], {"build": 0.0, "memory": 0.0, "sims": 0,
                                                 "bounds": 0, "over": None})
                if e["kind"] == "config":
                    c["build"] += e["cpu"]
                elif e["kind"] == "memory":
                    c["memory"] += e["cpu"]
                    c["over"] = e["value"] > e["hbm"]
                elif e["kind"] == "sim":
                    c["sims"] += 1
                else:
                    c["bounds"] += 1
            fates: dict[str, dict[str, float]] = {f: {"n": 0, "build": 0.0, "memory": 0.0}
                                                  for f in FATES}
            for c in by_cfg.values():
                fate = ("simulated" if c["sims"] else "bounded" if c["bounds"] else
                        "memory not asked" if c["over"] is None else
                        "refused for memory" if c["over"] else "fits, not bounded")
                fates[fate]["n"] += 1
                fates[fate]["build"] += c["build"]
                fates[fate]["memory"] += c["memory"]
            out.append({"id": row.get("id", "?"), "cpu": cpu,
                        "tuned": sum(e["kind"] in ("config", "refused") for e in log) > 1,
                        "fates": fates, "config_errors": len(refused),
                        "config_errors_cpu": sum(refused),
                        "sim_cpu": sum(e["cpu"] for e in log if e["kind"] == "sim"),
                        "bound_cpu": sum(e["cpu"] for e in log if e["kind"] == "bound")})
            log.clear()
    return out


def config_summary(costs: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals over rows, split into tuned and untuned rows: rows, CPU, simulations' and bounds'
    CPU, the rest; per fate the configs and their build and memory CPU."""
    out: dict[str, Any] = {}
    for label, group in (("tuned", [r for r in costs if r["tuned"]]),
                         ("untuned", [r for r in costs if not r["tuned"]])):
        fates = {f: {k: round(sum(r["fates"][f][k] for r in group), 3)
                     for k in ("n", "build", "memory")} for f in FATES}
        cpu = sum(r["cpu"] for r in group)
        sims, bounds = sum(r["sim_cpu"] for r in group), sum(r["bound_cpu"] for r in group)
        out[label] = {"rows": len(group), "cpu": round(cpu, 3), "sim_cpu": round(sims, 3),
                      "config_errors": sum(r["config_errors"] for r in group),
                      "config_errors_cpu": round(sum(r["config_errors_cpu"] for r in group), 3),
                      "bound_cpu": round(bounds, 3), "rest_cpu": round(cpu - sims - bounds, 3),
                      "fates": fates}
    return out


def _lines(got: dict[str, Any]) -> list[str]:
    """The ``workers`` figures, one line for the parent's phases and one a process."""
    out = ["parent (s since its start, wall / its CPU): " + ", ".join(
        f"{k} {v['t']:.2f} / {v['cpu']:.2f}" for k, v in got["phases"].items())]
    for p in got["processes"]:
        out.append(f"{'parent' if p['parent'] else 'worker'}: {p['rows']} rows, row CPU "
                   f"{p['row_cpu']:.2f} s (first row {p['first_row_cpu']:.2f}), rows from "
                   f"{p['first_start']:.2f} to {p['last_end']:.2f} s; largest "
                   + ", ".join(f"{i} {c:.2f}" for i, c in p["largest"]))
    out.append(f"rows' CPU {got['row_cpu']:.2f} s; workers' CPU spread {got['cpu_spread']:.2f} s, "
               f"last ends {got['end_spread']:.2f} s apart")
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("workers", "configs"))
    ap.add_argument("file", nargs="?", default=PUBLIC)
    ap.add_argument("--out", default=os.devnull, help="workers: the command's output")
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args(argv)
    if a.mode == "workers":
        got = workers(a.file, extra, a.out)
    else:
        from trainsim.validate import read_rows

        costs = row_configs(read_rows(a.file)[1])
        got = {"summary": config_summary(costs), "rows": costs}
    print("\n".join(_lines(got) if a.mode == "workers" else
                    [f"{k}: {json.dumps(v)}" for k, v in got["summary"].items()]))
    if a.json:
        Path(a.json).write_text(json.dumps(got, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
