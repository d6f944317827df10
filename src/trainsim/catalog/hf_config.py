"""A ModelConfig from a Hugging Face ``config.json`` (``catalog.model_from_hf_config``): the
fields of Llama / Mistral / Qwen / Gemma / GPT-2 / DeepSeek / gpt-oss configs, and the language
model of a multimodal config (its ``text_config``, read by ``hf_text_config``)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

from trainsim.catalog import hf_biases, hf_families, hf_hybrid, hf_llama4, hf_unread
from trainsim.catalog.hf_defaults import GATED_MLP, ROTARY
from trainsim.catalog.hf_rope import rope_type as _rope_type
from trainsim.catalog.hf_text_config import LAYER_KEYS, missing_hint, text_model
from trainsim.catalog.hf_values import model_type as _model_type
from trainsim.catalog.hf_values import positive_int as _positive_int
from trainsim.config import ModelConfig
from trainsim.config._build import build, suggest
from trainsim.config.model import HF_EAGER_ACTIVATIONS
from trainsim.config.safe_load import NonFiniteNumber, nonfinite_at, parse, read_text
from trainsim.errors import ConfigError, TrainsimWarning

WRITTEN_AS = {
    "hidden_size": ("hidden_size", "n_embd", "d_model"), "num_layers": LAYER_KEYS,
    "num_attention_heads": ("num_attention_heads", "n_head"),
    "num_kv_heads": ("num_key_value_heads",), "head_dim": ("head_dim",),
    "ffn_hidden_size": ("intermediate_size", "n_inner", "ffn_dim"),
    "vocab_size": ("vocab_size",),
    "max_position_embeddings": ("max_position_embeddings", "n_positions"),
    "attention_dropout": ("attention_dropout", "attn_pdrop"),
    "hidden_dropout": ("hidden_dropout", "resid_pdrop"), "sliding_window": ("sliding_window",),
    "attn_logit_softcapping": ("attn_logit_softcapping",), "activation_clamp": ("swiglu_limit",),
    "num_experts": hf_families.EXPERT_KEYS,
    "moe_router_topk": ("num_experts_per_tok", "moe_topk"),
    "moe_ffn_hidden_size": ("moe_intermediate_size",),
    "moe_shared_expert_intermediate_size": ("shared_expert_intermediate_size",
                                            "n_shared_experts"),
    "moe_layer_freq": ("decoder_sparse_step", "moe_layer_freq"),
    "moe_first_dense_layers": ("first_k_dense_replace",), "q_lora_rank": ("q_lora_rank",),
    "kv_lora_rank": ("kv_lora_rank",), "qk_head_dim": ("qk_nope_head_dim",),
    "qk_pos_emb_head_dim": ("qk_rope_head_dim",), "v_head_dim": ("v_head_dim",),
    "mtp_num_layers": ("num_nextn_predict_layers",),
    "attention_chunk_size": ("attention_chunk_size",)}
"""The config.json keys each ModelConfig field is read from (the first present wins), so a
refusal of the model built from a file names the key the file writes (``num_hidden_layers``,
not ``model.num_layers``)."""


TIED_MODEL_TYPES = ("cohere", "cohere2")
"""Model types whose config class ties the output layer to the embedding unless told, beside
GATED_MODEL_TYPES' Gemmas (a gated model is otherwise read untied): transformers 5.24.0
configuration_cohere.py line 81 and configuration_cohere2.py line 80,
``tie_word_embeddings: bool = True``; Command R7B's config.json leaves the key out."""


GATED_MODEL_TYPES = ("gemma", "gemma2", "gemma3", "gemma3_text", "vaultgemma")
"""Hugging Face model types whose MLP is gated whatever its activation is called: GemmaMLP
computes down_proj(act(gate_proj(x)) * up_proj(x)) with gelu_pytorch_tanh (GeGLU;
huggingface/transformers@0125ac68 src/transformers/models/gemma/modeling_gemma.py, class
GemmaMLP; Gemma 2 and 3 keep it, VaultGemma too: modeling_vaultgemma.py ``VaultGemmaMLP``).
Their configs tie the output layer to the embedding unless
told (GemmaConfig.tie_word_embeddings = True, configuration_gemma.py @008e5743), and Gemma's
config.json files leave that key out."""


