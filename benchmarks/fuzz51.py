"""Input robustness, 2026-11-28 (51st session, robust51): three surfaces no round had fuzzed.

- ``optset``: a command's own option and a ``--set`` of the field it sets, given together
  with different values, equal values and the field's other spelling (``parallel.tp`` /
  ``tensor_model_parallel_size``): ``export`` over a run config file and over a Hugging Face
  config.json, ``goodput`` (``--gpus``, ``--interval``, ``--failures``), ``search`` and
  ``plan`` (every option that fixes a field, plan's ``--pue`` and ``--price``), ``sweep``'s
  ``--vary``, and the service's goodput job (FastAPI's TestClient, no workers). Oracle: two
  values are refused in one line naming the option and the field; equal ones answer as the
  option alone (byte for byte);
- ``exportrt``: ``export`` of random combinations of schedules, parallel sizes, CP kinds,
  recomputation, data-parallel engines, overlap switches, MoE dispatchers and batch splits
  (dense, MoE and MLA bases). Oracle (fuzz49 only asked for an answer): the Chakra traces read
  back (``interop.chakra.read_chakra``) simulate to the iteration trainsim prints (1e-9), one
  trace a rank, every collective's group holds its rank, every send has its one receive, and the
  SimAI header states the run's tp, ep, pp, micro-batches and GPUs over as many rows as it
  counts;
- ``chakraread``: Chakra trace sets damaged as another tool's files may be (truncated, bytes
  flipped, a rank missing, a node depending on itself, on a later node, on one not there, in
  a cycle, a receive without its send, durations at 0 / 2**63 microseconds, an empty file)
  through ``read_chakra``: a finite time or one ``TrainsimError`` line.

Each input must give a sane answer or one ``TrainsimError`` line (``fuzz_checks.outcome``); a
hang is judged by CPU (30 CPU s; 300 s wall a backstop) and any input over 10 CPU s is its own
class.

    PYTHONPATH=src python benchmarks/fuzz51.py [--only optset,exportrt,chakraread] [--count N]
        [--seed S] [--every] [--progress] [--refusals]
"""
from __future__ import annotations

import copy
import dataclasses
import json
import math
import os
import random
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from trainsim.errors import TrainsimError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz_checks import BASES, REFUSED, Case

fuzz_checks.TIME_LIMIT_S = 300

HF_LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 256,
            "intermediate_size": 688, "num_hidden_layers": 4, "num_attention_heads": 4,
            "num_key_value_heads": 4, "vocab_size": 1024, "max_position_embeddings": 4096}


def _invoke(args: list[str]) -> Any:
    """The CLI's result on ``args`` (limits at their defaults); an internal error raised."""
    from click.testing import CliRunner

    from trainsim.cli import main
    from trainsim.limits import DEFAULTS

    result = CliRunner().invoke(main, args, env={"TRAINSIM_DEBUG": "1", **dict.fromkeys(DEFAULTS)})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def _errors(result: Any) -> list[str]:
    return [ln for ln in result.stderr.splitlines()
            if ln.strip() and not ln.startswith("warning: ")]


def _refused(result: Any, *words: str) -> str | None:
    """None where ``result`` is one error line naming every one of ``words``; else its class."""
    if result.exit_code == 0:
        return "an option and a --set of one field, two values: answered (one won in silence)"
    lines = _errors(result)
    if len(lines) != 1 or "Traceback" in result.output:
        return f"refusal of {len(lines)} lines"
    missing = [w for w in words if w not in lines[0]]
    if missing:
        return f"refusal names no {missing}: {lines[0][:120]}"
    REFUSED[0] += 1
    return None


# ------------------------------------------------------------------------------ optset

