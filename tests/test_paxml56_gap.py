"""benchmarks/paxml56_gap.py: the candidate prices for Paxml's missing time (a check script)."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import paxml56_gap as gap

H100_HBM_BPS = 3352e9  # catalog/gpus/h100-sxm-80gb.yaml hbm_gbyte_s


def _row(path: str, row_id: str) -> dict[str, str]:
    with (BENCH / path).open(newline="") as fh:
        return next(r for r in csv.DictReader(fh) if r["id"] == row_id)


@pytest.fixture(scope="module")
def five_b() -> gap.Gap:
    return gap.gap_of(_row("training_dgxc_paxml.csv", "dgxc-paxml-gpt3-5b-bf16-h100-16"))


def test_the_gap_is_measured_less_predicted(five_b):
    assert five_b.measured_s == 0.634
    assert five_b.gap_s == pytest.approx(0.634 - five_b.predicted_s)
    assert 0.1 < five_b.gap_s < 0.15  # jax55's lead: about 0.12 s missing on the 5B


def test_serial_is_the_comm_trainsim_hides(five_b):
    assert 0 < five_b.exposed_s < five_b.comm_s
    assert five_b.serial_s == pytest.approx(five_b.comm_s - five_b.exposed_s)


def test_copy_prices_follow_the_5b_shape(five_b):
    h, f, layers, tokens = 4096, 16384, 24, 4 * 2048
    layer_params = 4 * h * h + 2 * h * f
    # B: two gathered-weight copies and one unsharded-gradient copy a layer, each read + written
    assert five_b.carry_s == pytest.approx(3 * 2 * layer_params * 2 * layers / H100_HBM_BPS)
    # C: SAVE_DOT_ONLY keeps q/k/v, out, fc1, fc2 (3h + h + f + h a token), written and read,
    # plus the q/k/v slice read back for the fused attention
    saved = (3 * h + h + f + h) * tokens * 2
    assert five_b.dus_s == pytest.approx((2 * saved + 2 * 3 * h * tokens * 2) * layers
                                         / H100_HBM_BPS)


def test_a_save_list_without_the_mlp_keeps_only_qkv_and_out():
    assert gap._saved_dot_elements({"recompute_modules": "core_attn;mlp"}, 10, 40) == 40
    assert gap._saved_dot_elements({"recompute_modules": "core_attn;layernorm"}, 10, 40) == 90
    assert gap._saved_dot_elements({"remat_policy": "save_qkv_out_proj"}, 10, 40) == 40
    assert gap._saved_dot_elements({"remat_policy": "save_dot_only"}, 10, 40) == 90


def test_a_swiglu_row_gets_no_copy_price():
    g = gap.gap_of(_row("training_dgxc_maxtext.csv", "dgxc-maxtext-llama2-70b-bf16-h100-64"))
    assert g.carry_s is None and g.dus_s is None
    assert "-" in gap._lines([g], markdown=False)[1].split()


def test_unknown_rows_and_a_bare_file_flag_are_refused(capsys):
    assert gap.main(["no-such-row"]) == 2
    assert "no-such-row" in capsys.readouterr().err
    assert gap.main(["--file"]) == 2


def test_the_trace_reader_counts_overlap_once():
    import paxml56_trace_overlap as trace

    union = trace._union([(0, 2), (1, 3), (5, 6)])
    assert union == [[0, 3], [5, 6]]
    assert trace._covered(union, 2, 5.5) == pytest.approx(1.5)  # 2..3 and 5..5.5


def test_the_trace_reader_wants_an_archive_folder(tmp_path, capsys):
    import paxml56_trace_overlap as trace

    assert trace.main([]) == 2
    assert trace.main([str(tmp_path)]) == 2
    assert capsys.readouterr().err


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, value) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    if isinstance(value, str):
        value = value.encode()
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _instruction(iid: int, name: str, opcode: str, kind: str = "", operands=()) -> bytes:
    packed = b"".join(_varint(o) for o in operands)
    return (_field(1, name) + _field(2, opcode) + (_field(11, kind) if kind else b"")
            + _field(35, iid) + (_field(36, packed) if operands else b""))


def test_the_hlo_reader_follows_the_schedule_and_charges_the_estimator_costs():
    import paxml56_hlo_windows as hlo

    ins = [_instruction(1, "p", "parameter"),
           _instruction(2, "all-gather-start", "all-gather-start", operands=[1]),
           _instruction(3, "gemm", "custom-call", operands=[1]),
           _instruction(4, "add_fusion", "fusion", "kLoop", operands=[3]),
           _instruction(5, "reduce_fusion", "fusion", "kInput", operands=[4]),
           _instruction(6, "all-gather-done", "all-gather-done", operands=[2])]
    computation = b"".join(_field(2, i) for i in ins) + _field(5, 7)
    order = [1, 2, 3, 4, 5, 6]
    sequence = _field(1, b"".join(_varint(i) for i in order))
    schedule = _field(1, _field(1, 7) + _field(2, sequence))
    module = _field(3, computation) + _field(6, 7) + _field(7, schedule)
    scheduled = hlo.entry_schedule(_field(1, module))
    assert [i["name"] for i in scheduled][:2] == ["p", "all-gather-start"]
    # a custom call and a loop fusion 1000 each, an input fusion 1
    assert hlo.windows(scheduled) == [("all-gather-start", 3, 2001)]
    assert hlo.node_cost({"opcode": "fusion", "fusion_kind": "kOutput"}) == 5000
    assert hlo.node_cost({"opcode": "bitcast", "fusion_kind": ""}) == 0


def test_the_hlo_reader_walks_a_while_body_too():
    import paxml56_hlo_windows as hlo

    def computation(cid: int, name: str, ins: list[bytes]) -> bytes:
        return _field(1, name) + b"".join(_field(2, i) for i in ins) + _field(5, cid)

    def sequence(cid: int, ids: list[int]) -> bytes:
        return _field(1, _field(1, cid) + _field(2, _field(1, b"".join(_varint(i) for i in ids))))

    body = [_instruction(11, "reduce-scatter-start.1", "async-start", operands=[]),
            _instruction(12, "conv", "convolution"),
            _instruction(13, "reduce-scatter-done.1", "async-done", operands=[11])]
    entry = [_instruction(1, "p", "parameter")]
    module = (_field(3, computation(7, "main", entry)) + _field(3, computation(8, "body", body))
              + _field(6, 7) + _field(7, sequence(7, [1]) + sequence(8, [11, 12, 13])))
    name, ordered = hlo.schedules(_field(1, module))
    assert name == "main" and set(ordered) == {"main", "body"}
    # a convolution is charged 5000: the latency the estimator gives the reduce-scatter
    assert hlo.windows(ordered["body"]) == [("reduce-scatter-start.1", 1, 5000)]
