"""Host (CPU) launch overhead: the GPU idles when the host issues kernels slower than they run.

An eager PyTorch program issues every kernel from Python: the interpreter, the ATen dispatcher
(autograd recording included) and ``cudaLaunchKernel`` cost a few microseconds of CPU per
kernel, whatever its size (PyTorch's operator micro-benchmarks put a view-only op at ~3 us,
pytorch/pytorch#32194; a launching op costs more). Normally the host runs ahead of the GPU and
the cost hides behind the kernels already queued. It shows when kernels are smaller than
their launch (a small model, a fine-grained MoE's per-expert GEMMs) and after every point where
the host waits for the GPU (a device-to-host copy whose value Python needs): the queue is then
empty and the GPU waits for each launch until the host gets ahead again.

Evidence for the mechanisms (not for the constant, which ``benchmarks/fit_host.py`` fits):
* Transformer Engine's ``GroupedLinear`` runs one cuBLAS GEMM per expert and splits and
  quantizes its input per expert on the host ("CPU overheads of PyTorch ops, such as
  torch.split() and torch.empty() (2x num_gemms calls)", NVIDIA/TransformerEngine#1499;
  the fp8 ``te.Linear`` takes over twice the host time of the bf16 one, #761).
* Megatron-core's dropless token dispatchers copy the tokens-per-expert counts to the host
  before the all-to-all (the split sizes are Python lists), and ``GroupedLinear`` needs
  ``m_splits`` on the host: one synchronisation per MoE layer forward.
* CUDA graphs replay a captured layer with one launch (Megatron-core ``--enable-cuda-graph``):
  no per-kernel host cost inside the graph. A graph over part of a layer (Megatron-core
  ``cuda_graph_scope``, ``workload.graph_scope``) replaces its ops' launches with one replay
  (``GRAPH_REPLAY_LAUNCHES``); the eager rest keeps its cost and its waits.

``exposed_s`` runs two clocks over an op list in issue order: the host's (each op adds its
launch cost; a synchronising op first waits for the GPU to drain) and the GPU's (an op starts
when both the previous op has finished and its launch is done). What the GPU clock gains over
the sum of the op times is the exposed host time. The host is assumed to have launched the
list's first op during the previous list (it usually runs ahead), so a GPU-bound list exposes
nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from trainsim.compute.grouped import GROUPED_STREAMS
from trainsim.compute.roofline import LAUNCH_S
from trainsim.workload.ops import Attention, Comm, Elementwise, Gemm, Op

HOST_S_PER_KERNEL = 30e-6
"""CPU seconds to issue one kernel from eager PyTorch (Python, dispatcher with autograd, CUDA
launch), Transformer Engine's module bookkeeping spread over its kernels. Fitted 2026-11-23 by
``benchmarks/fit_host.py`` to the 138 published training runs on a grid bounded by what one
eager op can plausibly cost (0-30 us); the fit sits at that bound in every leave-one-framework-
out fold (figures in ``benchmarks/RESULTS.md``). Not because launches are missing: audited
against Megatron-LM / Transformer Engine source (``benchmarks/launches51_audit.py``, 51st
session), a Megatron-core layer's kernels are counted as the code issues them (the QKV split's
copies, RoPE and q/k norms per tensor added then) or more (the router's top-k and loss
unfused where Megatron-Bridge's recipes fuse it), and most of an MoE layer's (the experts'
quantizations and GEMMs) come from C++ loops inside one Python call each, cheaper per kernel
than this. Pricing those loops as one Python-level call plus ``CPP_LAUNCH_S`` a further kernel
(``benchmarks/host51_percall.py``, 51st session) fits the per-call cost inside its grid (50 us;
bounded at 100 us by a GB200 TE ``Linear`` forward's CPU time, NVIDIA/TransformerEngine#2053)
but scores worse (public 5.44 -> 5.98 %, Megatron-Bridge left out 7.1 -> 10.7 %): not adopted.
Transformer Engine's per-expert allocations and views in a ``GroupedLinear`` call, counted from
TE v2.9 / v2.14 and priced at measured costs (``benchmarks/candidates/
host52_expert_allocs.patch``, 52nd session), leave the fit at 30 us in every fold and trade
rows (public 5.4418 -> 5.4377 %, held-out 4.2424 -> 4.2664 %, errata 4.43 -> 4.48 %): not
adopted; at 30 us a launch the experts' kernels already cost ~3x what TE's C++ loops issue
(``benchmarks/host52_expert_audit.py``)."""


CPP_OP_S = 5.13e-6
"""CPU seconds of one ATen op called from C++, no Python: the dispatcher, TensorIterator's
setup and a one-element kernel, ``x + 1.0`` on a CPU tensor timed with torch.utils.benchmark's
C++ ``Timer`` at PyTorch master of 2021-03 (median 5.13 us, pytorch/pytorch#54943). Measured,
not fitted."""

CPP_LAUNCH_S = CPP_OP_S + LAUNCH_S
"""Host seconds of a CUDA kernel a C++ loop issues (``ops.Elementwise.cpp_kernels``): the op
from C++ (``CPP_OP_S``) and its launch (``compute.roofline.LAUNCH_S``). ProcessGroupNCCL's
copies out of its flat buffer after a list ``all_gather`` are such a loop
(torch/lib/c10d/ProcessGroupNCCL.cpp ``allgather``, PyTorch 1.8: one ``copy_`` per output
tensor in the collective's post hook), where ``HOST_S_PER_KERNEL`` prices an eager op issued
from Python."""

PY_BINDING_S = 1.0e-6
"""CPU seconds Python's binding adds to an ATen op over the same op called from C++ (argument
parsing, the tensor wrappers): ``x * x`` on a small tensor, grad off, ~2 us from Python, ~1 us
through the C++ API (pytorch/pytorch#41383, ngimel, 2020-07-14). Measured, not fitted."""

PY_LAUNCH_S = PY_BINDING_S + CPP_LAUNCH_S
"""Host seconds of a kernel a bare Python loop issues (``ops.Elementwise.py_kernels``: a
``copy_`` per parameter and rank in DeepSpeed's ``_allgather_params`` before v0.5.5, nanotron's
``update_output``): the op from C++ with its launch (``CPP_LAUNCH_S``) and Python's binding
(``PY_BINDING_S``); ``HOST_S_PER_KERNEL`` prices an eager module's kernels, with the module
call, hooks and autograd bookkeeping spread over them. 9.13 us, built from measurements."""

ENGINE_CALL_S = 136.07e-6 - 4 * CPP_LAUNCH_S
"""Host seconds of one call into PyTorch's autograd engine beyond the kernels it runs (graph
task set-up, dependency walk, hand-off to the device's worker thread and back): ``out.
backward(grad, retain_graph=True)`` of a one-matmul bf16 128 x 128 graph, host-bound, took
0.13607 ms per call on an A100 PCIe with CUDA 12.8 (pytorch/pytorch#157407, eqy, 2025-07-02,
the "before" figure), of which its four kernels (MmBackward0's two GEMMs, two AccumulateGrad
adds, issued from the engine's C++) cost ``CPP_LAUNCH_S`` each: 103.5 us. Measured, not
fitted; Python's ``torch.autograd.backward`` wrapper is inside it (an upper bound where a
framework calls ``run_backward`` directly). The H200 machine's host (torch 2.11) took 87.6 us
for the same graph with one operand taking a gradient (two kernels): 71.3 us beyond them
(``benchmarks/host_measured.py``; not adopted, RESULTS 36th session host36)."""

PY_VIEW_S = 2.26e-6
"""Host seconds of a view op called from Python (``narrow``, ``view``, a slice; no kernel):
PyTorch's operator micro-benchmark of ``split`` in two, an 8 x 8 tensor, 2.26 us per call
after pytorch/pytorch#32194 (2020-01, 3.34 us before). Measured, not fitted; an upper bound
for one ``narrow`` (the split makes two). Torch 2.11 on the H200 machine's host took 4.40 us a
``narrow``, 2.73 a ``view``, 0.91 a ``detach`` and 8.08 that split (``benchmarks/
host_measured.py``; not adopted: the rows priced with it at scale ran torch 1.x)."""

STREAM_CONTEXT_S = 4.4e-6 + 3.8e-6
"""Host seconds of ``with torch.cuda.stream(s):`` around Python code: ``StreamContext``
reads ``torch.cuda.current_stream()`` on entry (4.4 us a call after pytorch/pytorch#78066,
ngimel, 2022-05-22; 8.7 us before) and switches the current stream in and out (resolving
the device index and two ``set_stream`` calls), taken at what the same shape of context,
``with torch.cuda.device(0): pass``, measured before its C++ fast path (3.8 us,
pytorch/pytorch#91045, peterbell10, 2022-12-16). 8.2 us, built from measurements. Torch 2.11
on the H200 machine's host took 17.0 us for ``with torch.cuda.stream(s): pass``
(``current_stream()`` 7.7, the device context 1.6; ``benchmarks/host_measured.py``; not
adopted, RESULTS 36th session host36)."""

NODE_PASS_S = STREAM_CONTEXT_S + 2 * (PY_BINDING_S + LAUNCH_S)
"""Host seconds of one pass (forward or backward) of a Megatron-core schedule node around the
work it runs (megatron/core/pipeline_parallel/utils.py ``ScheduleNode._forward`` /
``_backward`` under ``stream_acquire_context``, every pin from core_v0.14.0 to d7288711): the
node's stream context (``STREAM_CONTEXT_S``) and its event's ``wait`` before and ``record``
after (``cudaStreamWaitEvent``, ``cudaEventRecord``: each a Python binding,
``PY_BINDING_S``, and one stream-ordered CUDA runtime call, counted at a kernel launch's
``LAUNCH_S``; not measured; the H200 machine's host took 1.7 us to wait and 2.1 us to record,
given the stream). 16.2 us. Not counted: the NVTX ranges, ``record_stream`` and
``resize_`` of freed inputs and gradients, ``make_viewless``'s checks (a lower bound)."""

DUMMY_WGRAD_S = 2 * PY_BINDING_S + CPP_OP_S
"""Host seconds of the placeholder weight gradient a Transformer Engine module returns for a
weight whose gradient it already added into Megatron's ``main_grad`` (``fuse_wgrad_accumulation``
with Megatron-core's DDP): ``torch.empty(weight.main_grad.shape, ..., device=torch.cuda.
current_device())`` per weight, after setting ``grad_added_to_main_grad``
(TransformerEngine v2.3 pytorch/module/grouped_linear.py ``_GroupedLinear.backward``
``handle_custom_ddp_from_mcore`` L361-391, once per expert weight; module/linear.py L735-750,
once per ``Linear``). Priced as one ATen op (``CPP_OP_S``, measured with a one-element kernel:
an upper bound for an allocation from the caching allocator) with its Python binding and the
``current_device`` binding (``PY_BINDING_S`` each). 7.1 us, built from measurements (the
H200 machine's host took 4.5 us for ``torch.empty(16, device="cuda")``)."""

DDP_HOOK_S = 3 * PY_BINDING_S
"""Host seconds of Megatron-core DDP's backward post-hook on one parameter, which the autograd
engine runs after the parameter's ``AccumulateGrad`` every backward (Megatron-LM 1e057005
megatron/core/distributed/distributed_data_parallel.py L405-412: one hook on every parameter
that requires a gradient; ``_make_backward_post_hook`` L497-513): the engine's call into Python,
the ``param.grad`` read of its checks and the ``param.grad = None`` write, each counted at a
Python binding (``PY_BINDING_S``; the hook's own bytecode and ``register_grad_ready``'s set
bookkeeping, param_and_grad_buffer.py L425-442, not counted: a lower bound). 3 us, built from
a measurement."""

PARAM_GRAD_S = DUMMY_WGRAD_S + DDP_HOOK_S
"""Host seconds per weight a fused-accumulation backward hands to Megatron's DDP
(``ops.Gemm.param_hooks``): the placeholder gradient and the hook. 10.1 us; where Transformer
Engine caches the placeholder (module/base.py ``get_dummy_wgrad``, one ``torch.empty`` per
shape and a ``detach`` per call: TE >= v2.3 for ``Linear``, >= v2.10 for ``GroupedLinear``,
``workload.shard.TE_CACHED_DUMMY_WGRAD``, by the profile's ``te_version``) its
``torch.empty`` is a view's ``PY_VIEW_S`` instead (``hooks_host_s``): 5.3 us."""

GRAPH_REPLAY_LAUNCHES = 2
"""Host work of replaying one captured graph, in eager launches: Transformer Engine's
``make_graphed_callables`` replays through an autograd Function whose forward copies a new
input into the graph's static input (``copy_``, one eager kernel; its backward likewise the
incoming gradient) and then calls ``fwd_graph.replay()`` (one ``cudaGraphLaunch``):
TransformerEngine v2.10 769ed778 transformer_engine/pytorch/graph.py L678-717 ``Graphed``.
Counted as two eager ops at ``HOST_S_PER_KERNEL`` each, not measured. A lower bound: ``Graphed``
copies every input (L691-696) and every incoming gradient (L710-715) whose pointer differs
from the static buffer's, one ``copy_`` each, and a layer graph takes several (hidden states,
and under ``moe_router`` the residual and the router's outputs); counted as one."""


MEGATRON_UNFUSED_LAUNCHES = (4, 7)
"""Launches (forward, backward) of Megatron's unfused attention core without attention dropout
(``ops.Attention.megatron_ops``; dropout adds one each way). Forward: ``torch.baddbmm`` (QK^T
times 1/norm_factor, beta 0 into a preallocated buffer that no kernel fills),
``FusedScaleMaskSoftmax`` (one fused kernel; where it falls back to PyTorch,
``workload.softmax.torch_softmax_fallback`` adds the rest), ``attention_dropout``,
``torch.bmm`` (PV) and ``permute(2, 0, 1, 3).contiguous()`` (a copy): microsoft/Megatron-
DeepSpeed@7f7cea32 megatron/model/transformer.py ``CoreAttention.forward`` L251-337 (the
buffer from ``get_global_memory_buffer``); NVIDIA/Megatron-LM@152aab30 (2021-01) the same
ops inline in ``ParallelSelfAttention.forward`` L267-344 (buffer ``torch.empty``), as
DeepSpeedExamples@281a1eb9 Megatron-LM-v1.1.5-ZeRO3 megatron/model/transformer.py L277-354; Megatron-LM
core_v0.4.0 megatron/core/transformer/dot_product_attention.py ``DotProductAttention.
forward`` L134-189 (its GQA ``repeat_interleave`` of K and V, L104-110, not counted);
Transformer Engine's ``UnfusedDotProductAttention`` runs the same ops (NVIDIA/TransformerEngine
@bee4649c transformer_engine/pytorch/attention.py L3903-3984; the mask it builds first and its
fp32 fallback are ``workload.te_unfused``'s ops).
Backward, autograd of each (pytorch tools/autograd/derivatives.yaml): the copy's and views'
backwards are views; ``bmm`` two bmm (self, mat2); dropout one (``native_dropout_backward``);
the fused softmax's backward kernel; ``baddbmm`` two bmm, each times alpha (``maybe_multiply``:
a mul kernel where alpha is not 1), the buffer taking no gradient: 2 + 1 + 4. Counted from
the code, not profiled; the RNG tracker's state swaps around the dropout launch no kernel
and are not counted."""


def launches(op: Op) -> int:
    """Host-issued launches an op stands for: a GEMM batched over experts is one cuBLAS call per
    expert where its implementation launches a GEMM per group (Transformer Engine's
    ``GroupedLinear``, a loop; also an expert GEMM with no implementation named), one launch
    for a one-kernel grouped GEMM (CUTLASS / ``torch._grouped_mm``, Triton, DeepGEMM: the
    group offsets are a device tensor); an elementwise op its kernel count (an eager
    multi-kernel norm, a per-expert quantization), a collective one NCCL launch."""
    if isinstance(op, Gemm):
        return op.batch if not op.grouped or op.grouped in GROUPED_STREAMS else 1
    if isinstance(op, Elementwise):
        return op.kernels - op.cpp_kernels - op.py_kernels
    if isinstance(op, Attention) and op.megatron_ops and op.impl == "unfused":
        return MEGATRON_UNFUSED_LAUNCHES[op.backward] + int(op.dropout)
    if isinstance(op, (Attention, Comm)):
        return 1
    raise TypeError(op)  # pragma: no cover - exhaustive


def loop_host_s(op: Elementwise) -> float:
    """Host seconds of an op's launches that a loop issues outside any module: its C++-issued
    kernels (``CPP_LAUNCH_S``), its bare-Python ones (``PY_LAUNCH_S``) and the views that
    loop takes (``PY_VIEW_S``); the rest (``launches``) cost the pricer's per-kernel figure."""
    return op.cpp_kernels * CPP_LAUNCH_S + op.py_kernels * PY_LAUNCH_S + \
        op.py_views * PY_VIEW_S + op.engine_calls * ENGINE_CALL_S + \
        op.node_passes * NODE_PASS_S


def hooks_host_s(op: Gemm) -> float:
    """Host seconds of the DDP hooks a weight-gradient GEMM's parameters run (``Gemm.
    param_hooks``): ``PARAM_GRAD_S`` each, a cached placeholder's ``detach`` (``PY_VIEW_S``)
    in place of its ``torch.empty`` where ``Gemm.dummy_cached``."""
    dummy = PY_VIEW_S if op.dummy_cached else DUMMY_WGRAD_S
    return op.param_hooks * (DDP_HOOK_S + dummy)


def scoped_launches(ops: Sequence[Op], captured: Sequence[int],
                    joins: Sequence[bool] | None = None) -> list[int]:
    """Host launches of each op when ``captured[i]`` of its launches sit in a CUDA graph: the
    eager rest, plus ``GRAPH_REPLAY_LAUNCHES`` on the op that starts each run of captured ops
    (a run goes on through fully captured ops and launch-free ones that do not make the host
    wait; a partly captured op ends it after its captured part), except a run starting at an
    op with ``joins[i]``: a part of a graph another run replays (``workload.graph_scope.
    graph_joins``)."""
    out: list[int] = []
    in_graph = False
    joined = joins if joins is not None else [False] * len(ops)
    for op, kept, join in zip(ops, captured, joined):
        n = launches(op)
        kept = min(kept, n)
        if n == 0 and not (isinstance(op, Elementwise) and op.host_sync):
            out.append(0)
            continue
        replay = kept and not in_graph and not join
        out.append(n - kept + (GRAPH_REPLAY_LAUNCHES if replay else 0))
        in_graph = kept > 0 and kept == n
    return out


LAUNCH_QUEUE = 1000
"""Kernels one CUDA stream holds launched and not yet finished: past that the host's next
launch returns only when one of them has finished. Measured: a 190 us kernel launched 10,000
times into one stream, the first ~1,000 launches at 4-5 us each, every later one ~190 us (one
kernel's run); three streams held ~1,000 each (StackOverflow 53970187 and NVIDIA developer forum
t/68937, 2018-12, "the buffer size is about 1000 kernels"). Confirmed to 3 % on one H200 machine
(benchmarks/h200_2026-11-27/launch_queue.csv, driver 580, CUDA 13.0; ``benchmarks/
host_measured.py``): a ~130 us sleep kernel, 5 us a launch until launch 1,079, 46 finished by
then: one stream held 1,033, each of two streams 1,045. It counts the stream's operations, not
kernels: CUDA sizes it as a command buffer (``CUDA_SCALE_LAUNCH_QUEUES``, docs.nvidia.com/cuda/
cuda-programming-guide/05-appendices/environment-variables.html; ggml-org/llama.cpp#19042), and
a 4096^3 bf16 ``torch.matmul`` there (cuBLAS 13.1: a ``Memset (Device)`` before each nvjet GEMM,
kernel-db-h200-sxm-141gb.json) filled it at 513 calls, two entries each. Where it binds here:
the per-rank copies ProcessGroupNCCL queues behind a list ``all_gather`` on its stream
(``sharding.list_all_gather_ops``, one kernel each) at more than ~1,000 ranks: the host issues
the first ~1,000 while the gather runs and the rest only after it. Measured, not fitted."""


def queue_delay_s(free: float, each: float, busy: float, unheld: float, held: float) -> float:
    """What a full launch queue delays an op's last kernel where its kernels run as launched
    (``exposed_s``): the stream is free at ``free``, each kernel takes ``each`` (``busy`` in
    all), its last launch is at ``unheld`` without the queue and ``held`` with it. Only this
    delay is added: the kernels the queue held ran meanwhile (not counted twice), and the
    queue never makes an op end earlier than without it."""
    return max(0.0, max(free + busy, held + each) - max(free + busy, unheld + each))


Beside = tuple[int, float, float]
"""A collective run on its own stream beside an earlier op of the list (the op's index, the
collective's whole time in seconds, the share of the op's time its SMs take while both run):
its ``gpu_s`` is what the op does not hide, priced as if both started together."""


def exposed_s(ops: Sequence[Op], gpu_s: Sequence[float], per_kernel_s: float,
              blocking: bool = False, counts: Sequence[int] | None = None,
              beside: dict[int, Beside] | None = None) -> float:
    """GPU idle time waiting for the host over ``ops`` (issued in order, each taking
    ``gpu_s[i]`` on the GPU once started). ``per_kernel_s`` 0 (CUDA graphs) exposes nothing.
    ``blocking`` (``CUDA_LAUNCH_BLOCKING=1``): every launch returns when its kernel is done, so
    each op waits for the GPU before its launch and no launch is ahead, not even the first.
    ``counts``: each op's host launches where some sit in graphs (``scoped_launches``);
    None: ``launches``. ``beside``: the collectives that run beside an earlier op
    (:data:`Beside`, by index): one launched after that op started hides behind only what is
    left of it (a collective cannot start before its launch), the rest of it the GPU's wait
    for the host; launched in time, its ``gpu_s`` stands. The collectives beside the list's
    first op were launched ahead with it (and the ops between). A stream holds at most
    ``LAUNCH_QUEUE`` launched kernels (a graph's replay is one): an op of more kernels issued
    while the GPU still runs earlier work launches the rest only as its kernels finish, the
    first once its first kernel has, and ends later by what that delays it
    (``queue_delay_s``)."""
    if per_kernel_s <= 0.0 or not ops:
        return 0.0
    n = list(counts) if counts is not None else [launches(op) for op in ops]
    cpp = [loop_host_s(op) if isinstance(op, Elementwise) else
           hooks_host_s(op) if isinstance(op, Gemm) else 0.0 for op in ops]
    if blocking:
        return per_kernel_s * sum(n) + sum(cpp)
    ahead = max((i for i, b in (beside or {}).items() if b[0] == 0), default=0)
    host = -sum(n[:ahead + 1]) * per_kernel_s - sum(cpp[:ahead + 1])  # launched ahead
    gpu = 0.0
    starts: list[float] = []
    for i, (op, busy, k) in enumerate(zip(ops, gpu_s, n)):
        if isinstance(op, Elementwise) and op.host_sync:
            host = max(host, gpu)  # Python waits for the value the GPU is computing
        issue = k * per_kernel_s + cpp[i]
        # kernels entering the stream one launch each: a graph's replay is one, however many
        # kernels it holds; a loop's C++- or Python-issued kernels stay eager
        total = k + (op.cpp_kernels + op.py_kernels if isinstance(op, Elementwise) else 0)
        if i > ahead and total > LAUNCH_QUEUE and gpu > host + issue * LAUNCH_QUEUE / total:
            # the stream's queue fills while it still runs earlier work: each launch past
            # LAUNCH_QUEUE waits for a slot (the first for the op's first kernel to finish,
            # the last for its kernel total - LAUNCH_QUEUE) while the queued kernels run.
            # The op keeps the list's rule (it runs once launched) and ends later by what the
            # wait delays its last kernel where kernels run as launched (``queue_delay_s``)
            last = host + issue
            host = max(max(host + issue * LAUNCH_QUEUE / total, gpu + busy / total)
                       + issue * (total - LAUNCH_QUEUE) / total,
                       gpu + busy * (total - LAUNCH_QUEUE) / total)
            start = max(gpu, last)
            busy += queue_delay_s(gpu, busy / total, busy, last, host)
        else:
            host += issue
            start = max(gpu, host)
        if beside and i in beside:
            j, comm_s, share = beside[i]
            late = host - starts[j]
            if late > 0.0:  # what op j covers from the launch on
                covered = max(0.0, gpu_s[j] - late)
                busy = max(0.0, comm_s - covered) + min(comm_s, covered) * share
        starts.append(start)
        gpu = start + busy
    return max(0.0, gpu - sum(gpu_s))
