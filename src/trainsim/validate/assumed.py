"""What ``trainsim validate`` assumed for a training row's empty cells that its tuner did not
choose: the named framework's defaults (or, with no framework named, the tool's own), shown
beside the tuner's choices so that an under-specified row says what was simulated (validation
README, "Unknown cells")."""

from __future__ import annotations

from typing import Any

from trainsim.config import RunConfig
from trainsim.validate.common import _cell
from trainsim.validate.row_settings import SWITCH_KEYS
from trainsim.validate.unnamed import reduce_16bit

#: each option switch and the config flag that says it ran (the parallel section's, or the
#: training section's for cuda_graphs), in the order the options column lists them
OPTION_FLAGS = (("dp_overlap", "overlap_grad_reduce"), ("tp_overlap", "tp_comm_overlap"),
                ("pp_overlap", "overlap_p2p_comm"), ("ep_overlap", "moe_overlap_ep_comm"),
                ("cuda_graphs", "cuda_graphs"))
SHAPE_CELLS = ("hidden_size", "num_layers", "num_attention_heads", "ffn_hidden_size",
               "vocab_size")


def assumed_cells(row: dict[str, str], cfg: RunConfig, chosen: dict[str, Any]) -> dict[str, str]:
    """The values the simulated ``cfg`` took for the cells ``row`` leaves empty and the tuner
    did not choose (``chosen``): the framework (``none``: no framework's defaults, its
    choices tuned), the model shape of a preset, the gradient-reduce dtype, the fp8 recipe of
    an fp8 row, the attention kernel, the options switched on, the NVLink domain and the NIC
    speed."""
    t, p, c = cfg.training, cfg.parallel, cfg.cluster
    out: dict[str, str] = {}
    if _cell(row, "framework") is None:
        out["framework"] = "none (its choices tuned)"
    if _cell(row, "model") is not None and any(_cell(row, k) is None for k in SHAPE_CELLS):
        m = cfg.model
        out["model shape"] = (f"{m.name} preset (h {m.hidden_size}, {m.num_layers} layers, "
                              f"vocab {m.vocab_size})")
    if _cell(row, "grad_reduce_dtype") is None and "grad_reduce_dtype" not in chosen:
        out["grad_reduce_dtype"] = "fp32" if t.grad_reduce_in_fp32 else reduce_16bit(row)
    if t.dtype == "fp8" and _cell(row, "fp8_recipe") is None:
        out["fp8_recipe"] = t.fp8_recipe
    if _cell(row, "attention") is None:
        out["attention"] = t.attention
    if _cell(row, "options") is None:
        tuned = {SWITCH_KEYS[o] for o, _ in OPTION_FLAGS} | {"overlap_grad_reduce"}
        on = [o for o, flag in OPTION_FLAGS if SWITCH_KEYS[o] not in chosen and
              (flag != "overlap_grad_reduce" or flag not in chosen) and
              getattr(t if flag == "cuda_graphs" else p, flag)]
        if on or not tuned & set(chosen):
            out["options"] = ";".join(on) or "none"
    if _cell(row, "gpus_per_node") is None:
        out["gpus_per_node"] = str(c.gpus_per_node)
    if _cell(row, "nic_gbps_per_gpu") is None:
        out["nic_gbps_per_gpu"] = f"{c.nic_bw_Bps * 8 / 1e9:g}"
    return out
