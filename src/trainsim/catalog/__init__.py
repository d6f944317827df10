"""Package-data catalog of GPUs, nodes and model presets, and the loader of run configs.

Adding a GPU, node or model is adding a YAML file under ``catalog/{gpus,nodes,models}``.
Units are converted to SI once, in ``catalog.units`` (TFLOP/s -> FLOP/s, GB/s -> B/s, GiB -> bytes).
"""

from __future__ import annotations

import copy
import functools
import json
import warnings
from pathlib import Path
from typing import Any

from trainsim.catalog import gpu_names, model_names
from trainsim.catalog.defaults import (
    apply_framework,
    sdpa_enable_gqa_problem,
    sink_attention,
    softcap_attention,
    window_attention_problem,
)
from trainsim.catalog.names import aliases_of
from trainsim.catalog.run_framework import (
    dense_moe_settings,
    fp8_settings_ignored,
    framework_model,
    settings_ignored,
)
from trainsim.catalog.shared_sections import kept_section
from trainsim.catalog.te_attention import blackwell_head_dim_attention, wide_head_attention
from trainsim.catalog.units import (
    CLUSTER_UNITS,
    RENAMED,
    GiB,
    _gpu_si,
    _kind,
    _number,
    _renamed,
    _scaled,
    gpu_from_dict,
)
from trainsim.config import (
    ClusterConfig,
    GPUSpec,
    ModelConfig,
    ParallelConfig,
    RunConfig,
    TrainingConfig,
)
from trainsim.config._build import as_written, build, section_of, suggest
from trainsim.config.cluster import NVL72_GPUS, TOPOLOGY_ALIASES, gpu_missing
from trainsim.config.model import check_model_source
from trainsim.config.parallel import ALIASES
from trainsim.config.safe_load import load_file, parse_value, shown_path
from trainsim.errors import (
    CatalogError,
    ConfigError,
    SettingReplaced,
    TrainsimWarning,
)
from trainsim.lazy import lazy_getattr

_ROOT = Path(__file__).parent


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        # trainsim's own files: libyaml's parser, the same data (~0.6 s less per process
        # that validates the public training file, which reads 72 of them)
        data = load_file(path, "catalog file", fast=True)
    except ConfigError as exc:
        raise CatalogError(str(exc)) from None
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: expected a mapping")
    return data


@functools.cache
def _entries(kind: str) -> dict[str, Path]:
    return {p.stem: p for p in sorted((_ROOT / kind).glob("*.yaml"))}


def names(kind: str) -> list[str]:
    """Preset names of ``kind`` ('gpus', 'nodes' or 'models')."""
    return list(_entries(kind))


def specs(kind: str) -> list[dict[str, Any]]:
    """One row of headline specs per preset of ``kind``, in the units the catalog uses
    (TFLOP/s, GiB, GB/s, Gbit/s), for ``trainsim catalog``."""
    rows = []
    for name in names(kind):
        if kind == "gpus":
            g = gpu(name)
            rows.append({"name": name, "fp16_tflops": g.flops("fp16") / 1e12,
                         # None where the tensor cores have no bf16 (V100: its runs use fp16)
                         "bf16_tflops": g.peak_flops["bf16"] / 1e12 if "bf16" in g.peak_flops
                         else None,
                         "fp8_tflops": g.peak_flops["fp8"] / 1e12 if "fp8" in g.peak_flops
                         else None, "hbm_gib": g.hbm_bytes / GiB,
                         "hbm_gbyte_s": g.hbm_bw_Bps / 1e9,
                         "nvlink_gbyte_s": g.nvlink_bw_Bps / 1e9, "tdp_w": g.tdp_w,
                         "usd_per_hour": g.price_per_hour})
        elif kind == "nodes":
            n = node(name)
            rows.append({"name": name, "gpu": n.get("gpu"), "gpus_per_node": n.get("gpus_per_node"),
                         "nic_gbit_s_per_gpu": n.get("nic_gbit_s_per_gpu"),
                         "gpus_per_nic": n.get("gpus_per_nic", 1)})
        else:
            m = model(name)
            rows.append({"name": name, "layers": m.num_layers, "hidden_size": m.hidden_size,
                         "heads": m.num_attention_heads, "kv_heads": m.kv_heads,
                         "experts": m.num_experts, "vocab_size": m.vocab_size})
    return rows


