"""Fourteenth input sweep (27th session, fuzz14): what the thirteen earlier sweeps left, each
surface checked against an oracle that does not come from the code under test.

- ``columns``: every column a training, kernel or collective file reads (the bundled public
  files' first rows, and the training row with the most cells filled), renamed as a person
  misspells it: a letter dropped, doubled or two swapped, '-' or ' ' for '_', a plural 's' added
  or dropped. The file must be refused in one line, or (a name under 4 characters, where a
  misspelling is as likely another word) predict every row as the file spelt right does; a
  column renamed as the format allows (upper case, spaces around) must predict the same; an
  unrelated extra column (a link, a comment) must change nothing. fuzz_rows / fuzz_fields
  broke cells and dropped required columns, never misspelt an optional one.
- ``cells``: a switch cell of each kind spelt with every switch word (``false``, ``0``, ``off``,
  ``no``, and ``yes``/``on``/``1``/``true``): read as the word means or refused, never as its
  opposite; a collective's ``comparable`` (only ``no`` excluded a row) and ``unit`` (only
  ``per_nic`` / ``per-nic`` read) included; number spellings (``1e3``, ``1_000``, ``+8``,
  ``8.0``, surrounding no-break spaces) in count cells: the prediction of the plain number, or
  refused.
- ``spellings``: each whole-number cell of drawn rows (a training row's ZeRO stage 0 stated
  where it is empty too) respelt ``8.0``, ``+8``, ``8e0``: the plain cell's prediction, or the
  row refused; never another number.
- ``layers``: the layers JSONL with a shape key spelt otherwise (``kv_heads``, ``head_dim``,
  ``num_experts``; its value changed so that an unread key shows) or a ``mode`` spelt
  otherwise (``Compile``, ``torch.compile``): the record refused, or the README spelling's
  prediction.
- ``service``: validate jobs as the service checks and runs them: every bundled file (by name
  and all of them), uploads of each kind including a layers record (accepted and run), an
  upload with a misspelt optional column (refused as ``options.csv`` naming the column).
- ``header``: BOM, CRLF, CR-only line ends, upper-case and space-padded header names, an
  empty header name, a zero-width space in a name, a column given twice: the same predictions
  or one line.
- ``extreme``: valid but extreme runs (1 layer, vocabulary 1, sequence 1, one GPU, 2^20 GPUs,
  2^20 micro-batches, 1e5 layers, hidden 2^22): a finite, sane result or one line, within the
  deadline.
- ``conflict``: parallel settings each valid alone but not together (tp not dividing the
  heads, ep the experts, cp an odd sequence, vpp the stage's layers, pp more than the layers,
  sequence parallelism on a sequence tp does not divide, vocabulary smaller than tp): one line
  naming the fields at odds.
- ``mono``: drawn catalog model x GPU x tp x pp x recompute x dtype: more layers, a longer
  sequence or a larger global batch never make an iteration faster; more layers or a longer
  sequence never need less memory.
- ``workers``: ``validate --workers 1`` and ``--workers 3`` of a file holding good rows, bad
  cells, an unknown GPU and a repeated row: byte-identical JSON.

    python benchmarks/fuzz_sweep14.py [--seed 0] [--n 40] [--only columns,cells,spellings,...]

Prints each failure class with its first inputs and the counts; exit 1 on any failure.
"""

from __future__ import annotations

import copy
import csv
import io
import os
import random
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_checks import (
    Case,
    chosen_cases,
    only_of,
    report_timed,
    sane_result,
    surface_class,
    sweep_parser,
)
from fuzz_sweep6 import run_cases

ROOT = Path(__file__).resolve().parents[1]
VALIDATION = ROOT / "src" / "trainsim" / "data" / "validation"
TMP = Path(tempfile.mkdtemp(prefix="fuzz14-"))
SRC = Path(__import__("trainsim").__file__).resolve().parents[1]
FILES = {"training": "training_public.csv", "kernels": "kernels_published.csv",
         "collectives": "collectives_public.csv"}


# ------------------------------------------------------------------------------ files

def _read(name: str) -> tuple[list[str], list[list[str]]]:
    records = list(csv.reader(io.StringIO((VALIDATION / name).read_text())))
    return records[0], records[1:]


def _render(head: list[str], rows: list[list[str]], end: str = "\n") -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=end)
    writer.writerow(head)
    writer.writerows(rows)
    return out.getvalue()


