"""The errata of the published kernels file (benchmarks/kernels_errata.csv): each names a cell
that still says what it quotes, once, with its evidence."""

from __future__ import annotations

import csv
from pathlib import Path

from trainsim.validate import BUNDLED_DIR
from trainsim.validate.errata import read_errata

ERRATA = Path(__file__).resolve().parents[1] / "benchmarks" / "kernels_errata.csv"


def _errata() -> list[dict[str, str]]:
    return list(read_errata(ERRATA).values())


def test_each_cell_is_corrected_once_and_still_says_what_it_quotes():
    with open(BUNDLED_DIR / "kernels_published.csv", newline="") as fh:
        rows = {r["id"]: r for r in csv.DictReader(fh)}
    keys = [(e["id"], e["field"]) for e in _errata()]
    assert len(keys) == len(set(keys))
    for e in _errata():
        assert rows[e["id"]][e["field"]] == e["file_value"], (e["id"], e["field"])
        assert e["corrected_value"] != e["file_value"] and e["evidence"].strip()


def test_the_kernels_errata_apply_to_the_bundled_file(tmp_path):
    from trainsim.validate.errata import corrected_file

    out, withdrawn = corrected_file(BUNDLED_DIR / "kernels_published.csv", ERRATA, tmp_path)
    with open(out, newline="") as fh:
        fixed = {r["id"]: r for r in csv.DictReader(fh)}
    for e in _errata():
        if e["corrected_value"].strip():
            assert fixed[e["id"]][e["field"]] == e["corrected_value"]
        else:  # a withdrawn measurement takes its row out
            assert e["id"] not in fixed
    assert sorted(withdrawn) == sorted(
        (e["id"], e["field"]) for e in _errata() if not e["corrected_value"].strip())


def test_vidur_down_projections_multiply_zeros():
    """The erratum withdrawing vidur's ``mlp_down_proj`` rows rests on fp16 arithmetic: with
    sarathi-serve's dummy weights (uniform +-1e-3, norm weights too) the MLP's input has rms
    ~5.8e-4, gate and up come out at ~2e-5 and SiluAndMul's fp16 products of two of those
    round to zero, so the down projection's activation operand is all zeros. Replayed here in
    numpy at Llama-2-7b's sizes (fewer tokens); fails if any product survives."""
    import numpy as np

    rng = np.random.default_rng(0)
    tokens, hidden, ffn = 64, 4096, 11008

    def dummy(*shape: int) -> np.ndarray:  # drawn in float32 (a float64 draw is 7x the time)
        return rng.random(shape, dtype=np.float32) * np.float32(2e-3) - np.float32(1e-3)

    def fp16(x: np.ndarray) -> np.ndarray:
        return x.astype(np.float16).astype(np.float32)

    attn = fp16(fp16(rng.standard_normal((tokens, hidden))) @ dummy(hidden, hidden))
    h = fp16(dummy(tokens, hidden) + attn)  # embedding residual + o_proj(randn)
    normed = fp16(h / np.sqrt((h * h).mean(-1, keepdims=True) + 1e-6) * dummy(hidden))
    up = fp16(normed @ dummy(hidden, 2 * ffn))
    gate, lin = up[:, :ffn], up[:, ffn:]
    silu = fp16(gate / (1.0 + np.exp(-gate)))
    act = (silu.astype(np.float16) * lin.astype(np.float16)).astype(np.float16)
    assert 3e-4 < float(np.sqrt((normed ** 2).mean())) < 1e-3
    assert np.count_nonzero(act) == 0
    withdrawn = {e["id"] for e in _errata() if not e["corrected_value"].strip()}
    with open(BUNDLED_DIR / "kernels_published.csv", newline="") as fh:
        down = {r["id"] for r in csv.DictReader(fh)
                if r["id"].startswith("vidur-") and r["id"].endswith("-mlp_down_proj")}
    assert down and down <= withdrawn


def test_a_withdrawn_kernel_measurement_takes_its_row_out(tmp_path):
    """Withdrawing a kernel row's ``measured_value`` (an empty corrected value) drops the row,
    as a withdrawn iteration time drops a training row; other rows stay as given."""
    from trainsim.validate.errata import FIELDS, corrected_file

    with open(BUNDLED_DIR / "kernels_published.csv", newline="") as fh:
        first = next(csv.DictReader(fh))
    errata = tmp_path / "errata.csv"
    with open(errata, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(FIELDS)
        w.writerow([first["id"], "measured_value", first["measured_value"], "", "evidence"])
    (tmp_path / "out").mkdir()
    out, withdrawn = corrected_file(BUNDLED_DIR / "kernels_published.csv", errata,
                                    tmp_path / "out")
    with open(out, newline="") as fh:
        ids = [r["id"] for r in csv.DictReader(fh)]
    assert withdrawn == [(first["id"], "measured_value")] and first["id"] not in ids
    assert len(ids) > 600


def test_only_the_mi300x_v1_mamf_shape_fits_its_last_level_cache():
    """The erratum withdrawing mamf-mi300x-bf16-v1 rests on its working set: the v1 table did
    not reset the cache between calls, and of the three v1 rows only the MI300X's best shape
    (operands and output in bf16) fits its GPU's last-level cache (256 MiB Infinity Cache)."""
    from trainsim.catalog import gpu

    with open(BUNDLED_DIR / "kernels_published.csv", newline="") as fh:
        v1 = [r for r in csv.DictReader(fh) if r["id"].startswith("mamf-") and r["id"].endswith("-v1")]
    fits = {}
    for r in v1:
        m, n, k = (int(r[c]) for c in ("m", "n", "k"))
        fits[r["id"]] = 2 * (m * k + k * n + m * n) <= gpu(r["gpu"]).l2_bytes
    assert fits == {"mamf-a100-bf16-v1": False, "mamf-h100-bf16-v1": False,
                    "mamf-mi300x-bf16-v1": True}
    assert "mamf-mi300x-bf16-v1" in {e["id"] for e in _errata() if not e["corrected_value"]}
