"""Hugging Face config.json fields of families whose names differ from Llama's, read before
``hf_config.model_from_hf_config``; and the structures trainsim does not model, refused in one
line instead of simulated as something else.

Each rule cites the transformers source (huggingface/transformers v5.24.0, the version the
tests build models with to count their parameters):

- Falcon (``models/falcon/configuration_falcon.py``, ``modeling_falcon.py`` ``FalconAttention``):
  ``new_decoder_architecture`` takes ``num_kv_heads`` key/value heads, else ``multi_query``
  takes one, else one per head; ``bias`` is the linear layers' bias (a Llama config's
  ``attention_bias``). Before, Falcon-7B read as 71 key/value heads with biases: +19 % params.
- Layers that are not softmax attention (Mamba / state-space, linear attention, convolution,
  recurrent blocks): named by ``layer_types`` (Qwen3-Next, MiniMax, Kimi-Linear, LFM2,
  GraniteMoeHybrid), ``layers_block_type`` (Zamba, Nemotron-H), ``block_types``
  (RecurrentGemma), or a ``mamba_*`` / ``ssm_*`` field (Jamba, Falcon-H1, Bamba). trainsim's
  layer is attention plus MLP: Jamba read as 32 attention layers was +79 % params.
- Mixture-of-experts fields under names ``model_from_hf_config`` does not read (ERNIE 4.5's
  ``moe_num_experts``, Kimi-Linear's ``num_experts_per_token``, Qwen-MoE's ``mlp_only_layers``,
  AFMoE/LFM2-MoE's ``num_dense_layers``, ...): read as a dense model or with the default top-2,
  silently (ERNIE-4.5-MoE: -85 % params); refused, naming the field.
- Parallel attention + MLP blocks (``ModelConfig.parallel_block``), read where the family's
  decoder layer adds both outputs of the same input to the residual: GPT-NeoX and StableLM
  ``use_parallel_residual`` (GPT-NeoX default True, StableLM False; ``GPTNeoXLayer.forward``
  ``mlp_output + attn_output + hidden_states``), GPT-J and CodeGen always (``GPTJBlock`` /
  ``CodeGenBlock``: ``attn_output + feed_forward_hidden_states + residual``), Phi-1/1.5/2
  always (``PhiDecoderLayer``); one norm feeds both (``ln_1``, ``input_layernorm``; StableLM
  builds no ``post_attention_layernorm`` when parallel), GPT-NeoX's two (``input_layernorm``,
  ``post_attention_layernorm``). Falcon's ``parallel_attn`` is ``hf_config._falcon_fields``'.
  GPT-J's and CodeGen's biases sit on their MLP (``GPTJMLP`` fc_in, fc_out), not on their
  attention (``GPTJAttention`` q/k/v/out_proj ``bias=False``, modeling_gptj.py): read as
  ``attention_bias`` false, ``mlp_bias`` true. Not expressed: their untied LM head's bias
  (``GPTJForCausalLM.lm_head``; no ModelConfig field holds an output-layer bias), so GPT-J-6B
  counts 50,400 parameters (-0.0008 %) under transformers'.
- Rotary positions named otherwise: transformers v5 writes ``rope_parameters`` (``rope_theta``,
  ``rope_type``) instead of ``rope_theta`` / ``rope_scaling``; GPT-J and CodeGen name a
  ``rotary_dim``. Read as learned
  positions they added ``max_position_embeddings x hidden_size`` parameters (GPT-NeoX-20B
  +0.06 %, StarCoder2 +0.42 %).
- MPT and DBRX: ``hf_mpt``.
- GLM-4.5-MoE (and GLM-4.5V's text model) without ``head_dim``: ``getattr(config,
  "head_dim", hidden_size // num_attention_heads)`` (``Glm4MoeAttention.__init__``;
  ``Glm4vMoeTextAttention.__init__``, transformers 5.24.0 modeling_glm4v_moe.py line 207),
  the floor of the division.
- BitNet: ``BitNetMLP`` is gated (``gate_proj``, ``up_proj``, ``down_proj``) whatever its
  ``relu2`` activation, three matrices (read as two before: -19 %).
"""

from __future__ import annotations

from typing import Any

from trainsim.catalog import hf_kinds, hf_mpt, hf_unread
from trainsim.catalog.hf_defaults import (
    ALIASES,
    EXPERT_NAMES,
    NOT_NULL,
    NULLABLE,
    TRANSFORMERS_VERSION,
)
from trainsim.catalog.hf_values import count, flag
from trainsim.config._build import type_name
from trainsim.errors import ConfigError

