"""Bounded work: every command estimates how much it will simulate before it starts, and
refuses a run over the limit in one line that names the override.

The estimates are counts of the units each simulator loops over, computed from the inputs
alone (no simulation):

=====================  ==========================================  ====================  =======
what                   estimate                                    override (env)        default
=====================  ==========================================  ====================  =======
one iteration          engine tasks: 2 x micro-batches x pp x vpp  TRAINSIM_MAX_TASKS    500,000
                       (a forward and a backward pass per chunk)
                       + 2 x layers (gradient buckets) + pp; +
                       micro-batches x ((2 + reduce groups)
                       x (layers + pp x vpp) + pp x vpp) where
                       every backward is split (ZeRO-3 / FSDP
                       with peers, but torchtitan's no-sync
                       under PP); with
                       the steady-state shortcut, the same count
                       for each truncated run it may simulate;
                       and the memory estimate's schedule walk
                       (not Megatron's 1F1B / interleaved,
                       GPipe nor looped BFS), 2 x its period's base length (or
                       the micro-batches where none) x vpp x pp
                       positions / 20 (ZB-2p: + 2 searches x (8
                       variants x min(8 pp + 8, micro-batches) +
                       the orders built: the memory estimate's
                       base, the runs simulated) x pp positions x
                       8 us / 45 us, counted again as a search
                       runs longer)
                       and a plain PyTorch loop's caching-
                       allocator replay (memory.plain_step): 8
                       steps x layers x 160 allocations x (5 +
                       0.005 x layers) us / 45 us
goodput Monte Carlo    trials x interruption rounds (the expected  TRAINSIM_MAX_TRIALS   5e6
                       interruptions over the expected wall clock
                       of the run, + 1)
flow collective        flow-steps: each flow of the schedule's      TRAINSIM_MAX_FLOWS    5e7
                       template counts 20 for its set-up (route,
                       index) plus each step it is simulated in (a
                       ring: ranks x channels flows, simulated for
                       up to 18 steps before its steady state
                       repeats; all-to-all ranks^2 flows once,
                       x 3: its flow-step costs ~3 rings'),
                       per collective priced, + 400 per GPU of the
                       fabric it runs on, 50 per leaf-spine link
                       and 3 per GPU and spine (built once,
                       refused before building); counted again while
                       it runs, which stops at the limit
search                 memory groups enumerated                    TRAINSIM_MAX_CANDIDATES  40,000
profile (a CPU dry     bytes a step of each measurement touches    TRAINSIM_MAX_PROFILE  256 MiB
run)                   (a kernel's input set, a layer's weights,   _BYTES
                       gradients and activations), summed
                       (``profile.work``; on a GPU, each
                       measurement against its memory)
=====================  ==========================================  ====================  =======

Measured on the development machine (one core): 40-50 us per engine task (64,008 tasks of a
32,000-layer model in 3.1 s), so 500,000 tasks take about 20-25 s (a long pipeline's passes,
built, run and summarized, about 5 us each since 2026-11-24: PP64 vpp 2's 114,688 in 0.61 s,
``benchmarks/pp64_speed.py``); about 1.2 us per goodput
trial-round (2,000,000 in 2.5 s), so 5e6 take about 6-10 s; about 0.3-0.5 us per flow-step
(a 1 GiB ring all_reduce over 16,384 GPUs, 131,072 template flows, 5.0e6 flow-steps, in about
5 s; a tree all_reduce over 1,024 GPUs, 2.2e7, in about 10 s) and about 1.3 us for an
all_to_all's (each pair its own route: 512 GPUs, 5.5e6, in about 7 s), so 5e7 take 25 s; an
all_to_all's are counted 3 times since 2026-11-28 (``FLOW_A2A_STEP_WEIGHT``: 0.27 against a
ring's 0.11 us on an idle box, ``benchmarks/flow_a2a_cost.py``), so it fits the same time. A search's memory groups cost
~0.12 ms each to enumerate and build (configs checked); its time is in the simulations the bound cannot prune:
the largest default search known, DeepSeek-V3 on 2,048 H800 under Megatron-Bridge (26,991
groups: alltoall, DeepEP and HybridEP 8,997 each), simulates 1,136 and takes 152 CPU-seconds
(2026-11-25, ``search.schedule_bound``); 40,000 groups leave it room (20,000 refused it).
The commands' ``--max-work`` style flags
set the same variables (``simulate --max-tasks``, ``goodput --max-trial-rounds``,
``collective --max-flows``); search reads the variables (it skips candidates over the task
limit, and refuses a search whose every candidate is over it). ``profile`` has the variable
alone: a CPU dry run (``--quick``: the README's shapes need 108 MiB at ``--mbs 1`` and ran in
19 s on the loaded 2-core box; with ``--models llama3-8b --tp 8 --seq 64``, 3 MiB in 12 s and,
at ``--mbs 1000``, 574 MiB in 39 s; the README's at ``--mbs 100``, 4.2 GiB, ran over 3
minutes), 256 MiB allowing ``--mbs 4`` of the README's shapes.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

from trainsim.errors import TrainsimError

if TYPE_CHECKING:
    from trainsim.config import RunConfig

DEFAULTS = {
    "TRAINSIM_MAX_TASKS": 500_000,
    "TRAINSIM_MAX_TRIALS": 5_000_000,
    "TRAINSIM_MAX_FLOWS": 50_000_000,
    "TRAINSIM_MAX_CANDIDATES": 40_000,
    "TRAINSIM_MAX_PROFILE_BYTES": 2**28,
}


EXPORT_FLAG = "export --max-tasks N"
"""The export command's option for TRAINSIM_MAX_TASKS (its traces' nodes and rows)."""


class WorkLimitError(TrainsimError):
    """A run whose estimated work is over its limit."""


def limit(name: str) -> float:
    """The limit ``name`` (a key of DEFAULTS): the environment's value, else the default."""
    text = os.environ.get(name)
    if text is None or not text.strip():
        return DEFAULTS[name]
    try:
        if not text.strip().isascii():  # float() reads other scripts' digits ('١٠' is 10.0)
            raise ValueError(text)
        value = float(text)
    except ValueError:
        raise WorkLimitError(f"{name}={text!r} must be a number") from None
    if not value > 0:
        raise WorkLimitError(f"{name}={text!r} must be positive")
    return value


