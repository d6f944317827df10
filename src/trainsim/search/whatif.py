"""Hardware and setting what-ifs: simulate one config over a grid of varied fields.

``--vary cluster.nvlink_gbyte_s=300:1800`` takes ``steps`` evenly spaced values (ends included),
``--vary parallel.tp=1,2,4,8`` a list. Paths are ``--set`` paths
(:func:`trainsim.catalog.apply_overrides`), so anything a config file can say can be varied:
``cluster.gpu_overrides.hbm_gbyte_s`` makes a what-if GPU from the catalog one,
``cluster.gpu`` may name a catalog GPU or be a whole mapping (a new GPU in YAML, no code).
Numbers take SI suffixes: k, M, G, T (10^3 ... 10^12).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainsim.catalog import apply_overrides, run_config_from_dict
from trainsim.config._build import SI_MULTIPLES, si_float, suggest
from trainsim.config.parallel import ALIASES
from trainsim.config.run import text_field
from trainsim.config.safe_load import parse_value, written_float
from trainsim.errors import ConfigError, TrainsimError, TrainsimWarning
from trainsim.limits import check
from trainsim.result import Result
from trainsim.simulator import simulate


def parse_number(text: str, where: str) -> float:
    """'400', '1.5e3', '300G', '300B', '15T' -> float (``config._build.si_float``: SI multiples
    of 1000, the rule every count written as text is read by)."""
    try:
        v = si_float(text)
    except ValueError:
        raise ConfigError(f"{where}: {text!r} is not a number (suffixes k, M, B/G, T, P "
                          "allowed)") from None
    if not math.isfinite(v):
        raise ConfigError(f"{where}: {text!r} is not a finite number")
    return v


def _tidy(v: float) -> float | int:
    return int(v) if float(v).is_integer() and abs(v) < 2**53 else v


@dataclass(frozen=True)
class Vary:
    """One varied field and its values."""

    path: str
    values: tuple[Any, ...]
    repeated: int = 0
    """Listed values dropped as repeats of an earlier one (``--vary tp=1,2,1``: one)."""

    def note(self) -> str | None:
        """The one line that says repeated values were dropped, or None."""
        if not self.repeated:
            return None
        s = "" if self.repeated == 1 else "s"
        return f"--vary {self.path}: {self.repeated:,} repeated value{s} dropped"

    @classmethod
    def parse(cls, text: str, steps: int = 5) -> Vary:
        """'a.b=LO:HI' (``steps`` values, ends included; 'LO:HI:N' sets N) or 'a.b=v1,v2,...'."""
        if "=" not in text:
            raise ConfigError(f"--vary {text!r}: expected section.field=LO:HI or section.field=a,b,c")
        path, spec = (s.strip() for s in text.split("=", 1))
        if len(path.split(".")) < 2:
            raise ConfigError(f"--vary {text!r}: the path needs a section, e.g. cluster.nvlink_gbyte_s")
        where = f"--vary {path}"
        if ":" in spec and not text_field(path):  # robust61: custom:qkv_proj is no LO:HI
            parts = spec.split(":")
            if len(parts) not in (2, 3):
                raise ConfigError(f"{where}: expected LO:HI or LO:HI:STEPS, got {spec!r}")
            lo, hi = parse_number(parts[0], where), parse_number(parts[1], where)
            n = int(parse_number(parts[2], where)) if len(parts) == 3 else steps
            if n < 1:
                raise ConfigError(f"{where}: steps={n} must be >= 1")
            check("TRAINSIM_MAX_CANDIDATES", n, f"{where}: sweep values", "",
                  "fewer steps (LO:HI:STEPS or --steps)")
            vals = [lo] if n == 1 else [lo + (hi - lo) * i / (n - 1) for i in range(n)]
            if all(_is_int_literal(x) for x in parts[:2]):  # counts (tp=1:8) stay integers
                vals = list(dict.fromkeys(round(v) for v in vals))
            return cls(path, tuple(_tidy(v) for v in vals))
        items = [s.strip() for s in spec.split(",") if s.strip()]
        if not items:
            raise ConfigError(f"{where}: no values")
        if text_field(path):  # framework_version=0.10,0.12: the text, as the run reads it
            return cls(path, tuple(_as_text(s, where) for s in items))
        vals: list[Any] = []
        for s in items:
            try:
                value = parse_number(s, where)
            except ConfigError:
                vals.append(s)  # a name: a catalog GPU, a recompute mode, true/false ...
                continue
            vals.append(_as_written(value, s))
        return cls._unique(path, vals)

    @classmethod
    def _unique(cls, path: str, vals: list[Any]) -> Vary:
        """Each value once, in the order first listed: a repeated value is the same run, so
        simulating it again only repeats a row (``tp=1,1,...`` ran every copy). Only the same
        value of the same type is a repeat: 2 and 2.0 are kept, as a field may refuse one."""
        seen: dict[Any, Any] = {}
        for v in vals:
            seen.setdefault((type(v), v), v)
        return cls(path, tuple(seen.values()), len(vals) - len(seen))


def _as_written(value: float, text: str) -> float | int:
    """A listed value as ``--set`` and a YAML file read the number: '2' the integer 2, '2.0'
    the float 2.0, shown as written ('0.10' stays 0.10: ``written_float``); a value with an SI
    suffix ('300G') or an exponent ('1.5e3') is the number it names, whole where it is whole."""
    if _is_int_literal(text):
        return int(text.strip())
    if text.strip()[-1:].upper() in SI_MULTIPLES or "e" in text.lower():
        return _tidy(value)
    return written_float(value, text)


def _as_text(text: str, where: str) -> Any:
    """A listed value of a text field as the run reads it: ``--set`` (``parse_value``, the YAML
    loader's reading and refusals) makes '0x10' the number 16, so the text '16', and '0.10' the
    text '0.10'; '0b11' is refused as in a YAML file. Text that is no number stays as written."""
    value = parse_value(text, where)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return text


def _is_int_literal(text: str) -> bool:
    t = text.strip().lstrip("+-")
    return t.isascii() and t.isdigit()


@dataclass(frozen=True)
class SweepPoint:
    values: tuple[Any, ...]
    result: Result | None
    error: str | None = None

    def row(self, varies: Sequence[Vary]) -> dict[str, Any]:
        out: dict[str, Any] = {v.path: x for v, x in zip(varies, self.values)}
        r = self.result
        if r is None:
            out.update(iteration_time_s=None, mfu=None, tokens_per_s=None,
                       tokens_per_s_per_gpu=None, peak_memory_gib=None, fits_in_memory=None,
                       error=self.error)
            return out
        out.update(iteration_time_s=r.iteration_time_s, mfu=r.mfu, tokens_per_s=r.tokens_per_s,
                   tokens_per_s_per_gpu=r.tokens_per_s_per_gpu,
                   peak_memory_gib=r.peak_memory_bytes / 2**30, fits_in_memory=r.fits_in_memory,
                   compute_s=r.breakdown.get("compute_s", 0.0),
                   exposed_comm_s=r.breakdown.get("exposed_comm_s", 0.0),
                   pipeline_bubble_s=r.breakdown.get("pipeline_bubble_s", 0.0), error=None)
        return out


@dataclass(frozen=True)
class SweepResult:
    varies: tuple[Vary, ...]
    points: tuple[SweepPoint, ...]
    said: tuple[str, ...] = ()
    """The trainsim warnings its points raised, once each in the order raised (a node past its
    GPU's domain, ...): the CLI prints them as they come; the JSON carries them."""

    def notes(self) -> list[str]:
        """What its ``--vary`` lists said (``Vary.note``: repeated values dropped)."""
        return [n for n in (v.note() for v in self.varies) if n]

    def warnings(self) -> list[str]:
        """``notes`` and then ``said``: the JSON's ``warnings`` (``render.sweep_json``), all a
        sweep job's user reads of them (a service worker's stderr reaches no one)."""
        return self.notes() + list(self.said)

    def rows(self) -> list[dict[str, Any]]:
        rows = [p.row(self.varies) for p in self.points]
        keys = list(dict.fromkeys(k for r in rows for k in r))
        return [{k: r.get(k) for k in keys} for r in rows]

    def series(self, rows: Sequence[dict[str, Any]] | None = None) -> list[Any]:
        """Plot series (``report.plots.SweepSeries``) from the rows the table and JSON print
        (``rows()``): x is the first varied field, one line per value of the others; a point
        that failed is left out."""
        from trainsim.report.plots import SweepSeries

        rows = self.rows() if rows is None else rows
        first, rest = self.varies[0].path, [v.path for v in self.varies[1:]]
        lines: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for r in rows:
            if r["iteration_time_s"] is not None:
                lines.setdefault(tuple(r[p] for p in rest), []).append(r)

        def col(pts: list[dict[str, Any]], key: str) -> tuple[Any, ...]:
            return tuple(r[key] for r in pts)

        return [SweepSeries(", ".join(f"{p}={x}" for p, x in zip(rest, key)), col(pts, first),
                            col(pts, "iteration_time_s"), col(pts, "mfu"),
                            col(pts, "tokens_per_s_per_gpu"), col(pts, "peak_memory_gib"),
                            col(pts, "fits_in_memory"))
                for key, pts in lines.items()]

    def _plot_inputs(self, title: str | None) -> dict[str, Any]:
        from trainsim.report.plots import is_number

        rows = self.rows()
        first = self.varies[0]
        failed = [r for r in rows if r["iteration_time_s"] is None]
        notes = [(f"{len(failed)} of {len(rows)} points failed (first: "
                  f"{str(failed[0]['error']).split(';')[0][:90]})")] if failed else []
        numeric = all(is_number(v) for v in first.values)
        return {"series": self.series(rows), "x_label": first.path, "title": title,
                "categories": None if numeric else first.values, "notes": notes}

    def figure(self, title: str | None = None) -> Any:
        """The Figure :meth:`plot` writes (``report.plots.sweep_figure``): iteration time,
        tokens/s per GPU, MFU and peak memory against the first varied field."""
        from trainsim.report.plots import sweep_figure

        return sweep_figure(**self._plot_inputs(title))

    def plot(self, path: str | Path, title: str | None = None) -> Path:
        """Write :meth:`figure` to ``path`` (``trainsim sweep --plot``); the suffix picks the
        format."""
        from trainsim.report.plots import plot_sweep

        return plot_sweep(path=path, **self._plot_inputs(title))


MAX_POINTS = 10_000


def _field(path: str) -> str:
    """A field's path with a parallel size's short name read as its full one."""
    parts = [p.strip() for p in path.strip().split(".")]
    if len(parts) == 2 and parts[0] == "parallel":
        parts[1] = ALIASES.get(parts[1], parts[1])
    return ".".join(parts)


RUN_SECTIONS = ("model", "parallel", "training", "cluster")
"""The sections of a run config whose fields a sweep point's one iteration reads."""


def _section_problem(path: str) -> str | None:
    """Why ``--vary PATH`` names no field a sweep can vary (a section other than the run's, or
    ``reliability``, which only ``trainsim goodput`` reads), or None."""
    section = path.strip().split(".")[0].strip()
    if section == "reliability":
        return (f"--vary {path.strip()}: only trainsim goodput reads the reliability section; "
                "a sweep simulates one iteration a point and would ignore it")
    if section not in RUN_SECTIONS:
        return (f"--vary {path.strip()}: unknown section {section!r}"
                f"{suggest(section, RUN_SECTIONS)}; a sweep varies a field of model, "
                "parallel, training or cluster")
    return None


def sweep_points(varies: Sequence[Vary]) -> list[list[str]]:
    """The ``--set`` items of each grid point of ``varies``, in the sweep's order."""
    return [[f"{v.path}={x}" for v, x in zip(varies, values)]
            for values in itertools.product(*(v.values for v in varies))]


def sweep(raw: dict[str, Any], varies: Sequence[Vary], overrides: Sequence[str] = (),
          progress: Callable[[int, int], None] | None = None) -> SweepResult:
    """Simulate ``raw`` (a config mapping as read from YAML) at every grid point of ``varies``.
    A point the config rejects is kept with its error; the others still run."""
    if not varies:
        raise ConfigError("sweep needs at least one --vary")
    varied = [_field(v.path) for v in varies]  # tp and tensor_model_parallel_size are one
    if len(set(varied)) != len(varied):
        raise ConfigError("--vary: the same field is varied twice")
    for v in varies:  # a section no point reads failed every point alike (robust55 lead 3)
        if (problem := _section_problem(v.path)) is not None:
            raise ConfigError(problem)
    for item in overrides:  # a --set of a varied field was overwritten at every point
        if isinstance(item, str) and "=" in item and _field(item.split("=", 1)[0]) in varied:
            raise ConfigError(f"--set {item.split('=', 1)[0].strip()}: --vary varies that "
                              "field; give one of them")
    check("TRAINSIM_MAX_CANDIDATES", math.prod(len(v.values) for v in varies),
          "sweep grid points", "", "fewer --vary values or --steps")
    grid = list(itertools.product(*(v.values for v in varies)))
    if len(grid) > MAX_POINTS:
        raise ConfigError(f"--vary: {len(grid)} grid points, more than {MAX_POINTS}; use fewer steps")
    base = apply_overrides(raw, list(overrides))
    points = []
    said: list[str] = []
    for i, (values, sets) in enumerate(zip(grid, sweep_points(varies))):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            try:
                cfg = run_config_from_dict(apply_overrides(base, sets))
                points.append(SweepPoint(values, simulate(cfg)))
            except TrainsimError as exc:
                points.append(SweepPoint(values, None, str(exc)))
        for w in seen:  # raised again to the caller's filters, a trainsim one once
            if issubclass(w.category, TrainsimWarning):
                if str(w.message) in said:
                    continue
                said.append(str(w.message))
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if progress:
            progress(i + 1, len(grid))
    if all(p.result is None for p in points):
        raise ConfigError(f"no point of the sweep is a valid config; first error: {points[0].error}")
    return SweepResult(tuple(varies), tuple(points), tuple(said))


def write_sweep(result: SweepResult, out_dir: str | Path) -> list[Path]:
    """sweep.csv, sweep.json, sweep.png, sweep.html (and breakdown.png) in ``out_dir``.
    sweep.json is what ``trainsim sweep --format json`` prints (``render.sweep_json``:
    ``{varied, rows, warnings}``), byte for byte."""
    from trainsim.report.plots import is_number, plot_breakdown, write_sweep_html
    from trainsim.search.render import rows_csv, sweep_json

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = result.rows()
    files = [out / "sweep.csv", out / "sweep.json"]
    files[0].write_text(rows_csv(rows))
    files[1].write_text(sweep_json(rows, [v.path for v in result.varies], result.warnings())
                        + "\n")
    series = result.series(rows)
    x = result.varies[0].path
    if series:
        files.append(result.plot(out / "sweep.png"))
        if all(is_number(v) for s in series for v in s.x):  # the page's axes are numeric
            files.append(write_sweep_html(series, x, out / "sweep.html", rows))
    ok = [p for p in result.points if p.result is not None]
    if 0 < len(ok) <= 40:
        labels = [", ".join(f"{v.path.split('.')[-1]}={x}" for v, x in zip(result.varies, p.values))
                  for p in ok]
        files.append(plot_breakdown([p.result for p in ok], out / "breakdown.png",  # type: ignore[misc]
                                    labels=labels))
    return files


__all__ = ["SweepPoint", "SweepResult", "Vary", "parse_number", "sweep", "write_sweep"]
