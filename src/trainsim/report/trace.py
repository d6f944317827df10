"""Chrome trace-event JSON of a simulated timeline (opens in ui.perfetto.dev / chrome://tracing).

One process per simulated pipeline stage, one thread (track) per stream; communication that
blocks the compute stream (TP/CP collectives, pipeline sends) also appears on its own track
at the time it happens inside the pass.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainsim.config.safe_load import write_output
from trainsim.engine import Timeline

MAX_DETAIL_EVENTS = 200_000
_COMM_TRACKS = {"tp_comm": "tp", "cp_comm": "cp", "pp_comm": "pp", "dp_comm": "dp"}


def chrome_trace(tl: Timeline, title: str = "trainsim",
                 info: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The trace events of ``tl``; ``info`` (e.g. ``Result.simulation``: how the iteration was
    simulated, and where it is one of several schedule steps, which) goes to ``otherData``."""
    events: list[dict[str, Any]] = []
    tracks: dict[tuple[int, str], int] = {}

    def tid(rank: int, stream: str) -> int:
        key = (rank, stream)
        if key not in tracks:
            tracks[key] = len(tracks) + 1
            events.append({"ph": "M", "name": "thread_name", "pid": rank, "tid": tracks[key],
                           "args": {"name": stream}})
        return tracks[key]

    ranks = sorted({t.stream[0] for t in tl.tasks})
    for r in ranks:
        events.append({"ph": "M", "name": "process_name", "pid": r,
                       "args": {"name": f"pipeline stage {r}"}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": r, "args": {"sort_index": r}})
        tid(r, "compute")
    n_detail = sum(1 for t in tl.tasks for seg in getattr(t.detail, "segments", ())
                   if seg[0] in _COMM_TRACKS)
    detailed = n_detail <= MAX_DETAIL_EVENTS
    for i, t in enumerate(tl.tasks):
        rank, stream = t.stream
        start_us = tl.start_s[i] * 1e6
        events.append({"ph": "X", "name": t.label, "pid": rank, "tid": tid(rank, stream),
                       "ts": start_us, "dur": t.duration_s * 1e6, "cat": stream,
                       "args": {k: v for k, v in t.segments}})
        if not detailed or t.detail is None:
            continue
        offset = start_us
        for cat, dur, name in t.detail.segments:  # type: ignore[attr-defined]
            track = _COMM_TRACKS.get(cat)
            if track is not None and dur > 0 and track != stream:
                events.append({"ph": "X", "name": name, "pid": rank, "tid": tid(rank, track),
                               "ts": offset, "dur": dur * 1e6, "cat": cat})
            offset += dur * 1e6
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"generator": title, **(info or {})}}


def write_chrome_trace(tl: Timeline, path: str | Path, title: str = "trainsim",
                       info: Mapping[str, Any] | None = None) -> None:
    write_output(path, json.dumps(chrome_trace(tl, title, info)))
