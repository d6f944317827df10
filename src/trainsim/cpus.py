"""The CPUs this process may use: how many worker processes a command starts by default
(``cli validate``) and whether a search's main process has a CPU beside its local workers
(``search.core``). Imports nothing of trainsim, so every layer may ask."""

from __future__ import annotations

import math
import os
from pathlib import Path

CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
"""cgroup v2's CPU quota as this process sees it inside a container (its own cgroup, the
root of its namespace): "<quota µs> <period µs>", or "max <period>" for none (kernel
Documentation/admin-guide/cgroup-v2.rst, "cpu.max")."""
CFS_QUOTA = Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
CFS_PERIOD = Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us")
"""cgroup v1's quota and period (µs; a quota of -1 is none): Documentation/scheduler/sched-bwc.rst."""


def cpus() -> int:
    """CPUs this process may run on: its affinity where the platform tells it (else the
    machine's count), at most its cgroup's CPU quota rounded up (a container whose affinity
    lists 64 CPUs but whose quota is 2 CPUs' time counts 2)."""
    affinity = getattr(os, "sched_getaffinity", None)
    n = len(affinity(0)) if affinity else os.cpu_count() or 1
    quota = cpu_quota()
    return max(1, min(n, math.ceil(quota))) if quota else max(1, n)


def cpu_quota() -> float | None:
    """The cgroup's CPU quota in CPUs (quota / period), or None where there is none or it
    cannot be read (cgroup v2's ``cpu.max`` first, then v1's ``cpu.cfs_quota_us``)."""
    try:
        quota, period = CPU_MAX.read_text().split()[:2]
        return None if quota == "max" else _ratio(quota, period)
    except (OSError, ValueError):
        pass
    try:
        return _ratio(CFS_QUOTA.read_text(), CFS_PERIOD.read_text())
    except (OSError, ValueError):
        return None


def _ratio(quota: str, period: str) -> float | None:
    q, p = int(quota), int(period)
    return q / p if q > 0 and p > 0 else None


__all__ = ["cpu_quota", "cpus"]