ATTENTION_LAYER_TYPES = frozenset({"full_attention", "sliding_attention", "chunked_attention",
                                   "indexed_attention", "attention"})
"""Per-layer type names that are softmax attention: over a window (``sliding_attention``),
chunks (Llama 4's ``chunked_attention``) or the keys an indexer picks (DeepSeek-V3.2's
``indexed_attention``). How each prices is ``hf_config``'s reading, not judged here."""
LAYER_TYPE_KEYS = ("layer_types", "layers_block_type", "block_types")
STATE_SPACE_PREFIXES = ("mamba_", "ssm_")
LINEAR_ATTENTION_KEYS = ("linear_conv_kernel_dim", "linear_num_key_heads",
                         "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim")
"""Widths of Qwen3-Next's / Qwen3.5's Gated DeltaNet (linear-attention) layers. Without a
``layer_types`` list, transformers' config classes (``Qwen3NextConfig``, ``Qwen3_5TextConfig``
``__init__``) make layer i ``linear_attention`` if ``(i + 1) % full_attention_interval``
(default 4), else ``full_attention``: a config.json naming the interval or these widths and no
list holds linear-attention layers (the hub's Qwen3-Next-80B-A3B file lists none)."""
LINEAR_INTERVAL_TYPES = frozenset({"qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"})
"""Model types whose config class makes every layer but each 4th linear attention when the file
gives neither ``layer_types`` nor ``full_attention_interval``. Their full-attention layers are
output-gated whatever the file says: ``Qwen3NextAttention`` builds ``q_proj`` for
``num_attention_heads * head_dim * 2`` outputs, splits query and gate, and multiplies the
attention output by ``sigmoid(gate)`` before ``o_proj``, with per-head ``q_norm`` / ``k_norm``
(transformers 5.24.0 modeling_qwen3_next.py lines 241-301; Qwen3.5's the same): a file of
full-attention layers only, read as plain attention before (-4.2 % parameters), is refused."""
UNREAD_MOE_KEYS = ("moe_num_experts", "num_experts_per_token", "moe_k", "num_shared_experts",
                   "moe_num_shared_experts", "num_dense_layers", "moe_layer_start_index",
                   "moe_layer_interval", "expert_layer_period", "expert_ffn_hidden_size",
                   "zero_expert_num")
"""MoE fields of other families (ERNIE 4.5, Kimi-Linear, AFMoE, LFM2-MoE, Jamba, LongCat)
that change the experts, their top-k or which layers have them; trainsim reads the Mixtral /
Qwen-MoE / DeepSeek names only."""
NO_OP_WHEN_ONE = ("moe_layer_interval", "expert_layer_period")
"""Of those, the ones whose value 1 (every layer) changes nothing."""
EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")
"""config.json names of the routed-expert count (Mixtral, Qwen-MoE, DeepSeek)."""
EXPERT_COUNT_NAMES = {
    "mixtral": ("num_local_experts", "num_experts"),
    "gpt_oss": ("num_local_experts", "num_experts"), "llama4_text": ("num_local_experts",),
    "dbrx": ("num_local_experts",),  # ffn_config.moe_num_experts, renamed by hf_mpt
    "qwen2_moe": ("num_experts",), "qwen3_moe": ("num_experts", "num_local_experts"),
    "qwen3_next": ("num_experts",), "qwen3_5_moe_text": ("num_experts",),
    "olmoe": ("num_experts", "num_local_experts"),
    "deepseek_v2": ("n_routed_experts", "num_experts"),
    "deepseek_v3": ("n_routed_experts", "num_local_experts"),
    "glm4_moe": ("n_routed_experts", "num_local_experts"),
    "phimoe": ("num_local_experts",), "granitemoe": ("num_local_experts",),
    "minimax_m2": ("num_local_experts", "num_experts"),
    "flex_olmo": ("num_experts", "num_local_experts")}
