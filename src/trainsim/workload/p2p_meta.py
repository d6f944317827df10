"""The messages of one pipeline exchange where each tensor travels with its metadata (profile
``p2p_tensor_metadata``): nanotron's ``P2P`` (huggingface/nanotron@e24d2483
src/nanotron/parallel/pipeline_parallel/p2p.py L207-L356).

``P2P.send_tensors`` sends one tensor at a time, each after two blocking metadata messages
(``_send_meta``): a first int64 tensor of seven fields (ranks of shape and stride, contiguity,
storage size and offset, dtype, requires_grad), then the shape and the stride, each copied from
a host tensor into a device buffer and sent with ``dist.send``; the receiver reads both back
into Python (``_recv_meta``) before it posts the tensor's ``irecv``, and the sender waits for
the tensor's ``isend``. ``PipelineTrainBatchState.run_communication`` (state.py) runs the
transfers one after another. A Llama stage boundary carries two tensors forward, the hidden
states and the sequence mask (models/llama.py L841-L842: every decoder-layer ``PipelineBlock``
takes and returns ``{"hidden_states", "sequence_mask"}``), and one backward, the hidden states'
gradient (the mask takes none). Message sizes only: ``simulator`` prices each message as a pipeline
send (``pipeline.pipeline_send_s``) and folds their sum into the pass that sends."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainsim.workload.shard import Shard

FIRST_METADATA_BYTES = 7 * 8
"""``P2P.first_metadata``: seven int64 fields (p2p.py ``FIRST_METADATA_SIZE = 7``)."""


def _tensor_messages(ndim: int, data_bytes: float) -> list[float]:
    """The three messages of one tensor: the first metadata, its shape and stride (int64 each),
    the data."""
    return [FIRST_METADATA_BYTES, 2 * ndim * 8, data_bytes]


def exchange_messages(sh: Shard, act_bytes: float, forward: bool) -> list[float]:
    """Bytes of each message, in order, that a pass sends its neighbour: forward the hidden
    states (``act_bytes``, [sequence, batch, hidden]) and the sequence mask (bool, [batch,
    sequence]); backward the hidden states' gradient."""
    hidden = _tensor_messages(3, act_bytes)
    if not forward:
        return hidden
    return hidden + _tensor_messages(2, float(sh.tokens))