EXPORT_OPTIONS = [  # (option args, the --set field(s) it sets (spellings), another value, base)
    (["--tp", "2"], ["parallel.tp", "parallel.tensor_model_parallel_size"], "1", "dense"),
    (["--tp", "2", "--sp"], ["parallel.sequence_parallel"], "false", "dense"),
    (["--tp", "2", "--no-sp"], ["parallel.sequence_parallel"], "true", "dense"),
    (["--cp", "2"], ["parallel.cp", "parallel.context_parallel_size"], "1", "dense"),
    (["--ep", "4"], ["parallel.ep", "parallel.expert_model_parallel_size"], "2", "moe"),
    (["--seq", "256"], ["training.seq_length"], "512", "dense"),
    (["--mbs", "2"], ["training.micro_batch_size"], "1", "dense"),
    (["--gpu", "h100-sxm-80gb"], ["cluster.gpu"], "a100-sxm-80gb", "dense"),
    (["--gpus", "16"], ["cluster.num_gpus"], "8", "dense"),
    (["--gbs", "32"], ["training.global_batch_size"], "16", "dense"),
]


def _value(option: list[str]) -> str:
    last = option[-1]
    return {"--sp": "true", "--no-sp": "false"}.get(last, last)


def _export_cases(workdir: str) -> Iterator[Case]:
    files = {}
    for base in ("dense", "moe"):
        files[base] = str(Path(workdir) / f"{base}.yaml")
        Path(files[base]).write_text(yaml.safe_dump(BASES[base]))
    hf = Path(workdir) / "hf" / "config.json"
    hf.parent.mkdir(exist_ok=True)
    hf.write_text(json.dumps(HF_LLAMA))
    out = str(Path(workdir) / "optset.txt")

    def simai(args: list[str]) -> tuple[Any, bytes | None]:
        Path(out).unlink(missing_ok=True)
        r = _invoke(["export", *args, "--simai", out])
        return r, Path(out).read_bytes() if Path(out).exists() else None

    def differ(src: str, option: list[str], field: str, other: str) -> str | None:
        r, written = simai([src, *option, "--set", f"{field}={other}"])
        bad = _refused(r, option[-1], field.split(".")[-1], "give one")
        return bad or ("a refused export wrote its file" if written is not None else None)

    def equal(src: str, option: list[str], field: str) -> str | None:
        alone, a = simai([src, *option])
        both, b = simai([src, *option, "--set", f"{field}={_value(option)}"])
        if alone.exit_code != 0:
            return None  # the option alone refused (e.g. --cp 2 over MoE): nothing to compare
        if both.exit_code != 0:
            return f"an option and an equal --set refused: {_errors(both)[:1]}"
        return None if a == b else "an option and an equal --set: another workload"

    for src_name in ("file", "config.json"):
        for option, fields, other, base in EXPORT_OPTIONS:
            src = files[base] if src_name == "file" else str(hf)
            if src_name == "config.json" and base == "moe":
                continue
            for field in fields:
                label = f"export {src_name} {' '.join(option)} --set {field}"
                yield f"{label}={other}", (lambda s=src, o=option, f=field, v=other:
                                           differ(s, o, f, v))
                yield f"{label}=<equal>", (lambda s=src, o=option, f=field: equal(s, o, f))


GOODPUT_OPTIONS = [
    (["--gpus", "16"], "cluster.num_gpus", "8", "16", "--gpus"),
    (["--interval", "1h"], "reliability.checkpoint.interval_s", "600", "3600", "--interval"),
    (["--interval", "10m"], "reliability.checkpoint.interval_s", "3600", "600", "--interval"),
    (["--failures", "meta-rsc1-a100"], "reliability.failures", "llama3-405b-16k-h100",
     "meta-rsc1-a100", "--failures"),
]


def _goodput_cases(workdir: str) -> Iterator[Case]:
    path = str(Path(workdir) / "goodput.yaml")
    Path(path).write_text(yaml.safe_dump(BASES["dense"]))
    head = ["goodput", path, "--tokens", "1e9", "--trials", "5", "--format", "json"]

    def differ(option: list[str], field: str, other: str, name: str) -> str | None:
        return _refused(_invoke([*head, *option, "--set", f"{field}={other}"]), name,
                        field.split(".")[-1], "give one")

    def equal(option: list[str], field: str, same: str) -> str | None:
        alone, both = _invoke([*head, *option]), _invoke([*head, *option, "--set",
                                                          f"{field}={same}"])
        if both.exit_code != 0:
            return f"an option and an equal --set refused: {_errors(both)[:1]}"
        return None if alone.stdout == both.stdout else "an option and an equal --set: " \
            "another answer"

    for option, field, other, same, name in GOODPUT_OPTIONS:
        yield f"goodput {' '.join(option)} --set {field}={other}", (
            lambda o=option, f=field, v=other, n=name: differ(o, f, v, n))
        yield f"goodput {' '.join(option)} --set {field}={same}", (
            lambda o=option, f=field, s=same: equal(o, f, s))


