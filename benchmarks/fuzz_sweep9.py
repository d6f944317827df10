"""Ninth input sweep (22nd session, fuzz9): the fields of the last two sessions in combination,
YAML documents a user would not mean, odd Hugging Face config.json of the newest families,
validation files whose rows each break one column, the HTTP API with odd bodies, and
search/plan/sweep with contradicting or extreme options.

- ``combos``: drawn runs crossing HSDP (``dp_replicate`` and its aliases), CUDA graph scopes,
  ``sdpa_enable_gqa``, ``softmax_fp32_saved`` (through the framework profile), an empty
  ``zero_stage``, ``ddp_bucket_size``, layouts, ``recompute_modules``, fp8 on GPUs without fp8,
  with pp/vpp/cp/ep/etp, MoE/MLA/window/soft-capped models and every framework profile. The
  oracle: one error line, or a finite result whose breakdown sums to the iteration time, whose
  memory is finite and positive, and that is the same to the bit when simulated again.
- ``yaml``: anchors, merge keys, duplicate keys, tags, 1e309/nan/inf, huge ints, YAML 1.1
  booleans, nested nulls, unicode keys; ``--set`` with dotted paths into lists, unknown
  sections.
- ``hf``: config.json of Llama 4, Qwen2.5-VL, Cohere, Falcon, NeoX/GPT-J/Phi/CodeGen, MPT, DBRX,
  GLM-4.5-MoE and BitNet with one field missing, null, zero, negative, text, a list or huge.
- ``rows``: a validation file whose rows each break one column (format v2): every broken row is
  reported failed with a reason and every other row still predicts as it does alone.
- ``service``: the HTTP API (TestClient) with odd JSON bodies and large inputs.
- ``search``: search/plan/sweep with ``--fix``/``--set``/``--vary`` contradictions, 1 GPU, GPU
  counts that do not tile nodes, 1M GPUs (bounded time).

    python benchmarks/fuzz_sweep9.py [--seed 0] [--n 1500] [--only combos,hf,yaml,rows,service,search]

``--n`` bounds the drawn combos runs and junk config.json fields (and ``--n`` / 150 row files);
the default takes about a minute. Prints each failure class with its first inputs and the counts;
exit 1 on any failure.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import math
import os
import random
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_checks import (
    Case,
    chosen_cases,
    only_of,
    report_sweep,
    sane_result,
    surface_class,
    sweep_parser,
)
from fuzz_sweep import _cli
from fuzz_sweep6 import _write_text, run_cases

from trainsim.catalog import run_config_from_dict
from trainsim.simulator import simulate

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(ROOT / "examples" / "llama3-8b-h100.yaml")
FRAMEWORKS = sorted(p.stem for p in (ROOT / "src" / "trainsim" / "catalog" / "frameworks")
                    .glob("*.yaml"))
BALANCE_TOL = 1e-9
"""Relative tolerance of the breakdown's sum against the iteration time (float rounding)."""


# ------------------------------------------------------------------------------ combos

MODELS = ["llama3.2-1b", "qwen3-0.6b", "gemma-2-2b", "gemma-3-1b", "mixtral-8x7b",
          "deepseek-v2-lite", "gpt-oss-20b", "olmoe-1b-7b", "qwen3-30b-a3b", "mpt-1b",
          "falcon-7b", "pythia-1b", "phi-3-mini", "moonlight-16b-a3b"]
GPUS = ["h100", "a100-sxm-80gb", "v100-sxm-32gb", "b200-sxm-180gb", "mi300x", "l40s-pcie-48gb",
        "h20-sxm-96gb", "gb200"]


