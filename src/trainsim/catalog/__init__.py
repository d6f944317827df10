"""Package-data catalog of GPUs, nodes and model presets, and the loader of run configs.

Adding a GPU, node or model is adding a YAML file under ``catalog/{gpus,nodes,models}``.
Units are converted to SI here, once (TFLOP/s -> FLOP/s, GB/s -> B/s, GiB -> bytes).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import yaml

from trainsim.config import (
    ClusterConfig,
    GPUSpec,
    ModelConfig,
    ParallelConfig,
    RunConfig,
    TrainingConfig,
)
from trainsim.config._build import build, suggest
from trainsim.catalog.defaults import apply_framework
from trainsim.config.parallel import ALIASES
from trainsim.errors import CatalogError, ConfigError

_ROOT = Path(__file__).parent
GiB = 2**30


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise CatalogError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: expected a mapping")
    return data


@functools.cache
def _entries(kind: str) -> dict[str, Path]:
    return {p.stem: p for p in sorted((_ROOT / kind).glob("*.yaml"))}


def names(kind: str) -> list[str]:
    """Preset names of ``kind`` ('gpus', 'nodes' or 'models')."""
    return list(_entries(kind))


def _lookup(kind: str, name: str) -> dict[str, Any]:
    return dict(_lookup_cached(kind, name))


@functools.cache
def _lookup_cached(kind: str, name: str) -> dict[str, Any]:
    entries = _entries(kind)
    key = name.strip().lower()
    if key not in entries:
        what = {"gpus": "GPU", "nodes": "node", "models": "model"}[kind]
        raise CatalogError(f"unknown {what} '{name}'{suggest(key, entries)}; "
                           f"known: {', '.join(entries)}")
    return _read_yaml(entries[key])


def _gpu_si(d: dict[str, Any]) -> dict[str, Any]:
    """Convert catalog units (TFLOP/s, GiB, GB/s, MiB) to SI keys; SI keys pass through."""
    out = dict(d)
    if "peak_tflops" in out:
        out["peak_flops"] = {k: float(v) * 1e12 for k, v in out.pop("peak_tflops").items()}
    conversions = {"hbm_gib": ("hbm_bytes", GiB), "hbm_bw_gbps": ("hbm_bw_Bps", 1e9),
                   "nvlink_gbps": ("nvlink_bw_Bps", 1e9), "l2_mib": ("l2_bytes", 2**20)}
    for key, (si, scale) in conversions.items():
        if key in out:
            out[si] = float(out.pop(key)) * scale
    return out


def gpu_from_dict(d: dict[str, Any]) -> GPUSpec:
    """A GPU spec from catalog units (TFLOP/s, GiB, GB/s) or SI keys."""
    return build(GPUSpec, _gpu_si(d), "gpu")


@functools.cache
def gpu(name: str) -> GPUSpec:
    return gpu_from_dict(_lookup("gpus", name))


def node(name: str) -> dict[str, Any]:
    return _lookup("nodes", name)


def model_dict(name: str) -> dict[str, Any]:
    return _lookup("models", name)


def model(name: str) -> ModelConfig:
    return build(ModelConfig, model_dict(name), "model")


def model_from_hf_config(path: str | Path) -> ModelConfig:
    """A ModelConfig from a Hugging Face ``config.json`` on disk (Llama/Mistral/Qwen/GPT-2 style)."""
    path = Path(path)
    try:
        cfg = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read Hugging Face config {path}: {exc}") from None
    get = lambda *keys, default=None: next((cfg[k] for k in keys if k in cfg), default)
    hidden = get("hidden_size", "n_embd", "d_model")
    if hidden is None:
        raise ConfigError(f"{path}: no hidden_size / n_embd in the Hugging Face config")
    act = str(get("hidden_act", "activation_function", default="gelu")).lower()
    gated = act in ("silu", "swiglu", "swish") or "llama" in str(cfg.get("model_type", ""))
    fields = dict(
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
        normalization="rmsnorm" if "rms_norm_eps" in cfg else "layernorm",
        position_embedding="rope" if ("rope_theta" in cfg or gated) else "learned",
        tied_embeddings=bool(cfg.get("tie_word_embeddings", not gated)),
        add_bias_linear=bool(get("attention_bias", "mlp_bias", default=not gated)),
        attention_dropout=float(get("attention_dropout", "attn_pdrop", default=0.0)),
        hidden_dropout=float(get("hidden_dropout", "resid_pdrop", default=0.0)),
        sliding_window=get("sliding_window") if cfg.get("use_sliding_window", True) else None,
    )
    if fields["sliding_window"] is not None and isinstance(cfg.get("layer_types"), list):
        fields["window_attn_skip_freq"] = _window_skip_freq(cfg["layer_types"], path)
    experts = get("num_local_experts", "num_experts", "n_routed_experts")
    if experts:  # Mixtral / Qwen-MoE / DeepSeek-style routed experts
        shared = get("shared_expert_intermediate_size")
        n_shared = cfg.get("n_shared_experts")
        if shared is None and n_shared:
            shared = n_shared * get("moe_intermediate_size")
        fields.update(num_experts=experts,
                      moe_router_topk=get("num_experts_per_tok", "moe_topk", default=2),
                      moe_ffn_hidden_size=get("moe_intermediate_size"),
                      moe_shared_expert_intermediate_size=shared,
                      moe_layer_freq=get("decoder_sparse_step", "moe_layer_freq", default=1),
                      moe_first_dense_layers=get("first_k_dense_replace", default=0))
    if cfg.get("kv_lora_rank"):  # DeepSeek-V2/V3 multi-head latent attention
        fields.update(q_lora_rank=cfg.get("q_lora_rank"), kv_lora_rank=cfg["kv_lora_rank"],
                      qk_head_dim=get("qk_nope_head_dim", default=128),
                      qk_pos_emb_head_dim=get("qk_rope_head_dim", default=64),
                      v_head_dim=get("v_head_dim", default=128), head_dim=None)
    fields["mtp_num_layers"] = get("num_nextn_predict_layers", default=0)
    return build(ModelConfig, {k: v for k, v in fields.items() if v is not None}, "model")


def _window_skip_freq(layer_types: list[str], path: Path) -> int | None:
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


# ---------------------------------------------------------------------------- run configs

def read_config_file(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not valid YAML/JSON: not UTF-8 text") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path} is not valid YAML/JSON: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping with sections model, parallel, training, cluster")
    data.setdefault("_base_dir", str(path.parent))
    return data


def _parse_value(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def apply_overrides(data: dict[str, Any], overrides: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """Apply ``a.b=v`` overrides (``--set parallel.tp=4``) to a raw config mapping."""
    data = json.loads(json.dumps(data))  # deep copy of plain data
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"--set {item!r}: expected section.field=value")
        key, value = item.split("=", 1)
        parts = key.strip().split(".")
        if len(parts) < 2:
            raise ConfigError(f"--set {item!r}: expected section.field=value (e.g. parallel.tp=4)")
        node_ = data
        for p in parts[:-1]:
            child = node_.get(p)
            if isinstance(child, str) and p == "model":  # a preset name: expand to add a field
                child = {"preset": child}
            if child is None:
                child = {}
            if not isinstance(child, dict):
                raise ConfigError(f"--set {item!r}: {p} is not a section")
            node_[p] = child
            node_ = child
        leaf = parts[-1]
        if parts[0] == "parallel" and len(parts) == 2:  # tp=... edits tensor_model_parallel_size
            full = ALIASES.get(leaf)
            short = {v: k for k, v in ALIASES.items()}.get(leaf)
            if full and full in node_:
                leaf = full
            elif short and short in node_:
                leaf = short
        node_[leaf] = _parse_value(value)
    return data


def _model_section(raw: Any, base_dir: Path) -> ModelConfig:
    if isinstance(raw, str):
        return model(raw)
    if not isinstance(raw, dict):
        raise ConfigError("model must be a preset name or a mapping of fields")
    raw = dict(raw)
    base: dict[str, Any] = {}
    if "preset" in raw:
        base = model_dict(str(raw.pop("preset")))
    elif "hf_config" in raw:
        hf = Path(raw.pop("hf_config"))
        hf = hf if hf.is_absolute() else base_dir / hf
        base = {k: v for k, v in model_from_hf_config(hf).__dict__.items()}
    if "seq_length" in raw:
        raise ConfigError("model.seq_length: the sequence length is training.seq_length")
    return build(ModelConfig, {**base, **raw}, "model")


def _cluster_section(raw: Any) -> ClusterConfig:
    if not isinstance(raw, dict):
        raise ConfigError("cluster must be a mapping (gpu, num_gpus, gpus_per_node, ...)")
    raw = dict(raw)
    fields: dict[str, Any] = {}
    if "node" in raw:  # the node preset fills what the user did not set
        n = node(str(raw.pop("node")))
        fields.update(node=n["name"], gpu=n["gpu"], gpus_per_node=n["gpus_per_node"])
        if "nic_bw_Bps" not in raw:
            fields["nic_gbps_per_gpu"] = n["nic_gbps_per_gpu"]
    fields.update(raw)
    g = fields.pop("gpu", None)
    if g is None:
        raise ConfigError("cluster.gpu is required (a catalog name such as h100-sxm-80gb)")
    gpu_overrides = fields.pop("gpu_overrides", None) or {}
    if isinstance(g, dict):
        spec = gpu_from_dict(g)
    else:
        spec = gpu(str(g))
    if gpu_overrides:  # a what-if GPU: catalog spec with some numbers changed
        spec = gpu_from_dict({**spec.__dict__, **_gpu_si(gpu_overrides)})
    if "nic_gbps_per_gpu" in fields:
        fields["nic_bw_Bps"] = float(fields.pop("nic_gbps_per_gpu")) * 1e9 / 8
    if "nvlink_gbps" in fields:
        fields["intra_node_bw_Bps"] = float(fields.pop("nvlink_gbps")) * 1e9
    fields["gpu"] = spec
    return build(ClusterConfig, fields, "cluster")


def run_config_from_dict(data: dict[str, Any]) -> RunConfig:
    """Resolve presets and build a RunConfig from a raw mapping (as read from YAML)."""
    data = dict(data)
    base_dir = Path(data.pop("_base_dir", "."))
    # "reliability" belongs to `trainsim goodput` (trainsim.reliability); one iteration ignores it
    allowed = {"model", "parallel", "training", "cluster", "name", "description", "reliability"}
    for key in data:
        if key not in allowed:
            raise ConfigError(f"unknown section '{key}'{suggest(key, allowed)}; "
                              "expected model, parallel, training, cluster")
    for key in ("model", "cluster"):
        if key not in data:
            raise ConfigError(f"the config has no '{key}' section")
    parallel_raw = dict(data.get("parallel") or {})
    for short, full in ALIASES.items():
        if short in parallel_raw:
            if full in parallel_raw:
                raise ConfigError(f"parallel.{short} and parallel.{full} are the same field; give one")
            parallel_raw[full] = parallel_raw.pop(short)
    training_raw = dict(data.get("training") or {})
    cluster_raw = data["cluster"] if isinstance(data["cluster"], dict) else {}
    gpu_name = cluster_raw.get("gpu") or (node(str(cluster_raw["node"]))["gpu"]
                                          if "node" in cluster_raw else None)
    apply_framework(parallel_raw, training_raw, gpu_name)
    return RunConfig(
        model=_model_section(data["model"], base_dir),
        parallel=build(ParallelConfig, parallel_raw, "parallel"),
        training=build(TrainingConfig, training_raw, "training"),
        cluster=_cluster_section(data["cluster"]),
    )


def load_run_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> RunConfig:
    """Read a YAML/JSON run config, apply ``--set`` overrides, resolve presets."""
    return run_config_from_dict(apply_overrides(read_config_file(path), overrides))
