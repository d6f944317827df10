"""Input robustness, 2026-11-28 (55th session, robust55): settings each valid alone that clash
together, the planning commands' option values, format v2 rows with every optional column at
its edges, and the failure profiles and GPU files a user brings.

- ``clash``: a small run (dense, MoE, MLA or hybrid Mamba) with two to four groups of settings
  drawn at once: schedule x vpp x layers x pp; EP x ETP x TP x experts x dispatcher; CP x seq x
  heads x comm type; ZeRO stage x data-parallel engine x framework version; fp8 recipe x GPU
  generation; MoE-only parallel settings on a dense model; Mamba settings and hybrid patterns.
  Oracle: a sane result (``fuzz_checks.sane_result``) whose config holds every plain value
  given (``fuzz_checks.read_back``), or one line; and a MoE-only setting the user gave to a
  model without experts, or a Mamba one to a model without Mamba layers, is refused (the
  model section's rule: "refused, not ignored"), never answered as if not given;
- ``cliopts``: ``plan``, ``search``, ``sweep``, ``goodput`` and ``export`` with one to three
  options at odd values (``--set`` paths and values, ``--fix``-like ``--set parallel.*``,
  ``--vary`` ranges, sizes, token counts, intervals). Oracle: exit 0 with finite JSON, or one
  error line;
- ``v2edges``: a published row (<= 64 GPUs) with one optional column at an edge: 0, 1, huge,
  negative, NaN, inf, unicode digits, thousands separators, scientific notation, a sign,
  spaces. Oracle: fuzz52's (the damaged row fails alone in one line or predicts a finite time;
  the untouched row beside it predicts as in the clean file);
- ``usercatalog``: a failure profile (``goodput --failures my.yaml``) and a GPU file
  (``cluster.gpu: my.yaml``) a user writes, from the catalog's own, with one key dropped,
  mistyped (case, a space, a typo, a dash) or given an odd value, and a run config's
  ``reliability`` section likewise. Oracle: a finite answer or one line; a mistyped key is
  never read as if left out (its default used in silence).

Each input must give a sane answer or one ``TrainsimError`` line (``fuzz_checks.outcome``); a
hang is judged by CPU (30 CPU s) and any input over 10 CPU s is its own class.

    PYTHONPATH=src python benchmarks/fuzz55.py [--only clash,cliopts,v2edges,usercatalog]
        [--count N] [--seed S] [--every] [--progress] [--refusals]
"""
from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import os
import random
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz55_files import SERVICE_BASE, _cli, service_cases, usercatalog_cases
from fuzz_checks import BASES, Case, read_back, sane_result

fuzz_checks.TIME_LIMIT_S = 300
ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "src" / "trainsim" / "catalog"


# ------------------------------------------------------------------------------ clash

HYBRID = copy.deepcopy(BASES["dense"])
HYBRID["model"].update(hybrid_layer_pattern="M*M-")
KINDS = {"dense": BASES["dense"], "moe": BASES["moe"], "mla": BASES["mla"], "hybrid": HYBRID}
SCHEDULES = [None, "gpipe", "1f1b", "interleaved_1f1b", "zb_h1", "zb_h2", "zb_v",
             "interleaved_zb", "dualpipe", "dualpipe_v"]
GPUS = ["a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb", "b200-sxm-180gb", "gb200",
        "mi300x", "h800-sxm-80gb"]
FRAMEWORKS = {"megatron-lm": [None, "2021-04", "2023-06", "2026-04-28"],
              "megatron-core": [None, "0.5", "0.12"], "torchtitan": [None, "2024-06"],
              "deepspeed": [None, "2021-03", "2024-02-23"], "megatron-bridge": [None, "25.09"],
              "nemo": [None, "24.07"], "pytorch": [None, "1.12", "2.11"],
              "llm-foundry": [None], "megatron-deepspeed": [None, "2022-02"]}
MOE_PARALLEL = {"moe_token_dispatcher_type": ["allgather", "deepep", "hybridep", "flex"],
                "moe_overlap_ep_comm": [True], "moe_dispatch_fp8": [True],
                "moe_deepep_num_sms": [20, 24], "moe_hybridep_num_sms": [16],
                "moe_router_dtype": ["fp32", "fp64"], "moe_permute_fusion": [True, False],
                "moe_shared_expert_overlap": [True], "fp8_gemm_grid_excludes_exchange": [True],
                "flex_two_ranks": [["deepep"]]}