def balanced(result) -> str | None:
    """A result's invariants beyond ``sane_result``: the breakdown sums to the iteration time,
    memory is finite and not negative in every part."""
    bad = sane_result(result)
    if bad:
        return f"insane result: {bad}"
    total = sum(result.breakdown.values())
    t = result.iteration_time_s
    if not math.isclose(total, t, rel_tol=BALANCE_TOL, abs_tol=1e-12):
        return f"unbalanced: breakdown sums to {total!r}, iteration {t!r}"
    parts = sum(result.exposed_comm.values())
    if not math.isclose(parts, result.breakdown.get("exposed_comm_s", 0.0), rel_tol=1e-6,
                        abs_tol=1e-12):
        return f"unbalanced: exposed_comm groups sum to {parts!r}"
    for rank in result.memory:
        for k in ("weights", "gradients", "optimizer", "activations", "buffers", "context",
                  "cached"):
            v = getattr(rank, k)
            if not (math.isfinite(v) and v >= 0):
                return f"memory {k}={v!r}"
    return None


def simulate_twice(cfg: dict) -> str | None:
    """Simulate ``cfg`` (a raw config mapping) twice: a sane, balanced, repeatable result, or a
    clean refusal (raised)."""
    rc = run_config_from_dict(copy.deepcopy(cfg))
    first = simulate(rc)
    bad = balanced(first)
    if bad:
        return bad
    again = simulate(run_config_from_dict(copy.deepcopy(cfg)))
    if (again.iteration_time_s, again.peak_memory_bytes) != \
            (first.iteration_time_s, first.peak_memory_bytes):
        return "not deterministic"
    return None


MOE = {"mixtral-8x7b", "deepseek-v2-lite", "gpt-oss-20b", "olmoe-1b-7b", "qwen3-30b-a3b",
       "moonlight-16b-a3b"}


def _layout(rng: random.Random, model: str, stages: int) -> str:
    """A Megatron-core layout string putting the model's layers on ``stages`` virtual stages
    at random (a stage may hold none), the embedding first and the loss last."""
    from trainsim.catalog import model as preset
    layers = preset(model).num_layers
    cuts = sorted(rng.randint(0, layers) for _ in range(stages - 1))
    counts = [b - a for a, b in zip([0, *cuts], [*cuts, layers])]
    parts = [("t*" + str(c)) if c > 1 else "t" * c for c in counts]
    parts[0], parts[-1] = "E" + parts[0], parts[-1] + "L"
    return "|".join(parts)


