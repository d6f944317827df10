"""Eleventh input sweep (25th session, fuzz11): what the ten earlier sweeps left.

- ``stdio``: the real process (a subprocess, not click's runner) with stdout, stdin or stderr
  closed, stdout on /dev/full or a pipe closed after one byte, and an output encoding that
  cannot show every character (``PYTHONIOENCODING=ascii``). Oracle: no traceback; a valid run
  still answers (exit 0) where its output can be written at all; else one line, exit 2.
- ``empty``: every option of every command (capture and export included) given '' and ' ':
  refused in one line, never taken silently as the option left out.
- ``names``: every option given text, a sign, NaN, a huge number, a line break: the one
  ``error:`` line names the option as written (``--sizes``, not "bad size").
- ``hf``: a config.json's fields (Llama, Mixtral, DeepSeek-V3 names) set to text, lists, 0, -1,
  fractions, 10^7: the line names the file and the key as the file writes it
  (``num_hidden_layers``, not ``model.num_layers``); and a latent-attention (MLA) model whose
  heads do not divide its width (GLM-4.7-Flash's shape) simulates.
- ``hftypes``: the class-default config.json of every ``model_type`` transformers has (a
  sample; ``--long`` all ~820): one line, or a sane result.
- ``executor``: ``--ray-address`` where no Ray executor runs (search, plan, serve): refused;
  a relative ``XDG_DATA_HOME``: the default job store never made under the current folder.
- ``service``: every option of every job kind set to odd values: refused when submitted (4xx),
  or the job runs; a job accepted (202) that its run then refuses is a failure. Raw HTTP: content
  types, Authorization forms, query parameters, methods, paths: 4xx JSON, never 5xx.
- ``frameworks``: every framework profile at each of its entries, at drawn release tags and by
  its aliases, on fuzz_checks' dense, MoE and MLA bases: one line, or a sane balanced result.
- ``csv``: collectives and kernel rows with odd cells, a layers JSONL record with odd values.
- ``mono``: drawn valid runs with twice the NIC, NVLink or HBM bandwidth, or twice the peak
  FLOP/s (added by the fuzzleads helper): never slower.

    python benchmarks/fuzz_sweep11.py [--seed 0] [--n 300] [--only stdio,empty,...] [--long]

Prints each failure class with its first inputs and the counts; exit 1 on any failure.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_checks import BASES as CONFIG_BASES
from fuzz_checks import (
    Case,
    chosen_cases,
    only_of,
    report_timed,
    surface_class,
    sweep_parser,
)
from fuzz_sweep import _cli
from fuzz_sweep6 import BASES as CLI_BASES
from fuzz_sweep6 import PATHS, run_cases
from fuzz_sweep9 import _draw_combo, balanced

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "llama3-8b-h100.yaml"
VALIDATION = ROOT / "src" / "trainsim" / "data" / "validation"
TMP = Path(tempfile.mkdtemp(prefix="fuzz11-"))
SRC = Path(__import__("trainsim").__file__).resolve().parents[1]
"""The trainsim this script imports (PYTHONPATH=<other checkout>/src for before counts), for
the processes it starts."""


def _write(name: str, body: str | bytes) -> Path:
    path = TMP / name
    path.write_bytes(body if isinstance(body, bytes) else body.encode("utf-8"))
    return path


def _invoke(args: list[str]):
    """click's runner with TRAINSIM_DEBUG=1 (a safety-net catch keeps its traceback)."""
    from click.testing import CliRunner

    from trainsim.cli import main
    from trainsim.limits import DEFAULTS
    result = CliRunner().invoke(main, args, env={"TRAINSIM_DEBUG": "1",
                                                 **dict.fromkeys(DEFAULTS)})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


# ------------------------------------------------------------------------------ stdio