def _lookup(kind: str, name: str) -> dict[str, Any]:
    return dict(_lookup_cached(kind, name))


@functools.cache
def _lookup_cached(kind: str, name: str) -> dict[str, Any]:
    entries = _entries(kind)
    key = name.strip().lower()
    if kind == "gpus" and key not in entries:  # "NVIDIA H100 80GB HBM3", "A100-SXM4-80GB", ...
        try:
            key = gpu_names.resolve(name, gpu_aliases(), gpu_memory_gib()) or key
        except gpu_names.Ambiguous as amb:
            shown = repr(name) if len(name) <= 60 else repr(name[:57]) + "..."
            raise CatalogError(f"GPU {shown} is ambiguous: it could be "
                               f"{', '.join(amb.candidates)}; name one of them") from None
    if key not in entries:
        what = {"gpus": "GPU", "nodes": "node", "models": "model"}[kind]
        shown = repr(name) if len(name) <= 60 else repr(name[:57]) + "..."
        other = gpu_names.not_a_gpu(name) if kind == "gpus" else None
        if other:
            raise CatalogError(f"GPU {shown} is {other}, not a GPU: trainsim models NVIDIA and "
                               f"AMD GPUs only (known: {', '.join(entries)})")
        raise CatalogError(f"unknown {what} {shown}{suggest(key, entries)}; "
                           f"known: {', '.join(entries)}")
    return _read_yaml(entries[key])


@functools.cache
def gpu_aliases() -> dict[str, tuple[str, ...]]:
    """Each catalog GPU -> the other names it answers to (its file's ``aliases:``)."""
    return {name: aliases_of(path, _read_yaml(path)) for name, path in _entries("gpus").items()}


@functools.cache
def gpu_memory_gib() -> dict[str, float]:
    """Each catalog GPU -> its memory in GiB (its file's ``hbm_gib``), for names that state a
    size its names do not (``gpu_names.resolve``)."""
    out = {}
    for name, path in _entries("gpus").items():
        size = _read_yaml(path).get("hbm_gib")
        if isinstance(size, (int, float)):
            out[name] = float(size)
    return out


def gpu_assumed(name: str) -> str | None:
    """What naming GPU ``name`` left to assume: 'SXM (...)' where it states no form factor and
    resolves to the SXM part of entries that differ only in that (``A100 80GB``), else None."""
    if name.strip().lower() in _entries("gpus"):
        return None
    entry = gpu_names.assumed_form_factor(name, gpu_aliases())
    return (f"{entry} (SXM: the name states no form factor; published training clusters are "
            "HGX/DGX servers of SXM modules)") if entry else None


@functools.cache
def gpu(name: str) -> GPUSpec:
    """The catalog GPU ``name`` names: its file name or any spelling ``catalog.gpu_names``
    resolves to exactly one entry."""
    data = _lookup("gpus", name)
    data.pop("aliases", None)  # catalog metadata, not a GPUSpec field
    return gpu_from_dict(data)


def _node_named(value: Any) -> dict[str, Any]:
    """The node preset ``cluster.node`` names; an empty cell is refused by its field's name, not
    looked up as the node 'None' (fuzz46)."""
    if value is None or not str(value).strip():
        raise ConfigError(f"cluster.node is empty; name a node preset (known: "
                          f"{', '.join(names('nodes'))}) or give cluster.gpu")
    return node(str(value))


NO_NODE_PRESET = ClusterConfig.__dataclass_fields__["node"].default


def _no_preset(value: Any) -> bool:
    """Whether ``cluster.node`` is ``ClusterConfig``'s own default, ``custom``: no node preset,
    as every resolved config without one states it (``simulate --format json``'s ``config``,
    robust52: refused as "unknown node 'custom'", so no resolved config read back), in any case
    and spacing, as a preset's name is looked up (``Custom`` was "unknown node", edges52)."""
    return isinstance(value, str) and value.strip().lower() == NO_NODE_PRESET