SEARCH_OPTIONS = [  # (option, field, another value, the option's value or None: always refused)
    (["--gpus", "8"], "cluster.num_gpus", "16", None),
    (["--seq", "1024"], "training.seq_length", "2048", "1024"),
    (["--global-batch", "16"], "training.global_batch_size", "32", "16"),
    (["--dtype", "bf16"], "training.dtype", "fp8", "bf16"),
    (["--gpu", "h100-sxm-80gb"], "cluster.gpu", "h200-sxm-141gb", "h100-sxm-80gb"),
    (["--gpus-per-node", "8"], "cluster.gpus_per_node", "4", "8"),
    (["--nic-gbit-s", "400"], "cluster.nic_gbit_s_per_gpu", "200", "400"),
    (["--tp", "1,2"], "parallel.tp", "4", None),
    (["--pp", "1"], "parallel.pipeline_model_parallel_size", "2", None),
]
PLAN_ONLY = [(["--pue", "1.5"], "cluster.pue", "1.1", "1.5"),
             (["--price", "3"], "cluster.price_per_gpu_hour", "5", "3")]


def _search_cases() -> Iterator[Case]:
    search = ["search", "llama3.2-1b", "--gpus", "8", "--global-batch", "16", "--seq", "1024",
              "--workers", "1", "--top", "1", "--format", "json"]
    plan = ["plan", "llama3.2-1b", "--tokens", "1e9", "--days", "30", "--max-gpus", "8",
            "--seq", "1024", "--workers", "1", "--format", "json"]

    def with_option(head: list[str], option: list[str]) -> list[str]:
        args = list(head)
        if option[0] in args:  # the head's own value of the option: replaced
            args[args.index(option[0]) + 1] = option[1]
            return args
        return args + option

    def differ(head: list[str], option: list[str], field: str, other: str) -> str | None:
        r = _invoke(with_option(head, option) + ["--set", f"{field}={other}"])
        return _refused(r, field.split(".")[-1])

    def equal(head: list[str], option: list[str], field: str, same: str) -> str | None:
        r = _invoke(with_option(head, option) + ["--set", f"{field}={same}"])
        return None if r.exit_code == 0 else \
            f"an option and an equal --set refused: {_errors(r)[:1]}"

    for name, head, options in (("search", search, SEARCH_OPTIONS),
                                ("plan", plan, SEARCH_OPTIONS[1:] + PLAN_ONLY)):
        for option, field, other, same in options:
            label = f"{name} {' '.join(option)} --set {field}"
            yield f"{label}={other}", (lambda h=head, o=option, f=field, v=other:
                                       differ(h, o, f, v))
            if same is not None:
                yield f"{label}={same}", (lambda h=head, o=option, f=field, s=same:
                                          equal(h, o, f, s))


def _sweep_cases(workdir: str) -> Iterator[Case]:
    path = str(Path(workdir) / "sweep.yaml")
    Path(path).write_text(yaml.safe_dump(BASES["dense"]))
    for vary, field, other in (("training.micro_batch_size=1,2", "training.micro_batch_size",
                                "4"),
                               ("cluster.nic_gbit_s_per_gpu=100:400", "cluster.nic_gbit_s_per_gpu",
                                "200"),
                               ("parallel.tp=1,2", "parallel.tensor_model_parallel_size", "4")):
        yield f"sweep --vary {vary} --set {field}={other}", (
            lambda v=vary, f=field, o=other: _refused(_invoke(
                ["sweep", path, "--vary", v, "--steps", "2", "--set", f"{f}={o}",
                 "--format", "json"]), f.split(".")[-1]))