"""The names that set each family's routed-expert count: its transformers 5.24.0 config class's
field, then the ``attribute_map`` names of it (``models/<family>/configuration_<family>.py``;
``hf_defaults.ALIASES`` for the generated families, ``OlmoeConfig.attribute_map`` for OLMoE;
Qwen2-MoE, Qwen3-Next, Qwen3.5-MoE's text config and Llama 4's have none). The modeling code
reads that attribute only (``Qwen3MoeSparseMoeBlock``: ``config.num_experts``;
``DeepseekV3MoE``: ``config.n_routed_experts``; ``MixtralSparseMoeBlock``,
``PhimoeSparseMoeBlock``, ``GraniteMoeMoE``, ``MiniMaxM2SparseMoeBlock``:
``config.num_local_experts``; ``FlexOlmoSparseMoeBlock``: ``config.num_experts``), so another
family's name in the file sets nothing."""
SPARSE_STEP_TYPES = frozenset({"qwen2_moe", "qwen3_moe", "qwen3_next"})
"""Families whose config class has ``decoder_sparse_step`` (every N-th layer an MoE one);
Qwen3.5-MoE's text config has none (every layer MoE)."""


def known_family(kind: Any) -> bool:
    """Whether trainsim holds ``kind``'s transformers config class fields (``hf_defaults`` or
    the tables above): its files are read with its own names only, a foreign one is ignored.
    An unknown model type (remote code, a new family) is read by every name trainsim knows."""
    return isinstance(kind, str) and (kind in NOT_NULL or kind in NULLABLE or kind in ALIASES
                                      or kind in EXPERT_COUNT_NAMES
                                      or kind in LINEAR_INTERVAL_TYPES)


DECODER_ONLY = "trainsim models decoder-only language models (GPT, Llama, Mixtral, DeepSeek, ...)"


def decoder_only(cfg: dict[str, Any], where: str) -> None:
    """Refuse a config.json of no decoder-only language model: a ``model_type`` transformers
    files as one (an encoder, an encoder-decoder, a speech, vision, contrastive or time-series
    model: ``hf_kinds``, generated from transformers' task mappings), or a file that says
    ``is_encoder_decoder: true`` whatever its type (a remote-code or new family: the flag
    ``PretrainedConfig`` carries for sequence-to-sequence models, which transformers'
    generation reads to run an encoder first; every known-type class that defaults it true is
    an encoder-decoder, a DETR-style vision model or a time-series one). Read as a causal
    decoder by the names it shares with one (BERT's ``num_hidden_layers``, CLIP's text
    tower's), it was simulated as something it is not. Another type transformers does not know
    is read as a decoder. Last, a type trainsim would misread (``hf_unread.unmodelled``),
    checked on the file's own ``model_type`` here, before a composite's ``text_config`` is
    read (MOSS-Transcribe's text model is a ``qwen3`` one; fuzz32), and again on that."""
    kind = cfg.get("model_type")
    what = hf_kinds.NOT_DECODERS.get(kind) if isinstance(kind, str) else None
    if what is not None:
        raise ConfigError(f"{where}: model_type {kind!r} is {hf_kinds.KINDS[what]} in "
                          f"transformers {hf_kinds.TRANSFORMERS_VERSION}; {DECODER_ONLY}")
    if flag(cfg, "is_encoder_decoder", False, where):
        raise ConfigError(f"{where}: is_encoder_decoder is true: an encoder-decoder "
                          f"(sequence-to-sequence) model; {DECODER_ONLY}")
    _language_model_head(cfg.get("architectures"), "auto_map" in cfg, where)
    if cfg.get("text_config") is not None and not isinstance(cfg["text_config"], dict):
        raise ConfigError(f"{where}: text_config must be a mapping (or null), got "  # fuzz32:
                          f"{type_name(cfg['text_config'])}")  # ignored beside top fields
    hf_unread.unmodelled(cfg, where)


NOT_LM_HEADS = {"ForSequenceClassification": "a sequence-classification (or reward) head",
                "ForTokenClassification": "a token-classification head",
                "ForQuestionAnswering": "a question-answering (span) head",
                "ForQuestionAnsweringSimple": "a question-answering (span) head",
                "ForMultipleChoice": "a multiple-choice head",
                "ForMaskedLM": "a masked-language-model head",
                "ForNextSentencePrediction": "a next-sentence-prediction head"}
"""Class-name suffixes of transformers' text task heads that are not a causal language model's
(``src/transformers/models/auto/modeling_auto.py`` v5.24.0: the classes of
``MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES``, ``..._TOKEN_CLASSIFICATION_...``,
``..._QUESTION_ANSWERING_...``, ``..._MULTIPLE_CHOICE_...``, ``..._MASKED_LM_...`` and
``..._NEXT_SENTENCE_PREDICTION_...`` end so, e.g. ``LlamaForSequenceClassification``, whose
``score`` layer is hidden x num_labels, not the hidden x vocabulary output layer trainsim
prices). ``ForCausalLM``, ``LMHeadModel`` and a multimodal ``ForConditionalGeneration`` are
language models; another class name is read as one."""


