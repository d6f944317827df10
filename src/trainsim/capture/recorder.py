"""Record a PyTorch model's forward and backward on the meta device, op by op.

Three hooks run together (no weights, no kernels: meta tensors only carry shapes):

* a ``TorchDispatchMode`` sees every aten op that would launch a kernel, forward and backward,
  and records its shapes, dtypes, FLOPs and bytes (:mod:`trainsim.capture.kernels`);
* module forward hooks keep the stack of running modules; a ``TorchFunctionMode`` maps each
  autograd node created under a module to that module, so backward ops (which run in the
  autograd engine, outside any module) are attributed to the module whose forward made them
  (``torch._C._current_autograd_node``);
* ``torch.autograd.graph.saved_tensors_hooks`` sees every tensor autograd keeps for backward,
  with its storage (meta tensors have ``nbytes``), for the activation-memory count.

The same function mode runs ``F.scaled_dot_product_attention`` as the fused FlashAttention
kernel PyTorch picks on a GPU (``aten._scaled_dot_product_flash_attention``; its memory-
efficient sibling when a mask is passed): on the meta device PyTorch would otherwise choose the
math fallback (``bmm``, softmax, ``bmm`` with the full score matrix), which no GPU run uses.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from typing_extensions import Self

from trainsim.capture.kernels import (
    ATTENTION_BWD,
    ATTENTION_FWD,
    FREE_OPS,
    KernelRecord,
    TensorMeta,
    attention_flops,
    classify,
    gemm_flops,
)

DTYPE_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32",
               torch.float64: "fp64", torch.int64: "int64", torch.int32: "int32",
               torch.bool: "bool", torch.uint8: "uint8"}


def _sid(t: torch.Tensor) -> int:
    """Identity of a tensor's storage (views share it; works on the meta device)."""
    return t.untyped_storage()._cdata


def _meta(t: torch.Tensor) -> TensorMeta:
    try:
        storage = t.untyped_storage().nbytes()
    except (RuntimeError, NotImplementedError):  # tensor subclasses without storage
        storage = t.numel() * t.element_size()
    return TensorMeta(tuple(t.shape), DTYPE_NAMES.get(t.dtype, str(t.dtype).removeprefix("torch.")),
                      min(t.numel() * t.element_size(), storage))


class SavedTensor:
    """A tensor autograd packed for backward, with where it was packed."""

    __slots__ = ("dtype", "module", "nbytes", "shape", "storage")

    def __init__(self, module: str, t: torch.Tensor) -> None:
        self.module = module
        self.storage = _sid(t)
        self.nbytes = t.untyped_storage().nbytes()
        self.shape = tuple(t.shape)
        self.dtype = DTYPE_NAMES.get(t.dtype, str(t.dtype))


