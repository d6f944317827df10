"""Input robustness, 2026-11-28 (47th session, robust47): unusual but legal shapes and their
combinations, which the rounds before fuzzed field by field only.

- ``shapes``: model shapes a real model has or could have (odd and prime head counts, one
  KV head, one layer, a vocabulary of 1-7 tokens, a hidden size that is no multiple of 64,
  MLA's dims apart (no Q LoRA, rope dims 0 / odd, V wider than QK), one expert, top-k = experts,
  a 1M-token sequence) on the three bases and under five frameworks. Oracles: a shape at TP 1
  and PP 1 on one GPU that the base priced must be priced (a valid input is never refused), with
  a sane answer; a refusal is one line;
- ``combos``: each of those shapes under nine parallel layouts (TP with SP, interleaved PP,
  CP, TP x PP, ZeRO-3, full recompute) and five frameworks on 8 GPUs;
- ``grow``: each base with one size field doubled (layers, hidden, FFN, vocabulary, sequence,
  batch, experts' FFN): the iteration may not get faster (a silent wrong price);
- ``clusters``: odd node sizes (1, 2, 3, 6, 7, 12, 16, 72 GPUs a node), GPU counts that are no
  multiple of them, every topology and fabric name, NVL72 racks, each with TP over the node;
  oracle: whole nodes with TP inside one are priced;
- ``hfshapes``: Hugging Face config.json files of the same shapes (DeepSeek-V3-style MLA with
  ``q_lora_rank`` null, ``qk_rope_head_dim`` 0, a 1-layer Llama, GQA 7:1, a 3-token vocabulary);
- ``commands``: ``export`` (``--ranks`` out of range, empty, negative, repeated; ``--chakra`` /
  ``--simai`` into a missing folder), ``profile`` grids refused (``--tp 0``, ``--seq ''``,
  ``--models`` unknown, ``--cp 3`` over 64-token sequences: at once, before PyTorch), ``plan`` on odd
  nodes, ``goodput`` intervals and windows at their extremes; ``--format json`` read as JSON;
- ``service``: ``POST /api/v1/jobs`` (a simulate job, checked as it is queued) with the shapes above and ``GET /api/v1/catalog/KIND``
  and a job's ``kind`` with near-misses (FastAPI's TestClient, no workers): 200 with finite
  numbers, or a 4xx with one error line; a near-miss's 422 names the nearest kind (202 for a job).

Each input must give a sane answer or one ``TrainsimError`` line (``fuzz_checks.outcome``; 20 s a
case is a hang).

    PYTHONPATH=src python benchmarks/fuzz_inputs47.py [--only shapes,grow,...] [--every]
"""
from __future__ import annotations

import contextlib
import copy
import json
import os
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz_checks import (
    BASES,
    REFUSED,
    Case,
    finite,
    only_of,
    print_report,
    run_config,
    run_surfaces,
    surface_parser,
)
from fuzz_inputs46_cli import json_answer
from fuzz_sweep import _cli

from trainsim.catalog import run_config_from_dict
from trainsim.errors import TrainsimError
from trainsim.simulator import simulate