def _service_cases(workdir: str) -> Iterator[Case]:
    state: dict[str, Any] = {}

    def post(options: dict[str, Any]) -> Any:
        if not state:
            from fastapi.testclient import TestClient

            from trainsim.service import Settings, create_app

            app = create_app(Settings(db_url=f"sqlite:///{Path(workdir) / 's.db'}", workers=0,
                                      checkers=0), start_workers=False)
            client = TestClient(app)
            client.__enter__()
            state["c"] = (client, {"Authorization": f"Bearer {app.state.store.create_token('f')}"})
        client, headers = state["c"]
        return client.post("/api/v1/jobs", json={
            "kind": "goodput", "config": BASES["dense"],
            "options": {"tokens": "1e9", "trials": 5, **options}}, headers=headers)

    def differ(options: dict[str, Any], words: tuple[str, ...]) -> str | None:
        r = post(options)
        if r.status_code < 300:
            return "service: an option and a set of one field, two values: queued"
        err = str(r.json().get("error", ""))
        if r.status_code != 422 or "\n" in err.strip() or not all(w in err for w in words):
            return f"service: {r.status_code} {err[:120]}"
        REFUSED[0] += 1
        return None

    for options, words in (({"gpus": 16, "set": ["cluster.num_gpus=8"]}, ("gpus", "num_gpus")),
                           ({"interval": "1h", "set": ["reliability.checkpoint.interval_s=60"]},
                            ("interval", "interval_s")),
                           ({"failures": "meta-rsc1-a100",
                             "set": ["reliability.failures=llama3-405b-16k-h100"]},
                            ("failures", "llama3-405b-16k-h100"))):
        yield f"service goodput {options}", (lambda o=options, w=words: differ(o, w))
    yield "service goodput gpus equal", (lambda: None if post(
        {"gpus": 8, "set": ["cluster.num_gpus=8"]}).status_code == 202 else
        "service: an option and an equal set refused")


def optset_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        yield from _export_cases(workdir)
        yield from _goodput_cases(workdir)
        yield from _search_cases()
        yield from _sweep_cases(workdir)
        yield from _service_cases(workdir)
    return cases


# ------------------------------------------------------------------------------ exportrt

READ_BACK_NODES = 40_000
"""Trace sets read back by the oracle at most (a 144,008-node per-kernel set exports in 2.8
CPU s and reads back in 5.0)."""
SCHEDULES = [None, "1f1b", "interleaved_1f1b", "gpipe", "zb_h1", "zb_h2", "zb_2p", "zb_v",
             "interleaved_zb", "dualpipe", "dualpipe_v"]


def _random_run(rng: random.Random) -> dict[str, Any]:
    base = rng.choice(["dense", "dense", "moe", "mla"])
    cfg = copy.deepcopy(BASES[base])
    cfg["model"]["num_layers"] = rng.choice([4, 8])
    p: dict[str, Any] = {"tp": rng.choice([1, 2]), "pp": rng.choice([1, 2, 4]),
                         "cp": rng.choice([1, 1, 2])}
    if p["tp"] > 1:
        p["sequence_parallel"] = rng.random() < 0.7
        p["tp_comm_overlap"] = rng.random() < 0.3
    if p["cp"] > 1:
        p["cp_comm_type"] = rng.choice(["p2p", "a2a", "all_gather"])
    if p["pp"] > 1:
        p["pipeline_schedule"] = rng.choice(SCHEDULES)
        if p["pipeline_schedule"] in ("interleaved_1f1b", "interleaved_zb"):
            p["vpp"] = 2
        p["overlap_p2p_comm"] = rng.random() < 0.3
    p["recompute"] = rng.choice(["none", "selective", "full"])
    engine = rng.choice(["megatron", "megatron", "deepspeed", "fsdp2"])
    p["data_parallel_impl"] = engine
    if engine == "megatron":
        p["distributed_optimizer"] = rng.random() < 0.5
    else:
        p["zero_stage"] = rng.choice([1, 2, 3] if engine == "deepspeed" else [2, 3])
    p["overlap_grad_reduce"] = rng.random() < 0.5
    p["overlap_param_gather"] = rng.random() < 0.3
    dp = rng.choice([1, 2])
    if base == "moe":
        p["ep"] = rng.choice([e for e in (1, 2, 4) if (p["tp"] * p["cp"] * dp) % e == 0])
        p["moe_token_dispatcher_type"] = rng.choice(["alltoall", "allgather"])
    gpus = p["tp"] * p["pp"] * p["cp"] * dp
    mbs = rng.choice([1, 2])
    cfg["parallel"] = p
    cfg["training"].update(micro_batch_size=mbs,
                           global_batch_size=mbs * dp * rng.choice([1, 4, 8]) * p["pp"])
    cfg["cluster"].update(num_gpus=gpus, gpus_per_node=min(gpus, 8))
    if base == "mla":
        cfg["cluster"]["compute_db"] = None
    return cfg


