"""Regenerate ``benchmarks/hf_reference.json``: what transformers builds from a config.json of
each family trainsim holds class defaults for (``hf_class_defaults.FAMILIES``), written twice:
``full``, every field as ``to_dict`` gives it (what ``save_pretrained`` writes in 5.24.0), and
``minimal``, the core sizes and only the fields that differ from the class's defaults (a
hand-written or older file), so that a reader which fills a left-out field with its own default
instead of the class's reads another model. ``tests/test_fuzz31.py`` reads both files with
trainsim and compares.

``python benchmarks/hf_reference.py > benchmarks/hf_reference.json`` with transformers and torch
installed (written with transformers 5.24.0, torch 2.13 CPU). Each family's file names four
layers, a 262,144-token vocabulary (above every family's special-token ids) and a head count
that its default key/value heads divide (a multiple of 32); the hidden size is the heads times
the class's default ``head_dim`` where it has one (Helium's ``o_proj`` is hidden x hidden), else
64 per head. Per family: the two files, the parameter count of ``AutoModelForCausalLM.from_config``
on the meta device, its key/value heads, its router top-k, and which layers attend within a
window of what size (``layer_types`` and ``sliding_window`` as the built config holds them).
``other_activation``: a few families written with the activation of the other MLP kind
(``OTHER_ACTIVATION``: a gated family with ``gelu``, plain ones with ``silu``), the same
fields: the family's MLP class, not the activation's name, decides its matrices (fuzz31b).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import warnings

from hf_class_defaults import FAMILIES

SKIPPED = {
    "qwen3_next": "linear-attention layers by default, gated attention: refused by trainsim",
    "qwen3_5_text": "linear-attention layers by default, gated attention: refused by trainsim",
    "qwen3_5_moe_text": "linear-attention layers by default, gated attention: refused",
    "exaone": "no modeling file in transformers 5.24.0 (remote code)",
    "dbrx": "5.24.0's DbrxAttentionConfig keeps rope_theta outside (from_config fails)",
}
CORE_NAMES = {"gpt2": ("n_embd", "n_layer", "n_head"), "gpt_bigcode": ("n_embd", "n_layer", "n_head"),
              "gptj": ("n_embd", "n_layer", "n_head"), "codegen": ("n_embd", "n_layer", "n_head"),
              "mpt": ("d_model", "n_layers", "n_heads")}
LAYERS, VOCAB = 4, 262_144
OTHER_ACTIVATION = {"mistral": "gelu", "qwen2": "gelu", "gpt_neox": "silu", "phi": "silu",
                    "starcoder2": "silu"}


def _core(kind: str, cls: type) -> dict[str, int]:
    default = cls()
    kv = getattr(default, "num_key_value_heads", None)
    kv = kv if isinstance(kv, int) and kv > 0 else 8
    heads = 32 * kv // math.gcd(32, kv)
    head_dim = getattr(default, "head_dim", None)
    hidden = heads * (head_dim if isinstance(head_dim, int) and head_dim else 64)
    names = CORE_NAMES.get(kind, ("hidden_size", "num_hidden_layers", "num_attention_heads"))
    return {**dict(zip(names, (hidden, LAYERS, heads), strict=True)), "vocab_size": VOCAB}


def _kv_heads(model: object, heads: int | None) -> int | None:
    """The key/value heads of the built model's first attention module: its own count
    (``num_key_value_heads``, Falcon's ``num_kv_heads``, BigCode's ``kv_heads``) or
    ``num_attention_heads / num_key_value_groups``; the query heads where it holds neither
    (multi-head attention)."""
    for module in model.modules():  # type: ignore[attr-defined]
        for name in ("num_key_value_heads", "num_kv_heads", "kv_heads"):
            if isinstance(getattr(module, name, None), int):
                return getattr(module, name)
        groups = getattr(module, "num_key_value_groups", None)
        if isinstance(groups, int) and groups > 0 and heads:
            return heads // groups
    return heads


def reference(kind: str, **extra: object) -> dict[str, object]:
    import torch
    from transformers import CONFIG_MAPPING, AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(kind, **_core(kind, CONFIG_MAPPING[kind]), **extra)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    window = getattr(cfg, "sliding_window", None)
    types = getattr(cfg, "layer_types", None)
    if window is None or (getattr(cfg, "use_sliding_window", True) is False):
        windowed = [False] * LAYERS
    elif isinstance(types, list):
        windowed = [t == "sliding_attention" for t in types]
    else:
        windowed = [True] * LAYERS
    heads = getattr(cfg, "num_attention_heads", None)
    kv = _kv_heads(model, heads)
    full = json.loads(json.dumps(cfg.to_dict(), default=str))
    default = json.loads(json.dumps(CONFIG_MAPPING[kind]().to_dict(), default=str))
    core = set(_core(kind, CONFIG_MAPPING[kind])) | {"model_type"}
    return {"full": full,
            "minimal": {k: v for k, v in full.items() if k in core or default.get(k) != v},
            "params": sum(p.numel() for p in model.parameters()),
            "kv_heads": kv if isinstance(kv, int) else heads,
            "topk": getattr(cfg, "num_experts_per_tok", None),
            "window": window if any(windowed) else None, "windowed": windowed}


def main() -> None:
    import transformers

    out: dict[str, object] = {"transformers": transformers.__version__, "skipped": SKIPPED,
                              "families": {}, "other_activation": {}}
    for kind in FAMILIES:
        if kind in SKIPPED:
            continue
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            out["families"][kind] = reference(kind)  # type: ignore[index]
    for kind, act in OTHER_ACTIVATION.items():
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            out["other_activation"][kind] = reference(kind, hidden_act=act)  # type: ignore[index]
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
