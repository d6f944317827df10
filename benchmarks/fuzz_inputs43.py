"""Input robustness, twenty-fourth round (2026-11-27, 43rd session, fuzz43): the features that
landed since the 35th session's round.

- ``heads``: odd head widths (head_dim 1, 7, 300, 576; MLA's qk_head_dim / v_head_dim /
  qk_pos_emb_head_dim tiny and huge) under every attention kernel;
- ``fp8``: ``fp8_recipe`` x dtype x GPU generation x fp8 switches;
- ``pipes``: ``pipeline_schedule`` x pp x vpp x micro-batch count x layers (zero layers in a
  stage, first/last-stage layer counts, layouts, MTP);
- ``moe``: MoE / MLA with tiny or huge values (one expert, top-k past the experts, a 1-wide
  expert, a huge capacity factor, shared experts);
- ``random``: seeded pairs and triples of the edits above on the three bases;
- ``combos``: seeded draws of 3-8 plausible settings of the newer features together (MLA, MTP,
  schedules, layouts, dispatchers, fp8 recipes, CUDA graph scopes, framework profiles, GPUs);
- ``scale``: thousands of layers, a 1M sequence, a 1e8 vocabulary on one GPU under each
  framework profile (the plain PyTorch loop's allocator replay);
- ``sets``: ``simulate --set`` of the new fields with text values, as a shell gives them;
- ``kernels``: kernel-validation rows of every kind (attention fwd/bwd, gemm, gemm_grouped,
  moe_block, memory_bound) with edited cells, through ``validate_file``, and
  ``kernel_refusals``: the edits that state no kernel that runs, refused naming why;
- ``commands``: ``search``/``plan`` (``--set``, ``--schedules``, ``--max-vpp``), ``sweep``
  ``--vary`` of the new fields, ``goodput``, ``simulate --set cluster.compute_db=`` a bad file;
- ``outputs``: ``simulate --trace/--plot/--format table/--max-tasks`` of every schedule;
- ``db``: the bundled H100 kernel database with one record's field or a top-level field given
  an odd value (``simulate`` loads it; every fourth also ``validate``d as a database);
- ``rows``: two public training rows with the newer features' cells edited;
- ``layers``: the measured-layers file with one record's field given an odd value.
The file surfaces live in ``fuzz_inputs43_files.py``.

Each input must give a sane answer (finite positive times, 0 < MFU <= 2) or one error line
(exit 2, ``error: ...``); a traceback, a hang past 20 s, or NaN/negative output is a failure
class.

    PYTHONPATH=src python benchmarks/fuzz_inputs43.py [--only heads,fp8,...] [--pairs N]
        [--seed S] [--every]

prints one line per failure class (with its first input) and the counts; exit 1 on any.
"""
from __future__ import annotations

import copy
import json
import math
import os
import random
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz_checks import BASES, Case, only_of, print_report, run_config, run_surfaces, surface_parser
from fuzz_sweep import _cli

fuzz_checks.TIME_LIMIT_S = 20
KERNELS_CSV = Path(__file__).resolve().parents[1] / "../shared/validation/kernels_published.csv"
ODD = [0, -1, 1, 7, 300, 576, 2**20, 1.5, math.nan, math.inf, "", None, "abc"]
ATTENTION = ["flash2", "flash3", "cudnn", "te", "sdpa", "eager", "flash1", "bogus"]


def _edit(base: str, **sections: dict) -> dict:
    cfg = copy.deepcopy(BASES[base])
    for section, fields in sections.items():
        for k, v in fields.items():
            if v == "<del>":
                cfg[section].pop(k, None)
            else:
                cfg[section][k] = v
    return cfg


def _case(label: str, cfg: dict) -> Case:
    return label, (lambda c=cfg: run_config(c))


# ------------------------------------------------------------------------- config surfaces