def node(name: str) -> dict[str, Any]:
    return _renamed(_lookup("nodes", name), f"node {name}", rename=True)


def model_name(name: str) -> str | None:
    """The preset file name ``name`` spells (``catalog.model_names``: case, an ``org/`` prefix,
    Hugging Face variant suffixes, each preset's ``aliases``), or None."""
    key = model_names.canonical(name, _entries("models"))
    return key if key in _entries("models") else None


def model_dict(name: str) -> dict[str, Any]:
    """The preset fields of model ``name`` (any spelling ``model_name`` resolves)."""
    data = _lookup("models", model_names.canonical(name, _entries("models")))
    data.pop("aliases", None)  # catalog metadata, not a ModelConfig field
    return data


def model(name: str) -> ModelConfig:
    return build(ModelConfig, model_dict(name), "model")


# ---------------------------------------------------------------------------- run configs

def read_config_file(path: str | Path) -> dict[str, Any]:
    if not str(path).strip():  # Path('') is '.', the folder
        raise ConfigError("the config file name is empty; give a YAML or JSON file")
    path = Path(path)
    data = load_file(path, "config")
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping with sections model, parallel, training, cluster")
    data.setdefault("_base_dir", str(path.parent))
    return data


SET_SECTIONS = ("model", "parallel", "training", "cluster", "reliability")
"""The sections a ``--set`` edits a field of (``reliability``: ``trainsim goodput`` only)."""


def apply_overrides(data: dict[str, Any], overrides: list[str] | tuple[str, ...],
                    reliability: bool = False) -> dict[str, Any]:
    """Apply ``a.b=v`` overrides (``--set parallel.tp=4``) to a raw config mapping. A
    ``--set reliability.*`` is refused unless ``reliability`` (``trainsim goodput`` reads that
    section; one iteration ignores it, so another command dropped it in silence, robust55)."""
    data = copy.deepcopy(data)  # not through JSON: a number keeps the text it was written as
    spelled: dict[str, tuple[str, Any]] = {}  # parallel field -> (spelling, value) set here
    for item in overrides:
        if not isinstance(item, str):
            raise ConfigError(f"an override must be text such as 'parallel.tp=4', got "
                              f"{_kind(item)}")
        if "=" not in item:
            raise ConfigError(f"--set {item!r}: expected section.field=value")
        key, value = item.split("=", 1)
        parts = key.strip().split(".")
        if len(parts) < 2:
            raise ConfigError(f"--set {item!r}: expected section.field=value (e.g. parallel.tp=4)")
        if parts[0] == "reliability" and not reliability:
            raise ConfigError(f"--set {key.strip()}: only trainsim goodput reads the "
                              "reliability section; this command would ignore it")
        if parts[0] not in SET_SECTIONS:  # robust62: refused later as a config file's key,
            # with a file's hint (the x- prefix of a YAML anchor key) and no --set named
            raise ConfigError(f"--set {key.strip()}: unknown section {parts[0]!r}"
                              f"{suggest(parts[0], SET_SECTIONS)}; a --set names a field of "
                              "model, parallel, training or cluster (e.g. parallel.tp=4)")
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
        parsed = parse_value(value, f"--set {key.strip()}")
        if parts[0] == "parallel" and len(parts) == 2:
            _same_field(spelled, parts[1], parsed)
        node_[leaf] = parsed
    return data