def _draw_combo(rng: random.Random) -> dict:
    """A run drawn to be valid most of the time (sizes that tile the GPUs, expert parallelism
    on MoE models only), with the newest fields set at random."""
    model = rng.choice(MODELS)
    par: dict[str, Any] = {"tp": rng.choice([1, 1, 2, 4]), "pp": rng.choice([1, 1, 2, 4]),
                           "cp": rng.choice([1, 1, 1, 2])}
    dp = rng.choice([1, 2, 4, 8])
    if par["pp"] > 1 and rng.random() < 0.4:
        par["vpp"] = 2
    if model in MOE:
        par["ep"] = rng.choice([1, 2, 4, 8])
        if rng.random() < 0.3:
            par["etp"] = rng.choice([1, par["tp"]])
        while par["ep"] > dp * par["cp"] * par["tp"] and par["ep"] > 1:
            par["ep"] //= 2
    gpus = par["tp"] * par["pp"] * par["cp"] * dp
    tr: dict[str, Any] = {"global_batch_size": dp * rng.choice([8, 16, 32]),
                          "micro_batch_size": rng.choice([1, 1, 2]),
                          "seq_length": rng.choice([512, 2048, 4096])}
    if rng.random() < 0.35:
        par[rng.choice(["dp_replicate", "num_distributed_optimizer_instances",
                        "data_parallel_replicate_degree"])] = rng.choice([1, 2, 4])
        par["zero_stage"] = rng.choice([1, 2, 3])
    elif rng.random() < 0.4:
        par["zero_stage"] = rng.choice([0, 1, 2, 3])
    if rng.random() < 0.3:
        par["ddp_bucket_size"] = rng.choice([1, 1000, 40_000_000, 10**12])
    if rng.random() < 0.3:
        par["recompute"] = rng.choice(["none", "selective", "full"])
        if par["recompute"] == "selective" and rng.random() < 0.7:
            par["recompute_modules"] = rng.sample(
                ["core_attn", "layernorm", "mla_up_proj", "mlp", "moe_act", "moe",
                 "shared_experts"], rng.randint(0, 3))
    if par["pp"] > 1 and rng.random() < 0.4:
        par["pipeline_model_parallel_layout"] = rng.choice(
            ["balanced", "front_loaded", "first:1,last:1", "first:3", "last:2",
             _layout(rng, model, par["pp"] * par.get("vpp", 1))])
    if par["tp"] > 1 and rng.random() < 0.5:
        par["sequence_parallel"] = rng.choice([True, False])
    if rng.random() < 0.3:
        tr["cuda_graphs"] = True
        tr["cuda_graph_scope"] = rng.choice(
            ["full", "full_iteration", "attn", "mlp", "moe", "moe_router", "attn,moe_router",
             "moe_router,moe_preprocess", "", []])
    tr["framework"] = rng.choice(FRAMEWORKS)
    if rng.random() < 0.25 and tr["framework"] in ("pytorch", "torchtitan"):
        tr["sdpa_enable_gqa"] = rng.choice([True, False])
    if rng.random() < 0.3:
        tr["dtype"] = rng.choice(["bf16", "fp16", "fp8", "fp32"])
    if rng.random() < 0.15:
        tr["compile"] = rng.choice([True, False])
    if rng.random() < 0.15:
        tr["attention"] = rng.choice(["flash2", "flash3", "sdpa", "eager", "cudnn", "unfused"])
    gpu = rng.choice(GPUS)
    cluster: dict[str, Any] = {"gpu": gpu, "num_gpus": gpus}
    if gpu == "gb200":
        cluster["gpus_per_node"] = 4 if gpus % 4 == 0 else gpus
    elif gpus < 8:
        cluster["gpus_per_node"] = gpus
    return {"model": model, "parallel": par, "training": tr, "cluster": cluster}


def combo_cases(rng: random.Random, n: int) -> Iterator[Case]:
    for _ in range(n):
        cfg = _draw_combo(rng)
        yield f"combos {cfg}", lambda cfg=cfg: simulate_twice(cfg)


# ------------------------------------------------------------------------------ hf

HF_FAMILIES = ["llama4", "llama4_text", "qwen2_5_vl", "cohere", "cohere2", "falcon", "gpt_neox",
               "gptj", "phi", "codegen", "mpt", "dbrx", "glm4_moe", "bitnet", "gemma2",
               "gemma3_text", "deepseek_v2", "mixtral"]
"""transformers model types of the families the last two sessions read (and two MoE ones)."""
JUNK = [[], {}, "abc", -1, [1], {"a": 1}]
"""Values no config.json field means: refused, or (a field trainsim does not read) no change."""


def _hf_paths(cfg: dict, depth: int = 1) -> Iterator[tuple[str, ...]]:
    for key, value in cfg.items():
        yield (key,)
        if isinstance(value, dict) and depth:
            yield from ((key, *rest) for rest in _hf_paths(value, depth - 1))


