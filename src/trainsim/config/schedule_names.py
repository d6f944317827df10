"""Pipeline schedules' names: trainsim's, and the spellings Megatron, the zero-bubble paper and
torchtitan (torch.distributed.pipelining) give them. Split from ``config.parallel``, which
re-exports every name here."""

from __future__ import annotations

import difflib
import unicodedata

from trainsim.config._build import suggest
from trainsim.errors import ConfigError

PIPELINE_SCHEDULES = ("gpipe", "1f1b", "interleaved_1f1b", "zb_h1", "zb_h2", "zb_2p", "zb_v",
                      "interleaved_zb", "dualpipe", "dualpipe_v", "looped_bfs")
SCHEDULE_NAMES = {
    **{name.replace("_", ""): name for name in PIPELINE_SCHEDULES},
    "zb1p": "zb_h1",  # Qi et al. Table 5: the search at a pM_B limit finds ZB-H1's schedule
    # torchtitan / torch.distributed.pipelining class names
    "schedulegpipe": "gpipe", "schedule1f1b": "1f1b", "scheduleinterleaved1f1b": "interleaved_1f1b",
    "zbvzerobubble": "zb_v", "schedulezbvzerobubble": "zb_v",
    "interleavedzerobubble": "interleaved_zb", "scheduleinterleavedzerobubble": "interleaved_zb",
    "scheduledualpipev": "dualpipe_v", "scheduleloopedbfs": "looped_bfs",
}
"""Accepted spellings (case, '-' and '_' ignored) -> the schedule's name in trainsim."""
V_SCHEDULES = ("zb_v", "dualpipe_v")
"""Schedules that place 2 model chunks per rank as a V (rank r: virtual stages r, 2pp-1-r)."""
ANY_CHUNKS = ("looped_bfs",)
"""Schedules that run any number of model chunks per rank, one included (torch's
``ScheduleLoopedBFS`` takes the stages it is given: rank r holds stages r, r + pp, ...)."""


def schedule_name(text: str) -> str:
    """The schedule ``text`` names: compatibility forms folded first (NFKC: a full-width
    ``ＺＢ_Ｈ1`` is ``ZB_H1``), then case, '-' and '_' ignored (``SCHEDULE_NAMES``); an unknown
    name is refused with the nearest schedule, compared in that folded form (``ZB-H3``)."""
    folded = unicodedata.normalize("NFKC", text).strip()
    key = folded.lower().replace("-", "").replace("_", "")
    if key not in SCHEDULE_NAMES:
        near = suggest(folded.lower().replace("-", "_"), PIPELINE_SCHEDULES)
        if not near:
            alias = difflib.get_close_matches(key, list(SCHEDULE_NAMES), n=1, cutoff=0.6)
            near = f" (did you mean '{SCHEDULE_NAMES[alias[0]]}'?)" if alias else ""
        raise ConfigError(f"parallel.pipeline_schedule={text!r} is unknown"
                          f"{near}; known: "
                          f"{', '.join(PIPELINE_SCHEDULES)} (and torchtitan's GPipe, 1F1B, "
                          "Interleaved1F1B, ZBVZeroBubble, InterleavedZeroBubble, DualPipeV, LoopedBFS)")
    return SCHEDULE_NAMES[key]
