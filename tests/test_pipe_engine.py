"""DeepSpeed's PipelineEngine: two blocking transfers per step, TP-partitioned sends rebuilt by
all-gathers on the receiving stage."""

from __future__ import annotations

from trainsim import run_config_from_dict
from trainsim.pricing import Pricer
from trainsim.simulator import build_graph


def cfg(framework="megatron-deepspeed", tp=8, pp=4, version="2022-02", **parallel):
    training = {"framework": framework, "framework_version": version} if framework else {}
    return run_config_from_dict(
        {
            "model": {"preset": "gpt3-175b", "num_layers": 8},
            "parallel": {"tp": tp, "pp": pp, "distributed_optimizer": True, **parallel},
            "training": {
                "global_batch_size": 64,
                "micro_batch_size": 1,
                "seq_length": 2048,
                "dtype": "fp16",
                **training,
            },
            "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": 8 * tp * pp, "gpus_per_node": 8},
        }
    )


def _gathers(priced):
    return [name for _, _, name in priced.segments if name == "pipe_partition_all_gather"]


def test_a_sending_pass_waits_for_its_send_and_the_serialized_receive():
    """Megatron sends once after a pass; DeepSpeed's step sends and receives one after the
    other, each a 1/tp slice and its meta tensor."""
    c = cfg()
    ds = build_graph(c, Pricer(c)).send
    m = cfg(framework=None)
    megatron = build_graph(m, Pricer(m)).send
    assert len(megatron.segments) == 1 and len(ds.segments) == 2
    assert ds.duration_s > 2 * megatron.duration_s


def test_receiving_stages_all_gather_the_partitioned_tensors():
    """A forward that received its input gathers it once; a backward that received a gradient
    gathers twice (the output it partitioned, the gradient); the first stage's forward and the
    last stage's backward receive nothing."""
    c = cfg()
    chunks = build_graph(c, Pricer(c)).chunks
    assert _gathers(chunks[0].fwd) == [] and len(_gathers(chunks[1].fwd)) == 1
    assert len(_gathers(chunks[0].bwd)) == 2 and _gathers(chunks[3].bwd) == []
    m = cfg(framework=None)
    assert all(
        _gathers(ch.fwd) + _gathers(ch.bwd) == []
        for ch in build_graph(m, Pricer(m)).chunks.values()
    )
    one = cfg(tp=1)
    assert all(
        _gathers(ch.fwd) + _gathers(ch.bwd) == []
        for ch in build_graph(one, Pricer(one)).chunks.values()
    )


def test_rebuilding_a_partition_costs_its_copies_and_a_host_wait():
    """PartitionedTensor.full() after from_meta: the host reads the meta (a wait), the flat
    buffer is zero-filled, the list all-gather copies each TP rank's piece out (tp copies of
    the whole tensor's bytes, read and written) and the result is cloned; the forward also
    clones what it received. Each rebuild is priced above its all-gather."""
    from trainsim.workload.ops import Comm, Elementwise
    from trainsim.workload.pipe_engine import deepspeed_pipe_gathers
    from trainsim.workload.shard import shard_of

    c = cfg()
    sh = shard_of(c)
    fwd, bwd = deepspeed_pipe_gathers(c, sh)
    full = sh.tokens * c.model.hidden_size * 2
    out = [op for op in fwd if op.name == "pipe_partition_unflatten"]
    assert len(out) == 1 and out[0].kernels == 8 and out[0].bytes == 2 * full
    assert sum(isinstance(op, Elementwise) and op.host_sync for op in fwd) == 1
    assert sum(isinstance(op, Elementwise) and op.host_sync for op in bwd) == 2
    assert [op.name for op in fwd if isinstance(op, Comm)] == ["pipe_partition_all_gather"]
    pricer = Pricer(c)
    gather = pricer.price([op for op in fwd if isinstance(op, Comm)])
    assert pricer.price(fwd).duration_s > gather.duration_s


def test_the_pipe_rebuild_and_zero3_share_one_list_all_gather_rule():
    """A partition rebuild and a ZeRO-3 parameter gather both all-gather into a list of views:
    the same fill, gather and one copy out per rank (sharding.list_all_gather_ops), each with
    its own step before the gather (the rank's slice copied in; the host synchronize)."""
    from trainsim.workload.pipe_engine import partitioned_full
    from trainsim.workload.shard import shard_of
    from trainsim.workload.sharding import list_all_gather_ops

    c = cfg()
    full = shard_of(c).tokens * c.model.hidden_size * 2
    shared = [op for op in list_all_gather_ops("pipe_partition", full, 8, "tp")]
    ops = partitioned_full(c, full)
    assert [op for op in ops if op.name in {o.name for o in shared}] == shared
    assert [op.name for op in ops].index("pipe_partition_local_copy") == 2


