"""Build the module to capture, on the meta device: a Hugging Face model from its
``config.json`` (no weights), or a user factory ``package.module:factory``.

Kernel patches, each documented where it differs from what eager Hugging Face code runs:

* ``fuse`` (default on): RMSNorm modules run as one fused kernel that keeps its input and a
  per-row fp32 statistic, as Apex/Transformer Engine fused norms do (PyTorch's ``F.rms_norm``
  decomposes into the eager chain off CUDA), instead of the eager fp32 upcast chain; gated
  MLPs (``gate_proj``/``up_proj``/``down_proj``) run a fused SwiGLU that keeps only its two
  inputs and recomputes the activation in backward, as Megatron's ``bias_swiglu_impl`` does;
  dropout runs as ``native_dropout`` (a 1-byte mask, as on GPU) and tanh-GELU as one kernel.
  Without them the layer keeps ~40 % more activation bytes than a Megatron/Transformer
  Engine run (the eager norm keeps an fp32 copy of its input and the eager SwiGLU its
  activation output).
* ``uniform_routing`` (always, for expert blocks whose weights are 3-D ``gate_up_proj`` /
  ``down_proj`` tensors, as transformers 5 stores Mixtral, Qwen-MoE and DeepSeek experts):
  routing is data-dependent and the meta device has no data, so each expert receives exactly
  ``tokens * top_k / experts`` token copies (the uniform routing trainsim and SimAI assume),
  computed as one grouped GEMM per projection (``bmm`` over experts, like Megatron-core's
  GroupedMLP). The router itself (linear, softmax, top-k) runs as written.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from trainsim.capture.recorder import run_fused
from trainsim.errors import ConfigError

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


@dataclass
class Built:
    """A module ready to capture and how to run it."""

    module: nn.Module
    run: Callable[[nn.Module], torch.Tensor]
    """Runs the forward and returns the scalar loss to differentiate."""
    layers_path: str
    """Dotted path of the ModuleList holding the repeated decoder layers."""
    full_num_layers: int
    """Layers of the full model (the built module may hold fewer)."""
    source: str
    hf_config: dict | None = None
    patches: tuple[str, ...] = ()
    full_dense_layers: int = 0
    """Leading dense layers of the full model when it mixes dense and MoE layers."""


def _layers_to_capture(cfg: Any) -> int:
    """One decoder layer, or one dense and one MoE layer where the model mixes them."""
    if getattr(cfg, "first_k_dense_replace", 0):
        cfg.first_k_dense_replace = 1
        return 2
    return 1


def build_hf(config_path: str | Path, batch: int, seq: int, dtype: str = "bf16",
             attention: str = "sdpa", fuse: bool = True) -> Built:
    """A transformers causal LM with ``config_path``'s architecture and 1-2 layers, on meta."""
    try:
        from transformers import AutoConfig, AutoModelForCausalLM
    except ImportError as exc:  # pragma: no cover - optional dependency
        raise ConfigError("capturing a Hugging Face config needs transformers: "
                          "pip install transformers") from exc
    path = Path(config_path)
    try:
        with _quiet_transformers():
            cfg = AutoConfig.from_pretrained(str(path))
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"cannot load Hugging Face config {path}: {exc}") from None
    full = int(cfg.num_hidden_layers)
    dense = int(getattr(cfg, "first_k_dense_replace", 0) or 0)
    cfg.num_hidden_layers = min(full, _layers_to_capture(cfg))
    cfg.use_cache = False
    if getattr(cfg, "max_position_embeddings", seq) < seq:
        cfg.max_position_embeddings = seq
    with torch.device("meta"), _quiet_transformers():
        model = AutoModelForCausalLM.from_config(cfg, dtype=DTYPES[dtype],
                                                 attn_implementation=attention)
    model.train()
    patches = apply_patches(model, fuse)
    raw = json.loads((path / "config.json" if path.is_dir() else path).read_text())

    def run(m: nn.Module) -> torch.Tensor:
        ids = torch.zeros((batch, seq), dtype=torch.long, device="meta")
        with _unpacked_sequences(), _quiet_transformers():
            return m(input_ids=ids, labels=ids, use_cache=False).loss

    return Built(model, run, _find_layers(model), full, str(path), raw, patches, dense)


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """transformers' own warnings about fields a capture never reads (GPT-2's bos/eos token
    ids beyond a small vocabulary, ``loss_type=None``) kept off stderr, where a capture's
    output and its one error line go (fuzz33); its errors still show."""
    from transformers.utils import logging as hf_logging
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)


