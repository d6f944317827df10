"""Input robustness, 2026-11-28 (53rd session, robust53): six surfaces no round had fuzzed.

- ``bf16layers``: ``training.num_layers_at_start_in_bf16`` / ``num_layers_at_end_in_bf16`` at,
  around and past each stage's layer count (0, 1, per stage - 1, per stage, + 1, the model's
  layers, 2**31, -1, 1.0, True, "2"), with every dtype and fp8 recipe, pipeline layouts
  (pp, vpp, uneven first / last stages, balanced), over dense, MoE, MLA, hybrid and latent-MoE
  + MTP bases, on fp8 and fp4 GPUs. Oracle: a sane result or one line; a 16-bit run's
  iteration does not read the counts (the field says "Used only when dtype is fp8");
- ``recipes``: every ``dtype`` x ``fp8_recipe`` x catalog GPU x framework x
  ``fp8_param_gather``. Oracle: a sane result or one line; a 16-bit run prices the same
  iteration whatever recipe it states;
- ``framenames``: ``training.framework`` / ``framework_version`` near the catalog's names
  (case, whitespace, '_' for '-', a zero-width space, full-width letters, empty, 500
  characters, YAML words) in a config and through ``simulate --set``. Oracle: one line, or the
  same run as the catalog's spelling where the name is that one respelt;
- ``money``: a run's days / cost / energy (``training.train_tokens``, ``cluster.
  price_per_gpu_hour``, ``pue``, a GPU price override) at their edges; ``goodput`` with
  extreme ``--days``, ``--tokens``, ``--interval``; ``plan`` with extreme ``--days``,
  ``--price``, ``--pue``, ``--grid``, ``--gpu-idle-fraction``, ``--node-overhead``. Oracle:
  finite, non-negative figures that agree (cost = GPU-hours x price) or one line;
- ``exportpp``: Chakra and SimAI export round trips (fuzz51's oracle) of MoE, hybrid and
  latent-MoE + MTP runs with uneven pipeline layouts (first / last stage layers, the layout
  keywords and strings, the embedding / loss counted);
- ``v2rows``: a published training row (format v2) with two cells set to values other rows
  hold, which may contradict each other, validated beside an untouched row (fuzz52's
  ``valfiles`` oracle: the damaged row predicts finitely or fails in one line, the other row
  predicts as in the clean file).

Each input must give a sane answer or one ``TrainsimError`` line (``fuzz_checks.outcome``); a
hang is judged by CPU (30 CPU s; 300 s wall a backstop) and any input over 10 CPU s is its own
class.

    PYTHONPATH=src python benchmarks/fuzz53.py [--only bf16layers,recipes,framenames,money,
        exportpp,v2rows] [--count N] [--seed S] [--every] [--progress] [--refusals]
"""
from __future__ import annotations

import copy
import csv
import json
import math
import os
import random
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz_checks import BASES, REFUSED, Case, run_config
from fuzz_hybrid51 import HYBRID, LATENT

from trainsim.errors import TrainsimError

fuzz_checks.TIME_LIMIT_S = 300

SMALL = {"dense": BASES["dense"], "moe": BASES["moe"], "mla": BASES["mla"], "hybrid": HYBRID,
         "latent": LATENT}
FP8_GPUS = ["h100-sxm-80gb", "b200-sxm-180gb", "gb200", "b300-sxm-288gb", "mi300x", "h20-sxm-96gb"]
RECIPES = ["delayed", "current", "blockwise", "mxfp8", "nvfp4"]


def _cfg(base: str, **sections: dict[str, Any]) -> dict[str, Any]:
    cfg = copy.deepcopy(SMALL[base])
    for key, fields in sections.items():
        cfg.setdefault(key, {}).update(fields)
    return cfg


def _simulated(cfg: dict[str, Any]) -> float:
    from trainsim.catalog import run_config_from_dict
    from trainsim.simulator import simulate

    return simulate(run_config_from_dict(copy.deepcopy(cfg))).iteration_time_s


# ------------------------------------------------------------------------------ bf16layers

