"""Protocol-buffers wire format, just enough to write and read Chakra execution traces.

Encoding (https://protobuf.dev/programming-guides/encoding/): a message is a sequence of
``key = field_number << 3 | wire_type`` varints, each followed by its value: wire type 0 a
varint (int32/int64/uint32/uint64/bool/enum; negative int64 as 10-byte two's complement),
1 eight little-endian bytes (double, fixed64), 2 a varint length and that many bytes (string,
bytes, embedded message, packed repeated scalars), 5 four bytes (float, fixed32). proto3 packs
repeated scalars by default; readers must accept both packed and unpacked forms.

Chakra files (``chakra/src/third_party/utils/protolib.py`` and the ASTRA-sim feeder's
``ProtobufUtils::readMessage``) are a stream of messages, each prefixed by its length as a
varint: first the ``GlobalMetadata``, then one ``Node`` per message.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

VARINT, I64, LEN, I32 = 0, 1, 2, 5


def varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ValueError("varint too long")


def key(field: int, wire: int) -> bytes:
    return varint(field << 3 | wire)


def f_varint(field: int, value: int) -> bytes:
    return key(field, VARINT) + varint(int(value))


def f_double(field: int, value: float) -> bytes:
    return key(field, I64) + struct.pack("<d", value)


def f_bytes(field: int, value: bytes) -> bytes:
    return key(field, LEN) + varint(len(value)) + value


def f_string(field: int, value: str) -> bytes:
    return f_bytes(field, value.encode())


def f_packed(field: int, values: list[int]) -> bytes:
    if not values:
        return b""
    return f_bytes(field, b"".join(varint(v) for v in values))


def fields(buf: bytes | memoryview) -> Iterator[tuple[int, int, object]]:
    """(field number, wire type, value): ints for varints, bytes for LEN, raw 8/4 bytes."""
    pos, end = 0, len(buf)
    while pos < end:
        k, pos = read_varint(buf, pos)
        field, wire = k >> 3, k & 7
        if wire == VARINT:
            value, pos = read_varint(buf, pos)
            yield field, wire, value
        elif wire == I64:
            yield field, wire, bytes(buf[pos:pos + 8])
            pos += 8
        elif wire == LEN:
            n, pos = read_varint(buf, pos)
            yield field, wire, bytes(buf[pos:pos + n])
            pos += n
        elif wire == I32:
            yield field, wire, bytes(buf[pos:pos + 4])
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire} (field {field})")


def unpack_varints(data: bytes) -> list[int]:
    out, pos = [], 0
    while pos < len(data):
        v, pos = read_varint(data, pos)
        out.append(v)
    return out


def signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def write_delimited(messages: list[bytes]) -> bytes:
    return b"".join(varint(len(m)) + m for m in messages)


def read_delimited(data: bytes) -> Iterator[bytes]:
    pos = 0
    view = memoryview(data)
    while pos < len(data):
        n, pos = read_varint(view, pos)
        if pos + n > len(data):
            raise ValueError("truncated message")
        yield bytes(view[pos:pos + n])
        pos += n
