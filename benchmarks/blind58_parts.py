"""Rows predicted with another framework's mechanisms, taken apart one mechanism at a time (a
diagnostic: nothing here feeds trainsim; 58th session, blind58).

    PYTHONPATH=src:benchmarks python benchmarks/blind58_parts.py heldout          # ~1-2 min
    PYTHONPATH=src:benchmarks python benchmarks/blind58_parts.py public --min 10
    PYTHONPATH=src:benchmarks python benchmarks/blind58_parts.py heldout --ids ROW [ROW ...]
    PYTHONPATH=src:benchmarks python benchmarks/blind58_parts.py heldout --features --moved 3
    PYTHONPATH=src:benchmarks python benchmarks/blind58_parts.py all --twins    # ~1 s

For each row of the file whose framework-blind prediction (``benchmarks/blind.py``: its
``framework`` cell an unknown name) takes another framework's profile than its own, the config
the row is simulated with named (``validate.training.row_config`` of its ``RowResult.chosen``)
and blind are compared field by field (model, parallel, training; the cluster is the row's
in both). Each field that differs is then set, alone, in the blind config to its named value,
and the iteration simulated again: the error that field alone carries, in points of the
measured time. ``profile`` is the framework and its version alone (the mechanisms a profile
selects that no config field holds: its features, read while simulating); ``all`` is the named
config with the blind profile (what the fields carry together); the named config itself closes
the row. A field set alone that a check refuses (a config the loader would never build) is
reported as refused. Fields are set with ``dataclasses.replace`` on the frozen sections, so the
loader's profile checks are not run again: a toggle is a what-if of the simulator, not a row a
user could write.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import itertools
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from blind import files

from trainsim.config import RunConfig
from trainsim.errors import TrainsimError
from trainsim.simulator import simulate
from trainsim.validate.training import predict_training_row, row_config

SECTIONS = ("model", "parallel", "training")
PROFILE = ("framework", "framework_version")
"""The training fields that select the profile: toggled together as ``profile``."""


def differing(named: RunConfig, blind: RunConfig) -> list[tuple[str, str, Any, Any]]:
    """(section, field, named value, blind value) for each field of ``SECTIONS`` that differs
    between the two configs, the profile's own pair (``PROFILE``) left out."""
    out = []
    for sec in SECTIONS:
        a, b = getattr(named, sec), getattr(blind, sec)
        for f in dataclasses.fields(a):
            if sec == "training" and f.name in PROFILE:
                continue
            va, vb = getattr(a, f.name), getattr(b, f.name)
            if va != vb:
                out.append((sec, f.name, va, vb))
    return out


def with_fields(cfg: RunConfig, changes: dict[str, dict[str, Any]]) -> RunConfig:
    """``cfg`` with ``changes`` ({section: {field: value}}) set on its frozen sections."""
    parts = {sec: getattr(cfg, sec) for sec in ("model", "parallel", "training", "cluster")}
    for sec, fields in changes.items():
        parts[sec] = dataclasses.replace(parts[sec], **fields)
    return RunConfig(**parts)


def time_of(cfg: RunConfig, changes: dict[str, dict[str, Any]] | None = None) -> float | str:
    """The simulated iteration time of ``cfg`` with ``changes`` (:func:`with_fields`), or the
    reason the config is refused."""
    try:
        return simulate(with_fields(cfg, changes or {})).iteration_time_s
    except (TrainsimError, ValueError, KeyError) as exc:
        return f"refused: {str(exc)[:90]}"


@contextlib.contextmanager
def toggles() -> Iterator[Callable[[Any, str, str, Any], str]]:
    """A maker of profiles for one what-if each (:func:`toggled_profile`'s signature), their
    names removed from the catalog again on exit. Each made profile gets a name never used in
    this process, so no cache keyed by a profile's name (the catalog's per-(framework,
    version) caches) holds another's values."""
    from trainsim.catalog import frameworks as fw

    made: dict[str, Any] = {}
    load = fw._load

    def patched(stem: str) -> Any:
        return made[stem] if stem in made else load(stem)

    def toggled_profile(base: Any, section: str, key: str, value: Any) -> str:
        """A profile: ``base`` (a ``FrameworkProfile``) with its ``section`` (features or
        defaults) ``key`` set to ``value``, one entry at ``base``'s version."""
        from trainsim.catalog.framework_versions import parse

        name = f"blind58-toggle-{next(_SERIAL)}"
        features, defaults = fw.thawed(base.features), fw.thawed(base.defaults)
        (features if section == "features" else defaults)[key] = fw.thawed(value)
        parsed = parse(base.version)
        assert parsed is not None, base.version
        entry = fw._Entry(base.version, parsed.key, base.source, base.notes,
                          fw._frozen(features), fw._frozen(defaults),
                          ((base.version, base.source),))
        made[name] = fw._Profile(name, base.description, parsed.kind, (entry,))
        fw._files()[name] = Path(name + ".yaml")
        return name

    fw._load = patched
    try:
        yield toggled_profile
    finally:
        fw._load = load
        for name in made:
            fw._files().pop(name, None)


