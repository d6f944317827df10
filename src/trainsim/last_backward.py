"""The backward passes of an iteration's task graph that are split into tasks of their own, on
a stage with data-parallel peers: the last micro-batch's backward (split where gradient buckets
become ready, so their reductions run under the layers still to go), and under ZeRO-3 / FSDP
every micro-batch's (unless a no-sync defers the reduction to the chunk's last backward), a
task per layer with its reduce-scatter. A mixin of ``simulator._TaskGraph``, which places
every other pass from its prepared spec and calls :meth:`SplitBackwardTasks.backward`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainsim.chunks import concat
from trainsim.pricing import COMPUTE, DP, Priced, interned
from trainsim.sharded_passes import GATHER_WAIT, grad_reduce, on_gather_links
from trainsim.workload import xla_combine
from trainsim.workload.ddp_buckets import bucket_ready
from trainsim.workload.sharding import (
    bucket_copy_in,
    ddp_bucket_prep,
    dp_bucket_count,
    rank_grad_elements,
)

if TYPE_CHECKING:
    from trainsim.chunks import Chunk
    from trainsim.combined_1f1b import LonePasses
    from trainsim.config import ParallelConfig, RunConfig
    from trainsim.deferred_wgrad import Deferral
    from trainsim.engine import Task
    from trainsim.pricing import Pricer


class SplitBackwardTasks:
    """The split backward passes (the ``_TaskGraph`` methods of gradient reduction under the
    backward)."""

    cfg: RunConfig
    p: ParallelConfig
    pricer: Pricer
    vpp: int
    m: int
    last_mb: int
    chunks: dict[int, Chunk]
    work: dict[int, tuple[Priced, Priced]]
    groups: list[list[tuple[float, str, int]]]
    fsdp: bool
    gather_once: bool
    sync_every_mb: bool
    reduce_every_mb: bool
    grad_bytes: int
    rs_wait: bool
    sends_overlap: bool
    send: Priced
    side_s: list[float]
    tasks: list[Task]
    fsdp_grad_bytes: dict[str, int]
    fsdp_reduce: dict[int, list[int]]
    link_tail: dict[int, int]
    block_gathers: dict[int, list[float]]
    block_ops: dict[int, list[tuple]]
    collectives: dict[int, tuple]
    last_bwd: dict[int, list[int]]
    bucket_shares: dict[int, tuple[tuple[float, float], ...]]
    lone: LonePasses | None
    _splits: dict[tuple[int, int, bool], list[Priced]]
    deferral: Deferral | None
    _shares: dict[tuple[int, int], tuple[tuple[float, float], ...]]
    _memo: dict
    _parts: dict[tuple[int, bool], tuple[list[Priced], list[float] | None]]

    if TYPE_CHECKING:
        def add(self, stream: tuple[int, str], priced: Priced | float, deps: list[int],
                label: str, cat: str = COMPUTE) -> int: ...

        def collective(self, s: int, name: str, kind: str, size: float, group: str,
                       deps: list[int], label: str, count: int = 1,
                       replicas: bool = True) -> tuple[int, int]: ...

        def comm(self, s: int, name: str, kind: str, size: float, group: str, deps: list[int],
                 label: str, count: int = 1) -> int: ...

        def fixed_buckets(self, params: float) -> int: ...

    def backward(self, s: int, v: int, mb: int, chunk: int, deps: list[int],
                 alone: bool = True) -> int:
        """A split backward on a stage with data-parallel peers (the ones ``pipeline`` does not
        place from their prepared pass: the last micro-batch's, and under ZeRO-3 / FSDP every
        one unless a no-sync defers the reduction; ``alone`` when it is a cool-down pass): split
        per layer (per bucket) so the gradient reductions start under the layers still to go,
        then its send."""
        i = self._sharded_backward(s, v, chunk, deps, mb, alone) if self.fsdp else \
            self.split_last_backward(s, v, chunk, deps, mb)
        if v == 0:
            return i
        stream = "pp" if self.sends_overlap else "compute"
        return self.add((s, stream), self.send, [i], f"send grad mb{mb}")

    def _part_elements(self, v: int, n: int) -> list[dict[str, float]]:
        """The gradient elements of each of the ``n`` parts of virtual stage ``v``'s split
        backward, per group (``dp_cp``, ``edp``), as ``block_reduce_s`` prices a block's
        reduction: part k holds the k-th block from the end (``rank_grad_elements``); the
        root unit's parameters (embedding, head) are reduced with the last part, FSDP's root
        post-backward; one part (a chunk without blocks, or gathered once): the whole chunk."""
        key = ("part_elements", v, n)
        hit = self._memo.get(key)
        if hit is None:
            ranges = self.cfg.virtual_stage_layers()
            layers = list(ranges[v])[::-1]
            first, last = v == 0, v == len(ranges) - 1
            units, share = ([([i], False) for i in layers[:-1]] + [([layers[-1]], True)], 1) \
                if n == len(layers) else ([(layers, True)] * n, n)  # else the chunk's share
            hit = []
            for unit, root in units:
                (dense, _), (experts, _) = rank_grad_elements(self.cfg, unit, first and root,
                                                              last and root)
                hit.append({"dp_cp": dense / share, "edp": experts / share})
            self._memo[key] = hit
        return hit

    def _reduce_scatter(self, s: int, after: int, mb: int, v: int,
                        part: tuple[int, int] = (0, 1)) -> None:
        """ZeRO-3 gradients, reduce-scattered after every backward pass (``part`` k of n: one
        block's unit in a split backward of virtual stage ``v``, ``_part_elements``)."""
        k, n = part
        if self.side_s[s]:  # FSDP1's casts, DeepSpeed's bucket copies: the reduce's stream
            after = self.add((s, "dp"), self.side_s[s] / n, [after], f"grad prep mb{mb}")
        suffix = f" part{k}" if n > 1 else ""
        combined = self._combined_replicas(v, n)
        for op, group, label, links in self._reductions(s, v, k, n):
            own, i = self.collective(s, op.name, op.kind, op.bytes, group, [after],
                                     f"{label}mb{mb}{suffix}",
                                     replicas=combined is None or group != "dp_cp")
            if combined is not None and group == "dp_cp":
                i = self._combine(mb, s, k, own, combined[k], op.name) or own
            self.fsdp_reduce[s].append(i)
            # the next gathers queue behind the reductions on their links: the sharding
            # group's (its one stream), the experts' or HSDP's replicas' (the collective's
            # last task) where they cross the same NICs (``on_gather_links``)
            if links:
                self.link_tail[s] = own
                if i != own and on_gather_links(self.pricer, "dp_rep"):
                    self.link_tail[s] = i

    def _combined_replicas(self, v: int, n: int) -> list[list[float]] | None:
        """Per part of virtual stage ``v``'s split backward (``n`` parts, a layer each), the
        bytes of the combined HSDP replica all-reduces its backward completes
        (``workload.xla_combine``); None where XLA's combiner does not join them across layers
        (a scanned stack, no replicas) or the parts are not one layer each."""
        key = ("combined_replicas", v, n)
        if key not in self._memo:
            hit = None
            ranges = self.cfg.virtual_stage_layers()
            if xla_combine.applies(self.cfg) and n == len(ranges[v]):
                hit = xla_combine.combined_replica_reduces(
                    self.cfg, list(ranges[v])[::-1], v == 0, v == len(ranges) - 1,
                    self.fsdp_grad_bytes["dp_cp"])
            self._memo[key] = hit
        return self._memo[key]

    def _combine(self, mb: int, s: int, k: int, own: int, ready: list[float],
                 name: str) -> int | None:
        """The combined replica all-reduces of ``ready`` (bytes), each a group of the combiner
        whose last member is part ``k``'s reduce-scatter ``own``: they start after it (the
        earlier members' reduce-scatters ran before it on the sharding group's one stream), one
        after another on the replicas' stream. The id of the last, or None."""
        last = None
        for size in ready:
            last = self.collective(s, f"{name}_replicas", "all_reduce", size, "dp_rep", [own],
                                   f"XLA combined HSDP all-reduce mb{mb} part{k} over "
                                   f"{self.p.dp_replicate} replicas")[1]
        return last

    def _reductions(self, s: int, v: int, k: int, n: int) -> list[tuple]:
        """What :meth:`_reduce_scatter` issues for part ``k`` of ``n`` of virtual stage ``v``
        on stage ``s``, the same for every micro-batch: per group with gradients to reduce,
        its collective (one ``Comm`` per size and group), its label less the micro-batch and
        part, and whether it crosses the gathers' links; kept in the config's memo (all of
        it reads the config and the pricer only)."""
        key = ("reductions", s, v, k, n)
        hit = self._memo.get(key)
        if hit is None:
            elements = self._part_elements(v, n)[k]
            hit = []
            for params, group, size in self.groups[s]:
                if size > 1 and params > 0 and elements[group] > 0:
                    rkey = ("grad_reduce", elements[group], group)  # one Comm per size, group
                    op = self._memo.get(rkey)
                    if op is None:
                        op = self._memo[rkey] = grad_reduce(self.cfg, elements[group], group,
                                                            width=self.fsdp_grad_bytes)
                    hit.append((op, group,
                                f"ZeRO-3 grad {op.kind.replace('_', '-')} {group} ",
                                on_gather_links(self.pricer, group)))
            self._memo[key] = hit
        return hit

    def _sharded_backward(self, s: int, v: int, chunk: int, deps: list[int], mb: int,
                          alone: bool = True) -> int:
        """A backward under ZeRO-3 / FSDP (micro-batch ``mb``'s), a task per layer whose
        gradients are reduce-scattered as soon as its backward ends (FSDP's post-backward hook
        per wrapped unit, FSDP2's per block, DeepSpeed's reduce buckets with overlap_comm), so
        the reductions run under the layers still to go and only the last one is exposed."""
        parts, gathers = self._backward_parts(v, bool(self.lone and alone))
        # DeepSpeed's 2021 stage 3 calls torch.cuda.synchronize() before every parameter gather
        # (``_allgather_param``), the next layer's included: it waits for the reductions too
        waits = self.p.zero3_gather == "per_parameter"
        ids: list[int] = []
        reduced: list[int] = []
        first = len(self.fsdp_reduce[s])
        name = "last" if mb == self.last_mb else f"mb{mb}"
        before: list[int] = []  # the reduce-scatters of the part before ``reduced``'s
        got: list[int] = []  # each block's gather task
        for k, part in enumerate(parts):
            if gathers is not None:  # issued as block k - 1 starts: after part k - 2
                for j in ((0, 1) if k == 0 else (k + 1,)):
                    if j < len(gathers):
                        got.append(self.add((s, "dp"), gathers[j],
                                            list(deps) if j < 2 else [ids[-1]],
                                            f"FSDP all-gather {name} c{chunk} part{j}", DP))
                        ops = (self.lone.block_ops if self.lone is not None and gathers is
                               self.lone.blocks.get(v) else self.block_ops).get(v)
                        if ops is not None:
                            self.collectives[got[-1]] = tuple((op, 1) for op in ops[j])
            ids.append(self.add((s, "compute"), part,
                                (list(deps) if k == 0 else [ids[-1]] + (reduced if waits else [])
                                 + (before if self.rs_wait else []))
                                + ([got[k]] if gathers is not None else []),
                                f"B {name} c{chunk} part{k}"))
            n = len(self.fsdp_reduce[s])
            self._reduce_scatter(s, ids[-1], mb, v, (k, len(parts)))
            before, reduced = reduced, self.fsdp_reduce[s][n:]
        if self.sync_every_mb and mb != self.last_mb:  # finalize_backward's wait
            return self.add((s, "compute"), 0.0, [ids[-1], *self.fsdp_reduce[s][first:]],
                            f"FSDP finalize_backward mb{mb} c{chunk}")
        return ids[-1]

    def _backward_parts(self, v: int, lone: bool) -> tuple[list[Priced], list[float] | None]:
        """What :meth:`_sharded_backward` runs of virtual stage ``v``'s backward, the same for
        every micro-batch: the pass of each of its tasks and each block's all-gather (None:
        the pass holds its gather waits), kept per graph (``lone``: a cool-down backward, the
        combined 1F1B's ``LonePasses``)."""
        hit = self._parts.get((v, lone))
        if hit is not None:
            return hit
        # the FSDP gather waits, then the chunk's backward (a cool-down one: alone)
        ch, work, blocks = (self.lone.chunks[v], self.lone.work[v][1], self.lone.blocks) \
            if lone else (self.chunks[v], self.work[v][1], self.block_gathers)
        lead, trail = _around(work, ch.bwd)
        layers = list(ch.bwd_layers) or [interned(())]
        # each regathered block's all-gather as a task on the sharding group's stream, issued
        # when the block before it starts (one ahead), queued there with the reductions in
        # issue order, in place of the pass's wait (``sharded_passes.unit_gather_passes``)
        gathers = blocks.get(v)
        if gathers is not None and (len(gathers) != len(layers) or self.gather_once):
            gathers = None
        if gathers is not None:
            lead = interned(tuple(seg for seg in lead.segments if seg[2] != GATHER_WAIT))
        parts = [lead + ch.bwd_head + layers[0], *layers[1:]]
        parts[-1] = parts[-1] + ch.bwd_tail + trail
        if self.gather_once:  # post_backward of every group once the whole backward is done
            parts = [sum(parts[1:], parts[0])]
        hit = self._parts[v, lone] = (parts, gathers)
        return hit

    def split_last_backward(self, s: int, v: int, chunk: int, deps: list[int],
                            mb: int | None = None) -> int:
        """The last micro-batch's backward (micro-batch ``mb``'s where every backward reduces,
        ``reduce_every_mb``), split where gradient buckets become ready. On the last virtual
        stage, one of the first ``Deferral.n`` micro-batches leaves its output layer's weight
        gradient to the drain (``deferred_wgrad``): Megatron-core defers a backward while its
        buffer holds fewer than the limit, whatever reduces the gradients (Megatron-LM
        7094270c6f tensor_parallel/layers.py L453-457), so under ``reduce_every_mb`` a partial
        limit's earlier split backwards defer too (settle59; only ``n == m`` did before)."""
        ch = self.lone.chunks[v] if self.lone else self.chunks[v]  # a cool-down backward
        deferred = self.deferral is not None and v == len(self.chunks) - 1 and \
            (self.m - 1 if mb is None else mb) < self.deferral.n
        if deferred:
            ch = self.deferral.chunk  # type: ignore[union-attr]
        chunk_params = sum(params for params, _, _ in self.groups[s]) / self.vpp
        n_buckets = dp_bucket_count(self.cfg, ch.layers, chunk_params, s, chunk)
        buckets = self._splits.get((v, n_buckets, deferred))
        if buckets is None:
            ranges = self.cfg.virtual_ranges
            # Megatron's buckets, where the backward makes them ready (one: the whole chunk)
            bounds, shares = ((0, ch.layers), ((1.0, 1.0),)) if n_buckets == 1 else \
                bucket_ready(self.cfg, ranges[v], v == 0, v == len(ranges) - 1)
            self._shares[(v, n_buckets)] = shares
            split = len(shares)
            # what the framework's DDP runs over each bucket before its collective, where the
            # bucket becomes ready: one per Megatron bucket (one bucket without the overlap,
            # checked from finish_grad_sync after the backward)
            real = 1 if n_buckets == 1 or not self.p.overlap_grad_reduce else \
                sum(1 for share in shares if any(share))
            prep = self.pricer.price(ddp_bucket_prep(self.cfg, chunk_params / real))
            buckets = self._splits[(v, n_buckets, deferred)] = []
            for k in range(split):
                parts = list(ch.bwd_layers[bounds[k]:bounds[k + 1]])
                if k == 0:
                    parts.insert(0, ch.bwd_head)
                if k == split - 1:
                    parts.append(ch.bwd_tail)
                parts.append(prep * (int(k == split - 1) if real == 1 else int(any(shares[k]))))
                buckets.append(concat(parts))
        ids: list[int] = []
        name = "last" if mb is None or mb == self.last_mb else f"mb{mb}"
        for k, bucket in enumerate(buckets):
            ids.append(self.add((s, "compute"), bucket, list(deps) if k == 0 else [ids[-1]],
                                f"B {name} c{chunk} part{k}"))
        self.last_bwd[v] = ids
        self.bucket_shares[v] = self._shares[(v, n_buckets)]
        if self.reduce_every_mb:
            self._bucket_reductions(s, v, chunk, name, ids)
        return ids[-1]

    def _bucket_reductions(self, s: int, v: int, chunk: int, name: str,
                           ready: list[int]) -> None:
        """Under ``reduce_every_mb``, this backward's buckets reduce-scattered on the data-
        parallel stream as they become ready, each after its gradients' copy into the bucket
        there (``workload.sharding.bucket_copy_in``); the step waits for them all
        (``fsdp_reduce``, which ``optimizer_steps`` reads)."""
        shares = self.bucket_shares[v]
        if len(shares) != len(ready):  # a pass not split: the whole chunk
            shares = None
        for k, r in enumerate(ready):
            for params, group, size in self.groups[s]:
                part = params / self.vpp / len(ready) if shares is None else \
                    params / self.vpp * shares[k][group == "edp"]
                if size <= 1 or part <= 0:
                    continue
                dep = r
                copy = bucket_copy_in(self.cfg, part)
                if copy is not None:
                    dep = self.add((s, "dp"), self.pricer.compute.time(copy), [r],
                                   f"grad bucket copy {group} {name} c{chunk} b{k}")
                self.fsdp_reduce[s].append(self.comm(
                    s, "grad_reduce", "reduce_scatter", part * self.grad_bytes, group, [dep],
                    f"grad reduce_scatter {group} {name} c{chunk} b{k}",
                    self.fixed_buckets(part)))


def _around(work: Priced, bwd: Priced) -> tuple[Priced, Priced]:
    """The segments of a backward pass ``work`` before and after the chunk's own backward
    ``bwd`` (``sharded_passes``: FSDP's gather wait before it; DeepSpeed's per-tensor gathers
    before it and its reduce bucket's copies after it)."""
    seg, n = work.segments, len(bwd.segments)
    for i in range(len(seg) - n, -1, -1):  # from the end: an empty backward follows all
        if seg[i:i + n] == bwd.segments:
            return interned(seg[:i]), interned(seg[i + n:])
    raise ValueError("the pass does not hold the chunk's backward")
