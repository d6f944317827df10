"""What several test modules share: the CLI run in-process, the fuzzers' settings, the tiny
search base, the validator's overlap flags of a row, a one-layer MoE config and a file read from
a framework mirror. Test modules import from here, never from each other."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, settings

import trainsim
from trainsim.catalog import gpu, model
from trainsim.cli import main
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig

# ---------------------------------------------------------------------------- the CLI, fuzzing

FAST = settings(max_examples=25, deadline=timedelta(seconds=20), derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
SLOW = settings(FAST, max_examples=400)

BASE = """model: {hidden_size: 256, num_layers: 4, num_attention_heads: 4, vocab_size: 1024}
training: {global_batch_size: 16, seq_length: 512}
cluster: {gpu: h100-sxm-80gb, num_gpus: 8, gpus_per_node: 8, compute_db: null}
"""
"""A small valid run config file (its text), for the fuzzers to break."""


def cli(*args: str, cwd=None):
    """The CLI in-process with TRAINSIM_DEBUG=1: anything but a TrainsimError or a click usage
    error escapes as the exception it is (and fails the test with its traceback)."""
    old = os.getcwd()
    if cwd:
        os.chdir(cwd)
    try:
        # a TRAINSIM_MAX_TASKS in the caller's environment must not bound the tests' runs
        result = CliRunner().invoke(main, list(args),
                                    env={"TRAINSIM_DEBUG": "1", "TRAINSIM_MAX_TASKS": None})
    finally:
        os.chdir(old)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert "Traceback" not in result.output
    return result


def one_error_line(result, warnings: bool = True) -> str:
    """The one ``error:`` line a refused input ends with (exit code 2); ``warnings=False``: and
    nothing else on stderr, not even a ``warning:`` line."""
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.stderr.splitlines()
             if ln.strip() and not (warnings and ln.startswith("warning: "))]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr  # click's too
    return lines[-1]


# ---------------------------------------------------------------------------- search

TINY_MODEL = {"name": "tiny", "hidden_size": 1024, "num_layers": 8, "num_attention_heads": 16,
              "num_kv_heads": 4, "vocab_size": 32000, "activation": "swiglu",
              "position_embedding": "rope", "normalization": "rmsnorm",
              "tied_embeddings": False, "add_bias_linear": False}


def make_base(model=TINY_MODEL, gpus=16, batch=32, seq=2048, gpu="h100-sxm-80gb", dtype="bf16",
              **cluster):
    """A search base: ``model`` on ``gpus`` GPUs (8 per node), global batch ``batch``."""
    from trainsim.search import Base

    cfg = trainsim.run_config_from_dict({
        "model": model, "training": {"global_batch_size": gpus, "seq_length": seq, "dtype": dtype},
        "cluster": {"gpu": gpu, "num_gpus": gpus, "gpus_per_node": 8, **cluster}})
    return Base(cfg.model, dataclasses.replace(cfg.training, global_batch_size=batch), cfg.cluster)


# ---------------------------------------------------------------------------- validation rows

def dgx_h100_run(framework, attention=None, name="gemma-2-2b", seq=4096, **model_changes):
    """A one-node DGX H100 run of the preset ``name`` (with ``model_changes``) at batch 8,
    micro-batch 1, sequence ``seq`` on ``framework``, ``attention`` if given."""
    training = {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": seq,
                "framework": framework}
    if attention:
        training["attention"] = attention
    m = ({**dataclasses.asdict(model(name)), **model_changes}
         if model_changes else name)
    return trainsim.run_config_from_dict({"model": m, "training": training,
                                          "cluster": {"node": "dgx-h100", "num_gpus": 8}})


def overlaps(row: dict[str, str], **cells: str) -> tuple[bool, bool, bool, bool]:
    """(grad reduce, param gather, p2p, TP) overlap of ``row`` with ``cells`` changed, as the
    validator reads it."""
    from trainsim.validate.row_settings import training_base

    raw, _ = training_base({**row, **cells})
    p = raw["parallel"]
    return (p["overlap_grad_reduce"], p["overlap_param_gather"], p["overlap_p2p_comm"],
            p["tp_comm_overlap"])


# ---------------------------------------------------------------------------- MoE layers

FP8_SLICE = (4096, 16384, 2048, 4)
"""The fp8 slices of tests/test_fp8_*: hidden, ffn (GeLU), tokens of one sequence, TP."""


def fp8_slice_cfg(recipe: str = "delayed", framework: str | None = "mlperf-nemo",
                  version: str | None = "4.0", gpu_name: str = "h100-sxm-80gb",
                  sp: bool = True, *, gpus: int = 8, pp: int = 1, batch: int = 16,
                  dtype: str = "fp8", cuda_graphs: bool = False) -> RunConfig:
    """One GeLU model of the ``FP8_SLICE`` shape (in ``dtype``, fp8 unless told) on ``gpus``
    GPUs, 8 a node, TP with or without sequence parallelism, ``pp`` pipeline stages, global
    batch ``batch``."""
    h, f, t, tp = FP8_SLICE
    model = ModelConfig(name="m", hidden_size=h, num_layers=8, num_attention_heads=32,
                        ffn_hidden_size=f, activation="gelu", normalization="layernorm",
                        position_embedding="learned", vocab_size=32768)
    training = TrainingConfig(global_batch_size=batch, micro_batch_size=1, seq_length=t,
                              dtype=dtype, fp8_recipe=recipe, framework=framework,
                              framework_version=version, cuda_graphs=cuda_graphs)
    parallel = ParallelConfig(tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp,
                              sequence_parallel=sp)
    cluster = ClusterConfig(gpu=gpu(gpu_name), num_gpus=gpus, gpus_per_node=8)
    return RunConfig(model=model, parallel=parallel, training=training, cluster=cluster)


def moe_layer_cfg(dispatcher: str = "alltoall", ep: int = 16, framework: str | None = None,
                  version: str | None = None, *, experts: int = 64, topk: int = 8,
                  gpus: int = 16, dtype: str = "bf16", **parallel) -> RunConfig:
    """One MoE layer (``experts`` experts, top ``topk``, h 1024) on ``gpus`` H100, expert
    parallel ``ep``; ``parallel``: more ``ParallelConfig`` fields."""
    model = ModelConfig(name="m", hidden_size=1024, num_layers=1, num_attention_heads=8,
                        ffn_hidden_size=512, activation="swiglu", num_experts=experts,
                        moe_router_topk=topk, moe_ffn_hidden_size=512)
    cluster = ClusterConfig(gpu=gpu("h100-sxm-80gb"), num_gpus=gpus,
                            gpus_per_node=min(8, gpus))
    training = TrainingConfig(global_batch_size=gpus, micro_batch_size=1, seq_length=1024,
                              framework=framework, framework_version=version, dtype=dtype)
    return RunConfig(model=model, training=training, cluster=cluster,
                     parallel=ParallelConfig(expert_model_parallel_size=ep,
                                             moe_token_dispatcher_type=dispatcher, **parallel))


@contextlib.contextmanager
def counted_graphs():
    """The task counts of the graphs ``steady_state`` builds inside the block (a list that
    fills as they are built)."""
    import trainsim.steady_state as steady

    built: list[int] = []
    real = steady.build_graph

    def counting(*args, **kw):
        g = real(*args, **kw)
        built.append(len(g.tasks))
        return g

    steady.build_graph = counting
    try:
        yield built
    finally:
        steady.build_graph = real


def moe_layer_ops(cfg: RunConfig) -> tuple[list, list]:
    """(forward, backward) ops of ``cfg``'s MoE block on one rank."""
    from trainsim.workload.layers import backward_of
    from trainsim.workload.moe_block import moe_block
    from trainsim.workload.shard import shard_of

    sh = shard_of(cfg)
    fwd: list = []
    moe_block(fwd, cfg, sh)
    return fwd, backward_of(fwd, sh)


