"""Topologies from preset files, YAML specs and cluster configs: the builders of
:mod:`trainsim.network.topology` by name, catalog units converted to SI once, every argument
checked before building (robust50, edge50), and :func:`from_cluster` for a run's cluster.
Split from ``network.topology``, which still answers every name here."""

from __future__ import annotations

import inspect
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from trainsim.errors import CatalogError, ConfigError
from trainsim.network.topology import (
    Topology,
    nvl_domain,
    nvswitch_node,
    pcie_node,
    rail_fat_tree,
    spine_leaf,
    torus,
)

if TYPE_CHECKING:
    from trainsim.config import ClusterConfig

BUILDERS = {f.__name__: f for f in (nvswitch_node, pcie_node, rail_fat_tree, spine_leaf,
                                     nvl_domain, torus)}
PRESET_DIR = Path(__file__).resolve().parent.parent / "catalog" / "topologies"
_UNITS = {"_GBps": ("_bw_Bps", 1e9), "_Gbps": ("_bw_Bps", 1e9 / 8), "_us": ("_s", 1e-6)}


def topology_names() -> list[str]:
    """Preset names under ``catalog/topologies``."""
    return sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))


def _si(key: str, value: Any) -> tuple[str, Any]:
    """Catalog units to SI, once: ``x_GBps`` (GB/s) and ``x_Gbps`` (Gbit/s) -> ``x_bw_Bps``,
    ``x_us`` -> ``x_s``; lists are converted element by element. A key that already names
    the bandwidth, ``x_bw_GBps`` (as a user writes ``dim_bw_Bps`` in GB/s), is ``x_bw_Bps``
    too (edge50: it read as ``x_bw_bw_Bps`` and was refused as unknown)."""
    for suffix, (si, scale) in _UNITS.items():
        if key.endswith(suffix):
            value = [_number(key, v) * scale for v in value] if isinstance(value, (list, tuple)) \
                else _number(key, value) * scale
            stem = key[: -len(suffix)]
            key = stem.removesuffix("_bw") + si if si == "_bw_Bps" else stem + si
            break
    return key, tuple(value) if isinstance(value, list) else value


def _number(key: str, value: Any) -> float:
    """``value`` of a unit key as a float; robust50: ``nic_Gbps: x`` raised ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"topology key {key} = {value!r} is not a number (a bandwidth or "
                          "latency)")
    return float(value)


def _check_kinds(builder: str, args: dict[str, Any], written: dict[str, tuple[str, Any]]
                 ) -> None:
    """Refuse a builder argument of the wrong kind before building (robust50: ``nodes: 2.5``
    raised TypeError deep in the builder, ``nodes: true`` built one node, ``spines: 0`` or
    ``nvlink_bw_Bps: 0`` fell back to the default in silence): counts are integers >= 1,
    rates and ratios finite and positive, latencies finite and >= 0. ``written``: each SI
    key's key and value as the file (or the cluster config) wrote them (for the refusal)."""
    hints = {name: str(p.annotation) for name, p in
             inspect.signature(BUILDERS[builder]).parameters.items()}
    for name, value in args.items():
        hint = hints[name]
        items = value if hint.startswith("tuple") and isinstance(value, (list, tuple)) \
            else (value,)
        if value is None and "None" in hint:
            continue
        if hint.startswith("tuple") and not isinstance(value, (list, tuple)):
            raise ConfigError(f"topology ({builder}): {written.get(name, (name,))[0]} = "
                              f"{written.get(name, (name, value))[1]!r} must be a list, one "
                              "entry per dimension")
        key, shown = written.get(name, (name, value))
        for v in items:
            if "int" in hint:
                if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                    raise ConfigError(f"topology ({builder}): {key} = {shown!r} must be a whole "
                                      "number >= 1")
            elif "float" in hint:
                low_ok = name.endswith("latency_s")
                if isinstance(v, bool) or not isinstance(v, (int, float)) \
                        or not math.isfinite(v) or v < 0 or (v == 0 and not low_ok):
                    raise ConfigError(f"topology ({builder}): {key} = {shown!r} must be a finite "
                                      f"number {'>= 0' if low_ok else '> 0'}")
            elif hint == "str" and not isinstance(v, str):
                raise ConfigError(f"topology ({builder}): {key} = {shown!r} must be a word")


