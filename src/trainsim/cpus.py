"""The CPUs this process may use: how many worker processes a command starts by default
(``cli validate``) and whether a search's main process has a CPU beside its local workers
(``search.waves``). Imports nothing of trainsim, so every layer may ask."""

from __future__ import annotations

import math
import os
from pathlib import Path

CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
"""cgroup v2's CPU quota as this process sees it inside a container (its own cgroup, the
root of its namespace): "<quota µs> <period µs>", or "max <period>" for none (kernel
Documentation/admin-guide/cgroup-v2.rst, "cpu.max")."""
CGROUP_V2 = Path("/sys/fs/cgroup")
"""Where cgroup v2's hierarchy is mounted: the root of this process's cgroup namespace."""
PROC_CGROUP = Path("/proc/self/cgroup")
"""This process's cgroup: cgroup v2's line is ``0::<path>``, relative to the namespace root
(kernel Documentation/admin-guide/cgroup-v2.rst, "Processes"). Without a private cgroup
namespace (a container run with ``--cgroupns=host``, a systemd or Slurm job) the process sits
below ``CGROUP_V2``, and its quota is the least of the ``cpu.max`` on the way up to it: a
cgroup's limit also binds all its descendants ("Top-down Constraint")."""
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
    cannot be read: cgroup v2's ``cpu.max``, the least of the namespace root's and those from
    this process's own cgroup (``PROC_CGROUP``) up to the root, where any can be read; else
    v1's ``cpu.cfs_quota_us``."""
    files = [CPU_MAX, *(d / "cpu.max" for d in _own_cgroup_dirs())]
    found, quotas = False, []
    for f in files:
        try:
            quota, period = f.read_text().split()[:2]
            found = True
            if quota != "max" and (q := _ratio(quota, period)):
                quotas.append(q)
        except (OSError, ValueError):
            continue
    if found:
        return min(quotas, default=None)
    try:
        return _ratio(CFS_QUOTA.read_text(), CFS_PERIOD.read_text())
    except (OSError, ValueError):
        return None


def _own_cgroup_dirs() -> list[Path]:
    """This process's cgroup v2 directory and its ancestors below ``CGROUP_V2`` (deepest
    first); none where ``PROC_CGROUP`` has no ``0::`` line, names the root, or names a
    cgroup outside this namespace (a ``..`` part: another namespace's path, whose directories
    here would be unrelated cgroups) or a removed one (`` (deleted)``, cgroup_path's suffix).
    Only the line break is taken off: a directory's name may end in a space."""
    try:
        lines = PROC_CGROUP.read_text().splitlines()
    except OSError:
        return []
    rel = next((line[3:] for line in lines if line.startswith("0::")), "")
    parts = [p for p in rel.split("/") if p and p != "."]
    if ".." in parts or rel.endswith(" (deleted)"):
        return []
    return [CGROUP_V2.joinpath(*parts[:n]) for n in range(len(parts), 0, -1)]


def _ratio(quota: str, period: str) -> float | None:
    q, p = int(quota), int(period)
    return q / p if q > 0 and p > 0 else None


__all__ = ["cpu_quota", "cpus"]