POST_SUBLAYER_NORM_MODEL_TYPES = ("gemma2", "gemma3", "gemma3_text", "glm4")
"""Model types whose decoder layer norms each sublayer's output too (four RMSNorms a layer:
transformers 5.24.0 modeling_gemma2.py ``Gemma2DecoderLayer`` lines 291-295,
modeling_gemma3.py ``Gemma3DecoderLayer`` lines 367-370, modeling_glm4.py ``Glm4DecoderLayer``
lines 74-77, post_self_attn_layernorm and post_mlp_layernorm; GLM-4.5, glm4_moe, has not); their config.json names no key for
it (``ModelConfig.post_sublayer_norm``)."""


QK_NORM_MODEL_TYPES = ("gemma3", "gemma3_text", "qwen3", "qwen3_moe", "olmo2", "olmo3",
                       "olmoe", "flex_olmo", "minimax_m2", "apertus", "exaone4")
"""Model types whose attention norms the queries and keys whatever the config.json says
(transformers 5.24.0 modeling_gemma3.py lines 310-311, modeling_qwen3.py lines 229-230,
modeling_qwen3_moe.py lines 147-148, modeling_olmo2.py lines 213-214, modeling_olmo3.py lines
162-163, modeling_olmoe.py lines 222-223, modeling_flex_olmo.py lines 225-226,
modeling_minimax_m2.py lines 292-293, modeling_apertus.py line 222, modeling_exaone4.py line
209; the last four read without them before, fuzz31);
GLM-4.5's config.json says so by ``use_qk_norm`` (configuration_glm4_moe.py, default False), as
does Command R+ (model type cohere), and Persimmon, Phi and StableLM by ``qk_layernorm``
(PersimmonConfig default True, PhiConfig and StableLmConfig False: ``PersimmonAttention`` and
``PhiAttention`` build ``nn.LayerNorm(head_dim)`` q/k norms, modeling_persimmon.py lines 204-213,
modeling_phi.py lines 169-176; ``StableLmAttention`` one bias-free LayerNorm per head,
``StableLmLayerNormPerHead``, modeling_stablelm.py lines 156-161 and 244-249, read as the full
span with the model's LayerNorm bias: +(q + kv width) a layer; all read without them before)."""


QK_NORM_FULL_MODEL_TYPES = ("olmo2", "olmo3", "olmoe", "cohere", "flex_olmo", "minimax_m2",
                            "stablelm")
"""Model types whose q/k norms weigh each element of the whole query and key widths
(``ModelConfig.qk_norm_span`` "full"): OLMo 2/3's ``Olmo2RMSNorm(num_attention_heads *
head_dim)`` and ``(num_key_value_heads * head_dim)`` (modeling_olmo2.py lines 213-214,
modeling_olmo3.py lines 162-163; FlexOlmo and MiniMax-M2 the same, modeling_flex_olmo.py
lines 225-226, modeling_minimax_m2.py lines 292-293), OLMoE's over ``hidden_size`` and its key share
(modeling_olmoe.py lines 222-223), Command R+'s ``CohereLayerNorm((num_heads, head_dim))`` and
``((num_key_value_heads, head_dim))`` (modeling_cohere.py lines 231-236: normed per head,
a weight per element, no bias)."""


SLIDING_WINDOW_PATTERN = {"gemma2": 2, "gemma3": 6, "gemma3_text": 6, "cohere2": 4, "olmo3": 4,
                          "gpt_oss": 2, "vaultgemma": 2}