def _layouts(rng: random.Random, layers: int) -> dict[str, Any]:
    pp = rng.choice([1, 2, 2, 4])
    p: dict[str, Any] = {"pp": pp}
    if pp > 1:
        kind = rng.choice(["even", "vpp", "first", "last", "balanced", "account"])
        if kind == "vpp" and layers % (2 * pp) == 0:
            p["vpp"] = 2
        elif kind == "first":
            p["decoder_first_pipeline_num_layers"] = rng.choice([1, layers // pp - 1 or 1])
        elif kind == "last":
            p["decoder_last_pipeline_num_layers"] = rng.choice([1, layers // pp + 1])
        elif kind == "balanced":
            p["pipeline_model_parallel_layout"] = "balanced"
        elif kind == "account":
            p["account_for_embedding_in_pipeline_split"] = True
            p["account_for_loss_in_pipeline_split"] = rng.random() < 0.5
    return p


def _bf16_check(cfg: dict[str, Any]) -> str | None:
    bad = run_config(cfg)
    if bad:
        return bad
    t = cfg["training"]
    if t.get("dtype") != "fp8" and (t.get("num_layers_at_start_in_bf16") or
                                     t.get("num_layers_at_end_in_bf16")):
        plain = copy.deepcopy(cfg)
        plain["training"].pop("num_layers_at_start_in_bf16", None)
        plain["training"].pop("num_layers_at_end_in_bf16", None)
        a, b = _simulated(cfg), _simulated(plain)
        if a != b:
            return f"a {t.get('dtype')} run reads the bf16 layer counts: {a!r} vs {b!r}"
    return None


def bf16layers_cases(rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        names = list(SMALL)
        for i in range(900):
            base = names[i % len(names)]
            cfg = _cfg(base)
            layers = cfg["model"]["num_layers"]
            par = {**cfg["parallel"], **_layouts(rng, layers)}
            if par.get("pp", 1) > 1 and base in ("moe", "mla"):
                par["pp"] = 2
            per = layers // par.get("pp", 1)
            values = [0, 1, per - 1, per, per + 1, layers, 2**31, -1, 1.0, True, "2"]
            t = {"dtype": rng.choice(["fp8", "fp8", "fp8", "bf16", "fp16"]),
                 "fp8_recipe": rng.choice(RECIPES),
                 "num_layers_at_start_in_bf16": rng.choice(values),
                 "num_layers_at_end_in_bf16": rng.choice(values)}
            if base == "mla":
                t["framework"] = "megatron-core"
            gpu = rng.choice(FP8_GPUS)
            cfg = _cfg(base, training=t, cluster={"gpu": gpu})
            cfg["parallel"] = par
            if cfg["model"].get("hybrid_layer_pattern") is None and par.get("vpp"):
                cfg["parallel"]["pipeline_schedule"] = "interleaved_1f1b"
            label = f"{base} {gpu} " + json.dumps({"parallel": par, "training": t})
            yield label, (lambda c=cfg: _bf16_check(c))
    return cases


# ------------------------------------------------------------------------------ recipes

def _recipe_check(cfg: dict[str, Any]) -> str | None:
    bad = run_config(cfg)
    if bad:
        return bad
    if cfg["training"]["dtype"] != "fp8":
        plain = copy.deepcopy(cfg)
        del plain["training"]["fp8_recipe"]
        a, b = _simulated(cfg), _simulated(plain)
        if a != b:
            return f"a {cfg['training']['dtype']} run prices its fp8_recipe: {a!r} vs {b!r}"
    return None


def recipes_cases() -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        from trainsim.catalog import names

        gpus = names("gpus")
        for gpu in gpus:
            for dtype in ("fp8", "bf16", "fp16"):
                for recipe in RECIPES:
                    for fw in (None, "megatron-core", "torchtitan", "deepspeed"):
                        for base in ("dense", "moe"):
                            t = {"dtype": dtype, "fp8_recipe": recipe,
                                 "fp8_param_gather": fw == "megatron-core"}
                            if fw:
                                t["framework"] = fw
                            cfg = _cfg(base, training=t, cluster={"gpu": gpu})
                            yield f"{base} {gpu} {json.dumps(t)}", (
                                lambda c=cfg: _recipe_check(c))
    return cases


# ------------------------------------------------------------------------------ framenames

NAMES = ["megatron-core", "Megatron-Core", " megatron-core ", "megatron_core", "MEGATRON-LM",
         "megatron-core\u200b", "\uff4d\uff45\uff47\uff41\uff54\uff52\uff4f\uff4e", "nemo\n",
         "torchtitan\t", "TorchTitan", "deep speed", "deepspeed-0.9", "x" * 500, "", " ",
         "None", "null", "~", "unknown-fw", "\u00e9", "megatron-core/nemo", "megatron core",
         "Megatron-Bridge", "llm_foundry", "olmo core", "torch titan", "pytorch ", "FSDP"]
VERSIONS = [None, "", "latest", "24.07 ", "99.99", "0", "1e3", "\uff12\uff14.\uff10\uff17",
            "2022-03", "v0.9", "2**31", "-1", "1" * 200, "24.07\n"]


def _canonical(name: str) -> str | None:
    from trainsim.catalog.frameworks import canonical_framework, framework_names

    key = canonical_framework(name)
    return key if key in framework_names() else None


def _framename(cfg: dict[str, Any], name: str, via_cli: bool, workdir: str) -> str | None:
    from trainsim.catalog import run_config_from_dict

    if via_cli:
        from fuzz51 import _errors, _invoke

        d = Path(tempfile.mkdtemp(dir=workdir))
        plain = copy.deepcopy(cfg)
        plain["training"].pop("framework", None)
        (d / "run.json").write_text(json.dumps(plain), encoding="utf-8")
        r = _invoke(["simulate", str(d / "run.json"), "--set", f"training.framework={name}",
                     "--format", "json"])
        if r.exit_code != 0:
            lines = _errors(r)
            if len(lines) != 1:
                return f"simulate --set training.framework exit {r.exit_code}, {len(lines)} lines"
            REFUSED[0] += 1
        return None
    bad = run_config(cfg)
    if bad:
        return bad
    canon = _canonical(name)
    if canon and canon != name:
        same = copy.deepcopy(cfg)
        same["training"]["framework"] = canon
        a = run_config_from_dict(copy.deepcopy(cfg))
        b = run_config_from_dict(same)
        if a != b:
            return f"framework {name!r} reads as another run than {canon!r}"
    return None


def framenames_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for base in ("dense", "moe"):
            for i, name in enumerate(NAMES):
                for version in VERSIONS:
                    t: dict[str, Any] = {"framework": name}
                    if version is not None:
                        t["framework_version"] = version
                    cfg = _cfg(base, training=t)
                    yield f"{base} {t!r}", (lambda c=cfg, n=name: _framename(c, n, False,
                                                                             workdir))
                cfg = _cfg(base)
                yield f"{base} --set training.framework={name!r}", (
                    lambda c=cfg, n=name: _framename(c, n, True, workdir))
    return cases


# ------------------------------------------------------------------------------ money

TOKENS = ["15T", 1e30, 1e300, 8192, 8193, "1P", 2**64, 1e9]
PRICES = [None, 0, 5e-324, 1e-300, 0.5, 1e6, 1e6 + 1, -1, math.inf]
PUES = [None, 1, 1.0000001, 10, 10.5, 0.99]


def _money(cfg: dict[str, Any]) -> str | None:
    from trainsim.catalog import run_config_from_dict
    from trainsim.simulator import simulate

    r = simulate(run_config_from_dict(copy.deepcopy(cfg)))
    got = r.to_dict()
    figures = dict(got.get("run") or {})
    figures["price_per_gpu_hour"] = r.config.cluster.gpu_price_per_hour
    if not fuzz_checks.finite(got):
        return "a non-finite figure in the JSON"
    if isinstance(figures, dict):
        for k, v in figures.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0:
                return f"run.{k}={v!r}"
        hours, cost, price = (figures.get(k) for k in ("gpu_hours", "cost_usd",
                                                        "price_per_gpu_hour"))
        if got.get("run") and not math.isclose(cost, hours * price,
                                                                 rel_tol=1e-9, abs_tol=1e-300):
            return f"cost {cost!r} is not GPU-hours {hours!r} x price {price!r}"
    return None


def _cli_json(args: list[str]) -> str | None:
    from fuzz51 import _errors, _invoke

    r = _invoke(args)
    if r.exit_code != 0:
        lines = _errors(r)
        if len(lines) != 1:
            return f"exit {r.exit_code} with {len(lines)} error lines"
        REFUSED[0] += 1
        return None
    try:
        got = json.loads(r.stdout)
    except ValueError:
        return "stdout is not JSON"
    if not fuzz_checks.finite(got):
        return "a non-finite figure in the JSON"
    return None


def money_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for tokens in TOKENS:
            for price in PRICES:
                for pue in PUES:
                    c: dict[str, Any] = {}
                    if price is not None:
                        c["price_per_gpu_hour"] = price
                    if pue is not None:
                        c["pue"] = pue
                    cfg = _cfg("dense", training={"train_tokens": tokens}, cluster=c)
                    yield f"simulate tokens={tokens!r} {c}", (lambda x=cfg: _money(x))
        for over in (0, 5e-324, 1e6, 1e7, -1):
            cfg = _cfg("dense", training={"train_tokens": "15T"},
                       cluster={"gpu_overrides": {"price_per_hour": over}})
            yield f"simulate gpu_overrides.price_per_hour={over!r}", (lambda x=cfg: _money(x))
        d = Path(tempfile.mkdtemp(dir=workdir))
        run = d / "run.json"
        run.write_text(json.dumps(_cfg("dense")), encoding="utf-8")
        days = ["1e-12", "1e-9", "0.001", "54", "1e4", "1e6", "1e300", "inf", "0"]
        tokens = ["1", "8192", "1e9", "15T", "1e30", "1e300", "1P"]
        intervals = [None, "0", "1e-9", "1", "30m", "1e9", "1e300", "inf"]
        for _ in range(120):
            args = ["goodput", str(run), "--trials", "3", "--format", "json"]
            if rng.random() < 0.5:
                args += ["--days", rng.choice(days)]
            else:
                args += ["--tokens", rng.choice(tokens)]
            iv = rng.choice(intervals)
            if iv is not None:
                args += ["--interval", iv]
            yield " ".join(args[2:]), (lambda a=args: _cli_json(a))
        plan = ["plan", "llama3.2-1b", "--max-gpus", "8", "--tp", "1", "--pp", "1",
                "--max-micro-batch", "1", "--recompute", "none", "--seq", "512",
                "--global-batch", "16", "--workers", "1", "--format", "json"]
        extremes = {"--days": ["1e-300", "1e-9", "65", "1e300", "1e308"],
                    "--tokens": ["1", "8192", "1e12", "1e30", "1e300"],
                    "--price": ["0", "5e-324", "1e6"], "--pue": ["1", "10"],
                    "--grid": ["0", "10000"], "--gpu-idle-fraction": ["0", "1"],
                    "--node-overhead": ["0", "10"]}
        for _ in range(50):
            args = list(plan)
            for flag, values in extremes.items():
                if flag in ("--days", "--tokens") or rng.random() < 0.4:
                    args += [flag, rng.choice(values)]
            yield " ".join(args[2:]), (lambda a=args: _cli_json(a))
    return cases


# ------------------------------------------------------------------------------ exportpp

def _uneven(rng: random.Random) -> dict[str, Any]:
    base = rng.choice(["moe", "hybrid", "latent"])
    cfg = _cfg(base)
    layers = cfg["model"]["num_layers"]
    pp = rng.choice([2, 4]) if layers >= 4 else 2
    p: dict[str, Any] = {"tp": rng.choice([1, 2]), "pp": pp}
    if p["tp"] > 1:
        p["sequence_parallel"] = True
    kind = rng.choice(["first", "last", "both", "balanced", "front_loaded", "filled", "account",
                       "string"])
    if kind in ("first", "both"):
        p["decoder_first_pipeline_num_layers"] = rng.choice([1, 2, layers - pp + 1])
    if kind in ("last", "both"):
        p["decoder_last_pipeline_num_layers"] = rng.choice([1, 2, layers - pp + 1])
    if kind in ("balanced", "front_loaded", "filled"):
        p["pipeline_model_parallel_layout"] = kind
    if kind == "account":
        p["account_for_embedding_in_pipeline_split"] = True
        p["account_for_loss_in_pipeline_split"] = rng.random() < 0.5
    if kind == "string":
        cut = rng.randrange(1, layers)
        rest = layers - cut
        p["pipeline_model_parallel_layout"] = "E" + "t" * cut + "|" + \
            "|".join(["t" * (rest // (pp - 1))] * (pp - 2) + ["t" * (rest - (rest // (pp - 1))
                                                               * (pp - 2))]) + "L"
    p["pipeline_schedule"] = rng.choice([None, "1f1b", "gpipe", "zb_h1"])
    if base in ("moe", "latent"):
        p["ep"] = rng.choice([1, 2])
    dp = rng.choice([1, 2])
    gpus = p["tp"] * pp * dp
    cfg["parallel"] = p
    cfg["training"].update(micro_batch_size=1, global_batch_size=dp * pp * rng.choice([1, 2]))
    cfg["cluster"] = dict(cfg["cluster"], num_gpus=gpus, gpus_per_node=min(gpus, 8))
    return cfg


def exportpp_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        from fuzz51 import _round_trip

        for i in range(160):
            cfg = _uneven(rng)
            label = json.dumps({"model": cfg["model"].get("hybrid_layer_pattern") or "moe",
                                "parallel": cfg["parallel"]}, sort_keys=True)
            yield label, (lambda c=cfg, k=i % 8 == 0: _round_trip(c, workdir, k))
    return cases


def _pair_check(rows: list[dict[str, str]], columns: list[str],
                workdir: str) -> Callable[[int, int, dict[str, str]], str | None]:
    """A check of row ``i`` with ``cells`` written over it, validated beside row ``j``, against
    the same pair validated clean (``fuzz52._rows_checked``); each clean pair validated once."""
    from fuzz52 import _rows_checked, _validate

    d = Path(tempfile.mkdtemp(dir=workdir))
    clean_of: dict[str, dict[str, Any]] = {}

    def write(path: Path, chosen: list[dict[str, str]]) -> None:
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=columns)
            w.writeheader()
            w.writerows(chosen)

    def one(i: int, j: int, cells: dict[str, str]) -> str | None:
        pair = [dict(rows[i]), rows[j]]
        key = f"{i}|{j}"
        if key not in clean_of:
            write(d / "clean.csv", pair)
            clean_of[key] = {r["id"]: r for r in _validate(d / "clean.csv")["rows"]}
        pair[0].update(cells)
        write(d / "damaged.csv", pair)
        return _rows_checked(_validate(d / "damaged.csv"), clean_of[key], rows[i]["id"])
    return one


# ------------------------------------------------------------------------------ v2rows

V2_COLUMNS = ["num_gpus", "gpus_per_node", "tp", "pp", "cp", "ep", "vpp", "sequence_parallel",
              "recompute", "zero_stage", "distributed_optimizer", "global_batch_size",
              "micro_batch_size", "dtype", "framework", "framework_version", "attention",
              "gpu", "num_experts", "moe_top_k", "num_kv_heads", "head_dim", "seq_length",
              "pipeline_layout", "fp8_recipe", "cp_comm_type", "moe_dispatcher",
              "recompute_num_layers", "recompute_modules", "grad_reduce_dtype", "model"]


def v2rows_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        src = Path(__file__).resolve().parent.parent / "src" / "trainsim" / "data" / \
            "validation" / "training_public.csv"
        with open(src, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        columns = list(rows[0].keys())
        pool = {c: sorted({r[c] for r in rows}) for c in V2_COLUMNS if c in columns}
        one = _pair_check(rows, columns, workdir)

        small = [k for k, r in enumerate(rows) if r["num_gpus"].isdigit()
                 and int(r["num_gpus"]) <= 512]
        for _ in range(400):
            i = rng.choice(small)
            j = rng.choice(small)
            if i == j:
                continue
            a, b = rng.sample(sorted(pool), 2)
            cells = {a: rng.choice(pool[a]), b: rng.choice(pool[b])}
            yield f"{rows[i]['id']} {cells}", (lambda i=i, j=j, c=cells: one(i, j, c))
    return cases


# ------------------------------------------------------------------------------ fallbackrows

FALLBACK_NAMES = ["levanter", "nanodo", "", " ", "\u200b", "x" * 300, "Megatron-Core ",
                  "megatron core", "\u00e9", "None", "accelerate;deepspeed", "picotron\n",
                  "\"nemo\"", "nemo,megatron"]
FALLBACK_CELLS = {"zero_stage": ["nan", "inf", "2.5", "-1", "1e400", " 3 ", "two", "", "2"],
                  "dp_replicate": ["", "2", "nan", "inf", "-3", "0", "1.5", "1e400"],
                  "options": ["enable_gqa", "enable_gqa;;", ";", "x" * 200, "ENABLE_GQA"],
                  "attention": ["sdpa", "SDPA", "", "flash9"],
                  "framework_version": ["", "x", "1e400", "2099-13", "24.07"],
                  "dtype": ["nvfp4", "fp4", "mxfp8", "fp8 (hybrid)", "bf16_with_nvfp4_mixed",
                            "fp8 (bogus)"]}
"""The cells the fallback rules read (``catalog.fallback.fallback_framework``: ZeRO stage,
HSDP replicas, SDPA by attention or option) and their neighbours, at odd values."""


def fallbackrows_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        src = Path(__file__).resolve().parent.parent / "src" / "trainsim" / "data" / \
            "validation" / "training_public.csv"
        with open(src, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        columns = list(rows[0].keys()) + ["dp_replicate"]
        for r in rows:
            r.setdefault("dp_replicate", "")
        one = _pair_check(rows, columns, workdir)

        small = [k for k, r in enumerate(rows) if r["num_gpus"].isdigit()
                 and int(r["num_gpus"]) <= 256]
        for _ in range(300):
            i, j = rng.sample(small, 2)
            cells = {"framework": rng.choice(FALLBACK_NAMES)}
            for column in rng.sample(sorted(FALLBACK_CELLS), rng.choice([1, 2])):
                cells[column] = rng.choice(FALLBACK_CELLS[column])
            yield f"{rows[i]['id']} {cells!r}"[:300], (lambda i=i, j=j, c=cells: one(i, j, c))
    return cases


# ------------------------------------------------------------------------------ chakraorder

def chakraorder_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    """Traces trainsim wrote (dense with pp 2, MoE, hybrid, latent-MoE + MTP), their nodes
    listed in another order (reversed, shuffled, rotated; one rank or every rank), or with a
    node id given twice, a node depending on itself, on a later node of a chain, on a node twice.
    Chakra's schema orders no nodes (a node names its dependencies by id). Oracle: a reordered
    trace reads back to the iteration it was written with (1e-9), never refused; a repeated id
    or a cycle is refused in one line naming the file and a node."""
    def cases() -> Iterator[Case]:
        import dataclasses

        from trainsim.catalog import run_config_from_dict
        from trainsim.interop import wire
        from trainsim.interop.chakra import export_chakra, read_chakra
        from trainsim.interop.chakra_et import encode_node, read_et

        runs = {"dense": _cfg("dense", parallel={"pp": 2}), "moe": _cfg("moe"),
                "hybrid": _cfg("hybrid", parallel={"pp": 2}), "latent": _cfg("latent")}
        made: dict[str, Any] = {}

        def trace(name: str) -> tuple[Path, list[Path], list[bytes], list[list[Any]], float]:
            if name not in made:
                d = Path(tempfile.mkdtemp(dir=workdir))
                ex = export_chakra(run_config_from_dict(copy.deepcopy(runs[name])), d / "w")
                made[name] = (d / "w", ex.paths, [p.read_bytes() for p in ex.paths],
                              [read_et(p)[1] for p in ex.paths], read_chakra(d / "w"))
            return made[name]

        def attempt(name: str, how: str, ranks: str, seed: int) -> str | None:
            prefix, paths, data, nodes, want = trace(name)
            r = random.Random(seed)
            chosen = range(len(paths)) if ranks == "every" else [r.randrange(len(paths))]
            damaged = how in ("dup", "self", "cycle")
            for k in chosen:
                ns = list(nodes[k])
                if how == "reversed":
                    ns.reverse()
                elif how == "shuffled":
                    r.shuffle(ns)
                elif how == "rotated":
                    cut = r.randrange(1, len(ns))
                    ns = ns[cut:] + ns[:cut]
                elif how == "dup":
                    ns.append(dataclasses.replace(r.choice(ns), ctrl_deps=[], data_deps=[],
                                                  id=r.choice(ns).id))
                elif how == "self":
                    i = r.randrange(len(ns))
                    ns[i] = dataclasses.replace(ns[i], ctrl_deps=[*ns[i].ctrl_deps, ns[i].id])
                elif how == "cycle":
                    later = [i for i, n in enumerate(ns) if n.ctrl_deps or n.data_deps]
                    i = r.choice(later)
                    dep = (ns[i].ctrl_deps + ns[i].data_deps)[0]
                    j = next(x for x, n in enumerate(ns) if n.id == dep)
                    ns[j] = dataclasses.replace(ns[j], ctrl_deps=[*ns[j].ctrl_deps, ns[i].id])
                elif how == "twice":
                    i = r.choice([i for i, n in enumerate(ns) if n.ctrl_deps])
                    ns[i] = dataclasses.replace(ns[i], data_deps=[*ns[i].data_deps,
                                                                  *ns[i].ctrl_deps])
                head = next(wire.read_delimited(data[k]))  # the metadata as written
                paths[k].write_bytes(wire.write_delimited([head, *map(encode_node, ns)]))
            try:
                got = read_chakra(prefix)
            except TrainsimError as exc:
                said = re.sub(r"\d+", "N", str(exc).split("(")[0])[:40]
                if not damaged:  # a valid trace: the schema orders no nodes
                    return f"a {how} trace refused: {said}"
                if ".et: node" not in str(exc):
                    return f"a {how} node refused naming no file and node: {said}"
                raise
            finally:
                for p, b in zip(paths, data):
                    p.write_bytes(b)
            if damaged:
                return f"a trace with a {how} node read as {got!r} s"
            if not math.isclose(got, want, rel_tol=1e-9):
                return f"the {how} trace reads as {got!r} s, written as {want!r}"
            return None

        for name in runs:
            for how in ("reversed", "shuffled", "rotated", "dup", "self", "cycle", "twice"):
                for ranks in ("one", "every"):
                    for seed in range(6):
                        yield f"{name} {how} {ranks} #{seed}", (
                            lambda n=name, h=how, k=ranks, s=seed: attempt(n, h, k, s))
    return cases


# ------------------------------------------------------------------------------ rtprecision

def rtprecision_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    """fuzz52's ``rtconfig`` oracle (the resolved config reads back to the same run, no new
    warning, the same iteration to the bit) over this round's fields: fp8 / fp4 recipes,
    16-bit layers, fp8 parameter gathers, frameworks as users spell them, token counts as
    text, on fp8 and fp4 GPUs."""
    def cases() -> Iterator[Case]:
        from fuzz52 import _rtconfig

        names = list(SMALL)
        spellings = [None, "megatron-core", "Megatron-Core", " nemo ", "megatron_bridge",
                     "TorchTitan", "megatron-lm"]
        for i in range(500):
            base = names[i % len(names)]
            cfg = _cfg(base)
            layers = cfg["model"]["num_layers"]
            par = {**cfg["parallel"], **_layouts(rng, layers)}
            if base in ("moe", "mla"):
                par["pp"] = min(par["pp"], 2)
            per = layers // par["pp"]
            t: dict[str, Any] = {"dtype": rng.choice(["fp8", "fp8", "bf16"]),
                                 "fp8_recipe": rng.choice(RECIPES),
                                 "num_layers_at_start_in_bf16": rng.choice([0, 1, per]),
                                 "num_layers_at_end_in_bf16": rng.choice([0, 1, per]),
                                 "fp8_param_gather": rng.random() < 0.3,
                                 "train_tokens": rng.choice([None, "15T", "300b", 1e12])}
            fw = rng.choice(spellings)
            if fw is not None or base == "mla":
                t["framework"] = fw or "megatron-core"
            t = {k: v for k, v in t.items() if v is not None}
            cfg = _cfg(base, training=t, cluster={"gpu": rng.choice(FP8_GPUS)})
            cfg["parallel"] = par
            if par.get("vpp") and cfg["model"].get("hybrid_layer_pattern") is None:
                cfg["parallel"]["pipeline_schedule"] = "interleaved_1f1b"
            label = f"{base} {cfg['cluster']['gpu']} " + json.dumps(
                {"parallel": par, "training": t})
            yield label, (lambda c=cfg, v=i % 10 == 0: _rtconfig(c, workdir, v))
    return cases


# ------------------------------------------------------------------------------ main

def main(argv: list[str] | None = None) -> int:
    return fuzz_checks.seeded_round(53, argv, lambda workdir, rng: {
        "bf16layers": bf16layers_cases(rng), "recipes": recipes_cases(),
        "framenames": framenames_cases(workdir), "money": money_cases(workdir, rng),
        "exportpp": exportpp_cases(workdir, rng), "v2rows": v2rows_cases(workdir, rng),
        "fallbackrows": fallbackrows_cases(workdir, rng),
        "chakraorder": chakraorder_cases(workdir, rng),
        "rtprecision": rtprecision_cases(workdir, rng)})


if __name__ == "__main__":
    fuzz_checks.run_round(main)