def hf_cases(rng: random.Random, n: int) -> Iterator[Case]:
    """Each field (and each field of a sub-mapping) of transformers' default config.json of each
    family set to a junk value: one error line, or the same parameter count as the file as
    written (the field is not read). Needs transformers (skipped without it)."""
    try:
        from transformers import AutoConfig
    except ImportError:
        return
    from trainsim.catalog import model_from_hf_config
    from trainsim.model.counts import total_params

    def count(cfg: dict, name: str) -> int:
        return total_params(model_from_hf_config(_write_text(json.dumps(cfg), name)))

    def one(base: dict, ref: int, t: str, path: tuple[str, ...], value: Any) -> str | None:
        cfg = copy.deepcopy(base)
        leaf = cfg
        for key in path[:-1]:
            leaf = leaf[key]
        leaf[path[-1]] = value
        got = count(cfg, f"hf9-{t}.json")  # a TrainsimError is a clean refusal
        if got != ref and not (path[-1] == "model_type" and isinstance(value, str)) \
                and not (t == "mpt" and path == ("attn_config",) and value == {}):
            # (an unknown model_type, a composite's text_config's too, is read as a generic
            # decoder, by design; an MPT attn_config of no keys is llm-foundry's defaults,
            # learned positions, where transformers' MptAttentionConfig defaults to ALiBi:
            # hf_mpt.mpt_names reads llm-foundry's, as for a file with no attn_config)
            return f"silently changed: {t} {'.'.join(path)}={value!r} read as {got:,} " \
                   f"parameters, {got / ref - 1:+.2%}"
        return None

    drawn = []
    for t in HF_FAMILIES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                base = json.loads(json.dumps(AutoConfig.for_model(t).to_dict()))
                ref = count(base, f"hf9-{t}.json")
            except Exception:  # noqa: BLE001, S112 - not in this transformers or not read: no base
                continue
        drawn += [(base, ref, t, path, v) for path in _hf_paths(base) for v in JUNK]
    for base, ref, t, path, v in rng.sample(drawn, min(n, len(drawn))):
        yield f"hf {t} {'.'.join(path)}={v!r}", \
            lambda a=(base, ref, t, path, v): one(*a)


# ------------------------------------------------------------------------------ yaml