fuzz_checks.TIME_LIMIT_S = 20
ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS = (None, "megatron-core", "deepspeed", "torchtitan", "nemo")
SHAPES: dict[str, dict[str, Any]] = {
    "heads 7": {"num_attention_heads": 7, "hidden_size": 448},
    "heads 5, head_dim 96": {"num_attention_heads": 5, "head_dim": 96},
    "heads 1": {"num_attention_heads": 1},
    "heads 3, kv 1": {"num_attention_heads": 3, "num_kv_heads": 1, "hidden_size": 384},
    "kv 1 of 4": {"num_kv_heads": 1},
    "kv = heads": {"num_kv_heads": 4},
    "1 layer": {"num_layers": 1},
    "vocab 1": {"vocab_size": 1},
    "vocab 3": {"vocab_size": 3},
    "vocab 7": {"vocab_size": 7},
    "hidden 200": {"hidden_size": 200, "num_attention_heads": 5},
    "hidden 8": {"hidden_size": 8, "num_attention_heads": 1},
    "ffn 1": {"ffn_hidden_size": 1},
    "ffn 999": {"ffn_hidden_size": 999},
    "head_dim 8": {"head_dim": 8},
    "head_dim 512": {"head_dim": 512},
    "seq 1": {"@seq": 1},
    "seq 3": {"@seq": 3},
    "seq 1M": {"@seq": 2**20, "@gbs": 1},
    "gbs 1": {"@gbs": 1},
    "window 1": {"sliding_window": 1, "position_embedding": "rope"},
    "window > seq": {"sliding_window": 10**6, "position_embedding": "rope"},
    "chunk 1": {"attention_chunk_size": 1, "position_embedding": "rope"},
    "alibi": {"position_embedding": "alibi"},
    "mtp 1": {"mtp_num_layers": 1},
}
HONEST_REFUSALS = ("chunk 1", "head_dim 512")
"""Shapes refused for a stated reason at one GPU: chunked attention over more than one chunk
is not modelled; FlashAttention-2 (the default kernel) trains heads up to 256 wide."""
MLA_SHAPES: dict[str, dict[str, Any]] = {
    "no q lora": {"q_lora_rank": None},
    "rope dim 0": {"qk_pos_emb_head_dim": 0},
    "rope dim 7": {"qk_pos_emb_head_dim": 7},
    "v wider": {"v_head_dim": 96},
    "v 1": {"v_head_dim": 1},
    "kv rank 1": {"kv_lora_rank": 1},
    "qk 8": {"qk_head_dim": 8},
    "heads 3": {"num_attention_heads": 3},
}
MOE_SHAPES: dict[str, dict[str, Any]] = {
    "1 expert": {"num_experts": 1, "moe_router_topk": 1},
    "topk = experts": {"moe_router_topk": 8},
    "3 experts": {"num_experts": 3, "moe_router_topk": 1},
    "expert ffn 1": {"moe_ffn_hidden_size": 1},
    "shared expert": {"moe_shared_expert_intermediate_size": 128},
    "every 2nd": {"moe_layer_freq": 2},
    "first dense 3": {"moe_first_dense_layers": 3},
}


def _shaped(base: str, shape: dict[str, Any], framework: str | None, single: bool) -> dict:
    cfg = copy.deepcopy(BASES[base])
    for k, v in shape.items():
        if k == "@seq":
            cfg["training"]["seq_length"] = v
        elif k == "@gbs":
            cfg["training"]["global_batch_size"] = v
        else:
            cfg["model"][k] = v
    if framework:
        cfg["training"]["framework"] = framework
    if single:
        cfg["parallel"] = {"tp": 1, "pp": 1} if base != "moe" else {"ep": 1}
        cfg["cluster"]["num_gpus"] = 1
        cfg["cluster"]["gpus_per_node"] = 1
        cfg["training"]["global_batch_size"] = min(cfg["training"]["global_batch_size"], 4)
        cfg["training"].pop("dtype", None)
    return cfg


def _accepted(cfg: dict, must: bool) -> str | None:
    """A sane answer; where ``must``, a refusal is a failure (the base itself was priced)."""
    try:
        return run_config(cfg)
    except TrainsimError as exc:
        if must and "memory" not in str(exc).lower():
            return f"valid shape refused: {str(exc)[:160]}"
        raise


def shape_cases() -> Iterator[Case]:
    groups = [("dense", SHAPES), ("moe", {**SHAPES, **MOE_SHAPES}), ("mla", MLA_SHAPES)]
    for base, shapes in groups:
        for framework in FRAMEWORKS:
            for single in (True, False):
                if single and not _priced(_shaped(base, {}, framework, True)):
                    continue
                for name, shape in shapes.items():
                    cfg = _shaped(base, shape, framework, single)
                    label = f"{base} {name} fw={framework} {'1 GPU' if single else 'base'}"
                    must = single and name not in HONEST_REFUSALS
                    yield label, (lambda c=cfg, m=must: _accepted(c, m))


PARALLELS: list[dict[str, Any]] = [
    {"tp": 2, "sequence_parallel": True}, {"pp": 2, "vpp": 2}, {"cp": 2}, {"tp": 4, "pp": 2},
    {}, {"pp": 4}, {"tp": 2, "cp": 2, "sequence_parallel": True},
    {"pp": 2, "recompute": "full"}, {"zero_stage": 3}]


def combo_cases() -> Iterator[Case]:
    """Each shape under each parallel layout and framework on 8 GPUs (the shapes above priced
    one at a time on a base): a traceback or a hang is the failure."""
    for base, shapes in (("dense", SHAPES), ("moe", MOE_SHAPES), ("mla", MLA_SHAPES)):
        for framework in FRAMEWORKS:
            for par in PARALLELS:
                for name, shape in shapes.items():
                    cfg = _shaped(base, shape, framework, False)
                    cfg["parallel"] = {**({"ep": 2} if base == "moe" else {}), **par}
                    cfg["cluster"].update(num_gpus=8, gpus_per_node=8)
                    yield f"combo {base} {name} {par} fw={framework}", (
                        lambda c=cfg: run_config(c))


