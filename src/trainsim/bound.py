"""A lower bound on the simulated iteration time, from the priced passes alone (no event loop).

A tuner comparing settings asks "is this one faster than the best so far?"; where the bound
already says no, the simulation can be skipped without changing the answer (branch and
bound; ``validate.training.tune``). The bound follows the simulator's own task graph: every
task lasts at least its duration (contention only stretches it) and tasks on one stream run one
at a time, so stage ``s`` of a Megatron pipeline cannot start before its first pass's
micro-batch has gone forward through the virtual stages before it, then runs the forward and
backward of every micro-batch of its chunks, and the backward of its last pass still has to go
back through the virtual stages before that one, after which the first stage runs its
optimizer step (and stage ``s`` its own after its last pass):

    T >= sum_{u < v_first} (F_u + S_u) + m * sum_{v on s} (F_v + B_v)
         + max(S_{v_last} + sum_{u < v_last} (B_u + S_u) + O_0, O_s)

(Narayanan et al. 2021 §2.2: the pipeline fill and drain of 1F1B and its interleaved form),
with F and B a pass's task on the compute stream (a blocking send folded in, as the simulator
places it), S a send on its own stream (overlap_p2p_comm; else 0) and O the optimizer step.
Collectives, contention and data loading only add to it.

bound46 (issue 21 item 3) adds what the closed form left out, each a sum of priced tasks the
simulator places after others it waits on: (1) for the first stage (every drain ends there) and
the stage the step alone puts last, ``O_s`` becomes what its streams must still run after its
last pass, ``A_s = X_s + Z_s`` (:func:`after_last_pass`): ``X_s`` the gradient reductions that
cannot start before that pass ends (``optimizer_tasks.OptimizerTasks.optimizer_steps``: every
bucket without overlap_grad_reduce, the tied-embedding all-reduce and LAMB's norms, which wait
on the stage's last compute task; with the overlap, the last bucket of chunk 0, which waits on
the last part of the split last backward, ``last_backward.split_last_backward``) and ``Z_s``
the chain the step heads (the step, fp8 amax all-reduces, clip, ``zero_grad_buffer``'s rest,
ZeRO-3 regathers, and without overlap_param_gather the parameter all-gathers and their
copies), which ends the stage's iteration; (2) under overlap_param_gather no first forward
starts before its chunk's parameter all-gathers (:func:`first_gathers_s`), which the fill
carries; (3) the data loading the simulation adds after the loop (``summary.data_loading_s``,
nondecreasing in the step time). And under ZeRO-3 / FSDP a backward's work is its split parts'
(:func:`backward_work`): the whole pass, with its gather waits, could exceed the simulation.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, TypeVar

from trainsim.catalog.shared_sections import Unkept, frozen
from trainsim.compute.host import loop_host_s
from trainsim.config import RunConfig
from trainsim.ds_lockstep import lockstep_applies, transfer
from trainsim.ep_pairs import own_segments
from trainsim.memo import config_key, row_kept
from trainsim.optimizer_tasks import LAMB_NORMS_PER_LAYER
from trainsim.pricing import Priced, Pricer
from trainsim.summary import data_loading_s
from trainsim.workload.ddp_buckets import bucket_ready
from trainsim.workload.schedule import combined_1f1b
from trainsim.workload.sharding import dp_bucket_count
from trainsim.workload.vocab import rank_vocab

if TYPE_CHECKING:
    from trainsim.simulator import _TaskGraph

T = TypeVar("T")

SAFETY = 1 - 1e-9
"""The same durations summed in another order differ in their last bits: the bound is scaled
by this so that it never exceeds the simulation it bounds."""


def lower_bound_s(cfg: RunConfig, pricer: Pricer | None = None) -> float:
    """A lower bound on ``simulate(cfg).iteration_time_s``; 0.0 where none is derived (other
    pipeline schedules, stages that overlap consecutive iterations)."""
    p = cfg.parallel
    if p.pipeline_schedule not in (None, "1f1b", "interleaved_1f1b") or \
            p.optimizer_post_validation:
        return 0.0
    from trainsim.simulator import _TaskGraph

    pricer = pricer or Pricer(cfg)
    graph = _TaskGraph(cfg, pricer, None)
    shared = _row_terms(cfg, pricer)
    pp, vpp, m = p.pp, p.vpp, cfg.num_microbatches
    nv = pp * vpp
    # each virtual stage's forward and backward pass as the simulator places them: a task on
    # the compute stream, with a blocking send folded in, or a send of its own on the
    # pipeline stream under overlap_p2p_comm (which the send's receiver waits for too)
    send = graph.send.duration_s
    folded, own = (0.0, send) if graph.sends_overlap else (send, 0.0)
    f_on = [graph.work[v][0].duration_s + (folded if v < nv - 1 else 0.0) for v in range(nv)]
    b_own = backward_work(graph)
    if graph.deferral:  # some last-stage backwards run without the output layer's wgrad
        b_own[-1] = min(b_own[-1], graph.deferral.chunk.bwd.duration_s)
    b_on = [b_own[v] + (folded if v > 0 else 0.0) for v in range(nv)]
    f_sent = [own if v < nv - 1 else 0.0 for v in range(nv)]
    b_sent = [own if v > 0 else 0.0 for v in range(nv)]
    # after its last pass, each stage's compute stream runs its optimizer step (each priced
    # once: ``after_last_pass`` reads them again through ``step_tasks``, on this graph only)
    priced_steps = shared("steps", lambda: [graph.optimizer_step(s) for s in range(pp)])
    graph.optimizer_step = priced_steps.__getitem__  # type: ignore[method-assign]
    step = [x.duration_s if isinstance(x, Priced) else x for x in priced_steps]
    # every stage's order starts with the first forward and ends with the last backward
    # (Megatron's warm-up, steady pairs, cool-down: workload.schedule ``_passes``): the first
    # group's micro-batch 0 through chunk 0, and the last group's micro-batch m - 1 back
    # through chunk 0, which its backwards reach last (the chunks in reverse), whatever the
    # stage count, chunk count or group size; both run on virtual stage s (chunk 0 * pp + s).
    # (in closed form: the whole order holds 2 m vpp passes, 56 M tuples for a row with a
    # global batch of 1e7 sequences, ~2 minutes a bound)
    hop = [f_on[u] + f_sent[u] for u in range(nv)]
    back = [b_on[u] + b_sent[u] for u in range(nv)]
    lock = lockstep_applies(graph)
    if lock:
        # DeepSpeed's steps (``ds_lockstep``): the same transfers on each stage's compute
        # stream, one per step's message, so ``busy`` holds them as the folded passes do; but
        # a stage's first forward waits for one transfer of its neighbour's forward, not two
        # (and for its own receive, counted in its busy), and a backward's gradient goes back
        # the same way: stage u passes on after its pass and, past the first, one transfer
        x = transfer(graph)[0]
        folded = x  # each stage but the first ends on its last gradient's send
        hop = [graph.work[u][0].duration_s + (x if u else 0.0) for u in range(nv)]
        back = [b_own[u] + (x if u else 0.0) for u in range(nv)]
    fill = [sum(hop[:s]) for s in range(pp)]
    wait = shared("gathers", lambda: first_gathers_s(graph)) if cfg.schedule_steps == 1 \
        else [0.0]
    if any(wait):  # bound46: no first forward before its chunk's gathers, nor the next's
        start = 0.0
        for s in range(pp):
            start = max(fill[s], wait[s], start)
            fill[s] = start
            start += hop[s]
    busy = [m * sum(f_on[v] + b_on[v] for v in range(s, nv, pp)) for s in range(pp)]
    # the last backward's gradient goes back to the first stage, whose step follows
    drain = [sum(back[:s]) + (0.0 if lock else b_sent[s]) for s in range(pp)]
    # bound46: a stage's step is the least of what its streams run after its last pass
    # (``after_last_pass``), asked of the first stage (every drain ends there) and of the
    # stage the step alone puts last (the first such), each at least its step; the other
    # stages keep the step alone (a bound either way, the same for every config). Where the
    # schedule runs several steps an iteration (``schedule_steps.in_steps``: the optimizer
    # counted once, each step's passes fewer than the iteration's) the step alone.
    after = dict(enumerate(step))
    if cfg.schedule_steps == 1:
        last = max(range(pp), key=lambda s: fill[s] + busy[s] + max(drain[s] + step[0], step[s]))
        for s in dict.fromkeys((0, last)):
            f = folded if s > 0 else 0.0
            after[s] = shared(("after", s, f.hex()),
                              lambda: after_last_pass(graph, s, f))  # noqa: B023 (called here)
    best = max(fill[s] + busy[s] + max(drain[s] + after[0], after[s]) for s in range(pp))
    if cfg.schedule_steps == 1:  # ``simulator._simulate`` adds it once the loop has run
        best += data_loading_s(cfg, best)
    return SAFETY * best


TERMS_LEFT_OUT: dict[str, tuple[str, ...]] = {
    "parallel": ("sequence_parallel", "recompute", "recompute_num_layers", "recompute_modules"),
    "training": ("micro_batch_size",),
}
"""Config fields that the optimizer steps, :func:`after_last_pass` and :func:`first_gathers_s`
do not read (nor the pricer and the graph's parameter groups they price with), left out of
the key under which a tuned row's candidates share them (after46): the ones a row's
candidates differ in besides the optimizer-side ones (bound44's count: recompute, micro-batch
size, sequence parallel; the others, vpp, dispatcher, tp_comm_overlap, are read). Recompute
is read only through ``workload.schedule.combined_1f1b``, whose answer is in the key.
tests/test_bound_memo.py records every field read while the public rows' candidates are
priced and fails if one of these is among them."""


def _row_terms(cfg: RunConfig, pricer: Pricer) -> Callable[[Hashable, Callable[[], T]], T]:
    """``shared(name, price)``: ``price()``, kept for the tuned row (inside
    ``memo.chunks_shared``, ``validate.training.row_shared``) under ``name`` and the fields
    the terms read (every field but :data:`TERMS_LEFT_OUT`'s, the ``combined_1f1b`` answer,
    the pricer's overrides), so that the candidates that differ only in the left-out fields
    price them once; where the pricer is not a plain ``Pricer`` of ``cfg``, priced anew."""
    kept = row_kept()
    key: Hashable = None
    if kept is not None and type(pricer) is Pricer and pricer.cfg is cfg:
        try:
            key = ("bound terms", config_key(cfg, TERMS_LEFT_OUT), combined_1f1b(cfg),
                   frozen(pricer.sm_share), frozen(pricer.ep_gemm_share))
        except Unkept:
            key = None

    def shared(name: Hashable, price: Callable[[], T]) -> T:
        if key is None or kept is None:
            return price()
        hit = kept.get((key, name))
        if hit is None:
            hit = kept[(key, name)] = (price(),)
        return hit[0]

    return shared


def backward_work(graph: _TaskGraph) -> list[float]:
    """Each virtual stage's backward work that no pass beside it changes."""
    cfg, nv = graph.cfg, graph.pp * graph.vpp
    # under the combined 1F1B a backward's exposed exchanges depend on the forward beside it
    # (``combined_1f1b.beside_forward``): only its own work is certain
    # (summed once per distinct pass object: the virtual stages of one chunk shape share it)
    # Elsewhere no pass holds a pair's exposed segment (``ep_pairs.with_exposed`` is called
    # only under it), so its own work is all of it: the pass's duration, the same left-to-right
    # sum of the same segments (cached on the pass, which the simulation reads too)
    if graph.fsdp and not combined_1f1b(cfg):
        # ZeRO-3 / FSDP: every backward is split per unit (``last_backward._sharded_backward``)
        # into the parts ``_backward_parts`` makes, the same for every micro-batch, where each
        # block's gather leaves the pass for a task of its own on the data-parallel stream (its
        # wait is no longer compute-stream work): their durations (bound46; the whole pass,
        # with its gather waits, was read before and could exceed the simulation)
        return [sum(part.duration_s for part in graph._backward_parts(v, False)[0])
                for v in range(nv)]
    if combined_1f1b(cfg):
        own_s: dict[int, float] = {}
        for v in range(nv):
            b = graph.work[v][1]
            if id(b) not in own_s:
                own_s[id(b)] = sum(seg[1] for seg in own_segments(b))
        return [own_s[id(graph.work[v][1])] for v in range(nv)]
    return [graph.work[v][1].duration_s for v in range(nv)]


def _appended(graph: _TaskGraph, place: Callable[[], object]) -> dict[tuple[int, str], float]:
    """Per stream, the durations summed of the tasks ``place`` adds to ``graph`` (a scratch
    graph: its tasks are never run)."""
    n = len(graph.tasks)
    place()
    out: dict[tuple[int, str], float] = {}
    for task in graph.tasks[n:]:
        out[task.stream] = out.get(task.stream, 0.0) + task.duration_s
    return out


def _exposed_reductions(graph: _TaskGraph, s: int, folded: float) -> float:
    """``X_s``: how long after stage ``s``'s last compute task ends its optimizer step cannot
    start, for the gradient reductions ``optimizer_steps`` makes wait on that task (or, with
    overlap_grad_reduce, on the last part of chunk 0's split last backward, which ends at the
    latest ``folded`` before it: the blocking send that follows it on the compute stream).

    Proof: the step waits for every one of them (its ``dp_tasks``); each starts no earlier
    than the task it waits on ends, a stream runs its tasks one at a time (``engine.Task``) and
    a task lasts at least its duration (contention only stretches it), so on each stream the
    step starts at least the sum of these tasks' durations after the earliest moment they can
    start. Their sizes, groups and bucket shares are the ones ``optimizer_steps`` reads: the
    split last backward's (``split_last_backward``: ``dp_bucket_count`` buckets,
    ``bucket_ready``'s shares), which runs on every stage with data-parallel peers; a stage
    without any has no reduction here."""
    cfg, p, pp, vpp = graph.cfg, graph.p, graph.pp, graph.vpp
    overlap = p.overlap_grad_reduce and not cfg.training.cuda_launch_blocking
    kind = "all_reduce" if graph.zero == 0 or (
        graph.zero == 1 and p.zero1_grad_reduce == "all_reduce") else "reduce_scatter"
    groups = graph.groups[s]
    # the combined 1F1B's last backward is a cool-down chunk built with the pipeline (its
    # buckets are left out: the bound stays below, only less tight); FSDP reduces per unit
    buckets = not graph.fsdp and not combined_1f1b(cfg) and \
        any(size > 1 for _, _, size in groups)

    def reduce(c: int, last_only: bool) -> None:
        v = c * pp + s
        chunk_params = sum(params for params, _, _ in groups) / vpp
        n = dp_bucket_count(cfg, graph.chunks[v].layers, chunk_params, s, c)
        shares = ((1.0, 1.0),) if n == 1 else bucket_ready(
            cfg, cfg.virtual_ranges[v], v == 0, v == pp * vpp - 1)[1]
        for share in shares[-1:] if last_only else shares:
            for params, group, size in groups:
                part = params / vpp * share[group == "edp"]
                if size > 1 and part > 0:  # over every data-parallel rank as the graph's
                    over = "dp" if kind == "all_reduce" and group == "dp_cp" and \
                        p.dp_replicate > 1 else group
                    graph.comm(s, "grad_reduce", kind, part * graph.grad_bytes, over, [],
                               "bound", graph.fixed_buckets(part))

    def on_last() -> None:  # what waits on the stage's last compute task itself
        if buckets and not overlap:
            for c in range(vpp):
                reduce(c, False)
        if cfg.model.tied_embeddings and pp > 1 and s in (0, pp - 1):
            size = rank_vocab(cfg) * cfg.model.hidden_size * graph.grad_bytes  # padded
            graph.comm(s, "embedding_grad", "all_reduce", size, "embd", [], "bound")
        if cfg.training.optimizer == "lamb" and graph.zero >= 1:
            layers = sum(graph.chunks[c * pp + s].layers for c in range(vpp))
            norms = (layers * LAMB_NORMS_PER_LAYER + 2) * 4
            for group in dict.fromkeys(g for _, g, n in groups if n > 1):
                for _ in range(2):
                    graph.comm(s, "lamb_norms", "all_reduce", norms, group, [], "bound")

    x = _appended(graph, on_last)
    y = _appended(graph, lambda: reduce(0, True)) if buckets and overlap else {}
    # on a stream, the last bucket's reduction and the tasks on the last compute task run one
    # at a time, all of them from ``folded`` before that task's end at the earliest
    return max([0.0, *x.values(), *(x.get(k, 0.0) + y[k] - folded for k in y)])


def _step_chain(graph: _TaskGraph, s: int) -> float:
    """``Z_s``: the chain stage ``s``'s optimizer step heads, up to the task that ends the
    stage's iteration (``optimizer_steps``' ``ends``): each task waits on the one before it,
    or, for the parameter all-gathers after the step, all on the step chain's end, where the
    stage's end is the last gather (its stream's gathers run one at a time before it) or the
    copies that wait on all of them."""
    p = graph.p
    total = 0.0
    steps = graph.step_tasks(s)
    for priced, _, _ in steps:
        total += priced.duration_s if isinstance(priced, Priced) else priced
    total += sum(_appended(graph, lambda: graph.amax_all_reduces(s, 0)).values())  # a chain
    if graph.zero in (1, 2) and not p.overlap_param_gather and not graph.fsdp:
        gathers: list[int] = []
        per = _appended(graph, lambda: gathers.extend(graph.param_syncs(s, [], "bound")))
        if gathers:
            own = graph.tasks[gathers[-1]].stream
            copies = graph.gather_copies(s)
            if copies is None:
                total += per[own]
            else:
                gpu = graph.pricer.compute.time(copies)
                host_s = loop_host_s(copies) if graph.pricer.host_s_per_kernel else 0.0
                total += max(per.values()) + max(gpu, host_s)
    return total


def first_gathers_s(graph: _TaskGraph) -> list[float]:
    """Per stage, how long its first forward (micro-batch 0 through chunk 0) waits, at least,
    for the parameter all-gathers Megatron's overlap_param_gather issues before it: under the
    distributed optimizer (ZeRO 1-2, not FSDP) ``pipeline_passes.pass_specs`` adds, at the
    iteration's start, each chunk's gathers (``param_gathers(s, 1 / vpp)``) as dependencies
    of that chunk's first forward, chunk 0's first on the stage's data-parallel stream (but
    rank 0's first chunk where its buckets are gathered one by one inside the pass: not
    counted). That forward waits for the last of them, which its stream runs after the
    others: at least their durations summed. 0.0 elsewhere."""
    p, pp, vpp = graph.p, graph.pp, graph.vpp
    out = [0.0] * pp
    if graph.zero not in (1, 2) or not p.overlap_param_gather or graph.fsdp:
        return out
    bucketed = graph.gathers_by_bucket() and graph._bucketed_first_chunk() > 1
    for s in range(1 if bucketed else 0, pp):
        ids: list[int] = []
        per = _appended(graph, lambda: ids.extend(graph.param_gathers(s, 1 / vpp, [], "bound")))  # noqa: B023
        if ids:
            out[s] = per[graph.tasks[ids[-1]].stream]
    return out


def after_last_pass(graph: _TaskGraph, s: int, folded: float) -> float:
    """``A_s``: how long stage ``s``'s iteration goes on, at least, after its last compute
    task before the step ends (``folded``: the blocking send that task ends with, 0 where
    none): the reductions the step must wait for there (:func:`_exposed_reductions`), then
    the step's chain (:func:`_step_chain`)."""
    return _exposed_reductions(graph, s, folded) + _step_chain(graph, s)


__all__ = ["SAFETY", "TERMS_LEFT_OUT", "after_last_pass", "backward_work", "first_gathers_s", "lower_bound_s"]
