"""Files several test modules read: published kernel rows, a framework mirror's files, the
extra training files' shared checks, and the public training / kernels / collectives files
validated once per session."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest

# ---------------------------------------------------------------------------- kernel rows

def published_kernel_rows(keep=lambda row: True) -> list[dict[str, str]]:
    """The rows of the bundled ``kernels_published.csv`` that ``keep`` accepts."""
    import csv

    from trainsim.validate import BUNDLED_DIR

    with open(BUNDLED_DIR / "kernels_published.csv", newline="") as fh:
        return [r for r in csv.DictReader(fh) if keep(r)]


# ---------------------------------------------------------------------------- framework mirrors

def mirror_git(repo: str) -> Path:
    """The git dir (no work tree) of the framework mirror ``repo`` (``owner+name``) under
    ``$TRAINSIM_MIRRORS`` (default /work/.mirror), as benchmarks/mirror_rows.py ``mirror``."""
    return Path(os.environ.get("TRAINSIM_MIRRORS", "/work/.mirror")) / repo / "repo"


def mirror_source(repo: str, rev: str, path: str) -> str:
    """``path`` at ``rev`` in the framework mirror ``repo`` (``owner+name``, :func:`mirror_git`);
    the test is skipped where the mirror or the file is not at hand."""
    git = mirror_git(repo)
    root = git.parent.parent
    if not git.exists():
        pytest.skip(f"no {repo} mirror under $TRAINSIM_MIRRORS ({root})")
    out = subprocess.run(["git", "-C", str(git), "show", f"{rev}:{path}"], check=False,
                         capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip(f"{rev}:{path} not in the {repo} mirror under $TRAINSIM_MIRRORS ({root})")
    return out.stdout


# ---------------------------------------------------------------------------- extra training files


def training_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a training CSV in the public file's format (benchmarks/training_*.csv)."""
    import csv

    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def check_extra_training_file(path: Path, min_rows: int) -> list[dict[str, str]]:
    """A benchmarks/ training file beside the public one: the public header (in its order, plus
    any optional column the reader maps beyond it, ``validate.row_settings.COLUMN_FIELDS`` or
    ``SHAPE_COLUMNS``, e.g. the README's dropout columns), at
    least ``min_rows`` rows with unique ids none of which is a public id, each logged global
    batch a whole number of micro-batches on every data-parallel rank (where the micro-batch is
    stated: an empty one is the tool's to choose); returns the rows."""
    import csv

    from trainsim.validate import BUNDLED_DIR
    from trainsim.validate.row_settings import COLUMN_FIELDS, SHAPE_COLUMNS

    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        public = csv.DictReader(fh)
        header, public_ids = public.fieldnames, {r["id"] for r in public}
    with open(path, newline="") as fh:
        own = csv.DictReader(fh).fieldnames or []
    extra = [c for c in own if c not in (header or [])]
    assert [c for c in own if c not in extra] == header, extra
    assert set(extra) <= set(COLUMN_FIELDS) | set(SHAPE_COLUMNS), extra
    rows = training_rows(path)
    ids = [r["id"] for r in rows]
    assert len(rows) >= min_rows and len(ids) == len(set(ids)) and not set(ids) & public_ids
    for r in rows:
        assert float(r["measured_iteration_s"]) > 0 and r["note"].strip(), r["id"]
        model_ranks = int(r["tp"]) * int(r["pp"]) * int(r["cp"] or 1)
        dp = int(r["num_gpus"]) // model_ranks
        assert dp * model_ranks == int(r["num_gpus"]), r["id"]
        mbs = int(r["micro_batch_size"] or 1)
        assert int(r["global_batch_size"]) % (dp * mbs) == 0, r["id"]
    return rows


def check_generator_writes(script: Path, path: Path) -> str:
    """A benchmarks/ generator script, run as a command, prints the file ``path`` as it is
    committed; returns what it printed."""
    import sys

    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         check=True).stdout
    assert out == path.read_text()
    return out


