"""The CPUs this process may use (``trainsim.cpus``): its affinity, at most its cgroup quota."""

from __future__ import annotations

import os

import pytest

from trainsim import cpus as cpus_mod


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """64 CPUs in the affinity; cgroup files under tmp_path, none written yet."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    for name in ("CPU_MAX", "CFS_QUOTA", "CFS_PERIOD", "PROC_CGROUP"):
        monkeypatch.setattr(cpus_mod, name, tmp_path / name)
    monkeypatch.setattr(cpus_mod, "CGROUP_V2", tmp_path / "cgroup")
    return tmp_path


def test_a_cgroup_v2_quota_caps_the_affinity(machine):
    (machine / "CPU_MAX").write_text("200000 100000\n")
    assert cpus_mod.cpus() == 2
    (machine / "CPU_MAX").write_text("150000 100000\n")  # 1.5 CPUs' time: 2 processes
    assert cpus_mod.cpus() == 2
    (machine / "CPU_MAX").write_text("max 100000\n")
    assert cpus_mod.cpus() == 64


def test_a_cgroup_v1_quota_counts_where_v2_tells_nothing(machine):
    (machine / "CFS_QUOTA").write_text("400000\n")
    (machine / "CFS_PERIOD").write_text("100000\n")
    assert cpus_mod.cpus() == 4
    (machine / "CFS_QUOTA").write_text("-1\n")
    assert cpus_mod.cpus() == 64


def test_no_cgroup_files_leave_the_affinity(machine):
    assert cpus_mod.cpu_quota() is None and cpus_mod.cpus() == 64


def test_validate_and_search_count_the_same_cpus(machine):
    from trainsim.search import LocalExecutor

    (machine / "CPU_MAX").write_text("300000 100000\n")
    assert cpus_mod.cpus() == LocalExecutor().workers == 3


def test_a_process_without_its_own_cgroup_namespace_takes_the_least_quota_up_its_path(machine):
    """``0::/job.slice/step`` in /proc/self/cgroup: the quotas of step (3 CPUs) and
    job.slice (2 CPUs) both bind it (cgroup-v2.rst "Top-down Constraint"); the root's file
    says none."""
    (machine / "PROC_CGROUP").write_text("1:cpu:/ignored\n0::/job.slice/step\n")
    step = machine / "cgroup" / "job.slice" / "step"
    step.mkdir(parents=True)
    (step / "cpu.max").write_text("300000 100000\n")
    assert cpus_mod.cpus() == 3
    (step.parent / "cpu.max").write_text("200000 100000\n")
    (machine / "CPU_MAX").write_text("max 100000\n")
    assert cpus_mod.cpus() == 2
    (step / "cpu.max").write_text("max 100000\n")
    (step.parent / "cpu.max").write_text("max 100000\n")
    assert cpus_mod.cpu_quota() is None and cpus_mod.cpus() == 64


def test_a_cgroup_path_that_cannot_be_read_keeps_the_root_rule(machine):
    (machine / "PROC_CGROUP").write_text("0::/gone/../elsewhere\n")  # no such directories
    (machine / "CPU_MAX").write_text("400000 100000\n")
    assert cpus_mod.cpus() == 4


def test_a_cgroup_path_leaving_the_namespace_or_removed_reads_no_other_cgroup(machine):
    """``0::/../sib`` (a cgroup outside this namespace) and a path ending in `` (deleted)``
    name no directory here: the unrelated cgroup ``sib`` (1 CPU) and ``job`` (1 CPU) are not
    read, the root's 4 CPUs count. A name ending in a space is that directory, not a
    stripped one."""
    (machine / "CPU_MAX").write_text("400000 100000\n")
    for name in ("sib", "job", "job "):
        (machine / "cgroup" / name).mkdir(parents=True)
    (machine / "cgroup" / "sib" / "cpu.max").write_text("100000 100000\n")
    (machine / "cgroup" / "job" / "cpu.max").write_text("100000 100000\n")
    (machine / "cgroup" / "job " / "cpu.max").write_text("300000 100000\n")
    (machine / "PROC_CGROUP").write_text("0::/../sib\n")
    assert cpus_mod.cpus() == 4
    (machine / "PROC_CGROUP").write_text("0::/job (deleted)\n")
    assert cpus_mod.cpus() == 4
    (machine / "PROC_CGROUP").write_text("0::/job \n")
    assert cpus_mod.cpus() == 3
