"""What ``trainsim validate`` assumed for a training row's empty cells that its tuner did not
choose: the named framework's defaults (or, with no framework named, the tool's own), shown
beside the tuner's choices so that an under-specified row says what was simulated (validation
README, "Unknown cells")."""

from __future__ import annotations

from typing import Any

from trainsim.catalog import model_dict, model_name
from trainsim.catalog.defaults import DROPOUTS, profile_dropouts_of
from trainsim.catalog.frameworks import framework_profile
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
    an fp8 row, the attention kernel, the options switched on, the dropouts (where any is
    priced, or the framework's replaced the preset's), the NVLink domain and the NIC speed."""
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
    if (dropout := dropout_assumed(row, cfg)) is not None:
        out["dropout"] = dropout
    if _cell(row, "gpus_per_node") is None:
        out["gpus_per_node"] = str(c.gpus_per_node)
    if _cell(row, "nic_gbps_per_gpu") is None:
        out["nic_gbps_per_gpu"] = f"{c.nic_bw_Bps * 8 / 1e9:g}"
    return out


def dropout_assumed(row: dict[str, str], cfg: RunConfig) -> str | None:
    """The dropouts ``cfg`` took for the dropout cells ``row`` leaves empty and whose they are
    (``catalog.defaults.DROPOUTS``' precedence): the framework's (for the model's family where
    its profile keys them so), else the preset's; None where the row states both, or where
    every one taken is 0 and no framework default replaced a preset's."""
    m, t = cfg.model, cfg.training
    empty = [k for k in DROPOUTS if _cell(row, k) is None]
    if not empty:
        return None
    defaults = framework_profile(t.framework, t.framework_version).defaults if t.framework \
        else {}
    by_profile = profile_dropouts_of(defaults, m.position_embedding)
    name = _cell(row, "model")
    preset = model_dict(name) if name is not None and model_name(name) else {}
    was = {k: float(preset.get(k) or 0.0) for k in empty}
    if not any(k in by_profile and was[k] != by_profile[k] or getattr(m, k) for k in empty):
        return None
    said: dict[tuple[float, str], list[str]] = {}
    for k in empty:
        if k in by_profile:
            whose = f"{t.framework}'s" + (f" for {m.position_embedding}-position models"
                                          if isinstance(defaults.get(k), dict) else "")
            whose += f", not the preset's {was[k]:g}" if was[k] != by_profile[k] else ""
        else:
            whose = f"{m.name} preset's" if preset else "the model's"
        said.setdefault((getattr(m, k), whose), []).append(k.split("_")[0])
    return "; ".join(f"{' and '.join(keys)} {value:g} ({whose})"
                     for (value, whose), keys in said.items())
