"""``fit_kernels.py --bwd-tail``: FA2's causal backward tail in the roofline for one report or
fit (RESULTS.md, 48th session, fa2tail48), the module switch put back afterwards."""

from __future__ import annotations

from trainsim.compute import attention


def _cells(fit_script, capsys, tail: str) -> dict[tuple[str, ...], float]:
    assert fit_script.main(["--no-fit", "--by-impl", "--no-gpu-files", "--bwd-tail", tail]) == 0
    out = {}
    for line in capsys.readouterr().out.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 7 and cells[0].startswith("attention"):
            out[tuple(cells[:4])] = float(cells[6].rstrip("%"))
    return out


def test_the_tail_slows_only_fa2_backward_cells_and_the_switch_is_put_back(fit_script, capsys):
    """With the tail on, the H100 FA2 backward rows (few-CTA causal shapes among them) are
    priced slower, no forward cell moves, and ``attention.FA2_BWD_TAIL`` is what it was."""
    shipped = attention.FA2_BWD_TAIL
    off, on = _cells(fit_script, capsys, "off"), _cells(fit_script, capsys, "on")
    assert attention.FA2_BWD_TAIL is shipped
    assert off.keys() == on.keys()
    key = ("attention_bwd", "flash2", "h100-sxm-80gb", "fit")
    assert on[key] > off[key] + 1.0  # signed error, points
    for k in off:
        if k[0] == "attention_fwd" or k[1] not in ("flash2", "sdpa"):
            assert on[k] == off[k], k