def _round_trip(cfg: dict[str, Any], workdir: str, per_kernel: bool) -> str | None:
    from trainsim.catalog import run_config_from_dict
    from trainsim.interop.chakra import export_chakra, read_chakra, trace_files
    from trainsim.interop.chakra_et import COMM_COLL_NODE, COMM_RECV_NODE, COMM_SEND_NODE, read_et
    from trainsim.interop.simai import read_simai, write_simai
    from trainsim.simulator import simulate

    rc = run_config_from_dict(copy.deepcopy(cfg))
    want = simulate(rc).iteration_time_s
    d = tempfile.mkdtemp(dir=workdir)
    ex = export_chakra(rc, Path(d) / "w", per_kernel=per_kernel)
    if not math.isclose(ex.iteration_time_s, want, rel_tol=1e-12):
        return f"chakra's iteration {ex.iteration_time_s!r} is not simulate's {want!r}"
    if len(ex.paths) != rc.cluster.num_gpus:
        return f"{len(ex.paths)} traces for {rc.cluster.num_gpus} GPUs"
    if sum(ex.nodes_per_rank.values()) > READ_BACK_NODES:
        return None  # the oracle's read-back would cost more than the export (not its class)
    try:
        back = read_chakra(Path(d) / "w")
    except TrainsimError:  # chakra57: a run's own traces refused (a receive without its send)
        return "trainsim's reader refuses the traces trainsim wrote"
    if not math.isclose(back, want, rel_tol=1e-9):
        return f"the traces read back simulate to {back / want - 1:+.3g} of the iteration"
    groups = {int(k): v for k, v in json.loads(ex.comm_groups_path.read_text()).items()}
    sends: Counter = Counter()  # chakra57: counted, not a set (a second send of one tag
    recvs: Counter = Counter()  # was a send no receive matched, and released the peer early)
    for path in trace_files(Path(d) / "w"):
        rank = int(path.name.split(".")[-2])
        for n in read_et(path)[1]:
            if n.type == COMM_COLL_NODE and rank not in groups.get(int(n.attr("pg_name")), []):
                return f"rank {rank}'s collective names a group without it"
            if n.type == COMM_SEND_NODE:
                sends[(n.attr("comm_src"), n.attr("comm_dst"), n.attr("comm_tag"))] += 1
            elif n.type == COMM_RECV_NODE:
                recvs[(n.attr("comm_src"), n.attr("comm_dst"), n.attr("comm_tag"))] += 1
    if sends != recvs:
        return f"{(sends - recvs).total() + (recvs - sends).total()} sends / receives " \
            "without their peer"
    rows = write_simai(rc, Path(d) / "s.txt")
    head, read = read_simai(Path(d) / "s.txt")
    p = rc.parallel
    stated = {"model_parallel_NPU_group": p.tp, "ep": p.ep, "pp": p.pp,
              "ga": rc.num_microbatches, "all_gpus": rc.cluster.num_gpus}
    wrong = {k: head.get(k) for k, v in stated.items() if head.get(k) != v}
    if wrong or len(read) != rows:
        return f"SimAI header {wrong} ({len(read)} of {rows} rows)"
    return None


def exportrt_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for i in range(400):
            cfg = _random_run(rng)
            per_kernel = i % 5 == 0
            label = json.dumps({k: cfg[k] for k in ("parallel", "training")}, sort_keys=True)
            yield f"{'per-kernel ' if per_kernel else ''}{label}", (
                lambda c=cfg, k=per_kernel: _round_trip(c, workdir, k))
    return cases


# ------------------------------------------------------------------------------ chakraread