def _process(args: list[str], tail: str = "", env: dict | None = None) -> tuple[int, str]:
    """``python -m trainsim ARGS`` run by bash with ``tail`` (redirections, a pipe) after
    its stderr is sent to a file: (trainsim's exit status, its stderr)."""
    quoted = " ".join("'" + a.replace("'", "'\\''") + "'" for a in args)
    err, rc = TMP / "stderr.txt", TMP / "rc.txt"
    line = (f"'{sys.executable}' -m trainsim {quoted} 2>'{err}' {tail}; "
            f"echo ${{PIPESTATUS[0]}} >'{rc}'")
    full = {**os.environ, "PYTHONPATH": str(SRC), "TRAINSIM_DEBUG": "1", **(env or {})}
    subprocess.run(["bash", "-c", line], check=False, capture_output=True, timeout=120,
                   env=full, cwd=TMP)
    return int(rc.read_text()), err.read_text(errors="replace")


STDIO_RUNS = {
    "version": ["--version"], "help": ["--help"], "catalog": ["catalog", "gpus"],
    "simulate": ["simulate", str(EXAMPLE)],
    "simulate json": ["simulate", str(EXAMPLE), "--format", "json"],
    "validate": ["validate", str(VALIDATION / "collectives_public.csv"), "--workers", "1"],
    "unicode name": ["simulate", str(EXAMPLE), "--set", "model.name=caf\u00e9 \u65e5\u672c"],
    "bad input": ["simulate", str(EXAMPLE), "--set", "parallel.tp=3"],
}
"""Commands run as a process: each must answer (or refuse) however its streams are set up."""
REDIRECTS = {"stdout closed": (">&-", False), "stdin closed": ("<&-", True),
             "stderr closed": ("2>&-", True), "stdout /dev/full": (">/dev/full", False),
             "pipe closed after 1 byte": ("| head -c 1 >/dev/null", False),
             "ascii output": (">/dev/null", True)}
"""how the streams are set up -> (bash tail, whether a valid command must still exit 0)."""


def stdio_cases() -> Iterator[Case]:
    def one(args: list[str], what: str) -> str | None:
        tail, must_answer = REDIRECTS[what]
        env = {"PYTHONIOENCODING": "ascii"} if what == "ascii output" else None
        rc, err = _process(args, tail, env)
        if "Traceback" in err or "Exception ignored" in err:
            return f"traceback: {err.strip().splitlines()[-1][:100]}"
        lines = [ln for ln in err.splitlines() if ln.strip()]
        if args[-1] == "parallel.tp=3":  # a refusal: status 2 and one line, however set up
            if rc != 2 or (what != "stderr closed" and len(lines) != 1):
                return f"refusal exit {rc}, {len(lines)} lines"
            return None
        if must_answer and rc != 0:
            return f"valid run exit {rc}: {err.strip()[-100:]!r}"
        if rc != 0 and len(lines) > 1:
            return f"exit {rc} with {len(lines)} lines: {err.strip()[-100:]!r}"
        return None

    for label, args in STDIO_RUNS.items():
        for what in REDIRECTS:
            yield f"stdio {label} / {what}", lambda a=args, w=what: one(a, w)


# ------------------------------------------------------------------------------ options

CAPTURE_HF = ROOT / "examples" / "hf" / "llama3-8b" / "config.json"
EXTRA_BASES = {"capture": ["capture", str(CAPTURE_HF), "--format", "json"],
               "export": ["export", str(EXAMPLE), "--simai", str(TMP / "w.txt")]}
SKIP_OPTIONS = {"--plot", "--trace", "--out", "--chakra", "--simai", "--max-tasks",
                "--max-flows", "--max-trial-rounds"}
"""Paths (fuzz10's ``files``) and the work limits (fuzz10's ``env``)."""


def _options() -> Iterator[tuple[str, list[str], str, Any]]:
    """(command, base arguments, option, click parameter) of every text-taking option."""
    from trainsim.cli import main

    bases = {**CLI_BASES, **EXTRA_BASES}
    for name in sorted(main.commands):
        if name not in bases:
            continue
        for param in main.commands[name].params:
            opts = [o for o in param.opts if o.startswith("--")]
            if not opts or param.is_flag or param.hidden or opts[0] in ("--help", *PATHS,
                                                                         *SKIP_OPTIONS):
                continue
            yield name, bases[name], opts[0], param