def _priced(cfg: dict) -> bool:
    try:
        simulate(run_config_from_dict(copy.deepcopy(cfg)))
    except TrainsimError:
        return False
    return True


GROW = {"num_layers": ("model", 2), "hidden_size": ("model", 2), "vocab_size": ("model", 4),
        "ffn_hidden_size": ("model", 2), "seq_length": ("training", 2),
        "global_batch_size": ("training", 2), "moe_ffn_hidden_size": ("model", 2)}


def _time(cfg: dict) -> float:
    return simulate(run_config_from_dict(copy.deepcopy(cfg))).iteration_time_s


def _grows(base: str, field: str, framework: str | None) -> str | None:
    section, factor = GROW[field]
    cfg = _shaped(base, {}, framework, False)
    if field == "moe_ffn_hidden_size" and "num_experts" not in cfg["model"]:
        return None
    if field == "ffn_hidden_size":
        cfg["model"]["ffn_hidden_size"] = 4 * cfg["model"]["hidden_size"]
    t0 = _time(cfg)
    cfg[section][field] = cfg[section][field] * factor
    if field == "hidden_size" and "ffn_hidden_size" in cfg["model"]:
        cfg["model"]["ffn_hidden_size"] *= factor
    t1 = _time(cfg)
    return None if t1 >= t0 * (1 - 1e-9) else \
        f"faster with {field} x{factor}: {t0:.6g} -> {t1:.6g} s"


def grow_cases() -> Iterator[Case]:
    for base in BASES:
        for framework in FRAMEWORKS:
            for field in GROW:
                yield f"grow {base} {field} fw={framework}", (
                    lambda b=base, f=field, fw=framework: _grows(b, f, fw))


def _cluster(gpn: int, gpus: int, tp: int, extra: dict[str, Any]) -> dict:
    cfg = copy.deepcopy(BASES["dense"])
    cfg["model"].update(num_attention_heads=8, hidden_size=512)
    cfg["cluster"].update(gpus_per_node=gpn, num_gpus=gpus, **extra)
    cfg["parallel"] = {"tp": tp}
    cfg["training"]["global_batch_size"] = 4 * gpus
    return cfg


def cluster_cases() -> Iterator[Case]:
    extras: list[dict[str, Any]] = [{}, {"topology": "rail-optimized"}, {"topology": "spine-leaf"},
                                    {"topology": "nvl72"}, {"fabric": "roce"},
                                    {"gpu": "a100-sxm-80gb"}, {"gpu": "mi300x"},
                                    {"gpu": "b200-sxm-180gb"}, {"node": "gb200-nvl72"}]
    for gpn in (1, 2, 3, 6, 7, 12, 16, 72):
        for gpus in sorted({gpn, 2 * gpn, 3 * gpn + 1, 8}):
            for tp in sorted({1, 2, gpn} & {t for t in (1, 2, 4, 8, gpn) if t <= 8}):
                for extra in extras:
                    cfg = _cluster(gpn, gpus, tp, extra)
                    must = (gpus % gpn == 0 and gpn % tp == 0 and not extra
                            and 8 % tp == 0 and gpus % tp == 0)
                    yield f"cluster gpn={gpn} gpus={gpus} tp={tp} {extra}", (
                        lambda c=cfg, m=must: _accepted(c, m))


HF_BASE = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 512,
           "intermediate_size": 1376, "num_attention_heads": 8, "num_key_value_heads": 8,
           "num_hidden_layers": 4, "vocab_size": 1000, "rms_norm_eps": 1e-5,
           "rope_theta": 10000.0, "hidden_act": "silu", "max_position_embeddings": 4096}
DSV3 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
        "hidden_size": 512, "intermediate_size": 1024, "moe_intermediate_size": 128,
        "num_attention_heads": 8, "num_key_value_heads": 8, "num_hidden_layers": 4,
        "first_k_dense_replace": 1, "n_routed_experts": 8, "n_shared_experts": 1,
        "num_experts_per_tok": 2, "n_group": 1, "topk_group": 1, "vocab_size": 1000,
        "q_lora_rank": 64, "kv_lora_rank": 32, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16,
        "v_head_dim": 32, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu",
        "max_position_embeddings": 4096}
