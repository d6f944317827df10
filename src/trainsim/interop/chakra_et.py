"""Chakra's execution-trace messages in the protobuf wire format: ``Node``, ``AttributeProto``,
``IOInfo`` and ``GlobalMetadata`` with the field numbers of the public schema
(``mlcommons/chakra``, ``schema/protobuf/et_def.proto``), and ``.et`` files as a stream of
length-prefixed messages (metadata first), as Chakra's ``protolib`` writes them and the
ASTRA-sim feeder reads them. No Chakra code or generated bindings are used.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainsim.errors import TrainsimError
from trainsim.interop import wire

SCHEMA_VERSION = "0.0.4"

# enum NodeType / CollectiveCommType (et_def.proto)
INVALID_NODE, COMP_NODE, COMM_SEND_NODE, COMM_RECV_NODE, COMM_COLL_NODE = 0, 4, 5, 6, 7
NODE_TYPES = {0: "INVALID_NODE", 1: "METADATA_NODE", 2: "MEM_LOAD_NODE", 3: "MEM_STORE_NODE",
              4: "COMP_NODE", 5: "COMM_SEND_NODE", 6: "COMM_RECV_NODE", 7: "COMM_COLL_NODE",
              8: "STORAGE_NODE", 9: "BATCH_NODE", 10: "CHECKPOINT_NODE"}
"""Every value of the schema's ``enum NodeType`` (mlcommons/chakra@6dc63e14
``schema/protobuf/et_def.proto``); a trace's node of another type, or of ``INVALID_NODE`` (the
enum's zero, which a node without a ``type`` field also decodes to), is refused on reading
(``chakra.tasks_from_chakra``)."""
COMM_TYPES = {"all_reduce": 0, "reduce": 1, "all_gather": 2, "gather": 3, "scatter": 4,
              "broadcast": 5, "all_to_all": 6, "reduce_scatter": 7}
COMM_NAMES = {v: k for k, v in COMM_TYPES.items()}

# message Node
N_ID, N_NAME, N_TYPE, N_CTRL, N_DATA, N_START, N_DUR, N_IN, N_OUT, N_ATTR = range(1, 11)
# message AttributeProto: name = 1 and the oneof value fields used here
A_NAME, A_DOUBLE, A_INT32, A_INT64 = 1, 3, 7, 9
A_UINT32, A_UINT64, A_BOOL, A_STRING = 11, 13, 27, 29
A_SINT64, A_FLOAT, A_FIXED64 = 17, 5, 21
# message GlobalMetadata / IOInfo
G_VERSION, G_ATTR = 1, 2
IO_VALUES, IO_SHAPES, IO_TYPES = 1, 2, 3

INT_KINDS = {"int64": A_INT64, "uint64": A_UINT64, "int32": A_INT32, "uint32": A_UINT32,
             "bool": A_BOOL}


@dataclass
class ETNode:
    """One Chakra ``Node``; ``attrs`` maps a name to (value type, value)."""

    id: int
    name: str
    type: int
    ctrl_deps: list[int] = field(default_factory=list)
    data_deps: list[int] = field(default_factory=list)
    duration_micros: int = 0
    start_time_micros: int = 0
    attrs: dict[str, tuple[str, Any]] = field(default_factory=dict)
    inputs: tuple[str, str, str] | None = None
    outputs: tuple[str, str, str] | None = None

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs[name][1] if name in self.attrs else default


# ------------------------------------------------------------------------------ wire format

def _encode_attr(name: str, kind: str, value: Any) -> bytes:
    out = wire.f_string(A_NAME, name)
    if kind == "double":
        return out + wire.f_double(A_DOUBLE, float(value))
    if kind == "string":
        return out + wire.f_string(A_STRING, str(value))
    return out + wire.f_varint(INT_KINDS[kind], int(value))


def _io(values: tuple[str, str, str]) -> bytes:
    return b"".join(wire.f_string(f, v)
                    for f, v in zip((IO_VALUES, IO_SHAPES, IO_TYPES), values) if v)


def encode_node(n: ETNode) -> bytes:
    parts = [wire.f_varint(N_ID, n.id), wire.f_string(N_NAME, n.name),
             wire.f_varint(N_TYPE, n.type), wire.f_packed(N_CTRL, n.ctrl_deps),
             wire.f_packed(N_DATA, n.data_deps)]
    if n.start_time_micros:
        parts.append(wire.f_varint(N_START, n.start_time_micros))
    parts.append(wire.f_varint(N_DUR, n.duration_micros))
    if n.inputs:
        parts.append(wire.f_bytes(N_IN, _io(n.inputs)))
    if n.outputs:
        parts.append(wire.f_bytes(N_OUT, _io(n.outputs)))
    parts.extend(wire.f_bytes(N_ATTR, _encode_attr(k, kind, v)) for k, (kind, v) in n.attrs.items())
    return b"".join(parts)


def encode_metadata(version: str = SCHEMA_VERSION, attrs: dict[str, tuple[str, Any]] | None = None
                    ) -> bytes:
    return wire.f_string(G_VERSION, version) + b"".join(
        wire.f_bytes(G_ATTR, _encode_attr(k, kind, v)) for k, (kind, v) in (attrs or {}).items())


def _decode_attr(data: bytes) -> tuple[str, tuple[str, Any]]:
    name, value = "", ("", None)
    for f, w, v in wire.fields(data):
        if f == A_NAME:
            name = v.decode()  # type: ignore[union-attr]
        elif f == A_DOUBLE and w == wire.I64:
            value = ("double", struct.unpack("<d", v)[0])  # type: ignore[arg-type]
        elif f == A_FLOAT and w == wire.I32:
            value = ("double", struct.unpack("<f", v)[0])  # type: ignore[arg-type]
        elif f == A_FIXED64 and w == wire.I64:
            value = ("uint64", struct.unpack("<Q", v)[0])  # type: ignore[arg-type]
        elif f == A_STRING:
            value = ("string", v.decode())  # type: ignore[union-attr]
        elif f == A_BOOL:
            value = ("bool", bool(v))
        elif f == A_SINT64:
            value = ("int64", (v >> 1) ^ -(v & 1))  # type: ignore[operator]
        elif f in (A_INT64, A_INT32):
            value = ("int64", wire.signed64(v))  # type: ignore[arg-type]
        elif f in (A_UINT64, A_UINT32):
            value = ("uint64", v)
    return name, value


def _decode_io(data: bytes) -> tuple[str, str, str]:
    got = {f: v.decode() for f, _, v in wire.fields(data)}  # type: ignore[union-attr]
    return got.get(IO_VALUES, ""), got.get(IO_SHAPES, ""), got.get(IO_TYPES, "")


def decode_node(data: bytes) -> ETNode:
    n = ETNode(id=0, name="", type=0)
    for f, w, v in wire.fields(data):
        if f == N_ID:
            n.id = v  # type: ignore[assignment]
        elif f == N_NAME:
            n.name = v.decode()  # type: ignore[union-attr]
        elif f == N_TYPE:
            n.type = v  # type: ignore[assignment]
        elif f in (N_CTRL, N_DATA):
            deps = n.ctrl_deps if f == N_CTRL else n.data_deps
            deps.extend(wire.unpack_varints(v) if w == wire.LEN else [v])  # type: ignore[arg-type]
        elif f == N_START:
            n.start_time_micros = v  # type: ignore[assignment]
        elif f == N_DUR:
            n.duration_micros = v  # type: ignore[assignment]
        elif f == N_IN:
            n.inputs = _decode_io(v)  # type: ignore[arg-type]
        elif f == N_OUT:
            n.outputs = _decode_io(v)  # type: ignore[arg-type]
        elif f == N_ATTR:
            k, val = _decode_attr(v)  # type: ignore[arg-type]
            n.attrs[k] = val
    return n


def write_et(path: str | Path, nodes: list[ETNode],
             metadata: dict[str, tuple[str, Any]] | None = None) -> None:
    Path(path).write_bytes(wire.write_delimited([encode_metadata(attrs=metadata)]
                                                + [encode_node(n) for n in nodes]))


def read_et(path: str | Path) -> tuple[dict[str, Any], list[ETNode]]:
    """(metadata, nodes) of one ``.et`` file; a file that does not decode as Chakra's
    length-prefixed messages is refused naming it (robust51: a truncated or damaged file
    raised the wire reader's ValueError, or a field of another wire type an AttributeError)."""
    try:
        messages = list(wire.read_delimited(Path(path).read_bytes()))
        if not messages:
            raise TrainsimError(f"{path}: empty Chakra trace")
        meta: dict[str, Any] = {}
        for f, _, v in wire.fields(messages[0]):
            if f == G_VERSION:
                meta["version"] = v.decode()  # type: ignore[union-attr]
            elif f == G_ATTR:
                k, (_, val) = _decode_attr(v)  # type: ignore[arg-type]
                meta[k] = val
        return meta, [decode_node(m) for m in messages[1:]]
    except (ValueError, IndexError, TypeError, AttributeError, struct.error) as exc:
        raise TrainsimError(f"{path}: not a Chakra execution trace ({exc})") from None
