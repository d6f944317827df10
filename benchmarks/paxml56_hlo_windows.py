"""What XLA's latency-hiding scheduler put between each async collective's start and done in a
compiled step, and what its approximate latency estimator charges for it: reads the optimized
module of an nsys-jax archive (``dump/*wrapped_step_fn*after_optimizations.hlo.pb.xz``, an
``xla.HloProto``) with a small protobuf wire-format reader (no protobuf package needed) and
prints, for every all-gather / reduce-scatter / all-reduce start in each scheduled computation
(the entry and any while loop's body: a scanned layer stack's), the instructions up to its done
and their summed estimator cost. A check, not an input.

    python benchmarks/paxml56_hlo_windows.py DIR   # DIR: an unzipped nsys-jax archive

The costs are those of openxla/xla ``GpuLatencyEstimator::NodeCost`` (gpu_hlo_schedule.cc: a
custom call 1000; otherwise ``ApproximateLatencyEstimator::NodeCost``: a loop fusion 1000, an
output fusion or a convolution 5000, a no-op 0, anything else 1) against an async pair's
``kHighLatency`` 5000: without a profile-guided estimate the scheduler aims for about 5000 of
them between a start and its done ("approximately 5 of these"). The archive read for
RESULTS.md (56th session, paxml56): NVIDIA/JAX-Toolbox .github/workflows/nsys-jax/test_data/
pax_fsdp4_4proc_proc0.zip (2f1f572a).
"""

from __future__ import annotations

import lzma
import sys
from collections.abc import Iterator
from pathlib import Path

NOP = {"get-tuple-element", "bitcast", "constant", "parameter", "tuple"}
COLLECTIVE_STARTS = ("all-gather-start", "all-reduce-start", "reduce-scatter-start")
HIGH_LATENCY = 5000


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def fields(buf: bytes) -> Iterator[tuple[int, int, object]]:
    """(field number, wire type, value) of each field of a protobuf message: an int for
    varints and fixed-width fields, the bytes of a length-delimited one."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 1:
            value, i = int.from_bytes(buf[i:i + 8], "little"), i + 8
        elif wire == 2:
            n, i = _varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            value, i = int.from_bytes(buf[i:i + 4], "little"), i + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield number, wire, value


def _ints(wire: int, value) -> list[int]:
    """A repeated int64 field's values (packed or one a field)."""
    if wire == 0:
        return [value]
    out, i = [], 0
    while i < len(value):
        v, i = _varint(value, i)
        out.append(v)
    return out


def _instruction(buf: bytes) -> dict:
    ins = {"name": "", "opcode": "", "fusion_kind": "", "id": None, "operands": []}
    for number, wire, value in fields(buf):
        if number == 1:
            ins["name"] = value.decode()
        elif number == 2:
            ins["opcode"] = value.decode()
        elif number == 11:
            ins["fusion_kind"] = value.decode()
        elif number == 35:
            ins["id"] = value
        elif number == 36:
            ins["operands"] += _ints(wire, value)
    return ins


def schedules(hlo_proto: bytes) -> tuple[str, dict[str, list[dict]]]:
    """The entry computation's name and, for every computation the module's schedule orders
    (the entry and each while body or condition, not the fusions), its instructions in that
    order."""
    module = next(v for n, _, v in fields(hlo_proto) if n == 1)
    comps, names, entry_id, sequences = {}, {}, None, {}
    for number, _, value in fields(module):
        if number == 3:
            cid, name, instructions = None, "", []
            for n, _, v in fields(value):
                if n == 1:
                    name = v.decode()
                elif n == 2:
                    instructions.append(_instruction(v))
                elif n == 5:
                    cid = v
            comps[cid], names[cid] = instructions, name
        elif number == 6:
            entry_id = value
        elif number == 7:
            for n, _, entry in fields(value):
                if n != 1:
                    continue
                key, ids = None, []
                for fn, _, fv in fields(entry):
                    if fn == 1:
                        key = fv
                    elif fn == 2:
                        for sn, sw, sv in fields(fv):
                            if sn == 1:
                                ids += _ints(sw, sv)
                sequences[key] = ids
    ordered = {}
    for cid, ids in (sequences or {entry_id: [i["id"] for i in comps[entry_id]]}).items():
        by_id = {ins["id"]: ins for ins in comps[cid]}
        ordered[names[cid]] = [by_id[i] for i in ids]
    return names[entry_id], ordered


def entry_schedule(hlo_proto: bytes) -> list[dict]:
    """The entry computation's instructions in the module's schedule order."""
    entry, ordered = schedules(hlo_proto)
    return ordered[entry]


def node_cost(ins: dict) -> int:
    """GpuLatencyEstimator::NodeCost without a profile."""
    op = ins["opcode"]
    if op in NOP:
        return 0
    if op == "custom-call":
        return 1000
    if op == "fusion" and ins["fusion_kind"] == "kLoop":
        return 1000
    if (op == "fusion" and ins["fusion_kind"] == "kOutput") or op == "convolution":
        return 5000
    return 1


def windows(order: list[dict]) -> list[tuple[str, int, int]]:
    """(start name, instructions before its done, their summed estimator cost) per async
    collective start of ``order``."""
    out = []
    for k, ins in enumerate(order):
        if not ins["name"].startswith(COLLECTIVE_STARTS):
            continue
        done = next((j for j in range(k + 1, len(order))
                     if ins["id"] in order[j]["operands"] and order[j]["opcode"].endswith("-done")),
                    None)
        if done is not None:
            between = order[k + 1:done]
            out.append((ins["name"], len(between), sum(node_cost(x) for x in between)))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("python benchmarks/paxml56_hlo_windows.py DIR", file=sys.stderr)
        return 2
    dumps = sorted((Path(argv[0]) / "dump").glob("*wrapped_step_fn*after_optimizations.hlo.pb.xz"))
    if not dumps:
        print(f"{argv[0]}: no dump/*wrapped_step_fn*after_optimizations.hlo.pb.xz",
              file=sys.stderr)
        return 2
    with lzma.open(dumps[-1]) as fh:
        entry, ordered = schedules(fh.read())
    found = []
    for comp, order in ordered.items():
        here = windows(order)
        if here:
            print(f"{comp}{' (entry)' if comp == entry else ''}:")
        for name, n, cost in here:
            print(f"{name:>26} {n:5d} instructions  estimator cost {cost:7d}")
        found += here
    near = sum(HIGH_LATENCY <= c < HIGH_LATENCY + 1000 for _, _, c in found)
    print(f"{len(found)} async collectives; {near} with a window of {HIGH_LATENCY}-"
          f"{HIGH_LATENCY + 999} estimator units (the latency the estimator gives them)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