"""Model types whose config.json gives a ``sliding_window`` that only some layers use, and the
period N of their local:global pattern when the file lists no ``layer_types``: every N-th
layer attends globally, the N-1 before it within the window (Megatron's
``window_attn_skip_freq``, 1-based layer numbers). Gemma 2 alternates: Gemma2Config's default
``layer_types`` is "sliding_attention" if ``(i + 1) % 2`` else "full_attention"
(huggingface/transformers@008e5743 src/transformers/models/gemma2/configuration_gemma2.py;
earlier Gemma2Attention set ``sliding_window`` where ``not bool(layer_idx % 2)``), whatever
the file says, so gemma-2-9b's sliding_window 4096 covers 21 of its 42 layers. Gemma 3 reads
the period from the file's ``sliding_window_pattern`` (default 6: 5 local, 1 global;
Gemma3TextConfig ``self._sliding_window_pattern = kwargs.get("sliding_window_pattern", 6)``
and the same ``(i + 1) % pattern`` rule, modular_gemma3.py). Cohere2 too, default 4 (three
local, one global: Cohere2Config ``kwargs.pop("sliding_window_pattern", 4)``,
configuration_cohere2.py; Command R7B). OLMo 3 likewise, fixed at 4 (Olmo3Config.__post_init__:
"sliding_attention" if ``(i + 1) % 4 != 0``, transformers 5.24.0 configuration_olmo3.py), its
window 4096 when the file names none (``hf_defaults``). gpt-oss alternates, fixed at 2
(GptOssConfig.__post_init__: "sliding_attention" if ``bool((i + 1) % 2)``, transformers 5.24.0
configuration_gpt_oss.py lines 84-87); its hub files list the same ``layer_types``. VaultGemma
alternates as Gemma 2 does (VaultGemmaConfig.__post_init__, configuration_vaultgemma.py line
94)."""


SLIDING_WINDOW_MODEL_TYPES = frozenset({
    "cohere2", "gemma2", "gemma3", "gemma3_text", "gpt_oss", "mistral", "mixtral", "olmo3",
    "olmoe", "phi3", "phimoe", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "smollm3",
    "starcoder2", "vaultgemma", "exaone4", "ministral3"})
"""Of the families trainsim knows (``hf_families.known_family``), those whose transformers
5.24.0 modeling file reads ``sliding_window`` (``models/<family>/modeling_<family>.py``:
``MistralAttention`` ``sliding_window=getattr(self.config, "sliding_window", None)``, the
Qwen / Gemma layer types, ...). The others' attention is causal over the whole sequence
whatever the file says (``LlamaAttention`` names no window)."""


def _window(cfg: dict[str, Any], where: str) -> Any:
    """config.json's ``sliding_window`` where the family reads one; a known family that reads
    none ignores it, with a warning (a Llama file with ``sliding_window: 4096`` was priced as
    windowed attention)."""
    window, kind = cfg.get("sliding_window"), cfg.get("model_type")
    if window is not None and hf_families.known_family(kind) \
            and kind not in SLIDING_WINDOW_MODEL_TYPES:
        warnings.warn(f"{where}: sliding_window is no window of {kind}'s attention in "
                      f"transformers {hf_families.TRANSFORMERS_VERSION} (its modeling file "
                      "reads none); ignored", TrainsimWarning, stacklevel=3)
        return None
    return window


PARALLEL_BLOCK_MODEL_TYPES = ("cohere", "cohere2")
"""Model types whose decoder layer adds attention and MLP of one norm's output to the
residual, ``residual + hidden_states_attention + hidden_states_mlp`` (transformers 5.24.0
modeling_cohere.py ``CohereDecoderLayer``, modeling_cohere2.py ``Cohere2DecoderLayer``); their
config.json names no key for it (``ModelConfig.parallel_block``). That one norm is the
layer's only one (``parallel_block_norms`` 1: ``CohereDecoderLayer.__init__`` builds
``input_layernorm`` alone, modeling_cohere.py line 294), a LayerNorm without bias
(``NORM_WITHOUT_BIAS_MODEL_TYPES``)."""
NORM_WITHOUT_BIAS_MODEL_TYPES = ("cohere", "cohere2")
"""Model types whose LayerNorms carry no bias (``ModelConfig.norm_bias`` false): a
``CohereLayerNorm``'s ``__init__`` makes ``self.weight`` only (transformers 5.24.0
modeling_cohere.py lines 51-56; the final norm, line 371; modeling_cohere2.py lines 88-93, 271
and 344 the same). Kept apart from ``PARALLEL_BLOCK_MODEL_TYPES``: a bias-free norm and a
parallel block are separate traits that these two families happen to share."""