def check_option_sets(overrides: list[str] | tuple[str, ...],
                      options: dict[str, tuple[str, Any]]) -> None:
    """Refuse a ``--set`` of a field that one of the command's own options also sets, to
    another value; equal values are one setting. ``options``: dotted field
    (``parallel.tp``) -> (the option as written with its value, ``--tp 4``; the value, None
    where the option was not given). robust51:
    ``export`` / ``capture`` let the option win in silence over a run config file and the
    ``--set`` over a Hugging Face config.json, ``goodput`` its ``--gpus``, ``--failures``
    and ``--interval``; ``search`` and ``plan`` refuse it too (``OWN_OPTIONS``)."""
    touched = apply_overrides({}, list(overrides), reliability=True)
    for path, (option, value) in options.items():
        *sections, field = path.split(".")
        node: Any = touched
        for section in sections:
            node = node.get(section) if isinstance(node, dict) else None
        if value is None or not isinstance(node, dict):
            continue
        short = {v: k for k, v in ALIASES.items()}
        names = {field, ALIASES.get(field, field), short.get(field, field)} \
            if sections == ["parallel"] else {field}
        for name in sorted(names):
            if name in node and node[name] != value:
                shown = json.dumps(node[name]) if isinstance(node[name], bool) else node[name]
                raise ConfigError(f"--set {'.'.join(sections)}.{name}={shown} and {option} "
                                  "set the same field; give one")


def _same_field(spelled: dict[str, tuple[str, Any]], name: str, value: Any) -> None:
    """Two ``--set``s of one parallel field under two spellings (``tp`` and
    ``tensor_model_parallel_size``) with different values are refused as a file giving both
    is (``run_config_from_dict``), not read as the last one; equal values are one setting."""
    full = ALIASES.get(name, name)
    before = spelled.get(full)
    if before is not None and before[0] != name and before[1] != value:
        first, second = sorted((before[0], name), key=lambda n: n == full)
        raise ConfigError(f"parallel.{first} and parallel.{second} are the same field; give one")
    spelled[full] = (name, value)


def _model_section(raw: Any, base_dir: Path) -> ModelConfig:
    if isinstance(raw, str):
        return model(raw)
    if not isinstance(raw, dict):
        raise ConfigError("model must be a preset name or a mapping of fields")
    raw = dict(raw)
    base: dict[str, Any] = {}
    check_model_source(raw)
    if "preset" in raw:
        base = model_dict(str(raw.pop("preset")))
    elif "hf_config" in raw:
        if not isinstance(raw["hf_config"], str):
            raise ConfigError(f"model.hf_config must be a path to a config.json, got "
                              f"{_kind(raw['hf_config'])}")
        hf = Path(raw.pop("hf_config"))
        hf = hf if hf.is_absolute() else base_dir / hf
        from trainsim.catalog.hf_config import model_from_hf_config

        base = {k: v for k, v in model_from_hf_config(hf).__dict__.items()}
    if "seq_length" in raw:
        raise ConfigError("model.seq_length: the sequence length is training.seq_length")
    if base and "name" in raw and str(raw["name"]).strip().lower() in _entries("models") \
            and str(raw["name"]).strip().lower() != str(base.get("name", "")).lower():
        raise ConfigError(f"model.name={raw['name']!r} names another preset but only labels this "
                          f"model ({base.get('name')}); set model.preset={raw['name']} to simulate "
                          "that model")
    return build(ModelConfig, {**base, **raw}, "model")


GPU_FILE_SUFFIXES = (".yaml", ".yml", ".json")


def gpu_file_path(value: str, base_dir: Path) -> Path | None:
    """The GPU spec file ``cluster.gpu`` names, or None where it names a catalog GPU: a name
    ending in .yaml/.yml/.json, or one with a directory part that is a file, relative to the
    config file's directory (as ``model.hf_config``). ``--gpu FILE`` of search/plan reads the
    same files (``search.cli_inputs._gpu_spec``)."""
    path = Path(value.strip())
    full = path if path.is_absolute() else base_dir / path
    if path.suffix.lower() in GPU_FILE_SUFFIXES or (("/" in value or "\\" in value)
                                                    and full.is_file()):
        return full
    return None