LM_HEAD_MODEL_SUFFIXES = ("LMHeadModel", "DoubleHeadsModel")
"""Class names ending in ``Model`` that carry a language-model head (transformers 5.24.0
``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``: ``GPT2LMHeadModel``, ``CTRLLMHeadModel``,
``XLMWithLMHeadModel``, ...; ``GPT2DoubleHeadsModel``, an LM head beside a multiple-choice
one). Every other class of ``MODEL_MAPPING_NAMES`` ending in ``Model`` is a family's bare trunk
(``LlamaModel``, ``MistralModel``, ``Qwen2Model``, ``LlavaModel``): its embeddings and layers
with neither an output layer nor a loss, what ``AutoModel`` loads and an embedding model such
as e5-mistral is saved as."""


def _language_model_head(archs: Any, remote_code: bool, where: str) -> None:
    """Refuse a config.json whose ``architectures`` (the classes ``save_pretrained`` wrote it
    for) are all task heads of ``NOT_LM_HEADS`` or bare trunks (``LM_HEAD_MODEL_SUFFIXES``):
    counted as a causal LM, its vocabulary output layer and loss were priced for a model that
    has neither. A list that also names another class (a causal LM beside a head) is read as
    before, and so is a trunk's name in a file with ``auto_map`` (``remote_code``): the
    repository's own classes, which transformers' naming does not bind (ChatGLM's
    ``ChatGLMModel`` holds its output layer)."""
    if archs is None:
        return
    names = [archs] if isinstance(archs, str) else archs
    if not isinstance(names, list) or not all(isinstance(a, str) for a in names):
        raise ConfigError(f"{where}: architectures must be a list of class names (e.g. "
                          f"['LlamaForCausalLM']), got {archs!r}"[:300])
    heads = [next((h for h in NOT_LM_HEADS if a.strip().endswith(h)), None) for a in names]
    trunks = [not remote_code and a.strip().endswith("Model") and not h
              and not a.strip().endswith(LM_HEAD_MODEL_SUFFIXES) for a, h in zip(names, heads)]
    if not names or not all(h or t for h, t in zip(heads, trunks, strict=True)):
        return
    if any(heads):
        head = next(h for h in heads if h)
        raise ConfigError(f"{where}: architectures {names[heads.index(head)]!r} is "
                          f"{NOT_LM_HEADS[head]}, not a causal language model's output layer; "
                          f"{DECODER_ONLY}, trained on next-token prediction (use the base "
                          "model's config, architectures ['...ForCausalLM'])")
    raise ConfigError(f"{where}: architectures {names[0]!r} is a bare transformer trunk (no "
                      "output layer, no loss: an embedding model or what AutoModel loads); "
                      f"{DECODER_ONLY}, trained on next-token prediction through a vocabulary "
                      "output layer. To price the causal LM, name its class (e.g. "
                      "['LlamaForCausalLM']) in architectures or remove the field")


def expert_keys(kind: Any) -> tuple[str, ...]:
    """The config.json names that set ``kind``'s routed-expert count, in ``EXPERT_KEYS``
    order: its class's field and the ``attribute_map`` names of it; none for a known dense
    family; every name for an unknown family (``expert_count`` refuses two that disagree)."""
    if not known_family(kind):
        return EXPERT_KEYS
    own = EXPERT_COUNT_NAMES.get(kind) or EXPERT_NAMES.get(kind, ())
    return tuple(k for k in EXPERT_KEYS if k in own)