@contextlib.contextmanager
def _unpacked_sequences() -> Iterator[None]:
    """transformers looks for packed sequences in the position ids (a data-dependent check the
    meta device cannot answer); the captured batch holds one sequence per row."""
    try:
        from transformers import masking_utils
    except ImportError:  # pragma: no cover - older transformers
        yield
        return
    original = getattr(masking_utils, "find_packed_sequence_indices", None)
    if original is None:  # pragma: no cover
        yield
        return
    masking_utils.find_packed_sequence_indices = lambda *a, **k: None
    try:
        yield
    finally:
        masking_utils.find_packed_sequence_indices = original


def build_factory(spec: str, batch: int, seq: int) -> Built:
    """``package.module:factory``: ``factory()`` returns a module, or ``(module, inputs)`` with
    ``inputs`` a tuple of tensors or a callable ``(batch, seq) -> tuple``. Without inputs the
    module is called on ``[batch, seq]`` token ids; the loss is its output's mean (or ``.loss``)."""
    mod_name, _, attr = spec.partition(":")
    if not mod_name or not attr:
        raise ConfigError(f"{spec!r}: expected package.module:factory")
    try:
        factory = getattr(importlib.import_module(mod_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot import {spec}: {exc}") from None
    if not callable(factory):
        raise ConfigError(f"{spec} is a {type(factory).__name__}, not a function returning a "
                          "torch.nn.Module")
    try:
        with torch.device("meta"):
            made = factory()
    except Exception as exc:  # noqa: BLE001 - the user's factory failed: say so in one line
        raise ConfigError(f"{spec}() failed: {type(exc).__name__}: {exc}") from None
    module, inputs = made if isinstance(made, tuple) else (made, None)
    if not isinstance(module, nn.Module):
        raise ConfigError(f"{spec} returned {type(module).__name__}, not a torch.nn.Module")
    module = module.to("meta")
    module.train()
    patches = apply_patches(module, fuse=False)

    def run(m: nn.Module) -> torch.Tensor:
        args = inputs(batch, seq) if callable(inputs) else inputs
        if args is None:
            args = (torch.zeros((batch, seq), dtype=torch.long, device="meta"),)
        out = m(*args) if isinstance(args, tuple) else m(**args)
        loss = getattr(out, "loss", None)
        if loss is None:
            tensor = out if isinstance(out, torch.Tensor) else out[0]
            loss = tensor.float().mean()
        return loss

    layers = _find_layers(module)
    full = len(_get(module, layers)) if layers else 0
    return Built(module, run, layers, full, spec, None, patches)


def _get(root: nn.Module, path: str) -> Any:
    obj: Any = root
    for part in path.split(".") if path else ():
        obj = getattr(obj, part)
    return obj


def _find_layers(model: nn.Module) -> str:
    """The ModuleList of repeated blocks: the one with the most parameters."""
    best, best_params = "", -1
    for name, m in model.named_modules():
        if isinstance(m, nn.ModuleList) and len(m) and len({type(c) for c in m}) == 1:
            params = sum(p.numel() for p in m.parameters())
            if params > best_params:
                best, best_params = name, params
    return best


# ---------------------------------------------------------------------------------- patches

class FusedSwiGLU(torch.autograd.Function):
    """silu(gate) * up as one kernel keeping only (gate, up); the activation is recomputed in
    backward (Megatron-LM ``megatron/core/fusions/fused_bias_swiglu.py``)."""

    @staticmethod
    def forward(ctx, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(gate, up)
        return run_fused("swiglu", lambda g, u: F.silu(g) * u, gate, up)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        gate, up = ctx.saved_tensors

        def bwd(grad, gate, up):
            sig = torch.sigmoid(gate)
            return grad * up * sig * (1 + gate * (1 - sig)), grad * gate * sig
        return run_fused("swiglu_backward", bwd, grad, gate, up)


class FusedRMSNorm(torch.autograd.Function):
    """RMSNorm as one kernel keeping its input and the fp32 inverse RMS per row (Apex / TE
    fused norms; Zhang & Sennrich 2019 for the formula)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        def fwd(x, w):
            rstd = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
            return (x.float() * rstd).to(x.dtype) * w, rstd
        out, rstd = run_fused("rms_norm", fwd, x, weight)
        ctx.save_for_backward(x, weight, rstd)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        x, weight, rstd = ctx.saved_tensors

        def bwd(grad, x, w, rstd):
            xhat = x.float() * rstd
            g = grad.float() * w.float()
            dx = rstd * (g - xhat * (g * xhat).mean(-1, keepdim=True))
            dw = (grad.float() * xhat).sum(dim=tuple(range(x.dim() - 1)))
            return dx.to(x.dtype), dw.to(w.dtype)
        dx, dw = run_fused("rms_norm_backward", bwd, grad, x, weight, rstd)
        return dx, dw, None


def _is_silu(act: Any) -> bool:
    return isinstance(act, nn.SiLU) or getattr(act, "__name__", "") == "silu" or \
        type(act).__name__ in ("SiLUActivation", "SiLU")


def apply_patches(model: nn.Module, fuse: bool) -> tuple[str, ...]:
    done: list[str] = []
    for name, m in model.named_modules():
        gate_up, down = getattr(m, "gate_up_proj", None), getattr(m, "down_proj", None)
        if isinstance(gate_up, nn.Parameter) and gate_up.dim() == 3 and \
                isinstance(down, nn.Parameter):
            fused = fuse and _is_silu(getattr(m, "act_fn", None))  # GPT-OSS: its own gate
            m.forward = types.MethodType(_uniform_experts(fused), m)
            done.append(f"{name}: uniform routing, grouped GEMMs")
            continue
        if not fuse:
            continue
        cls = type(m).__name__
        eps = getattr(m, "variance_epsilon", getattr(m, "eps", None))
        weight = getattr(m, "weight", None)
        if cls.endswith("RMSNorm") and isinstance(weight, nn.Parameter) and weight.dim() == 1 \
                and eps is not None:
            m.forward = types.MethodType(_rms_norm(float(eps)), m)
            done.append(f"{name}: fused RMSNorm")
        elif isinstance(m, nn.Dropout) and m.p > 0:
            m.forward = types.MethodType(_native_dropout, m)
            done.append(f"{name}: dropout with a 1-byte mask")
        elif cls in ("NewGELUActivation", "GELUTanh", "PytorchGELUTanh", "FastGELUActivation"):
            m.forward = types.MethodType(lambda self, x: F.gelu(x, approximate="tanh"), m)
            done.append(f"{name}: fused tanh-GELU")
        elif all(isinstance(getattr(m, a, None), nn.Linear)
                 for a in ("gate_proj", "up_proj", "down_proj")) \
                and _is_silu(getattr(m, "act_fn", None)):
            m.forward = types.MethodType(_fused_mlp, m)
            done.append(f"{name}: fused SwiGLU")
    return tuple(done)


def _rms_norm(eps: float):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return FusedRMSNorm.apply(x, self.weight, eps)
    return forward


def _native_dropout(self, x: torch.Tensor) -> torch.Tensor:
    """Dropout as one kernel saving a bool mask, as on GPU (CPU's F.dropout keeps a 16-bit
    scaled mask from bernoulli_)."""
    return torch.native_dropout(x, self.p, self.training)[0] if self.training else x


def _fused_mlp(self, x: torch.Tensor) -> torch.Tensor:
    return self.down_proj(FusedSwiGLU.apply(self.gate_proj(x), self.up_proj(x)))


def _uniform_experts(fused: bool):
    def forward(self, hidden_states: torch.Tensor, top_k_index: torch.Tensor,
                top_k_weights: torch.Tensor) -> torch.Tensor:
        T, h = hidden_states.shape
        k = top_k_index.shape[-1]
        E = self.gate_up_proj.shape[0]
        rows = math.ceil(T * k / E)
        # permute: each token copied to its k experts, grouped by expert
        x = hidden_states.unsqueeze(1).expand(T, k, h).reshape(T * k, h)
        if rows * E != T * k:
            x = F.pad(x, (0, 0, 0, rows * E - T * k))
        x = x.view(E, rows, h)
        w1 = self.gate_up_proj if self.gate_up_proj.shape[-1] == h else \
            self.gate_up_proj.transpose(1, 2)  # [E, 2f, h]
        w2 = self.down_proj if self.down_proj.shape[-2] == h else self.down_proj.transpose(1, 2)
        gate_up = torch.bmm(x, w1.transpose(1, 2))
        bias = getattr(self, "gate_up_proj_bias", None)
        if isinstance(bias, torch.Tensor):
            gate_up = gate_up + bias.unsqueeze(1)
        if not hasattr(self, "act_fn") and hasattr(self, "_apply_gate"):
            # GPT-OSS: its own clamped, interleaved SwiGLU with alpha (no act_fn)
            act = self._apply_gate(gate_up)
        else:
            gate, up = gate_up.chunk(2, dim=-1)
            act = FusedSwiGLU.apply(gate, up) if fused else self.act_fn(gate) * up
        y = torch.bmm(act, w2.transpose(1, 2))
        bias = getattr(self, "down_proj_bias", None)
        if isinstance(bias, torch.Tensor):
            y = y + bias.unsqueeze(1)
        y = y.reshape(E * rows, h)[: T * k].view(T, k, h)
        # unpermute: weight each copy by its router probability and sum a token's copies
        return (y * top_k_weights.unsqueeze(-1).to(y.dtype)).sum(dim=1)
    return forward