"""Parallel settings that only a mixture-of-experts model reads."""
MAMBA = {"mamba_num_heads": [4, 8, 3], "mamba_head_dim": [32, 64], "mamba_state_dim": [16, 128],
         "mamba_num_groups": [1, 2, 2, 8], "mamba_conv_kernel": [1, 4], "mamba_chunk_size": [1, 128]}
PATTERNS = ["M*M-", "MMMM", "M*", "M*M*M*M*", "*-*-", "M-M-/M", "M*ME", "MEME", "M|M|*|-",
            "mm**", "M*M-M*M-"]


def _pattern(rng: random.Random, layers: int, moe: bool) -> str:
    """A hybrid pattern of ``layers`` symbols (Mamba, attention, MLP; MoE where ``moe``), now
    and then with a separator or a lower-case symbol that the reader refuses."""
    symbols = "M*-E" if moe else "M*-"
    text = "".join(rng.choice(symbols) for _ in range(layers))
    if rng.random() < 0.1:
        text = rng.choice([text.lower(), text[:1] + "|" + text[1:], text + "/M", text[:-1]])
    return text


def _group(rng: random.Random, kind: str, name: str) -> dict[str, dict[str, Any]]:
    """One group of settings that interact (sections to merge into the base)."""
    if name == "schedule":
        pp = rng.choice([1, 2, 2, 4])
        vpp = rng.choice([None, 1, 2, 3, 4] if pp > 1 else [None, None, 1, 2])
        layers = pp * rng.choice([1, 2, 3, 4]) * (vpp or 1) if rng.random() < 0.8 else \
            rng.choice([2, 3, 5, 6, 7])
        return {"model": {"num_layers": layers},
                "parallel": {"pp": pp, "vpp": vpp, "pipeline_schedule": rng.choice(SCHEDULES)},
                "training": {"global_batch_size": rng.choice([8, 16, 32, 64]),
                             "micro_batch_size": rng.choice([1, 1, 2])}}
    if name == "expert" and kind != "moe":
        return {"parallel": {"tp": rng.choice([1, 2, 4]), "ep": rng.choice([1, 1, 1, 2]),
                             "etp": rng.choice([None, 1])}}
    if name == "expert":
        out: dict[str, dict[str, Any]] = {
            "parallel": {"ep": rng.choice([1, 2, 4, 8]), "etp": rng.choice([None, 1, 2, 4]),
                         "tp": rng.choice([1, 2, 4]),
                         "moe_token_dispatcher_type": rng.choice(["alltoall", "allgather",
                                                                  "deepep", "hybridep"])}}
        if kind == "moe":
            out["model"] = {"num_experts": rng.choice([2, 4, 6, 8, 16]),
                            "moe_router_topk": rng.choice([1, 2, 4])}
        return out
    if name == "context":
        heads = rng.choice([2, 4, 8])
        return {"model": {"num_attention_heads": heads,
                          "num_kv_heads": rng.choice([None, 1, heads // 2 or 1]),
                          "hidden_size": 64 * heads},
                "parallel": {"cp": rng.choice([1, 2, 4]),
                             "cp_comm_type": rng.choice(["p2p", "a2a", "all_gather"])},
                "training": {"seq_length": rng.choice([256, 512, 768, 1000, 2048])}}
    if name == "zero":
        fw = rng.choice([None, *FRAMEWORKS])
        training: dict[str, Any] = {}
        if fw:
            training["framework"] = fw
            version = rng.choice(FRAMEWORKS[fw])
            if version:
                training["framework_version"] = version
        parallel: dict[str, Any] = {"zero_stage": rng.choice([0, 1, 2, 3])}
        if fw and rng.random() < 0.7:  # most frameworks here have no sequence parallel
            parallel["sequence_parallel"] = False
        if rng.random() < 0.6:
            parallel["data_parallel_impl"] = rng.choice(["megatron", "deepspeed", "fsdp1",
                                                         "fsdp2", "ddp"])
        if rng.random() < 0.3:
            parallel["distributed_optimizer"] = rng.random() < 0.5
        return {"parallel": parallel, "training": training}
    if name == "fp8":
        return {"training": {"dtype": rng.choice(["fp8", "bf16", "fp16"]),
                             "fp8_recipe": rng.choice(["delayed", "current", "blockwise",
                                                       "mxfp8", "nvfp4"])},
                "cluster": {"gpu": rng.choice(GPUS)}}
    if name == "moeopts":
        key = rng.choice(sorted(MOE_PARALLEL))
        return {"parallel": {key: rng.choice(MOE_PARALLEL[key])}}
    if name == "mamba":
        out = {"model": {}}
        if rng.random() < 0.6:
            layers = rng.choice([2, 4, 6, 8])
            out["model"].update(num_layers=layers,
                                hybrid_layer_pattern=_pattern(rng, layers, kind == "moe"))
        for key in rng.sample(sorted(MAMBA), rng.choice([0, 1, 2])):
            out["model"][key] = rng.choice(MAMBA[key])
        return out
    raise ValueError(name)


GROUPS = ["schedule", "expert", "context", "zero", "fp8", "moeopts", "mamba"]


def clash_draw(rng: random.Random) -> tuple[str, dict[str, Any], dict[str, dict[str, Any]]]:
    """(kind, the run, the settings given on top of the base) of one clash input."""
    kind = rng.choice(sorted(KINDS))
    cfg = copy.deepcopy(KINDS[kind])
    given: dict[str, dict[str, Any]] = {}
    groups = [g for g in GROUPS if g != "mamba" or kind != "mla" or rng.random() < 0.1]
    for name in rng.sample(groups, rng.choice([2, 3, 4])):
        for section, values in _group(rng, kind, name).items():
            given.setdefault(section, {}).update(values)
    for section, values in given.items():
        cfg[section].update(values)
    pattern = cfg["model"].get("hybrid_layer_pattern")
    layers = cfg["model"]["num_layers"]
    if pattern and "hybrid_layer_pattern" not in given.get("model", {}):
        cfg["model"]["hybrid_layer_pattern"] = (pattern * layers)[:layers]  # one per layer
    elif pattern and len(pattern.split("/")[0]) != layers and rng.random() < 0.8:
        cfg["model"]["num_layers"] = len(pattern.split("/")[0])
        given["model"]["num_layers"] = cfg["model"]["num_layers"]
    return kind, cfg, given


def ignored_setting(rc, cfg: dict[str, Any], given: dict[str, dict[str, Any]]) -> str | None:
    """A MoE-only parallel setting or a Mamba setting given to a model that has none of those
    layers, and answered: the run built with it differs from the run built without it (a
    framework profile's own value, which every resolved config states, builds the same; a
    switch turned off asks for nothing), yet nothing prices it on such a model: the setting
    was dropped in silence."""
    from trainsim.catalog import run_config_from_dict

    moe = [k for k, v in given.get("parallel", {}).items()
           if k in MOE_PARALLEL and v is not False]  # a switch left off asks for nothing
    if not rc.model.is_moe and moe:
        bare = copy.deepcopy(cfg)
        for key in moe:
            del bare["parallel"][key]
        without = run_config_from_dict(bare).parallel
        for key in moe:
            if getattr(without, key) != getattr(rc.parallel, key):
                return f"parallel.{key}={given['parallel'][key]!r} on a dense model answered " \
                       "(ignored)"
    if not rc.model.hybrid_layer_pattern:
        defaults = {f.name: f.default for f in dataclasses.fields(rc.model)}
        for key, value in given.get("model", {}).items():
            if key in MAMBA and value != defaults[key]:
                return f"model.{key}={value!r} on a model without Mamba layers answered (ignored)"
    return None


def _clash(cfg: dict[str, Any], given: dict[str, dict[str, Any]]) -> str | None:
    from trainsim.catalog import run_config_from_dict
    from trainsim.simulator import simulate

    rc = run_config_from_dict(copy.deepcopy(cfg))
    for section, values in given.items():
        for name, value in values.items():
            bad = read_back(rc, section, name, value)
            if bad:
                return "silently changed: " + bad
    bad = ignored_setting(rc, cfg, given)
    if bad:
        return bad
    bad = sane_result(simulate(rc))
    return f"insane result: {bad}" if bad else None


def clash_cases(rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for _ in range(3000):
            kind, cfg, given = clash_draw(rng)
            yield f"{kind} {json.dumps(given, sort_keys=True)}", (
                lambda c=cfg, g=given: _clash(c, g))
    return cases


# ------------------------------------------------------------------------------ cliopts

ODD_INT = ["0", "-1", "1", "3", "\uff18", "\u0668", "1,024", "1e3", "1.5", "2**31",
           "99999999999999999999", "", " 8 ", "+8", "0x8", "1_000", "nan", "inf"]
ODD_FLOAT = ["0", "-1", "1e-300", "1e300", "nan", "inf", "-inf", "1,5", "\uff11", "1e3", " 2 ",
             "+2", "0.5", "1_0", ""]
ODD_TOKENS = ["15T", "1.5e13", "15t", "15 T", "1,5T", "1_500B", "\uff11\uff15T", "15Q", "15TT",
              "T", "-15T", "0", "1e400", "nan", "inf", "1e9", "300B", "15e12", "  15T  ", ""]
ODD_INTERVAL = ["30m", "2h", "1d", "0", "-1", "1e-9", "1e400", "nan", "30 m", "30M", "1,800",
                "\uff13\uff10m", "30mm", "m", "", "1800s", "1e3s", "0.5h"]
SET_VALUES = ["0", "-1", "nan", "inf", "1e400", "", "x", "true", "[]", "{}", "\uff18",
              "1,024", "1e3", "null", "~", "[1, 2]", "'8'", " 8 "]
SET_PATHS = ["parallel.tp", "parallel.pp", "parallel.vpp", "parallel.ep", "parallel.etp",
             "parallel.cp", "parallel.zero_stage", "parallel.recompute",
             "parallel.pipeline_schedule", "parallel.moe_token_dispatcher_type",
             "parallel.sequence_parallel", "training.dtype", "training.fp8_recipe",
             "training.framework", "training.framework_version", "training.attention",
             "training.train_tokens", "model.num_layers", "model.num_experts",
             "model.hybrid_layer_pattern", "cluster.nvls", "cluster.topology",
             "cluster.gpu_overrides.hbm_gbyte_s", "cluster.gpu_overrides.peak_tflops.bf16",
             "cluster.pue", "reliability.checkpoint.mode", "reliability.checkpoint.interval_s",
             "reliability.recovery.restart_s", "parallel", "model.", ".tp", "parallel..tp",
             "Parallel.TP", "parallel.tp ", "x.y", "parallel.tensor_model_parallel_size"]
VARY = ["cluster.nvlink_gbyte_s=300:1800", "cluster.nvlink_gbyte_s=1800:300",
        "cluster.nvlink_gbyte_s=300:300", "cluster.nvlink_gbyte_s=nan:1", "parallel.tp=1,2",
        "parallel.tp=1,,2", "parallel.tp=", "=1:2", "parallel.tp=1:2", "training.dtype=bf16,fp8",
        "cluster.num_gpus=8,16", "cluster.num_gpus=8:16", "training.seq_length=256:2048",
        "model.num_layers=1:8", "parallel.tp=\uff11,\uff12", "cluster.nic_gbit_s_per_gpu=1e-300:1",
        "cluster.gpu=h100-sxm-80gb,b200-sxm-180gb", "parallel.recompute=none,full,bogus",
        "cluster.nvlink_gbyte_s=0:100", "cluster.nvlink_gbyte_s=1e300:1e308",
        "training.global_batch_size=8:64", "parallel.pp=1,2", "parallel.vpp=1,2,3"]


def _unread_set(args: list[str]) -> str | None:
    """A ``--set reliability.*`` (read by ``goodput`` alone) that another command answered:
    the setting dropped in silence."""
    from fuzz51 import _invoke

    unread = [v for k, v in itertools.pairwise(args)
              if k == "--set" and v.startswith("reliability.")]
    if args[0] == "goodput" or not unread or _invoke(args).exit_code != 0:
        return None
    return f"{args[0]}: --set {unread[0].split('=')[0]} answered (the command reads no reliability)"


def _sets(rng: random.Random) -> list[str]:
    out: list[str] = []
    for _ in range(rng.choice([0, 0, 1, 2])):
        out += ["--set", f"{rng.choice(SET_PATHS)}={rng.choice(SET_VALUES)}"]
    return out


def _options(rng: random.Random, table: dict[str, list[str]], k: int) -> list[str]:
    out: list[str] = []
    for flag in rng.sample(sorted(table), min(k, len(table))):
        out += [flag, rng.choice(table[flag])]
    return out


SEARCH = {"--tp": ODD_INT + ["1,2", "1;2", "2,2"], "--pp": ODD_INT, "--cp": ODD_INT,
          "--ep": ODD_INT, "--etp": ODD_INT, "--zero": ["0", "1,3", "3,3", "4", "-1", ""],
          "--recompute": ["none", "FULL", "full,,none", "bogus", ""],
          "--dispatcher": ["alltoall", "deepep", "DEEPEP", "flex", "bogus", ""],
          "--schedules": ["1f1b", "zb_v", "dualpipe,1f1b", "ZBVZeroBubble", "bogus", ""],
          "--max-vpp": ["1", "2", "64"], "--max-micro-batch": ["1", "3", "1024"],
          "--gpus-per-node": ["1", "3", "72"], "--nic-gbit-s": ODD_FLOAT,
          "--gpu": ["h100", "mi300x", "b200-sxm-180gb", "\uff48100", "", "a100-sxm-40gb"],
          "--dtype": ["bf16", "fp8", "fp16"]}
PLAN_ONLY = {"--tokens": ODD_TOKENS, "--days": ODD_FLOAT, "--price": ODD_FLOAT,
             "--pue": ODD_FLOAT, "--grid": ODD_FLOAT, "--gpu-idle-fraction": ODD_FLOAT,
             "--node-overhead": ODD_FLOAT, "--global-batch": ODD_INT, "--max-gpus": ODD_INT}
SEARCH_ONLY = {"--gpus": ["8", "8,16", "16,8", "8,8", "0", "\u0668"],
               "--global-batch": ODD_INT, "--seq": ["256", "512", "1", "3", "1,024"],
               "--top": ["1", "0", "1000"], "--rank-by": ["split", "layout", "config", "x"],
               "--reference": ["tp=1", "tp=2,pp=2", "tp=1,mb=2", "tp=3", "tp=\uff11", "tp=",
                               "tp=1,tp=1", "dispatcher=deepep", "zero=3", "vpp=2,pp=2"],
               "--pareto-slowdown": ODD_FLOAT}
GOODPUT = {"--tokens": ODD_TOKENS, "--days": ODD_FLOAT, "--interval": ODD_INTERVAL,
           "--gpus": ODD_INT, "--seed": ["0", "-1", "99999999999999999999", "x"],
           "--trials": ["1", "0", "5", "\uff15"],
           "--failures": ["meta-rsc1-a100", "META-RSC1-A100", "bogus", "", "llama3-405b"]}
EXPORT = {"--tp": ODD_INT, "--cp": ODD_INT, "--ep": ODD_INT, "--seq": ODD_INT,
          "--mbs": ODD_INT, "--gpus": ODD_INT, "--gbs": ODD_INT,
          "--gpu": ["h100", "b200-sxm-180gb", "mi300x", "", "\uff48100"],
          "--ranks": ["0", "0,1", "", "-1", "0,0", "99", "all", "\u0660"]}


def cliopts_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        d = Path(tempfile.mkdtemp(dir=workdir))
        for name in ("dense", "moe"):
            (d / f"{name}.json").write_text(json.dumps(BASES[name]), encoding="utf-8")
        model = d / "model.yaml"
        model.write_text(yaml.safe_dump({"model": BASES["dense"]["model"]}), encoding="utf-8")
        moe_model = d / "moe_model.yaml"
        moe_model.write_text(yaml.safe_dump({"model": BASES["moe"]["model"]}), encoding="utf-8")
        for k in range(1000):
            command = rng.choice(["plan", "search", "sweep", "goodput", "export"])
            base = rng.choice(["dense", "moe"])
            if command in ("plan", "search"):
                args = [command, str(model if base == "dense" else moe_model),
                        "--workers", "1", "--format", "json"]
                if command == "plan":
                    args += ["--tokens", "1e9", "--days", "1", "--max-gpus", "16", "--seq",
                             "512", "--global-batch", "16"]
                    args += _options(rng, {**SEARCH, **PLAN_ONLY}, rng.choice([1, 2, 3]))
                else:
                    args += ["--gpus", "8", "--global-batch", "16", "--seq", "512", "--top", "2"]
                    args += _options(rng, {**SEARCH, **SEARCH_ONLY}, rng.choice([1, 2, 3]))
            elif command == "sweep":
                args = ["sweep", str(d / f"{base}.json"), "--format", "json"]
                for _ in range(rng.choice([1, 1, 2])):
                    args += ["--vary", rng.choice(VARY)]
                if rng.random() < 0.4:
                    args += ["--steps", rng.choice(["1", "2", "3", "0", "1000000"])]
            elif command == "goodput":
                args = ["goodput", str(d / f"{base}.json"), "--format", "json", "--trials", "5",
                        "--tokens", "1e9"]
                args += _options(rng, GOODPUT, rng.choice([1, 2, 3]))
            else:
                args = ["export", str(d / f"{base}.json"), "--chakra", str(d / f"e{k}" / "t"),
                        "--simai", str(d / f"e{k}.txt")]
                args += _options(rng, EXPORT, rng.choice([1, 2, 3]))
            args += _sets(rng)
            # a later option of the same name wins (click): the drawn one is last
            yield " ".join(args[:1] + args[2:]), (
                lambda a=args, j=command != "export": _unread_set(a) or _cli(a, j))
    return cases


# ------------------------------------------------------------------------------ v2edges

EDGES = ["0", "1", "99999999999", "1e30", "-1", "-0", "nan", "NaN", "inf", "-inf", "\uff18",
         "\u0668", "\u00b2", "1,024", "1 024", "1e3", "1E3", "2.5e-1", "+2", "  2  ", "0x10",
         "1_024", "0.5", "2.0", "true", "none", "\u200b1"]
"""0, 1, huge, negative, NaN / inf, unicode digits, thousands separators, scientific
notation, a sign, spaces, text."""
SKIPPED_COLUMNS = {"id", "source", "note", "measured_iteration_s", "measured_peak_memory_gib"}


def _training_rows() -> tuple[list[dict[str, str]], list[str]]:
    from fuzz54 import public_rows

    return public_rows()


def v2edges_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        from fuzz53 import _pair_check

        rows, columns = _training_rows()
        one = _pair_check(rows, columns, workdir)
        small = [k for k, r in enumerate(rows) if r["num_gpus"].isdigit()
                 and int(r["num_gpus"]) <= 64]
        pairs = [tuple(rng.sample(small, 2)) for _ in range(6)]
        edit = [c for c in columns if c not in SKIPPED_COLUMNS]
        for _ in range(300):
            i, j = rng.choice(pairs)
            column = rng.choice(edit)
            cell = rng.choice(EDGES)
            yield f"{rows[i]['id']} {column}={cell!r}", (
                lambda i=i, j=j, c={column: cell}: one(i, j, c))
    return cases


# ------------------------------------------------------------------------------ main



def surfaces(workdir: str, rng: random.Random) -> dict[str, Callable[[], Iterator[Case]]]:
    return {"clash": clash_cases(rng), "cliopts": cliopts_cases(workdir, rng),
            "v2edges": v2edges_cases(workdir, rng),
            "usercatalog": usercatalog_cases(workdir, rng), "service": service_cases()}


def main(argv: list[str] | None = None) -> int:
    return fuzz_checks.seeded_round(55, argv, surfaces)


__all__ = ["SERVICE_BASE", "clash_draw", "ignored_setting", "surfaces"]

if __name__ == "__main__":
    fuzz_checks.run_round(main)