def expert_count(cfg: dict[str, Any], where: str) -> int | None:
    """The routed-expert count of a normalized config.json (``expert_keys``): a foreign
    family's name beside it is ignored with a warning (DeepSeek-V3's ``num_experts: 0`` beside
    ``n_routed_experts: 256`` read as a dense model before: the first name found won)."""
    import warnings

    from trainsim.errors import TrainsimWarning

    kind = cfg.get("model_type")
    own = expert_keys(kind)
    values = {k: count(cfg, k, where) for k in own if k in cfg}
    if not known_family(kind) and len(set(values.values())) > 1:
        named = ", ".join(f"{k}={v}" for k, v in values.items())
        raise ConfigError(f"{where}: {named} disagree on the expert count and model_type "
                          f"{kind!r} is no family trainsim knows; give one of them")
    foreign = [k for k in EXPERT_KEYS if k not in own and cfg.get(k) not in (None, 0)]
    if foreign:
        owner = f"its expert count is {(EXPERT_COUNT_NAMES.get(kind) or own)[0]}" if own \
            else "dense"
        warnings.warn(f"{where}: {foreign[0]} is no {kind} field in transformers "
                      f"{TRANSFORMERS_VERSION} ({owner}); ignored", TrainsimWarning,
                      stacklevel=3)
    return next(iter(values.values()), None)


MLA_MODEL_TYPES = frozenset({
    "axk1", "axk2", "bailing_hybrid", "deepseek_v2", "deepseek_v3", "deepseek_v32", "dots3_note",
    "glm4_moe_lite", "glm5_next", "glm_moe_dsa", "hy_v4", "hy_v4_vl", "kimi_linear",
    "longcat_flash", "minicpm3", "mistral4", "mistral_large4", "sarvam_mla", "youtu"})
"""Model types whose transformers 5.24.0 config class has ``kv_lora_rank`` (multi-latent
attention; ``models/<family>/configuration_<family>.py``, e.g. DeepseekV3Config
``kv_lora_rank: int = 512``). Any other family's attention module builds q/k/v projections
whatever the file says (``LlamaAttention``), so a ``kv_lora_rank`` in its file sets nothing."""


def latent_rank(cfg: dict[str, Any], where: str) -> int | None:
    """config.json's ``kv_lora_rank`` where the family reads one: a known family without
    multi-latent attention (``MLA_MODEL_TYPES``) ignores it, with a warning (a Llama file with
    ``kv_lora_rank: 512`` read as MLA before: a different attention, silently); an unknown
    model type is read by the name."""
    import warnings

    from trainsim.errors import TrainsimWarning

    rank, kind = count(cfg, "kv_lora_rank", where), cfg.get("model_type")
    if rank and known_family(kind) and kind not in MLA_MODEL_TYPES:
        warnings.warn(f"{where}: kv_lora_rank is no {kind} field in transformers "
                      f"{TRANSFORMERS_VERSION} (its attention is not multi-latent); ignored",
                      TrainsimWarning, stacklevel=3)
        return None
    return rank


def falcon_flag(cfg: dict[str, Any], key: str, default: bool, where: str) -> bool:
    """A Falcon switch (``multi_query``, ``bias``, ``parallel_attn``...): ``default`` where
    absent, False where null: ``FalconConfig`` types them ``bool | None`` and
    modeling_falcon.py (transformers 5.24.0) tests their truth (``elif config.multi_query``,
    ``if not config.parallel_attn``) or builds ``nn.Linear(bias=config.bias)``, which makes no
    bias for None."""
    return False if key in cfg and cfg[key] is None else flag(cfg, key, default, where)


def _falcon(cfg: dict[str, Any], where: str) -> dict[str, Any]:
    """A Falcon config with its key/value heads and bias under the names trainsim reads."""
    out = dict(cfg)
    heads = cfg.get("num_attention_heads", cfg.get("n_head"))
    if "num_key_value_heads" not in cfg:
        if flag(cfg, "new_decoder_architecture", False, where):
            kv = cfg.get("num_kv_heads", heads)
        else:
            kv = 1 if falcon_flag(cfg, "multi_query", True, where) else heads
        if kv is not None:
            out["num_key_value_heads"] = kv
    if "attention_bias" not in cfg and "bias" in cfg:
        out["attention_bias"] = falcon_flag(cfg, "bias", False, where)
    # FalconMLP's dense_h_to_4h is ffn_hidden_size wide (None: 4 x hidden_size,
    # configuration_falcon.py __post_init__); read as 4 x whatever it said before
    if "intermediate_size" not in cfg and cfg.get("ffn_hidden_size") is not None:
        out["intermediate_size"] = cfg["ffn_hidden_size"]
    return out