def head_edits() -> list[tuple[str, dict]]:
    out = []
    for hd in [1, 2, 7, 8, 60, 96, 160, 192, 256, 300, 512, 576, 1024, 4096]:
        for att in ATTENTION[:-1]:
            out.append(("dense", {"model": {"head_dim": hd}, "training": {"attention": att}}))
            out.append(("moe", {"model": {"head_dim": hd, "num_kv_heads": 1},
                                "training": {"attention": att}}))
    for hd in ODD:
        out.append(("dense", {"model": {"head_dim": hd}}))
    for field in ["qk_head_dim", "v_head_dim", "qk_pos_emb_head_dim", "kv_lora_rank",
                  "q_lora_rank"]:
        for v in ODD + [0.0, 192, 4096]:
            out.append(("mla", {"model": {field: v}}))
            out.append(("mla", {"model": {field: v}, "training": {"attention": "flash2"}}))
    for v in [1, 7, 192, 576]:
        # MLA fields without MLA, a dense model's qk_head_dim
        out.append(("dense", {"model": {"qk_head_dim": v}}))
        out.append(("dense", {"model": {"v_head_dim": v, "kv_lora_rank": 32}}))
    for att in ATTENTION:
        out.append(("mla", {"training": {"attention": att}}))
        for hd in [7, 300, 576]:
            out.append(("mla", {"model": {"qk_head_dim": hd, "v_head_dim": hd},
                                "training": {"attention": att}}))
    return out


def fp8_edits() -> list[tuple[str, dict]]:
    out = []
    gpus = ["a100-sxm-80gb", "h100-sxm-80gb", "b200-sxm-180gb", "gb200-nvl72", "mi300x",
            "l40s", "v100-sxm-32gb"]
    for recipe in ["delayed", "current", "blockwise", "mxfp8", "mx", "block", "", None, 1,
                   "DELAYED", "nvfp4"]:
        for dtype in ["fp8", "bf16", "fp16"]:
            for gpu in gpus:
                for base in ("dense", "moe"):
                    out.append((base, {"training": {"fp8_recipe": recipe, "dtype": dtype},
                                       "cluster": {"gpu": gpu}}))
    for recipe in ["delayed", "current", "blockwise", "mxfp8"]:
        for extra in [{"fp8_param_gather": True}, {"use_precision_aware_optimizer": True},
                      {"fp8_param_gather": True, "use_precision_aware_optimizer": True},
                      {"exp_avg_dtype": "fp8"}, {"cuda_graphs": True},
                      {"attention": "flash3"}, {"attention": "cudnn"}]:
            out.append(("mla", {"training": {"fp8_recipe": recipe, **extra}}))
            out.append(("moe", {"training": {"fp8_recipe": recipe, "dtype": "fp8", **extra},
                                "cluster": {"gpu": "b200-sxm-180gb"}}))
    return out


SCHEDULES = ["gpipe", "1f1b", "interleaved_1f1b", "zb_h1", "zb_1p", "zb_h2", "zb_2p", "zb_v",
             "interleaved_zb", "dualpipe", "dualpipe_v", "GPipe", "1F1B", "Interleaved1F1B",
             "ZBVZeroBubble", "InterleavedZeroBubble", "DualPipeV", "bogus", "", "ZB-V",
             "dualpipev", None]