_SERIAL = itertools.count(int(time.time() * 1e6))
"""Numbers for the made profiles' names, unique in a process however often this file is
loaded."""


def _pct(t: float | str, measured: float) -> str:
    return t if isinstance(t, str) else f"{100 * (t / measured - 1):+7.1f}%"


def _short(v: Any) -> str:
    text = repr(v) if not isinstance(v, str) else v
    return text if len(text) <= 40 else text[:37] + "..."


Part = tuple[str, "float | str", str]
"""(what was set, the simulated time or a refusal, the values: blind -> named)."""


def parts(row: dict[str, str], name: str = "otherfw",
          toggle: Callable[[Any, str, str, Any], str] | None = None
          ) -> tuple[str, float, float, float, list[Part]] | None:
    """(the row's head line, measured, named and blind predicted seconds, its parts: the
    profile alone, each differing field alone, every field with the blind profile, and with
    ``toggle`` (:func:`toggles`) the blind profile remade unchanged and each differing profile
    feature / default alone), or None where the blind prediction takes the row's own profile or
    either prediction fails."""
    named = predict_training_row(row)
    blind_row = {**row, "framework": name}
    blind = predict_training_row(blind_row)
    stack = str(blind.chosen.get("framework", "-"))
    if stack == row.get("framework") or named.predicted is None or blind.predicted is None:
        return None
    measured = named.measured
    cfg_n = row_config(row, named.chosen)
    cfg_b = row_config(blind_row, blind.chosen)
    t_n, t_b = time_of(cfg_n), time_of(cfg_b)
    head = (f"{row['id']} ({row['framework']} {row.get('framework_version', '')} as {stack} "
            f"{blind.chosen.get('framework_version') or 'newest'}): named "
            f"{_pct(named.predicted, measured)}, blind {_pct(blind.predicted, measured)}"
            + ("" if (t_n, t_b) == (named.predicted, blind.predicted) else
               f" (rebuilt: {_pct(t_n, measured)} / {_pct(t_b, measured)})"))
    tn, tb = cfg_n.training, cfg_b.training
    got: list[Part] = [("profile", time_of(cfg_b, {"training": {
        "framework": tn.framework, "framework_version": tn.framework_version}}),
        f"{tb.framework} -> {tn.framework} {tn.framework_version or ''}")]
    for sec, field, va, vb in differing(cfg_n, cfg_b):
        got.append((f"{sec}.{field}", time_of(cfg_b, {sec: {field: va}}),
                    f"{_short(vb)} -> {_short(va)}"))
    got.append(("all fields, blind profile", time_of(cfg_n, {"training": {
        "framework": tb.framework, "framework_version": tb.framework_version}}), ""))
    if toggle is not None:
        got += feature_parts(cfg_b, cfg_n, toggle)
    return head, measured, named.predicted, blind.predicted, got


KEPT = ("profile", "all fields, blind profile", "(blind profile remade)")
"""Parts printed whatever they move."""


def part_lines(head: str, measured: float, blind: float, got: list[Part],
               moved: float = 0.0) -> list[str]:
    """The head line, then one line per part that moves the blind error by ``moved`` points
    or more (a refusal always shown; ``KEPT`` always)."""
    lines = [head]
    for what, t, values in got:
        if what in KEPT or isinstance(t, str) or abs(100 * (t - blind) / measured) >= moved:
            lines.append(f"  {what:34s} {_pct(t, measured)}   {values}".rstrip())
    return lines


def feature_parts(cfg_b: RunConfig, cfg_n: RunConfig,
                  toggle: Callable[[Any, str, str, Any], str]) -> list[Part]:
    """One part per profile feature or default whose value differs between the blind and the
    named profile: the blind config simulated with the blind profile's value set to the named
    one's alone (a profile made for it by ``toggle``, :func:`toggles`); the first, the blind
    profile remade unchanged, must equal the blind figure."""
    from trainsim.catalog.frameworks import framework_profile

    tb, tn = cfg_b.training, cfg_n.training
    pb = framework_profile(tb.framework, tb.framework_version or None)
    pn = framework_profile(tn.framework, tn.framework_version or None)

    def run(section: str, key: str, value: Any) -> float | str:
        made = toggle(pb, section, key, value)
        return time_of(cfg_b, {"training": {"framework": made, "framework_version": pb.version}})

    first = next(iter(pb.features))
    got: list[Part] = [("(blind profile remade)", run("features", first, pb.features[first]), "")]
    for section in ("features", "defaults"):
        a, b = getattr(pb, section), getattr(pn, section)
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                got.append((f"{section[:4]}.{key}", run(section, key, b.get(key)),
                            f"{_short(a.get(key))} -> {_short(b.get(key))}"))
    return got


NOT_CELLS = ("id", "source", "note", "framework", "framework_version", "measured_iteration_s",
             "measured_peak_memory_gib", "memory_kind")
