"""The NCCL release a run's stack loaded (``ClusterConfig.nccl_version``), read as text: what
sets the size of NCCL's own device buffers (``memory.nccl_buffers``)."""

from __future__ import annotations

import re

from trainsim.errors import ConfigError

# ASCII digits only: NCCL names its releases so (robust59: '\uff12.19' read as 2.19)
_RELEASE = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:-\d+)?(?:\+\S+)?", re.ASCII)


def nccl_release(text: object, where: str = "cluster.nccl_version") -> tuple[int, int, int]:
    """(major, minor, patch) of an NCCL release written as NCCL names it: ``2.19.4``,
    ``2.19.4-1`` (its git tag, with or without a leading ``v``), ``2.19.4+cuda12.3`` (as its
    startup line prints it) or ``2.19`` (patch 0). Anything else is a one-line ConfigError."""
    got = _RELEASE.fullmatch(str(text).strip())
    if got is None:
        raise ConfigError(f"{where}={text!r} is not an NCCL release; write it as NCCL names it, "
                          "e.g. 2.19.4 (or 2.19)")
    major, minor, patch = (int(g or 0) for g in got.groups())
    if major != 2:
        raise ConfigError(f"{where}={text!r}: NCCL releases are 2.x (2.4 to 2.30 in 2019-2026)")
    return major, minor, patch
