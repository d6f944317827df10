"""A context-parallel ring with CP neighbours on both sides of a node's edge (``cp_hops.mixed_ring``):
the NVLink neighbour's kernel holds a collective's SMs only while its own transfer runs, the
network neighbour's 2 for the whole hop (``cp_hops.mixed_ring_hop_sms``,
``pricing.Pricer.cp_hop_share``); checked against the NeMo long-sequence rows it moves."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.collectives.cp_hops import mixed_ring, mixed_ring_hop_sms
from trainsim.pricing import COMM_SMS, P2P_SMS, Pricer
from trainsim.workload.ops import Comm

ROOT = Path(__file__).resolve().parents[1]


def _pricer(tp: int, cp: int) -> Pricer:
    return Pricer(run_config_from_dict({
        "model": "llama2-7b",
        "parallel": {"tp": tp, "pp": 1, "cp": cp, "cp_comm_type": "p2p"},
        "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 32768,
                     "dtype": "bf16", "framework": "megatron-core", "framework_version": "0.12"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8 * tp * cp, "gpus_per_node": 8},
    }))


@pytest.mark.parametrize("tp, cp, p2p_ranks, mixed", [
    (4, 4, 2, True),    # 2 CP ranks a node, 2 nodes: one neighbour each side of the edge
    (2, 8, 2, True),    # 4 a node: the edge ranks pace the ring
    (8, 4, 2, False),   # 1 a node: every neighbour across the network (cp_hop_sms: 4 SMs)
    (1, 4, 2, False),   # one node: every neighbour on NVLink
    (4, 2, 0, False),   # CP 2: one batched send and receive on the group's communicator
])
def test_a_mixed_ring_spans_nodes_with_two_or_more_cp_ranks_a_node_above_cp_2(
        tp, cp, p2p_ranks, mixed):
    assert mixed_ring(_pricer(tp, cp).spans["cp"], p2p_ranks) is mixed


def test_the_nvlink_kernel_counts_only_while_its_transfer_runs():
    # no NVLink time: the network peer's 2; as long as the hop: both kernels, 16 + 2
    assert mixed_ring_hop_sms(1.0, 0.0, COMM_SMS, P2P_SMS) == P2P_SMS
    assert mixed_ring_hop_sms(1.0, 1.0, COMM_SMS, P2P_SMS) == COMM_SMS + P2P_SMS
    assert mixed_ring_hop_sms(1.0, 3.0, COMM_SMS, P2P_SMS) == COMM_SMS + P2P_SMS
    assert mixed_ring_hop_sms(1.0, 0.25, COMM_SMS, P2P_SMS) == pytest.approx(0.25 * 16 + 2)
    assert mixed_ring_hop_sms(0.0, 0.25, COMM_SMS, P2P_SMS) == P2P_SMS


def test_a_mixed_rings_hop_holds_fewer_sms_than_a_collective_and_more_than_a_network_send():
    """TP 4, CP 4 at 32K tokens: a K/V hop's NVLink part is a fraction of its network part."""
    pricer = _pricer(4, 4)
    sms = pricer.cfg.cluster.gpu.num_sms
    hop = Comm("attn_core.te_ring1.kv_send", "send_recv", 64 << 20, "cp",
               overlap_with_previous=True, p2p_ranks=2)
    t = pricer.comm_time(hop)
    share = pricer.cp_hop_share(hop, t)
    assert P2P_SMS / sms < share < COMM_SMS / sms
    # outside a mixed ring the hop keeps the flat count
    assert _pricer(8, 4).cp_hop_share(hop, t) == pytest.approx(2 * P2P_SMS / sms)


_PRICE = """
import csv, json, sys
import trainsim.pricing as pricing
from trainsim.validate.training import predict_training_row
if sys.argv[1] == "flat":  # every ring hop at the flat count, as before the mixed ring
    pricing.mixed_ring = lambda span, p2p_ranks: False
rows = list(csv.DictReader(open(sys.argv[2])))
print(json.dumps({r["id"]: [float(r["measured_iteration_s"]), predict_training_row(r).predicted]
                  for r in rows}))
"""


def _priced(variant: str) -> dict[str, list[float]]:
    out = subprocess.run([sys.executable, "-c", _PRICE, variant,
                          str(ROOT / "benchmarks" / "training_nemo_longseq.csv")],
                         check=True, capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin",
                              "PYTHONDONTWRITEBYTECODE": "1"}).stdout
    return json.loads(out)


def test_the_nemo_long_sequence_rows_with_a_mixed_ring_move_toward_their_measured_times():
    """NVIDIA NeMo performance_long_sequence.md (benchmarks/training_nemo_longseq.csv): every
    row whose CP ring is mixed (H100 TP 4 CP 4 / 8, B200 TP 4 CP 4 / 8 / 16) is priced closer
    to its published time than with a collective's 16 SMs for the whole hop; the others do not
    move."""
    now, flat = _priced("mixed"), _priced("flat")
    moved = [rid for rid in now if now[rid][1] != flat[rid][1]]
    assert sorted(moved) == sorted([
        "nemo-longseq-llama2-7b-h100-128k", "nemo-longseq-llama2-7b-h100-256k",
        "nemo-longseq-llama3-8b-b200-256k", "nemo-longseq-llama3-8b-b200-512k",
        "nemo-longseq-llama3-8b-b200-1024k"])
    for rid in moved:
        measured, p = now[rid]
        assert abs(p - measured) < abs(flat[rid][1] - measured), rid