class Recorder:
    """Records one forward + backward of ``model``; use as a context manager around both."""

    def __init__(self, model: torch.nn.Module, fused_attention: bool = True) -> None:
        self.model = model
        self.fused_attention = fused_attention
        self.kernels: list[KernelRecord] = []
        self.saved: list[SavedTensor] = []
        self.stack: list[str] = []
        self.node_module: dict[Any, str] = {}
        self.storage_owner: dict[int, str] = {}
        """Storage -> module whose forward created it (first writer)."""
        self.module_inputs: dict[str, set[int]] = {}
        """Module -> storages of the tensors it was called with."""
        self.excluded: set[int] = set()
        """Parameter and buffer storages: not activations."""
        self._fusing = 0
        self._keep: list[Any] = []  # keeps storages and nodes alive so their ids stay unique
        self._handles: list[Any] = []
        self._stack = contextlib.ExitStack()

    # -- module stack ------------------------------------------------------------------------
    def _pre_hook(self, name: str):
        def hook(module, args, kwargs):
            tensors = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
            if torch.is_grad_enabled():  # nodes made by the caller (autograd.Function.apply
                self._map_nodes(tensors)  # does not pass the function mode) stay the caller's
            self.stack.append(name)
            self.module_inputs.setdefault(name, set()).update(
                _sid(t) for t in tensors if t.requires_grad)  # activations, not RoPE tables
        return hook

    def _post_hook(self, name: str):
        def hook(module, args, kwargs, output):
            if torch.is_grad_enabled():  # its outputs' nodes are its own
                self._map_nodes(output)
            if self.stack and self.stack[-1] == name:
                self.stack.pop()
        return hook

    @property
    def current(self) -> str:
        return self.stack[-1] if self.stack else ""

    def _map_nodes(self, out: Any) -> None:
        """Attribute every new autograd node reachable from ``out`` to the running module."""
        here = self.current
        todo = [t.grad_fn for t in tree_flatten(out)[0]
                if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        while todo:
            node = todo.pop()
            if node is None or node in self.node_module:
                continue
            self.node_module[node] = here
            self._keep.append(node)
            todo.extend(n for n, _ in node.next_functions)

    # -- recording ---------------------------------------------------------------------------
    def _where(self) -> tuple[bool, str]:
        backward = torch._C._current_graph_task_id() != -1
        if backward:
            return True, self.node_module.get(torch._C._current_autograd_node(), "")
        return False, self.current

    def _own(self, module: str, out_tensors: list[torch.Tensor]) -> None:
        for t in out_tensors:
            self.storage_owner.setdefault(_sid(t), module)
            self._keep.append(t)

    def record(self, func: Any, args: tuple, kwargs: dict, out: Any) -> None:
        name = func.overloadpacket.__name__
        if func.is_view or name in FREE_OPS:
            return
        backward, module = self._where()
        out_tensors = [a for a in tree_flatten(out)[0] if isinstance(a, torch.Tensor)]
        if not backward:
            self._own(module, out_tensors)
        if self._fusing:
            return
        in_tensors = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        inputs = tuple(_meta(t) for t in in_tensors)
        outputs = tuple(_meta(t) for t in out_tensors)
        kind = classify(name, torch.Tag.pointwise in func.tags)
        extra: dict[str, Any] = {}
        flops = 0.0
        if kind == "gemm":
            flops = gemm_flops(name, inputs)
        elif kind == "attention":
            named = dict(zip((a.name for a in func._schema.arguments), args))
            named.update(kwargs)
            q, k, v = named["query"], named["key"], named["value"]
            causal = bool(named.get("is_causal", False))
            extra = {"is_causal": causal, "dropout_p": float(named.get("dropout_p", 0.0) or 0.0),
                     "heads": q.shape[1], "kv_heads": k.shape[1]}
            base = name if name in ATTENTION_FWD or name in ATTENTION_BWD else ""
            flops = attention_flops(base, tuple(q.shape), tuple(k.shape), tuple(v.shape), causal)
        moved = sum(t.nbytes for t in inputs) + sum(t.nbytes for t in outputs)
        first = in_tensors[0] if in_tensors else None
        self.kernels.append(KernelRecord(
            index=len(self.kernels), op=str(func), phase="backward" if backward else "forward",
            module=module, kind=kind, flops=flops, bytes=float(moved), inputs=inputs,
            outputs=outputs, args=extra,
            input_storage=_sid(first) if first is not None and kind == "gemm" else None))

    def fused(self, name: str, fn: Any, *inputs: torch.Tensor) -> Any:
        """Run ``fn(*inputs)`` as one fused kernel: its aten ops are not recorded one by one."""
        self._fusing += 1
        try:
            out = fn(*inputs)
        finally:
            self._fusing -= 1
        backward, module = self._where()
        outs = [a for a in tree_flatten(out)[0] if isinstance(a, torch.Tensor)]
        ins = tuple(_meta(t) for t in inputs if isinstance(t, torch.Tensor))
        metas = tuple(_meta(t) for t in outs)
        self.kernels.append(KernelRecord(
            index=len(self.kernels), op=f"fused.{name}",
            phase="backward" if backward else "forward",
            module=module, kind="memory", flops=0.0,
            bytes=float(sum(t.nbytes for t in ins) + sum(t.nbytes for t in metas)),
            inputs=ins, outputs=metas))
        return out

    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        if torch._C._current_graph_task_id() == -1:  # forward only
            self.saved.append(SavedTensor(self.current, t))
            self._keep.append(t)
        return t

    # -- context -----------------------------------------------------------------------------
    def __enter__(self) -> Self:
        _ACTIVE.append(self)
        for name, module in self.model.named_modules():
            self._handles.append(module.register_forward_pre_hook(self._pre_hook(name),
                                                                  with_kwargs=True))
            self._handles.append(module.register_forward_hook(self._post_hook(name),
                                                              with_kwargs=True, always_call=True))
        self.excluded = {_sid(p) for p in self.model.parameters()}
        self.excluded |= {_sid(b) for b in self.model.buffers()}
        self._stack.enter_context(torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t))
        self._stack.enter_context(_FunctionMode(self))
        self._stack.enter_context(_DispatchMode(self))
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()
        _ACTIVE.remove(self)
        for h in self._handles:
            h.remove()
        self._handles.clear()

    # -- results -----------------------------------------------------------------------------
    def activation_bytes(self, prefix: str) -> tuple[float, list[SavedTensor]]:
        """Bytes ``prefix``'s forward keeps for backward: unique storages saved under it that
        it created or was called with (parameters, buffers and tensors made elsewhere, such as
        RoPE's cos/sin shared by all layers, excluded)."""
        inside = lambda m: m == prefix or m.startswith(prefix + ".")
        own_inputs = self.module_inputs.get(prefix, set())
        seen: dict[int, SavedTensor] = {}
        for s in self.saved:
            if not inside(s.module) or s.storage in self.excluded:
                continue
            owner = self.storage_owner.get(s.storage)
            if (owner is None or not inside(owner)) and s.storage not in own_inputs:
                continue
            if s.storage not in seen or s.nbytes > seen[s.storage].nbytes:
                seen[s.storage] = s
        return float(sum(s.nbytes for s in seen.values())), list(seen.values())


