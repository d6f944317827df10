"""What a SimAI workload file cannot state of the simulated run, one line each (export60).

SimAI's rows (aliyun/SimAI@0253299782 ``astra-sim-alibabacloud/astra-sim/workload/
Workload.cc``, ``iterate_hybrid_parallel_Transformer_fwd_in_bckwd``: a row's forward waits for
its compute, then issues its collective ``Blocking``; its input-gradient phase the same (LIFO,
``Blocking``); its weight-gradient collective is issued ``Non_Blocking`` and the row's next
forward waits for it) overlap no forward or input-gradient collective with compute, state one
pass kind per row (every micro-batch runs the same rows), have groups for TP / EP / DP / DP-EP
only, and data-parallel collectives only in the weight-gradient phase. :func:`simai_limits` compares
the rows written with the simulation's own collectives on the first stage
(``chakra_audit.audit_simai``) and its forward FSDP gathers, and says, with the figures,
where the file departs from the simulation; ``write_simai`` warns with each line.
"""

from __future__ import annotations

from trainsim.config import RunConfig
from trainsim.errors import TrainsimWarning
from trainsim.simulator import LayerSource


class SimAIApproximation(TrainsimWarning):
    """Something of the simulated run a SimAI workload file cannot state."""


def _mb(x: float) -> str:
    return f"{x / 1e6:.1f} MB" if x >= 1e5 else f"{x / 1e3:.1f} kB"


def _why(cfg: RunConfig) -> str:
    p = cfg.parallel
    if p.pipeline_schedule == "dualpipe":
        return ("DualPipe's F & B pairs hide one micro-batch's exchanges behind the other's "
                "compute")
    if p.moe_overlap_ep_comm:
        return ("the combined 1F1B hides a pass's exchanges behind its paired pass and blocks "
                "those of the passes it runs alone")
    return "the simulation overlaps them pass by pass"


def simai_limits(cfg: RunConfig, layer_source: LayerSource | None = None,
                 rows: list | None = None) -> list[str]:
    """One line for each thing the SimAI rows of ``cfg`` (``rows``, where written already)
    state otherwise than the simulation: per model-parallel collective type, bytes SimAI blocks
    on that the simulation hides (or the reverse) and bytes it keeps as time only; collectives
    over groups SimAI has none for; the forward's FSDP unit gathers, which SimAI can only run in
    a weight-gradient phase. Empty where the rows state the simulation's collectives."""
    from trainsim.interop.chakra_audit import audit_simai

    audit = audit_simai(cfg, layer_source, rows)
    out: list[str] = []
    kinds = sorted({k.split(":", 1)[1] for k in audit if k.startswith(("mp:", "hidden mp:"))})
    for kind in kinds:
        blocks, written = audit.get("mp:" + kind, (0.0, 0.0))
        hidden = audit.get("hidden mp:" + kind, (0.0, 0.0))[0]
        if abs(written - blocks) > max(2.0, 1e-6 * blocks):
            out.append(f"SimAI: the rows block on {_mb(written)} of {kind} a step where the "
                       f"simulation blocks on {_mb(blocks)} and hides {_mb(hidden)} behind "
                       f"compute: a row's collective blocks the same way in every micro-batch, "
                       f"and {_why(cfg)}")
        elif hidden > 2.0:
            out.append(f"SimAI: {_mb(hidden)} of {kind} a step that the simulation hides "
                       "behind compute are written as their exposed seconds in the compute "
                       "before them, not as traffic: a SimAI row cannot overlap a collective "
                       "with compute")
    for key, (sim, _) in audit.items():
        if " over " in key and sim > 0:
            kind, group = key.split(" over ")
            out.append(f"SimAI: no process group for the {kind} over '{group}' "
                       f"({_mb(sim)} a step): written as its exposed seconds in the compute "
                       "rows, not as traffic")
    forward = _forward_gathers(cfg, layer_source)
    if forward is not None:
        nbytes, wait, hidden = forward
        out.append(f"SimAI: the forwards' FSDP unit all-gathers ({_mb(nbytes)} a step) are "
                   "weight-gradient rows, issued in the backward and waited for by the row's "
                   "next forward: SimAI has no data-parallel collective in a forward, so it "
                   f"cannot state their prefetch one unit ahead (the simulation waits "
                   f"{wait * 1e3:.3f} ms for them and hides {hidden * 1e3:.3f} ms behind the "
                   "units' compute)")
    return out


def _forward_gathers(cfg: RunConfig, layer_source: LayerSource | None
                     ) -> tuple[float, float, float] | None:
    """(bytes, exposed seconds, hidden seconds) of the first stage's forward FSDP unit gathers
    over one iteration (``chakra_gathers``' walks); None where the run has none."""
    from trainsim.interop.chakra import trace_nodes
    from trainsim.interop.chakra_gathers import plan

    if cfg.parallel.effective_zero_stage < 3:
        return None
    builder, _ = trace_nodes(cfg, layer_source)
    pricer = builder.pricer
    nbytes = exposed = full = 0.0
    for task in builder.tasks:
        if task.stream[0] != 0 or task.detail is None:
            continue
        segs = list(getattr(task.detail, "segments", ()))
        for k, seg in enumerate(segs):
            record = pricer.walks.get(id(seg))
            walk = None if record is None else plan(segs, k, record, pricer.comm_time,
                                                    pricer.sm_share["dp"])
            if walk is None:
                continue
            ops = [c for unit in walk.units for c in unit]
            nbytes += sum(op.bytes for op in ops)
            exposed += seg[1] - walk.contention_s
            full += sum(map(pricer.comm_time, ops))
    return (nbytes, exposed, max(0.0, full - exposed)) if nbytes > 0 else None
