"""The router of an MoE layer as Megatron-core runs it: its gating GEMM, the random logits of
benchmark runs that force a balanced load, the top-k with its load-balancing loss, and the
casts of a router kept in fp32.

* Gating (``TopKRouter.gating``): ``router_gating_linear`` (megatron/core/transformer/moe/
  moe_utils.py ``RouterGatingLinearFunction``, core_v0.13.0-core_v0.17.0) runs the 16-bit input
  and weight through ``te_general_gemm`` with an output in ``moe_router_dtype``; its backward
  casts the weight and the input to that dtype (``weight.to(ctx.router_dtype)``,
  ``inp.to(ctx.router_dtype)``), runs both gradient GEMMs in it and casts the two gradients back
  (``grad_input[0].to(ctx.input_dtype)``, ``grad_weight[0].to(ctx.weight_dtype)``): four copy
  kernels in the backward of an fp32 router (``ROUTER_GRAD_CASTS``). Core 0.12 cast the input and
  weight in the forward instead (router.py ``gating``): the same four kernels, two a pass
  earlier. The two gradient GEMMs are priced at the 16-bit rate here (Transformer Engine runs an
  all-fp32 GEMM in TF32, transformer_engine/common/gemm/cublaslt_gemm.cu "Use TF32 only for pure
  FP32 GEMM"; they are ~E/h of the layer's attention projections).
* Forced balance (``moe_router_force_load_balancing``, ``TopKRouter.forward``): the logits are
  replaced by ``apply_random_logits`` = ``RandomSTE``, whose forward is
  ``logits.clone().normal_(generator=...)`` (a copy and a fill, ``FORCE_BALANCE_KERNELS``) and
  whose backward passes the gradient through unchanged (core_v0.13.0-core_v0.15.0
  moe_utils.py). Megatron-Bridge's performance recipes set it for every MoE workload from
  v0.2.0 (NeMo 25.11; scripts/performance/configs/{deepseek,gpt_oss,qwen3}/*_llm_pretrain.py
  ``cfg.model.moe_router_force_load_balancing = True``, "required for token dropless"; v0.4.0
  scripts/performance/configs/{deepseek,gpt_oss,qwen}/*.py the same), the profile's
  ``moe_router_force_balance``. At v0.1.0rc3 (25.09) only ``run_script.py``'s DeepEP DeepSeek-V3
  runs set it, so that release's profile leaves it off.
* Top-k and loss: ``workload.moe_block.MOE_KERNELS["router"]``, the unfused top-k and load-balancing
  loss of core 0.13. Megatron-Bridge's recipes also set ``moe_router_fusion`` (Transformer
  Engine's ``fused_topk_with_score_function``, ``fused_compute_score_for_moe_aux_loss`` and
  ``fused_moe_aux_loss``: about 8 kernels forward and 6 backward instead of 28 and 12); that is
  not modelled here (benchmarks/RESULTS.md 2026-11-24, 13th session: it makes every Bridge MoE
  row faster, and those rows are already predicted too fast).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainsim.catalog.frameworks import profile_supports
from trainsim.workload.moe_dispatch import ROUTER_DTYPE_BYTES
from trainsim.workload.ops import ACT_BYTES, Elementwise, Gemm, Op

if TYPE_CHECKING:
    from trainsim.config import RunConfig

FORCE_BALANCE_KERNELS = 2
"""``RandomSTE.forward``: ``logits.clone()`` and ``.normal_()`` (no backward kernel)."""
FAKE_GATE_KERNELS = 5
"""NeMo Automodel's ``FakeBalancedGate.forward`` (nemo_automodel/components/moe/layers.py @
89e3a9fd): ``torch.ones(tokens, k)`` and its division by k (the weights), ``torch.arange(tokens *
k)`` and its ``% n_experts`` (the indices), ``weights.type_as(x)``. No gating weight, no top-k,
no auxiliary loss; the outputs come from constants, so autograd records nothing to run back."""
ROUTER_GRAD_CASTS = 4
"""``RouterGatingLinearFunction.backward`` in fp32: weight and input up, both gradients down."""


def force_balance_op(cfg: RunConfig, tokens: int, experts: int) -> Elementwise | None:
    """The random logits of a forced-balance benchmark run: the logits (in the router's dtype)
    copied (read and write) and overwritten with normal samples (write); None where the run's
    framework profile does not force the balance, or where the run drops tokens (Megatron-Bridge
    v0.2.0 scripts/performance/utils/helpers.py: ``use_tokendrop`` sets
    ``moe_router_force_load_balancing = False``)."""
    if not profile_supports(cfg, "moe_router_force_balance") \
            or cfg.model.moe_capacity_factor is not None:
        return None
    elem = ROUTER_DTYPE_BYTES[cfg.parallel.moe_router_dtype]
    return Elementwise("router_random_logits", bytes=3 * tokens * experts * elem,
                       kernels=FORCE_BALANCE_KERNELS, bwd_bytes=0.0, bwd_kernels=0)


def fp32_grad_casts(cfg: RunConfig, tokens: int, hidden: int, experts: int) -> Elementwise | None:
    """The backward casts of an fp32 router: the 16-bit input (``tokens x hidden``) and weight
    (``experts x hidden``) read and written in fp32, and their fp32 gradients written back in 16
    bits, 6 bytes per element each way; nothing in the forward. None for a 16-bit router."""
    if cfg.parallel.moe_router_dtype != "fp32":
        return None
    moved = 2 * (tokens + experts) * hidden * (ACT_BYTES + ROUTER_DTYPE_BYTES["fp32"])
    return Elementwise("router_fp32_casts", bytes=0.0, kernels=0, bwd_bytes=moved,
                       bwd_kernels=ROUTER_GRAD_CASTS)


def router_ops(cfg: RunConfig, tokens: int, kernels: tuple[int, int]) -> list[Op]:
    """The router's forward ops for ``tokens`` routed tokens, in issue order; ``kernels`` are the
    top-k's and loss's (forward, backward) launches. The casts come first so that their backward
    runs after the gating GEMM's (``workload.layers.backward_of`` reverses the list)."""
    m = cfg.model
    h, experts = m.hidden_size, m.num_experts or 1
    if m.moe_router == "fake_balanced":  # the gate of Automodel's benchmarks: no GEMM, no top-k
        k = m.moe_router_topk
        # fp32 ones written, divided out of place (read, write); int64 arange written, modulo
        # (read, write); the weights cast to the 16-bit dtype (read 4, write 2)
        return [Elementwise("router_fake_balanced", bytes=tokens * k * (4 * 3 + 8 * 3 + 6),
                            kernels=FAKE_GATE_KERNELS, bwd_bytes=0.0, bwd_kernels=0)]
    casts = fp32_grad_casts(cfg, tokens, h, experts)
    ops: list[Op] = [casts] if casts is not None else []
    ops.append(Gemm("router", m=tokens, n=experts, k=h, dtype="bf16"))
    random = force_balance_op(cfg, tokens, experts)
    if random is not None:
        ops.append(random)
    ops.append(Elementwise("router_topk_softmax", bytes=tokens * experts * 4 * 2,
                           kernels=kernels[0], bwd_kernels=kernels[1]))
    return ops