def _bigcode_opt(cfg: dict[str, Any], kind: Any, where: str) -> dict[str, Any]:
    """GPT-BigCode's key/value heads and OPT's embedding width (transformers 5.24.0).
    GPTBigCodeConfig.__post_init__ sets ``num_key_value_heads = 1 if multi_query else
    n_head`` over whatever the file says, and ``GPTBigCodeAttention`` builds
    ``kv_heads = 1 if multi_query else num_heads`` (modeling_gpt_bigcode.py): StarCoder's
    config.json (multi_query true, no num_key_value_heads) read as one head each before,
    +11.7 % parameters. OPT with ``word_embed_proj_dim`` other than ``hidden_size`` (OPT-350m:
    512 of 1024) embeds at that width with ``project_in`` / ``project_out`` layers
    (modeling_opt.py ``OPTDecoder.__init__``), which trainsim does not model: refused."""
    if kind == "gpt_bigcode":
        heads = cfg.get("num_attention_heads", cfg.get("n_head"))
        return {**cfg, "num_key_value_heads": 1 if flag(cfg, "multi_query", True, where)
                else heads}
    width = cfg.get("word_embed_proj_dim")
    hidden = cfg.get("hidden_size")
    if kind == "opt" and width is not None and width != hidden:
        raise ConfigError(f"{where}: word_embed_proj_dim={width!r} differs from hidden_size="
                          f"{hidden!r}: OPT's projected embeddings (project_in / project_out, "
                          "OPT-350m), which trainsim does not model; leave it out or equal "
                          "to hidden_size")
    return cfg


def class_defaults(cfg: dict[str, Any], where: str) -> dict[str, Any]:
    """``cfg`` with the fields it leaves out taken from its family's transformers config class
    (``hf_defaults``: Gemma 2 without ``intermediate_size`` is 9216 wide, not trainsim's own
    default, -21 % parameters before; GLM-4.5 without ``first_k_dense_replace`` has one dense
    layer); an explicit null for a field whose class type has no None is refused, as
    transformers refuses it (strict dataclass fields, v5), not read as trainsim's default.
    A field the config gives under another name of the class's ``attribute_map`` takes no
    default (a Mixtral ``num_experts: 4`` is 4 experts, not ``num_local_experts``' 8)."""
    kind = cfg.get("model_type")
    if not isinstance(kind, str):
        return cfg
    required, optional = NOT_NULL.get(kind, {}), NULLABLE.get(kind, {})
    for key, default in required.items():
        if key in cfg and cfg[key] is None:
            raise ConfigError(f"{where}: {key} is null, which transformers {TRANSFORMERS_VERSION}"
                              f" refuses for {kind} (no null value); leave it out for the class "
                              f"default {default!r} or give a value")
    given = {field for alias, field in ALIASES.get(kind, {}).items() if alias in cfg}
    missing = {k: v for k, v in {**optional, **required}.items()
               if k not in cfg and k not in given}
    return {**cfg, **missing} if missing else cfg


MODEL_FIELDS = "__trainsim_model_fields__"
"""Key under which :func:`normalized` leaves ModelConfig fields a family fixes that no
config.json name says (a parallel block, the position embedding, a gated MLP);
``hf_config`` applies them over what it reads."""


def _parallel(cfg: dict[str, Any], where: str) -> bool | None:
    """Whether the family's decoder layer is a parallel attention + MLP block (module
    docstring); None where the family does not say."""
    kind = cfg.get("model_type")
    if kind in ("gptj", "codegen", "phi"):
        return True
    if kind == "falcon":  # hf_config._falcon_fields reads parallel_attn and its norms
        return None
    if "use_parallel_residual" in cfg:  # null: off, as transformers' truth test reads it
        return flag(cfg, "use_parallel_residual", False, where)
    if kind == "gpt_neox":
        return True  # GPTNeoXConfig.use_parallel_residual defaults to True
    return None


def _rope_names(cfg: dict[str, Any], out: dict[str, Any], fields: dict[str, Any],
                where: str) -> None:
    """Rotary positions under the names ``hf_config`` reads (module docstring)."""
    params = cfg.get("rope_parameters")
    if params is not None and not isinstance(params, dict):  # was ignored: learned positions
        raise ConfigError(f"{where}: rope_parameters must be a mapping (or null), got {params!r}")
    if isinstance(params, dict):
        if "rope_theta" not in cfg:
            # the mapping itself marks rotary positions, its theta written or not:
            # transformers v5 writes rope_parameters for rotary families only (GPT-2, OPT,
            # BigCode, MPT, BLOOM have none; Falcon's alibi is read apart)
            out["rope_theta"] = params.get("rope_theta")
        if cfg.get("rope_scaling") is None and params.get("rope_type") not in (None, "default"):
            out["rope_scaling"] = params
    if count(cfg, "rotary_dim", where):  # GPT-J, CodeGen
        fields["position_embedding"] = "rope"