BASE_MODEL, BASE_CLUSTER = "model: llama3.2-1b\n", "cluster: {gpu: h100, num_gpus: 8}\n"
TINY = "model: {name: x, num_layers: 2, hidden_size: 64, num_attention_heads: 4, vocab_size: 100, "
YAML_DOCS = [
    "training: {seq_length: 1e309}", "training: {seq_length: .nan}",
    "training: {train_tokens: .inf}", "training: {global_batch_size: 1" + "0" * 40 + "}",
    "training: !!python/object:os.system {a: 1}", "training: !!binary aGVsbG8=",
    "training: {seq_length: 2048, seq_length: 4096}", "parallel: {sequence_parallel: 'on'}",
    "parallel: {tp: null}", "parallel: null", "parallel: {tp: {a: null}}", "ünïcode: 1",
    "parallel: {tp²: 2}", "x-d: &d {tp: 2}\nparallel: *d", "parallel: {<<: {tp: 2}}",
    "parallel: {tp: 2, tensor_model_parallel_size: 4}",
    "parallel: {zero_stage: 3, dp_replicate: 2, num_distributed_optimizer_instances: 2}",
    "parallel: {zero_stage: 3, dp_replicate: '2'}", "parallel: {zero_stage: 3, dp_replicate: 2.5}",
    "parallel: {zero_stage: 3, dp_replicate: 0}", "parallel: {zero_stage: 3, dp_replicate: -2}",
    "parallel: {zero_stage: 3, dp_replicate: [2]}", "parallel: {zero_stage: 3, dp_replicate: 16}",
    "parallel: {recompute: selective, recompute_modules: mlp}",
    "parallel: {recompute: selective, recompute_modules: [mlp, mlp]}",
    "parallel: {recompute: selective, recompute_modules: 'mlp, core_attn'}",
    "parallel: {recompute: selective, recompute_modules: [' MLP', Core_Attn]}",
    "parallel: {recompute: selective, recompute_modules: [[mlp]]}",
    "parallel: {recompute: selective, recompute_modules: [null]}",
    "parallel: {recompute: selective, recompute_modules: {mlp: 1}}",
    "parallel: {pp: 2, pipeline_model_parallel_layout: ''}",
    "parallel: {pp: 2, pipeline_model_parallel_layout: '|'}",
    "parallel: {pp: 2, pipeline_model_parallel_layout: 'Et*8|t*8L'}",
    "parallel: {pp: 2, pipeline_model_parallel_layout: 'Et*8|t*8L' , vpp: 2}",
    "parallel: {pp: 2, pipeline_model_parallel_layout: '(t|)*99999999999'}",
    "parallel: {pp: 2, pipeline_model_parallel_layout: 7}",
    "parallel: {pp: 2, pipeline_model_parallel_layout: [Et*8, t*8L]}",
    "parallel: {ddp_bucket_size: 0}", "parallel: {ddp_bucket_size: 1.5}",
    "parallel: {ddp_bucket_size: 1e300}", "parallel: {ddp_bucket_size: '40M'}",
    "parallel: {zero_stage: ''}", "parallel: {zero_stage: null}",
    "training: {cuda_graphs: true, cuda_graph_scope: [attn, attn]}",
    "training: {cuda_graphs: true, cuda_graph_scope: 'attn,,mlp'}",
    "training: {cuda_graphs: true, cuda_graph_scope: [[attn]]}",
    "training: {cuda_graphs: true, cuda_graph_scope: {attn: 1}}",
    "training: {cuda_graphs: true, cuda_graph_scope: 5}",
    "training: {framework: pytorch, sdpa_enable_gqa: 'yes'}",
    "training: {framework: pytorch, sdpa_enable_gqa: 2}",
    "training: {framework: pytorch, sdpa_enable_gqa: []}",
    TINY + "sliding_window: 0}",
    TINY + "sliding_window: 100000000}",
    TINY + "attn_logit_softcapping: 0}",
    TINY + "attn_logit_softcapping: .inf}",
    TINY + "attn_logit_softcapping: -1}",
    TINY + "embedding_norm: 'maybe'}",
    TINY + "post_sublayer_norm: true, parallel_block: true}",
    TINY + "sliding_window: 16, window_attn_skip_freq: 0}",
    "training: {dtype: fp8}\ncluster: {gpu: a100-sxm-80gb, num_gpus: 8}",
    "training: {dtype: fp8}\ncluster: {gpu: v100-sxm-32gb, num_gpus: 8}",
    "training: {dtype: fp8}\ncluster: {gpu: mi250x-gcd, num_gpus: 8}",
]
"""Documents, each completed by ``BASE_MODEL`` / ``BASE_CLUSTER`` where it has no such section
and read by ``simulate``: one error line, or a finite result."""
SETS = [["parallel.recompute_modules.0=mlp"], ["parallel.tp.x=1"], ["foo.bar=1"],
        ["model.layers.0=1"], ["training=1"], ["parallel.dp_replicate=2",
                                                "parallel.zero_stage=3"],
        ["parallel.dp_replicate=2", "parallel.num_distributed_optimizer_instances=4"],
        ["training.cuda_graph_scope=attn"], ["parallel.recompute_modules=[mlp]"],
        ["parallel.pipeline_model_parallel_layout=Et|tL"], ["ünï.x=1"], ["parallel.=1"],
        ["parallel..tp=1"], [".tp=1"], ["parallel.tp=" + "9" * 5000]]
"""``--set`` lists given to ``simulate`` of the example config."""


def yaml_cases() -> Iterator[Case]:
    for i, doc in enumerate(YAML_DOCS):
        text = ("" if doc.startswith("model:") else BASE_MODEL) + \
            ("" if "cluster:" in doc else BASE_CLUSTER) + doc + "\n"
        path = str(_write_text(text, f"yaml9-{i}.yaml"))
        yield f"yaml {doc!r}", lambda p=path: _cli(["simulate", p, "--format", "json"])
    for sets in SETS:
        args = ["simulate", EXAMPLE, "--format", "json"]
        for s in sets:
            args += ["--set", s]
        yield f"yaml --set {sets}", lambda a=args: _cli(a)


