"""Regenerate ``src/trainsim/catalog/hf_unmodelled.py``: the causal-LM model types of the
installed transformers that trainsim would read by their names while their structure is not
modelled (refuse31, from fuzz31b's survey).

``python benchmarks/hf_survey.py > src/trainsim/catalog/hf_unmodelled.py`` with transformers and
torch installed (written with transformers 5.24.0, torch CPU; a few minutes). For each type of
``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`` outside ``hf_class_defaults.FAMILIES`` (those are checked
exactly by ``tests/test_fuzz31.py``) whose config class is not composite (no ``sub_configs``):
its class-default config at ``hf_reference._core``'s small sizes (4 layers, a 262,144-token
vocabulary), ``to_dict`` written as a config.json, read by trainsim (with the list emptied) and
compared with ``AutoModelForCausalLM.from_config`` on the meta device. A type trainsim reads
whose parameter count is more than ``TOLERANCE`` off is listed; the types it refuses already, or
that transformers cannot build at these sizes, are not. The same at the class's own default
sizes (CTRL's ``dff`` is 4 x hidden at the core sizes: off only there). A type whose config
class declares a sparse-attention indexer (``index_n_heads``: DeepSeek-V3.2, GLM-MoE-DSA) is
listed too, its parameter gap small (-0.1 to -0.4 %) but its attention priced dense. ``NOTES`` says, from fuzz31b's reading of
each modeling file, what trainsim does not model; a listed type without a note is named by its
gap alone. ``--table`` prints every surveyed type's figures instead.

Composite config classes (``sub_configs``: a ``text_config`` beside a vision or audio one, or
Moshi's depth decoder; fuzz32) are built at their class defaults only (``_core`` sizes the top
level, which a composite does not read) and compared on their language model: the causal-LM
class's parameters less those under a module named for another modality (``NON_TEXT``), which
trainsim says it does not simulate. Types whose class defaults transformers cannot build
(``head_dim`` or ``num_key_value_heads`` None read by the attention module, DOTS.llm1's expert
count None, Cohere Compass's ``rope_parameters`` not keyed by layer type) are built with the
smallest repair that lets them (``REPAIRS``), the same on both sides.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import sys
import tempfile
import textwrap
import warnings
from pathlib import Path

from hf_class_defaults import FAMILIES
from hf_reference import _core

TOLERANCE = 0.005
SIZES = ("core", "default")
SIZE_NAMES = {"core": "4 layers at hf_reference's core sizes", "default": "the class defaults"}
NOTES = {
    "jetmoe": "attention experts (a mixture of query/output projections per layer)",
    "ctrl": "its dff-wide MLP (read as trainsim's default width)",
    "moshi": "its gating MLP (fc1 ffn_dim wide, fc2 half of it: read as a gated MLP ffn_dim "
    "wide), depth decoder and per-codebook embeddings",
    "hrm": "its two recurrent (high/low-level) module stacks",
    "doge": "its dynamic-mask attention and cross-domain MoE MLP",
    "cpmant": "its segment and position-bias embeddings and prompt tokens",
    "xlnet": "its two-stream relative attention (r/s/segment biases)",
    "cohere2_moe": "per-layer dense or sparse MLPs (mlp_layer_types)",
    "laguna": "per-layer head counts and its attention output gate",
    "mamba": "its state-space (Mamba) mixer layers", "falcon_mamba": "its state-space (Mamba) "
    "mixer layers", "rwkv": "its RWKV time- and channel-mixing layers",
    "gemma4_text": "its per-layer attributes (layers of different shapes)",
    "gemma4_unified_text": "its per-layer attributes (layers of different shapes)",
    "dots3_note_text": "its per-layer attributes (layers of different shapes)",
}
NOTES.update({
    "moss_transcribe_diarize": "its output layer tied to the embedding by the outer config's "
    "tie_word_embeddings (class default true) while its text_config says untied",
    "gemma4": "its per-layer attributes (layers of different shapes)",
    "gemma4_unified": "its per-layer attributes (layers of different shapes)",
    "gemma4_unified_assistant": "its per-layer attributes (layers of different shapes) and its "
    "pre/post projections",
    "hunyuan_v1_moe": "experts beside a shared MLP both intermediate_size wide, and moe_topk "
    "(HunYuanMoEV1Moe; num_experts and moe_topk may be per-layer lists)",
})
NON_TEXT = ("vision", "visual", "audio", "image_encoder", "multi_modal_projector",
            "embed_tokens_extend")
"""Name parts of a composite model's modules that are not its language model (Gemma 3's
``vision_tower``, GOT-OCR2's ``multi_modal_projector``, MOSS's ``audio_tower``, GIT's
``image_encoder`` and ``visual_projection``, Fuyu's ``vision_embed_tokens``, Phi-4-multimodal's
``embed_tokens_extend``: its image and audio embedding)."""


def _head_dim(cfg: object) -> dict[str, object]:
    return {"head_dim": cfg.hidden_size // cfg.num_attention_heads}


REPAIRS = {
    # ``self.scaling = self.head_dim**-0.5`` with the class's head_dim None
    "ministral": _head_dim, "hunyuan_v1_dense": _head_dim, "hunyuan_v1_moe": _head_dim,
    # NemotronAttention: ``num_heads // num_key_value_heads``, class default None
    "nemotron": lambda cfg: {"num_key_value_heads": cfg.num_attention_heads},
    # Dots1TopkRouter / experts: ``num_local_experts`` (n_routed_experts) None
    "dots1": lambda cfg: {"n_routed_experts": 8, "num_experts_per_tok": 2,
                          "n_shared_experts": 1},
    # CohereCompassRotaryEmbedding reads ``rope_parameters[layer_type]``; the class default {}
    "cohere_compass_text": lambda cfg: {"rope_parameters": {
        "full_attention": {"rope_type": "default", "rope_theta": 10000.0}}},
}
"""Fields set where transformers 5.24.0 cannot build a type at its class defaults (the error
each raises in ``from_config``, named above): the value a hub file of the type carries, or the
attention's own fallback."""
INDEXER = ("a sparse-attention indexer (index_n_heads: its weights, and attention over the "
           "indexer's top-k keys, which trainsim would price dense)")