def _check_args(builder: str, args: dict[str, Any], written: dict[str, tuple[str, Any]]
                ) -> None:
    """:func:`_check_kinds`, then the fabric's size against the flow backend's limit
    (``nodes: 1000000`` built for minutes)."""
    _check_kinds(builder, args, written)
    from trainsim.limits import check, fabric_steps
    given = {n: p.default for n, p in inspect.signature(BUILDERS[builder]).parameters.items()}
    given.update(args)
    if builder in ("rail_fat_tree", "spine_leaf"):
        hosts, per_host = given["nodes"], given["gpus_per_node"]
    elif builder == "nvl_domain":
        hosts, per_host = given["domains"] * (given["gpus_per_domain"] // given["gpus_per_host"]), \
            given["gpus_per_host"]
    else:
        hosts, per_host = 1, math.prod(given.get("dims") or ()) if builder == "torus" \
            else given["gpus"]
    links = spines = 0
    if "nodes_per_leaf" in given and (builder != "nvl_domain" or given["domains"] > 1):
        width = per_host if builder != "spine_leaf" else 1
        spines = (given.get("spines") or given["nodes_per_leaf"]) \
            * (width if given.get("planes") == "isolated" else 1)
        links = width * -(-hosts // given["nodes_per_leaf"]) * spines
    gpus = hosts * per_host
    check("TRAINSIM_MAX_FLOWS", fabric_steps(gpus, links, spines),
          f"flow-steps of building topology ({builder}) of {gpus:,} GPUs"
          + (f" and {links:,} leaf-spine links to {spines:,} spines" if links else ""), "",
          "fewer nodes, GPUs or nodes_per_leaf")


def _si_once(builder: str, given: dict[str, Any]) -> dict[str, tuple[str, Any, Any]]:
    """Each key of ``given`` in SI (:func:`_si`) -> (its key and value as written, its SI value);
    a quantity written twice (``nic_GBps`` and ``nic_bw_Bps``) is refused, naming both (edge50
    lead 2: the later one was kept in silence)."""
    out: dict[str, tuple[str, Any, Any]] = {}
    for key, value in given.items():
        si, si_value = _si(key, value)
        if si in out:
            raise ConfigError(f"topology ({builder}): {out[si][0]} and {key} give the same "
                              f"quantity ({si}); keep one")
        out[si] = (key, value, si_value)
    return out


def topology_from_dict(spec: dict[str, Any], **overrides: Any) -> Topology:
    """A topology from ``{builder: name, <builder arguments in catalog or SI units>}``."""
    spec = dict(spec)
    spec.pop("source", None)
    builder = spec.pop("builder", None)
    if not isinstance(builder, str) or builder not in BUILDERS:
        raise ConfigError(f"topology builder {builder!r} unknown; known: {', '.join(BUILDERS)}")
    taken = {**_si_once(builder, spec), **_si_once(builder, overrides)}  # overrides replace
    args = {si: value for si, (_, _, value) in taken.items()}
    written = {si: (k, v) for si, (k, v, _) in taken.items() if si != k}
    known = inspect.signature(BUILDERS[builder]).parameters
    unknown = sorted(set(args) - set(known))
    if unknown:  # named as the file wrote them
        unknown = sorted(written.get(k, (k,))[0] for k in unknown)
        raise ConfigError(f"topology ({builder}): unknown keys {unknown}; known: "
                          f"{', '.join(known)} (or *_GBps, *_Gbps, *_us forms)")
    _check_args(builder, args, written)
    return BUILDERS[builder](**args)


def load_topology(name: str | Path, **overrides: Any) -> Topology:
    """A preset by name (``dgx-h100-superpod``) or a YAML file path; ``overrides`` replace
    its keys (``nodes=16``)."""
    path = Path(name)
    if not path.suffix:
        path = PRESET_DIR / f"{str(name).strip().lower()}.yaml"
        if not path.exists():
            raise CatalogError(f"unknown topology {name!r}; known: {', '.join(topology_names())}")
    try:
        spec = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"{path}: cannot read topology ({exc})") from None
    if not isinstance(spec, dict):
        raise CatalogError(f"{path}: expected a mapping")
    return topology_from_dict(spec, **overrides)


def fabric_size(cluster: ClusterConfig) -> tuple[int, int]:
    """(leaf-to-spine links, spines) :func:`from_cluster` builds for ``cluster``: ``_fabric``
    links each leaf (one per rail and group of ``nodes_per_leaf`` hosts; one per group for
    spine-leaf) to each of its ``nodes_per_leaf`` spines; a torus and a single NVL72 rack have
    none. What the flow backend's size check (``limits.check_flow_fabric``) counts besides the
    GPUs."""
    gpn = min(cluster.num_gpus, cluster.gpus_per_node)
    per_leaf, hosts, width = cluster.nodes_per_leaf, cluster.num_nodes, gpn
    if cluster.topology == "torus" or (cluster.topology == "nvl72" and hosts == 1):
        return 0, 0
    if cluster.topology == "spine-leaf":
        width = 1
    elif cluster.topology == "nvl72":  # trays of 4 GPUs are the fabric's hosts
        width = 4 if gpn % 4 == 0 else 1
        hosts, per_leaf = hosts * (gpn // width), per_leaf * (gpn // width)
    return width * -(-hosts // per_leaf) * per_leaf, per_leaf


def from_cluster(cluster: ClusterConfig, nodes_per_leaf: int | None = None,
                 nvlink_efficiency: float = 1.0, nic_efficiency: float = 1.0) -> Topology:
    """The network ``cluster.topology`` names, sized by the cluster config.

    ``rail-optimized``: :func:`rail_fat_tree`, shared spines; ``spine-leaf``:
    :func:`spine_leaf`; both with the config's leaf size and oversubscription. ``nvl72``:
    :func:`nvl_domain`, one NVLink fabric per node of ``gpus_per_node`` (72) GPUs, trays of 4
    with one NIC per GPU on rail leaves. ``torus``: :func:`torus` with the node's GPUs on one
    switch (NVLink) as dimension 0 and the nodes on rings of ``cluster.torus_shape``, GPU i of
    a node linked to GPU i of its neighbours at the NIC rate. Link capacities are the
    cluster's rates times the efficiencies (1.0: raw link rate; pass the analytical backend's
    NVLINK_EFFICIENCY / NIC_EFFICIENCY to price protocol overhead the same way)."""
    gpn = min(cluster.num_gpus, cluster.gpus_per_node)
    per_leaf = nodes_per_leaf or cluster.nodes_per_leaf
    nic = cluster.nic_bw_Bps * nic_efficiency
    nvl = cluster.nvlink_bw_Bps * nvlink_efficiency
    name = f"{cluster.node}-{cluster.topology}"
    fabric = {"nic_bw_Bps": nic, "nvlink_bw_Bps": nvl,
              "oversubscription": cluster.oversubscription}
    shared = {"gpus_per_nic": math.gcd(gpn, cluster.gpus_per_nic)} if cluster.gpus_per_nic > 1 \
        else {}
    if cluster.topology == "spine-leaf":
        builder, args = "spine_leaf", dict(nodes=cluster.num_nodes, gpus_per_node=gpn,
                                           nodes_per_leaf=per_leaf, name=name, **fabric,
                                           **shared)
    elif cluster.topology == "nvl72":
        per_tray = 4 if gpn % 4 == 0 else 1
        builder, args = "nvl_domain", dict(domains=cluster.num_nodes, gpus_per_domain=gpn,
                                           gpus_per_host=per_tray,
                                           nodes_per_leaf=per_leaf * (gpn // per_tray),
                                           name=name, **fabric)
    elif cluster.topology == "torus":
        shape = cluster.torus_shape
        builder, args = "torus", {"dims": (gpn, *shape),
                                  "dim_bw_Bps": (nvl,) + (nic,) * len(shape),
                                  "kinds": ("switch",) + ("ring",) * len(shape),
                                  "dim_latency_s": (0.5e-6,) + (0.6e-6,) * len(shape),
                                  "gpus_per_node": gpn, "name": name}
    else:
        builder, args = "rail_fat_tree", dict(nodes=cluster.num_nodes, gpus_per_node=gpn,
                                              nodes_per_leaf=per_leaf,
                                              name=f"{cluster.node}-fat-tree", **fabric,
                                              **shared)
    # the topology files' argument check (robust50), named by the cluster's fields; the size
    # is the callers' (limits.check_flow_fabric on fabric_size), as this builds what it counts
    _check_kinds(builder, args, {k: (f"cluster {w} (as {k})", args[k]) for k, w in _FIELDS.items()
                                 if k in args})
    return BUILDERS[builder](**args)


_FIELDS = {"nodes": "num_nodes", "gpus_per_node": "gpus_per_node", "domains": "num_nodes",
           "gpus_per_domain": "gpus_per_node", "nodes_per_leaf": "nodes_per_leaf",
           "nic_bw_Bps": "nic bandwidth", "nvlink_bw_Bps": "nvlink bandwidth",
           "oversubscription": "oversubscription", "dims": "torus_shape",
           "dim_bw_Bps": "nvlink / nic bandwidth"}
