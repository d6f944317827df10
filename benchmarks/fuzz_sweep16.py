"""Sixteenth input sweep (28th session, fuzz16): round 15's leftovers and new corners, each
checked against an oracle from outside the code under test.

- ``pcie``: every catalog PCIe card (``PCIE_CARDS``, by datasheet; no NVLink switch) at
  1, 2, 8, 10, 11, 16, 64 and 576 GPUs per node, and under ``topology: nvl72``: a node past the
  ten dual-slot cards one server holds (Supermicro SYS-322GB-NR) warned as a hypothetical PCIe
  node, never as an NVLink domain; an NVL72 rack of PCIe cards refused in one line.
- ``trunk``: a Llama config.json whose ``architectures`` is each decoder family's bare trunk
  (the classes of transformers' ``MODEL_MAPPING_NAMES`` of a model type that also has a
  ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`` class, skipped where transformers is absent): refused
  naming the trunk; the same name beside the family's causal-LM class, or in a file with
  ``auto_map`` (remote code, whose classes transformers' naming does not bind): read.
- ``buckets``: the DDP bucket cache after chunks of 1 to 100,000 buckets (a tiny
  ``ddp_bucket_size`` over many routed experts): never more buckets held than its bound, the
  count it keeps equal to what its entries hold, every answer the uncached pass's.
- ``jobs``: a service simulate and sweep job of each catalog GPU at twice its largest node
  built: the result's ``warnings`` hold the warning the CLI prints (a worker's stderr reaches
  no one), the simulate job's JSON the CLI's.
- ``corners``: CLI ``simulate``/``search``/``plan``/``sweep``/``validate`` on extreme sequence
  lengths against context parallelism, ep not dividing the experts (as ``--ep`` or ``--set``),
  vpp not dividing a stage's layers, a zero, one and 2**31 vocabulary, unicode in names and
  keys, 2**31 and 10**12 GPUs, empty, BOM-only, header-only, BOM+CRLF and duplicate-id CSVs
  and layers JSONL files, a config.json with a byte-order mark or CRLF through ``export``:
  exit 0 with finite non-negative numbers, or exit 2 with one
  ``error:`` line naming the field at fault (an ``--ep`` refused as ep), within 60 s.

    python benchmarks/fuzz_sweep16.py [--only pcie,trunk,buckets,jobs,corners]

Prints each failure class with its first inputs and the counts; exit 1 on any failure.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_checks import Case, chosen_cases, only_of, report_timed, surface_class, sweep_parser
from fuzz_sweep6 import run_cases

ROOT = Path(__file__).resolve().parents[1]
VALIDATION = ROOT / "src" / "trainsim" / "data" / "validation"
TMP = Path(tempfile.mkdtemp(prefix="fuzz16-"))
SURFACES = ("pcie", "trunk", "buckets", "jobs", "corners")
TINY = {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4, "vocab_size": 1024}
SERVER_CARDS = 10
"""Most dual-slot PCIe cards one server holds (Supermicro SYS-322GB-NR: 20 PCIe slots, ten
dual-slot cards; The Register, 2024-10-10)."""
PCIE_CARDS = ("a100-pcie-40gb", "a100-pcie-80gb", "h100-nvl-94gb", "h100-pcie-80gb",
              "l40s-pcie-48gb", "rtx-pro-6000-blackwell")
"""The catalog's PCIe cards (each datasheet's PCIe form factor; no NVLink switch)."""
BASE = """model: {hidden_size: 256, num_layers: 4, num_attention_heads: 4, vocab_size: 1024}
training: {global_batch_size: 16, seq_length: 512}
cluster: {gpu: h100-sxm-80gb, num_gpus: 8, gpus_per_node: 8, compute_db: null}
"""


def _refused(thunk: Callable[[], object], words: str) -> str | None:
    from trainsim.errors import TrainsimError
    try:
        thunk()
    except TrainsimError as exc:
        return None if words in str(exc) else f"refused without {words!r}: {str(exc)[:80]}"
    return "accepted"


def _must_run(thunk: Callable[[], str | None]) -> Callable[[], str | None]:
    """``thunk``, where a refusal is a failure (run_cases counts one as handled)."""
    def run() -> str | None:
        from trainsim.errors import TrainsimError
        try:
            return thunk()
        except TrainsimError as exc:
            return f"refused: {str(exc)[:80]}"
    return run


# ------------------------------------------------------------------------------ pcie

def pcie_cases() -> Iterator[Case]:
    import trainsim
    from trainsim import catalog

    said = {g for g in catalog.gpu_aliases() if getattr(catalog.gpu(g), "pcie_only", False)}
    if said != set(PCIE_CARDS):
        yield "pcie cards", lambda: f"pcie_only on {sorted(said)}, not the PCIe cards"
    for gpu in PCIE_CARDS:
        for per in (1, 2, 8, SERVER_CARDS, SERVER_CARDS + 1, 16, 64, 576):
            def run(gpu=gpu, per=per) -> str | None:
                cfg = {"model": TINY, "training": {"global_batch_size": per, "seq_length": 512},
                       "cluster": {"gpu": gpu, "num_gpus": per, "gpus_per_node": per,
                                   "compute_db": None}}
                with warnings.catch_warnings(record=True) as said:
                    warnings.simplefilter("always")
                    trainsim.run_config_from_dict(cfg)
                text = [str(w.message) for w in said]
                if any("NVLink domain" in t for t in text):
                    return "warned as an NVLink domain"
                warned = any("PCIe node" in t for t in text)
                if (per > SERVER_CARDS) != warned:
                    return "no warning past a PCIe server" if per > SERVER_CARDS else "warned"
                return None
            yield f"pcie {gpu} x{per}", _must_run(run)
        cfg = {"model": TINY, "training": {"global_batch_size": 72, "seq_length": 512},
               "cluster": {"gpu": gpu, "num_gpus": 72, "topology": "nvl72",
                           "compute_db": None}}
        yield f"pcie {gpu} nvl72", lambda c=cfg: _refused(
            lambda: trainsim.run_config_from_dict(c), "PCIe card")


# ------------------------------------------------------------------------------ trunk

def _decoder_trunks() -> dict[str, str]:
    """Each decoder family's bare trunk class -> its causal-LM class (transformers' mappings)."""
    from transformers.models.auto import modeling_auto as auto

    from trainsim.catalog import hf_kinds

    def first(v: str | tuple[str, ...]) -> str:
        return v if isinstance(v, str) else v[0]
    causal = auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    return {first(v): first(causal[k]) for k, v in auto.MODEL_MAPPING_NAMES.items()
            if k in causal and k not in hf_kinds.NOT_DECODERS and first(v).endswith("Model")}


def trunk_cases() -> Iterator[Case]:
    try:
        trunks = _decoder_trunks()
    except ImportError:
        return
    from trainsim import catalog

    llama = {"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 4,
             "num_attention_heads": 8, "vocab_size": 32000, "intermediate_size": 1376}
    for trunk, lm in sorted(trunks.items()):
        def write(extra: dict, trunk=trunk) -> Path:
            path = TMP / f"{trunk}-{len(extra)}.json"
            path.write_text(json.dumps({**llama, **extra}))
            return path

        def alone(trunk=trunk) -> str | None:
            path = write({"architectures": [trunk]})
            return _refused(lambda: catalog.model_from_hf_config(path), "bare transformer trunk")

        def beside(trunk=trunk, lm=lm) -> str | None:
            catalog.model_from_hf_config(write({"architectures": [trunk, lm]}))
            catalog.model_from_hf_config(write({"architectures": [trunk],
                                                "auto_map": {"AutoModel": "m.M"}}))
            return None
        yield f"trunk alone {trunk}", alone
        yield f"trunk read {trunk}", _must_run(beside)


# ------------------------------------------------------------------------------ buckets

def bucket_cases() -> Iterator[Case]:
    import trainsim
    from trainsim.workload import ddp_buckets as d

    def cfg(layers: int, experts: int, size: int) -> trainsim.RunConfig:
        return trainsim.run_config_from_dict({
            "model": {**TINY, "num_layers": layers, "num_experts": experts,
                      "moe_router_topk": 2, "moe_ffn_hidden_size": 64},
            "parallel": {"ddp_bucket_size": size},
            "training": {"global_batch_size": 8, "seq_length": 512},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "compute_db": None}})

    def run(layers: int, experts: int, size: int) -> str | None:
        c = cfg(layers, experts, size)
        want = d._bucketed(c, range(layers), True, True)
        got = d._buckets(c, range(layers), True, True)
        if (list(got[0]), got[1]) != (list(want[0]), want[1]):
            return "answer differs from the pass"
        held = sum(len(v[1]) for v in d._BUCKETS.values())
        if held > d._BUCKETS_HELD_MOST:
            return f"holds {held} buckets"
        return None if held == d._HELD[0] else f"counts {d._HELD[0]}, holds {held}"
    for layers, experts, size in ((4, 8, 10**9), (64, 64, 1), (256, 128, 1), (256, 512, 1),
                                  (8, 8, 1), (64, 64, 1)):
        yield f"buckets {layers}x{experts} size {size}", \
            _must_run(lambda a=layers, b=experts, s=size: run(a, b, s))


# ------------------------------------------------------------------------------ jobs

def job_cases() -> Iterator[Case]:
    """Service simulate and sweep jobs of each catalog GPU at twice the largest node built with
    it: the result's ``warnings`` must hold the CLI's warning (the worker's stderr reaches no
    one), and equal the CLI's JSON."""
    import yaml

    from trainsim import catalog
    from trainsim.service import Settings, jobs
    settings = Settings(db_url=f"sqlite:///{TMP / 'jobs.db'}", workers=0, checkers=0)
    for gpu in sorted(catalog.gpu_aliases()):
        built = catalog.gpu(gpu).largest_nvlink_domain
        if built is None:
            continue
        per = 2 * built
        config = yaml.safe_load(BASE)
        config["cluster"].update(gpu=gpu, num_gpus=per, gpus_per_node=per)
        config["training"].update(global_batch_size=per, dtype="fp16", attention="unfused")

        def simulate(config=config, per=per) -> str | None:
            got = json.loads(jobs.run("simulate", config, {}, settings).result)
            if not any(f"gpus_per_node={per} exceeds" in w for w in got.get("warnings", ())):
                return "job said no warning"
            path = TMP / "job.yaml"
            path.write_text(yaml.safe_dump(config))
            from click.testing import CliRunner

            from trainsim.cli import main
            printed = CliRunner().invoke(main, ["simulate", str(path), "--format", "json"])
            return None if json.loads(printed.stdout) == got else "job differs from the CLI"

        def sweep(config=config, per=per) -> str | None:
            cfg = json.loads(json.dumps(config))
            cfg["cluster"].pop("gpus_per_node")
            got = json.loads(jobs.run("sweep", cfg, {"vary": [f"cluster.gpus_per_node={per}"]},
                                      settings).result)
            return None if any(f"gpus_per_node={per} exceeds" in w for w in got["warnings"]) \
                else "sweep job said no warning"
        yield f"jobs simulate {gpu} x{per}", _must_run(simulate)
        yield f"jobs sweep {gpu} x{per}", _must_run(sweep)