def read_gpu_file(path: Path, where: str) -> dict[str, Any]:
    """The GPU fields (catalog units) of a GPU spec file: the file's mapping, or the mapping
    under its ``gpu`` key; a config reads them as it reads ``cluster.gpu`` given as a mapping."""
    if not path.is_file():
        raise ConfigError(f"{where}={shown_path(path)}: no such GPU spec file (give a catalog "
                          "name such as h100-sxm-80gb, or a YAML file of GPU fields)")
    data = load_file(path, "GPU spec")
    if isinstance(data, dict) and isinstance(data.get("gpu"), dict):
        data = data["gpu"]
    if not isinstance(data, dict):
        raise ConfigError(f"{shown_path(path)} must hold a mapping of GPU fields, got "
                          f"{_kind(data)}")
    data.pop("_base_dir", None)
    # the names a catalog file answers to, metadata no GPUSpec field holds (as ``gpu`` drops
    # them): a catalog file copied as a user's own was "unknown field cluster.gpu.aliases";
    # a user's file is named by its path, so its aliases name nothing: said, not dropped
    # silently (robust57 lead 3)
    aliases = data.pop("aliases", None)
    if aliases:
        warnings.warn(f"{where}={shown_path(path)}: its aliases {_shown_aliases(aliases)} are "
                      "not read (a GPU file is named by its path; aliases name catalog GPUs "
                      "only)", TrainsimWarning, stacklevel=2)
    return data


def _shown_aliases(aliases: Any) -> str:
    text = ", ".join(map(str, aliases)) if isinstance(aliases, list) else str(aliases)
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _cluster_section(raw: Any) -> ClusterConfig:
    if not isinstance(raw, dict):
        raise ConfigError("cluster must be a mapping (gpu, num_gpus, gpus_per_node, ...)")
    raw = _renamed(raw, "cluster")
    fields: dict[str, Any] = {}
    if _no_preset(raw.get("node")):  # a resolved config's own word for "no node preset"
        fields["node"] = NO_NODE_PRESET
        del raw["node"]
    if "node" in raw:  # the node preset fills what the user did not set
        n = _node_named(raw.pop("node"))
        fields.update(node=n["name"], gpu=n["gpu"], gpus_per_node=n["gpus_per_node"])
        if not {"nic_bw_Bps", "nic_gbit_s_per_gpu", "nic_gbps_per_gpu"} & set(raw):
            fields["nic_gbit_s_per_gpu"] = n["nic_gbit_s_per_gpu"]
        # 4 NICs for 8 GPUs (DGX-1), the NICs' transport (A3 High: tcpx); the user's wins
        fields.update({k: n[k] for k in ("gpus_per_nic", "fabric") if n.get(k) is not None})
    fields.update(raw)
    topology = str(raw.get("topology", "")).strip().lower().replace("_", "-")
    if TOPOLOGY_ALIASES.get(topology, topology) == "nvl72" and "gpus_per_node" not in raw:
        fields["gpus_per_node"] = NVL72_GPUS  # the NVLink domain is the rack (any node's GPU)
    g = fields.pop("gpu", None)
    if g is None:
        raise gpu_missing(fields, [*CLUSTER_UNITS, *RENAMED, "gpu_overrides"])
    gpu_overrides = section_of(fields.pop("gpu_overrides", None), "cluster.gpu_overrides")
    if isinstance(g, dict):
        spec = gpu_from_dict(g, "cluster.gpu")
    elif isinstance(g, str):
        spec = gpu(g)
    else:
        raise ConfigError(f"cluster.gpu must be a catalog name (e.g. h100-sxm-80gb), a GPU "
                          f"spec file or a mapping of GPU fields, got {_kind(g)}")
    if gpu_overrides:  # a what-if GPU: catalog spec with some numbers changed
        over = _gpu_si(gpu_overrides, "cluster.gpu_overrides")
        if isinstance(over.get("peak_flops"), dict):  # override some dtypes, keep the others
            over["peak_flops"] = {**spec.peak_flops, **over["peak_flops"]}
        spec = gpu_from_dict({**spec.__dict__, **over}, "cluster.gpu_overrides")
    for key, (si, scale) in CLUSTER_UNITS.items():
        key = next((old for old, now in RENAMED.items() if now == key and old in fields), key)
        if key in fields:
            fields[si] = _scaled(fields.pop(key), f"cluster.{key}", scale)
    fields["gpu"] = spec
    db = fields.get("compute_db")
    if db is not None and not isinstance(db, str):  # robust63: 1 / true read as a file name
        raise ConfigError(f"cluster.compute_db must be a kernel database file (trainsim "
                          f"profile's JSON), auto or none, got {_kind(db)}")
    if isinstance(db, str) and db.strip().lower() in ("none", "auto"):
        db = fields["compute_db"] = db.strip().lower() if db.strip().lower() == "auto" else None
    if isinstance(db, str) and db.strip() not in ("auto", ""):  # 'none' is roofline, as
        # --compute-db; blank is None as in every optional field (robust54: ' ' was a file)
        _check_kernel_db(db)
    return build(ClusterConfig, fields, "cluster")