def layer_ops(cfg: RunConfig) -> tuple[dict, list]:
    """(forward ops of ``cfg``'s transformer layer on one rank by name, backward ops)."""
    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.shard import shard_of

    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    return {op.name: op for op in fwd}, backward_of(fwd, sh)


# ---------------------------------------------------------------------------- kernel rows

def published_kernel_rows(keep=lambda row: True) -> list[dict[str, str]]:
    """The rows of the bundled ``kernels_published.csv`` that ``keep`` accepts."""
    import csv

    from trainsim.validate import BUNDLED_DIR

    with open(BUNDLED_DIR / "kernels_published.csv", newline="") as fh:
        return [r for r in csv.DictReader(fh) if keep(r)]


# ---------------------------------------------------------------------------- random configs

def random_config(rng: random.Random) -> dict:
    """A small valid-looking config with a long pipeline steady phase and random switches."""
    pp = rng.choice([1, 2, 2, 4, 4, 8])
    vpp = rng.choice([1, 1, 2, 3]) if pp > 1 else 1
    tp, dp, cp = rng.choice([1, 2, 4]), rng.choice([1, 2, 4]), rng.choice([1, 1, 2])
    heads = 16
    moe = rng.random() < 0.2
    mbs = rng.choice([1, 2])
    micro = pp * rng.randint(20, 32) if vpp > 1 else rng.randint(8 * pp + 16, 12 * pp + 64)
    layers = pp * vpp * rng.randint(1, 3)
    model = {"name": "tiny", "hidden_size": 64 * heads, "num_layers": layers,
             "num_attention_heads": heads, "num_kv_heads": rng.choice([4, 16]),
             "vocab_size": rng.choice([32000, 50257]), "activation": rng.choice(["gelu", "swiglu"]),
             "tied_embeddings": rng.random() < 0.3}
    parallel = {"tp": tp, "pp": pp, "cp": cp, "vpp": vpp if vpp > 1 else None,
                "sequence_parallel": tp > 1 and rng.random() < 0.7,
                "recompute": rng.choice(["none", "selective", "full"]),
                "zero_stage": rng.choice([0, 0, 1, 2, 3]),
                "distributed_optimizer": rng.random() < 0.5,
                "overlap_grad_reduce": rng.random() < 0.6,
                "overlap_param_gather": rng.random() < 0.5,
                "overlap_p2p_comm": rng.random() < 0.5,
                "tp_comm_overlap": rng.random() < 0.3}
    if rng.random() < 0.15:
        parallel["optimizer_post_validation"] = True
    if moe:
        model.update(num_experts=8, moe_router_topk=2, moe_ffn_hidden_size=2048)
        parallel["ep"] = rng.choice([e for e in (1, 2, 4) if (tp * cp * dp) % e == 0])
    gpus = tp * pp * cp * dp
    training = {"global_batch_size": micro * mbs * dp, "micro_batch_size": mbs,
                "seq_length": 1024 * cp, "optimizer": rng.choice(["adam", "adam", "lamb"])}
    cluster = {"gpu": rng.choice(["h100-sxm-80gb", "a100-sxm-80gb"]), "num_gpus": gpus,
               "gpus_per_node": min(8, gpus), "compute_db": None}
    return {"model": model, "parallel": parallel, "training": training, "cluster": cluster}


