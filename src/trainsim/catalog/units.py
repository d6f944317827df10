"""Catalog units -> SI: the GPU and cluster fields a user writes (TFLOP/s, GiB, GB/s, Gbit/s) and
the checks of the numbers read on the way (split out of ``catalog/__init__.py``)."""

from __future__ import annotations

import math
import re
import warnings
from typing import Any

from trainsim.config import GPUSpec
from trainsim.config._build import (
    MIN_RATE,
    DeprecatedName,
    ascii_float,
    build,
    value_kind,
)
from trainsim.errors import ConfigError

GiB = 2**30


GPU_UNITS = {"hbm_gib": ("hbm_bytes", GiB), "hbm_gbyte_s": ("hbm_bw_Bps", 1e9),
             "nvlink_gbyte_s": ("nvlink_bw_Bps", 1e9), "l2_mib": ("l2_bytes", 2**20),
             "host_link_gbyte_s": ("host_link_bw_Bps", 1e9)}
"""Catalog unit (as a user writes it) -> SI field of GPUSpec and its scale."""
CLUSTER_UNITS = {"nic_gbit_s_per_gpu": ("nic_bw_Bps", 1e9 / 8),
                 "nvlink_gbyte_s": ("intra_node_bw_Bps", 1e9)}
"""The same for ClusterConfig. Every bandwidth a user writes names its unit: ``_gbyte_s`` is
GB/s (10^9 bytes per second), ``_gbit_s`` Gbit/s (10^9 bits per second, as NICs are sold)."""
RENAMED = {"hbm_bw_gbps": "hbm_gbyte_s", "nvlink_gbps": "nvlink_gbyte_s",
           "nic_gbps_per_gpu": "nic_gbit_s_per_gpu"}
"""Deprecated bandwidth names (whose ``gbps`` meant GB/s for some, Gbit/s for others) -> the
name that says its unit; the value keeps its meaning."""


def _renamed(d: dict[str, Any], where: str, rename: bool = False) -> dict[str, Any]:
    """Warn (once per name and process) of each deprecated bandwidth name in ``d``; both names
    of one field is an error. Errors about the value still name the field as written, so the
    old name stays (a unit table below reads either) unless ``rename``."""
    out = dict(d)
    for old, new in RENAMED.items():
        if old in out:
            if new in out:
                raise ConfigError(f"{where}.{old} and {where}.{new} are the same field; give "
                                  f"{new} only")
            unit = "Gbit/s" if "_gbit_s" in new else "GB/s"
            warnings.warn(f"{where}.{old} is deprecated; write {where}.{new} (the same number, "
                          f"{unit})", DeprecatedName, stacklevel=2)
            if rename:
                out[new] = out.pop(old)
    return out


def _gpu_si(d: Any, where: str = "gpu") -> dict[str, Any]:
    """Convert catalog units (TFLOP/s, GiB, GB/s, MiB) to SI keys; SI keys pass through.
    Values in catalog units are checked here, so errors name the field the user wrote."""
    if not isinstance(d, dict):
        raise ConfigError(f"{where} must be a mapping of GPU fields (peak_tflops, hbm_gib, ...), "
                          f"got {_kind(d)}")
    out = _renamed(d, where)
    if "peak_tflops" in out:
        peaks = out.pop("peak_tflops")
        if not isinstance(peaks, dict):
            raise ConfigError(f"{where}.peak_tflops must be a mapping of dtype to TFLOP/s "
                              f"(e.g. {{bf16: 989.4, fp8: 1978.9}}), got {_kind(peaks)}")
        out["peak_flops"] = {str(k): _scaled(v, f"{where}.peak_tflops.{k}", 1e12)
                             for k, v in peaks.items()}
    for key, (si, scale) in GPU_UNITS.items():
        key = next((old for old, now in RENAMED.items() if now == key and old in out), key)
        if key in out:
            out[si] = _scaled(out.pop(key), f"{where}.{key}", scale, positive=key != "l2_mib")
    return out


SI_AS_WRITTEN = {"peak_flops": "peak_tflops", **{si: unit for unit, (si, _) in GPU_UNITS.items()}}
"""GPUSpec's SI field -> the catalog-unit name a user writes (errors name the latter)."""


def gpu_from_dict(d: dict[str, Any], where: str = "gpu") -> GPUSpec:
    """A GPU spec from catalog units (TFLOP/s, GiB, GB/s) or SI keys."""
    si = _gpu_si(d, where)
    try:
        return build(GPUSpec, si, where)
    except ConfigError as exc:  # GPUSpec names itself gpu[name]; say where the user wrote it
        text = str(exc).replace(f"gpu[{si.get('name')}]", where)
        if "missing required field" in text:  # in the units a user writes: hbm_gib, not bytes
            for field_si, unit in SI_AS_WRITTEN.items():
                text = re.sub(rf"\b{field_si}\b", unit, text)
        raise ConfigError(text) from None


_kind = value_kind  # the one wording, in config._build


def _number(value: Any, where: str) -> float:
    """A finite number from a config field that a unit conversion reads."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(f"{where} must be a number, got {_kind(value)}")
    try:
        f = ascii_float(value)  # ASCII digits only, as every other config number
    except (ValueError, OverflowError):
        raise ConfigError(f"{where} must be a number, got {_kind(value)}") from None
    if not math.isfinite(f):
        raise ConfigError(f"{where} must be a finite number, got {value!r}")
    return f


def _positive(value: Any, where: str) -> float:
    f = _number(value, where)
    if not f > 0:
        raise ConfigError(f"{where}={value!r} must be positive")
    return f


SIZES_WRITTEN = ("hbm_gib", "l2_mib")
"""Fields in catalog units that are sizes, not rates (``_scaled``)."""


def _scaled(value: Any, where: str, scale: float, positive: bool = True) -> float:
    """A field in catalog units (GB/s, GiB, TFLOP/s) in SI units, checked as written: 1e300
    GB/s overflows to inf bytes/s, which an error would otherwise name by its SI field."""
    f = (_positive(value, where) if positive else _number(value, where)) * scale
    if not math.isfinite(f):
        raise ConfigError(f"{where}={value!r} is out of range")
    if 0 < f < MIN_RATE and where.rsplit(".", 1)[-1] not in SIZES_WRITTEN:
        # the rate's own check would name its SI field (cluster.intra_node_bw_Bps=0.001), one
        # the user never wrote, in another unit (robust56)
        unit = "FLOP/s" if "tflops" in where else "B/s"
        raise ConfigError(f"{where}={value!r} is {f:.3g} {unit}, below {MIN_RATE:g} {unit} (no "
                          "hardware is that slow)")
    return f