# ------------------------------------------------------------------------------ rows

PUBLIC = ROOT / "src" / "trainsim" / "data" / "validation" / "training_public.csv"
BREAKS = ["abc", "-1", "0", "nan", "inf", "1e400", "", "2.5", "\uff18", "[1]", "\x1b[31m",
          "9" * 30, "none", "1;2", " "]
"""What a broken cell holds (any column, ``id`` too)."""


def _validate_json(rows: list[dict[str, str]], columns: list[str], name: str) -> dict:
    from click.testing import CliRunner

    from trainsim.cli import main
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    path = str(_write_text(buf.getvalue(), name))
    result = CliRunner().invoke(main, ["validate", path, "--format", "json"])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    if result.exit_code != 0:
        raise AssertionError(f"exit {result.exit_code}: {result.output[-300:]}")
    return json.loads(result.stdout)


def row_cases(rng: random.Random, n: int) -> Iterator[Case]:
    """Files of 4 published rows, 1-2 of them with one cell broken: every row is reported
    (failed with a one-line reason, or predicted finitely), the failed count is the rows with
    an error, and each unbroken row predicts exactly as in the file without the broken cells."""
    with PUBLIC.open(encoding="utf-8") as f:
        reader = csv.DictReader(f)
        columns, published = list(reader.fieldnames or []), list(reader)
    clean_cache: dict[tuple[int, ...], dict] = {}
    # a bad measured value refuses the whole file in one line (the errors are relative to it;
    # tests/test_fuzz_validate.py): not a row's failure
    breakable = [c for c in columns if c not in ("measured_iteration_s", "measured_peak_memory_gib")]

    def one(picks: tuple[int, ...], broken: dict[int, tuple[str, str]]) -> str | None:
        rows = [dict(published[i]) for i in picks]
        if picks not in clean_cache:
            clean_cache[picks] = _validate_json(rows, columns, "rows9-clean.csv")
        clean = {r["id"]: r["predicted"] for r in clean_cache[picks]["rows"]}
        for j, (col, value) in broken.items():
            rows[j][col] = value
        out = _validate_json(rows, columns, "rows9.csv")
        if len(out["rows"]) != len(rows):
            return f"rows lost: {len(out['rows'])} of {len(rows)} reported"
        errors = 0
        for j, got in enumerate(out["rows"]):
            if got.get("error"):
                errors += 1
                if "\n" in got["error"] or "internal error" in got["error"].lower():
                    return f"unclear row error: {got['error'][:80]!r}"
                if j not in broken:
                    return f"an unbroken row failed: {got['error'][:80]!r}"
            elif j not in broken and got["predicted"] != clean[rows[j]["id"]]:
                return f"an unbroken row changed: {clean[rows[j]['id']]} -> {got['predicted']}"
            elif not math.isfinite(got["predicted"]) or got["predicted"] <= 0:
                return f"prediction {got['predicted']!r}"
        if out["summary"]["failed"] != errors:
            return f"summary failed {out['summary']['failed']}, rows with an error {errors}"
        return None

    for _ in range(n):
        picks = tuple(rng.sample(range(len(published)), 4))
        broken = {j: (rng.choice(breakable), rng.choice(BREAKS))
                  for j in rng.sample(range(4), rng.randint(1, 2))}
        label = "; ".join(f"{published[picks[j]]['id']}.{c}={v!r}" for j, (c, v) in broken.items())
        yield f"rows {label}", lambda p=picks, b=broken: one(p, b)


# ------------------------------------------------------------------------------ service