def _spelt(name: str) -> str:
    """A layer type's name with its case, spaces and dashes as transformers writes them."""
    return name.strip().lower().replace("-", "_").replace(" ", "_")


def _not_modelled(cfg: dict[str, Any], where: str) -> None:
    for key in LAYER_TYPE_KEYS:
        types = cfg.get(key)
        if isinstance(types, list):
            other = sorted({str(t) for t in types} - ATTENTION_LAYER_TYPES)
            # robust49: a misspelt softmax kind ('Full_Attention', '') was refused as a
            # state-space or linear layer; transformers refuses it as no layer type at all
            misspelt = [t for t in other if not t.strip() or _spelt(t) in ATTENTION_LAYER_TYPES]
            if misspelt:
                t = misspelt[0]
                meant = f" (did you mean '{_spelt(t)}'?)" if t.strip() else ""
                raise ConfigError(f"{where}: {key} holds {t!r}, no layer type transformers "
                                  f"knows{meant}; softmax layers are "
                                  f"{', '.join(sorted(ATTENTION_LAYER_TYPES))}")
            if other:
                raise ConfigError(f"{where}: {key} holds {', '.join(repr(t) for t in other)} "
                                  "layers; trainsim models softmax-attention layers only (no "
                                  "state-space, linear-attention, convolution or recurrent "
                                  "layers)")
    kind = cfg.get("model_type")
    # the interval and widths mean something only to the families whose class has them
    # (Gemma 3's class has no full_attention_interval: transformers ignores the key)
    hybrid = kind in LINEAR_INTERVAL_TYPES or not known_family(kind)
    interval = cfg.get("full_attention_interval",
                       4 if kind in LINEAR_INTERVAL_TYPES else None) if hybrid else None
    linear = [k for k in LINEAR_ATTENTION_KEYS if cfg.get(k) not in (None, 0)] if hybrid else []
    if not isinstance(cfg.get("layer_types"), list) and \
            (interval is not None and interval != 1 or interval is None and linear):
        named = f"full_attention_interval={interval!r}" if interval is not None else linear[0]
        raise ConfigError(f"{where}: {named} (and no layer_types) describes linear-attention "
                          "layers between the full-attention ones (Qwen3-Next's Gated DeltaNet: "
                          "every layer but each full_attention_interval-th, default 4); trainsim "
                          "models softmax-attention layers only")
    if kind in LINEAR_INTERVAL_TYPES:  # all layers full attention: still gated (docstring)
        raise ConfigError(f"{where}: model_type {kind!r} gates each attention output by the "
                          "query's other half (q_proj twice as wide, sigmoid(gate) x attention) "
                          "and norms q and k per head; trainsim does not model the gate")
    ssm = sorted(k for k in cfg if k.startswith(STATE_SPACE_PREFIXES))
    if ssm:
        raise ConfigError(f"{where}: {ssm[0]} describes state-space (Mamba) layers; trainsim "
                          "models softmax-attention layers only")
    unread = [k for k in (*UNREAD_MOE_KEYS, "mlp_only_layers")
              if cfg.get(k) not in (None, False, 0, []) and not (k in NO_OP_WHEN_ONE
                                                                and cfg.get(k) == 1)]
    if unread:
        raise ConfigError(f"{where}: {unread[0]} is a mixture-of-experts field trainsim does not "
                          "read; write the model as a run config (num_experts, moe_router_topk, "
                          "moe_ffn_hidden_size, moe_shared_expert_intermediate_size, "
                          "moe_first_dense_layers)")