def model_from_hf_config(path: str | Path) -> ModelConfig:
    """A ModelConfig from a Hugging Face ``config.json`` on disk (Llama/Mistral/Qwen/GPT-2
    style)."""
    from trainsim.catalog.units import _kind, _positive

    path = Path(path)
    text = read_text(path, "Hugging Face config")
    hybrid = _hybrid(text, path)
    if hybrid is not None:
        return hybrid
    try:
        cfg, where = _screened(parse(text, str(path), "json"), path)
    except NonFiniteNumber:
        # robust49: Python's JSON dialect (json.dump writes Infinity: nvidia/Nemotron-H-8B's
        # "time_step_limit": [0.0, Infinity]) refused before the file's real problem was named
        loose = parse(text, str(path), "json", python_literals=True)
        try:
            _screened(loose, path)
        except ConfigError:
            raise
        except (ArithmeticError, TypeError, ValueError):  # a non-finite count: said below
            pass
        raise NonFiniteNumber(f"{path}: {nonfinite_at(loose)} is not a finite JSON number "
                              "(Python's json.dump writes Infinity / NaN); give a finite number"
                              " or leave the field out") from None
    get = lambda *keys, default=None: hf_unread.given(cfg, keys, default, where)
    hidden = get(*WRITTEN_AS["hidden_size"])
    if hidden is None:
        raise ConfigError(f"{where}: no {' / '.join(WRITTEN_AS['hidden_size'])} in the Hugging "
                          "Face config" + missing_hint(where))
    for keys in ((*LAYER_KEYS, "n_layers"), ("num_attention_heads", "n_head", "n_heads"),
                 ("vocab_size",)):
        if get(*keys) is None:  # not the ModelConfig default of a 7B model, silently
            raise ConfigError(f"{where}: no {' / '.join(keys)} in the Hugging Face config"
                              + missing_hint(where))
    if not isinstance(cfg.get("rope_scaling") or {}, dict):
        raise ConfigError(f"{where}: rope_scaling must be a mapping (or null), got "
                          f"{_kind(cfg['rope_scaling'])}")
    act = _activation(get("hidden_act", "activation_function"), where)
    model_type = _model_type(cfg, where)
    if not model_type and get("hidden_act", "activation_function") is None:
        warnings.warn(f"{where}: no model_type and no hidden_act; read as a two-matrix GELU MLP "
                      "(a Llama-style file means a gated SiLU one: give hidden_act, or "
                      "model_type)", TrainsimWarning, stacklevel=2)
    # the family's MLP class fixes its matrices whatever the activation (hf_defaults.GATED_MLP:
    # a Mistral file's gelu still builds MistralMLP's gate_proj, a GPT-NeoX file's silu
    # GPTNeoXMLP's two); a family transformers cannot build is read by its activation's name
    gated = GATED_MLP.get(model_type, act in ("silu", "swiglu", "swish")
                          or "llama" in model_type or model_type in GATED_MODEL_TYPES)
    fields = dict(  # noqa: C408 - keyword names mirror the config fields
        name=str(cfg.get("_name_or_path") or cfg.get("model_type") or path.parent.name),
        hidden_size=hidden,
        num_layers=get("num_hidden_layers", "n_layer", "num_layers"),
        num_attention_heads=get("num_attention_heads", "n_head"),
        num_kv_heads=get("num_key_value_heads"),
        head_dim=get("head_dim"),
        ffn_hidden_size=get("intermediate_size", "n_inner", "ffn_dim"),
        vocab_size=get("vocab_size"),
        max_position_embeddings=get("max_position_embeddings", "n_positions", default=2048),
        activation="swiglu" if gated else "gelu",
        # the GELU-family or relu2 module the MLP runs, a gated MLP's on its gate (GPT-2's
        # gelu_new, a Python formula of eight kernels where the model's eager modules run:
        # workload.hf_activations; Nemotron's relu2, two); plain gelu is torch's one kernel, as
        # a model without the name
        hidden_act=act if act in HF_EAGER_ACTIVATIONS and act != "gelu" else None,
        normalization="rmsnorm" if "rms_norm_eps" in cfg else "layernorm",
        # a family whose class has rope_parameters is rotary with or without a written theta
        # (a GPT-NeoX, Phi, Persimmon or StarCoder2 file without one read as a learned table)
        position_embedding="rope" if ("rope_theta" in cfg or gated or model_type in ROTARY)
        else "learned",
        tied_embeddings=hf_families.flag(cfg, "tie_word_embeddings", not gated or model_type
                                         in GATED_MODEL_TYPES + TIED_MODEL_TYPES, where),
        attention_dropout=get("attention_dropout", "attn_pdrop", default=0.0),
        hidden_dropout=get("hidden_dropout", "resid_pdrop", default=0.0),
        sliding_window=_window(cfg, where) if hf_families.flag(
            cfg, "use_sliding_window", True, where) else None,
        # Gemma 2's tanh cap on the attention scores (Gemma2Config default 50.0, transformers
        # 5.24.0 configuration_gemma2.py; Gemma 3 sets it null)
        attn_logit_softcapping=get("attn_logit_softcapping",
                                   default=50.0 if model_type == "gemma2" else None),
        activation_clamp=get("swiglu_limit"),  # gpt-oss
        # gpt-oss's experts compute (up + 1) * glu (transformers modeling_gpt_oss.py); its
        # config.json names no offset
        glu_linear_offset=1.0 if cfg.get("model_type") == "gpt_oss" else 0.0,
        # and a learned sink logit per head (GptOssAttention.sinks); config.json names none
        softmax_type="learnable" if cfg.get("model_type") == "gpt_oss" else "vanilla",
        rope_scaling="yarn" if _rope_type(cfg, where) == "yarn" else None,
        post_sublayer_norm=model_type in POST_SUBLAYER_NORM_MODEL_TYPES,
        # Llama 4's use_qk_norm is a weightless L2 norm on its RoPE layers
        # (modeling_llama4.py Llama4TextL2Norm): an elementwise op, not priced
        qk_layernorm=model_type in QK_NORM_MODEL_TYPES or (
            not model_type.startswith("llama4")
            and hf_families.flag(cfg, "use_qk_norm", False, where)) or (
            hf_families.flag(cfg, "qk_layernorm", False, where)),
        qk_norm_span="full" if model_type in QK_NORM_FULL_MODEL_TYPES else "head",
        norm_bias=model_type not in NORM_WITHOUT_BIAS_MODEL_TYPES,
        attention_chunk_size=hf_llama4.chunk_size(cfg, where),
    )
    fields.update(hf_biases.linear_biases(cfg, not gated, where))
    fields.update(_falcon_fields(cfg, model_type, where))
    if model_type in PARALLEL_BLOCK_MODEL_TYPES:
        fields.update(parallel_block=True, parallel_block_norms=1)
    fields.update(cfg.get(hf_families.MODEL_FIELDS) or {})  # a family's fixed structure
    _max_window_layers(cfg, fields, where)
    if fields["sliding_window"] is not None and isinstance(cfg.get("layer_types"), list):
        if not all(isinstance(t, str) for t in cfg["layer_types"]):
            raise ConfigError(f"{where}: layer_types must be a list of names")
        fields["window_attn_skip_freq"] = _window_skip_freq(
            _per_layer(cfg, fields["num_layers"], where), where)
    elif fields["sliding_window"] is not None and model_type in SLIDING_WINDOW_PATTERN:
        period = SLIDING_WINDOW_PATTERN[model_type]
        if model_type not in ("gemma2", "olmo3", "gpt_oss") \
                and cfg.get("sliding_window_pattern") is not None:
            period = _positive_int(cfg["sliding_window_pattern"], f"{where}: sliding_window_pattern")
        if period == 1:  # (i + 1) % 1 is 0: every layer global, the window unused
            fields["sliding_window"] = None
        else:
            fields["window_attn_skip_freq"] = period
    experts = hf_families.expert_count(cfg, where)  # the family's own name only
    if experts:  # Mixtral / Qwen-MoE / DeepSeek-style routed experts
        _router_topk(cfg, model_type, where)
        shared = get("shared_expert_intermediate_size")
        sparse_step = ("decoder_sparse_step",) if model_type in hf_families.SPARSE_STEP_TYPES \
            or not hf_families.known_family(model_type) else ()  # Qwen-MoE's field only
        n_shared = hf_families.count(cfg, "n_shared_experts", where)
        if shared is None and n_shared:
            shared = n_shared * _positive(get("moe_intermediate_size"),
                                          f"{where}: moe_intermediate_size")
        fields.update(num_experts=experts,
                      moe_router_topk=get("num_experts_per_tok", "moe_topk", default=2),
                      moe_ffn_hidden_size=get("moe_intermediate_size"),
                      moe_shared_expert_intermediate_size=shared,
                      moe_layer_freq=get(*sparse_step, "moe_layer_freq", default=1),
                      moe_first_dense_layers=get("first_k_dense_replace", default=0))
        if model_type.startswith("llama4"):
            fields.update(hf_llama4.moe_layout(cfg, fields["num_layers"], where))
    if hf_families.latent_rank(cfg, where):  # DeepSeek-V2/V3 latent attention
        fields.update(q_lora_rank=cfg.get("q_lora_rank"), kv_lora_rank=cfg["kv_lora_rank"],
                      qk_head_dim=get("qk_nope_head_dim", default=128),
                      qk_pos_emb_head_dim=get("qk_rope_head_dim", default=64),
                      v_head_dim=get("v_head_dim", default=128), head_dim=None)
    fields["mtp_num_layers"] = get("num_nextn_predict_layers", default=0)
    try:
        return build(ModelConfig, {k: v for k, v in fields.items() if v is not None}, "model")
    except ConfigError as exc:
        raise ConfigError(f"{where}: {as_written(str(exc), cfg)}") from None