def _base_rows(kind: str) -> tuple[list[str], list[list[str]]]:
    """The file's first row and, for training, the row with the most cells filled among the
    first 60 (its optional columns are the ones a misspelling would lose)."""
    head, rows = _read(FILES[kind])
    picked = [rows[0]]
    if kind == "training":
        picked.append(max(rows[:60], key=lambda r: sum(bool(c.strip()) for c in r)))
    elif kind == "kernels":
        picked += [next(r for r in rows if r[head.index("kind")] == "attention_fwd")]
    return head, picked


def _predictions(text: str, name: str = "f.csv") -> list[tuple]:
    """Each row's (id, prediction, error) of ``text`` validated; a TrainsimError for a file
    refused as a whole."""
    from trainsim.validate import validate_file
    path = TMP / name
    path.write_text(text, encoding="utf-8", newline="")
    _, results = validate_file(path, compute_db=None)
    return [(r.id, r.predicted, r.error, r.extra.get("excluded") is not None) for r in results]


def _differ(got: list[tuple], base: list[tuple]) -> bool:
    """A row predicted to another number, or a row's error gone (a row now refused with its
    reason is not silent)."""
    return any((g[1] is not None and g[1:] != b[1:]) or (b[2] and not g[2])
               for g, b in zip(got, base, strict=True))


def _misspellings(name: str) -> dict[str, str]:
    out = {}
    if len(name) >= 4:
        out["drop"] = name[:-1]
        mid = len(name) // 2
        if name[mid] != name[mid + 1]:
            out["swap"] = name[:mid] + name[mid + 1] + name[mid] + name[mid + 2:]
    out["double"] = name + name[-1]
    if "_" in name:
        out["dash"] = name.replace("_", "-")
        out["space"] = name.replace("_", " ")
    out["plural"] = name[:-1] if name.endswith("s") else name + "s"
    return {k: v for k, v in out.items() if v != name}


DISPLAY_ONLY = {"training": {"source", "note"}, "collectives": {"source"},
                "kernels": {"source"}}
"""Columns of the bundled files that no prediction reads (shared validation/README.md); every
other column of their headers is read (a kernel's and a collective's note too)."""


def column_cases() -> Iterator[Case]:
    from trainsim.errors import TrainsimError

    def renamed(kind: str, col: str, new: str, same: bool) -> str | None:
        head, rows = _base_rows(kind)
        base = _predictions(_render(head, rows))
        try:
            got = _predictions(_render([new if c == col else c for c in head], rows))
        except TrainsimError as exc:  # a refusal: fine (one line) unless it should read it
            if same:
                return f"a spelling the format allows refused: {str(exc)[:90]!r}"
            raise
        if _differ(got, base):
            return "silently misread: predictions differ from the file spelt right"
        if not same and len(col) >= 4 and col not in DISPLAY_ONLY[kind]:
            return f"misspelt column left unread: {new!r} for {col!r}"
        return None

    def extra(kind: str, name: str) -> str | None:
        head, rows = _base_rows(kind)
        base = _predictions(_render(head, rows))
        got = _predictions(_render([*head, name], [[*r, "x"] for r in rows]))
        return None if got == base else f"an unrelated column {name!r} changed a prediction"

    for kind in FILES:
        head, _ = _base_rows(kind)
        for col in head:
            for how, new in _misspellings(col).items():
                if new in head:
                    continue  # another real column (tp -> tps is not; num_gpus -> ... may be)
                yield f"columns {kind} {col} {how}", lambda a=(kind, col, new, False): renamed(*a)
            for how, new in {"upper": col.upper(), "padded": f" {col} "}.items():
                yield f"columns {kind} {col} {how}", lambda a=(kind, col, new, True): renamed(*a)
        for name in ("url", "comment", "extra", "added", "x"):
            yield f"columns {kind} extra {name}", lambda a=(kind, name): extra(*a)


# ------------------------------------------------------------------------------ cells

SWITCH_WORDS = {"false": False, "0": False, "off": False, "no": False, "No": False,
                "true": True, "1": True, "on": True, "yes": True, "YES": True, "1.0": True}
NUMBERS = {"1e3-like": lambda v: f"{v / 10**(len(str(v)) - 1)}e{len(str(v)) - 1}",
           "plus": lambda v: f"+{v}", "float": lambda v: f"{v}.0",
           "nbsp": lambda v: f"\u00a0{v}\u00a0", "underscore": lambda v: f"{v // 10}_{v % 10}"
           if v >= 10 else str(v)}