def empty_cases() -> Iterator[Case]:
    def one(args: list[str]) -> str | None:
        result = _invoke(args)
        if result.exit_code == 0:
            return "accepted as left out"
        return _cli(args)

    for name, base, opt, _param in _options():
        for value in ("", " "):
            yield f"empty {name} {opt} {value!r}", lambda a=[*base, opt, value]: one(a)


NAME_BATTERY = ["x", "-1", "nan", "1e30", "a\nb", "0", "\u00e9"]


def names_cases() -> Iterator[Case]:
    def one(args: list[str], opt: str, param: Any) -> str | None:
        result = _invoke(args)
        if result.exit_code != 2:
            return _cli(args)
        bad = _cli(args)
        if bad:
            return bad
        line = result.stderr.strip().splitlines()[-1].lower()
        words = {opt[2:], opt[2:].replace("-", "_"), opt[2:].replace("-", " "), str(param.name)}
        if not any(w.lower() in line for w in words):
            return f"the line does not name {opt}: {line[:90]!r}"
        return None

    for name, base, opt, param in _options():
        for value in NAME_BATTERY:
            yield f"names {name} {opt} {value!r}", lambda a=([*base, opt, value], opt, param): one(*a)


# ------------------------------------------------------------------------------ hf

HF_LLAMA = {"model_type": "llama", "hidden_size": 1024, "intermediate_size": 2816,
            "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4,
            "vocab_size": 32000, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
            "hidden_act": "silu", "max_position_embeddings": 8192, "tie_word_embeddings": False}
HF_MIXTRAL = {**HF_LLAMA, "model_type": "mixtral", "num_local_experts": 8,
              "num_experts_per_tok": 2}
