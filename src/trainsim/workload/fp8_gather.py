"""Which parameters a run all-gathers in fp8 (one byte an element) and at what mean width: the
one home of the rule that FSDP's unit gathers (``workload.sharding.fsdp_unit_gathers``) and the
distributed optimizer's parameter gathers (``param_gather_width``: the simulator's task graph and
the search's bounds, ``search.layout_costs``) both read."""

from __future__ import annotations

from trainsim.config import RunConfig
from trainsim.workload.ops import ACT_BYTES as ACT

FP8_GATHER_MIN_ELEMENTS = 16
"""A block's tensor of at least this many times ``hidden_size`` elements is a matmul weight
(the smallest, a K or V projection, has ``hidden_size * head_dim``); norms and biases have a
few ``hidden_size`` at most and stay 16-bit. FSDP's per-unit gathers sort each tensor so; the
distributed optimizer's bucket width (``param_gather_width``) takes a stage's whole block
parameters as fp8 (``memory.params.stage_layer_params``: norms, a 1e-4 share, and a router
counted in), from which tensors it does not sort."""


def fp8_weights_gathered(cfg: RunConfig) -> bool:
    """Whether the run keeps its blocks' matmul weights in fp8 and all-gathers them at one byte
    (fp8 GEMMs and ``training.fp8_param_gather``): the one switch FSDP's unit gathers and the
    distributed optimizer's parameter gathers both read (the latter also needs a uint8 buffer,
    ``FP8_BUFFER_RECIPES``)."""
    return cfg.training.dtype == "fp8" and cfg.training.fp8_param_gather


FP8_BUFFER_RECIPES = frozenset({"delayed", "current", "blockwise"})
"""fp8 recipes whose weights Megatron-core's distributed optimizer gathers at one byte each.

With ``--fp8-param-gather`` the matmul weights are Transformer Engine quantized tensors; DDP
keeps them in a parameter buffer of their own, ``torch.uint8`` ("data is stored in the form of a
torch uint8 tensor within the Float8Tensor's '.data' attribute", Megatron-LM core_v0.14.0
megatron/core/distributed/distributed_data_parallel.py L226-L233; core_v0.8.0 the same), and
``_ParamAndGradBucketGroup.start_param_sync`` all-gathers each bucket's ``param_data``: one
byte per element (``is_float8tensor``: TE 1.x ``Float8Tensor``, TE 2.x any
``QuantizedTensor``, so per-tensor and blockwise scaling alike; fp8_utils.py L82-L90). MXFP8
weights are the exception: under the distributed optimizer their bucket's ``param_data`` is a
view of the gradient buffer in bf16 (param_and_grad_buffer.py L684-L697, "Create a shared
buffer for param AG and grad RS"), two bytes per element. NeMo's Apex-based distributed Adam
(the MLPerf v4.x NeMo code) does the same for its fp8 parameters (NVIDIA/NeMo
nemo/core/optim/distributed_adam.py ``MegatronDistributedFusedAdam.init_params``:
``param_sync_dtype=torch.uint8``; ``_param_copy_fragments``: "Expected FP8 params to perform
param sync in UINT8"). Norms, biases, the embedding and the output layer are not quantized and
stay in the 16-bit buffer."""


def param_gather_width(cfg: RunConfig, params: float, fp8_params: float) -> float:
    """Mean bytes per element of the distributed optimizer's parameter all-gather over
    ``params`` elements of which ``fp8_params`` are matmul weights (``FP8_BUFFER_RECIPES``):
    16-bit unless the run keeps its weights in fp8 (``training.fp8_param_gather``)."""
    if not fp8_weights_gathered(cfg) or cfg.training.fp8_recipe not in FP8_BUFFER_RECIPES \
            or params <= 0:
        return float(ACT)
    fp8 = min(max(fp8_params, 0.0), params)
    return (fp8 + (params - fp8) * ACT) / params


__all__ = ["FP8_BUFFER_RECIPES", "FP8_GATHER_MIN_ELEMENTS", "fp8_weights_gathered",
           "param_gather_width"]