def set_limit(name: str, value: float | None) -> None:
    """Set limit ``name`` for this process and the worker processes it starts (a CLI flag)."""
    if value is not None:
        os.environ[name] = repr(float(value))


def check(name: str, estimate: float, what: str, flag: str, fix: str = "",
          cap: float | None = None) -> None:
    """Raise WorkLimitError when ``estimate`` is over limit ``name`` (or over ``cap``, a limit
    the machine sets, where the environment does not set ``name``)."""
    cap = limit(name) if cap is None else cap
    if not estimate <= cap:  # also catches nan and inf
        shown = (("unbounded" if not math.isfinite(estimate) else f"{estimate:.3g}")
                 if not estimate < 1e12 else f"{estimate:,.0f}")
        raise WorkLimitError(f"{what}: about {shown}, over the limit of {cap:,.0f}"
                             f"{'; ' + fix if fix else ''}; raise the limit with "
                             f"{flag + ' or ' if flag else ''}{name}=N if you mean it")


# ---------------------------------------------------------------------------- estimates

def simulation_tasks(cfg: RunConfig, microbatches: int | None = None) -> float:
    """Engine tasks of one iteration of ``cfg`` (see the module table), or of a truncated one of
    ``microbatches`` (the steady-state shortcut's runs)."""
    from trainsim.workload.pipe_engine import deepspeed_lockstep  # workload.ops imports this

    layers = cfg.model.num_layers + cfg.model.mtp_num_layers
    p = cfg.parallel
    # DeepSpeed's pipeline: a task per stage per step with transfers (``ds_lockstep``)
    steps = 2.0 * ((cfg.num_microbatches if microbatches is None else microbatches) + p.pp
                   - 1) * p.pp if deepspeed_lockstep(cfg) else 0.0
    return pass_tasks(cfg, microbatches) + 2.0 * layers + p.pp + steps