def _check_kernel_db(path: str) -> None:
    """cluster.compute_db names a measured-kernel database (``trainsim profile``'s JSON): a
    mapping with a list of kernel rows, each with a positive time. Checked here so a wrong
    file is named by its field."""
    where = f"cluster.compute_db={shown_path(path)}"
    try:
        data = load_file(path, "kernel database")
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    rows = data.get("kernels") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ConfigError(f"{where} is not a kernel database (a JSON mapping with a 'kernels' "
                          "list, as trainsim profile writes)")
    measured_on = data.get("gpu")
    try:  # the GPU its records were timed on (robust57: "unknown GPU 'zz'" named no file)
        gpu(str(measured_on)) if isinstance(measured_on, str) and measured_on.strip() else None
    except ConfigError as exc:
        raise ConfigError(f"{where}: its gpu, {exc}") from None
    if not (isinstance(measured_on, str) and measured_on.strip()):
        raise ConfigError(f"{where}: its gpu ({_kind(measured_on)}) names no catalog GPU; a "
                          "kernel database states the GPU its records were timed on")
    for i, row in enumerate(rows):
        if not _number(row.get("time_s"), f"{where}: kernels[{i}].time_s") > 0:
            raise ConfigError(f"{where}: kernels[{i}].time_s must be positive")


EXTENSION_PREFIX = "x-"
"""A top-level config key starting with this is not read: it holds YAML anchors for the
sections to merge (``x-base: &base {...}``, then ``parallel: {<<: *base, tp: 4}``), as the
Compose file's extension fields (docs.docker.com/reference/compose-file/extension: "Compose
ignores any fields that start with x-", the sole unknown fields it ignores; docker/cli PR 452,
compose format 3.4's schema ``"patternProperties": {"^x-": {}}``). Any other unknown key stays
an error, so a mistyped section name is never dropped silently."""


def run_config_from_dict(data: dict[str, Any]) -> RunConfig:
    """Resolve presets and build a RunConfig from a raw mapping (as read from YAML)."""
    if not isinstance(data, dict):
        raise ConfigError(f"a run config must be a mapping with sections model, parallel, "
                          f"training, cluster; got {_kind(data)}")
    data = dict(data)
    base_dir = Path(data.pop("_base_dir", "."))
    # "reliability" belongs to `trainsim goodput` (trainsim.reliability); one iteration ignores it
    allowed = {"model", "parallel", "training", "cluster", "name", "description", "reliability"}
    hf = next((k for k in ("model_type", "architectures") if k in data), None)
    if hf and "model" not in data:  # fuzz17: was "unknown section 'architectures'"
        raise ConfigError(f"this is a Hugging Face config.json ({hf}), not a run config: name "
                          "it in one, model: {hf_config: PATH/config.json}, beside training "
                          "and cluster")
    for key in list(data):
        if isinstance(key, str) and key.startswith(EXTENSION_PREFIX):  # anchors only
            del data[key]
        elif key not in allowed:
            raise ConfigError(f"unknown section {key!r}{suggest(key, allowed)}; "
                              "expected model, parallel, training, cluster (a key that holds "
                              f"YAML anchors starts with {EXTENSION_PREFIX}, e.g. x-{key})")
    for key in ("model", "cluster"):
        if key not in data:
            raise ConfigError(f"the config has no {key!r} section")
    for key in ("parallel", "training"):  # null or blank: the section given empty
        if key in data:
            data[key] = section_of(data[key], key)
    if data.get("cluster") is not None and not isinstance(data["cluster"], dict):
        raise ConfigError(f"cluster must be a mapping of fields (e.g. cluster: {{...}}), "
                          f"got {_kind(data['cluster'])}")
    section_of(data.get("reliability"), "reliability")  # goodput's; its shape checked here too
    for key in ("name", "description"):  # free text, read by no run
        if isinstance(data.get(key), (list, tuple, dict)):
            raise ConfigError(f"{key} must be text, got {_kind(data[key])}")
    parallel_raw = dict(data.get("parallel") or {})
    written = {full: f"parallel.{short}" for short, full in ALIASES.items() if short in parallel_raw}
    for short, full in ALIASES.items():
        if short in parallel_raw:
            if full in parallel_raw:
                raise ConfigError(f"parallel.{short} and parallel.{full} are the same field; give one")
            parallel_raw[full] = parallel_raw.pop(short)
    try:
        return _run_config(data, parallel_raw, base_dir)
    except ConfigError as exc:  # name tp=... as the user wrote it, not tensor_model_parallel_size
        as_written(exc, written)
        raise


