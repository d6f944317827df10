"""torchtitan's memory under torch's ring attention and torch.distributed.pipelining, against
hand calculations from the torch sources cited in memory/ring_attention.py and estimate.py."""

from __future__ import annotations

import pytest

import trainsim
from trainsim.memory import estimate_stage_memory
from trainsim.memory.ring_attention import ring_backward_bytes

RING = "ring attention backward (K/V, fp32 dQ/dK/dV)"


def _titan(*, cp: int = 1, pp: int = 2, rotate: str = "all_gather", recompute: str = "full",
           seq: int = 32768, batch: int = 8):
    return trainsim.run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"tp": 1, "pp": pp, "cp": cp, "cp_comm_type": rotate, "zero_stage": 3,
                     "data_parallel_impl": "fsdp2", "recompute": recompute},
        "training": {"global_batch_size": batch, "micro_batch_size": 1, "seq_length": seq,
                     "dtype": "bf16", "framework": "torchtitan", "framework_version": "2024-12"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8 * pp, "gpus_per_node": 8},
    })


def test_all_gather_ring_backward_holds_the_gathered_kv_and_fp32_gradients():
    """_templated_ring_attention_backward (torch 2.6): Llama 3 8B, K/V repeated to 32 heads
    (q = k = 2 * 4096 bytes per token), cp 4 on 8192 local tokens, full recompute:
    gathered K/V 4 * 2k, K/V concatenation 2k, fp32 dQ 2q, fp32 dK/dV received and sent
    2 * 2 * 2k, the step's dQ/dK/dV q + 2k; recomputed q, k, v, out, d(out) 3q + 2k and the
    block's norm and QKV inputs 2 * 2 * 4096."""
    q = k = 2 * 4096
    per = 4 * 2 * k + 2 * k + 2 * q + 8 * k + q + 2 * k + 3 * q + 2 * k + 4 * 4096
    temps = dict(estimate_stage_memory(_titan(cp=4), 0).temporaries)
    assert temps[RING] == pytest.approx(8192 * per)
    assert estimate_stage_memory(_titan(cp=4), 0).peak_at.startswith(
        "backward, in a ring attention's backward")


def test_all_to_all_rotater_holds_one_received_kv():
    """The all-to-all rotater (cp_comm_type p2p) holds the previous rank's K/V only: the
    all-gather one's buffer is cp times that, so the two differ by (cp - 1) * 2k per token."""
    k = 2 * 4096
    gathered = ring_backward_bytes(_titan(cp=4), True, 0.0)
    rotated = ring_backward_bytes(_titan(cp=4, rotate="p2p"), True, 0.0)
    assert gathered - rotated == pytest.approx(8192 * 3 * 2 * k)
    # the all-gather one is the peak's buffer (the p2p one is smaller than the recomputed
    # layer, whose SDPA keeps the repeated K/V: memory.hf.repeated_kv_bytes)
    assert dict(estimate_stage_memory(_titan(cp=4), 0).temporaries)[RING] == pytest.approx(
        ring_backward_bytes(_titan(cp=4), True, 2 * 4096 * 2))


def test_no_ring_buffers_without_context_parallelism():
    assert RING not in dict(estimate_stage_memory(_titan(cp=1, seq=8192), 0).temporaries)


def test_pipelining_keeps_each_in_flight_stage_output():
    """stage.py forward_one_chunk keeps output_tuple in fwd_cache until backward_one_chunk:
    under full recompute the first of 2 stages holds, per in-flight micro-batch (2 in 1F1B),
    its 16 layers' inputs and its own output, 2 * 8192 * 4096 bytes each."""
    cfg = _titan(cp=1, seq=8192, batch=32)
    assert cfg.stage_layer_counts[0] == 16 and cfg.num_microbatches == 4
    boundary = 2 * 8192 * 4096
    assert estimate_stage_memory(cfg, 0).activations == pytest.approx(2 * 17 * boundary)


def test_pipelining_stage_input_is_its_receive_buffer():
    """The last of 2 stages (1 micro-batch in flight under 1F1B) keeps its 16 layers' inputs,
    of which the first is the preallocated receive buffer (counted with the pipelining
    buffers, stage.py _retrieve_recv_activations), and the head's final-norm and output-GEMM
    inputs: 15 + 2 boundary tensors."""
    cfg = _titan(cp=1, seq=8192, batch=32)
    boundary = 2 * 8192 * 4096
    assert estimate_stage_memory(cfg, 1).activations == pytest.approx(17 * boundary)



def test_dtensor_sequence_parallel_output_projection_saves_the_gathered_input():
    """torchtitan's TP plan (parallelize_llama.py apply_tp: "output" ColwiseParallel with
    input_layouts Shard(1)) all-gathers the final norm's output before the output projection,
    whose matmul saves it whole. The last of 2 stages at tp 2 (1 micro-batch in flight, full
    recompute): 15 layer inputs (the first is the receive buffer) and the final norm's input,
    each 2 * 8192 * 4096 / 2 bytes, plus the output projection's 2 * 8192 * 4096."""
    cfg = trainsim.run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"tp": 2, "pp": 2, "zero_stage": 3, "data_parallel_impl": "fsdp2",
                     "sequence_parallel": True, "recompute": "full"},
        "training": {"global_batch_size": 32, "micro_batch_size": 1, "seq_length": 8192,
                     "dtype": "bf16", "framework": "torchtitan", "framework_version": "2024-12"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8},
    })
    full = 2 * 8192 * 4096
    assert estimate_stage_memory(cfg, 1).activations == pytest.approx(16 * full / 2 + full)


def test_torch_interleaved_warmup_holds_when_microbatches_equal_stages():
    """torch's ScheduleInterleaved1F1B (pipelining/schedules.py get_rank_warmup_ops) warms up
    with (v-1) pp + 2 (pp-1-rank) forwards, capped at m v, also when m == pp, where Megatron
    runs all m v forwards first. pp 4, v 2, m 4: the last rank 4 warm-up forwards, then
    pairs (5 in flight at the first backward); rank 0 min(4 + 6, 8) = 8."""
    from trainsim.workload.schedule import peak_in_flight, schedule

    assert peak_in_flight(schedule(3, 4, 2, 4)) == 8  # Megatron: every forward first
    assert peak_in_flight(schedule(3, 4, 2, 4, torch_warmup=True)) == 5
    assert peak_in_flight(schedule(0, 4, 2, 4, torch_warmup=True)) == 8