def pass_tasks(cfg: RunConfig, microbatches: int | None = None) -> float:
    """Engine tasks of an iteration's pipeline passes (of ``microbatches`` micro-batches, else
    the run's): a task per pass, and under ZeRO-3 / FSDP with data-parallel peers (every
    backward reduced per unit: ``simulator``, unless profile ``fsdp_pp_unsharded`` defers the
    reduction to the chunk's last backward) the tasks each split backward adds."""
    from trainsim.workload.sharding import (  # workload.ops imports this module
        fsdp_per_unit,
        fsdp_pp_mode,
        reduces_every_microbatch,
    )

    p = cfg.parallel
    m = cfg.num_microbatches if microbatches is None else microbatches
    tasks = 2.0 * m * p.pp * p.vpp
    if fsdp_per_unit(cfg, p.effective_zero_stage) and fsdp_pp_mode(cfg) != "unsharded":
        # every backward split like the last micro-batch's (``last_backward``
        # ShardedBackwardTasks._sharded_backward): per virtual stage a task per layer (one for
        # a chunk without layers), after it the reduce stream's prep (FSDP1's casts, DeepSpeed's
        # bucket), a reduce-scatter of each group and HSDP's replica
        # all-reduce, and (profile ``fsdp_pp_sync_every_microbatch``) finalize_backward's wait
        layers = cfg.model.num_layers + cfg.model.mtp_num_layers
        chunks = p.pp * p.vpp
        # (and a block's all-gather, as a task, where the backward gathers it again)
        per_part = 2 + cfg.model.is_moe + (p.dp_replicate > 1) + (
            p.data_parallel_impl in ("fsdp1", "deepspeed")) + (
            p.effective_zero_stage >= 3 and fsdp_pp_mode(cfg) in (None, "regather"))
        tasks += m * (per_part * (layers + chunks) + chunks)
    elif reduces_every_microbatch(cfg, False):
        # every backward split where its buckets become ready (at most a part a layer, and
        # the chunk's ends), each bucket's copy-in and reduce-scatter of each group after it
        # (``last_backward.SplitBackwardTasks._bucket_reductions``)
        parts = cfg.model.num_layers + cfg.model.mtp_num_layers + p.pp * p.vpp
        tasks += m * parts * (1 + 2 * (1 + cfg.model.is_moe))
    return tasks


POSITIONS_PER_TASK = 20
"""Schedule positions the memory estimate walks (``memory.estimate``: each stage's pipeline
order, 2 x micro-batches x vpp positions, for the micro-batches in flight) that cost as much
as one engine task (about 0.2 us against 5-10 us, measured on PP64)."""


REPLAY_ALLOCATIONS_PER_LAYER_STEP = 160
"""Allocations one layer makes in a step of the plain-loop allocator replay
(``memory.plain_step``), at most: counted 116 (SDPA), 131 (eager attention's scores) and 158
(full recompute) a layer a step (``benchmarks/replay_limit43.py``)."""
REPLAY_ALLOCATION_US = (5.0, 0.005)
"""CPU microseconds a replayed allocation costs: 5 plus 0.005 per layer of the model (the
allocator's sorted free lists grow with the blocks each layer strands): measured 6.9 / 8.3 /
9.0 / 14.9 us at 300 / 600 / 1,000 / 2,000 layers (``benchmarks/replay_limit43.py``; a
2,000-layer plain loop took 28 s of CPU before this limit, fuzz43)."""
TASK_US = 45.0
"""CPU microseconds of one engine task (40-50 us: the module table), the unit of the limit."""
ZB_SEARCH_US = 8.0
"""CPU microseconds the ZB-2p order search (``workload.zb_search``) spends per variant per
(stage, micro-batch) position: ``benchmarks/zb_search_cost.py``'s median over pp 2-16 and
256-4,096 micro-batches, 7.99 us on the loaded 2-core box (load 13) against 11.89 us for the
search before robust49's hot-path rewrite, run back to back (robust48 had 10.5 and 12.2 us)."""
ZB_SEARCH_VARIANTS = 8
"""Variants the search builds (``zb_search.VARIANTS``: three yes/no choices)."""


def replay_tasks(layers: int, steps: int) -> float:
    """The plain-loop allocator replay of ``layers`` layers over ``steps`` steps, in engine
    tasks' worth (``REPLAY_ALLOCATIONS_PER_LAYER_STEP``, ``REPLAY_ALLOCATION_US``)."""
    base, per_layer = REPLAY_ALLOCATION_US
    allocations = float(steps) * layers * REPLAY_ALLOCATIONS_PER_LAYER_STEP
    return allocations * (base + per_layer * layers) / TASK_US


