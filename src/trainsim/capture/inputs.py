"""Resolve what ``trainsim capture`` / ``trainsim export`` were given into a capture source and
a run configuration.

CONFIG may be a Hugging Face ``config.json`` (or its directory), a trainsim run config
(YAML/JSON) whose ``model`` is ``{hf_config: path}``, a preset name or fields (a Llama- or
Mixtral-style model is written out as a Hugging Face config), or ``package.module:factory``.
"""

from __future__ import annotations

import atexit
import json
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

from trainsim.catalog import (
    apply_overrides,
    check_option_sets,
    read_config_file,
    run_config_from_dict,
)
from trainsim.config import ModelConfig, RunConfig
from trainsim.errors import ConfigError


def hf_config_from_model(m: ModelConfig) -> dict[str, Any]:
    """A transformers config of the same architecture (Llama, Mixtral or GPT-2 style)."""
    if m.is_mla or m.parallel_block or m.moe_shared_expert_intermediate_size or \
            m.moe_first_dense_layers or m.moe_layer_freq != 1:
        raise ConfigError(f"model {m.name}: only Llama-, Mixtral- and GPT-2-style models are "
                          "written as Hugging Face configs; give model.hf_config instead")
    if m.activation == "swiglu":
        cfg: dict[str, Any] = {
            "model_type": "mixtral" if m.is_moe else "llama",
            "architectures": ["MixtralForCausalLM" if m.is_moe else "LlamaForCausalLM"],
            "hidden_size": m.hidden_size, "num_hidden_layers": m.num_layers,
            "num_attention_heads": m.num_attention_heads, "num_key_value_heads": m.kv_heads,
            "head_dim": m.kv_channels,
            "intermediate_size": m.expert_ffn_size if m.is_moe else m.ffn_size,
            "vocab_size": m.vocab_size, "max_position_embeddings": m.max_position_embeddings,
            "rms_norm_eps": 1e-5, "hidden_act": "silu", "rope_theta": 10000.0,
            "tie_word_embeddings": m.tied_embeddings, "attention_bias": m.qkv_bias,
            "attention_dropout": m.attention_dropout, "sliding_window": m.sliding_window,
        }
        if m.is_moe:
            cfg.update(num_local_experts=m.num_experts, num_experts_per_tok=m.moe_router_topk)
        else:  # LlamaMLP's gate/up/down_proj: bias=config.mlp_bias
            cfg.update(mlp_bias=m.mlp_bias)
        return cfg
    return {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": m.hidden_size,
            "n_layer": m.num_layers, "n_head": m.num_attention_heads, "n_inner": m.ffn_size,
            "vocab_size": m.vocab_size, "n_positions": m.max_position_embeddings,
            "activation_function": m.hidden_act or "gelu_new", "resid_pdrop": m.hidden_dropout,
            "embd_pdrop": m.hidden_dropout, "attn_pdrop": m.attention_dropout}


def _write_temp_hf(m: ModelConfig) -> str:
    d = Path(tempfile.mkdtemp(prefix="trainsim-hf-"))
    # removed when the process ends: each capture or export of a run config left one behind
    # (fuzz33: 471 in a shared /tmp)
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    (d / "config.json").write_text(json.dumps(hf_config_from_model(m), indent=1))
    return str(d / "config.json")


def is_hf_config(path: str | Path) -> bool:
    """Whether a JSON file is a Hugging Face model config (not a trainsim run config)."""
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    if p.suffix != ".json" or not p.exists():
        return False
    try:  # utf-8-sig: a byte-order mark, as model_from_hf_config's reader passes it over
        data = json.loads(p.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return False
    return isinstance(data, dict) and ("model_type" in data or "architectures" in data)


def resolve(config: str, overrides: dict[str, Any], set_args: tuple[str, ...] = (),
            capture: bool = True) -> tuple[str, RunConfig | None]:
    """(capture source, run config or None for a factory without a run config). Without
    ``capture`` (an export of the analytical layers) a run config's model is not written as
    a Hugging Face config (MLA and other models it cannot write export all the same); the
    source is then ''."""
    check_option_sets(set_args, {  # robust51: one of the two won in silence
        field: (f"--{'' if v else 'no-'}{name}" if isinstance(v, bool) else f"--{name} {v}", v)
        for name, field in OPTION_FIELDS.items() if (v := overrides.get(name)) is not None})
    path = Path(config)
    if ":" in config and not path.exists():
        return config, None
    if is_hf_config(config):
        hf = str(path / "config.json" if path.is_dir() else path)
        return hf, default_run_config({"hf_config": hf}, overrides, set_args)
    if not path.exists():
        raise ConfigError(f"{config}: no such file (expected a Hugging Face config.json, a "
                          "trainsim run config or package.module:factory)")
    raw = apply_overrides(read_config_file(path), list(set_args) + _as_sets(overrides))
    cfg = run_config_from_dict(raw)
    model = raw.get("model")
    if isinstance(model, dict) and "hf_config" in model:
        hf = Path(model["hf_config"])
        hf = hf if hf.is_absolute() else Path(raw.get("_base_dir", ".")) / hf
        return str(hf), cfg
    return (_write_temp_hf(cfg.model) if capture else ""), cfg


OPTION_FIELDS = {"tp": "parallel.tp", "sp": "parallel.sequence_parallel", "cp": "parallel.cp",
                 "ep": "parallel.ep", "seq": "training.seq_length",
                 "mbs": "training.micro_batch_size", "gpu": "cluster.gpu",
                 "gpus": "cluster.num_gpus", "gbs": "training.global_batch_size"}
"""The run-config field each of ``capture`` / ``export``'s options sets."""


def _as_sets(overrides: dict[str, Any]) -> list[str]:
    return [f"{OPTION_FIELDS[k]}={json.dumps(v) if isinstance(v, bool) else v}"
            for k, v in overrides.items() if v is not None]


def default_run_config(model: Any, o: dict[str, Any], set_args: tuple[str, ...] = ()) -> RunConfig:
    """A run on DGX H100 nodes with the smallest data-parallel size the parallel sizes allow."""
    tp, cp, ep = o.get("tp") or 1, o.get("cp") or 1, o.get("ep") or 1
    sp = o.get("sp")
    sp = tp > 1 if sp is None else sp
    dp = ep // math.gcd(ep, tp * cp)
    gpus = o.get("gpus") or tp * cp * dp
    mbs = o.get("mbs") or 1
    data = {"model": model,
            "parallel": {"tp": tp, "cp": cp, "ep": ep, "sequence_parallel": sp},
            "training": {"seq_length": o.get("seq") or 4096, "micro_batch_size": mbs,
                         "global_batch_size": o.get("gbs") or mbs * 8 * max(1, gpus // (tp * cp))},
            "cluster": {"node": "dgx-h100", "num_gpus": gpus}}
    if o.get("gpu"):
        data["cluster"]["gpu"] = o["gpu"]
    return run_config_from_dict(apply_overrides(data, list(set_args)))