def normalized(cfg: dict[str, Any], where: str) -> dict[str, Any]:
    """``cfg`` with a family's fields under the names ``model_from_hf_config`` reads, after
    refusing the structures it does not model (ConfigError naming the field) and dropping the
    names the family does not read (``hf_unread.unread``)."""
    decoder_only(cfg, where)
    hf_unread.list_fields(cfg, cfg.get("num_hidden_layers"), where)
    cfg = hf_unread.mlp_layer_types(hf_unread.unread(cfg, where), where)
    hf_unread.attention_shapes(cfg, where)
    hf_unread.per_layer_structures(cfg, where)
    _not_modelled(cfg, where)
    cfg = class_defaults(cfg, where)
    kind = cfg.get("model_type")
    fields: dict[str, Any] = {}
    out = hf_mpt.mpt_names(cfg, where, fields) if kind in ("mpt", "dbrx") else \
        _falcon(cfg, where) if kind == "falcon" else dict(_bigcode_opt(cfg, kind, where))
    _rope_names(cfg, out, fields, where)
    parallel = _parallel(cfg, where)
    if parallel is not None:
        fields["parallel_block"] = parallel
        if parallel and kind != "gpt_neox":  # one norm feeds both (module docstring)
            fields["parallel_block_norms"] = 1
    if kind in ("gptj", "codegen"):
        # attention without biases, the MLP with them: GPTJAttention q/k/v/out_proj and
        # CodeGenAttention qkv_proj/out_proj ``bias=False``, GPTJMLP / CodeGenMLP fc_in and
        # fc_out nn.Linear's default bias (transformers 5.24.0 modeling_gptj.py lines 124-127,
        # 195-196; modeling_codegen.py 120-122, 194-195); their configs name neither
        out["attention_bias"], out["mlp_bias"] = False, True
    if kind == "bitnet":  # BitNetMLP: gate_proj, up_proj, down_proj around relu2
        fields["activation"] = "swiglu"
        # and rotary positions whatever rope_parameters holds: BitNetModel.__init__ builds
        # ``self.rotary_emb = BitNetRotaryEmbedding(config=config)`` and no position table
        # (transformers 5.24.0 models/bitnet/modeling_bitnet.py line 342)
        fields["position_embedding"] = "rope"
    if kind == "bloom":  # BloomModel: ALiBi and word_embeddings_layernorm (modeling_bloom.py)
        fields.update(position_embedding="alibi", embedding_norm=True)  # learned, none before
    if kind in ("glm4_moe", "glm4v_moe_text") and out.get("head_dim") is None:
        hidden, heads = out.get("hidden_size"), out.get("num_attention_heads")
        if isinstance(hidden, int) and isinstance(heads, int) and heads > 0 \
                and not isinstance(heads, bool):
            out["head_dim"] = hidden // heads  # Glm4MoeAttention: the floor, as transformers
    if kind == "lfm2":
        _lfm2(cfg, out, fields, where)
    out[MODEL_FIELDS] = fields
    return out


def _lfm2(cfg: dict[str, Any], out: dict[str, Any], fields: dict[str, Any], where: str) -> None:
    """LFM2's attention layers (transformers 5.24.0 models/lfm2/modeling_lfm2.py): ``Lfm2MLP``
    w1 / w3 / w2 without biases, ``intermediate_size`` cut to ``int(2 * n / 3)`` under
    ``block_auto_adjust_ff_dim`` then, with ``block_ffn_dim_multiplier``, scaled and rounded up
    to ``block_multiple_of`` (lines 115-125); q/k/v/out_proj without biases and RMSNorm q/k
    norms of head_dim (lines 213-218); RMSNorm ``operator_norm`` / ``ffn_norm`` (396-397).
    Its config.json names neither hidden_act nor rms_norm_eps (read as a biased GELU / LayerNorm
    model before: +0.03 % parameters, the two-matrix 12,288 as wide as the gated 8,192).
    Defaults from ``Lfm2Config`` (configuration_lfm2.py lines 75-77)."""
    fields.update(activation="swiglu", normalization="rmsnorm", add_bias_linear=False,
                  qk_layernorm=True)
    width, multiple = out.get("intermediate_size"), cfg.get("block_multiple_of", 256)
    scale = cfg.get("block_ffn_dim_multiplier", 1.0)
    whole = [isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (width, multiple)]
    if not all(whole) or not flag(
            cfg, "block_auto_adjust_ff_dim", True, where):
        return  # a missing or odd width is refused where it is read
    width = int(2 * width / 3)
    if isinstance(scale, (int, float)) and not isinstance(scale, bool) and scale > 0:
        width = int(scale * width)
        width = multiple * -(-width // multiple)
    out["intermediate_size"] = width


__all__ = ["ATTENTION_LAYER_TYPES", "EXPERT_KEYS", "MODEL_FIELDS", "UNREAD_MOE_KEYS",
           "class_defaults", "count", "decoder_only", "expert_count", "expert_keys", "flag",
           "known_family", "normalized"]