def check_replay(layers: int, steps: int, flag: str = "simulate --max-tasks N") -> None:
    """Refuse a plain-loop allocator replay over the task limit (``replay_tasks``)."""
    check("TRAINSIM_MAX_TASKS", replay_tasks(layers, steps),
          f"the plain loop's caching-allocator replay, in tasks' worth ({layers:,} layers x "
          f"{steps} steps x {REPLAY_ALLOCATIONS_PER_LAYER_STEP} allocations)", flag,
          "fewer layers replay faster")


def walk_positions(cfg: RunConfig) -> float:
    """Schedule positions the memory estimate walks for every rank's in-flight peak
    (``workload.schedule.schedule_peak_in_flight``), 2 x micro-batches x vpp a rank: none for
    Megatron's 1F1B / interleaved, GPipe and looped BFS (closed forms; looped BFS's
    ``pipeline_schedules_bfs.looped_bfs_peak``); for the named zero-bubble and DualPipe
    schedules the order of ``workload.peak_period.peak_base`` micro-batches (the iteration's
    own where no period is proven: DualPipe's odd counts, interleaved ZB's short last group); for zb_2p its settled base (``pipeline_schedules.equal_zb_2p_peak_orders``:
    from where the equal-times search settles, at most its first probe, plus under a period's
    rounds: at most twice the probe; a search that does not settle walks the iteration's
    order, whose building :func:`check_zb_search` counts as it runs, at more a position)."""
    from trainsim.workload.peak_period import peak_base  # workload.ops imports this module

    p, m = cfg.parallel, cfg.num_microbatches
    name = p.pipeline_schedule
    if name in (None, "1f1b", "interleaved_1f1b", "gpipe", "looped_bfs"):
        return 0.0
    base = min(m, 2 * zb_first_probe(p.pp)) if name == "zb_2p" else peak_base(name, p.pp, m)
    return 2.0 * base * p.vpp * p.pp


def simulation_work(cfg: RunConfig, tasks: float | None = None) -> tuple[float, float, float]:
    """What :func:`check_simulation` counts, each in tasks' worth: the engine tasks (``tasks``,
    the steady-state shortcut's truncated runs, else the full iteration's), the memory
    estimate's walk (:func:`walk_positions`) and zb_2p's two order searches
    (:func:`zb_search_positions`: each search's settling probes, the memory estimate's base
    order, and the pipeline's orders of the runs simulated: at most ``tasks / (2 pp vpp)``
    micro-batches, a run's pass tasks being at least that). None of it grows with the
    micro-batches where the shortcut and the periods are proven (zbpeak57 lead 1: main charged
    a walk of every position and two searches of every micro-batch; the charge against the
    CPU measured, ``benchmarks/limits_cost58.py``)."""
    p, m = cfg.parallel, cfg.num_microbatches
    tasks = simulation_tasks(cfg) if tasks is None else tasks
    searched = 0.0
    if p.pipeline_schedule == "zb_2p":  # robust48: its order searches were counted nowhere
        runs = min(m, tasks / (2.0 * p.pp * p.vpp))
        searched = zb_search_positions(p.pp, m) + zb_search_positions(p.pp, m, runs)
    return tasks, walk_positions(cfg) / POSITIONS_PER_TASK, searched * ZB_SEARCH_US / TASK_US


def check_simulation(cfg: RunConfig, tasks: float | None = None, what: str = "",
                     flag: str = "simulate --max-tasks N") -> None:
    """Refuse a simulation of ``tasks`` engine tasks (default: the full iteration's; else the
    steady-state shortcut's truncated runs), or one whose memory estimate walks more schedule
    positions, or whose zb_2p order searches place more, than the same limit allows
    (:func:`simulation_work`). ``flag`` is the command's own option that raises the limit."""
    p = cfg.parallel
    fix = (f"{cfg.num_microbatches:,} micro-batches x pp={p.pp} x vpp={p.vpp} x "
           f"{cfg.model.num_layers:,} layers; fewer micro-batches "
           "(training.global_batch_size / (micro_batch_size x dp)) simulate faster")
    engine, walk, searched = simulation_work(cfg, tasks)
    check("TRAINSIM_MAX_TASKS", engine, f"simulated tasks in one iteration{what}", flag, fix)
    if walk:
        check("TRAINSIM_MAX_TASKS", walk,
              f"pipeline schedule positions the memory estimate walks, in tasks' worth "
              f"({walk * POSITIONS_PER_TASK:,.0f} / {POSITIONS_PER_TASK})", flag, fix)
    if searched:
        check("TRAINSIM_MAX_TASKS", searched,
              f"zb_2p order-search positions, in tasks' worth "
              f"({searched * TASK_US / ZB_SEARCH_US:,.0f} x "
              f"{ZB_SEARCH_US:g} us / {TASK_US:g} us)", flag, fix)