# ------------------------------------------------------------- the steady-state proofs' inputs
def random_valid_configs(seed: int, n: int, draw=None) -> list:
    """``n`` valid configs from ``draw(rng)`` (``random_config`` unless given) seeded with
    ``seed``, the ones the config check refuses skipped."""
    from trainsim.catalog import run_config_from_dict
    from trainsim.errors import ConfigError

    rng = random.Random(seed)
    out: list = []
    while len(out) < n:
        try:
            out.append(run_config_from_dict((draw or random_config)(rng)))
        except ConfigError:
            continue
    return out


def random_and_public_configs(seed: int, n: int) -> list:
    """``n`` random valid configs (``random_config`` from ``seed``, refused ones skipped), then
    every public training row's untuned config that builds (no kernel database)."""
    from trainsim.errors import ConfigError
    from trainsim.validate import BUNDLED_DIR, read_rows
    from trainsim.validate.training import row_config

    out = random_valid_configs(seed, n)
    for row in read_rows(BUNDLED_DIR / "training_public.csv")[1]:
        try:
            out.append(row_config(row, compute_db=None))
        except (ConfigError, ValueError, KeyError):
            continue
    return out


def state_proof(tl, copy: list[int], n_per: int) -> float | None:
    """``period_of_state_s`` on a run of copies of a period (``copy``: each task's copy, -1 a
    FIXED warm-up, 0-1 the prefix, 2 the period, 3 the tail), each prefix task's ``later``
    ``n_per`` tasks on."""
    from trainsim.engine.periodic import FIXED, period_of_state_s

    part = bytes(0 if c < 2 else 1 if c == 2 else 2 for c in copy)
    bounds = {}
    for stream, queue in tl.queues.items():
        ps = [part[i] for i in queue]
        bounds[stream] = (ps.count(0), ps.count(0) + ps.count(1))
    later = [FIXED if c < 0 else i + n_per if c < 2 else -1 for i, c in enumerate(copy)]
    return period_of_state_s(tl, part, bounds, later.__getitem__)


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


def load_script(path: Path):
    """A benchmarks/ script imported as a module (they are not a package); its folder goes on
    ``sys.path`` so that it can import the scripts beside it."""
    import importlib.util
    import sys

    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def loadable_keys(space, base, gpus: int) -> list:
    """The search space's memory groups on ``gpus`` whose candidate loads as a config (the
    groups the search keeps: a refused one, e.g. HSDP without a sharded replica, is left out)."""
    from trainsim.errors import ConfigError
    from trainsim.search.space import Candidate

    def loads(key) -> bool:
        try:
            Candidate(key).to_config(base)
        except ConfigError:
            return False
        return True
    return [k for k in space.memory_keys(base, gpus) if loads(k)]


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


