"""benchmarks/host51_percall.py's what-if: a Transformer Engine C++ loop is one Python-level call,
its other kernels priced at ``CPP_LAUNCH_S``; every other op keeps a call per kernel."""

import sys
from pathlib import Path

import pytest

from trainsim.compute import host
from trainsim.workload.ops import Elementwise, Gemm
from trainsim.workload.shard import CAST_KERNEL

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import host51_percall


@pytest.fixture
def per_call():
    restore = host51_percall.install_per_call()
    try:
        yield
    finally:
        restore()


def test_grouped_gemm_is_one_call_and_cpp_kernels(per_call):
    te = Gemm("expert_fc1", m=512, n=1024, k=2048, batch=16, grouped="multi_stream")
    assert host.launches(te) == 1
    assert host.hooks_host_s(te) == pytest.approx(15 * host.CPP_LAUNCH_S)


def test_python_loop_grouped_gemm_keeps_a_call_per_expert(per_call):
    loop = Gemm("expert_fc1", m=512, n=1024, k=2048, batch=16, grouped="loop")
    assert host.launches(loop) == 16
    assert host.hooks_host_s(loop) == 0.0


def test_split_quantize_is_one_call(per_call):
    cast = Elementwise("expert_fc1.cast_transpose", bytes=1e6, kernels=48, kernel=CAST_KERNEL)
    assert host.launches(cast) == 1
    assert host.loop_host_s(cast) == pytest.approx(47 * host.CPP_LAUNCH_S)


def test_other_ops_and_restore():
    norm = Elementwise("norm", bytes=1e6, kernels=8)
    te = Gemm("expert_fc1", m=512, n=1024, k=2048, batch=16, grouped="multi_stream")
    restore = host51_percall.install_per_call()
    try:
        assert host.launches(norm) == 8 and host.loop_host_s(norm) == 0.0
    finally:
        restore()
    assert host.launches(te) == 16 and host.hooks_host_s(te) == 0.0