def zb_first_probe(pp: int) -> int:
    """Micro-batches of the first search ``zb_search.choose`` runs to see each variant settle
    into a period (``zb_settle.settle``); it doubles the count while one does not."""
    return 8 * pp + 8


def zb_search_positions(pp: int, m: int, built: float | None = None) -> float:
    """(stage, micro-batch) positions one zb_2p search for an iteration of ``m`` micro-batches
    places where every variant settles at its first probe: each variant's probe (each variant
    in full where ``m`` is shorter), then the kept variant's orders of ``built`` micro-batches
    in all (default: the memory estimate's, its settled base, at most twice the probe,
    :func:`walk_positions`; the pipeline's: the runs simulated). Not ``m`` itself: the kept
    variant's order for ``m`` is built only where every micro-batch is simulated (zbpeak57
    lead 1; edge50 had counted 8 full searches, then one). A search that settles later is
    counted as it runs (:func:`check_zb_search`)."""
    probe = zb_first_probe(pp)
    kept = min(m, 2 * probe) if built is None else built
    return float(ZB_SEARCH_VARIANTS * min(probe, m) + kept) * pp


def check_zb_search(positions: float, pp: int, m: int) -> None:
    """Refuse a zb_2p search about to place ``positions`` in all (a variant that did not
    settle at its first probe runs longer probes, and one that never does, in full), counted
    with the iteration's other search against one limit, as :func:`check_simulation` counts
    the pair: the memory estimate's search (equal pass times, no send) settles at its first
    probe (every pp to 64: ``tests/test_robust51.py``), so it places at most
    :func:`zb_search_positions`; the pipeline's, fed the priced passes, may not. edge50 lead 1:
    each search was held to half the limit, so a pipeline search over half was refused though
    the pair fitted."""
    other = zb_search_positions(pp, m)
    check("TRAINSIM_MAX_TASKS", (positions + other) * ZB_SEARCH_US / TASK_US,
          f"zb_2p order-search positions at pp={pp} x {m:,} micro-batches (a variant not "
          f"settled into a period), in tasks' worth (this search's {positions:,.0f} + the "
          f"other's {other:,.0f}, x {ZB_SEARCH_US:g} us / {TASK_US:g} us)",
          "simulate --max-tasks N", "fewer micro-batches search faster")


FLOW_SETUP_STEPS = 20
"""A flow's set-up (routing, indexing) costs about as much as 20 steps of simulating it."""
FLOW_STEADY_STEPS = 18
"""Steps of a repeated template (a ring's) simulated before the steady state is seen: the flow
backend compares each step start with the 8 before it, and a ring's period is one step."""
MAX_CHUNKS = 64
"""Pipelining chunks of a tree or chain collective at most (collectives.flows.MAX_CHUNKS)."""


FLOW_FABRIC_STEPS_PER_GPU = 400
"""Building the flow backend's fabric and its router costs about 400 flow-steps a GPU of the
cluster: measured (2026-11-25, loaded 2-core box) 4,096 / 16,384 / 65,536 GPUs of a
rail-optimized fat-tree built in 0.20 / 1.12 / 7.57 s (50 / 69 / 115 us a GPU, growing with
the fabric) against 0.42 us a flow-step (an 8-byte ring all_reduce over 65,536 GPUs, 2.0e7
flow-steps, in 8.4 s). Before, a 1,000,000-GPU fabric was built for minutes ahead of the
collective's own check."""