# ------------------------------------------------------------------------------ corners

def _cli(*args: str, runs: bool = False) -> str | None:
    """One CLI run in-process: None when it exits 0 with finite non-negative JSON numbers (where
    JSON was asked for) or (not ``runs``) exits 2 with one ``error:`` line; else what went
    wrong."""
    from click.testing import CliRunner

    from trainsim.cli import main
    start = time.perf_counter()
    res = CliRunner().invoke(main, list(args), env={"TRAINSIM_DEBUG": "1",
                                                    "TRAINSIM_MAX_TASKS": None})
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        return f"raised {type(res.exception).__name__}: {str(res.exception)[:60]}"
    if time.perf_counter() - start > 60:
        return "over 60 s"
    if "Traceback" in res.output:
        return "traceback"
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error")]
    if res.exit_code == 2 and runs:
        return f"refused: {errors[0][:80] if errors else res.output[-80:]}"
    if res.exit_code == 2:
        return None if len(errors) == 1 else f"{len(errors)} error lines"
    if res.exit_code != 0:
        return f"exit {res.exit_code}"
    if "json" in args:
        bad: list[str] = []

        def walk(o: object, at: str) -> None:
            if isinstance(o, dict):
                for k, v in o.items():
                    walk(v, f"{at}.{k}")
            elif isinstance(o, list):
                for v in o:
                    walk(v, at)
            elif isinstance(o, float) and not math.isfinite(o) or \
                    isinstance(o, (int, float)) and not isinstance(o, bool) and o < 0 \
                    and "error" not in at:
                bad.append(f"{at}={o}")
        walk(json.loads(res.stdout), "")
        return f"number {bad[0]}" if bad else None
    return None