def pipe_edits() -> list[tuple[str, dict]]:
    out = []
    for sched in SCHEDULES:
        for pp in [1, 2, 4, 8]:
            for vpp in [None, 1, 2, 3, 4]:
                for gbs in [1, 4, 16, 24]:
                    out.append(("dense", {
                        "parallel": {"pp": pp, "vpp": vpp, "pipeline_schedule": sched},
                        "training": {"global_batch_size": gbs},
                        "model": {"num_layers": 8}}))
        for layers in [1, 2, 3, 5, 61]:
            out.append(("dense", {"parallel": {"pp": 4, "pipeline_schedule": sched},
                                  "model": {"num_layers": layers}}))
        out.append(("moe", {"parallel": {"pipeline_schedule": sched}}))
        out.append(("mla", {"parallel": {"pipeline_schedule": sched, "vpp": None}}))
        out.append(("mla", {"parallel": {"pipeline_schedule": sched, "vpp": None},
                            "model": {"mtp_num_layers": 1}}))
        out.append(("dense", {"parallel": {"pp": 2, "pipeline_schedule": sched,
                                           "optimizer_post_validation": True}}))
    for first, last in [(0, None), (None, 0), (0, 0), (4, 0), (8, None), (9, None), (-1, None),
                        (1, 1), (3, 3), (2.5, None), (math.nan, None)]:
        out.append(("dense", {"parallel": {"pp": 4, "decoder_first_pipeline_num_layers": first,
                                           "decoder_last_pipeline_num_layers": last},
                              "model": {"num_layers": 8}}))
    for layout in ["", "E|t*4|L", "Et|tt|tt|tL", "E|(t|)*3tL", "Ett|tt|tt|ttL", "E|L",
                   "|||", "E,t,t|t,L", "Emtt|ttL", "Ett|ttmL", "x", "E|t|t|t|L" * 50,
                   "Ettttt|L", "E(tt|)*2L", "E" + "t" * 8 + "L", 5]:
        for pp, vpp in [(2, None), (4, None), (2, 2), (1, None)]:
            out.append(("dense", {"parallel": {"pp": pp, "vpp": vpp,
                                               "pipeline_model_parallel_layout": layout},
                                  "model": {"num_layers": 8}}))
        out.append(("mla", {"parallel": {"pipeline_model_parallel_layout": layout},
                            "model": {"mtp_num_layers": 1}}))
    for mtp in [0, 1, 2, 8, 100, -1, 1.5, math.nan, True]:
        for base in ("dense", "moe", "mla"):
            out.append((base, {"model": {"mtp_num_layers": mtp}}))
    for mbs in [1, 2, 3, 16, 17, 0]:
        out.append(("dense", {"parallel": {"pp": 4, "vpp": 2, "pipeline_schedule":
                                           "interleaved_1f1b"},
                              "training": {"micro_batch_size": mbs, "global_batch_size": 16},
                              "model": {"num_layers": 8}}))
    for group in [0, 1, 2, 3, 100, -1]:
        out.append(("mla", {"parallel": {"microbatch_group_size_per_vp_stage": group}}))
    return out


def moe_edits() -> list[tuple[str, dict]]:
    out = []
    edits = {"num_experts": [1, 2, 3, 7, 256, 4096, 0, -1], "moe_router_topk": [1, 8, 9, 0, 64],
             "moe_ffn_hidden_size": [1, 7, 8, 10**6, 0],
             "moe_shared_expert_intermediate_size": [0, 1, 300, 10**6],
             "moe_capacity_factor": [0.0, 1e-9, 1.0, 1e9, math.inf, -1],
             "moe_layer_freq": [1, 2, 5, 0], "moe_first_dense_layers": [0, 3, 4, 5],
             "moe_router_group_topk": [1, 2, 8, 0], "moe_token_imbalance": [0.5, 1, 8, 1e9],
             "moe_pad_expert_input_to_capacity": [True]}
    for field, values in edits.items():
        for v in values:
            out.append(("moe", {"model": {field: v}}))
            out.append(("mla", {"model": {"num_experts": 4, field: v}}))
    for ep in [1, 2, 4, 8, 16]:
        for etp in [None, 1, 2]:
            for disp in ["alltoall", "allgather", "flex", "deepep", "hybridep", "bogus"]:
                out.append(("moe", {"parallel": {"ep": ep, "etp": etp,
                                                 "moe_token_dispatcher_type": disp}}))
    for sms in [0, 1, 20, 132, 10**6, -1]:
        out.append(("moe", {"parallel": {"moe_token_dispatcher_type": "flex",
                                         "moe_deepep_num_sms": sms}}))
    return out


SURFACE_EDITS = {"heads": head_edits, "fp8": fp8_edits, "pipes": pipe_edits, "moe": moe_edits}