FLOW_FABRIC_STEPS_PER_LINK = 50
"""Each leaf-to-spine link costs about 50 flow-steps more to build: a leaf links to every one of
the fabric's ``nodes_per_leaf`` spines (``network.topology._fabric``), so the switch links grow
with the leaf size, not the GPUs. ``benchmarks/flow_fabric_cost.py`` (2026-11-25, 2-core box):
8 GPUs under 20,000 nodes a leaf build 159,744 more duplex leaf-spine links than under 32 in
1.04 s, 6.5 us a link, 48 flow-steps of 0.136 us (the script's 8-byte ring all-reduce over
4,096 GPUs), rounded up. (Fuzz8 had set 20 from the same 6.2 us a link over a flow-step of
0.42 us timed on a loaded box, which no script reproduced.) Before, ``nodes_per_leaf:
1000000`` on the flow backend built 8 million links for minutes, under a check that counted
only the 8 GPUs."""
FLOW_ROUTE_STEPS_PER_GPU_SPINE = 3
"""Routing a run's flows costs about 3 flow-steps per GPU and spine more: the router's
shortest paths fan out over every spine. ``benchmarks/flow_fabric_cost.py`` (2026-11-25,
2-core box): the 8-byte ring all-reduce over 4,096 one-GPU nodes under 2,048 spines takes
2.65 s more than under 32, 321 ns a GPU-spine, 2.4 flow-steps, rounded up (fuzz8 had
measured 1.2-1.5 against its loaded-box flow-step, and set 2). At 65,536 GPUs of 8-GPU nodes
and the default 32 nodes a leaf the links add 12.5 % and the spine routing 24 % to the 400 a
GPU: the flow backend's largest such cluster under the default limit is ~91,500 GPUs (the
script prints it)."""


def fabric_steps(gpus: int, switch_links: int = 0, spines: int = 0) -> float:
    """Flow-steps charged for building and routing the flow backend's fabric of ``gpus`` GPUs,
    ``switch_links`` leaf-to-spine links and ``spines`` spines."""
    return float(FLOW_FABRIC_STEPS_PER_GPU) * float(gpus) \
        + float(FLOW_FABRIC_STEPS_PER_LINK) * float(switch_links) \
        + float(FLOW_ROUTE_STEPS_PER_GPU_SPINE) * float(gpus) * float(spines)


def check_flow_fabric(gpus: int, switch_links: int = 0, spines: int = 0) -> None:
    """Refuse a flow-backend fabric whose building alone is over the flow-step limit."""
    links = f" and {switch_links:,} leaf-spine links to {spines:,} spines " \
        "(cluster.nodes_per_leaf)" if switch_links else ""
    check("TRAINSIM_MAX_FLOWS", fabric_steps(gpus, switch_links, spines),
          f"flow-steps of building the flow backend's fabric of {gpus:,} GPUs{links}",
          "", "the analytical backend prices any size at once")  # any command builds it


FLOW_A2A_STEP_WEIGHT = 3
"""An all-to-all's flow-step costs about 2-3 times a ring's (each pair routed on its own path,
every flow simulated once, where a ring's template shares its set-up and repeats): its count
is weighted by 3 so that it is in ring-step units. ``benchmarks/flow_a2a_cost.py``
(2026-11-28, x86_64 2-core box, CPU s, best of 3, 1 MiB): all_to_all over 64 / 128 / 256
GPUs 0.325 / 0.223 / 0.313 us a flow-step, ring all_reduce over 1,024 / 2,048 / 4,096 GPUs
0.113 / 0.116 / 0.108 us; the medians' ratio 2.77 (2.62 best of 5, 2.09 in a third run),
rounded up. Before (fuzz46), the 256-GPU all_to_all over ``collective``'s default 31 sizes
counted 4.3e7 and ran 11.6 CPU s inside the 5e7 limit; now 1.3e8, refused (12 sizes fit)."""


def flow_steps(ranks: int, channels: int, kind: str = "all_reduce",
               algorithm: str = "ring") -> float:
    """Flow-steps of a collective on the flow backend (an upper bound), in a ring's flow-step
    units: its template's flows (a ring ``ranks x channels``, a tree or chain
    ``2 (ranks - 1) x channels`` per chunk, an all-to-all ``ranks^2``, weighted by
    FLOW_A2A_STEP_WEIGHT) set up and simulated, a ring's for up to FLOW_STEADY_STEPS steps."""
    n, c = float(ranks), float(max(channels, 1))
    if kind == "all_to_all":
        return FLOW_A2A_STEP_WEIGHT * (FLOW_SETUP_STEPS + 1) * n * n
    if kind == "send_recv":
        return (FLOW_SETUP_STEPS + 1) * n
    if kind in ("broadcast", "reduce") or algorithm == "tree":
        return (FLOW_SETUP_STEPS + 1) * 2 * n * c * MAX_CHUNKS
    return (FLOW_SETUP_STEPS + min(2 * (n - 1), FLOW_STEADY_STEPS)) * n * c


