"""Regenerate ``src/trainsim/catalog/hf_defaults.py``: the defaults transformers' config
classes give the config.json fields trainsim reads, per model_type.

``python benchmarks/hf_class_defaults.py > src/trainsim/catalog/hf_defaults.py`` with the
transformers release named in the output installed (the table was written with 5.24.0). A field
is listed when its config class (a strict dataclass in transformers v5) declares it, trainsim's
readers (``catalog/hf_config.py``, ``catalog/hf_families.py``) name it, and it is not one of the
core sizes whose absence trainsim refuses (``hf_config.model_from_hf_config``: a hand-written
file, not a class default of another size). A field typed without ``None`` rejects an explicit
null in transformers (``StrictDataclassFieldValidationError``), so trainsim refuses it too.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from pathlib import Path

FAMILIES = ("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma",
            "gemma2", "gemma3_text", "phi", "phi3", "falcon", "gpt_neox", "gptj", "codegen",
            "mpt", "dbrx", "glm4_moe", "bitnet", "deepseek_v2", "deepseek_v3", "cohere",
            "cohere2", "gpt2", "starcoder2", "olmo", "olmo2", "gpt_oss", "stablelm", "granite",
            "llama4_text", "qwen3_next", "olmoe", "qwen3_5_text", "qwen3_5_moe_text", "exaone",
            "flex_olmo", "gpt_bigcode", "granitemoe", "helium", "minimax_m2", "olmo3", "opt",
            "persimmon", "phimoe", "smollm3")
CORE = {"hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "n_embd",
        "n_head", "n_layer", "d_model", "n_heads", "n_layers", "model_type"}
SKIP = {"rope_parameters", "layer_types", "mlp_only_layers", "attn_config", "ffn_config",
        "text_config", "vision_config", "is_encoder_decoder"}
ROOT = Path(__file__).resolve().parents[1] / "src" / "trainsim" / "catalog"


def nullable(tp: object) -> bool:
    if isinstance(tp, str):
        return "None" in tp or "Optional" in tp
    return type(None) in typing.get_args(tp) if typing.get_origin(tp) in (
        typing.Union, types.UnionType) else tp is type(None)


def main() -> None:
    import transformers
    from transformers import CONFIG_MAPPING

    read = set()
    for name in ("hf_config.py", "hf_families.py"):
        read |= set(re.findall(r'"([a-z_0-9]+)"', (ROOT / name).read_text()))
    required: dict[str, dict[str, object]] = {}
    optional: dict[str, dict[str, object]] = {}
    aliases: dict[str, dict[str, str]] = {}
    for kind in FAMILIES:
        cls = CONFIG_MAPPING[kind]
        if getattr(cls, "attribute_map", None):
            aliases[kind] = dict(cls.attribute_map)
        for f in dataclasses.fields(cls):
            if f.name not in read or f.name in CORE | SKIP or f.default is dataclasses.MISSING:
                continue
            if nullable(f.type):
                if f.default is not None:
                    optional.setdefault(kind, {})[f.name] = f.default
            else:
                required.setdefault(kind, {})[f.name] = f.default
    print(f'"""Defaults of transformers {transformers.__version__} config classes for the '
          'config.json fields trainsim\nreads, by ``model_type`` (written by '
          '``benchmarks/hf_class_defaults.py``; each family\'s class is\n'
          '``src/transformers/models/<family>/configuration_<family>.py``).\n\n'
          '``NOT_NULL``: fields whose class type has no None: a missing field takes the '
          'default, an\nexplicit null is refused (transformers raises '
          '``StrictDataclassFieldValidationError``).\n``NULLABLE``: fields typed ``... | None`` '
          'with a default that is not None: a missing field takes\nthe default, a null keeps '
          'its meaning (no window, no rank...).\n``ALIASES``: each class\'s ``attribute_map`` '
          '(another name -> the field it sets): a config.json\ngiving the field under another '
          'name takes no default for it."""\n')
    print("from __future__ import annotations\n\nfrom typing import Any\n")
    print(f'TRANSFORMERS_VERSION = "{transformers.__version__}"\n')
    for name, table in (("NOT_NULL", required), ("NULLABLE", optional)):
        print(f"{name}: dict[str, dict[str, Any]] = {{")
        for kind in sorted(table):
            items = [f'"{k}": {json.dumps(v) if isinstance(v, str) else repr(v)}'
                     for k, v in table[kind].items()]
            lines, line = [], f'    "{kind}": {{'
            for i, item in enumerate(items):
                item += "}," if i == len(items) - 1 else ","
                if len(line) + 1 + len(item) > 99:
                    lines.append(line)
                    line = " " * (8 + len(kind)) + item
                else:
                    line += ("" if line.endswith("{") else " ") + item
            print("\n".join([*lines, line]))
        print("}\n")
    print("ALIASES: dict[str, dict[str, str]] = {")
    for kind in sorted(aliases):
        items = ", ".join(f'"{a}": "{f}"' for a, f in aliases[kind].items())
        line = f'    "{kind}": {{{items}}},'
        if len(line) > 99:  # one alias a line
            pad = " " * (8 + len(kind))
            line = f'    "{kind}": {{' + f",\n{pad}".join(
                f'"{a}": "{f}"' for a, f in aliases[kind].items()) + "},"
        print(line)
    print("}")


if __name__ == "__main__":
    main()
