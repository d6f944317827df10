"""guard33: the leads of fuzz33. Output files (``--trace``, ``--simai``, ``capture --out``,
``profile --out``, ``--chakra``) checked before any work by one parameter type
(``cli_guard.OutFile``, which ``--plot`` extends), and ``profile`` bounded up front (``profile.work``): a CPU dry run over its work limit refused in
one line, on a GPU what cannot fit its memory noted and not run."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import cli, one_error_line

from trainsim.limits import WorkLimitError
from trainsim.profile.run import ProfileOptions, plan
from trainsim.profile.work import check_cpu_work, fitting, kernel_bytes, layer_bytes

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(ROOT / "examples" / "llama3-8b-h100.yaml")


@pytest.fixture()
def places(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    return {"missing-parent": str(tmp_path / "none" / "o.json"),
            "directory": str(tmp_path / "dir"), "trailing-slash": str(tmp_path / "new") + "/",
            "file-as-parent": str(tmp_path / "file" / "o.json")}


@pytest.mark.parametrize("kind", ["missing-parent", "directory", "trailing-slash",
                                  "file-as-parent"])
@pytest.mark.parametrize("args", [
    ["simulate", EXAMPLE, "--trace"], ["export", EXAMPLE, "--simai"],
    ["capture", EXAMPLE, "--out"]])
def test_an_output_file_that_cannot_be_written_is_refused_before_the_run(places, args, kind):
    # before: simulate and export ran the whole simulation (1-15 s), then failed in the write
    line = one_error_line(cli(*args, places[kind]))
    assert args[-1] in line and ("directory" in line), line


def test_profile_out_makes_missing_folders_but_not_under_a_file(places, tmp_path):
    base = ["profile", "--gpu", "h100-sxm-80gb", "--device", "cpu", "--quick", "--out"]
    line = one_error_line(cli(*base, places["file-as-parent"]))
    assert "--out" in line and "not a directory" in line
    assert "is a directory" in one_error_line(cli(*base, places["directory"]))
    chakra = one_error_line(cli("export", EXAMPLE, "--chakra", str(tmp_path / "file" / "t")))
    assert "--chakra" in chakra and "not a directory" in chakra


def test_an_unwritable_folder_is_refused(places, monkeypatch):
    import trainsim.cli_guard as guard

    monkeypatch.setattr(guard.os, "access", lambda path, mode: False)  # the fuzzer runs as root
    line = one_error_line(cli("simulate", EXAMPLE, "--trace", places["directory"] + "/t.json"))
    assert "--trace" in line and "not writable" in line


def test_a_plot_file_keeps_its_suffix_check(tmp_path):
    line = one_error_line(cli("simulate", EXAMPLE, "--plot", str(tmp_path / "f.xyz")))
    assert "no figure format" in line


# ------------------------------------------------------------------ profile's memory

@pytest.mark.slow  # 5 s: imports torch
def test_the_estimate_is_the_recipes_set_bytes():
    """``profile.work.set_bytes`` is what ``profile.kernels``' recipes build (torch, lazily)."""
    pytest.importorskip("torch")
    from trainsim.profile.device import CpuDevice
    from trainsim.profile.kernels import recipe
    from trainsim.profile.work import set_bytes

    work = plan(ProfileOptions(gpu="h100-sxm-80gb", quick=True, tps=(1, 2), seqs=(4096,)),
                fp8=True)
    kinds = {c.kernel.kind for c in work.cases}
    assert {"gemm", "attention", "adam", "cross_entropy.bwd", "rope", "embedding"} <= kinds
    dev = CpuDevice()
    for case in work.cases:
        assert set_bytes(case.kernel) == pytest.approx(recipe(case.kernel, dev).set_bytes), \
            case.kernel.label()


def test_the_readme_run_fits_an_h100_and_a_large_cpu_dry_run_is_refused(monkeypatch):
    monkeypatch.delenv("TRAINSIM_MAX_PROFILE_BYTES", raising=False)
    full = plan(ProfileOptions(gpu="h100-sxm-80gb"), fp8=True)  # `trainsim profile` as shown
    cases, layers, notes = fitting(full.cases, full.layers, 50 * 2**20, 80e9, 1)
    assert (cases, layers, notes) == (full.cases, full.layers, [])
    need = max(kernel_bytes(c.kernel, 50 * 2**20) for c in full.cases)
    assert 10e9 < need < 40e9  # the 128k-vocabulary cross-entropy backward at 8192 tokens
    assert max(layer_bytes(c) for c in full.layers) < need
    quick = plan(ProfileOptions(gpu="h100-sxm-80gb", quick=True, micro_batch_size=4))
    check_cpu_work(quick.cases, quick.layers, 4)  # the README's shapes, --quick on a CPU
    # the fuzz campaign's base at --mbs 1000: 574 MiB, 39 s (a hang at 20 s)
    big = plan(ProfileOptions(gpu="h100-sxm-80gb", quick=True, micro_batch_size=1000,
                              models=("llama3-8b",), tps=(8,), seqs=(64,)))
    with pytest.raises(WorkLimitError) as err:
        check_cpu_work(big.cases, big.layers, 1000)
    assert "--mbs (1,000)" in str(err.value) and "TRAINSIM_MAX_PROFILE_BYTES" in str(err.value)
    assert "\n" not in str(err.value)
    monkeypatch.setenv("TRAINSIM_MAX_PROFILE_BYTES", "1e9")  # the user means it
    check_cpu_work(big.cases, big.layers, 1000)


@pytest.mark.slow  # imports torch
def test_profile_mbs_100000_is_one_line_before_any_kernel(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "p.json"
    # before: every kernel failed with "can't allocate memory" for over 5 minutes
    line = one_error_line(cli("profile", "--gpu", "h100-sxm-80gb", "--device", "cpu",
                              "--quick", "--mbs", "100000", "--out", str(out)))
    assert "--mbs (100,000)" in line and "cross_entropy" in line and "dry run" in line
    assert not out.exists()


def test_on_a_gpu_what_cannot_fit_is_noted_and_the_rest_measured(monkeypatch):
    monkeypatch.delenv("TRAINSIM_MAX_PROFILE_BYTES", raising=False)
    full = plan(ProfileOptions(gpu="a100-sxm-40gb", micro_batch_size=2), fp8=False)
    cases, layers, notes = fitting(full.cases, full.layers, 40 * 2**20, 40e9, 2)
    assert len(cases) == len(full.cases) - len(notes) and layers == full.layers
    assert notes and all(n.startswith("failed: cross_entropy") and "over the GPU's 40.0 GB"
                         in n for n in notes)
    huge = plan(ProfileOptions(gpu="h100-sxm-80gb", models=("llama3-8b",), tps=(1,),
                               micro_batch_size=10**6, kernels=False))
    with pytest.raises(WorkLimitError, match="no measurement fits the GPU's 80.0 GB"):
        fitting(huge.cases, huge.layers, 50 * 2**20, 80e9, 10**6)
