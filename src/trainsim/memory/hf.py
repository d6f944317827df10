"""Activations a Hugging Face decoder layer keeps for its backward, as autograd saves them.

The eager modules save what their PyTorch ops need (``LlamaRMSNorm``: the fp32 upcast and the
16-bit normalized tensor; rotate-half RoPE: nothing but the cos/sin tables; SDPA: the rotated
queries and keys, the values, its output and the log-sum-exp; ``act_fn(gate) * up``: the gate
and up projections, the activation and the product the down projection reads), each linear its
input. Under ``torch.compile`` Inductor recomputes the cheap elementwise ops in the backward and
keeps the norms' inputs, the attention tensors and the MLP's gate, up and product.

Per token, with ``h`` the hidden size and ``q``, ``kv``, ``f`` the local query, key/value and
MLP widths (16-bit elements, bytes), the layer's output included:

* eager: ``16 h + 4 q + 4 kv + 8 f``; Qwen3's per-head q/k norms add ``6 (q + kv)``; Gemma 2/3
  keep 8 bytes an element in every norm (``GEMMA_NORM_PER_ELEMENT``): its post-sublayer norms
  add ``2 x 8 h``, its pre-norms ``2 x 2 h`` over Llama's, Gemma 3's q/k norms ``8 (q + kv)``;
* compiled: ``6 h + 4 q + 4 kv + 6 f``;
* a model that copies GQA's K and V to every query head before the kernel (eager,
  ``workload.shard.kv_repeated``) adds ``4 (q - kv)`` (``repeated_kv_bytes``).

* a plain PyTorch loop (fp32 parameters under ``torch.autocast``, ``autocast_fp32_params``),
  eager: ``26 h + 4 q + 4 kv + 8 f`` (``AUTOCAST_PER_TOKEN``, the layer's fp32 input included).

Checked on the 33 layers of ``layers_h100_measured.jsonl`` (transformers 5.17, torch 2.11,
``torch.cuda.memory_allocated`` around the forward): over the 20 eager Llama layers a least-
squares fit of bytes per token on (h, q, kv, f) returns 16.0, 4.0, 4.0 and 8.0, and the seven
compiled ones sit on 6, 4, 4, 6 within 0.3 %; Qwen3's q/k norms on 6.
"""

from __future__ import annotations

from trainsim.catalog.frameworks import profile_supports
from trainsim.config import RunConfig
from trainsim.workload.hf_activations import gated_saved_beyond_fused
from trainsim.workload.shard import kv_repeated

EAGER_PER_TOKEN = {"h": 16, "q": 4, "kv": 4, "f": 8, "qk_norm": 6}
COMPILED_PER_TOKEN = {"h": 6, "q": 4, "kv": 4, "f": 6, "qk_norm": 2}
GEMMA_NORM_PER_ELEMENT = 8
"""Bytes a Gemma 2/3 RMSNorm keeps per element under eager modules: it normalizes and weighs
in fp32 and casts only its result, ``output = self._norm(x.float()); output = output * (1.0 +
self.weight.float()); return output.type_as(x)`` (transformers 5.24.0 modeling_gemma2.py
``Gemma2RMSNorm.forward`` lines 58-63; ``Gemma3RMSNorm`` the same), so autograd saves the fp32
input (``pow`` and the first ``mul``) and the fp32 normed tensor (the weight's ``mul``): 4 + 4,
where Llama's norm (``self.weight * hidden_states.to(input_dtype)``) saves a 16-bit one: 6
(``LLAMA_NORM_PER_ELEMENT``). All of a Gemma 2/3 layer's RMSNorms are such modules: the input
and pre-feedforward norms (priced within ``EAGER_PER_TOKEN["h"]`` at Llama's 6, so 2 more
bytes each), the two post norms and Gemma 3's ``q_norm``/``k_norm`` (``Gemma3RMSNorm(dim=
config.head_dim)``, modeling_gemma3.py lines 310-311). Gemma 1's ``GemmaRMSNorm`` computes
the same way, but no ModelConfig field marks a Gemma 1 model (its norms are priced at 6)."""
LLAMA_NORM_PER_ELEMENT = 6
"""Bytes Llama's eager RMSNorm keeps per element (fp32 input, 16-bit normed tensor), Qwen3's
q/k norms the same (``EAGER_PER_TOKEN["qk_norm"]``)."""
FUSED_NORM_PER_ELEMENT = 2
"""Bytes an apex FusedRMSNorm keeps per element: its 16-bit input (and an fp32 scalar a row),
``ctx.save_for_backward(input_, weight_, invvar)`` unless memory_efficient (NVIDIA/apex@6424da3b
apex/normalization/fused_layer_norm.py L202-220), where a framework swaps it in for the eager
modules' norms (profile ``fused_norm_modules``: Colossal-AI's shardformer, which leaves
memory_efficient off)."""
OUTPUT_PER_H = 2
"""The layer's 16-bit output, counted in the per-token sums above; not kept by this layer."""
AUTOCAST_PER_TOKEN = {"h": 26, "q": 4, "kv": 4, "f": 8, "qk_norm": 6}
"""Bytes per token a Hugging Face Llama-style layer keeps under ``torch.autocast`` with fp32
parameters (a plain PyTorch loop), read from the modules (huggingface/transformers@00c238bd
models/llama/modeling_llama.py ``LlamaRMSNorm``, ``LlamaAttention``, ``LlamaMLP``) and
autocast's cast rule (pytorch/pytorch@cfed411f aten/src/ATen/autocast_mode.cpp
``cached_cast``: only fp32 leaves that require grad, the weights, are cast once and cached;
an activation is cast again for every matmul that reads it). The embedding runs in fp32, so
the residual stream is fp32: each RMSNorm keeps its fp32 input (``pow`` and the first
``mul``; the layer's input for the first norm) and its fp32 normalized tensor (the weight's
``mul``: ``to(input_dtype)`` is fp32 here), 8 h each; q, k and v each keep their own 16-bit
cast of the fp32 norm output (6 h), gate and up theirs (4 h); the attention and the MLP keep
what they keep in 16 bits (4 q + 4 kv: RoPE's fp32 output is cast to 16 bits for the kernel,
which keeps it; 8 f). The layer's fp32 output is the next layer's input (counted there). The
``h200_2026-11-27`` whole-step probes (benchmarks/training_h200_steps*.csv: Llama 3.2 1B/3B and
Qwen2.5 0.5B-3B, sdpa and eager) sit 0.06-0.26 GiB above this count at every row, where the
16-bit layout's 14 h left them 6-18 % off (tests/test_memory_autocast.py)."""


