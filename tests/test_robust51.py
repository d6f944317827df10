"""robust51: the edges robust50 and edge50 left (profile --merge's device, the zb_2p searches'
one limit, a --days window's checkpoint floor, TE < 2.10's offload gate, the bounds' shared
op lists) and the failure classes of the thirty-first fuzz round (benchmarks/fuzz51.py)."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from trainsim.errors import TrainsimError

DB = Path(__file__).resolve().parent.parent / "src" / "trainsim" / "data" / "kernels" \
    / "h100-sxm-80gb.json"


def _fake_profiler(monkeypatch, name: str) -> list[str]:
    """PyTorch and the profiler's device, kernel and layer modules replaced by fakes (torch is
    optional here): a CPU device called ``name``; returns the list each measurement appends to."""
    measured: list[str] = []
    torch = types.ModuleType("torch")
    torch.get_num_threads = lambda: 1
    torch.set_num_threads = lambda n: None
    dev = types.SimpleNamespace(name=name, kind="cpu", memory_bytes=None, cache_bytes=32e6,
                                torch_device="cpu", versions=lambda: {"torch": "fake"})
    device = types.ModuleType("trainsim.profile.device")
    device.open_device = lambda kind: dev
    device.Budget = type("Budget", (), {"quick": staticmethod(lambda: None)})

    def time_kernel(kernel, dev, budget):
        measured.append(kernel.label())
        raise RuntimeError("fake: not measured")

    kernels = types.ModuleType("trainsim.profile.kernels")
    kernels.fp8_supported = lambda dev: (False, "")
    kernels.time_kernel = time_kernel
    layer = types.ModuleType("trainsim.profile.layer")
    layer.time_layer = lambda *a, **k: measured.append("layer")
    for mod, fake in (("torch", torch), ("trainsim.profile.device", device),
                      ("trainsim.profile.kernels", kernels), ("trainsim.profile.layer", layer)):
        monkeypatch.setitem(sys.modules, mod, fake)
    return measured


def test_profile_merge_checks_the_device_as_soon_as_it_opens(tmp_path, monkeypatch):
    """robust50 lead 1: a --merge database measured on another device (same catalog GPU) was
    refused at the first partial write, after 50 kernels had been measured; now before the
    first one, in one line naming both devices."""
    from click.testing import CliRunner

    from trainsim.cli import main

    measured = _fake_profiler(monkeypatch, "NVIDIA H100 80GB HBM3")
    db = json.loads(DB.read_text())
    db["device_name"] = "NVIDIA H100 PCIe"
    out = tmp_path / "db.json"
    out.write_text(json.dumps(db))
    r = CliRunner().invoke(main, ["profile", "--gpu", "h100-sxm-80gb", "--out", str(out),
                                  "--merge", "--device", "cpu", "--quick", "--models",
                                  "llama3-8b", "--tp", "1,2", "--seq", "4096", "--no-layers"])
    assert r.exit_code == 2, r.output
    assert "'NVIDIA H100 PCIe'" in r.output and "'NVIDIA H100 80GB HBM3'" in r.output
    assert "Traceback" not in r.output and measured == []
    assert json.loads(out.read_text()) == db  # untouched


def test_profile_merge_onto_the_same_device_measures(tmp_path, monkeypatch):
    """The control: the same device's database is measured into (every case reaches the
    device; the fakes fail each one, which the run notes)."""
    from trainsim.profile.run import ProfileOptions, run_profile

    measured = _fake_profiler(monkeypatch, "NVIDIA H100 80GB HBM3")
    db = json.loads(DB.read_text())
    db["device_name"] = "NVIDIA H100 80GB HBM3"
    out = run_profile(ProfileOptions(gpu="h100-sxm-80gb", models=("llama3-8b",), tps=(1,),
                                     seqs=(4096,), device="cpu", quick=True, layers=False),
                      base=db)
    assert measured and len(measured) == sum(n.startswith("failed") for n in out["notes"])
    with pytest.raises(TrainsimError, match="cannot merge: the database was measured on"):
        run_profile(ProfileOptions(gpu="h100-sxm-80gb", models=("llama3-8b",), tps=(1,),
                                   seqs=(4096,), device="cpu", quick=True, layers=False),
                    base={**db, "device_name": "NVIDIA H100 PCIe"})