HF_SHAPES: dict[str, tuple[dict, dict[str, Any]]] = {
    "llama 1 layer": (HF_BASE, {"num_hidden_layers": 1}),
    "llama gqa 7:1": (HF_BASE, {"num_attention_heads": 7, "num_key_value_heads": 1,
                                "hidden_size": 448}),
    "llama vocab 3": (HF_BASE, {"vocab_size": 3}),
    "llama head_dim 64 of 7 heads": (HF_BASE, {"num_attention_heads": 7, "head_dim": 64}),
    "llama kv null": (HF_BASE, {"num_key_value_heads": None}),
    "dsv3 as is": (DSV3, {}),
    "dsv3 q_lora null": (DSV3, {"q_lora_rank": None}),
    "dsv3 rope 0": (DSV3, {"qk_rope_head_dim": 0}),
    "dsv3 v wider": (DSV3, {"v_head_dim": 64}),
    "dsv3 all dense": (DSV3, {"first_k_dense_replace": 4}),
    "dsv3 1 expert": (DSV3, {"n_routed_experts": 1, "num_experts_per_tok": 1}),
    "dsv3 no shared": (DSV3, {"n_shared_experts": 0}),
    "dsv3 shared null": (DSV3, {"n_shared_experts": None}),
}


def hf_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for name, (base, edit) in HF_SHAPES.items():
            path = Path(workdir) / name.replace(" ", "_") / "config.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({**base, **edit}))
            cfg = {"model": {"hf_config": str(path)}, "parallel": {},
                   "training": {"global_batch_size": 8, "seq_length": 1024},
                   "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 1, "gpus_per_node": 1,
                               "compute_db": None}}
            must = name in ("llama 1 layer", "llama vocab 3", "llama kv null", "dsv3 as is",
                            "dsv3 q_lora null", "dsv3 no shared", "dsv3 all dense")
            yield f"hf {name}", (lambda c=cfg, m=must: _accepted(c, m))
    return cases


def command_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    cfg = Path(workdir) / "run.yaml"
    base = copy.deepcopy(BASES["dense"])
    base["cluster"]["num_gpus"] = 16
    cfg.write_text(json.dumps(base))
    missing = Path(workdir) / "no" / "such"
    runs: list[list[str]] = []
    for ranks in ("0,99", "-1", "", "0,0", "a", "0,,1", "15", "16", " 0 ", "0-3"):
        runs.append(["export", str(cfg), "--chakra", str(Path(workdir) / "t"), "--ranks", ranks])
    runs += [["export", str(cfg), "--chakra", str(missing / "t")],
             ["export", str(cfg), "--simai", str(missing / "w.txt")],
             ["export", str(cfg), "--simai", workdir],
             ["export", str(cfg), "--tp", "3"], ["export", str(cfg), "--gpus", "7"],
             ["export", str(cfg), "--ep", "2"], ["export", str(cfg), "--cp", "3"],
             ["export", str(cfg), "--seq", "1", "--simai", str(Path(workdir) / "w.txt")],
             ["export", str(cfg), "--gbs", "1", "--gpus", "16"]]
    prof = ["profile", "--gpu", "h100-sxm-80gb", "--out", str(Path(workdir) / "db.json"),
            "--device", "cpu"]
    for flags in (["--tp", "0"], ["--tp", ""], ["--tp", "3"], ["--seq", "0"], ["--seq", ""],
                  ["--seq", "1e3"], ["--models", "bogus"], ["--models", "llama3-8"],
                  ["--cp", "0"], ["--cp", "3"], ["--mbs", "0"], ["--tp", "-1"],
                  ["--gpu", "h100-sxn-80gb"], ["--tp", "99999"]):  # each refused: no measurement
        runs.append(prof + flags + ["--quick", "--no-kernels"])
    # ``--seq 1`` / ``16`` left out: ~4M tokens a step in 1- or 16-token sequences, 13 candidates
    # simulated (16.4 CPU s, 41 s on the loaded box) before one over the task limit ends the plan
    # (RESULTS, leads)
    plan = ["plan", "llama3-8b", "--tokens", "1B", "--days", "30", "--format", "json",
            "--max-gpus", "64", "--tp", "1,2", "--pp", "1", "--workers", "1"]
    for flags in (["--gpus-per-node", "3"], ["--gpus-per-node", "7"], ["--gpus-per-node", "1"],
                  ["--gpus-per-node", "72"], ["--gpu", "a100-sxm-80gb", "--gpus-per-node", "6"],
                  ["--global-batch", "1"], ["--tokens", "1"],
                  ["--days", "1e-9"]):
        runs.append(plan + flags)
    good = ["goodput", str(cfg), "--trials", "10", "--format", "json"]
    for flags in (["--interval", "0"], ["--interval", "1s"], ["--interval", "1e12"],
                  ["--interval", "-5m"], ["--interval", "2h30m"], ["--days", "1e-9"],
                  ["--days", "1e9"], ["--tokens", "1"], ["--tokens", "0"], ["--gpus", "7"],
                  ["--gpus", "1"], ["--failures", "bogus"], ["--tokens", "1e30"]):
        runs.append(good + flags)
    chk = {"json": json_answer}

    def cases() -> Iterator[Case]:
        for args in runs:
            yield " ".join(args).replace(workdir, "W"), (
                lambda a=args: _cli(a, answer_check=chk["json"](a)))
    return cases