def _one_row(kind: str, row: int, col: str, value: str) -> str:
    head, rows = _read(FILES[kind])
    r = dict(zip(head, rows[row]))
    r[col] = value
    cols = head if col in head else [*head, col]
    return _render(cols, [[r.get(c, "") for c in cols]])


def cell_cases() -> Iterator[Case]:
    def switch(kind: str, col: str, word: str, meant: bool) -> str | None:
        got = _predictions(_one_row(kind, 0, col, word))  # a refusal: one line (outcome)
        ref = _predictions(_one_row(kind, 0, col, SPELLED[(col, meant)]))
        if got[0][2] and not ref[0][2]:
            return None  # refused on the row (a word the column does not take)
        return None if got == ref else f"silently misread: {col}={word!r} not read as {meant}"

    SPELLED = {("comparable", True): "yes", ("comparable", False): "no",
               ("sequence_parallel", True): "1", ("sequence_parallel", False): "0",
               ("distributed_optimizer", True): "1", ("distributed_optimizer", False): "0",
               ("causal", True): "1", ("causal", False): "0"}
    columns = {"collectives": ("comparable",),
               "training": ("sequence_parallel", "distributed_optimizer"),
               "kernels": ()}
    for kind, cols in columns.items():
        for col in cols:
            for word, meant in SWITCH_WORDS.items():
                yield f"cells {kind} {col}={word}", lambda a=(kind, col, word, meant): switch(*a)

    def unit(word: str, per_nic: bool | None) -> str | None:
        head, rows = _read(FILES["collectives"])
        multi = next(i for i, r in enumerate(rows) if int(r[head.index("num_gpus")]) >
                     int(r[head.index("gpus_per_node")]))
        got = _predictions(_one_row("collectives", multi, "unit", word))
        if per_nic is None:
            return None if got[0][2] else f"unknown unit read as the bus bandwidth: {word!r}"
        ref = _predictions(_one_row("collectives", multi, "unit", "per_nic" if per_nic else ""))
        return None if got == ref else f"silently misread: unit={word!r}"

    for word, per_nic in {"per_nic": True, "per NIC": True, "Per-NIC": True, "": False,
                          "per_gpu": None, "GB/s": None, "nic": None}.items():
        yield f"cells collectives unit={word!r}", lambda a=(word, per_nic): unit(*a)

    def number(kind: str, col: str, how: str) -> str | None:
        head, rows = _read(FILES[kind])
        plain = rows[0][head.index(col)]
        if not plain.isdigit():
            return None
        got = _predictions(_one_row(kind, 0, col, NUMBERS[how](int(plain))))
        if got[0][2]:
            return None  # refused on the row, as a count must be a plain number
        ref = _predictions(_one_row(kind, 0, col, plain))
        return None if got == ref else f"silently misread: {col} written {how}"

    for kind, cols in {"training": ("num_gpus", "global_batch_size", "seq_length"),
                       "collectives": ("num_gpus", "message_bytes"),
                       "kernels": ("m", "n", "k")}.items():
        for col in cols:
            for how in NUMBERS:
                yield f"cells {kind} {col} {how}", lambda a=(kind, col, how): number(*a)


# ------------------------------------------------------------------------------ spellings

EQUAL = {"float": lambda t: f"{t}.0", "plus": lambda t: f"+{t}", "exponent": lambda t: f"{t}e0"}
"""Spellings of a whole-number cell that a number reader takes as the same number."""