HF_DSV3 = {**HF_LLAMA, "model_type": "deepseek_v3", "n_routed_experts": 16,
           "num_experts_per_tok": 4, "moe_intermediate_size": 512, "n_shared_experts": 1,
           "first_k_dense_replace": 1, "kv_lora_rank": 128, "q_lora_rank": 256,
           "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "v_head_dim": 64}
HF_BASES = {"llama": HF_LLAMA, "mixtral": HF_MIXTRAL, "deepseek_v3": HF_DSV3}
HF_VALUES = ["x", [1, 2], 0, -1, 1.5, 10**7, {"a": 1}, True, ""]
HF_RUN = {"training": {"global_batch_size": 8, "seq_length": 1024},
          "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "compute_db": None}}


def _hf_run(cfg: dict, name: str) -> Any:
    from trainsim.catalog import run_config_from_dict
    from trainsim.simulator import simulate
    path = _write(name, json.dumps(cfg))
    return simulate(run_config_from_dict({"model": {"hf_config": str(path)},
                                          **copy.deepcopy(HF_RUN)}))


def hf_cases() -> Iterator[Case]:
    from trainsim.errors import TrainsimError

    def one(cfg: dict, key: str) -> str | None:
        try:
            result = _hf_run(cfg, "hf.json")
        except TrainsimError as exc:
            text = str(exc)
            if "hf.json" not in text:
                return f"the line does not name the file: {text[:90]!r}"
            if key not in text:
                return f"the line does not name {key}: {text[:90]!r}"
            raise
        return balanced(result)

    for family, base in HF_BASES.items():
        for key in base:
            if key == "model_type":
                continue
            for value in HF_VALUES:
                cfg = {**base, key: value}
                yield f"hf {family} {key}={value!r}", lambda c=cfg, k=key: one(c, k)
    # GLM-4.7-Flash's attention (zai-org/GLM-4.7-Flash config.json): 20 heads of a 2048 width,
    # latent attention with its own head widths
    glm = {**HF_DSV3, "model_type": "glm4_moe_lite", "hidden_size": 2048,
           "num_attention_heads": 20, "num_key_value_heads": 20, "qk_nope_head_dim": 192,
           "qk_rope_head_dim": 64, "v_head_dim": 256, "kv_lora_rank": 512, "q_lora_rank": 768}

    def simulates(cfg: dict) -> str | None:
        try:
            return balanced(_hf_run(cfg, "glm.json"))
        except TrainsimError as exc:
            return f"refused: {str(exc)[:90]!r}"

    yield "hf mla heads not dividing the width", lambda: simulates(glm)


def hftypes_cases(rng: random.Random, n: int) -> Iterator[Case]:
    try:
        from transformers import CONFIG_MAPPING, AutoConfig
    except ImportError:
        return
    from trainsim.errors import TrainsimError

    def one(kind: str) -> str | None:
        try:
            made = AutoConfig.for_model(kind).to_dict()
        except Exception:  # noqa: BLE001 - transformers' own class cannot build it
            return None
        try:
            return balanced(_hf_run(json.loads(json.dumps(made, default=str)), "type.json"))
        except TrainsimError as exc:
            if "\n" in str(exc).strip():
                return "multi-line error"
            raise

    kinds = sorted(CONFIG_MAPPING.keys())
    for kind in (kinds if n >= len(kinds) else rng.sample(kinds, n)):
        yield f"hftypes {kind}", lambda k=kind: one(k)


# ------------------------------------------------------------------------------ executor

def _serve(args: list[str]) -> str | None:
    """``serve`` in a subprocess: refused in one line within 30 s (a server that starts is
    killed and reported)."""
    cmd = [sys.executable, "-m", "trainsim.cli", "serve", "--workers", "0", "--checkers", "0",
           "--port", "0", "--db", f"sqlite:///{TMP / 'serve.db'}", *args]
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    try:
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=30,
                              env=env, cwd=TMP)
    except subprocess.TimeoutExpired:
        return "served (the option silently ignored)"
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    if done.returncode != 2 or len(lines) != 1 or not lines[0].startswith("error: "):
        return f"exit {done.returncode}: {done.stderr.strip()[-120:]!r}"
    return None


def executor_cases() -> Iterator[Case]:
    def refused(args: list[str]) -> str | None:
        result = _invoke(args)
        return "accepted (the option silently ignored)" if result.exit_code == 0 \
            else _cli(args)

    for cmd in ("search", "plan"):
        for address in ("auto", "ray://head:10001", "127.0.0.1:6379"):
            args = [*CLI_BASES[cmd], "--ray-address", address]
            yield f"executor {cmd} --ray-address {address}", lambda a=args: refused(a)
    yield "executor serve --ray-address auto", lambda: _serve(["--ray-address", "auto"])

    def store_in_cwd(xdg: str) -> str | None:
        """``token list`` with the default job store: never a folder made where it ran."""
        work = TMP / "cwd"
        work.mkdir(exist_ok=True)
        env = {**os.environ, "PYTHONPATH": str(SRC), "XDG_DATA_HOME": xdg,
               "HOME": str(TMP / "home")}
        subprocess.run([sys.executable, "-m", "trainsim", "token", "list"], check=False,
                       capture_output=True, timeout=60, env=env, cwd=work)
        made = sorted(p.name for p in work.iterdir())
        return f"the job store made under the current folder: {made}" if made else None

    for xdg in ("relative/data", "data", "./x"):
        yield f"executor token list XDG_DATA_HOME={xdg}", lambda x=xdg: store_in_cwd(x)


# ------------------------------------------------------------------------------ service

SMALL_RUN = {"model": "llama3.2-1b", "parallel": {"tp": 1},
             "training": {"global_batch_size": 8, "seq_length": 1024},
             "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}}
SMALL_SEARCH = {"tp": "1", "pp": "1", "recompute": "none", "zero": "1", "overlap": "on",
                "max_micro_batch": 1}
GOOD_OPTIONS = {"simulate": {}, "sweep": {"vary": ["parallel.tp=1,2"]},
                "goodput": {"tokens": "1B", "trials": 3},
                "validate": {"file": "collectives_public.csv"},
                "search": {"gpus": 8, "global_batch": 8, "seq": 1024, **SMALL_SEARCH},
                "plan": {"tokens": "1B", "days": 10, "seq": 1024, "global_batch": 8,
                         "max_gpus": 16, **SMALL_SEARCH}}
OPTION_VALUES = [0, -1, 1.5, "x", "", True, [], {}, "nan", 1e308]


def _job_options(kind: str, key: str, value: Any) -> str | None:
    """A job refused when checked (as a submission is), or run to its end."""
    from trainsim.errors import TrainsimError
    from trainsim.limits import WorkLimitError
    from trainsim.service import Settings, jobs
    from trainsim.service.requests import OPTIONS as OPTIONS_DEFAULTS
    settings = Settings(db_url=f"sqlite:///{TMP / 'jobs.db'}", workers=0, checkers=0)
    options = {**GOOD_OPTIONS[kind], key: value}
    bad = jobs.problem(kind, SMALL_RUN, options, settings)
    if bad is not None:
        status, _field, message = bad
        if not 400 <= status < 500 or "\n" in message:
            return f"refusal {status}: {message[:80]!r}"
        return None
    if isinstance(value, str) and not value.strip():
        return "accepted '' as the option left out"
    if isinstance(GOOD_OPTIONS[kind].get(key, OPTIONS_DEFAULTS[kind][key]), bool) \
            and not isinstance(value, bool):
        return f"accepted a switch that is no boolean: {value!r}"
    try:
        jobs.run(kind, SMALL_RUN, options, settings)
    except WorkLimitError:  # the run's work, known from its simulated time (goodput's rounds)
        return None
    except TrainsimError as exc:
        if "no parallel configuration" in str(exc):  # a search that found nothing: its answer
            return None
        return f"accepted (202), refused when run: {str(exc)[:80]!r}"
    return None


def _http_cases() -> Iterator[Case]:
    try:
        from fastapi.testclient import TestClient

        from trainsim.service import Settings, create_app
    except ImportError:
        return
    app = create_app(Settings(db_url=f"sqlite:///{TMP / 'http.db'}", workers=0, checkers=0)
                     .with_limits(sync_timeout_s=0.05, max_active_jobs=10**6),
                     start_workers=False)
    client = TestClient(app, raise_server_exceptions=False)
    client.__enter__()
    token = app.state.store.create_token("fuzz11")
    auth = {"Authorization": f"Bearer {token}"}
    body = json.dumps({"kind": "simulate", "config": SMALL_RUN}).encode()
    requests: list[tuple[str, str, dict, bytes | None]] = []
    for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                 "application/json; charset=latin-1", "application/json; charset=utf-16",
                 "application/xml", "", "application/json;;", "*/*", "application/yaml"):
        requests.append(("POST", "/api/v1/jobs", {**auth, "Content-Type": kind}, body))
    for form in ("", "Bearer", "Bearer ", f"bearer {token}", f"BEARER {token}",
                 f"Basic {token}", f"Bearer  {token}", f"Bearer {token} ", f"Bearer {token}x",
                 "Bearer " + "x" * 100_000, f"Token {token}", f"Bearer {token},{token}",
                 f"Bearer\t{token}"):
        requests.append(("GET", "/api/v1/jobs", {"Authorization": form}, None))
    for query in ("limit=0", "limit=-1", "limit=nan", "limit=1e3", "limit=", "offset=-1",
                  "offset=" + "9" * 40, "limit=1&limit=2", "limit=%00", "limit=\uff11"):
        requests.append(("GET", f"/api/v1/jobs?{query}", auth, None))
    for job in ("x", "0" * 31, "0" * 33, "G" * 32, "%2e%2e", "%00", "\u00e9", "a" * 10_000,
                "0" * 32 + "/x", "0" * 32 + "?wait_s=nan", "0" * 32 + "?wait_s=-1",
                "0" * 32 + "?wait_s=inf"):
        requests += [("GET", f"/api/v1/jobs/{job}", auth, None),
                     ("DELETE", f"/api/v1/jobs/{job}", auth, None)]
    for method in ("PUT", "PATCH", "HEAD", "OPTIONS"):
        for path in ("/api/v1/jobs", "/api/v1/simulate", "/api/v1/health"):
            requests.append((method, path, auth, None))
    for path in ("/api/v1", "/api", "/static/../app.py", "/static/%2e%2e/app.py", "//api/v1/jobs",
                 "/api/v1//jobs", "/api/v1/catalog/x", "/api/v1/catalog/%00"):
        requests.append(("GET", path, auth, None))

    def one(method: str, path: str, headers: dict, content: bytes | None) -> str | None:
        r = client.request(method, path, headers=headers, content=content)
        if r.status_code >= 500 and r.status_code not in (503, 504):
            return f"status {r.status_code}"
        if 400 <= r.status_code < 500 and method != "HEAD":
            err = r.json()
            if not isinstance(err, dict) or not err.get("error") or "\n" in err["error"]:
                return f"error body {str(err)[:80]}"
        return None

    for method, path, headers, content in requests:
        shown = str(headers.get("Content-Type", headers.get("Authorization", "")))[:30]
        yield f"service {method} {path[:40]} {shown!r}", \
            lambda a=(method, path, headers, content): one(*a)


def service_cases() -> Iterator[Case]:
    try:
        from trainsim.service.requests import OPTIONS
    except ImportError:
        return
    for kind, known in OPTIONS.items():
        for key in known:
            if key in ("set", "vary", "model", "csv", "file"):
                continue  # lists of strings (fuzz9), the server's files
            for value in OPTION_VALUES:
                yield f"service {kind} options.{key}={value!r}", \
                    lambda a=(kind, key, value): _job_options(*a)
    yield from _http_cases()


# ------------------------------------------------------------------------------ frameworks

def framework_cases(rng: random.Random) -> Iterator[Case]:
    import yaml

    from trainsim.catalog import run_config_from_dict
    from trainsim.catalog.frameworks import _load, framework_names
    from trainsim.simulator import simulate
    releases = yaml.safe_load((ROOT / "src" / "trainsim" / "catalog"
                               / "framework_releases.yaml").read_text())

    def one(cfg: dict) -> str | None:
        return balanced(simulate(run_config_from_dict(copy.deepcopy(cfg))))

    for name in framework_names():
        profile = _load(name)
        table = (releases.get(name) or {}).get("releases") or {}
        versions: list[tuple[str, str | None]] = [(name, e.since) for e in profile.entries]
        versions += [(name, None), (name, "")]
        versions += [(name, v) for v in rng.sample(sorted(table), min(6, len(table)))]
        versions += [(alias, None) for alias in profile.aliases]
        for spelled, version in versions:
            for base_name, base in CONFIG_BASES.items():
                cfg = copy.deepcopy(base)
                cfg["training"]["framework"] = spelled
                if version is not None:
                    cfg["training"]["framework_version"] = version
                yield f"frameworks {base_name} {spelled} {version!r}", lambda c=cfg: one(c)


# ------------------------------------------------------------------------------ csv

CELLS = ["", " ", "0", "-1", "nan", "inf", "1e400", "1.5", "x", "\u0668", "9" * 40, "\uff11",
         "a\nb", "\u00e9", "1,2"]


def csv_cases(rng: random.Random, n: int) -> Iterator[Case]:
    def validate(path: Path) -> str | None:
        return _cli(["validate", str(path), "--workers", "1", "--format", "json"])

    for name in ("collectives_public.csv", "kernels_published.csv", "kernels_h100_measured.csv"):
        with (VALIDATION / name).open(encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        columns = list(rows[0])
        for _ in range(max(1, n // 3)):
            row, column, cell = dict(rng.choice(rows)), rng.choice(columns), rng.choice(CELLS)
            row[column] = cell
            buf = io.StringIO()
            csv.DictWriter(buf, columns, lineterminator="\n").writerows([dict(zip(columns,
                                                                                  columns)), row])
            path = _write(f"cells-{name}", buf.getvalue())
            yield f"csv {name} {row['id']}.{column}={cell!r}", lambda p=path: validate(p)
    record = json.loads((VALIDATION / "layers_h100_measured.jsonl").read_text().splitlines()[0])
    for key in record:
        for value in (None, "", -1, 0, "x", [], {}, 1e308, True):
            body = json.dumps({**record, key: value}) + "\n"
            yield f"csv layers {key}={value!r}", \
                lambda b=body: validate(_write("layers.jsonl", b))


# ------------------------------------------------------------------------------ mono

def mono_cases(rng: random.Random, n: int) -> Iterator[Case]:
    from trainsim.catalog import run_config_from_dict
    from trainsim.simulator import simulate

    def one(cfg: dict) -> str | None:
        rc = run_config_from_dict(copy.deepcopy(cfg))
        base = simulate(rc).iteration_time_s
        gpu = rc.cluster.gpu
        for label, change in (
                ("nic", {"nic_gbit_s_per_gpu": rc.cluster.nic_bw_Bps * 8 / 1e9 * 2}),
                ("nvlink", {"nvlink_gbyte_s": (rc.cluster.intra_node_bw_Bps
                                               or gpu.nvlink_bw_Bps) / 1e9 * 2}),
                ("hbm", {"gpu_overrides": {"hbm_gbyte_s": gpu.hbm_bw_Bps / 1e9 * 2}}),
                ("flops", {"gpu_overrides": {"peak_tflops": {
                    k: v * 2 / 1e12 for k, v in gpu.peak_flops.items()}}})):
            faster = copy.deepcopy(cfg)
            faster["cluster"].update(change)
            t = simulate(run_config_from_dict(faster)).iteration_time_s
            if not (math.isfinite(t) and t <= base * (1 + 1e-9)):
                what = "peak FLOP/s" if label == "flops" else f"{label} bandwidth"
                return f"twice the {what} slower: {t / base:.6f}x"
        return None

    for _ in range(n):
        cfg = _draw_combo(rng)
        yield f"mono {cfg}", lambda c=cfg: one(c)


# ------------------------------------------------------------------------------ driver

SURFACES = ("stdio", "empty", "names", "hf", "hftypes", "executor", "service", "frameworks",
            "csv", "mono")


def cases(only: set[str], rng: random.Random, n: int, long: bool) -> Iterator[Case]:
    table = {"stdio": stdio_cases, "empty": empty_cases, "names": names_cases, "hf": hf_cases,
             "hftypes": lambda: hftypes_cases(rng, 10_000 if long else n // 4),
             "executor": executor_cases, "service": service_cases,
             "frameworks": lambda: framework_cases(rng), "csv": lambda: csv_cases(rng, n // 2),
             "mono": lambda: mono_cases(rng, n)}
    yield from chosen_cases(table, only, SURFACES)


def main(argv: list[str] | None = None) -> int:
    ap = sweep_parser(__doc__, SURFACES, 300, "drawn mono runs, csv cells x 2, hftypes x 4")
    ap.add_argument("--long", action="store_true", help="every transformers model type, "
                    "--n 2000")
    args = ap.parse_args(argv)
    only = only_of(args)
    n = max(args.n, 2000) if args.long else args.n
    start = time.perf_counter()
    failures, counts = run_cases(cases(only, random.Random(args.seed), n, args.long), surface_class)
    return report_timed(failures, counts, time.perf_counter() - start)


if __name__ == "__main__":
    sys.exit(main())