def _hybrid(text: str, path: Path) -> ModelConfig | None:
    """A hybrid Mamba / attention model (``hf_hybrid``), read from Python's JSON dialect too:
    nvidia/Nemotron-H-8B's config.json writes ``"time_step_limit": [0.0, Infinity]``, a field
    trainsim does not read. None for any other file (or one that does not parse: the reader
    below names its problem); a file that never names a hybrid type is not parsed twice."""
    if not any(kind in text for kind in hf_hybrid.HYBRID_TYPES):
        return None
    try:
        cfg = parse(text, str(path), "json", python_literals=True)
    except ConfigError:
        return None
    return hf_hybrid.hybrid_model(cfg, str(path)) if hf_hybrid.is_hybrid(cfg) else None


def _screened(cfg: Any, path: Path) -> tuple[dict[str, Any], str]:
    """The decoder's fields of a parsed config.json and where they sit, its layers' kinds
    normalized, or the ConfigError naming what trainsim does not model."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"{path}: a Hugging Face config.json holds a mapping of fields")
    _model_type(cfg, str(path))
    hf_families.decoder_only(cfg, str(path))
    cfg, where = text_model(cfg, path)
    _model_type(cfg, where)  # a composite's text_config names its own: text or absent too
    return hf_families.normalized(cfg, where), where


def _router_topk(cfg: dict[str, Any], kind: str, where: str) -> None:
    """Refuse a routed MoE file without a top-k whose known family's config class has no
    default for it: DeepseekV2Config ``num_experts_per_tok: int | None = None`` (transformers
    5.24.0 configuration_deepseek_v2.py), which its router cannot run with; read as top-2
    before, silently. Other families take their class default (``hf_defaults``) or top-2."""
    if cfg.get("num_experts_per_tok", cfg.get("moe_topk")) is not None \
            or not hf_families.known_family(kind) \
            or "num_experts_per_tok" in {**hf_families.NOT_NULL.get(kind, {}),
                                         **hf_families.NULLABLE.get(kind, {})}:
        return
    raise ConfigError(f"{where}: no num_experts_per_tok: {kind}'s config class in transformers "
                      f"{hf_families.TRANSFORMERS_VERSION} has no default for it (None) and "
                      "its router needs one; give the number of experts each token is routed to")


def as_written(message: str, cfg: dict[str, Any]) -> str:
    """``message`` about the model built from config.json ``cfg`` with each ``model.FIELD``
    read from a key of the file named by that key (``WRITTEN_AS``); a field the file does not
    set (a default, a family's fixed structure) keeps its trainsim name, unless the message asks
    to set it ("set model.head_dim"): then the key the file would hold (``head_dim``)."""
    def key(m: re.Match[str]) -> str:
        names = WRITTEN_AS.get(m.group(2), ())
        written = next((k for k in names if k in cfg), None)
        if written is None and m.group(1) and names:
            written = names[0]
        return (m.group(1) or "") + written if written else m.group(0)

    return re.sub(r"(set )?(?<![\w.])model\.([a-z_0-9]+)", key, message)


def _falcon_fields(cfg: dict[str, Any], model_type: str, where: str) -> dict[str, Any]:
    """Falcon's block and positions (transformers 5.24.0 modeling_falcon.py
    ``FalconDecoderLayer.__init__``): ``parallel_attn`` (default True) runs attention and MLP
    from the same input, through ``ln_attn`` and ``ln_mlp`` where ``num_ln_in_parallel_attn``
    is 2 (its default under ``new_decoder_architecture``: Falcon-40B/180B), else through one
    ``input_layernorm`` (Falcon-7B); ``FalconConfig.rotary`` is ``not self.alibi``: rotary
    positions unless ALiBi (configuration_falcon.py), though its config.json names no
    ``rope_theta``. {} for other model types."""
    if model_type != "falcon":
        return {}
    alibi = hf_families.flag(cfg, "alibi", False, where)
    out: dict[str, Any] = {"position_embedding": "alibi" if alibi else "rope"}
    if hf_families.falcon_flag(cfg, "parallel_attn", True, where):
        norms = cfg.get("num_ln_in_parallel_attn")
        if norms is None and hf_families.flag(cfg, "new_decoder_architecture", False, where):
            norms = 2
        out.update(parallel_block=True, parallel_block_norms=2 if norms == 2 else 1)
    return out


MAX_WINDOW_LAYERS_MODEL_TYPES = ("qwen2", "qwen3", "qwen2_vl", "qwen2_vl_text", "qwen2_5_vl",
                                 "qwen2_5_vl_text")
"""Model types whose config class windows layer i only from ``i >= max_window_layers``
(``_max_window_layers``): Qwen2Config, Qwen3Config, Qwen2-VL's and Qwen2.5-VL's composites and
text configs (transformers 5.24.0 configuration_qwen2.py, configuration_qwen3.py,
configuration_qwen2_5_vl.py ``Qwen2_5_VLTextConfig.__post_init__``). Other types read a
``max_window_layers`` key as no part of their window rule (Qwen2-MoE has a rule of its own)."""


def _max_window_layers(cfg: dict[str, Any], fields: dict[str, Any], where: str) -> None:
    """Qwen2-family windows: layer i is sliding where ``sliding_window is not None and i >=
    max_window_layers`` (transformers 5.24.0 configuration_qwen2_5_vl.py
    ``Qwen2_5_VLTextConfig.__post_init__``; Qwen2Config, Qwen3Config, Qwen2-VL the same;
    ``MAX_WINDOW_LAYERS_MODEL_TYPES``; Qwen2-MoE has a rule of its own) when the file lists no
    ``layer_types``: none windowed from ``max_window_layers >= layers``, all from 0; a split
    between is no ``window_attn_skip_freq`` pattern and is refused naming the field."""
    limit, layers = cfg.get("max_window_layers"), fields.get("num_layers")
    if str(cfg.get("model_type", "")) not in MAX_WINDOW_LAYERS_MODEL_TYPES or limit is None \
            or fields.get("sliding_window") is None or not isinstance(layers, int) \
            or isinstance(cfg.get("layer_types"), list):
        return
    limit = 0 if limit == 0 and not isinstance(limit, bool) else \
        _positive_int(limit, f"{where}: max_window_layers")
    if limit >= layers:
        fields["sliding_window"] = None
    elif limit > 0:
        raise ConfigError(f"{where}: max_window_layers={limit} windows layers {limit} to "
                          f"{layers - 1} only; trainsim windows every layer or every N-th one "
                          f"(set use_sliding_window false, or max_window_layers 0 or {layers})")


ACTIVATIONS = frozenset({
    "gelu", "gelu_10", "gelu_accurate", "gelu_fast", "gelu_new", "gelu_python",
    "gelu_python_tanh", "gelu_pytorch_tanh", "hardswish", "laplace", "leaky_relu", "linear",
    "mish", "prelu", "quick_gelu", "relu", "relu2", "relu6", "sigmoid", "silu", "sqrtsoftplus",
    "swish", "tanh", "xielu", "swiglu"})
"""``hidden_act`` names a config.json may hold: the keys of transformers' ``ACT2CLS``
(transformers 5.24.0 src/transformers/activations.py; a model built from any other name fails
there with ``KeyError``), and ``swiglu``, which remote-code configs write for a gated SiLU MLP.
Any other word (or a number, a list) was read as a two-matrix GELU MLP, silently."""

REFUSED_REMOTE_ACTIVATIONS = {
    "gegelu": "Phi-3-small's remote code (modeling_phi3_small.py gegelu: quick_gelu of the "
              "clamped even half times the clamped odd half + 1, a gated MLP like gpt-oss's) "
              "comes with config fields trainsim does not read (ff_intermediate_size, "
              "block-sparse attention on all but every dense_attention_every_n_layers-th "
              "layer): not modelled; describe the model in a run config instead",
}
"""Remote-code activations whose MLP is known but whose model needs more than the activation
mapped: refused with the reason rather than priced as a dense-attention model of the wrong
FFN width."""


def _activation(value: Any, where: str) -> str:
    """The config.json's ``hidden_act`` (``activation_function``), lower case; absent or null
    is GELU, as before."""
    if value is None:
        return "gelu"
    if isinstance(value, str) and value.strip().lower() in REFUSED_REMOTE_ACTIVATIONS:
        raise ConfigError(f"{where}: hidden_act={value!r} is "
                          f"{REFUSED_REMOTE_ACTIVATIONS[value.strip().lower()]}")
    if not isinstance(value, str) or value.strip().lower() not in ACTIVATIONS:
        raise ConfigError(f"{where}: hidden_act={value!r} is not an activation transformers "
                          f"knows{suggest(str(value), sorted(ACTIVATIONS))} (known: "
                          "silu, gelu, gelu_new, gelu_pytorch_tanh, relu, relu2, ...)")
    return value.strip().lower()


def _per_layer(cfg: dict[str, Any], layers: Any, where: str) -> list[str]:
    """config.json's ``layer_types``, one name per decoder layer: transformers refuses a list
    of another length (``PreTrainedConfig.validate_layer_type``, transformers 5.24.0
    configuration_utils.py: "`num_hidden_layers` (36) must be equal to the number of
    `layer_types` (20)"); a list padded with one entry per MTP layer (Step3p7Config's legacy
    hub files, ``num_nextn_predict_layers`` trailing entries) is read without them. A shorter
    list read before as the period of a pattern it does not show."""
    types, mtp = cfg["layer_types"], cfg.get("num_nextn_predict_layers") or 0
    if not isinstance(layers, int) or isinstance(layers, bool) or len(types) == layers:
        return types  # a bad layer count is refused by name when the model is built
    if isinstance(mtp, int) and not isinstance(mtp, bool) and mtp > 0 \
            and len(types) == layers + mtp:
        return types[:layers]
    raise ConfigError(f"{where}: layer_types lists {len(types)} layers but num_hidden_layers="
                      f"{layers}; give one entry per layer")


def _window_skip_freq(layer_types: list[str], path: str) -> int | None:
    """Megatron's window_attn_skip_freq from HF ``layer_types`` (GPT-OSS, Gemma, Qwen):
    N when every N-th layer is "full_attention" and the rest "sliding_attention"."""
    full = [t == "full_attention" for t in layer_types]
    if not any(full):
        return None
    n = full.index(True) + 1
    if all(f == ((i + 1) % n == 0) for i, f in enumerate(full)):
        return n
    raise ConfigError(f"{path}: layer_types is not a periodic pattern of sliding layers with "
                      "every N-th layer full; trainsim models window_attn_skip_freq patterns only")


__all__ = ["GATED_MODEL_TYPES", "MAX_WINDOW_LAYERS_MODEL_TYPES",
           "NORM_WITHOUT_BIAS_MODEL_TYPES", "PARALLEL_BLOCK_MODEL_TYPES",
           "POST_SUBLAYER_NORM_MODEL_TYPES", "QK_NORM_FULL_MODEL_TYPES", "QK_NORM_MODEL_TYPES",
           "SLIDING_WINDOW_PATTERN", "TIED_MODEL_TYPES", "model_from_hf_config"]