def spelling_cases(rng: random.Random, n: int) -> Iterator[Case]:
    """Each whole-number cell of drawn training rows (and a collective and a kernel row)
    respelt: the prediction (or the row's refusal) of the plain cell, never another number."""
    from trainsim.validate import (
        predict_collective_row,
        predict_kernel_row,
        predict_training_row,
        read_rows,
    )

    predict = {"training": lambda r: predict_training_row(r, compute_db=None),
               "kernels": lambda r: predict_kernel_row(r, compute_db=None),
               "collectives": predict_collective_row}

    bases: dict[int, object] = {}

    def one(kind: str, row: dict[str, str], col: str, how: str) -> str | None:
        base = bases.get(id(row)) or bases.setdefault(id(row), predict[kind](row))
        got = predict[kind]({**row, col: EQUAL[how](row[col].strip())})
        if got.predicted is None:
            return None  # refused on the row: not silent
        if got.predicted != base.predicted:
            return (f"silently misread: {col}={row[col]!r} written {how}: {base.predicted!r} "
                    f"-> {got.predicted!r}")
        return None

    for kind, name in FILES.items():
        _, rows = read_rows(VALIDATION / name)
        picked = rng.sample(rows, min(len(rows), n if kind == "training" else max(1, n // 4)))
        if kind == "training":  # a ZeRO stage stated 0 where the row leaves it empty
            picked += [{**r, "zero_stage": "0"} for r in picked if not r["zero_stage"].strip()]
        for row in picked:
            for col, text in row.items():
                if text.strip().isdigit() and col not in ("id", "source", "note"):
                    for how in EQUAL:
                        yield (f"spellings {kind} {row.get('id')} {col} {how}",
                               lambda a=(kind, row, col, how): one(*a))


# ------------------------------------------------------------------------------ layers

LAYER_SHAPE_SPELLINGS = {"kv": ("kv_heads", "num_kv_heads", "KV"), "hd": ("head_dim", "hdim"),
                         "h": ("hidden", "hidden_size", "H"), "ffn": ("ffn_hidden_size", "FFN"),
                         "heads": ("num_heads", "head"),
                         "experts": ("num_experts", "expert"), "topk": ("top_k", "k")}
LAYER_MODES = {"Compile": True, "compiled": True, "torch.compile": True, "inductor": True,
               "Eager": False, "EAGER": False, "eager ": False}


def layer_cases() -> Iterator[Case]:
    """The layers file (JSONL): a shape key spelt otherwise than the README's (its value
    changed, so that a key left unread shows) and a mode spelt otherwise: refused on the
    record, or the prediction of the README's spelling; never another number."""
    import json

    from trainsim.validate import validate_file
    lines = (VALIDATION / "layers_h100_measured.jsonl").read_text().splitlines()
    records = [json.loads(ln) for ln in lines if ln.strip()]
    dense = next(r for r in records if r["mode"] == "compile" and "experts" not in r["shape"])
    moe = next(r for r in records if "experts" in r["shape"])

    def predicted(rec: dict) -> tuple:
        path = TMP / "layer.jsonl"
        path.write_text(json.dumps(rec) + "\n")
        res = validate_file(path, compute_db=None)[1][0]
        return res.predicted, res.error

    def key(rec: dict, key: str, spelt: str) -> str | None:
        value = rec["shape"].get(key, 64)
        changed = value // 2 if key in ("kv", "experts", "topk") and value > 1 else value + 64
        right = predicted({**rec, "shape": {**rec["shape"], key: changed}})
        got = predicted({**rec, "shape": {**{k: v for k, v in rec["shape"].items() if k != key},
                                          spelt: changed}})
        if got[0] is None or got == right:
            return None
        return f"silently misread: shape.{spelt} for {key} left unread"

    def mode(rec: dict, word: str, compiled: bool) -> str | None:
        got = predicted({**rec, "mode": word})
        right = predicted({**rec, "mode": "compile" if compiled else "eager"})
        return None if got[0] is None or got == right else \
            f"silently misread: mode={word!r} not read as {'compile' if compiled else 'eager'}"

    for name, rec in (("dense", dense), ("moe", moe)):
        for k, spellings in LAYER_SHAPE_SPELLINGS.items():
            if k in ("experts", "topk") and name == "dense":
                continue
            for spelt in spellings:
                yield f"layers {name} shape.{spelt}", lambda a=(rec, k, spelt): key(*a)
    for word, compiled in LAYER_MODES.items():
        yield f"layers mode={word!r}", lambda a=(dense, word, compiled): mode(*a)


# ------------------------------------------------------------------------------ service

def service_cases() -> Iterator[Case]:
    """Validate jobs as the service checks a submission (``jobs.problem``) and runs it: each
    bundled file by name and none (all of them) must be accepted; an upload of each kind
    (a training/kernel/collective CSV, a layers JSONL record) must run; an upload with a
    misspelt column must be refused as ``options.csv`` naming the column."""
    from trainsim.service import Settings, jobs
    from trainsim.validate import bundled_files
    settings = Settings(db_url=f"sqlite:///{TMP / 'jobs.db'}", workers=0, checkers=0)

    def accepted(options: dict, run: bool) -> str | None:
        bad = jobs.problem("validate", {}, options, settings)
        if bad is not None:
            return f"valid job refused: {bad[0]} {bad[1]}: {bad[2][:90]!r}"
        if run:
            out = jobs.run("validate", {}, options, settings)
            if '"n": 0' in out.result:
                return "ran no row"
        return None

    def refused(options: dict, words: str) -> str | None:
        bad = jobs.problem("validate", {}, options, settings)
        if bad is None:
            return "misspelt column accepted"
        status, field, message = bad
        ok = status == 422 and field == "options.csv" and words in message
        return None if ok else f"refusal {status} {field}: {message[:90]!r}"

    yield "service validate all bundled", lambda: accepted({}, False)
    for path in bundled_files():
        yield f"service validate file {path.name}", \
            lambda o={"file": path.name}: accepted(o, False)
    layer = (VALIDATION / "layers_h100_measured.jsonl").read_text().splitlines()[0] + "\n"
    yield "service validate upload layers", lambda: accepted({"csv": layer}, True)
    for kind, col in {"training": "recompute", "kernels": "seq_len",
                      "collectives": "algorithm"}.items():  # optional columns
        head, rows = _base_rows(kind)
        plain = _render(head, rows)
        yield f"service validate upload {kind}", lambda t=plain: accepted({"csv": t}, True)
        text = _render([col[:-1] if c == col else c for c in head], rows)
        yield f"service validate upload {kind} {col[:-1]}", \
            lambda t=text, c=col: refused({"csv": t}, f"did you mean '{c}'")


# ------------------------------------------------------------------------------ header

def header_cases() -> Iterator[Case]:
    def one(kind: str, how: str) -> str | None:
        head, rows = _base_rows(kind)
        base = _predictions(_render(head, rows))
        i = head.index("gpu")
        text = {"bom": "\ufeff" + _render(head, rows), "crlf": _render(head, rows, "\r\n"),
                "cr": _render(head, rows, "\r"),
                "bom crlf": "\ufeff" + _render(head, rows, "\r\n"),
                "upper header": _render([c.upper() for c in head], rows),
                "padded header": _render([f" {c} " for c in head], rows),
                "nbsp header": _render([f"{c}\u00a0" for c in head], rows),
                "empty name": _render([*head, ""], [[*r, "1"] for r in rows]),
                "zero-width": _render([*head[:i], "\u200bgpu", *head[i + 1:]], rows),
                "twice": _render([*head, "gpu"], [[*r, "h100-sxm-80gb"] for r in rows]),
                "blank lines": _render(head, [*rows[:1], [], *rows[1:], []])}[how]
        got = _predictions(text)  # a refusal is a TrainsimError: one line, checked by outcome
        return None if got == base else f"predictions differ ({how})"

    for kind in FILES:
        for how in ("bom", "crlf", "cr", "bom crlf", "upper header", "padded header",
                    "nbsp header", "empty name", "zero-width", "twice", "blank lines"):
            yield f"header {kind} {how}", lambda a=(kind, how): one(*a)


# ------------------------------------------------------------------------------ extreme

def _run(model, parallel=None, training=None, cluster=None):
    from trainsim.catalog import run_config_from_dict
    from trainsim.simulator import simulate
    cfg = {"model": model, "parallel": parallel or {},
           "training": {"global_batch_size": 8, "seq_length": 1024, **(training or {})},
           "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                       **(cluster or {})}}
    return simulate(run_config_from_dict(copy.deepcopy(cfg)))


TINY = {"hidden_size": 256, "num_layers": 2, "num_attention_heads": 4, "vocab_size": 1024}


def extreme_cases() -> Iterator[Case]:
    def sane(**kw) -> str | None:
        bad = sane_result(_run(**kw))
        return f"insane result: {bad}" if bad else None

    runs = {"1 layer": {"model": {**TINY, "num_layers": 1}},
            "vocab 1": {"model": {**TINY, "vocab_size": 1}},
            "seq 1": {"model": TINY, "training": {"seq_length": 1}},
            "1 head of 1": {"model": {**TINY, "hidden_size": 1, "num_attention_heads": 1}},
            "one GPU": {"model": TINY, "cluster": {"num_gpus": 1}},
            "2^20 GPUs": {"model": "llama3-8b", "training": {"global_batch_size": 2**20},
                          "cluster": {"num_gpus": 2**20}},
            "2^20 micro-batches": {"model": TINY, "training": {"global_batch_size": 2**23}},
            "micro-batch 2^20": {"model": TINY, "training": {
                "global_batch_size": 2**20, "micro_batch_size": 2**17, "seq_length": 8}},
            "1e5 layers": {"model": {**TINY, "num_layers": 100000}},
            "hidden 2^22": {"model": {**TINY, "hidden_size": 2**22}},
            "seq 2^27": {"model": TINY, "training": {"seq_length": 2**27}},
            "ffn 1": {"model": {**TINY, "ffn_hidden_size": 1}},
            "moe 1 expert": {"model": {**TINY, "num_experts": 1, "moe_router_topk": 1}},
            "moe 4096 experts": {"model": {**TINY, "num_experts": 4096, "moe_router_topk": 1},
                                 "parallel": {"ep": 8}},
            "gpus_per_node 1": {"model": "llama3-8b", "parallel": {"tp": 8},
                                "cluster": {"gpus_per_node": 1}},
            "gpus_per_node over the run": {"model": TINY, "cluster": {"gpus_per_node": 4096}},
            "pp = layers": {"model": {**TINY, "num_layers": 8}, "parallel": {"pp": 8}}}
    for what, kw in runs.items():
        yield f"extreme {what}", lambda k=kw: sane(**k)


# ------------------------------------------------------------------------------ conflict

def conflict_cases() -> Iterator[Case]:
    from trainsim.errors import TrainsimError

    def refused(names: tuple[str, ...], **kw) -> str | None:
        try:
            _run(**kw)
        except TrainsimError as exc:
            text = str(exc)
            missing = [n for n in names if n not in text]
            return f"refusal does not name {missing}: {text[:90]!r}" if missing else None
        return "accepted"

    moe = {**TINY, "num_experts": 8, "moe_router_topk": 2}
    runs = {"tp not dividing heads": (("tp", "num_attention_heads"), {
                "model": {**TINY, "num_attention_heads": 6, "hidden_size": 384},
                "parallel": {"tp": 4}}),
            "ep not dividing experts": (("ep", "num_experts"), {
                "model": moe, "parallel": {"ep": 3}, "cluster": {"num_gpus": 3},
                "training": {"global_batch_size": 3}}),
            "ep over experts": (("ep", "num_experts"), {
                "model": moe, "parallel": {"ep": 16}, "cluster": {"num_gpus": 16},
                "training": {"global_batch_size": 16}}),
            "cp on an odd sequence": (("seq_length", "cp"), {
                "model": TINY, "parallel": {"cp": 2}, "training": {"seq_length": 1023}}),
            "vpp not dividing a stage": (("virtual_pipeline", "layers"), {
                "model": {**TINY, "num_layers": 6}, "parallel": {"pp": 2, "vpp": 2}}),
            "pp over layers": (("pp", "num_layers"), {
                "model": TINY, "parallel": {"pp": 4}}),
            "sp on a sequence tp does not divide": (("sequence_parallel", "seq_length"), {
                "model": TINY, "parallel": {"tp": 4, "sequence_parallel": True},
                "training": {"seq_length": 1022}}),
            "vocabulary under tp": (("vocab_size", "tp"), {
                "model": {**TINY, "vocab_size": 2}, "parallel": {"tp": 4}}),
            "kv heads not dividing heads": (("num_kv_heads", "num_attention_heads"), {
                "model": {**TINY, "num_kv_heads": 3}}),
            "batch not divisible": (("global_batch_size",), {
                "model": TINY, "training": {"global_batch_size": 12}}),
            "GPUs not a product": (("num_gpus",), {
                "model": TINY, "parallel": {"tp": 4, "pp": 2}, "cluster": {"num_gpus": 12},
                "training": {"global_batch_size": 12}})}
    for what, (names, kw) in runs.items():
        yield f"conflict {what}", lambda n=names, k=kw: refused(n, **k)


# ------------------------------------------------------------------------------ mono

MONO_MODELS = ("llama3-8b", "gpt3-5b", "mixtral-8x7b", "deepseek-v2-lite", "gemma-2-9b",
               "qwen2.5-7b", "llama3.2-1b", "gpt-oss-20b", "qwen3-30b-a3b")
MONO_GPUS = ("h100-sxm-80gb", "a100-sxm-80gb", "b200-sxm-180gb", "mi300x")


def mono_cases(rng: random.Random, n: int) -> Iterator[Case]:
    from trainsim.errors import TrainsimError

    def one(model: str, gpu: str, tp: int, pp: int, layers: int, rec: str, dtype: str,
            seq: int, micro: int) -> str | None:
        par = {"tp": tp, "pp": pp, "sequence_parallel": tp > 1, "recompute": rec}
        base = {"model": {"preset": model, "num_layers": layers}, "parallel": par,
                "training": {"seq_length": seq, "micro_batch_size": micro, "dtype": dtype,
                             "global_batch_size": 32},
                "cluster": {"gpu": gpu, "num_gpus": tp * pp * 2}}
        r0 = _run(**base)  # a refusal: the draw is not a valid run
        changes = {"layers + pp": ("model", "num_layers", layers + pp),
                   "layers x2": ("model", "num_layers", 2 * layers),
                   "seq x2": ("training", "seq_length", 2 * seq),
                   "batch x2": ("training", "global_batch_size", 64)}
        for what, (section, key, value) in changes.items():
            cfg = copy.deepcopy(base)
            cfg[section][key] = value
            try:
                r1 = _run(**cfg)
            except TrainsimError:
                continue  # larger runs may be refused (too many tasks)
            if r1.iteration_time_s < r0.iteration_time_s * (1 - 1e-9):
                return (f"{what} faster: {r0.iteration_time_s:.5g} -> "
                        f"{r1.iteration_time_s:.5g} s")
            if what != "batch x2" and r1.peak_memory_bytes < r0.peak_memory_bytes * (1 - 1e-9):
                return f"{what} needs less memory: {r0.peak_memory_bytes / 2**30:.4g} -> " \
                       f"{r1.peak_memory_bytes / 2**30:.4g} GiB"
        return None

    for _ in range(n):
        gpu, pp = rng.choice(MONO_GPUS), rng.choice((1, 2, 4))
        a = (rng.choice(MONO_MODELS), gpu, rng.choice((1, 2, 4)), pp,
             rng.choice((2, 4, 8)) * pp, rng.choice(("none", "selective", "full")),
             "bf16" if gpu == "a100-sxm-80gb" else rng.choice(("bf16", "fp8")),
             rng.choice((1024, 2048, 4096)), rng.choice((1, 2)))
        yield f"mono {' '.join(map(str, a))}", lambda a=a: one(*a)


# ------------------------------------------------------------------------------ workers

def workers_cases() -> Iterator[Case]:
    def one(kind: str) -> str | None:
        head, rows = _read(FILES[kind])
        picked = [list(r) for r in rows[:4]]
        picked[1][head.index("m" if kind == "kernels" else "num_gpus")] = "x"
        picked[2][head.index("gpu")] = "zz100"
        picked.append(list(rows[0]))
        path = TMP / f"workers-{kind}.csv"
        path.write_text(_render(head, picked))
        outs = []
        for workers in ("1", "3"):
            env = {**os.environ, "PYTHONPATH": str(SRC), "TRAINSIM_DEBUG": "1"}
            done = subprocess.run([sys.executable, "-m", "trainsim", "validate", str(path),
                                   "--format", "json", "--workers", workers],
                                  capture_output=True, text=True, env=env, timeout=300,
                                  check=False)
            if done.returncode:
                return f"exit {done.returncode}: {done.stderr.strip()[-100:]!r}"
            outs.append(done.stdout)
        return None if outs[0] == outs[1] else "--workers 1 and 3 differ"

    for kind in FILES:
        yield f"workers {kind}", lambda k=kind: one(k)


# ------------------------------------------------------------------------------ driver

SURFACES = ("columns", "cells", "spellings", "layers", "service", "header", "extreme",
            "conflict", "mono", "workers")


def cases(only: set[str], rng: random.Random, n: int) -> Iterator[Case]:
    table = {"columns": column_cases, "cells": cell_cases,
             "spellings": lambda: spelling_cases(rng, max(1, n // 8)), "layers": layer_cases,
             "service": service_cases,
             "header": header_cases,
             "extreme": extreme_cases, "conflict": conflict_cases,
             "mono": lambda: mono_cases(rng, n), "workers": workers_cases}
    yield from chosen_cases(table, only, SURFACES)


def main(argv: list[str] | None = None) -> int:
    ap = sweep_parser(__doc__, SURFACES, 40, "mono draws; training rows respelt / 8")
    args = ap.parse_args(argv)
    only = only_of(args)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        failures, counts = run_cases(cases(only, random.Random(args.seed), args.n), surface_class)
    return report_timed(failures, counts, time.perf_counter() - start)


if __name__ == "__main__":
    sys.exit(main())