def check_flows(kind: str, ranks: int, channels: int, algorithm: str = "ring",
                fabric_gpus: int = 0, sizes: int = 1) -> None:
    """Refuse a flow-backend collective over the limit; ``fabric_gpus``: the GPUs of the
    fabric it runs on, whose building counts too (:func:`fabric_steps`); ``sizes``: the
    message sizes priced one after another on that fabric (``trainsim collective --sizes``:
    fuzz46 found 31 sizes over 16,384 GPUs, each under the limit, running 26 s in all)."""
    fabric = fabric_steps(fabric_gpus)
    building = f" (with {fabric:,.0f} of building its fabric)" if fabric else ""
    what = f"one {kind}" if sizes == 1 else f"{sizes} sizes of {kind}"
    one = flow_steps(ranks, channels, kind, algorithm)
    fit = max(int((limit("TRAINSIM_MAX_FLOWS") - fabric) // one), 0) if one > 0 else sizes
    check("TRAINSIM_MAX_FLOWS", sizes * one + fabric,
          f"flow-steps of {what} over {ranks:,} GPUs on the flow backend{building}",
          "collective --max-flows N", (f"a narrower --sizes range prices fewer ({fit} fit); "
                                       if sizes > 1 else "")
          + "the analytical backend prices any size at once")


def check_flow_run(steps: float) -> None:
    """The flow backend's count while it runs (set-up plus flows started so far, an
    all-to-all's weighted by FLOW_A2A_STEP_WEIGHT as :func:`flow_steps` counts it up front,
    ``network.flow.step_weight``): a schedule whose steady state never comes, or flows given
    without the up-front check, stop here instead of running for hours."""
    check("TRAINSIM_MAX_FLOWS", steps, "flow-steps of a flow-backend simulation (set-up and "
          "steps started; no steady state reached)", "collective --max-flows N",
          "the analytical backend prices any size at once")


def trial_rounds(trials: int, interruptions_per_run: float) -> float:
    """Trial-rounds of the goodput Monte Carlo: every round draws the next interruption of
    every trial still running."""
    return float(trials) * (interruptions_per_run + 1.0)


def expected_interruptions(rate_per_s: float, work_s: float, horizon_s: float,
                           interval_s: float, stall_s: float, recovery_s: float = 0.0) -> float:
    """The interruptions a run is expected to see, as :func:`check_goodput` counts them."""
    stretch = 1.0 if math.isinf(interval_s) else (interval_s + stall_s) / interval_s
    wall = min(work_s * stretch, horizon_s)
    interruptions = rate_per_s * wall if rate_per_s > 0 else 0.0
    if interruptions and rate_per_s * recovery_s > 0:
        interruptions *= math.exp(min(rate_per_s * recovery_s, 700.0))
    return interruptions


def check_goodput(trials: int, rate_per_s: float, work_s: float, horizon_s: float,
                  interval_s: float, stall_s: float, recovery_s: float = 0.0,
                  cause: str = "") -> None:
    """Refuse a Monte Carlo whose expected interruptions over the run, times the trials, are
    over the limit. The expected wall clock of the run is the work stretched by the
    checkpoint stalls (interval + stall per interval of training), or the window; a recovery
    of ``recovery_s`` is itself interrupted and restarted exp(rate x recovery_s) - 1 times on
    average (a Poisson process), each a round of its own. ``cause``: what makes the count
    large where it is not the run's length (a checkpoint's stall, a recovery's length), said
    instead of the advice to run fewer trials or a shorter run."""
    interruptions = expected_interruptions(rate_per_s, work_s, horizon_s, interval_s, stall_s,
                                           recovery_s)
    fix = cause or ("fewer --trials or --tokens, a shorter --days window or a longer "
                    "--interval run faster")
    check("TRAINSIM_MAX_TRIALS", trial_rounds(trials, interruptions),
          "goodput trial-rounds (trials x interruptions per run)", "goodput --max-trial-rounds N",
          f"{trials:,} trials x {interruptions:,.3g} interruptions; {fix}")