def _client(stack: contextlib.ExitStack, workdir: str):
    from fastapi.testclient import TestClient

    from trainsim.service import Settings, create_app
    app = create_app(Settings(db_url=f"sqlite:///{Path(workdir) / 'jobs.db'}", workers=0,
                              checkers=0), start_workers=False)
    client = stack.enter_context(TestClient(app))
    token = app.state.store.create_token("fuzz47")
    return client, {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}


NEAR_KINDS = {"gpus": None, "gpu": "gpus", "GPUS": "gpus", "model": "models", "nodes": None,
              "node": "nodes", "frameworks": None, "framework": "frameworks", "x": None, "": None,
              "topologies": None, "topology": "topologies", "failures": None, "gpus%20": "gpus",
              "..": None, "gpus?x=1": None}
"""``GET /api/v1/catalog/KIND``'s kinds, and the near-misses' nearest (robust47: none said)."""


def service_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def answered(r: Any) -> str | None:
        if r.status_code in (200, 202):
            return None if finite(r.json()) else "non-finite number in a 200 answer"
        if 400 <= r.status_code < 500:
            err = r.json().get("error", "")
            if not err or "\n" in err.strip():
                return f"{r.status_code} without one error line: {r.text[:80]}"
            REFUSED[0] += 1
            return None
        return f"status {r.status_code}: {r.text[:80]}"

    def cases() -> Iterator[Case]:
        with contextlib.ExitStack() as stack:
            state: dict[str, Any] = {}

            def call(method: str, path: str, body: Any = None, meant: str | None = None
                     ) -> str | None:
                if not state:
                    state["c"] = _client(stack, workdir)
                client, headers = state["c"]
                r = client.get(path, headers=headers) if method == "get" else \
                    client.post(path, content=json.dumps(body), headers=headers)
                if meant and r.status_code == 422 and f"did you mean '{meant}'" not in r.text:
                    return "a wrong choice answered without its nearest value"
                return answered(r)

            for base, shapes in (("dense", SHAPES), ("mla", MLA_SHAPES), ("moe", MOE_SHAPES)):
                for name, shape in shapes.items():
                    cfg = _shaped(base, shape, None, base == "dense")
                    yield f"service job {base} {name}", (
                        lambda c=cfg: call("post", "/api/v1/jobs",
                                           {"kind": "simulate", "config": c}))
            for kind, meant in NEAR_KINDS.items():
                yield f"service catalog {kind!r}", (
                    lambda k=kind, m=meant: call("get", f"/api/v1/catalog/{k}", meant=m))
            for kind, meant in {"simulat": "simulate", "SEARCH": "search", "plans": "plan",
                                "valid": "validate", "sweeps": "sweep", "": None}.items():
                yield f"service job kind {kind!r}", (
                    lambda k=kind, m=meant: call("post", "/api/v1/jobs",
                                                 {"kind": k, "config": BASES["dense"]}, m))
    return cases


def main(argv: list[str] | None = None) -> int:
    args = surface_parser().parse_args(argv)
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as workdir:
        surfaces = {"shapes": shape_cases, "combos": combo_cases, "grow": grow_cases, "clusters": cluster_cases,
                    "hfshapes": hf_cases(workdir), "commands": command_cases(workdir),
                    "service": service_cases(workdir)}
        return print_report(run_surfaces(surfaces, only_of(args)), every=args.every)


if __name__ == "__main__":
    sys.exit(main())
