"""The cells Megatron-Bridge's performance recipes state for rows of
benchmarks/training_bridge_archive.csv that the archive's table leaves empty (the tuner or the
megatron-bridge profile filled them before), each read from the release's recipe files.

``ROWS_2606``: the 26.06 section's rows (Megatron-Bridge v0.5.0, the release the profile's 26.06
entry cites): which workload config ran (the perf scripts' default ``--config_variant v2``,
``v1`` where no V2 exists: scripts/performance/argument_parser.py L903-910, utils/utils.py
L100-121; the config whose parallel sizes and batch are the table's), and from it and the model
recipe the row's whole options set (a stated options cell replaces the profile's run options),
its CUDA-graph scope, dispatcher, recompute and pipeline layout:

- ``dp_overlap``: every model recipe overlaps the gradient reduction (``RULE_LINES``), the
  DeepSeek-V3 perf configs set it again;
- ``pp_overlap``: Megatron-Bridge overlaps pipeline sends where PP > 1 and VP > 1
  (training/comm_overlap.py L453-457);
- ``tp_overlap``: the Llama 3.1 405B recipe's CommOverlapConfig(tp_comm_overlap=True), which the
  perf config turns off under NVFP4 (llama31_llm_pretrain.py L122); TP 1 elsewhere;
- ``ep_overlap``: the workload config's ``moe_a2a_overlap`` (overrides.py
  ``_set_moe_a2a_overlap_overrides``: overlap_moe_expert_parallel_comm, delay_wgrad_compute);
- ``cuda_graphs`` with ``cuda_graph_scope``: ``cuda_graph_impl="full_iteration"`` -> scope
  ``full_iteration``, ``"transformer_engine"`` -> its scope list; none where the impl is none or
  unset (every model recipe here sets ``cuda_graph_impl = "none"``);
- ``moe_dispatcher``: the config's ``moe_flex_dispatcher_backend`` (HybridEP on every GPU here);
- recompute: the config's ``recompute_modules`` (selective, overrides.py L154-156; an empty
  list recomputes nothing), else the recipes' none;
- ``sequence_parallel``: on exactly where TP > 1 (utils/utils.py L74-76, overrides.py L226).

``ROWS_2604``: the 26.04.01 section's rows, read the same way from v0.4.2 (its line numbers in
``RULE_LINES_2604``); there a MoE config naming no flex backend runs the all-to-all dispatcher
(overrides.py L230-233), stated as ``alltoall``.

``FP8_CS``: an archive "FP8" row of 26.04.01 / 26.06 ran the per-tensor current-scaling recipe:
its model and system have an ``FP8_CS`` workload config and none of the other per-tensor
``--compute_dtype`` (``fp8_sc``; the choices are bf16, fp8_cs, fp8_mx, fp8_sc, nvfp4).

    PYTHONPATH=src python benchmarks/bridge_recipe_cells.py --check   # against the mirror

Not expressible, left out of the cells: the Llama NVFP4 V2 configs' parameter gather not
overlapped (llama31_llm_pretrain.py L123-124 ``disable_param_gather_overlap``), the MoE
full-iteration graphs' paged stash and ``moe_expert_rank_capacity_factor`` 1.5 (a buffer under
forced balance), the CuTe DSL fused grouped MLP (``cutedsl_fused_grouped_mlp``).
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

REPO_DIR = "NVIDIA-NeMo+Megatron-Bridge"
TAG = "v0.5.0"
CONFIGS = "scripts/performance/configs"
TAGS = {"26.04": "v0.4.2", "26.06": "v0.5.0"}
"""framework_version of the archive rows -> the Megatron-Bridge tag of their release."""

LLAMA31 = "llama/llama31_workload_base_configs.py"
LLAMA3 = "llama/llama3_workload_base_configs.py"
DEEPSEEK = "deepseek/deepseek_workload_base_configs.py"
GPT_OSS = "gpt_oss/gpt_oss_workload_base_configs.py"
QWEN3 = "qwen/qwen3_workload_base_configs.py"
FULL = "full_iteration"
TE_SCOPES = "attn;moe_router;moe_preprocess"
ROUTER_SCOPES = "moe_router;moe_preprocess"
DS_LAYOUT = "Et*4|(t*4|)*14tmL"


def _r(config: tuple[str, str], options: str, scope: str = "", dispatcher: str = "",
       modules: str | None = None, layout: str = "", fp8_recipe: str = "",
       offload: int = 0) -> dict:
    return {"config": config, "options": options, "cuda_graph_scope": scope,
            "moe_dispatcher": dispatcher, "recompute": "selective" if modules else "none",
            "recompute_modules": modules or "", "pipeline_layout": layout,
            "fp8_recipe": fp8_recipe, "cpu_offloading_num_layers": str(offload)}


_ROW = "bridgearch2606-"
ROWS_2606 = {
    _ROW + "llama3.1-405b-gb300-256-fp8": _r(
        (LLAMA31, "LLAMA31_405B_PRETRAIN_CONFIG_GB300_FP8_CS_V2"), "tp_overlap;pp_overlap;dp_overlap",
        fp8_recipe="current"),
    _ROW + "llama3.1-405b-gb300-256-mxfp8": _r(
        (LLAMA31, "LLAMA31_405B_PRETRAIN_CONFIG_GB300_FP8_MX_V2"), "tp_overlap;pp_overlap;dp_overlap"),
    _ROW + "llama3.1-405b-gb300-256-nvfp4": _r(
        (LLAMA31, "LLAMA31_405B_PRETRAIN_CONFIG_GB300_NVFP4_V2"), "pp_overlap;dp_overlap"),
    _ROW + "llama3.1-405b-gb200-256-nvfp4": _r(
        (LLAMA31, "LLAMA31_405B_PRETRAIN_CONFIG_GB200_NVFP4_V2"), "pp_overlap;dp_overlap"),
    _ROW + "deepseek-v3-gb300-256-mxfp8-gbs4096": _r(
        (DEEPSEEK, "DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_FP8_MX_V2"),
        "pp_overlap;dp_overlap;ep_overlap;cuda_graphs", FULL, "hybridep", "", DS_LAYOUT),
    _ROW + "deepseek-v3-gb300-256-mxfp8-gbs15360": _r(
        (DEEPSEEK, "DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_FP8_MX_V2"),
        "pp_overlap;dp_overlap;ep_overlap;cuda_graphs", FULL, "hybridep", "", DS_LAYOUT),
    _ROW + "deepseek-v3-b300-256-mxfp8": _r(
        (DEEPSEEK, "DEEPSEEK_V3_PRETRAIN_CONFIG_B300_FP8_MX_V2"), "dp_overlap;cuda_graphs",
        TE_SCOPES, "hybridep", "mla_up_proj"),
    _ROW + "gpt-oss-120b-gb300-64-mxfp8": _r(
        (GPT_OSS, "GPT_OSS_120B_PRETRAIN_CONFIG_GB300_FP8_MX_V2"),
        "dp_overlap;ep_overlap;cuda_graphs", FULL, "hybridep"),
    _ROW + "gpt-oss-120b-b300-64-mxfp8": _r(
        (GPT_OSS, "GPT_OSS_120B_PRETRAIN_CONFIG_B300_FP8_MX_V2"), "dp_overlap;cuda_graphs",
        TE_SCOPES, "hybridep"),
    _ROW + "qwen3-30b-a3b-gb300-8-mxfp8": _r(
        (QWEN3, "QWEN3_30B_A3B_PRETRAIN_CONFIG_GB300_FP8_MX_V1"),
        "dp_overlap;ep_overlap;cuda_graphs", FULL, "hybridep"),
    _ROW + "qwen3-30b-a3b-b300-8-mxfp8": _r(
        (QWEN3, "QWEN3_30B_A3B_PRETRAIN_CONFIG_B300_FP8_MX_V1"),
        "dp_overlap;ep_overlap;cuda_graphs", FULL, "hybridep"),
    _ROW + "qwen3-235b-a22b-gb300-256-mxfp8": _r(
        (QWEN3, "QWEN3_235B_A22B_PRETRAIN_CONFIG_GB300_FP8_MX_V2"),
        "pp_overlap;dp_overlap;ep_overlap;cuda_graphs", FULL, "hybridep"),
}
"""Row id -> (workload config file, name) and the cells its recipe states."""

_ROW4 = "bridgearch2604p1-"
ROWS_2604 = {
    _ROW4 + "llama3-70b-gb300-64-fp8": _r(
        (LLAMA3, "LLAMA3_70B_PRETRAIN_CONFIG_GB300_FP8_CS_V2"), "dp_overlap", fp8_recipe="current",
        offload=20),
    _ROW4 + "llama3-70b-gb300-64-mxfp8": _r(
        (LLAMA3, "LLAMA3_70B_PRETRAIN_CONFIG_GB300_FP8_MX_V2"), "pp_overlap;dp_overlap"),
    _ROW4 + "llama3-70b-gb300-64-nvfp4": _r(
        (LLAMA3, "LLAMA3_70B_PRETRAIN_CONFIG_GB300_NVFP4_V2"), "pp_overlap;dp_overlap"),
    _ROW4 + "llama3-70b-gb200-64-mxfp8": _r(
        (LLAMA3, "LLAMA3_70B_PRETRAIN_CONFIG_GB200_FP8_MX_V2"), "tp_overlap;pp_overlap;dp_overlap"),
    _ROW4 + "llama3-70b-gb200-64-nvfp4": _r(
        (LLAMA3, "LLAMA3_70B_PRETRAIN_CONFIG_GB200_NVFP4_V2"), "pp_overlap;dp_overlap"),
    _ROW4 + "llama3.1-405b-gb300-256-fp8": _r(
        (LLAMA31, "LLAMA31_405B_PRETRAIN_CONFIG_GB300_FP8_CS_V2"), "tp_overlap;pp_overlap;dp_overlap",
        fp8_recipe="current"),
    _ROW4 + "llama3.1-405b-gb300-256-mxfp8": _r(
        (LLAMA31, "LLAMA31_405B_PRETRAIN_CONFIG_GB300_FP8_MX_V2"), "tp_overlap;pp_overlap;dp_overlap"),
    _ROW4 + "llama3.1-405b-gb300-256-nvfp4": _r(
        (LLAMA31, "LLAMA31_405B_PRETRAIN_CONFIG_GB300_NVFP4_V2"), "pp_overlap;dp_overlap"),
    _ROW4 + "llama3.1-405b-gb200-256-mxfp8": _r(
        (LLAMA31, "LLAMA31_405B_PRETRAIN_CONFIG_GB200_FP8_MX_V2"), "tp_overlap;pp_overlap;dp_overlap"),
    _ROW4 + "llama3.1-405b-gb200-256-nvfp4": _r(
        (LLAMA31, "LLAMA31_405B_PRETRAIN_CONFIG_GB200_NVFP4_V2"), "pp_overlap;dp_overlap"),
    _ROW4 + "deepseek-v3-gb300-256-mxfp8": _r(
        (DEEPSEEK, "DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_FP8_MX_V2"), "pp_overlap;dp_overlap", "",
        "hybridep", "mla_up_proj", DS_LAYOUT),
    _ROW4 + "deepseek-v3-b300-256-mxfp8": _r(
        (DEEPSEEK, "DEEPSEEK_V3_PRETRAIN_CONFIG_B300_FP8_MX_V2"), "dp_overlap;cuda_graphs",
        TE_SCOPES, "hybridep", "mla_up_proj"),
    _ROW4 + "gpt-oss-120b-gb300-64-bf16": _r(
        (GPT_OSS, "GPT_OSS_120B_PRETRAIN_CONFIG_GB300_BF16_V2"), "dp_overlap;cuda_graphs",
        TE_SCOPES, "alltoall"),
    _ROW4 + "gpt-oss-120b-gb200-64-bf16": _r(
        (GPT_OSS, "GPT_OSS_120B_PRETRAIN_CONFIG_GB200_BF16_V2"), "dp_overlap;ep_overlap", "",
        "alltoall", "layernorm;moe_act"),
    _ROW4 + "gpt-oss-120b-b300-64-bf16": _r(
        (GPT_OSS, "GPT_OSS_120B_PRETRAIN_CONFIG_B300_BF16_V2"), "dp_overlap;cuda_graphs",
        TE_SCOPES, "hybridep"),
    _ROW4 + "qwen3-30b-a3b-gb300-8-mxfp8": _r(
        (QWEN3, "QWEN3_30B_A3B_PRETRAIN_CONFIG_GB300_FP8_MX_V1"), "dp_overlap;cuda_graphs",
        ROUTER_SCOPES, "hybridep"),
    _ROW4 + "qwen3-30b-a3b-gb200-8-mxfp8": _r(
        (QWEN3, "QWEN3_30B_A3B_PRETRAIN_CONFIG_GB200_FP8_MX_V1"), "dp_overlap;cuda_graphs",
        ROUTER_SCOPES, "hybridep"),
    _ROW4 + "qwen3-30b-a3b-b300-8-mxfp8": _r(
        (QWEN3, "QWEN3_30B_A3B_PRETRAIN_CONFIG_B300_FP8_MX_V1"), "dp_overlap;cuda_graphs",
        ROUTER_SCOPES, "hybridep"),
    _ROW4 + "qwen3-235b-a22b-gb300-256-mxfp8": _r(
        (QWEN3, "QWEN3_235B_A22B_PRETRAIN_CONFIG_GB300_FP8_MX_V2"),
        "pp_overlap;dp_overlap;cuda_graphs", TE_SCOPES, "hybridep"),
    _ROW4 + "qwen3-235b-a22b-b300-256-mxfp8": _r(
        (QWEN3, "QWEN3_235B_A22B_PRETRAIN_CONFIG_B300_FP8_MX_V2"), "dp_overlap", "", "hybridep"),
}
"""The 26.04.01 section's rows (Megatron-Bridge v0.4.2), read as ``ROWS_2606``; the MoE rows
whose config names no flex backend run ``alltoall`` (overrides.py L230-233). llama3-70b-gb300-64-fp8
(LLAMA3_70B_..._GB300_FP8_CS_V2: Megatron FSDP, MBS 2) offloads the activations of 20 layers
(``cpu_offloading_num_layers``, overrides.py L140-143; cells60, cells59b's lead 2); every other
read config sets no offloading (0)."""

RELEASES = {"26.06": (TAG, ROWS_2606), "26.04": ("v0.4.2", ROWS_2604)}
"""framework_version -> (Megatron-Bridge tag, the rows read from its recipes)."""

RULE_LINES = (
    # the default config variant, and V1 where no V2 exists
    ("scripts/performance/argument_parser.py", 909, 'default="v2"'),
    ("scripts/performance/utils/utils.py", 111, 'if config_variant.lower() == "v2":'),
    # sequence parallel exactly where TP > 1
    ("scripts/performance/utils/utils.py", 76, "return bool(self.tensor_model_parallel_size > 1)"),
    ("scripts/performance/utils/overrides.py", 226, "cfg.model.sequence_parallel = settings.sequence_parallel"),
    # recompute_modules -> selective
    ("scripts/performance/utils/overrides.py", 155, "recipe.model.recompute_modules = recompute_modules"),
    ("scripts/performance/utils/overrides.py", 156, 'recipe.model.recompute_granularity = "selective"'),
    # pipeline sends overlapped where PP > 1 and VP > 1
    ("src/megatron/bridge/training/comm_overlap.py", 455, "if vp_size > 1:"),
    ("src/megatron/bridge/training/comm_overlap.py", 456, "comm_overlap_cfg.overlap_p2p_comm = True"),
    # Llama 3.1 405B: no graphs, no recompute, DDP overlap, TP overlap (off under NVFP4)
    ("src/megatron/bridge/recipes/llama/llama3.py", 1162, 'cfg.model.cuda_graph_impl = "none"'),
    ("src/megatron/bridge/recipes/llama/llama3.py", 1170, "cfg.model.recompute_granularity = None"),
    ("src/megatron/bridge/recipes/llama/llama3.py", 1192, "cfg.ddp.overlap_grad_reduce = True"),
    ("src/megatron/bridge/recipes/llama/llama3.py", 1203, "tp_comm_overlap=True,"),
    (f"{CONFIGS}/llama/llama31_llm_pretrain.py", 122,
     'cfg.comm_overlap.tp_comm_overlap = False if precision == "nvfp4"'),
    # DeepSeek-V3: selective (modules from the config), DDP overlap on GB300 and B300
    (f"{CONFIGS}/deepseek/deepseek_llm_pretrain.py", 40, 'cfg.model.recompute_granularity = "selective"'),
    (f"{CONFIGS}/deepseek/deepseek_llm_pretrain.py", 89,
     "cfg.model.pipeline_model_parallel_layout = base_cfg.pp_layout"),
    (f"{CONFIGS}/deepseek/deepseek_llm_pretrain.py", 99, "cfg.comm_overlap.overlap_grad_reduce = True"),
    (f"{CONFIGS}/deepseek/deepseek_llm_pretrain.py", 210, "cfg.comm_overlap.overlap_grad_reduce = True"),
    # GPT-OSS 120B: no graphs, no recompute, DDP overlap
    ("src/megatron/bridge/recipes/gpt_oss/gpt_oss.py", 218, 'cfg.model.cuda_graph_impl = "none"'),
    ("src/megatron/bridge/recipes/gpt_oss/gpt_oss.py", 231, "cfg.model.recompute_granularity = None"),
    ("src/megatron/bridge/recipes/gpt_oss/gpt_oss.py", 253, "cfg.ddp.overlap_grad_reduce = True"),
    # Qwen3 MoE: the perf configs' no recompute, the recipes' DDP overlap
    (f"{CONFIGS}/qwen/qwen3_llm_pretrain.py", 34, "cfg.model.recompute_granularity = None"),
    ("src/megatron/bridge/recipes/qwen/qwen3_moe.py", 119, "cfg.ddp.overlap_grad_reduce = True"),
    ("src/megatron/bridge/recipes/qwen/qwen3_moe.py", 232, "cfg.ddp.overlap_grad_reduce = True"),
)
"""(path, line, text the line holds) at ``TAG``: the rules the cells above follow."""

RULE_LINES_2604 = (
    ("scripts/performance/argument_parser.py", 816, 'default="v2"'),
    ("scripts/performance/utils/utils.py", 106, 'if config_variant.lower() == "v2":'),
    ("scripts/performance/utils/utils.py", 71, "return bool(self.tensor_model_parallel_size > 1)"),
    ("scripts/performance/utils/overrides.py", 210, "cfg.model.sequence_parallel = settings.sequence_parallel"),
    # a config's cpu_offloading_num_layers: activation offloading of that many layers
    ("scripts/performance/utils/overrides.py", 141, "recipe.model.cpu_offloading = True"),
    ("scripts/performance/utils/overrides.py", 142, "recipe.model.cpu_offloading_weights = False"),
    ("scripts/performance/utils/overrides.py", 143,
     "recipe.model.cpu_offloading_num_layers = cpu_offloading_num_layers"),
    ("scripts/performance/utils/overrides.py", 149, "recipe.model.recompute_modules = recompute_modules"),
    ("scripts/performance/utils/overrides.py", 150, 'recipe.model.recompute_granularity = "selective"'),
    ("scripts/performance/utils/overrides.py", 158,
     "recipe.comm_overlap.overlap_moe_expert_parallel_comm = True"),
    # no flex backend named: the all-to-all dispatcher
    ("scripts/performance/utils/overrides.py", 233, 'cfg.model.moe_token_dispatcher_type = "alltoall"'),
    # TP overlap dropped at TP 1; pipeline sends overlapped where PP > 1 and VP > 1
    ("src/megatron/bridge/training/comm_overlap.py", 443, "if model_cfg.tensor_model_parallel_size < 2:"),
    ("src/megatron/bridge/training/comm_overlap.py", 456, "comm_overlap_cfg.overlap_p2p_comm = True"),
    # Llama 3 70B and 3.1 405B: no graphs, no recompute, DDP overlap, TP overlap (off under NVFP4)
    ("src/megatron/bridge/recipes/llama/llama3.py", 697, 'cfg.model.cuda_graph_impl = "none"'),
    ("src/megatron/bridge/recipes/llama/llama3.py", 705, "cfg.model.recompute_granularity = None"),
    ("src/megatron/bridge/recipes/llama/llama3.py", 727, "cfg.ddp.overlap_grad_reduce = True"),
    ("src/megatron/bridge/recipes/llama/llama3.py", 738, "tp_comm_overlap=True,"),
    ("src/megatron/bridge/recipes/llama/llama3.py", 1148, 'cfg.model.cuda_graph_impl = "none"'),
    ("src/megatron/bridge/recipes/llama/llama3.py", 1156, "cfg.model.recompute_granularity = None"),
    ("src/megatron/bridge/recipes/llama/llama3.py", 1178, "cfg.ddp.overlap_grad_reduce = True"),
    ("src/megatron/bridge/recipes/llama/llama3.py", 1189, "tp_comm_overlap=True,"),
    (f"{CONFIGS}/llama/llama3_llm_pretrain.py", 80,
     'cfg.comm_overlap.tp_comm_overlap = False if precision == "nvfp4"'),
    (f"{CONFIGS}/llama/llama3_llm_pretrain.py", 115,
     'cfg.comm_overlap.tp_comm_overlap = False if precision == "nvfp4"'),
    (f"{CONFIGS}/llama/llama31_llm_pretrain.py", 87,
     'cfg.comm_overlap.tp_comm_overlap = False if precision == "nvfp4"'),
    (f"{CONFIGS}/llama/llama31_llm_pretrain.py", 122,
     'cfg.comm_overlap.tp_comm_overlap = False if precision == "nvfp4"'),
    # DeepSeek-V3: selective (modules from the config), layout, no graphs by default, DDP overlap
    (f"{CONFIGS}/deepseek/deepseek_llm_pretrain.py", 39, 'cfg.model.recompute_granularity = "selective"'),
    (f"{CONFIGS}/deepseek/deepseek_llm_pretrain.py", 70,
     "cfg.model.pipeline_model_parallel_layout = base_cfg.pp_layout"),
    (f"{CONFIGS}/deepseek/deepseek_llm_pretrain.py", 78, "cfg.comm_overlap.overlap_grad_reduce = True"),
    (f"{CONFIGS}/deepseek/deepseek_llm_pretrain.py", 180, "cfg.comm_overlap.overlap_grad_reduce = True"),
    ("src/megatron/bridge/recipes/deepseek/deepseek_v3.py", 125, 'cfg.model.cuda_graph_impl = "none"'),
    # GPT-OSS 120B: no graphs, no recompute, DDP overlap; GB200's CommOverlapConfig set before
    # the workload config (so its moe_a2a_overlap holds)
    ("src/megatron/bridge/recipes/gpt_oss/gpt_oss.py", 215, 'cfg.model.cuda_graph_impl = "none"'),
    ("src/megatron/bridge/recipes/gpt_oss/gpt_oss.py", 228, "cfg.model.recompute_granularity = None"),
    ("src/megatron/bridge/recipes/gpt_oss/gpt_oss.py", 250, "cfg.ddp.overlap_grad_reduce = True"),
    (f"{CONFIGS}/gpt_oss/gpt_oss_llm_pretrain.py", 81, "cfg.comm_overlap = CommOverlapConfig("),
    (f"{CONFIGS}/gpt_oss/gpt_oss_llm_pretrain.py", 84, "set_workload_base_configs(cfg, base_cfg)"),
    # Qwen3 MoE: the perf configs' no recompute, the recipes' no graphs and DDP overlap
    (f"{CONFIGS}/qwen/qwen3_llm_pretrain.py", 33, "cfg.model.recompute_granularity = None"),
    ("src/megatron/bridge/recipes/qwen/qwen3_moe.py", 70, 'cfg.model.cuda_graph_impl = "none"'),
    ("src/megatron/bridge/recipes/qwen/qwen3_moe.py", 119, "cfg.ddp.overlap_grad_reduce = True"),
    ("src/megatron/bridge/recipes/qwen/qwen3_moe.py", 184, 'cfg.model.cuda_graph_impl = "none"'),
    ("src/megatron/bridge/recipes/qwen/qwen3_moe.py", 232, "cfg.ddp.overlap_grad_reduce = True"),
)
"""The same rules at v0.4.2 (``ROWS_2604``)."""

FP8_CS = {
    "bridgearch2606-llama3.1-405b-gb300-256-fp8": (LLAMA31, "LLAMA31_405B", "GB300"),
    "bridgearch2604p1-llama3.1-405b-gb300-256-fp8": (LLAMA31, "LLAMA31_405B", "GB300"),
    "bridgearch2604p1-llama3-70b-gb300-64-fp8": (LLAMA3, "LLAMA3_70B", "GB300"),
}
"""Archive "FP8" rows -> (config file, model, system): current scaling (``FP8_CS``)."""

HELDOUT_FP8_CS = {
    "bridge2606-llama3.1-405b-gb200-256-fp8": (LLAMA31, "LLAMA31_405B", "GB200"),
    "bridge2606-llama3.1-405b-h100-1024-fp8": (LLAMA31, "LLAMA31_405B", "H100"),
    "bridge2606-qwen3-30b-a3b-h100-16-fp8": (QWEN3, "QWEN3_30B_A3B", "H100"),
}
"""benchmarks/training_heldout.csv's Bridge "FP8" rows, the same rule (typed into that file;
their other recipe cells are benchmarks/recipe_cells.csv's audit of the tuner, left tuned)."""

HELDOUT = Path(__file__).resolve().parent / "training_heldout.csv"


def note(rid: str, version: str) -> str:
    """The note's account of a row's stated cells ('' where none)."""
    out = []
    if rid in FP8_CS:
        f, model, system = FP8_CS[rid]
        out.append(f"'FP8' = current scaling: Megatron-Bridge@{TAGS[version]} {CONFIGS}/{f} has "
                   f"{model}_PRETRAIN_CONFIG_{system}_FP8_CS_V1/_V2 and no other per-tensor fp8 "
                   "config (FP8_SC) for it (FP8_CS)")
    tag, read = RELEASES.get(version, ("", {}))
    if rid in read:
        c = read[rid]
        f, name = c["config"]
        table = "ROWS_" + version.replace(".", "")
        out.append(
            f"the recipe's cells ({table}, Megatron-Bridge@{tag}): {CONFIGS}/{f} {name}; options "
            f"{c['options']} (the whole set), sequence parallel where TP > 1"
            + (f", CUDA graphs {c['cuda_graph_scope']}" if c["cuda_graph_scope"] else
               ", no CUDA graphs")
            + (f", dispatcher {c['moe_dispatcher']}" if c["moe_dispatcher"] else "")
            + (f", recompute selective {c['recompute_modules']}" if c["recompute_modules"] else
               ", no recompute")
            + (f", layout {c['pipeline_layout']}" if c["pipeline_layout"] else "")
            + (f", activations of {c['cpu_offloading_num_layers']} layers offloaded to the host"
               if c["cpu_offloading_num_layers"] != "0" else ""))
    return "; ".join(out)


def cells(rid: str, tp: str) -> dict[str, str]:
    """The cells ``rid``'s recipe states (empty: none read); ``tp``: the row's TP (the perf
    scripts run sequence parallel exactly where TP > 1)."""
    out = {}
    if rid in FP8_CS:
        out["fp8_recipe"] = "current"
    stated = ROWS_2606.get(rid) or ROWS_2604.get(rid)
    if stated:
        out.update({k: v for k, v in stated.items() if k != "config"},
                   sequence_parallel="1" if int(tp) > 1 else "0")
        if not out["fp8_recipe"]:
            del out["fp8_recipe"]
    return out


def _derived(cfg: dict) -> dict[str, str]:
    """The cells a workload config itself gives: a run with experts (EP > 1) dispatches with
    the config's flex backend, else all-to-all (overrides.py)."""
    impl = cfg.get("cuda_graph_impl")
    scope = FULL if impl == FULL else \
        ";".join(cfg.get("cuda_graph_scope") or []) if impl == "transformer_engine" else ""
    moe = (cfg.get("expert_model_parallel_size") or 1) > 1
    return {"cuda_graph_scope": scope,
            "moe_dispatcher": cfg.get("moe_flex_dispatcher_backend") or "alltoall" * moe,
            "recompute_modules": ";".join(cfg.get("recompute_modules") or []),
            "pipeline_layout": cfg.get("pp_layout") or "",
            "cpu_offloading_num_layers": str(cfg.get("cpu_offloading_num_layers") or 0),
            "ep_overlap": "ep_overlap" if cfg.get("moe_a2a_overlap") else ""}


def check(rows: dict[str, dict[str, str]]) -> list[str]:
    """``ROWS_2606``, ``ROWS_2604`` and ``FP8_CS`` against the mirror's recipe files, and each
    against the archive row it names (``rows``: id -> the generated row)."""
    import bridge_archive_rows as gen

    bad, files = [], {}

    def configs(tag: str, f: str) -> dict:
        if (tag, f) not in files:
            files[(tag, f)] = gen.recipe_configs(mirror_rows.show(REPO_DIR, tag, f"{CONFIGS}/{f}"))
        return files[(tag, f)]

    for tag, rules in ((TAG, RULE_LINES), (TAGS["26.04"], RULE_LINES_2604)):
        for path, line, want in rules:
            got = mirror_rows.show(REPO_DIR, tag, path).splitlines()[line - 1]
            if want not in got:
                bad.append(f"{path} L{line} at {tag}: {got.strip()!r}, not {want!r}")
    sizes = {"tensor_model_parallel_size": "tp", "pipeline_model_parallel_size": "pp",
             "context_parallel_size": "cp", "virtual_pipeline_model_parallel_size": "vpp",
             "expert_model_parallel_size": "ep", "micro_batch_size": "micro_batch_size",
             "global_batch_size": "global_batch_size"}
    read = [(tag, rid, c) for tag, table in RELEASES.values() for rid, c in table.items()]
    for tag, rid, c in read:
        row = rows.get(rid)
        f, name = c["config"]
        cfg = configs(tag, f).get(name)
        if row is None or cfg is None:
            bad.append(f"{rid}: no such row" if row is None else f"{rid}: no {name} at {tag}")
            continue
        if not name.endswith("_V2") and name.removesuffix("_V1") + "_V2" in configs(tag, f):
            bad.append(f"{rid}: {name}, but the default variant v2 exists at {tag}")
        for key, col in sizes.items():
            want = str(cfg.get(key) or 1)
            if row[col] != want and not (col == "global_batch_size" and rid.endswith("gbs15360")):
                bad.append(f"{rid}: {col} {row[col]} but {name} {key} {want}")
        d = _derived(cfg)
        for col in ("cuda_graph_scope", "moe_dispatcher", "recompute_modules", "pipeline_layout",
                    "cpu_offloading_num_layers"):
            if c[col] != d[col]:
                bad.append(f"{rid}: {col} {c[col]!r}, {name}: {d[col]!r}")
        opts = c["options"].split(";")
        want = ["tp_overlap"] * (int(row["tp"]) > 1 and "llama" in rid and "nvfp4" not in rid) + \
            ["pp_overlap"] * (int(row["pp"]) > 1 and int(row["vpp"] or 1) > 1) + ["dp_overlap"] + \
            [d["ep_overlap"]] * bool(d["ep_overlap"]) + ["cuda_graphs"] * bool(d["cuda_graph_scope"])
        if opts != want:
            bad.append(f"{rid}: options {c['options']!r}, the rules give {';'.join(want)!r}")
    with open(HELDOUT, newline="") as fh:
        held = {r["id"]: r for r in csv.DictReader(fh) if r["id"] in HELDOUT_FP8_CS}
    for rid, (f, model, system) in {**FP8_CS, **HELDOUT_FP8_CS}.items():
        tag = TAGS[rid.split("-")[0].removeprefix("bridgearch").removeprefix("bridge")
                   .replace("2604p1", "26.04").replace("2606", "26.06")]
        names = [n for n in configs(tag, f) if re.fullmatch(
            rf"{model}_PRETRAIN_CONFIG_{system}_FP8_[A-Z]+(_V\d)?", n)]
        kinds = {n.split("_FP8_")[1].split("_")[0] for n in names}
        if kinds - {"MX"} != {"CS"}:
            bad.append(f"{rid}: per-tensor fp8 configs at {tag}: {sorted(kinds)}")
        if rid in HELDOUT_FP8_CS:
            if held.get(rid, {}).get("fp8_recipe") != "current":
                bad.append(f"{rid}: {HELDOUT.name} does not state fp8_recipe current")
        elif rid not in rows:
            bad.append(f"{rid}: no such row")
    return bad


def main() -> None:
    if sys.argv[1:] != ["--check"]:
        sys.exit("usage: bridge_recipe_cells.py --check")
    import bridge_archive_rows as gen

    bad = check({r["id"]: r for r in gen.rows()})
    print("\n".join(bad) or "every recipe cell as in the mirror")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