def _edits() -> list[tuple[str, Callable[[list[Any]], list[Any] | None]]]:
    """(name, an edit of rank 0's nodes; None: the file is removed)."""
    def dep(nodes: list[Any], i: int, deps: list[int]) -> list[Any]:
        out = list(nodes)
        out[i] = dataclasses.replace(out[i], ctrl_deps=deps)
        return out

    def first(nodes: list[Any], kind: int) -> int:
        return next(i for i, n in enumerate(nodes) if n.type == kind)

    from trainsim.interop.chakra_et import COMM_RECV_NODE, COMM_SEND_NODE
    return [
        ("untouched", lambda n: n),
        ("rank 0 removed", lambda n: None),
        ("no nodes", lambda n: []),
        ("self dependency", lambda n: dep(n, 3, [n[3].id])),
        ("a later node", lambda n: dep(n, 0, [n[5].id])),
        ("a cycle", lambda n: dep(dep(n, 2, [n[4].id]), 4, [n[2].id])),
        ("a node not there", lambda n: dep(n, 2, [10**9])),
        ("a negative id", lambda n: dep(n, 2, [-1])),
        ("duplicate ids", lambda n: n + [dataclasses.replace(n[0])]),
        ("zero durations", lambda n: [dataclasses.replace(x, duration_micros=0, attrs={
            k: v for k, v in x.attrs.items() if k != "trainsim.duration_s"}) for x in n]),
        ("2**63 us", lambda n: [dataclasses.replace(n[0], duration_micros=2**63), *n[1:]]),
        ("2**64-1 us", lambda n: [dataclasses.replace(n[0], duration_micros=2**64 - 1), *n[1:]]),
        ("a NaN duration_s", lambda n: [dataclasses.replace(n[0], attrs={
            **n[0].attrs, "trainsim.duration_s": ("double", math.nan)}), *n[1:]]),
        ("a negative duration_s", lambda n: [dataclasses.replace(n[0], attrs={
            **n[0].attrs, "trainsim.duration_s": ("double", -1.0)}), *n[1:]]),
        ("an inf duration_s", lambda n: [dataclasses.replace(n[0], attrs={
            **n[0].attrs, "trainsim.duration_s": ("double", math.inf)}), *n[1:]]),
        ("node type 99", lambda n: [dataclasses.replace(n[0], type=99), *n[1:]]),
        ("a receive's send removed", lambda n: [x for i, x in enumerate(n)
                                                 if i != first(n, COMM_SEND_NODE)]),
        ("a send's tag changed", lambda n: [dataclasses.replace(x, attrs={
            **x.attrs, "comm_tag": ("int64", 99_999)}) if i == first(n, COMM_SEND_NODE) else x
            for i, x in enumerate(n)]),
        ("a receive without comm_src", lambda n: [dataclasses.replace(x, attrs={
            k: v for k, v in x.attrs.items() if k != "comm_src"})
            if i == first(n, COMM_RECV_NODE) else x for i, x in enumerate(n)]),
        ("a string comm_dst", lambda n: [dataclasses.replace(x, attrs={
            **x.attrs, "comm_dst": ("string", "eight")})
            if i == first(n, COMM_SEND_NODE) else x for i, x in enumerate(n)]),
    ]