def _bodies() -> dict[str, bytes]:
    """Raw request bodies: JSON a strict parser refuses, values past the limits, shapes that
    are not a job."""
    import yaml
    cfg = json.dumps(yaml.safe_load(Path(EXAMPLE).read_text()))

    def job(config: str, extra: str = "") -> bytes:
        return ('{"kind": "simulate", "config": ' + config + extra + "}").encode()

    def seq(text: str) -> bytes:
        return job(cfg.replace('"seq_length": 8192', f'"seq_length": {text}'))

    return {
        "NaN": seq("NaN"), "Infinity": seq("Infinity"), "1e400": seq("1e400"),
        "5000 digits": seq("9" * 5000), "4000 digits": seq("9" * 4000), "-0": seq("-0"),
        "deep list": job("[" * 100_000 + "]" * 100_000),
        "deep mapping": job('{"a":' * 5000 + "1" + "}" * 5000),
        "two kinds": ('{"kind": "simulate", "kind": "search", "config": ' + cfg + "}").encode(),
        "a list": b"[1, 2]", "text": b'"x"', "null": b"null", "empty": b"", "a number": b"3",
        "not UTF-8": b'{"kind": "simulate", "config": "\xff"}',
        "UTF-16": job(cfg).decode().encode("utf-16"), "BOM": b"\xef\xbb\xbf" + job(cfg),
        "unicode key": job('{"\u00fcn\u00ef": 1}'), "NUL": b'{"kind": "simulate\\u0000"}',
        "lone surrogate": job('{"model": "\\ud800"}'),
        "50,000 sets": job(cfg, ', "options": {"set": [' + ",".join(['"parallel.tp=2"'] * 50_000)
                           + "]}"),
        "2 MB": job(cfg, ', "options": {"x": "' + "a" * 2_000_000 + '"}'),
        "framework_version 0.10": job(cfg.replace('"dtype": "bf16"', '"dtype": "bf16", '
                                                  '"framework": "megatron-core", '
                                                  '"framework_version": 0.10')),
    }


def service_cases() -> Iterator[Case]:
    """Each body posted to /jobs and /simulate (TestClient, no workers): queued (202), timed
    out (504: no worker), or refused with a 4xx whose JSON names one field in one line."""
    try:
        from fastapi.testclient import TestClient

        from trainsim.service import Settings, create_app
    except ImportError:
        return
    db = _write_text("", "service9.db")
    db.unlink()
    app = create_app(Settings(db_url=f"sqlite:///{db}", workers=0, checkers=0).with_limits(
        max_active_jobs=10**6, sync_timeout_s=0.05), start_workers=False)
    client = TestClient(app, raise_server_exceptions=False)
    auth = {"Authorization": f"Bearer {app.state.store.create_token('fuzz9')}",
            "Content-Type": "application/json"}

    def one(path: str, body: bytes) -> str | None:
        r = client.post(path, content=body, headers=auth)
        if r.status_code in (200, 202, 504):
            return None
        if not 400 <= r.status_code < 500:
            return f"status {r.status_code}"
        err = r.json()
        if set(err) != {"error", "field"} or not err["error"] or "\n" in err["error"]:
            return f"error body {str(err)[:80]}"
        return None

    for name, body in _bodies().items():
        for path in ("/api/v1/jobs", "/api/v1/simulate"):
            yield f"service {path.rsplit('/', 1)[1]} {name}", \
                lambda p=path, b=body: one(p, b)


# ------------------------------------------------------------------------------ search