def applies(cfg: RunConfig, recompute: str, moe: bool) -> bool:
    """The Hugging Face layout: HF modules, a dense RMSNorm/gated layer, no recompute."""
    m = cfg.model
    return (cfg.training.modules == "eager" and recompute == "none" and not moe
            and not m.is_mla and not m.parallel_block and m.normalization == "rmsnorm"
            and m.activation == "swiglu")


def repeated_kv_bytes(cfg: RunConfig, q: float, kv: float) -> float:
    """Bytes per token a layer keeps beyond the KV heads' K and V where the model copies them
    to every query head before the attention kernel (``workload.shard.kv_repeated``): the
    kernel saves its inputs for the backward, the 16-bit K and V of all ``q`` query-head
    columns, and nothing else keeps the ``kv``-wide tensors they were copied from (RoPE's
    backward needs only its cos/sin tables, the repeat's none: ``expand`` and ``reshape``
    save shapes), so K and V cost 2 x 2 x (q - kv) bytes more. Eager only: compiled, the
    repeat is one more cheap op in the graph that AOTAutograd's min-cut partitioner may
    recompute from the KV-head tensors (not measured here, so not counted)."""
    if cfg.training.compile or not kv_repeated(cfg) or kv >= q:
        return 0.0
    return 2.0 * 2.0 * (q - kv)


def autocast_fp32_params(cfg: RunConfig) -> bool:
    """Whether the eager modules run under ``torch.autocast`` on fp32 parameters: a plain
    PyTorch loop (``data_parallel_impl`` ddp: DistributedDataParallel keeps the fp32 module,
    memory.state ``_ddp``) training in a 16-bit dtype, not compiled."""
    t = cfg.training
    return (cfg.parallel.data_parallel_impl == "ddp" and t.dtype in ("bf16", "fp16")
            and not t.compile and t.modules == "eager")


def hf_layer_bytes(cfg: RunConfig) -> float:
    """Bytes one Hugging Face layer keeps for its backward per micro-batch on one rank."""
    m, p, t = cfg.model, cfg.parallel, cfg.training
    per = COMPILED_PER_TOKEN if t.compile else EAGER_PER_TOKEN
    tokens = t.micro_batch_size * t.seq_length / p.cp
    q, kv = m.q_size / p.tp, max(m.kv_size / p.tp, m.kv_channels)
    if autocast_fp32_params(cfg):
        per, output = AUTOCAST_PER_TOKEN, 0
    else:
        output = OUTPUT_PER_H
    width = (per["h"] - output) * m.hidden_size + per["q"] * q + per["kv"] * kv \
        + per["f"] * m.ffn_size / p.tp + repeated_kv_bytes(cfg, q, kv)
    if m.hidden_act is not None and not t.compile:  # a gate whose module is a Python formula
        # keeps its chain's tensors (workload.hf_activations.gated_chain) where per["f"] holds
        # a one-kernel gate's input and output
        width += gated_saved_beyond_fused(
            m.hidden_act, p.data_parallel_impl == "ddp" and t.dtype != "fp8") * m.ffn_size / p.tp
    # Gemma 2/3's RMSNorm (the post_sublayer_norm models) weighs in fp32 under eager modules:
    # every norm of the layer keeps GEMMA_NORM_PER_ELEMENT where Llama's keeps 6
    gemma = m.post_sublayer_norm and not t.compile
    norm = GEMMA_NORM_PER_ELEMENT if gemma else per["qk_norm"]
    if m.qk_layernorm:  # Gemma 3's q_norm/k_norm are Gemma3RMSNorm too
        width += norm * (q + kv)
    if m.post_sublayer_norm:  # Gemma 2/3's post-attention and post-feedforward norms
        # feed the residual add, which saves nothing: each keeps its fp32 input and fp32
        # normed tensor (eager), its 16-bit input (compiled, as a q/k norm)
        width += 2 * norm * m.hidden_size
    if gemma:  # the input and pre-feedforward norms, inside per["h"] at Llama's 6 each
        width += 2 * (GEMMA_NORM_PER_ELEMENT - LLAMA_NORM_PER_ELEMENT) * m.hidden_size
    elif per is EAGER_PER_TOKEN and profile_supports(cfg, "fused_norm_modules"):
        # the input and post-attention norms swapped for apex's kernel (mech63)
        width -= 2 * (LLAMA_NORM_PER_ELEMENT - FUSED_NORM_PER_ELEMENT) * m.hidden_size
    return tokens * width
