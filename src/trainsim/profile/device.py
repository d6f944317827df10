"""Devices to time kernels on, behind one protocol, and the timing loop.

:class:`CudaDevice` times with CUDA events; :class:`CpuDevice` with ``time.perf_counter`` so
every code path of the profiler runs on a CPU build of PyTorch (CI, ``--device cpu``).
:func:`measure` is the loop: warm-up, many repeats, the median; the caller rotates among
several input sets so that no repeat finds its operands in the L2 cache (what
``triton.testing.do_bench`` does by flushing the cache, done here without the flush kernel).
"""

from __future__ import annotations

import logging
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from trainsim.profile.schema import ProfileError

log = logging.getLogger(__name__)


class Timer(Protocol):
    """A point on the device's timeline."""

    def record(self) -> None: ...

    def elapsed_s(self, end: Timer) -> float:
        """Seconds from this point to ``end`` (both recorded, device synchronized)."""
        ...


class Device(Protocol):
    kind: str
    """'cuda' or 'cpu'."""
    name: str
    """What torch calls the device (e.g. 'NVIDIA H100 80GB HBM3')."""
    torch_device: torch.device
    cache_bytes: int
    """Last-level cache the input rotation must defeat."""
    memory_bytes: int | None
    """The GPU's memory (the largest measurement's limit: ``profile.work``); None on a CPU."""

    def synchronize(self) -> None: ...

    def timer(self) -> Timer: ...

    def max_memory_allocated(self) -> int: ...

    def memory_allocated(self) -> int: ...

    def reset_peak(self) -> None: ...

    def hold(self, seconds: float) -> None:
        """Keep the device busy for ``seconds`` so queued work is timed without launch gaps."""
        ...

    def versions(self) -> dict[str, Any]:
        """driver, torch and cuda versions for the database header."""
        ...


class _CudaTimer:
    def __init__(self) -> None:
        self.event = torch.cuda.Event(enable_timing=True)

    def record(self) -> None:
        self.event.record()

    def elapsed_s(self, end: _CudaTimer) -> float:  # type: ignore[override]
        return self.event.elapsed_time(end.event) / 1e3


class _WallTimer:
    def __init__(self) -> None:
        self.t = 0.0

    def record(self) -> None:
        self.t = time.perf_counter()

    def elapsed_s(self, end: _WallTimer) -> float:  # type: ignore[override]
        return end.t - self.t


class CudaDevice:
    """The current CUDA device: CUDA events, the caching allocator's peak counter."""

    kind = "cuda"

    def __init__(self, index: int | None = None) -> None:
        if not torch.cuda.is_available():
            raise ProfileError("needs a CUDA GPU and PyTorch; use --device cpu to dry-run")
        self.index = torch.cuda.current_device() if index is None else index
        self.torch_device = torch.device("cuda", self.index)
        props = torch.cuda.get_device_properties(self.index)
        self.name = props.name
        self.cache_bytes = int(getattr(props, "L2_cache_size", 50 * 2**20))
        self.memory_bytes: int | None = int(props.total_memory)  # the profile's memory limit
        self._clock_hz = 1.98e9  # H100 SXM boost clock; only sizes the hold kernel

    def synchronize(self) -> None:
        torch.cuda.synchronize(self.index)

    def timer(self) -> Timer:
        return _CudaTimer()

    def max_memory_allocated(self) -> int:
        return int(torch.cuda.max_memory_allocated(self.index))

    def memory_allocated(self) -> int:
        return int(torch.cuda.memory_allocated(self.index))

    def reset_peak(self) -> None:
        torch.cuda.reset_peak_memory_stats(self.index)

    def hold(self, seconds: float) -> None:
        torch.cuda._sleep(int(seconds * self._clock_hz))

    def versions(self) -> dict[str, Any]:
        return {"driver": _nvidia_driver(), "torch": torch.__version__, "cuda": torch.version.cuda}


class CpuDevice:
    """The host CPU: wall-clock timing; peak memory is not tracked (reported as 0), since
    tensors live outside Python's allocator and tracemalloc cannot see them."""

    kind = "cpu"
    cache_bytes = 32 * 2**20
    memory_bytes = None  # the profile's limit: TRAINSIM_MAX_PROFILE_BYTES (profile.work)
    torch_device = torch.device("cpu")

    def __init__(self) -> None:
        self.name = f"cpu ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"

    def synchronize(self) -> None:
        pass

    def timer(self) -> Timer:
        return _WallTimer()

    def max_memory_allocated(self) -> int:
        return 0

    def memory_allocated(self) -> int:
        return 0

    def reset_peak(self) -> None:
        pass

    def hold(self, seconds: float) -> None:
        pass

    def versions(self) -> dict[str, Any]:
        return {"driver": None, "torch": torch.__version__, "cuda": None}


def open_device(kind: str) -> Device:
    if kind == "cuda":
        return CudaDevice()
    if kind == "cpu":
        return CpuDevice()
    raise ProfileError(f"--device {kind}: expected cuda or cpu")


def _nvidia_driver() -> str | None:
    """The NVIDIA driver version (nvidia-smi), else the CUDA driver API version."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
        return out.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    try:
        v = int(torch._C._cuda_getDriverVersion())  # e.g. 12040
        return f"cuda-driver-api {v // 1000}.{v % 1000 // 10}"
    except Exception:  # noqa: BLE001 - a private API; absent is fine
        return None


@dataclass(frozen=True)
class Timing:
    median_s: float
    repeats: int
    samples_s: tuple[float, ...]


@dataclass(frozen=True)
class Budget:
    """How long to measure one kernel."""

    warmup: int = 5
    repeats: int = 50
    min_repeats: int = 10
    target_s: float = 1.0
    """Fewer repeats (down to min_repeats) for kernels slower than target_s / repeats."""

    @classmethod
    def quick(cls) -> Budget:
        return cls(warmup=1, repeats=3, min_repeats=3, target_s=0.05)


def measure(dev: Device, run: Callable[[int], Any], budget: Budget) -> Timing:
    """Median device time of ``run(i)``, ``i`` counting repeats (the caller rotates inputs)."""
    for i in range(budget.warmup):
        run(i)
    dev.synchronize()
    t0 = time.perf_counter()
    run(budget.warmup)
    launch_s = time.perf_counter() - t0
    dev.synchronize()
    estimate = max(time.perf_counter() - t0, 1e-7)
    repeats = int(min(budget.repeats, max(budget.min_repeats, budget.target_s // estimate)))
    # Queue the repeats behind a sleep kernel so the GPU never waits for the CPU to launch
    # (small eager kernels would otherwise time the launch gaps too).
    dev.hold(min(0.5, 1.5 * repeats * launch_s + 1e-3))
    marks = [(dev.timer(), dev.timer()) for _ in range(repeats)]
    for i, (start, end) in enumerate(marks):
        start.record()
        run(i)
        end.record()
    dev.synchronize()
    samples = tuple(max(s.elapsed_s(e), 1e-9) for s, e in marks)
    return Timing(statistics.median(samples), repeats, samples)


def rotation(set_bytes: float, dev: Device, cap: int = 16) -> int:
    """How many input sets to rotate among so that together they overflow the cache twice."""
    if set_bytes <= 0:
        return 1
    n = -(-2 * dev.cache_bytes // int(max(set_bytes, 1)))
    return int(max(1, min(cap, n)))