def edit_cases(name: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for base, edit in SURFACE_EDITS[name]():
            yield _case(f"{base} {edit}", _edit(base, **edit))
    return cases


def random_cases(seed: int, n: int) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        rng = random.Random(seed)
        pool = [e for f in SURFACE_EDITS.values() for e in f()]
        for _ in range(n):
            picks = rng.sample(pool, rng.choice([2, 3]))
            base = rng.choice([p[0] for p in picks])
            merged: dict = {}
            for _b, edit in picks:
                for section, fields in edit.items():
                    merged.setdefault(section, {}).update(fields)
            yield _case(f"{base} {merged}", _edit(base, **merged))
    return cases


COMBO_BASE = {"model": {"hidden_size": 1024, "num_layers": 8, "num_attention_heads": 8,
                        "vocab_size": 4096, "activation": "swiglu", "normalization": "rmsnorm",
                        "position_embedding": "rope", "num_experts": 8, "moe_router_topk": 2,
                        "moe_ffn_hidden_size": 512},
              "parallel": {"tp": 2, "pp": 2, "ep": 2, "sequence_parallel": True},
              "training": {"global_batch_size": 32, "seq_length": 2048, "dtype": "bf16"},
              "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8}}
COMBO_FIELDS: dict[tuple[str, str], list] = {
    ("model", "kv_lora_rank"): [None, 64, 512], ("model", "q_lora_rank"): [None, 96],
    ("model", "qk_head_dim"): [128, 192, 7, 576], ("model", "v_head_dim"): [128, 64, 300],
    ("model", "qk_pos_emb_head_dim"): [64, 0, 32], ("model", "head_dim"): [None, 64, 96, 256],
    ("model", "num_kv_heads"): [None, 1, 2, 8], ("model", "mtp_num_layers"): [0, 1, 2],
    ("model", "num_experts"): [None, 2, 8, 64], ("model", "moe_router_topk"): [1, 2, 8],
    ("model", "moe_shared_expert_intermediate_size"): [None, 512],
    ("model", "moe_first_dense_layers"): [0, 1, 3], ("model", "sliding_window"): [None, 128],
    ("parallel", "tp"): [1, 2, 4], ("parallel", "pp"): [1, 2, 4], ("parallel", "cp"): [1, 2],
    ("parallel", "ep"): [1, 2, 4, 8], ("parallel", "etp"): [None, 1, 2],
    ("parallel", "vpp"): [None, 2, 4],
    ("parallel", "pipeline_schedule"): [None, "1f1b", "interleaved_1f1b", "zb_h1", "zb_v",
                                        "interleaved_zb", "dualpipe", "dualpipe_v", "gpipe"],
    ("parallel", "pipeline_model_parallel_layout"): [None, "Et|ttt|tt|tL", "E|t*4|t*4|L",
                                                     "Ett|tt|tt|ttmL"],
    ("parallel", "moe_token_dispatcher_type"): ["alltoall", "allgather", "flex", "deepep"],
    ("parallel", "moe_overlap_ep_comm"): [False, True],
    ("parallel", "delay_wgrad_compute"): [None, True, False],
    ("parallel", "recompute"): ["none", "selective", "full"],
    ("parallel", "recompute_modules"): [None, ["core_attn"], ["mla_up_proj"], ["moe_act"]],
    ("parallel", "cpu_offloading_num_layers"): [0, 1],
    ("parallel", "zero_stage"): [0, 1, 3], ("parallel", "distributed_optimizer"): [False, True],
    ("parallel", "tp_comm_overlap"): [False, True],
    ("parallel", "overlap_grad_reduce"): [False, True],
    ("parallel", "optimizer_post_validation"): [False, True],
    ("training", "dtype"): ["bf16", "fp8", "fp16"],
    ("training", "fp8_recipe"): ["delayed", "current", "blockwise", "mxfp8"],
    ("training", "attention"): ["flash2", "flash3", "cudnn", "sdpa", "eager", "flash4"],
    ("training", "cuda_graphs"): [False, True],
    ("training", "cuda_graph_scope"): [[], ["attn"], ["moe_router", "moe_preprocess"],
                                       ["full_iteration"]],
    ("training", "expandable_segments"): [False, True],
    ("training", "fp8_param_gather"): [False, True],
    ("training", "use_precision_aware_optimizer"): [False, True],
    ("training", "micro_batch_size"): [1, 2, 4],
    ("training", "framework"): [None, "megatron-core", "nemo", "megatron-bridge",
                                "torchtitan", "deepspeed", "megatron-lm"],
    ("cluster", "gpu"): ["h100-sxm-80gb", "b200-sxm-180gb", "a100-sxm-80gb", "h200-sxm-141gb",
                         "gb200-nvl72", "mi300x"],
    ("cluster", "compute_db"): [None, "auto"],
}


def combo_cases(seed: int, n: int) -> Callable[[], Iterator[Case]]:
    """Seeded draws of 3-8 plausible settings of the newer features together on a small
    MoE model (16 GPUs): each a sane answer or one error line."""
    def cases() -> Iterator[Case]:
        rng = random.Random(seed + 1)
        keys = list(COMBO_FIELDS)
        for _ in range(n):
            cfg = copy.deepcopy(COMBO_BASE)
            picks = rng.sample(keys, rng.randint(3, 8))
            for section, name in picks:
                v = rng.choice(COMBO_FIELDS[(section, name)])
                if v is None:
                    cfg[section].pop(name, None)
                else:
                    cfg[section][name] = v
            label = {f"{s}.{k}": cfg[s].get(k) for s, k in picks}
            yield f"combo {label}", (lambda c=cfg: run_config(c))
    return cases


SCALE_BASE = {"model": {"hidden_size": 2048, "num_layers": 16, "num_attention_heads": 16,
                        "num_kv_heads": 4, "ffn_hidden_size": 8192, "vocab_size": 32000,
                        "activation": "swiglu", "normalization": "rmsnorm",
                        "position_embedding": "rope"},
              "parallel": {}, "training": {"global_batch_size": 4, "micro_batch_size": 4,
                                           "seq_length": 2048},
              "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 1, "gpus_per_node": 1}}
SCALE_EDITS = [{"model": {"num_layers": 2000}}, {"model": {"num_layers": 10000}},
               {"model": {"num_layers": 2000}, "parallel": {"recompute": "full"}},
               {"model": {"num_layers": 3000}, "training": {"attention": "eager"}},
               {"training": {"seq_length": 10**6}}, {"model": {"vocab_size": 10**8}},
               {"model": {"num_experts": 4096, "moe_router_topk": 8, "moe_ffn_hidden_size": 64}},
               {"model": {"head_dim": 4096}}, {"training": {"global_batch_size": 4096}}]


def scale_cases() -> Iterator[Case]:
    """Large layer counts, sequences and vocabularies on one GPU under each framework profile
    (a plain PyTorch loop replays its allocator): an answer or one line within 20 s."""
    for fw in ["pytorch", None, "megatron-core", "torchtitan", "deepspeed", "nanotron"]:
        for edit in SCALE_EDITS:
            cfg = copy.deepcopy(SCALE_BASE)
            for section, fields in edit.items():
                cfg[section].update(fields)
            if fw:
                cfg["training"]["framework"] = fw
            yield _case(f"framework={fw} {edit}", cfg)


# ------------------------------------------------------------------------- CLI surfaces

SET_FIELDS = ["model.head_dim", "model.qk_head_dim", "model.v_head_dim",
              "model.qk_pos_emb_head_dim", "model.mtp_num_layers", "training.fp8_recipe",
              "parallel.pipeline_schedule", "parallel.pipeline_model_parallel_layout",
              "parallel.vpp", "parallel.decoder_first_pipeline_num_layers",
              "training.expandable_segments", "training.attention", "model.num_experts",
              "model.moe_router_topk", "parallel.moe_token_dispatcher_type",
              "cluster.compute_db"]
SET_VALUES = ["0", "-1", "1", "7", "576", "nan", "inf", "-inf", "1e400", "", "null", "abc",
              "[1]", "{a: 1}", "true", "dualpipe_v", "mxfp8", "blockwise", "E|t*4|L", "2.5"]


def _yaml(workdir: str, name: str, cfg: dict) -> str:
    import yaml
    path = os.path.join(workdir, name)
    if not os.path.exists(path):
        with open(path, "w") as f:
            yaml.safe_dump(cfg, f)
    return path


def set_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for base in ("dense", "mla"):
            path = _yaml(workdir, f"{base}.yaml", BASES[base])
            for field in SET_FIELDS:
                for v in SET_VALUES:
                    args = ["simulate", path, "--set", f"{field}={v}", "--format", "json"]
                    yield f"{base} --set {field}={v!r}", (lambda a=args: _cli(a))
    return cases


def _db_files(workdir: str) -> dict[str, str]:
    texts = {"empty": "", "not_json": "{", "list": "[]", "nan": '{"version": NaN}',
             "kernels_nan": json.dumps({"gpu": "h100-sxm-80gb", "kernels": [
                 {"kind": "gemm", "m": 1, "n": 1, "k": 1, "time_s": float("nan")}]}),
             "kernels_neg": '{"gpu": "h100-sxm-80gb", "entries": {"gemm": [[1,1,1,-1.0]]}}',
             "deep": "[" * 5000 + "]" * 5000, "bytes": "\x00\xff"}
    out = {}
    for name, text in texts.items():
        p = os.path.join(workdir, f"db_{name}.json")
        with open(p, "w", encoding="latin-1") as f:
            f.write(text)
        out[name] = p
    d = os.path.join(workdir, "db_dir")
    os.makedirs(d, exist_ok=True)
    out["dir"] = d
    out["missing"] = os.path.join(workdir, "nope.json")
    return out


def command_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        dense = _yaml(workdir, "dense.yaml", BASES["dense"])
        mla = _yaml(workdir, "mla.yaml", BASES["mla"])
        for name, p in _db_files(workdir).items():
            for base in (dense, mla):
                args = ["simulate", base, "--set", f"cluster.compute_db={p}"]
                yield f"simulate compute_db {name}", (lambda a=args: _cli(a))
            args = ["validate", str(KERNELS_CSV), "--compute-db", p]
            if name in ("not_json", "dir", "missing"):
                yield f"validate kernels --compute-db {name}", (lambda a=args: _cli(a))
        small = ["--gpu", "h100", "--gpus", "8", "--global-batch", "16", "--seq", "512",
                 "--workers", "1", "--set", "model.hidden_size=256",
                 "--set", "model.num_layers=4", "--set", "model.num_attention_heads=4",
                 "--set", "model.vocab_size=1024"]
        for extra in (["--schedules", "dualpipe_v"], ["--schedules", "zb_v,dualpipe"],
                      ["--schedules", "bogus"], ["--schedules", ""], ["--schedules", ","],
                      ["--max-vpp", "0"], ["--max-vpp", "64"], ["--pp", "1,2,4,8,16"],
                      ["--set", "model.head_dim=576"], ["--set", "model.head_dim=7"],
                      ["--set", "training.fp8_recipe=mxfp8", "--dtype", "fp8"],
                      ["--set", "training.fp8_recipe=blockwise", "--dtype", "fp8"],
                      ["--set", "model.mtp_num_layers=1"],
                      ["--set", "parallel.pipeline_schedule=dualpipe_v"],
                      ["--set", "parallel.pp=2"], ["--set", "parallel.vpp=2"],
                      ["--set", "parallel.pipeline_model_parallel_layout=E|t*4|L"],
                      ["--set", "model.qk_head_dim=192"],
                      ["--set", "model.num_experts=4", "--ep", "1,2,4,8"],
                      ["--set", "model.num_experts=4", "--etp", "0"],
                      ["--set", "training.expandable_segments=true"],
                      ["--reference", "tp=1,pp=2,vpp=2,mbs=1"],
                      ["--reference", "pp=4,schedule=dualpipe_v"],
                      ["--set", "cluster.compute_db=auto"]):
            for cmd in ("search", "plan"):
                args = [cmd, "llama3-8b", *small, *extra]
                if cmd == "plan":
                    args = [a for a in args if a not in ("--gpus", "8")]
                    args += ["--tokens", "1e9", "--max-gpus", "16"]
                    args = _drop_option(args, "--global-batch")
                    args = _drop_option(args, "--gpus")
                yield " ".join(args), (lambda a=args: _cli(a))
        for vary in ["model.head_dim=1,7,300,576", "model.qk_head_dim=1:1000",
                     "parallel.pipeline_schedule=dualpipe,zb_v,bogus",
                     "training.fp8_recipe=delayed,mxfp8", "model.mtp_num_layers=0:3",
                     "parallel.vpp=1:4", "parallel.pp=1:8", "model.head_dim=nan,inf",
                     "model.head_dim=-5:5"]:
            for base in (dense, mla):
                args = ["sweep", base, "--vary", vary, "--steps", "4", "--format", "json"]
                yield " ".join(args), (lambda a=args: _cli(a))
        for extra in (["--days", "1"], ["--tokens", "1e12"], ["--tokens", "nan"],
                      ["--days", "1", "--interval", "0"], ["--days", "1", "--interval", "nan"],
                      ["--days", "1", "--set", "parallel.pipeline_schedule=dualpipe_v",
                       "--set", "parallel.pp=2"]):
            args = ["goodput", mla, *extra, "--trials", "5"]
            yield " ".join(args), (lambda a=args: _cli(a))
    return cases


def _drop_option(args: list[str], option: str) -> list[str]:
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a == option:
            skip = True
            continue
        out.append(a)
    return out


def output_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    """``simulate --trace/--plot/--format table`` of each pipeline schedule, MLA with MTP and
    an MoE layout: the outputs of a schedule written, not only its numbers."""
    def cases() -> Iterator[Case]:
        configs = []
        for sched in ["gpipe", "1f1b", "interleaved_1f1b", "zb_h1", "zb_h2", "zb_2p", "zb_v",
                      "interleaved_zb", "dualpipe", "dualpipe_v"]:
            vpp = 2 if sched in ("interleaved_1f1b", "interleaved_zb") else None
            configs.append((sched, _edit("dense", parallel={"pp": 4, "vpp": vpp,
                                                            "pipeline_schedule": sched},
                                         model={"num_layers": 16},
                                         training={"global_batch_size": 16})))
        configs.append(("mla+mtp", _edit("mla", model={"mtp_num_layers": 1})))
        configs.append(("moe dualpipe_v", _edit("moe", parallel={"pipeline_schedule":
                                                                 "dualpipe_v"})))
        configs.append(("layout", _edit("dense", parallel={
            "pp": 2, "pipeline_model_parallel_layout": "Et|ttt|tt|tL"}, model={"num_layers": 7})))
        for name, cfg in configs:
            path = _yaml(workdir, f"out_{name.replace(' ', '_')}.yaml", cfg)
            for extra in (["--trace", os.path.join(workdir, "t.json")],
                          ["--plot", os.path.join(workdir, "p.png")],
                          ["--format", "table"], ["--max-tasks", "1"]):
                args = ["simulate", path, *extra]
                yield f"{name}: {' '.join(extra)}", (lambda a=args: _cli(a))
    return cases


def main(argv: list[str] | None = None) -> int:
    from fuzz_inputs43_files import (
        db_cases,
        kernel_cases,
        kernel_refusal_cases,
        layers_cases,
        row_cases,
    )

    ap = surface_parser()
    ap.add_argument("--pairs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=43)
    args = ap.parse_args(argv)
    only = only_of(args)
    with tempfile.TemporaryDirectory() as workdir:
        surfaces = {name: edit_cases(name) for name in SURFACE_EDITS}
        surfaces["random"] = random_cases(args.seed, args.pairs)
        surfaces["combos"] = combo_cases(args.seed, args.pairs)
        surfaces["scale"] = scale_cases
        surfaces["sets"] = set_cases(workdir)
        surfaces["kernels"] = kernel_cases(workdir, args.seed)
        surfaces["kernel_refusals"] = kernel_refusal_cases
        surfaces["commands"] = command_cases(workdir)
        surfaces["db"] = db_cases(workdir, args.seed)
        surfaces["rows"] = row_cases(workdir)
        surfaces["outputs"] = output_cases(workdir)
        surfaces["layers"] = layers_cases(workdir, args.seed)
        out = run_surfaces(surfaces, only)
    return print_report(out, every=args.every)


if __name__ == "__main__":
    sys.exit(main())