SEARCH = "llama3.2-1b"
SEARCH_RUNS = [
    ["--gpus", "1", "--global-batch", "8"], ["--gpus", "12", "--global-batch", "12"],
    ["--gpus", "12", "--gpus-per-node", "4", "--global-batch", "12"],
    ["--gpus", "1048576", "--global-batch", "1048576"],
    ["--gpus", "8", "--global-batch", "8", "--tp", "4", "--set", "parallel.tp=2"],
    ["--gpus", "8", "--global-batch", "8", "--set", "parallel.dp_replicate=2"],
    ["--gpus", "8", "--global-batch", "8", "--set", "parallel.dp_replicate=2", "--zero", "3"],
    ["--gpus", "8", "--global-batch", "8", "--set", "training.cuda_graph_scope=attn"],
    ["--gpus", "8", "--global-batch", "8", "--set", "training.cuda_graphs=true",
     "--set", "training.cuda_graph_scope=full_iteration"],
    ["--gpus", "8", "--global-batch", "8", "--set",
     "parallel.pipeline_model_parallel_layout=balanced"],
    ["--gpus", "8", "--global-batch", "8", "--set", "parallel.recompute=selective",
     "--recompute", "full"],
    ["--gpus", "8", "--global-batch", "8", "--set", "training.framework=pytorch",
     "--set", "training.sdpa_enable_gqa=true"],
    ["--gpus", "8", "--global-batch", "8", "--ep", "2"],
    ["--gpus", "8", "--global-batch", "8", "--set", "parallel.ddp_bucket_size=1"],
    ["--gpus", "8", "--global-batch", "8", "--dtype", "fp8", "--gpu", "a100-sxm-80gb"],
]
"""``search`` command lines (model, ``--seq 2048 --workers 1`` added)."""
SWEEP_RUNS = [["--vary", "parallel.tp=1,2", "--vary", "parallel.tensor_model_parallel_size=4,8"],
              ["--vary", "parallel.tp=1,2", "--set", "parallel.tp=4"],
              ["--vary", "parallel.dp_replicate=1,2",
               "--vary", "parallel.num_distributed_optimizer_instances=1,2"],
              ["--vary", "parallel.dp_replicate=1,2,3", "--set", "parallel.zero_stage=3"],
              ["--vary", "parallel.recompute_modules=mlp,core_attn"],
              ["--vary", "training.cuda_graph_scope=attn,mlp,full_iteration",
               "--set", "training.cuda_graphs=true"],
              ["--vary", "cluster.num_gpus=8,12,1048576"],
              ["--vary", "parallel.pipeline_model_parallel_layout=balanced,Et*16|t*16L",
               "--set", "parallel.pp=2"]]
"""``sweep`` command lines over the example config."""
PLAN_RUNS = [["--max-gpus", "1"], ["--max-gpus", "12"], ["--max-gpus", "1048576", "--days", "1"],
             ["--days", "1e-9"], ["--set", "parallel.dp_replicate=2"],
             ["--set", "parallel.dp_replicate=2", "--zero", "3"]]


def search_cases() -> Iterator[Case]:
    for extra in SEARCH_RUNS:
        args = ["search", SEARCH, "--seq", "2048", "--workers", "1", *extra]
        yield f"search {' '.join(extra)}", lambda a=args: _cli(a)
    for extra in SWEEP_RUNS:
        yield f"search sweep {' '.join(extra)}", \
            lambda a=["sweep", EXAMPLE, "--format", "json", *extra]: _cli(a)
    for extra in PLAN_RUNS:
        args = ["plan", SEARCH, "--tokens", "1e9", "--seq", "2048", "--global-batch", "8",
                "--workers", "1", *extra]
        yield f"search plan {' '.join(extra)}", lambda a=args: _cli(a)


# ------------------------------------------------------------------------------ driver

SURFACES = ("combos", "hf", "yaml", "rows", "service", "search")


def cases(only: set[str], rng: random.Random, n: int) -> Iterator[Case]:
    table = {"combos": lambda: combo_cases(rng, n), "hf": lambda: hf_cases(rng, n),
             "yaml": yaml_cases, "rows": lambda: row_cases(rng, max(1, n // 150)),
             "service": service_cases, "search": search_cases}
    yield from chosen_cases(table, only, SURFACES)


def main(argv: list[str] | None = None) -> int:
    ap = sweep_parser(__doc__, SURFACES, 1500, "drawn combos runs and hf fields")
    args = ap.parse_args(argv)
    only = only_of(args)
    failures, counts = run_cases(cases(only, random.Random(args.seed), args.n), surface_class)
    return report_sweep(failures, counts)


if __name__ == "__main__":
    sys.exit(main())
