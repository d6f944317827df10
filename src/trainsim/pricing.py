"""Pricing op lists: each op's time on the configured compute model and network, with the
overlaps a framework arranges inside a pass (TP collectives under GEMMs, ring attention's
exchange under attention, expert all-to-alls under other micro-batches) and the GPU's waits for
the host's launches.

A ``Priced`` (``trainsim.priced``) is an ordered tuple of (category, seconds, name) segments;
the simulator places them on streams and the report sums them by category. What a GEMM loses
beside Transformer Engine's userbuffer overlaps and on a static tile schedule is
``trainsim.gemm_overlap``'s (its names importable from here too).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace

from trainsim.catalog import gpu as catalog_gpu
from trainsim.catalog.frameworks import profile_supports
from trainsim.collectives.cp_hops import cp_hop_sms, mixed_ring, mixed_ring_hop_sms
from trainsim.collectives.ep_kernels import domain_exchange_s, ep_a2a_sms
from trainsim.collectives.p2p_channels import batched_p2p_s
from trainsim.compute import compute_model_for, host
from trainsim.compute.roofline import full_wave_extra
from trainsim.config import RunConfig
from trainsim.gemm_overlap import (  # also from here
    STATIC_TILE_GEMM_SHARE,
    TE_PIPELINE_SPLITS,
    UB_COMM_SMS,
    beside_all_sms,
    fixed_grid_scale,
    on_fixed_grid,
    pipeline_rs_exposed,
    ring_rs_exposed,
    static_tile_schedule,
    ub_rs_sites,
)
from trainsim.network import network_for
from trainsim.priced import Priced, interned, join, kept, shared  # shared: also from here
from trainsim.workload.graph_scope import (
    PartTables,
    captured_launches,
    captured_parts,
    graph_joins,
    part_tables,
)
from trainsim.workload.moe_dispatch import dedups_per_node, ep_stride, exchange_sms
from trainsim.workload.ops import Comm, Elementwise, Gemm, Op
from trainsim.workload.shard import shard_of

COMPUTE, TP, CP, EP, PP, DP, OPT = ("compute", "tp_comm", "cp_comm", "ep_comm", "pp_comm",
                                     "dp_comm", "optimizer")
DP_STREAMS = ("dp", "dp_rep", "edp")
"""A stage's data-parallel streams in the task graph: the sharding (or data-parallel) group's
one NCCL stream, and under ZeRO-3 / FSDP those of reductions over process groups of their own
that run beside it (HSDP's replicas: FSDP1 ``_all_reduce_stream``, FSDP2 ``all_reduce_stream``;
the experts' data-parallel group), each holding a collective's SMs (``sm_share['dp']``)."""
HOST = "host"  # the GPU waiting for the host to launch (compute.host); reported in other_s
COMM_SMS = 16
"""SMs a collective occupies while it runs beside compute: NCCL runs one thread block per
channel, and Transformer Engine's overlap kernels are given 16-24 of an H100's 132 SMs for
pipelined all-gather/reduce-scatter (NeMo's ub_cfg_h100_h8192_tp4_mbs1_seqlen4096: proj_fprop
24, fc2_fprop 16). The compute it hides behind runs on the other SMs, so a hidden collective of
t seconds still costs t * COMM_SMS / num_sms."""

P2P_SMS = 2
"""SMs a pipeline send/receive holds beside compute: NCCL runs point-to-point transfers on 2
channels per peer, one thread block each ("2 p2p channels per peer" in NCCL's init log, e.g.
NVIDIA/nccl #1189), where a collective spreads over all its channels (COMM_SMS)."""


class Pricer:
    """Prices ops on the configured compute model and network."""

    def __init__(self, cfg: RunConfig, sm_share: dict[str, float] | None = None) -> None:
        self.cfg = cfg
        self.compute = compute_model_for(cfg.cluster.gpu, cfg.cluster.compute_db, catalog_gpu)
        store = kept() if type(self) is Pricer else None
        # inside ``shared``: one analytical network per cluster, its collectives priced once
        self.net = store.network(cfg.cluster, network_for) \
            if store is not None and cfg.cluster.network_backend != "flow" \
            else network_for(cfg.cluster)
        p = cfg.parallel
        self.spans = {
            "tp": self.net.span(p.tp, 1),
            "cp": self.net.span(p.cp, p.tp),
            # the data-parallel communicators at their channel cap (parallel.dp_max_ctas)
            "dp": replace(self.net.span(cfg.dp, p.tp * p.cp), max_channels=p.dp_max_ctas),
            # the sharded state's group: one HSDP replica's ranks (all dp x cp without HSDP)
            "dp_cp": replace(self.net.span(cfg.shard_ranks, p.tp), max_channels=p.dp_max_ctas),
            # HSDP's replicas of one shard: the outer ranks, a replica's size apart
            "dp_rep": self.net.span(p.dp_replicate, p.tp * cfg.shard_ranks),
            "tp_dp_cp": self.net.span(p.tp * p.cp * cfg.dp, 1),  # a pipeline stage's ranks
            "tp_cp": self.net.span(p.tp * p.cp, 1),  # Megatron-core's tensor-and-context group
            "pp": self.net.span(min(p.pp, 2), p.tp * p.cp * cfg.dp),  # pp=1: no send
            "embd": self.net.span(2, p.tp * p.cp * cfg.dp * max(p.pp - 1, 1)),
            # Megatron-core's expert rank order: etp-ep-edp-pp (0.9: tp-cp-ep-dp-pp, ep_stride)
            "ep": self.net.span(p.ep, ep_stride(cfg)),
            "etp": self.net.span(p.etp, 1),
            "edp": self.net.span(cfg.edp, p.etp * p.ep),
        }
        # CUDA graphs replay each layer's kernels without the host (compute.host); graphs over
        # parts of a layer (training.cuda_graph_scope) leave the rest its host cost
        self.graph_parts = captured_parts(cfg)
        """Layer parts that scoped CUDA graphs replay (``workload.graph_scope``); empty: none
        scoped (eager, or whole-layer graphs)."""
        self._part_tables: PartTables | None = None
        whole = cfg.training.cuda_graphs and not self.graph_parts
        self.host_s_per_kernel = 0.0 if whole else host.HOST_S_PER_KERNEL
        self.blocking = cfg.training.cuda_launch_blocking
        """CUDA_LAUNCH_BLOCKING: launches wait for their kernel, so no collective overlaps
        compute and every launch's host cost is exposed."""
        sms = cfg.cluster.gpu.num_sms
        ep_sms = exchange_sms(cfg) or ep_a2a_sms(cfg, self.spans["ep"])
        self.sm_share = {"dp": COMM_SMS / sms, "pp": P2P_SMS / sms, "ep": ep_sms / sms,
                         "cp": cp_hop_sms(self.spans["cp"], COMM_SMS, P2P_SMS) / sms, **(sm_share or {})}
        """Share of the SMs a collective (on the data-parallel stream, or inside a pass), a
        pipeline send and an expert exchange hidden behind other work (the dispatcher's
        kernels, ``moe_dispatch.exchange_sms``; an NCCL all-to-all, ``ep_a2a_sms``) hold while
        they run beside compute
        (``sm_share`` overrides: DualPipe's pairs, whose all-to-alls run on SMs of their
        own)."""
        self.grid_scale = fixed_grid_scale(cfg)  # fp8 GEMMs on the SMs the exchange leaves
        on_grid = self.grid_scale != 1.0
        held = 0.0 if on_grid else self.sm_share["ep"]
        self.ep_gemm_share = max(held, STATIC_TILE_GEMM_SHARE) \
            if static_tile_schedule(cfg) and "ep" not in (sm_share or {}) and not on_grid \
            else held
        """Share of the GEMMs' time lost beside an expert exchange in a combined-1F1B pair
        (``ep_pairs.exposed``): ``STATIC_TILE_GEMM_SHARE`` on a GPU whose GEMMs keep a static
        tile schedule, else the exchange's SMs (``sm_share['ep']``; an override of it, the
        exchange on SMs of its own, holds for the GEMMs too); none on a fixed grid."""
        self.ub_margin = sms / (sms - UB_COMM_SMS)
        self.ub_all_sms = p.tp_comm_overlap_method == "userbuffers" \
            and profile_supports(cfg, "ub_gemm_all_sms")
        """Transformer Engine launches the pipeline and bulk overlaps' GEMMs for all SMs
        (``set_sm_margin`` 0): no ``ub_margin``; beside the communication kernels the GEMM
        loses ``ub_gemm_share`` of the time they hold SMs (``beside_all_sms``)."""
        self.ub_bulk_all_sms = self.ub_all_sms or p.tp_comm_overlap_method == "userbuffers" \
            and profile_supports(cfg, "ub_bulk_all_sms")
        """The bulk overlaps' GEMMs alone launched for all SMs (``set_sm_margin`` 0 for the bulk
        methods, 1 for the pipeline ones in the framework's ub_cfgs), as ``ub_all_sms``."""
        self.ub_rs = ub_rs_sites(cfg)
        """The framework's own reduce-scatter overlap of each forward GEMM (``ub_rs_sites``)."""
        self.ub_gemm_share = 1.0 if static_tile_schedule(cfg) else UB_COMM_SMS / sms
        """Slowdown of a GEMM that Transformer Engine's pipeline or bulk TP overlap runs beside
        its communication kernels (``UB_COMM_SMS``)."""
        # inside ``shared``: what price_ops reads of this pricer (the cluster names the compute
        # model, its database and the network; a subclass may price otherwise: never shared)
        self._store = store
        self._seen: list[dict[Op, str]] = []  # the compute ops kept prices hold, their models
        self._own: dict[tuple[Op, ...], tuple] | None = \
            {} if store is None and type(self) is Pricer else None
        """Outside ``shared``: this pricer's op lists priced so far, by their ops (see
        ``_lookup``); None for a subclass, which may price otherwise."""
        if self._store is not None:
            self._store.clusters[id(cfg.cluster)] = cfg.cluster
            # comm_time also reads the dispatcher (DeepEP's / HybridEP's kernel bound) and the
            # SMs its exchange kernels hold
            self._sig = (id(cfg.cluster), tuple(self.spans.values()), p.tp, p.tp_comm_overlap,
                         p.tp_comm_overlap_method, p.moe_overlap_ep_comm,
                         p.moe_token_dispatcher_type, exchange_sms(cfg), self.grid_scale,
                         self.host_s_per_kernel, self.blocking, tuple(self.sm_share.items()),
                         tuple(sorted(self.graph_parts)), self.ub_all_sms, self.ub_bulk_all_sms,
                         tuple(sorted(self.ub_rs.items())))
            # the store's own number for the signature (equal signatures, one number): what
            # keys its priced op lists and collectives, hashed in one step where the tuple
            # hashes its eleven spans on every lookup (a twentieth of a search's main process)
            self._sig_no = self._store.sigs.setdefault(self._sig, len(self._store.sigs))

    def compute_sources(self) -> dict[str, int]:
        """Distinct compute ops this pricer priced, by the model that priced them (the
        compute model's ``sources``, with the ops of the prices it took from ``shared``)."""
        if not self._seen:
            return dict(self.compute.sources)
        merged: dict[Op, str] = {}
        for seen in self._seen:
            merged.update(seen)
        out = Counter(self.compute.sources)
        own = self.compute._cache  # what the compute model priced itself is counted there
        for op, source in merged.items():
            if op not in own:
                out[source] += 1
        return dict(out)

    def comm_time(self, op: Comm) -> float:
        """Seconds of one collective or send; inside ``shared``, kept by the pricing signature
        and the op (the signature holds what :meth:`_comm_time` reads: the cluster, the group
        spans, the dispatcher and the SMs of its exchange kernels), so the pricers of a
        search's candidates price each collective once (~2 % of a search worker's time)."""
        store = self._store
        if store is None:
            return self._comm_time(op)
        key = (self._sig_no, op)
        hit = store.comms.get(key)
        if hit is None:
            if len(store.comms) >= store.MAX_ENTRIES:
                store.comms.clear()
            hit = store.comms[key] = self._comm_time(op)
        return hit

    def _comm_time(self, op: Comm) -> float:
        span = self.spans[op.group]
        t = self.net.collective(op.kind, op.bytes, span).time_s
        if op.kind == "send_recv" and op.group == "cp" and span.size > 1 and span.nodes == 1:
            # a CP ring's send inside one node: NCCL gives each p2p operation of the CP
            # communicator its share of the channels, set by the communicator's size (nRanks),
            # not by how many peers the operation talks to (NVIDIA/nccl v2.21.5-1 src/enqueue.cc
            # ``scheduleP2pTasksToPlan``: ``nChannelsMin`` halved while ``nChannelsMin * nRanks
            # > p2pnChannels``; ``collectives.p2p_channels.batched_p2p_channels``). torch's ring
            # attention passes dK/dV (and, all-to-all rotater, K/V) on with
            # ``ft_c.permute_tensor``, an ``all_to_all_single`` on the CP group whose one
            # non-empty split is an ncclSend/ncclRecv pair in one ncclGroup (torch/csrc/cuda/
            # nccl.cpp ``all2all_single_unequal_split``). Transformer Engine's p2p CP batches its
            # pair on cp_group only at CP 2; above, each lone isend/irecv runs on a two-rank
            # communicator (``Comm.p2p_ranks``, ``workload.layers``). At CP 8 a 1 GB send on
            # the group gets 16 channels, at CP 2-4 the links bind.
            t = max(t, batched_p2p_s(op.bytes, op.p2p_ranks or span.size))
        dispatcher = self.cfg.parallel.moe_token_dispatcher_type
        ep_kernel = op.group == "ep" and op.kind == "all_to_all" and dedups_per_node(dispatcher)
        if ep_kernel and span.nodes == 1:
            # at least what DeepEP's / HybridEP's own NVLink kernels take (collectives.ep_kernels;
            # the fit of their constants used the same max with NCCL's time)
            t = max(t, domain_exchange_s(dispatcher, op.bytes, span.size,
                                         self.cfg.cluster.nvlink_bw_Bps, exchange_sms(self.cfg)))
        if op.domain_fanout and span.nodes > 1:
            # DeepEP's internode kernels (deepseek-ai/DeepEP v1.2.1 csrc/kernels/internode.cu,
            # ``dispatch``/``combine``): RDMA to the same-index GPU of each destination node,
            # whose forwarder warps copy every arrival on to its destination ranks over NVLink
            # while later chunks are still arriving; the slower stage bounds the exchange. The
            # forward is an all-to-all inside the domain of what the rank forwards.
            domain = self.net.span(span.per_node, 1)
            fwd = self.net.collective("all_to_all", op.bytes * op.domain_fanout, domain).time_s
            if ep_kernel:  # the forwarders' NVLink copies (their SMs are not priced)
                fwd = max(fwd, domain_exchange_s(dispatcher, op.bytes * op.domain_fanout,
                                                 span.per_node, self.cfg.cluster.nvlink_bw_Bps,
                                                 None))
            t = max(t, fwd)
        return t

    def hidden_behind(self, comm_s: float, compute_s: float, share: str = "dp") -> float:
        """Exposed time of a collective run beside ``compute_s`` of compute: what the compute
        cannot cover, plus the compute's slowdown from the SMs the collective holds meanwhile
        (a collective's share, ``sm_share['dp']``; an expert all-to-all's, ``sm_share['ep']``)."""
        return max(0.0, comm_s - compute_s) + min(comm_s, compute_s) * self.sm_share[share]

    def cp_hop_share(self, op: Comm, comm_s: float) -> float:
        """Share of the SMs a hidden context-parallel ring hop of ``comm_s`` seconds holds on
        average while it runs: in a ``cp_hops.mixed_ring`` the NVLink neighbour's kernel only
        for its own transfer (the pair's send, at least ``batched_p2p_s``), the network
        neighbour's for the whole hop (``cp_hops.mixed_ring_hop_sms``); ``sm_share['cp']``
        (``cp_hops.cp_hop_sms``) in every other ring."""
        if not mixed_ring(self.spans["cp"], op.p2p_ranks):
            return self.sm_share["cp"]
        pair = self.net.span(2, self.cfg.parallel.tp)  # the neighbour in the node
        inside = max(self.net.collective("send_recv", op.bytes, pair).time_s,
                     batched_p2p_s(op.bytes, 2))
        return mixed_ring_hop_sms(comm_s, inside, COMM_SMS, P2P_SMS) \
            / self.cfg.cluster.gpu.num_sms

    def _overlap_splits(self, ops: list[Op]) -> dict[int, int]:
        """Chunks each GEMM runs in under the TP overlap (``tp_comm_overlap_method``).
        Transformer Engine's userbuffers (TE ``initialize_ub`` defaults, pytorch/module/base.py):
        a GEMM fed by an overlapped all-gather (qkv and fc1 forward, proj and fc2 dgrad:
        ``ring_exchange``) runs as tp GEMMs of m/tp rows, one per ring step; a GEMM whose output
        is reduce-scattered (proj and fc2 forward: ``pipeline``) as ``num_splits`` = 4 GEMMs of
        m/4 rows. PyTorch's async TP splits both kinds into tp chunks. Bulk overlaps (the
        backward's re-gather and input-gradient reduce-scatter, flagged
        ``overlap_with_previous``) and fused kernels leave their GEMM whole."""
        method = self.cfg.parallel.tp_comm_overlap_method
        if method == "fused":
            return {}
        scatter_chunks = TE_PIPELINE_SPLITS if method == "userbuffers" else self.cfg.parallel.tp
        out: dict[int, int] = {}
        for i, op in enumerate(ops):
            if not (isinstance(op, Comm) and op.group == "tp") or op.overlap_with_previous \
                    or op.waited or not op.in_tp_overlap:  # an amax reduction, the model's ends
                continue
            if op.kind == "all_gather":
                j = next((j for j in range(i + 1, len(ops)) if isinstance(ops[j], Gemm)), None)
                if j is not None and not ops[j].grouped:
                    out[j] = self.cfg.parallel.tp
            elif i > 0 and isinstance(ops[i - 1], Gemm) and not ops[i - 1].grouped:
                site = self.ub_rs.get(ops[i - 1].name, ("pipeline", 0))[0]
                out[i - 1] = {"atomic": 1, "ring_exchange": self.cfg.parallel.tp}.get(
                    site, scatter_chunks)
        return out

    def _partials_sum(self, op: Comm) -> Elementwise:
        """PyTorch's async TP matmul-reduce-scatter (torch/distributed/_symmetric_memory
        ``_fused_matmul_reduce_scatter_impl``) writes each chunk's partial product to its
        owner (``_pipelined_produce_and_all2all`` into ``stacked_partials``, tp chunks of the
        rank's output rows) and then sums them in one reduction kernel (``torch.sum`` over the
        tp partials): it reads the tp partials, ``op.bytes`` in all, and writes one ``1/tp``
        shard, on the compute stream after the last chunk arrives."""
        return Elementwise(f"{op.name}.partials_sum",
                           bytes=op.bytes * (1 + 1 / self.cfg.parallel.tp))

    def _shard_to_symm_mem(self, op: Comm) -> Elementwise:
        """PyTorch's async TP all-gather-matmul (torch/distributed/_symmetric_memory
        ``_pipelined_multi_all_gather_and_consume``, the ``fused_all_gather_matmul`` that
        Inductor's micro-pipeline pass makes) first copies the rank's own shard into its
        symmetric-memory buffer ("mv") and barriers, on the compute stream before the first
        chunk's GEMM: the source gives up overlapping them ("to prevent suboptimal scenarios,
        we are giving up the chance to overlap 'mv' and 'b' with the first shard_consumer").
        Reads and writes one ``1/tp`` shard of ``op.bytes``."""
        return Elementwise(f"{op.name}.symm_mem_copy", bytes=2 * op.bytes / self.cfg.parallel.tp)

    def price(self, ops: list[Op]) -> Priced:
        """Segments of an op list (see ``price_ops``)."""
        return self._lookup(ops)[0]

    def price_ops(self, ops: list[Op]) -> tuple[Priced, list[Op]]:
        """Segments of an op list, and the op behind each segment (see ``_price_ops``);
        inside ``shared``, the same list priced under the same settings is priced once."""
        priced, order, _, _ = self._lookup(ops)
        return priced, order if isinstance(order, list) else list(order)

    def price_at(self, ops: list[Op]) -> tuple[Priced, list[Op], list[int]]:
        """``price_ops`` with, for each segment, the position in ``ops`` of the op behind it
        (-1 for an op the pricing made: a host wait, a partial-sum kernel). Inside ``shared``
        the ops behind a kept price are those of the first equal list priced, not ``ops``'
        own objects: find an op of ``ops`` by its position, never by its identity."""
        priced, order, _, at = self._lookup(ops)
        if at is None:
            return self._located(ops, priced, order)  # type: ignore[arg-type]
        return priced, list(order), list(at)

    def _lookup(self, ops: list[Op]) -> tuple[Priced, Sequence[Op], dict[Op, str] | None,
                                              tuple[int, ...] | None]:
        """The store's entry for ``ops``, (segments, ops behind them, the kernels' sources,
        their positions), priced and kept on a miss; outside ``shared`` (or for an op with an
        unhashable field) ``ops`` priced afresh, as (segments, ops behind them, None, None):
        the positions are then left to ``price_at``, the one caller that reads them."""
        store = self._store
        if store is None:
            return self._own_lookup(ops)
        key = (self._sig_no, *ops)
        try:
            hit = store.prices.get(key)
        except TypeError:  # an op with an unhashable field
            return (*self._price_ops(ops, self.compute.time), None, None)
        if hit is None:
            times = store.times.setdefault(self._sig[0], {})
            seen: dict[Op, str] = {}

            def compute_time(op: Op) -> float:
                t = times.get(op)
                if t is None:
                    t = times[op] = self.compute.explain(op)  # type: ignore[arg-type]
                seen[op] = t[1]
                return t[0]

            priced, order, at = self._located(ops, *self._price_ops(ops, compute_time))
            if len(store.joined) + len(store.prices) >= store.MAX_ENTRIES:
                store.joined.clear()
                store.prices.clear()
            hit = store.prices[key] = (priced, tuple(order), seen, tuple(at))
        self._seen.append(hit[2])
        return hit

    def _own_lookup(self, ops: list[Op]) -> tuple[Priced, Sequence[Op], None,
                                                  tuple[int, ...] | None]:
        """``_lookup`` outside ``shared``: an op list equal to one this pricer priced before
        (a simulation prices each pass for its lower bound, its truncated steady-state runs and
        a fallback's full graph, and a tuner's bound and simulation of one candidate share
        their pricer) gets that list's entry, (segments, ops behind them, None, positions),
        the same floats as pricing it again: ``_price_ops`` reads the ops' fields and what was
        fixed when this pricer was built, never an op's identity. Kept only for lists whose
        ops are distinct objects (the positions of the ops behind the segments, which
        ``price_at`` reads, are then the same for every equal list); any other list, or one
        with an unhashable field, is priced afresh as (segments, ops behind them, None,
        None)."""
        own = self._own
        if own is None or len(set(map(id, ops))) != len(ops):
            return (*self._price_ops(ops, self.compute.time), None, None)
        key = tuple(ops)
        try:
            hit = own.get(key)
        except TypeError:  # an op with an unhashable field
            return (*self._price_ops(ops, self.compute.time), None, None)
        if hit is None:
            priced, order, at = self._located(ops, *self._price_ops(ops, self.compute.time))
            hit = own[key] = (priced, tuple(order), None, tuple(at))
        return hit

    @staticmethod
    def _located(ops: list[Op], priced: Priced, order: list[Op]
                 ) -> tuple[Priced, list[Op], list[int]]:
        index = {id(op): i for i, op in enumerate(ops)}
        return priced, order, [index.get(id(op), -1) for op in order]

    def _price_ops(self, ops: list[Op], compute_time: Callable[[Op], float]
                   ) -> tuple[Priced, list[Op]]:
        """Segments of an op list, and the op behind each segment.

        Communication runs blocking, except: ``overlap_with_previous`` hides behind the
        preceding compute op; under tp_comm_overlap a TP all-gather hides behind the GEMM that
        consumes it (its exposed rest is placed after that GEMM) and other TP collectives behind
        the GEMM that produced them, the GEMM in chunks and on fewer SMs as the framework's
        ``tp_comm_overlap_method`` runs it (``_overlap_splits``, ``UB_COMM_SMS``); with moe_overlap_ep_comm, expert
        all-to-alls hide behind the list's whole compute, as when one micro-batch's dispatch
        runs under another's attention and MLP (DeepSeek-V3's DualPipe, Megatron-core's
        overlapped 1F1B). Where the host cannot launch the list as fast as the GPU runs it
        (``compute.host``), a last ``host`` segment holds the GPU's wait."""
        segs: list[tuple[str, float, str]] = []
        order: list[Op] = []
        p = self.cfg.parallel
        pooled: list[tuple[tuple[str, float, str], Comm, int]] = []  # (seg, op, issued at)
        gather: tuple[tuple[str, float, str], Comm] | None = None  # waits for its GEMM
        beside: dict[int, host.Beside] = {}  # segment -> (the one it runs beside, time, share)

        def add(seg: tuple[str, float, str], op: Op) -> None:
            segs.append(seg)
            order.append(op)

        def add_beside(seg: tuple[str, float, str], op: Op, comm_s: float, share: float,
                       j: int = -1) -> None:  # beside segment j (for the host's clock)
            beside[len(segs)] = (len(segs) + j if j < 0 else j, comm_s, share)
            add(seg, op)

        if self.grid_scale != 1.0:  # ``gemm_overlap.fixed_grid_scale``
            compute_time = self._on_grid(compute_time)
        split = self._overlap_splits(ops) if p.tp_comm_overlap else {}
        method = p.tp_comm_overlap_method
        for i, op in enumerate(ops):
            if isinstance(op, Comm):
                t = self.comm_time(op)
                cat = {"tp": TP, "cp": CP, "pp": PP, "ep": EP, "etp": EP}.get(op.group, DP)
                if self.blocking:  # the launch returns when the collective is done
                    add((cat, t, op.name), op)
                    continue
                if p.moe_overlap_ep_comm and op.group in ("ep", "etp"):
                    pooled.append(((cat, t, op.name), op, len(segs)))
                    continue
                if op.beside_next:  # side-stream compute issued after it runs meanwhile
                    nxt = [o for o in ops[i + 1:] if not isinstance(o, Comm)][:op.beside_next]
                    # an expert all-to-all holds its p2p channels' SMs (``ep_a2a_sms``)
                    t = self.hidden_behind(t, sum(compute_time(o) for o in nxt),
                                           "ep" if op.group == "ep" else "dp")
                    add((cat, t, op.name), op)
                    continue
                tp_overlap = p.tp_comm_overlap and op.group == "tp" and not op.waited \
                    and op.in_tp_overlap
                if tp_overlap and op.kind == "all_gather" and not op.overlap_with_previous:
                    gather = ((cat, t, op.name), op)
                    if method == "p2p":
                        mv = self._shard_to_symm_mem(op)
                        add((COMPUTE, compute_time(mv), mv.name), mv)
                    continue
                if tp_overlap and method != "fused" and segs and segs[-1][0] == COMPUTE:
                    # userbuffers' pipeline and bulk overlaps run the GEMM on the SMs their
                    # communication kernels leave (set_sm_margin); copy engines take none
                    c_cat, gemm, c_name = segs[-1]
                    piped = method == "userbuffers" and not op.overlap_with_previous \
                        and split.get(i - 1) == TE_PIPELINE_SPLITS
                    all_sms = self.ub_all_sms or self.ub_bulk_all_sms and op.overlap_with_previous
                    site = None if op.overlap_with_previous else self.ub_rs.get(c_name)
                    if site is not None:  # the framework's own method, margin of its SMs
                        all_sms = False
                        sms = self.cfg.cluster.gpu.num_sms
                        gemm *= sms / (sms - site[1])
                    elif method == "userbuffers" and not all_sms:
                        gemm *= self.ub_margin
                    segs[-1] = (c_cat, gemm, c_name)
                    gemm_at = len(segs) - 1
                    ring = site is not None and site[0] == "ring_exchange"
                    if (method == "p2p" or ring) and op.kind == "reduce_scatter":
                        total = self._partials_sum(op)
                        add((COMPUTE, compute_time(total), total.name), total)
                    if site is not None:
                        exposed = ring_rs_exposed(t, gemm, p.tp) if ring \
                            else pipeline_rs_exposed(t, gemm, TE_PIPELINE_SPLITS)
                        add_beside((cat, exposed, op.name), op, t, 0.0, gemm_at)
                        continue
                    exposed = max(0.0, t - gemm)  # a bulk overlap: beside the whole GEMM
                    if all_sms:
                        exposed = beside_all_sms(t, gemm, TE_PIPELINE_SPLITS if piped else 1,
                                                 self.ub_gemm_share)
                    elif piped:
                        exposed = pipeline_rs_exposed(t, gemm, TE_PIPELINE_SPLITS)
                    add_beside((cat, exposed, op.name), op, t, 0.0, gemm_at)
                    continue
                if (op.overlap_with_previous or tp_overlap) and segs \
                        and segs[-1][0] == COMPUTE:
                    share = self.cp_hop_share(op, t) if op.group == "cp" \
                        and op.kind == "send_recv" else self.sm_share["dp"]  # a ring hop's
                    c = segs[-1][1]
                    add_beside((cat, max(0.0, t - c) + min(t, c) * share, op.name), op, t, share)
                    continue
                add((cat, t, op.name), op)
            else:
                chunks = split.get(i, 1)
                if chunks > 1:  # one GEMM in chunks on TE's userbuffer streams
                    chunk = replace(op, m=-(-op.m // chunks),  # type: ignore[arg-type]
                                    batch=op.batch * chunks, grouped="userbuffers")
                    t = compute_time(chunk)
                else:
                    t = compute_time(op)
                add((COMPUTE, t, op.name), op)
                if gather is not None and isinstance(op, Gemm):
                    (cat, t, name), comm = gather
                    # a ring exchange moves the chunks with copy engines: the GEMM keeps its
                    # SMs; a fused kernel shares them while the collective runs
                    fused = method == "fused"
                    add_beside((cat, self.hidden_behind(t, segs[-1][1]) if fused
                                else max(0.0, t - segs[-1][1]), name), comm, t,
                               self.sm_share["dp"] if fused else 0.0)
                    gather = None
        if gather is not None:
            add(*gather)
        issued, busy = self._issued(segs, order, pooled)
        if pooled and beside:  # indices in the issued list, the pooled all-to-alls inserted
            ats = [a for _, _, a in pooled]
            beside = {i + sum(a <= i for a in ats): (j + sum(a <= j for a in ats), c, sh)
                      for i, (j, c, sh) in beside.items()}
        idle = host.exposed_s(issued, busy, self.host_s_per_kernel, self.blocking,
                              self.scoped_counts(issued), beside)
        # the pooled all-to-alls run on their own stream beside the compute stream's whole
        # span, the GPU's waits for the host included (a wait that longer compute fills, a
        # recomputed forward, hides no less communication than it did); the SMs they hold
        # slow only the compute they run beside
        compute = sum(t for cat, t, _ in segs if cat == COMPUTE)
        budget = compute + (idle if pooled else 0.0)
        grid = wave = 0.0  # compute on the fixed grid (not slowed); launched as a full wave
        for (cat, t, _), o in zip(segs, order) if pooled else ():
            if cat == COMPUTE and self.grid_scale != 1.0 and on_fixed_grid(o):
                grid += t
            elif cat == COMPUTE and isinstance(o, Elementwise) and o.full_wave:
                wave += t
        # shares of the list's compute slowed by the SMs held, and launched as a full wave
        off, waved = (1.0 - (grid + wave) / compute, wave / compute) if compute else (1.0, 0.0)
        sms = self.cfg.cluster.gpu.num_sms
        for (cat, t, name), op, _ in pooled:
            # the expert exchange holds its dispatcher's SMs; the NCCL collectives beside it
            # (ETP all-gather / reduce-scatter, routing-map and token-count all-gathers) a
            # collective's channels; a full-wave kernel loses whole waves (``full_wave_extra``)
            held = self.sm_share["ep" if op.kind == "all_to_all" else "dp"]
            share = held * off + full_wave_extra(sms, held * sms) * waved
            add((cat, max(0.0, t - budget) + min(t, compute) * share, name), op)
            budget, compute = max(0.0, budget - t), max(0.0, compute - t)
        if idle > 0.0:
            add((HOST, idle, "host_launch_wait"), Elementwise("host_launch_wait", 0.0, kernels=0))
        return Priced(tuple(segs)), order

    def _on_grid(self, compute_time: Callable[[Op], float]) -> Callable[[Op], float]:
        """``compute_time`` with the fp8 GEMMs on the fixed grid (``grid_scale``)."""
        return lambda op: compute_time(op) * (self.grid_scale if on_fixed_grid(op) else 1.0)

    def scoped_counts(self, ops: list[Op]) -> list[int] | None:
        """Host launches of each op under scoped CUDA graphs (``compute.host.scoped_launches``);
        None without them. The layer parts are read from this config's layers once."""
        if not self.graph_parts or not ops:
            return None
        if self._part_tables is None:
            self._part_tables = part_tables(self.cfg, shard_of(self.cfg))
        dense, moe, mamba = self._part_tables
        counts = [host.launches(op) for op in ops]
        kept = captured_launches(ops, dense, moe, self.graph_parts, counts, mamba)
        return host.scoped_launches(ops, kept, graph_joins(ops, dense, moe, mamba))

    @staticmethod
    def _issued(segs: list[tuple[str, float, str]], order: list[Op],
                pooled: list[tuple[tuple[str, float, str], Comm, int]]
                ) -> tuple[list[Op], list[float]]:
        """The ops in the order the host issues them, with the compute stream's time each
        takes: a pooled all-to-all (``moe_overlap_ep_comm``) is launched where the list has it
        and takes none (it runs on the communication stream)."""
        if not pooled:
            return order, [seg[1] for seg in segs]
        ops, busy = list(order), [seg[1] for seg in segs]
        for _, op, at in reversed(pooled):
            ops.insert(at, op)
            busy.insert(at, 0.0)
        return ops, busy


__all__ = ["COMM_SMS", "P2P_SMS", "STATIC_TILE_GEMM_SHARE", "TE_PIPELINE_SPLITS", "UB_COMM_SMS",
           "Priced", "Pricer", "beside_all_sms", "ep_a2a_sms", "interned", "join",
           "pipeline_rs_exposed", "shared", "static_tile_schedule"]