def check_script_check_mode(script: Path, mirror: Path, what: str) -> None:
    """A benchmarks/ script's ``--check`` (its typed-in table re-read from the repository mirror
    it cites) exits 0; skipped where the mirror git dir ``mirror`` (its ``HEAD``) is missing."""
    import sys

    if not (mirror / "HEAD").exists():
        pytest.skip(f"no {what} mirror")
    res = subprocess.run([sys.executable, str(script), "--check"], check=False,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def validated(path: Path) -> tuple[str, tuple]:
    """``validate_file(path)`` once per session for a file the tests only read (a pure function
    of the file and the code; ``_once_per_session``: under xdist once for all workers): a
    file's generic checks (tests/test_training_files.py) and its own module's bounds share one
    validation wherever each runs. The rows come back as a tuple; a test must not change them."""
    import hashlib

    from trainsim.validate import validate_file

    path = Path(path).resolve()
    st = path.stat()
    key = hashlib.sha1(f"{path}:{st.st_mtime_ns}:{st.st_size}".encode()).hexdigest()[:16]

    def run() -> tuple[str, tuple]:
        kind, res = validate_file(path)
        return kind, tuple(res)
    return _once_per_session(f"validated-{path.stem}-{key}", run)


def check_validates_with_no_failed_row(path: Path) -> None:
    """Every row of a training file gets a finite positive prediction of its time and of its
    memory, with no error."""
    import math

    from trainsim.validate import summarize

    _, res = validated(path)
    s = summarize(res)
    assert s["failed"] == 0 and s["n"] == len(training_rows(path))
    assert all(r.error is None for r in res), {r.id: r.error for r in res if r.error}
    assert all(r.predicted is not None and math.isfinite(r.predicted) and r.predicted > 0
               for r in res)
    assert all(r.predicted_memory_gib and r.predicted_memory_gib > 0 for r in res)


def check_fp8_faster_than_bf16(path: Path, after: str = "") -> dict[str, float]:
    """The fp8 rows of a training file (ids holding ``-fp8-`` followed by ``after``) are
    predicted faster, relative to their measured time, than its bf16 rows (``-bf16-`` + ``after``)
    on average: the 8-bit step's gain is priced above what the runs got. Returns each row's
    predicted / measured - 1."""
    _, res = validated(path)
    errs = {r.id: r.predicted / r.measured - 1 for r in res}
    bf16 = [e for k, e in errs.items() if f"-bf16-{after}" in k]
    fp8 = [e for k, e in errs.items() if f"-fp8-{after}" in k]
    assert bf16 and fp8 and sum(fp8) / len(fp8) < sum(bf16) / len(bf16), (after, bf16, fp8)
    return errs


# ---------------------------------------------------------------------------- the public file

SHARED_VALIDATION = Path(__file__).resolve().parents[2] / "shared" / "validation"
PUBLIC_TRAINING = (SHARED_VALIDATION / "training_public.csv"
                   if (SHARED_VALIDATION / "training_public.csv").exists() else
                   Path(__file__).resolve().parents[1] / "src" / "trainsim" / "data" /
                   "validation" / "training_public.csv")
"""The public training file as the team shares it, else the copy bundled with the package
(the same bytes: ``test_validate.test_bundled_copies_match_the_shared_files``)."""

_RUNS: dict[str, object] = {}
PUBLIC_SHARED_DIR: list[Path] = []
"""Where ``_once_per_session`` leaves its runs for the session's other xdist workers
(conftest's ``_public_run_shared_between_workers`` sets it: the directory above every worker's
basetemp, one per session, so a run is never read by a later session)."""


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive ``flock`` on ``path`` while the block runs (POSIX; elsewhere no lock, and
    a worker that finds no pickle validates the file itself, as each did before)."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _once_per_session(name: str, run):
    """``run()``, once per session: kept in this process, and under xdist the first worker to
    ask runs it (holding a lock) and pickles it into ``PUBLIC_SHARED_DIR`` as ``name``.pickle;
    a worker asking later reads that pickle (floats round-trip every bit) instead."""
    import pickle

    if name not in _RUNS:
        shared = PUBLIC_SHARED_DIR[0] / f"{name}.pickle" if PUBLIC_SHARED_DIR else None
        with _locked(shared.with_suffix(".lock")) if shared else contextlib.nullcontext():
            if shared is not None and shared.exists():
                _RUNS[name] = pickle.loads(shared.read_bytes())
            else:
                _RUNS[name] = run()
                if shared is not None:
                    part = shared.with_suffix(".part")
                    part.write_bytes(pickle.dumps(_RUNS[name]))
                    part.replace(shared)
    return _RUNS[name]


def public_training_validated() -> tuple[tuple, tuple[str, ...]]:
    """(results, trainsim warnings said) of ``validate_file(PUBLIC_TRAINING, workers=2)``, as
    the CLI's JSON collects them (``said_warnings``), once per session
    (``_once_per_session``): the scoreboard test and the determinism test read the same ~17
    CPU-seconds of rows. A test must not change them."""
    def run():
        from trainsim.search.cli_inputs import said_warnings
        from trainsim.validate import validate_file

        with said_warnings(say=False) as said:
            _, res = validate_file(PUBLIC_TRAINING, workers=2)
        return tuple(res), tuple(said)
    return _once_per_session("public_training_validated", run)


KERNELS_PUBLISHED = (SHARED_VALIDATION / "kernels_published.csv"
                     if (SHARED_VALIDATION / "kernels_published.csv").exists() else
                     Path(__file__).resolve().parents[1] / "src" / "trainsim" / "data" /
                     "validation" / "kernels_published.csv")
"""The published kernels file as the team shares it, else the bundled copy (the same bytes:
``test_validate.test_bundled_copies_match_the_shared_files``)."""


def kernels_published_validated(_validate_file=None) -> tuple[str, tuple, tuple]:
    """(kind, results, warnings raised) of ``validate_file(KERNELS_PUBLISHED)`` (one process,
    the bundled kernel databases), once per session (``_once_per_session``): the CLI's bundled
    run, the every-row-priced check and the GEMM budget's check read the same ~3 CPU-seconds
    of rows. The warnings are (message, category, filename, lineno), as ``validate_file``
    raises them again after the rows. A test must not change them. (``_validate_file``: the
    real function, where a stand-in now holds its name, ``validate_file_sharing_kernels``.)"""
    def run():
        import warnings

        from trainsim.validate import validate_file

        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            kind, res = (_validate_file or validate_file)(KERNELS_PUBLISHED)
        return kind, tuple(res), tuple((str(w.message), w.category, w.filename, w.lineno)
                                       for w in seen)
    return _once_per_session("kernels_published_validated", run)


COLLECTIVES_PUBLISHED = (Path(__file__).resolve().parents[1] / "benchmarks" /
                         "collectives_published.csv")


def collectives_published_validated() -> tuple:
    """The results of ``validate_file(COLLECTIVES_PUBLISHED)``, once per process: the six
    checks of test_collectives_published and test_collectives_scale that read the whole file
    read this one run (~0.03 CPU-seconds a run on this host, so no file is shared between
    xdist workers). A test must not change them."""
    if "collectives_published_validated" not in _RUNS:
        from trainsim.validate import validate_file

        _RUNS["collectives_published_validated"] = tuple(validate_file(COLLECTIVES_PUBLISHED)[1])
    return _RUNS["collectives_published_validated"]


def validate_file_sharing_kernels():
    """A stand-in for ``trainsim.validate.validate_file`` (a test sets it with monkeypatch) that
    answers the call ``kernels_published_validated`` made (a path holding the published kernels
    file's bytes, any worker count: the results are the same, ``compute_db`` 'auto', no
    progress callback) with that shared run, its warnings raised again as the function raises
    them; any other call runs the real function."""
    import warnings

    import trainsim.validate as v

    real = v.validate_file
    text = KERNELS_PUBLISHED.read_bytes()

    def validate_file(path, progress=None, workers=1, compute_db="auto"):
        if progress is None and compute_db == "auto" and Path(path).is_file() \
                and Path(path).read_bytes() == text:
            kind, res, said = kernels_published_validated(real)
            for message, category, filename, lineno in said:
                warnings.warn_explicit(message, category, filename, lineno)
            return kind, list(res)
        return real(path, progress=progress, workers=workers, compute_db=compute_db)

    return validate_file