def _quiet():
    stack = contextlib.ExitStack()
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("ignore")
    stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
    return stack


def survey() -> list[dict[str, object]]:
    from transformers import CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from trainsim.catalog import hf_unmodelled

    hf_unmodelled.UNMODELLED = {}  # read every type as the reader would without the list
    rows: list[dict[str, object]] = []
    for kind in sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES):
        if kind in FAMILIES or kind not in CONFIG_MAPPING:
            continue
        row: dict[str, object] = {"kind": kind}
        rows.append(row)
        cls = CONFIG_MAPPING[kind]
        row["indexer"] = "index_n_heads" in {f.name for f in dataclasses.fields(cls)}
        if getattr(cls, "sub_configs", None):
            row["status"] = "composite"
            _compare(kind, cls, row, "default")
            continue
        for size in SIZES:
            _compare(kind, cls, row, size)
    return rows


def _compare(kind: str, cls: type, row: dict[str, object], size: str) -> float | None:
    """Build ``kind`` at ``size`` (``_core`` or the class defaults) and read it with trainsim;
    the relative parameter gap into ``row`` (keys suffixed by ``size``), None where not read."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    status = "status" if size == "core" and "status" not in row else f"status_{size}"

    from trainsim.catalog import model_from_hf_config
    from trainsim.errors import ConfigError
    from trainsim.model.counts import total_params

    with _quiet():
        try:
            core = _core(kind, cls) if size == "core" else {}
            cfg = AutoConfig.for_model(kind, **core)
            if kind in REPAIRS:
                cfg = AutoConfig.for_model(kind, **core, **REPAIRS[kind](cfg))
            with torch.device("meta"):
                model = AutoModelForCausalLM.from_config(cfg)
            ref = sum(p.numel() for name, p in model.named_parameters()
                      if not any(part in name for part in NON_TEXT))
            text = json.dumps(cfg.to_dict(), default=str)
        except Exception as exc:  # noqa: BLE001 - any failure to build: not surveyed
            row[status] = f"not built ({type(exc).__name__})"
            return None
    with tempfile.TemporaryDirectory() as tmp, _quiet():
        path = Path(tmp) / "config.json"
        path.write_text(text)
        try:
            m = model_from_hf_config(path)
        except ConfigError:
            row[status] = "refused"
            return None
        except Exception as exc:  # noqa: BLE001
            row[status] = f"reader error ({type(exc).__name__})"
            return None
    got = total_params(dataclasses.replace(m, mtp_num_layers=0))
    row[status] = "read"
    row[f"params_{size}"], row[f"trainsim_{size}"] = ref, got
    row[f"off_{size}"] = (got - ref) / ref
    return row[f"off_{size}"]


def main() -> None:
    import transformers

    rows = survey()
    if "--table" in sys.argv:
        for row in rows:
            figures = [f"{size} {row[f'params_{size}']:>16,d} {row[f'trainsim_{size}']:>16,d} "
                       f"{100 * row[f'off_{size}']:+8.2f} %" for size in SIZES
                       if f"off_{size}" in row]
            print(f"{row['kind']:24s} {row['status']:28s} " + " | ".join(figures)
                  + (f" (default: {row['status_default']})" if "status_default" in row
                     and row["status_default"] != "read" else ""))
        return
    listed = [r for r in rows if max(abs(r.get(f"off_{size}", 0.0)) for size in SIZES) > TOLERANCE
              or r.get("indexer") and any(f"off_{size}" in r for size in SIZES)]
    print(f'"""Causal-LM model types of transformers {transformers.__version__} that trainsim '
          "refuses: read by its names, each would\nbe more than "
          f"{100 * TOLERANCE:g} % off in parameters, or has a sparse-attention indexer it would "
          "price dense\n(generated by ``benchmarks/hf_survey.py``; do not edit: "
          '``hf_unread.unmodelled`` refuses them)."""\n')
    print("from __future__ import annotations\n")
    print("UNMODELLED: dict[str, str] = {")
    for r in listed:
        what = "; ".join([*([NOTES[r["kind"]]] if r["kind"] in NOTES else []),
                          *([INDEXER] if r["indexer"] else [])]) \
            or "a structure trainsim's reader does not hold"
        size = max(SIZES, key=lambda z: abs(r.get(f"off_{z}", 0.0)))
        gap = (f"{what}; read by its names: {100 * r[f'off_{size}']:+.1f} % parameters "
               f"({r[f'trainsim_{size}']:,} read, {r[f'params_{size}']:,} built, "
               f"{SIZE_NAMES[size]})")
        parts = textwrap.wrap(gap, 84, drop_whitespace=False, break_on_hyphens=False)
        print(f'    "{r["kind"]}": (' + "\n        ".join(json.dumps(p) for p in parts) + "),")
    print("}")


if __name__ == "__main__":
    main()