_ACTIVE: list[Recorder] = []


def run_fused(name: str, fn: Any, *inputs: Any) -> Any:
    """``fn(*inputs)``, recorded as one fused kernel ``fused.<name>`` when a capture is running
    (kernel patches use it for what a GPU runs as one kernel but eager PyTorch as several)."""
    if not _ACTIVE:
        return fn(*inputs)
    return _ACTIVE[-1].fused(name, fn, *inputs)


class _DispatchMode(TorchDispatchMode):
    def __init__(self, rec: Recorder) -> None:
        super().__init__()
        self.rec = rec

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        self.rec.record(func, args, kwargs, out)
        return out


class _FunctionMode(TorchFunctionMode):
    def __init__(self, rec: Recorder) -> None:
        super().__init__()
        self.rec = rec

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention and self.rec.fused_attention:
            out = _fused_sdpa(*args, **kwargs)
        else:
            out = func(*args, **kwargs)
        if torch.is_grad_enabled():
            self.rec._map_nodes(out)
        return out


def _fused_sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                enable_gqa=False) -> torch.Tensor:
    """SDPA as the fused kernel a GPU runs: FlashAttention (GQA natively, as FlashAttention-2
    does), or the memory-efficient kernel where flash cannot run (a mask, or value heads
    narrower than query/key heads, e.g. MLA)."""
    if attn_mask is None and value.shape[-1] == query.shape[-1]:
        return torch.ops.aten._scaled_dot_product_flash_attention(
            query, key, value, dropout_p, is_causal, False, scale=scale)[0]
    if key.shape[1] != query.shape[1]:  # this kernel needs one K/V head per query head
        rep = query.shape[1] // key.shape[1]
        key, value = key.repeat_interleave(rep, 1), value.repeat_interleave(rep, 1)
    bias = attn_mask
    if bias is not None:
        if bias.dtype == torch.bool:  # additive form, as PyTorch converts it
            bias = torch.zeros_like(bias, dtype=query.dtype).masked_fill(~bias, float("-inf"))
        bias = bias.expand(query.shape[0], query.shape[1], -1, -1)
    return torch.ops.aten._scaled_dot_product_efficient_attention(
        query, key, value, bias, True, dropout_p, is_causal, scale=scale)[0]


@contextlib.contextmanager
def recording(model: torch.nn.Module, fused_attention: bool = True) -> Iterator[Recorder]:
    rec = Recorder(model, fused_attention)
    with rec:
        yield rec
