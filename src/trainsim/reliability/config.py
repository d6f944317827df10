"""Reliability inputs: failure profiles (catalog YAML) and the recovery/checkpoint settings.

A *failure profile* is a YAML file under ``catalog/failures/``: per-cause interruption counts
observed on a known cluster for a known time (or per-component rates), each cause tied to the
kind of component it scales with. Its counts become rates per component-second here, once.
SI units inside: seconds, bytes, bytes/s.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from trainsim.config._build import (
    build,
    require_positive,
    require_rate,
    section_of,
    suggest,
    switch,
    type_name,
)
from trainsim.config.safe_load import load_file
from trainsim.errors import CatalogError, ConfigError

DAY_S = 86400.0
COMPONENTS = ("gpu", "nic", "network", "node", "job")
"""Component kinds a failure rate scales with (see catalog/failures/*.yaml for the meaning)."""
_CATALOG = Path(__file__).resolve().parent.parent / "catalog" / "failures"
OBSERVED = ("gpus", "gpus_per_node", "days")
"""A failure profile's ``observed`` cluster: what its ``count`` modes become rates by."""


def component_counts(num_gpus: int, gpus_per_node: int) -> dict[str, int]:
    """How many components of each kind a cluster has (one NIC and one network path per GPU)."""
    nodes = max(1, -(-num_gpus // gpus_per_node))
    return {"gpu": num_gpus, "nic": num_gpus, "network": num_gpus, "node": nodes, "job": 1}


@dataclass(frozen=True)
class FailureMode:
    """One cause of interruption: its rate per component and what recovering from it takes."""

    name: str
    rate_per_s: float
    """Interruptions per component per second."""
    component: Literal["gpu", "nic", "network", "node", "job"]
    category: str = "other"
    detection: Literal["crash", "hang", "none"] = "crash"
    """crash: the heartbeat timeout finds it; hang: only the collective watchdog timeout does;
    none: planned (the job is stopped on purpose)."""
    replace: bool = False
    """The failed server is swapped out (spare pool) or repaired before the job restarts."""
    planned: bool = False
    """Planned maintenance: the job checkpoints, stops and restarts; no work is lost."""

    def rate(self, counts: dict[str, int]) -> float:
        """Interruptions per second of this cause on a cluster with ``counts`` components."""
        return self.rate_per_s * counts[self.component]


@dataclass(frozen=True)
class FailureProfile:
    name: str
    modes: tuple[FailureMode, ...]
    description: str = ""
    source: str = ""
    observed: dict[str, float] = field(default_factory=dict)
    """The cluster the counts were observed on: gpus, gpus_per_node, days."""
    published: dict[str, float] = field(default_factory=dict)
    """Published outcomes to compare with (interruptions, effective_training_time, ...)."""
    recovery: dict[str, Any] = field(default_factory=dict)
    """Recovery settings of the observed environment (override RecoveryConfig defaults)."""
    checkpoint: dict[str, Any] = field(default_factory=dict)
    """Checkpoint settings of the observed environment (override CheckpointConfig defaults)."""


def _number(value: Any, where: str, whole: bool = False) -> float:
    """A profile's number (a count, a rate, the observed cluster's size): finite and >= 0, a
    whole number >= 1 where ``whole``; else a CatalogError naming it."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and \
        0 <= value < math.inf and (not whole or (value >= 1 and value == int(value)))
    if not ok:
        need = "a whole number >= 1" if whole else "a finite number >= 0"
        raise CatalogError(f"{where}={value!r} must be {need}")
    return float(value)


def _mapping(data: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    """``data[key]`` as a mapping (empty when left out); a CatalogError naming it otherwise."""
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise CatalogError(f"{where}.{key} must be a mapping of fields, got {value!r}")
    return dict(value)


def _mode_from_yaml(name: str, d: Any, observed: dict[str, float], where: str) -> FailureMode:
    if not isinstance(d, dict):
        raise CatalogError(f"{where}.modes.{name} must be a mapping")
    d = dict(d)
    allowed = {"count", "per_1000_component_days", "category", "component", "detection",
               "replace", "planned"}
    for key in d:
        if key not in allowed:
            raise CatalogError(f"unknown field {where}.modes.{name}.{key}{suggest(key, allowed)}")
    component = d.pop("component", None)
    if component not in COMPONENTS:
        raise CatalogError(f"{where}.modes.{name}.component={component!r} is not one of "
                           f"{list(COMPONENTS)}")
    if ("count" in d) == ("per_1000_component_days" in d):
        raise CatalogError(f"{where}.modes.{name}: give exactly one of count (with an observed "
                           "cluster) or per_1000_component_days")
    if "count" in d:
        missing = [k for k in ("gpus", "gpus_per_node", "days") if k not in observed]
        if missing:
            raise CatalogError(f"{where}.observed needs {', '.join(missing)} to turn counts "
                               "into rates")
        gpus, per_node = (int(_number(observed[k], f"{where}.observed.{k}", whole=True))
                          for k in ("gpus", "gpus_per_node"))
        days = _number(observed["days"], f"{where}.observed.days")
        if days == 0:
            raise CatalogError(f"{where}.observed.days=0 must be positive: counts are per day")
        n = component_counts(gpus, per_node)[component]
        rate = _number(d.pop("count"), f"{where}.modes.{name}.count") / (n * days * DAY_S)
    else:
        rate = _number(d.pop("per_1000_component_days"),
                       f"{where}.modes.{name}.per_1000_component_days") / 1000.0 / DAY_S
    # read as the field reads it: bool('false') is True (fuzz17: a quoted "false" defaulted the
    # detection to a planned stop's 'none' while the mode stayed unplanned)
    planned = switch(d.get("planned", False), f"{where}.modes.{name}.planned")
    d.setdefault("detection", "none" if planned else "crash")
    return build(FailureMode, {"name": name, "rate_per_s": rate, "component": component, **d},
                 f"{where}.modes.{name}")


def profile_from_dict(data: dict[str, Any], where: str = "failures") -> FailureProfile:
    """A FailureProfile from the YAML mapping (counts or per-1000-component-day rates)."""
    if not isinstance(data, dict):
        raise CatalogError(f"{where} must be a mapping")
    allowed = {"name", "description", "source", "observed", "published", "modes", "recovery",
               "checkpoint"}
    for key in data:
        if key not in allowed:
            raise CatalogError(f"unknown field {where}.{key}{suggest(key, allowed)}")
    observed = _mapping(data, "observed", where)
    for key, value in observed.items():  # each checked where given, counts or not (robust55)
        if key not in OBSERVED:
            raise CatalogError(f"unknown field {where}.observed.{key}"
                               f"{suggest(str(key), OBSERVED)}; it holds {', '.join(OBSERVED)}")
        if not _number(value, f"{where}.observed.{key}", whole=key != "days"):
            raise CatalogError(f"{where}.observed.days=0 must be positive: counts are per day")
    raw_modes = data.get("modes")
    if not isinstance(raw_modes, dict) or not raw_modes:
        raise CatalogError(f"{where}.modes must be a non-empty mapping of cause -> fields")
    modes = tuple(_mode_from_yaml(str(k), v, observed, where) for k, v in raw_modes.items())
    for m in modes:
        if not 0 <= m.rate_per_s < math.inf:
            raise CatalogError(f"{where}.modes.{m.name}: the rate must be finite and not "
                               "negative")
    return FailureProfile(
        name=str(data.get("name", where)), modes=modes,
        description=str(data.get("description", "")), source=str(data.get("source", "")),
        observed=observed, published=_mapping(data, "published", where),
        recovery=_mapping(data, "recovery", where),
        checkpoint=_mapping(data, "checkpoint", where))


def _is_file_or_dir(path: Path) -> bool:
    """Whether ``path`` names something on disk; a name no file system takes (over its length
    limit: "File name too long", fuzz34) names nothing, and is then looked up as a catalog
    name."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def profile_names() -> list[str]:
    """Names of the failure profiles in the package catalog."""
    return sorted(p.stem for p in _CATALOG.glob("*.yaml"))


@functools.cache
def load_profile(name_or_path: str) -> FailureProfile:
    """A failure profile by catalog name (``llama3-405b-16k-h100``) or by YAML file path."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml") or not _is_file_or_dir(path):
        key = name_or_path.strip().lower()
        names = profile_names()
        if key not in names and _is_file_or_dir(path) and path.is_dir():  # (fuzz17b)
            raise CatalogError(f"failure profile '{name_or_path}' is a directory; give a "
                               "catalog name or a YAML file")
        if key not in names:
            shown = name_or_path if len(name_or_path) <= 80 else \
                f"{name_or_path[:60]}... ({len(name_or_path):,} characters)"
            raise CatalogError(f"unknown failure profile {shown!r}"
                               f"{suggest(key, names)}; "
                               f"known: {', '.join(names)} (or a path to a YAML file)")
        path = _CATALOG / f"{key}.yaml"
    elif path.is_dir():
        raise CatalogError(f"failure profile '{name_or_path}' is a directory; give a catalog "
                           "name or a YAML file")
    try:
        data = load_file(path, "failure profile")  # bounded, plain-data YAML
    except ConfigError as exc:
        raise CatalogError(str(exc)) from None
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: a failure profile is a mapping of fields")
    return profile_from_dict(data, where=f"failures[{path.stem}]")


# ---------------------------------------------------------------------------- settings

@dataclass(frozen=True)
class RecoveryConfig:
    """What happens between an interruption and the next productive step."""

    heartbeat_timeout_s: float = 60.0
    """A crashed job is noticed after this long. MegaScale's driver detects failures by missing
    heartbeats of its executors (arXiv:2402.15627, Sec. 4); the period is an assumption here."""
    hang_timeout_s: float = 600.0
    """A hung collective is noticed after this long: PyTorch's default ProcessGroupNCCL
    timeout (10 minutes); ByteRobust (arXiv:2509.16293) reports the same ~10 min default."""
    diagnosis_s: float = 180.0
    """Self-check diagnostics (MegaScale Sec. 4.3: loopback, RNIC-to-RNIC and NCCL tests) to
    find the faulty server after an unplanned interruption. A few minutes: assumption."""
    spare_pool: bool = True
    """Swap a failed server for a hot spare; without one, wait for the repair."""
    replacement_s: float = 300.0
    """Evict the failed server and bring a spare into the job (assumption)."""
    repair_s: float = 4 * 3600.0
    """Repair or replace a failed server when there is no spare pool (assumption)."""
    restart_s: float = 120.0
    """Relaunch the processes: container start, imports, model build, data loader state
    (assumption). Communicator initialization and checkpoint restore are counted apart."""
    fast_init: bool = True
    """MegaScale's initialization optimizations (Redis instead of TCPStore, fewer global
    barriers): 2,048 GPUs initialize in under 5 s instead of 1,047 s (Sec. 3.5)."""
    init_s_per_gpu: float = 5.0 / 2048
    """Communicator/process-group setup per GPU with fast_init: 5 s / 2,048 GPUs (MegaScale),
    linear in the GPU count; at 12,288 GPUs this gives 30 s, MegaScale's figure for >10k GPUs."""
    init_s_per_gpu_slow: float = 1047.0 / 2048
    """The same without the optimizations: 1,047 s / 2,048 GPUs (MegaScale), taken linear."""

    def __post_init__(self) -> None:
        w = "reliability.recovery"
        require_positive(w, restart_s=self.restart_s, init_s_per_gpu=self.init_s_per_gpu,
                         init_s_per_gpu_slow=self.init_s_per_gpu_slow)
        for name in ("heartbeat_timeout_s", "hang_timeout_s", "diagnosis_s", "replacement_s",
                     "repair_s"):
            if not getattr(self, name) >= 0:
                raise ConfigError(f"{w}.{name}={getattr(self, name)} must not be negative")

    def init_s(self, num_gpus: int) -> float:
        return num_gpus * (self.init_s_per_gpu if self.fast_init else self.init_s_per_gpu_slow)


@dataclass(frozen=True)
class CheckpointConfig:
    """How often and how the training state is saved, and how it is restored."""

    interval_s: float | None = None
    """Training time between checkpoints; None = Daly's optimum for this run."""
    mode: Literal["async", "blocking"] = "async"
    """async: training waits only for the copy to host memory, the upload to remote storage
    runs in the background (MegaScale's two stages, Sec. 4.4); blocking: it waits for both."""
    weight_bytes_per_param: float = 2.0
    """bf16 model weights."""
    optimizer_bytes_per_param: float = 12.0
    """fp32 master weights + Adam first and second moments (4 + 4 + 4). Gradients are not
    saved, so a mixed-precision Adam checkpoint is 14 bytes per parameter."""
    host_copy_bw_Bps: float = 25e9
    """GPU-to-host copy per GPU. About 40% of PCIe Gen5 x16's 64 GB/s: eight GPUs copy at once
    through the host's memory (assumption)."""
    storage_write_bw_Bps: float = 2e12
    """Remote storage write bandwidth of the whole cluster: Meta's Tectonic, 2 TB/s sustained
    (Llama 3 paper, arXiv:2407.21783, Sec. 3.3.1)."""
    storage_read_bw_Bps: float = 2e12
    """Remote storage read bandwidth of the whole cluster (the same Tectonic figure)."""
    node_storage_bw_Bps: float = 50e9
    """One server's link to storage: two 200 Gb/s front-end ports, as on a DGX H100."""
    restore: Literal["broadcast", "all_read"] = "broadcast"
    """broadcast: one data-parallel replica reads, then sends to the others over the training
    network (MegaScale Sec. 4.4); all_read: every rank reads its own state from storage."""

    def __post_init__(self) -> None:
        require_positive("reliability.checkpoint", interval_s=self.interval_s,
                         weight_bytes_per_param=self.weight_bytes_per_param,
                         host_copy_bw_Bps=self.host_copy_bw_Bps,
                         storage_write_bw_Bps=self.storage_write_bw_Bps,
                         storage_read_bw_Bps=self.storage_read_bw_Bps,
                         node_storage_bw_Bps=self.node_storage_bw_Bps)
        require_rate("reliability.checkpoint", host_copy_bw_Bps=self.host_copy_bw_Bps,
                     storage_write_bw_Bps=self.storage_write_bw_Bps,
                     storage_read_bw_Bps=self.storage_read_bw_Bps,
                     node_storage_bw_Bps=self.node_storage_bw_Bps)
        if not self.optimizer_bytes_per_param >= 0:
            raise ConfigError("reliability.checkpoint.optimizer_bytes_per_param must not be "
                              "negative")


@dataclass(frozen=True)
class StragglerConfig:
    """Slow servers: a synchronous step waits for the slowest one.

    With each of N servers slow with probability ``node_probability`` (by ``node_slowdown``),
    a step is slower by ``node_slowdown * (1 - (1 - p)^N)`` in expectation, plus ``slowdown``
    for the whole job. MegaScale (Sec. 5) reports stragglers as a persistent MFU loss.
    """

    slowdown: float = 0.0
    """Fractional slowdown of every step of the job (0.05 = steps take 5% longer)."""
    node_probability: float = 0.0
    """Chance that a given server is slow at any time."""
    node_slowdown: float = 0.0
    """How much slower a step is when at least one server is slow."""

    def __post_init__(self) -> None:
        w = "reliability.straggler"
        if not self.slowdown >= 0 or not self.node_slowdown >= 0:
            raise ConfigError(f"{w}.slowdown and {w}.node_slowdown must not be negative")
        if not 0 <= self.node_probability <= 1:
            raise ConfigError(f"{w}.node_probability={self.node_probability} must be in [0, 1]")

    def factor(self, num_nodes: int) -> float:
        """Expected step time over the straggler-free step time."""
        p_any = 1.0 - (1.0 - self.node_probability) ** num_nodes
        return (1.0 + self.slowdown) * (1.0 + self.node_slowdown * p_any)


@dataclass(frozen=True)
class ReliabilityConfig:
    failures: str = "llama3-405b-16k-h100"
    """Failure profile: a catalog name (catalog/failures/) or a path to a YAML file."""
    rate_scale: float = 1.0
    """Multiply every failure rate (what-if: a better or worse fleet)."""
    include_planned: bool = True
    """Count the profile's planned maintenance interruptions."""
    recovery: RecoveryConfig = field(default_factory=RecoveryConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    straggler: StragglerConfig = field(default_factory=StragglerConfig)

    def __post_init__(self) -> None:
        if not self.rate_scale >= 0:
            raise ConfigError(f"reliability.rate_scale={self.rate_scale} must not be negative")

    @property
    def profile(self) -> FailureProfile:
        return load_profile(self.failures)


def reliability_config_from_dict(data: dict[str, Any] | None,
                                 failures_name: str = "reliability.failures") -> ReliabilityConfig:
    """Build the settings; the profile's own recovery/checkpoint values fill what is not set.
    A profile that cannot be read is refused naming ``failures_name``, where the name came
    from (``--failures`` on the command line)."""
    data = dict(section_of(data, "reliability"))
    name = data.get("failures", ReliabilityConfig.failures)
    if not isinstance(name, str):  # str() of a mapping was looked up as a file name (fuzz34)
        raise ConfigError(f"{failures_name} must be a failure profile's catalog name (one of "
                          f"{', '.join(profile_names())}) or a YAML file's path, got "
                          + ("a mapping" if isinstance(name, dict) else "a list"
                             if isinstance(name, list) else "nothing" if name is None
                             else f"the {type_name(name)} {name!r}"))
    try:
        profile = load_profile(name)
    except CatalogError as exc:
        raise CatalogError(f"{failures_name}: {exc}") from None
    for section in ("recovery", "checkpoint"):
        user = section_of(data.get(section), f"reliability.{section}")
        data[section] = {**getattr(profile, section), **user}
    if "straggler" in data:  # null or blank: the defaults, as the section left out
        data["straggler"] = section_of(data["straggler"], "reliability.straggler")
    return build(ReliabilityConfig, data, "reliability")