"""Columns that are not a run's settings: what a row is called, where and how it was
published, its framework (blinded) and that framework's release (which the fallback does not
read), and the measurements."""


def twins(paths: list[Path]) -> dict[tuple, list[tuple[str, str, str, float]]]:
    """Rows of ``paths`` that name a framework, grouped by their settings (every cell but
    ``NOT_CELLS``, as written): {settings: [(file, id, framework_version, measured s)]}, the
    groups of two or more rows only. A blind reader sees one row of a group as it sees the
    others, so it predicts them all alike."""
    groups: dict[tuple, list[tuple[str, str, str, float]]] = {}
    for path in paths:
        with open(path, newline="") as fh:
            for r in csv.DictReader(fh):
                if not (r.get("framework") or "").strip():
                    continue
                key = tuple(sorted((k, v.strip()) for k, v in r.items()
                                   if k not in NOT_CELLS and isinstance(v, str) and v.strip()))
                groups.setdefault(key, []).append((path.stem, r["id"],
                                                   r.get("framework_version") or "",
                                                   float(r["measured_iteration_s"])))
    return {k: v for k, v in groups.items() if len(v) > 1}


def floor(measured: list[float]) -> tuple[float, float]:
    """(the one prediction that minimizes the mean absolute percentage error over
    ``measured``, that least mean APE): the weighted median of the times, each weighted by
    1 / its time (the sum of |p - m| / m is piecewise linear in p, least at a measurement)."""
    best = min(measured, key=lambda p: sum(abs(p - m) / m for m in measured))
    return best, sum(abs(best - m) / m for m in measured) / len(measured)


def twin_lines(paths: list[Path], spread: float = 0.05) -> list[str]:
    """One block per group of rows with the same settings (:func:`twins`) whose measured
    times differ by more than ``spread``: each row, and the least mean APE any one prediction
    can reach on the group (:func:`floor`), what no rule on the cells can go below."""
    lines = []
    for rows in twins(paths).values():
        times = [m for *_, m in rows]
        if max(times) / min(times) - 1 <= spread:
            continue
        best, least = floor(times)
        lines.append(f"{len(rows)} rows with one setting: the best one prediction {best:.4g} s "
                     f"leaves a mean APE of {100 * least:.1f}%")
        for label, rid, version, m in rows:
            lines.append(f"  {label:28s} {rid:52s} {version:>10s} {m:9.4g} s "
                         f"{100 * (best / m - 1):+7.1f}%")
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("which", help="public, heldout or a path (with --twins: any number, "
                    "or all)", nargs="+")
    ap.add_argument("--min", type=float, default=0.0, help="blind |error| at least, %%")
    ap.add_argument("--ids", nargs="*", default=None)
    ap.add_argument("--features", action="store_true",
                    help="also each profile feature / default that differs, alone")
    ap.add_argument("--moved", type=float, default=0.0,
                    help="show only the parts that move the blind error this many points")
    ap.add_argument("--twins", action="store_true",
                    help="instead: the rows that share every setting but their framework's "
                    "release, and the floor they put under any blind reading")
    args = ap.parse_args(argv)
    if args.twins:
        which = ["public", "heldout", "checks"] if args.which == ["all"] else args.which
        print("\n".join(twin_lines(files(which))))
        return 0
    with open(files(args.which[:1])[0], newline="") as fh:
        rows = list(csv.DictReader(fh))
    pooled: list[tuple[float, float, float | str, float | str]] = []
    with toggles() as toggle:
        for row in rows:
            if args.ids is not None and row["id"] not in args.ids:
                continue
            if not (row.get("framework") or "").strip():
                continue
            if args.min and args.ids is None:
                blind = predict_training_row({**row, "framework": "otherfw"})
                if blind.ape is None or 100 * blind.ape < args.min:
                    continue
            got = parts(row, toggle=toggle if args.features else None)
            if got:
                head, measured, _, blind_s, pieces = got
                print("\n".join(part_lines(head, measured, blind_s, pieces, args.moved)),
                      flush=True)
                by = {what: t for what, t, _ in pieces}
                pooled.append((measured, blind_s, by["profile"],
                               by["all fields, blind profile"]))
    if pooled:
        print(pooled_line(pooled))
    return 0


def pooled_line(pooled: list[tuple[float, float, float | str, float | str]]) -> str:
    """The rows' MAPE blind, with the named profile alone (the blind fields kept), and with
    the named fields alone (the blind profile kept), from (measured, blind, profile, fields)
    seconds per row: which of the two carries the blind miss."""
    def mape(i: int) -> str:
        got = [abs(x[i] / x[0] - 1) for x in pooled if not isinstance(x[i], str)]
        return f"{100 * sum(got) / len(got):.1f}% ({len(got)} rows)" if got else "-"

    return (f"{len(pooled)} rows: MAPE blind {mape(1)}; the named profile alone {mape(2)}; "
            f"the named fields alone {mape(3)}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