def _said(words: str, *args: str) -> str | None:
    """``_cli``, and the run refused with ``words`` in its error line."""
    from click.testing import CliRunner

    from trainsim.cli import main
    bad = _cli(*args)
    if bad:
        return bad
    res = CliRunner().invoke(main, list(args), env={"TRAINSIM_MAX_TASKS": None})
    if res.exit_code != 2:
        return "accepted"
    line = next(ln for ln in res.stderr.splitlines() if ln.startswith("error"))
    return None if words in line else f"refused without {words!r}: {line[:90]}"


def _file(name: str, text: str) -> str:
    path = TMP / name
    path.write_text(text, encoding="utf-8", newline="")
    return str(path)


def corner_cases() -> Iterator[Case]:
    conf = _file("c.yaml", BASE)
    sim = ("simulate", conf, "--format", "json")

    def s(*pairs: str) -> list[str]:
        return [a for p in pairs for a in ("--set", p)]
    for seq in (2**20, 2**31, 10**12):
        for cp in (1, 2, 8):
            yield f"corners seq {seq} cp {cp}", lambda q=seq, c=cp: _cli(*sim, *s(
                f"training.seq_length={q}", f"parallel.cp={c}", "training.global_batch_size=8",
                f"model.max_position_embeddings={q}"), runs=True)
    for seq, cp in ((1, 2), (6, 4), (513, 2)):
        yield f"corners seq {seq} cp {cp} odd", lambda q=seq, c=cp: _said(
            "seq_length", *sim, *s(f"training.seq_length={q}", f"parallel.cp={c}"))
    moe = ("model.moe_router_topk=2", "model.moe_ffn_hidden_size=256")
    for experts, ep in ((6, 4), (8, 3), (4, 8)):
        yield f"corners simulate experts {experts} ep {ep}", lambda e=experts, p=ep: _said(
            "num_experts", *sim, *s(f"model.num_experts={e}", f"parallel.ep={p}", *moe))
    srch = ("search", "mixtral-8x7b", "--gpus", "64", "--seq", "4096", "--global-batch", "64",
            "--tp", "2", "--pp", "4")
    for eps in ("3,6", "16", "3"):
        yield f"corners search --ep {eps}", lambda e=eps: _said("routed experts", *srch,
                                                                 "--ep", e)
    yield "corners search --set ep", lambda: _said("routed experts", *srch[:8],
                                                   "--set", "parallel.ep=3")
    yield "corners plan --ep", lambda: _said("routed experts", "plan", "mixtral-8x7b",
                                             "--tokens", "1e9", "--days", "1", "--ep", "5")
    for layers, pp, vpp in ((4, 2, 3), (4, 4, 2), (4, 2, 8), (5, 2, 2)):
        yield f"corners vpp {layers}/{pp}/{vpp}", lambda a=layers, b=pp, c=vpp: _said(
            "pp", *sim, *s(f"model.num_layers={a}", f"parallel.pp={b}", f"parallel.vpp={c}"))
    for vocab in (0, -1):
        yield f"corners vocab {vocab}", lambda v=vocab: _said("vocab_size", *sim,
                                                             *s(f"model.vocab_size={v}"))
    for vocab in (1, 7, 2**31):
        yield f"corners vocab {vocab} runs", lambda v=vocab: _cli(
            *sim, *s(f"model.vocab_size={v}"), runs=True)
    yield "corners sweep vocab", lambda: _cli("sweep", conf, "--vary",
                                              "model.vocab_size=0,1,1000", "--format", "json")
    for name in ("模型🚀", "naïve-ß", "Ωmega"):
        yield f"corners name {name}", lambda n=name: _cli(*sim, *s(f"model.name={n}"), runs=True)
    for text, words in (("model.name=\u202eevil", "U+202E"), ("mödel.name=x", "mödel"),
                        ("cluster.gpu=h100\u2010sxm\u201080gb", "h100-sxm-80gb")):
        yield f"corners unicode {text!a}", lambda t=text, w=words: _said(w, *sim, *s(t))
    for n in (2**20, 2**31, 10**12):
        yield f"corners gpus {n}", lambda g=n: _cli(*sim, *s(
            f"cluster.num_gpus={g}", f"training.global_batch_size={g}"), runs=True)
    for n in (2**31, 10**12):
        yield f"corners search gpus {n}", lambda g=n: _cli(
            "search", "llama2-7b", "--gpus", str(g), "--global-batch", "1024", "--seq", "2048")
    yield from _file_corners()