def _run_config(data: dict[str, Any], parallel_raw: dict[str, Any], base_dir: Path) -> RunConfig:
    training_raw = dict(data.get("training") or {})
    cluster = data["cluster"]
    g = cluster.get("gpu") if isinstance(cluster, dict) else None
    path = gpu_file_path(g, base_dir) if isinstance(g, str) else None
    if path is not None:  # a GPU spec file: its fields, as a mapping written in the config
        cluster = {**cluster, "gpu": read_gpu_file(path, "cluster.gpu")}
    cluster_raw = cluster if isinstance(cluster, dict) else {}
    gpu_name = cluster_raw.get("gpu") or (_node_named(cluster_raw["node"])["gpu"]
                                          if "node" in cluster_raw
                                          and not _no_preset(cluster_raw["node"]) else None)
    stated = training_raw.get("attention")  # as stated
    given = stated not in (None, "")
    unfilled = (dict(parallel_raw), dict(training_raw))
    apply_framework(parallel_raw, training_raw, gpu_name)
    # each distinct raw section built once inside a row's tuning (catalog.shared_sections)
    model = kept_section("model", data["model"], str(base_dir),
                         lambda: _model_section(data["model"], base_dir))
    model = framework_model(model, data["model"], training_raw)
    notes = [softcap_attention(training_raw, model.attn_logit_softcapping, given,
                               parallel_raw.get("context_parallel_size", 1)),
             sink_attention(training_raw, model.softmax_type, given, gpu_name),
             blackwell_head_dim_attention(training_raw, model, given, gpu_name),
             wide_head_attention(training_raw, model, stated, gpu_name)]
    for note in filter(None, notes):  # what the framework runs instead, said (validate: row notes)
        warnings.warn(note, SettingReplaced, stacklevel=2)
    window_attention_problem(training_raw, model.sliding_window, notes)
    sdpa_enable_gqa_problem(training_raw)
    cfg = RunConfig(model=model, parallel=build(ParallelConfig, parallel_raw, "parallel"),
                    training=build(TrainingConfig, training_raw, "training"),
                    cluster=kept_section("cluster", cluster, None,
                                         lambda: _cluster_section(cluster)))
    if not model.is_moe:
        dense_moe_settings(cfg, *unfilled, gpu_name)
    for ignored in [*fp8_settings_ignored(*unfilled, gpu_name, cfg.training),
                    *settings_ignored(unfilled[0], cfg)]:
        warnings.warn(ignored, TrainsimWarning, stacklevel=2)  # a config it was valid for
    return cfg


def load_run_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> RunConfig:
    """Read a YAML/JSON run config, apply ``--set`` overrides, resolve presets."""
    if not isinstance(path, (str, Path)):
        raise ConfigError(f"load_run_config needs the path of a YAML/JSON file, got {_kind(path)}")
    if isinstance(overrides, str):  # one override, not its characters
        overrides = [overrides]
    return run_config_from_dict(apply_overrides(read_config_file(path), overrides))


# ``model_from_hf_config`` imported when first read (PEP 562): presets need no HF reader
__getattr__ = lazy_getattr(__name__, {"model_from_hf_config": "trainsim.catalog.hf_config"},
                           globals())
