"""Collective rows: nccl-tests bus bandwidth predicted by the network model."""

from __future__ import annotations

import re

from trainsim.catalog import gpu as catalog_gpu
from trainsim.collectives import BUS_FACTOR
from trainsim.config import ClusterConfig
from trainsim.config._build import switch
from trainsim.errors import ConfigError, TrainsimError
from trainsim.network import AnalyticalNetwork
from trainsim.validate.common import RowResult, _cell, count_cell, measured_cell, positive_cell

COLLECTIVE_REQUIRED = ["id", "gpu", "num_gpus", "gpus_per_node", "nic_gbps_per_gpu", "collective",
                       "message_bytes", "measured_busbw_GBps"]

COLLECTIVE_COLUMNS = frozenset([*COLLECTIVE_REQUIRED, "source", "note", "algorithm",
                                "comparable", "unit", "fabric"])
"""Every column a collective row is read from."""


def predict_collective_row(row: dict[str, str]) -> RowResult:
    res = RowResult(id=row.get("id", "?"), measured=measured_cell(row, "measured_busbw_GBps"))
    try:
        spec = catalog_gpu(row["gpu"])
        cluster = ClusterConfig(gpu=spec, num_gpus=count_cell(row, "num_gpus"),
                                gpus_per_node=count_cell(row, "gpus_per_node"),
                                nic_bw_Bps=positive_cell(row, "nic_gbps_per_gpu") * (1e9 / 8),
                                fabric=_cell(row, "fabric") or "infiniband")
        net = AnalyticalNetwork(cluster)
        kind = collective_name(row["collective"])
        algo = (_cell(row, "algorithm") or "auto").lower()
        size = count_cell(row, "message_bytes")  # whole bytes, as nccl-tests sizes
        n = cluster.num_gpus
        if n < 2:  # nccl-tests' bus bandwidth of one rank is 0 (its factor (n - 1)/n)
            raise ConfigError(f"num_gpus={n}: a collective's bus bandwidth needs at least 2 "
                              "GPUs")
        per_nic, comparable = _per_nic(row), _comparable(row)
        span = net.span(n, 1)
        cost = net.collective(kind, size, span, algo)
        t, algo_used = cost.time_s, f"{cost.algorithm}/{cost.protocol}"
        busbw = BUS_FACTOR[kind](n) * size / t
    except (TrainsimError, ValueError, KeyError) as exc:
        res.error = str(exc)
        return res
    res.chosen = {"algorithm": algo_used}
    if per_nic and span.nodes > 1:
        # The published figure is the bus bandwidth each NIC carries (how NCCL's maintainers
        # quote network expectations); a rail-optimized node gives each of its ranks one NIC.
        busbw /= span.per_node
        res.chosen["unit"] = "busbw per NIC"
    res.predicted = busbw / 1e9
    res.extra = {"time_s": t, "collective": kind}
    if not comparable:
        # the source's own evidence (the row's note) says it measures something else: a
        # launch floor, a faulty setup; priced, but kept out of the summary
        res.extra["excluded"] = "comparable = no: " + (row.get("note") or "").strip()
    return res


def collective_name(text: str) -> str:
    """A collective as nccl-tests names it (``all_reduce``), from any case and with or without
    separators (NCCL's ``ncclAllReduce`` is ``AllReduce``; ``all-gather``, ``alltoall``)."""
    squeezed = re.sub(r"[\s_\-]+", "", text.strip().lower())
    return next((k for k in BUS_FACTOR if k.replace("_", "") == squeezed), text.strip())


_PER_NIC = re.compile(r"\bper[- ]?nic\b", re.IGNORECASE)


def _per_nic(row: dict[str, str]) -> bool:
    """A row states a per-NIC figure by a ``unit`` cell of ``per_nic`` or by saying "per NIC"
    in its note (nccl-tests issue #290: "46-48 GB/s per NIC")."""
    text = _cell(row, "unit")
    unit = re.sub(r"[\s\-]+", "_", (text or "").lower())
    if unit not in ("", "per_nic"):  # any other word was read as the bus bandwidth, silently
        raise ConfigError(f"column 'unit'={text!r}: give per_nic (the bandwidth each NIC "
                          "carries) or leave it empty (the bus bandwidth per GPU)")
    return unit == "per_nic" or bool(_PER_NIC.search(row.get("note") or ""))


def _comparable(row: dict[str, str]) -> bool:
    """The row's ``comparable`` cell as a switch (empty: yes); 'false', '0' or 'off' was read
    as yes when only 'no' excluded a row."""
    text = _cell(row, "comparable")
    return True if text is None else switch(text, "column 'comparable'")