def test_first_and_last_stage_load_each_micro_batch_through_megatrons_batch_fn():
    """DeepSpeed's LoadMicroBatch on the first and last stage runs Megatron-DeepSpeed's
    get_batch_pipe (broadcast_data: sizes copied in, broadcast over TP, read back by the host;
    rank 0's tokens copied in and broadcast; tokens/labels split; causal mask, loss mask and
    position ids), and the first stage clones its three inputs twice. Hand count for one
    sequence of 2048 tokens."""
    from trainsim.workload.ops import Comm, Elementwise
    from trainsim.workload.pipe_engine import deepspeed_load_micro_batch

    c = cfg()
    s = 2048
    first = deepspeed_load_micro_batch(c, True, False)
    last = deepspeed_load_micro_batch(c, False, True)
    assert deepspeed_load_micro_batch(c, False, False) == []
    assert [op.name for op in first] == [
        "batch_sizes_h2d", "batch_sizes.broadcast", "batch_sizes_d2h", "batch_tokens_h2d",
        "batch_tokens.broadcast", "batch_tokens_labels", "batch_ltor_masks",
        "pipe_input_clones"]
    assert last == first[:-1]
    by = {op.name: op for op in first}
    assert by["batch_sizes.broadcast"].bytes == 5 * 8  # _MAX_DATA_DIM int64 sizes
    assert by["batch_tokens.broadcast"].bytes == 8 * (s + 1)  # tokens_ with one extra id
    assert all(isinstance(by[n], Comm) and by[n].group == "tp" and by[n].kind == "broadcast"
               for n in ("batch_sizes.broadcast", "batch_tokens.broadcast"))
    # LongTensor(sizes) and rank 0's .cuda() copy in synchronously; .cpu() reads back
    assert [op.name for op in first if isinstance(op, Elementwise) and op.host_sync] == [
        "batch_sizes_h2d", "batch_sizes_d2h", "batch_tokens_h2d"]
    assert by["batch_tokens_labels"].bytes == 2 * (8 * s + 8 * s)  # two int64 copies
    # ones (write fp32), tril (read + write fp32), < 0.5 (read fp32, write bool) over s x s;
    # loss mask ones (fp32, b x s); arange (int64, s)
    assert by["batch_ltor_masks"].bytes == 17 * s * s + 4 * s + 8 * s
    assert by["batch_ltor_masks"].kernels == 5
    # load: tokens (r+w), position ids (read s, write b s), mask (bool r+w); forward: the
    # three contiguous tensors cloned again
    clones = (16 * s + 8 * (s + s) + 2 * s * s) + (16 * s + 16 * s + 2 * s * s)
    assert by["pipe_input_clones"].bytes == clones and by["pipe_input_clones"].kernels == 6
    # a stage both first and last loads once, clones included; at pp 1 too (GPTModelPipe
    # under --deepspeed at any pp: the PipelineEngine's one stage still loads each micro-batch)
    assert deepspeed_load_micro_batch(cfg(pp=1), True, True) == first
    assert [op.name for op in deepspeed_load_micro_batch(cfg(tp=1), True, False)] == [
        "batch_sizes_h2d", "batch_sizes_d2h", "batch_tokens_h2d", "batch_tokens_labels",
        "batch_ltor_masks", "pipe_input_clones"]  # no broadcast over a one-rank TP group
    # Megatron's own pipeline schedule: no LoadMicroBatch
    assert deepspeed_load_micro_batch(cfg(framework=None), True, True) == []


def test_the_load_runs_before_the_first_and_last_stage_forward_only():
    """Placed in the simulated chunks: the first and the last stage's forward carry the load
    (the host waits there, so the forward grows), the middle stages' do not."""
    c = cfg()
    chunks = build_graph(c, Pricer(c)).chunks

    def names(p):
        return [name for _, _, name in p.segments]

    assert "batch_tokens.broadcast" in names(chunks[0].fwd)
    assert "batch_tokens.broadcast" in names(chunks[3].fwd)
    assert all("batch_tokens.broadcast" not in names(chunks[v].fwd) for v in (1, 2))
    assert all("batch_tokens.broadcast" not in names(ch.bwd) for ch in chunks.values())


def _names(priced):
    return [name for _, _, name in priced.segments]


def test_deepspeed_reads_the_loss_to_the_host_before_the_loss_stages_backward():
    """DeepSpeed v0.9.3-v0.13.2's engine backward reads ``loss.mean().item()`` every
    micro-batch on the stage holding the loss (the pipe engine's last stage): the host waits
    for the forward, so the head backward's first launches are exposed. Not on the other
    stages, not before v0.9.3 (BLOOM's 2022 fork) nor from v0.13.3 on."""
    from trainsim.workload.pipe_engine import deepspeed_loss_read

    def at(version, framework="megatron-deepspeed"):
        return cfg(framework=framework, tp=2, pp=2, version=version)

    new = at("2023-07-12")
    read = deepspeed_loss_read(new)
    assert [op.name for op in read] == ["ds_loss_scale_by_gas", "ds_loss_mean", "ds_loss_item",
                                        "ds_loss_scale"]
    assert [op.host_sync for op in read] == [False, False, True, False]
    chunks = build_graph(new, Pricer(new)).chunks
    assert "ds_loss_item" in _names(chunks[1].bwd) and "ds_loss_item" not in _names(chunks[0].bwd)
    old = at("2022-02")
    before = build_graph(old, Pricer(old)).chunks
    assert all("ds_loss_item" not in _names(ch.bwd) for ch in before.values())
    assert chunks[1].bwd.duration_s > before[1].bwd.duration_s
    assert deepspeed_loss_read(at("2024-03")) == []
    assert deepspeed_loss_read(at("2023-03", framework="deepspeed")) == []
    assert deepspeed_loss_read(at("2023-09", framework="deepspeed")) != []
