"""benchmarks/zero3_gap.py (issue 17 item 3 diagnostics): the ZeRO++ blog bars turned into rows
give back their TFLOPs, the copy-cost what-if at the shipped cost is the model as given, and the
check file's -85 % row is its empty network cell (one 100 Gb/s link per 16-GPU node fits it)."""

from __future__ import annotations

from pathlib import Path

from helpers import load_script

from trainsim.compute.host import CPP_LAUNCH_S, HOST_S_PER_KERNEL

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = load_script(ROOT / "benchmarks" / "zero3_gap.py")


def tutorial() -> dict[str, str]:
    return next(r for r in SCRIPT.read(SCRIPT.CHECKS) if r["id"] == SCRIPT.TUTORIAL_ROW)


def test_blog_rows_give_back_their_bars():
    """Each row's step, put back through Megatron-DeepSpeed's formula, is its bar's TFLOPs; the
    links per node become the per-GPU rate (1 link of 100 Gb/s over 16 GPUs: 6.25 Gb/s)."""
    rows = SCRIPT.blog_rows(tutorial())
    assert len(rows) == len(SCRIPT.BLOG_BARS)
    for r, (ib, tokens, tf, _) in zip(rows, SCRIPT.BLOG_BARS):
        assert abs(SCRIPT.tflops(r, float(r["measured_iteration_s"])) - tf) < 1e-4
        assert float(r["nic_gbps_per_gpu"]) == ib * 100 / 16
        assert int(r["micro_batch_size"]) * int(r["seq_length"]) == tokens
        assert int(r["global_batch_size"]) == int(r["micro_batch_size"]) * 384


def test_tutorial_tflops_match_its_log():
    """The check row's step gives back the log's 'TFLOPs: 7.65'."""
    r = tutorial()
    assert abs(SCRIPT.tflops(r, float(r["measured_iteration_s"])) - 7.65) < 0.01


def test_copy_cost_at_the_shipped_cost_is_the_model():
    """The what-if at CPP_LAUNCH_S changes nothing; an eager op's cost per copy makes a
    many-rank 2021 row slower (the copies' host launches are on its critical path)."""
    row = next(r for r in SCRIPT.zero3_rows(SCRIPT.PUBLIC) if r["num_gpus"] == "1536")
    plain = SCRIPT.predict(row)["predicted"]
    with SCRIPT.copy_cost(CPP_LAUNCH_S * 1e6):
        assert SCRIPT.predict(row)["predicted"] == plain
    with SCRIPT.copy_cost(HOST_S_PER_KERNEL * 1e6):
        assert SCRIPT.predict(row)["predicted"] > 1.2 * plain
    assert SCRIPT.predict(row)["predicted"] == plain  # restored


def test_tutorial_row_is_its_network_cell():
    """Empty cell: over 80 % too fast; one 100 Gb/s link per 16-GPU node: within 5 %."""
    r = tutorial()
    assert SCRIPT.error(SCRIPT.predict(r)) < -0.8
    one_link = dict(r, nic_gbps_per_gpu="6.25")
    assert abs(SCRIPT.error(SCRIPT.predict(one_link))) < 0.05