def _file_corners() -> Iterator[Case]:
    train = (VALIDATION / "training_public.csv").read_text(encoding="utf-8").splitlines()
    layers = (VALIDATION / "layers_h100_measured.jsonl").read_text(encoding="utf-8").splitlines()
    empty = {"empty.csv": "", "blank.csv": "\n\n", "bom.csv": "\ufeff", "crlf.csv": "\r\n",
             "header.csv": train[0] + "\r\n", "empty.jsonl": "", "bom.jsonl": "\ufeff\n"}
    for name, text in empty.items():
        yield f"corners file {name}", lambda n=name, t=text: _said(
            "layer record" if n.endswith(".jsonl") else "training file" if "header" not in n
            else "no rows", "validate", _file(n, t))
    hf = json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"],
                     **{k: v for k, v in TINY.items() if k != "num_layers"},
                     "num_hidden_layers": 4, "intermediate_size": 688})
    for name, text in (("plain", hf), ("bom", "\ufeff" + hf), ("crlf", hf.replace(",", ",\r\n"))):
        yield f"corners export config.json {name}", lambda n=name, t=text: _cli(
            "export", _file(f"{n}-config.json", t), "--simai", str(TMP / f"{n}.simai"),
            runs=True)
    for name, text, n in (
            ("bomcrlf.csv", "\ufeff" + "\r\n".join(train[:4]) + "\r\n", 3),
            ("dup.csv", "\n".join(train[:3] + [train[2]]) + "\n", 3),
            ("bom.jsonl", "\ufeff" + "\r\n".join(layers[:2]) + "\r\n", 2),
            ("lead.jsonl", "\n\n" + "\n".join(layers[:2]) + "\n", 2),
            ("dup.jsonl", "\n".join(layers[:2] + [layers[1]]) + "\n", 3)):
        def run(name=name, text=text, n=n) -> str | None:
            from trainsim.errors import TrainsimWarning
            from trainsim.validate import validate_file
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                _kind, rows = validate_file(_file("rows-" + name, text), compute_db=None)
            if len(rows) != n or any(r.error for r in rows):
                return f"{len(rows)} rows predicted, not {n}"
            twice = any("both" in str(w.message) for w in said
                        if issubclass(w.category, TrainsimWarning))
            return None if twice == name.startswith("dup") else \
                ("no duplicate warning" if not twice else "duplicate warned")
        yield f"corners rows {name}", _must_run(run)


def cases(only: set[str]) -> Iterator[Case]:
    makers = {"pcie": pcie_cases, "trunk": trunk_cases, "buckets": bucket_cases,
              "jobs": job_cases, "corners": corner_cases}
    yield from chosen_cases(makers, only)


def main(argv: list[str] | None = None) -> int:
    args = sweep_parser(__doc__, SURFACES).parse_args(argv)
    start = time.perf_counter()
    failures, counts = run_cases(cases(only_of(args)), surface_class)
    return report_timed(failures, counts, time.perf_counter() - start)


if __name__ == "__main__":
    sys.exit(main())