def _bytes_edits() -> list[tuple[str, Callable[[bytes], bytes]]]:
    return [("empty file", lambda b: b""), ("truncated to half", lambda b: b[:len(b) // 2]),
            ("truncated by one byte", lambda b: b[:-1]), ("one byte", lambda b: b[:1]),
            ("a varint of 11 bytes", lambda b: b"\xff" * 11 + b),
            ("a length past the end", lambda b: b"\xf0\xff\xff\x0f" + b),
            ("zeros", lambda b: bytes(len(b))), ("text", lambda b: b"not a trace\n"),
            ("bytes flipped", lambda b: bytes(x ^ 0x5A for x in b))]


def chakraread_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        from trainsim.catalog import run_config_from_dict
        from trainsim.interop.chakra import export_chakra, read_chakra
        from trainsim.interop.chakra_et import read_et, write_et

        def read(prefix: Path, exact: bool) -> str | None:
            t = read_chakra(prefix, exact=exact)
            return None if math.isfinite(t) and t >= 0 else f"read back as {t!r}"

        for base, change in (("dense", {"pp": 2}), ("moe", {})):
            cfg = copy.deepcopy(BASES[base])
            cfg["parallel"].update(change)
            rc = run_config_from_dict(cfg)
            d = Path(tempfile.mkdtemp(dir=workdir))
            ex = export_chakra(rc, d / "w")
            rank0 = ex.paths[0].read_bytes()
            nodes = read_et(ex.paths[0])[1]

            def node_edit(edit: Callable, exact: bool, d: Path = d, rank0: bytes = rank0,
                          nodes: list = nodes, paths: list = ex.paths) -> str | None:
                edited = edit(nodes)
                if edited is None:
                    paths[0].unlink(missing_ok=True)
                else:
                    write_et(paths[0], edited)
                try:
                    return read(d / "w", exact)
                finally:
                    paths[0].write_bytes(rank0)

            def byte_edit(edit: Callable, exact: bool, d: Path = d, rank0: bytes = rank0,
                          paths: list = ex.paths) -> str | None:
                paths[0].write_bytes(edit(rank0))
                try:
                    return read(d / "w", exact)
                finally:
                    paths[0].write_bytes(rank0)

            for exact in (True, False):
                for name, edit in _edits():
                    yield f"{base} {name} exact={exact}", (
                        lambda e=edit, x=exact, f=node_edit: f(e, x))
                for name, edit in _bytes_edits():
                    yield f"{base} {name} exact={exact}", (
                        lambda e=edit, x=exact, f=byte_edit: f(e, x))
    return cases


# ------------------------------------------------------------------------------ unicode

SPELLINGS: list[tuple[str, Callable[[str], str]]] = [
    ("zero-width space", lambda t: t + "\u200b"), ("zero-width joiner inside",
                                                   lambda t: t[:1] + "\u200d" + t[1:]),
    ("NBSP after", lambda t: t + "\u00a0"), ("ideographic space before", lambda t: "\u3000" + t),
    ("full width", lambda t: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in t)),
    ("Cyrillic a / e / o", lambda t: t.translate(str.maketrans("aeo", "\u0430\u0435\u043e"))),
    ("upper case", str.upper), ("soft hyphen inside", lambda t: t[:2] + "\u00ad" + t[2:]),
    ("combining acute", lambda t: t + "\u0301"), ("BOM before", lambda t: "\ufeff" + t),
    ("right-to-left mark", lambda t: t + "\u200f"), ("line separator", lambda t: t + "\u2028"),
]
"""How a key or a word may arrive from another editor, a web page or a chat window."""


def unicode_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    """Each key of each base's sections, and each word value, respelt: the file is read as the
    ASCII one (the same built config) or refused in one line (a key dropped or a value read
    as another in silence is the class)."""
    def one(base: str, section: str, key: str, respell: Callable[[str], str], of_value: bool
            ) -> str | None:
        from trainsim.catalog import load_run_config

        cfg = copy.deepcopy(BASES[base])
        value = cfg[section].pop(key)
        if of_value:
            cfg[section][key] = respell(value)
        else:
            cfg[section][respell(key)] = value
        path = Path(workdir) / "u.json"
        path.write_text(json.dumps(cfg, ensure_ascii=False), encoding="utf-8")
        got = load_run_config(str(path))
        path.write_text(json.dumps(BASES[base]))
        want = load_run_config(str(path))
        return None if got == want else "read as another config in silence"

    def cases() -> Iterator[Case]:
        for base in ("dense", "moe", "mla"):
            for section, fields in BASES[base].items():
                for key, value in fields.items():
                    for name, respell in SPELLINGS:
                        yield f"{base} {section}.{key} key {name}", (
                            lambda b=base, s=section, k=key, r=respell: one(b, s, k, r, False))
                        if isinstance(value, str):
                            yield f"{base} {section}.{key}={value} {name}", (
                                lambda b=base, s=section, k=key, r=respell: one(b, s, k, r,
                                                                                True))
    return cases


# ------------------------------------------------------------------------------ main

def main(argv: list[str] | None = None) -> int:
    return fuzz_checks.seeded_round(51, argv, lambda workdir, rng: {
        "optset": optset_cases(workdir), "exportrt": exportrt_cases(workdir, rng),
        "chakraread": chakraread_cases(workdir), "unicode": unicode_cases(workdir)})


if __name__ == "__main__":
    fuzz_checks.run_round(main)


__all__ = ["TrainsimError", "main"]