def hf_config_read(tmp_path: Path, cfg: dict) -> tuple:
    """(model, trainsim warning messages) of ``model_from_hf_config`` on ``cfg`` written as a
    config.json in ``tmp_path``: the robustness rounds' reading check."""
    import json
    import warnings

    from trainsim.catalog.hf_config import model_from_hf_config
    from trainsim.errors import TrainsimWarning

    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = model_from_hf_config(path)
    return model, [str(w.message) for w in caught if issubclass(w.category, TrainsimWarning)]


def pipelined_configs(n: int, schedule: str, micro_batches) -> list:
    """``n`` random configs (:func:`random_config`, seed 50) with a pipeline (pp > 1) under
    ``schedule``, ZeRO 0-2 (the named schedules do not place ZeRO-3's gathers), 1-3 layers a
    stage and ``micro_batches(pp)`` = (fewest, most) micro-batches a replica, drawn evenly."""
    from trainsim import run_config_from_dict
    from trainsim.errors import ConfigError
    rng = random.Random(50)
    out = []
    while len(out) < n:
        raw = random_config(rng)
        par, train = raw["parallel"], raw["training"]
        pp = par["pp"]
        if pp == 1:
            continue
        raw["model"]["num_layers"] = pp * rng.randint(1, 3)
        par.update(pipeline_schedule=schedule, vpp=None, zero_stage=rng.choice([0, 1, 2]))
        dp = raw["cluster"]["num_gpus"] // (par["tp"] * pp * par["cp"])
        train["global_batch_size"] = (rng.randint(*micro_batches(pp))
                                      * train["micro_batch_size"] * dp)
        try:
            out.append(run_config_from_dict(raw))
        except ConfigError:
            continue
    return out


def pp2_dualpipe_configs(n: int, seed: int = 51,
                         micro_batches: tuple[int, int] | None = None) -> list:
    """Random pp-2 DualPipe configs (:func:`random_config`), ZeRO 0-2, 1-3 layers a stage,
    dp 1, 2 or 4; 32 to 88 micro-batches (ss51's draw) or ``micro_batches`` (fewest, most),
    an even count (half a direction)."""
    from trainsim import run_config_from_dict
    from trainsim.errors import ConfigError
    rng, out = random.Random(seed), []
    while len(out) < n:
        raw = random_config(rng)
        par, train, cluster = raw["parallel"], raw["training"], raw["cluster"]
        par["pp"] = 2
        dp = rng.choice([1, 2, 4])
        cluster["num_gpus"] = par["tp"] * 2 * par["cp"] * dp
        cluster["gpus_per_node"] = min(8, cluster["num_gpus"])
        raw["model"]["num_layers"] = 2 * rng.randint(1, 3)
        par.update(pipeline_schedule="dualpipe", vpp=None, zero_stage=rng.choice([0, 1, 2]))
        if "ep" in par and (par["tp"] * par["cp"] * dp) % par["ep"]:
            continue
        micro = rng.randint(*(micro_batches or (8 * 2 + 16, 12 * 2 + 64)))
        train["global_batch_size"] = (micro + micro % 2) * train["micro_batch_size"] * dp
        try:
            out.append(run_config_from_dict(raw))
        except ConfigError:
            continue
    return out


def shortcut_methods(configs) -> dict[str, int]:
    """Each config simulated in full (a timeline asked for: every micro-batch) and by the
    shortcut, the two held equal (:func:`assert_same_simulation`); how many took each method."""
    from collections import Counter

    from trainsim import simulate
    methods: Counter = Counter()
    for cfg in configs:
        full = simulate(cfg, keep_timeline=True)
        fast = simulate(cfg)
        methods[fast.simulation["method"]] += 1
        assert_same_simulation(fast, full)
    return methods


def assert_same_simulation(fast, full) -> None:
    """A shortcut's Result equals the full simulation's within 1e-9 relative (issue 21 item 1):
    iteration time, every breakdown entry, exposed communication and the critical stage."""
    import pytest

    scale = 1e-9 * full.iteration_time_s
    assert fast.iteration_time_s == pytest.approx(full.iteration_time_s, rel=1e-9, abs=0)
    for key, value in full.breakdown.items():
        assert fast.breakdown[key] == pytest.approx(value, rel=1e-9, abs=scale), key
    assert fast.exposed_comm == pytest.approx(full.exposed_comm, rel=1e-9, abs=scale)
    assert fast.critical_stage == full.critical_stage
