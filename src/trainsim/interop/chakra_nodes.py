"""A stage's template nodes made one rank's Chakra nodes (``chakra._Builder`` builds the
templates): whole-microsecond durations, groups, peers and attributes (moved out of
``chakra.py`` in export61, unchanged)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from trainsim.interop.chakra_et import COMM_COLL_NODE, COMM_SEND_NODE, COMM_TYPES, COMP_NODE, ETNode
from trainsim.interop.chakra_groups import Layout


def _micros(protos: list[Any]) -> list[int]:
    """Whole-microsecond durations whose running sum on each stream stays within half a
    microsecond of the exact one (rounding error carried forward, not accumulated)."""
    exact: dict[str, float] = defaultdict(float)
    rounded: dict[str, int] = defaultdict(int)
    out = []
    for p in protos:
        exact[p.stream] += p.duration_s * 1e6
        us = max(0, round(exact[p.stream]) - rounded[p.stream])
        rounded[p.stream] += us
        out.append(us)
    return out


def _materialize(protos: list[Any], rank: int, layout: Layout,
                 micros: list[int]) -> list[ETNode]:
    stage = layout.stage(rank)
    out = []
    for p, us in zip(protos, micros):
        attrs: dict[str, tuple[str, Any]] = {
            "is_cpu_op": ("bool", False),
            "trainsim.duration_s": ("double", p.duration_s),
            "trainsim.stream": ("string", p.stream),
        }
        type_ = p.type
        if type_ == COMP_NODE:
            attrs["num_ops"] = ("uint64", round(p.flops))
            attrs["tensor_size"] = ("uint64", round(p.bytes))
        elif type_ == COMM_COLL_NODE:
            comm = p.comm
            size = round(comm.bytes) if comm is not None else 0
            if comm is None or comm.kind not in COMM_TYPES:
                type_ = COMP_NODE  # nothing ASTRA-sim could replay as a collective
                attrs.update(num_ops=("uint64", 0), tensor_size=("uint64", size))
            else:
                gid, n = layout.group_id(comm.group, rank)
                if n <= 1:  # a one-rank group moves nothing: keep its (zero) time as compute
                    type_ = COMP_NODE
                    attrs.update(num_ops=("uint64", 0), tensor_size=("uint64", 0))
                else:
                    attrs.update(comm_type=("int64", COMM_TYPES[comm.kind]),
                                 comm_size=("int64", size), pg_name=("string", str(gid)))
                    if p.exposed_only:
                        attrs["trainsim.exposed_only"] = ("bool", True)
        else:  # send / recv
            peer = rank + (p.peer_stage - stage) * layout.stage_size
            if p.ring:  # to the next rank of the ring, from the one before
                ring = layout._ranks(p.ring, rank)
                at = ring.index(rank) + (1 if type_ == COMM_SEND_NODE else -1)
                peer = ring[at % len(ring)]
            size = round(p.comm.bytes) if p.comm is not None else 0
            src, dst = (rank, peer) if type_ == COMM_SEND_NODE else (peer, rank)
            attrs.update(comm_src=("int64", src), comm_dst=("int64", dst),
                         comm_tag=("int64", p.tag % 2**31), comm_size=("int64", size))
        out.append(ETNode(id=p.id, name=p.name, type=type_, ctrl_deps=p.ctrl, data_deps=p.data,
                          duration_micros=us, attrs=attrs))
    return out
