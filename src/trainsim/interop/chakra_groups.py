"""Chakra communicator groups: which ranks each process group of a rank holds, in Megatron's
rank order (split out of :mod:`trainsim.interop.chakra` in export59 to keep each file small)."""

from __future__ import annotations

from trainsim.config import RunConfig
from trainsim.errors import TrainsimError


class Layout:
    """Megatron's rank order tp-cp-dp-pp; experts etp-ep-edp inside a stage's tp*cp*dp ranks."""

    def __init__(self, cfg: RunConfig) -> None:
        p = cfg.parallel
        self.tp, self.cp, self.dp, self.pp = p.tp, p.cp, cfg.dp, p.pp
        self.shard = cfg.shard_ranks  # HSDP: a replica's dp x cp ranks
        self.etp, self.ep = p.etp, p.ep
        self.stage_size = self.tp * self.cp * self.dp
        self.world = self.stage_size * self.pp
        self.groups: dict[tuple, int] = {}
        self.members: dict[int, list[int]] = {}
        self._of_rank: dict[tuple[str, int], tuple[int, int]] = {}
        """(group, rank) -> (id, size), filled for every member of a group when the group is
        first met: each group's member list is built once, not once per rank and node (a
        1M-GPU run's data-parallel groups of 250,000 ranks, built per rank, never ended)."""

    def stage(self, rank: int) -> int:
        return rank // self.stage_size

    def _ranks(self, group: str, rank: int) -> list[int]:
        base = rank - rank % self.stage_size
        local = rank % self.stage_size
        tp_i, rest = local % self.tp, local // self.tp
        cp_i, dp_i = rest % self.cp, rest // self.cp
        at = lambda t, c, d: base + t + self.tp * (c + self.cp * d)
        if group == "tp":
            return [at(t, cp_i, dp_i) for t in range(self.tp)]
        if group == "cp":
            return [at(tp_i, c, dp_i) for c in range(self.cp)]
        if group == "dp":
            return [at(tp_i, cp_i, d) for d in range(self.dp)]
        # HSDP over the dp x cp index j = cp_i + cp * dp_i (Megatron's intra-/inter-partial
        # groups): a replica is a run of `shard` consecutive j, its copies `shard` apart
        j = cp_i + self.cp * dp_i
        if group == "dp_cp":  # the replica's ranks
            first = j - j % self.shard
            return [base + tp_i + self.tp * k for k in range(first, first + self.shard)]
        if group == "dp_rep":  # the same shard in every replica
            return [base + tp_i + self.tp * k
                    for k in range(j % self.shard, self.cp * self.dp, self.shard)]
        if group == "tp_dp_cp":
            return list(range(base, base + self.stage_size))
        if group == "tp_cp":
            return [at(t, c, dp_i) for c in range(self.cp) for t in range(self.tp)]
        if group == "embd":
            return sorted({local, local + (self.pp - 1) * self.stage_size})
        e_i, rest = local % self.etp, local // self.etp
        ep_i, edp_i = rest % self.ep, rest // self.ep
        edp = self.stage_size // (self.ep * self.etp)
        ex = lambda e, p_, d: base + e + self.etp * (p_ + self.ep * d)
        if group == "etp":
            return [ex(e, ep_i, edp_i) for e in range(self.etp)]
        if group == "ep":
            return [ex(e_i, q, edp_i) for q in range(self.ep)]
        if group == "edp":
            return [ex(e_i, ep_i, d) for d in range(edp)]
        raise TrainsimError(f"no Chakra communicator group for process group {group!r}")

    def group_id(self, group: str, rank: int) -> tuple[int, int]:
        """(ASTRA-sim group id, group size) of ``rank``'s ``group``; ids start at 1, in the
        order the groups are first met."""
        known = self._of_rank.get((group, rank))
        if known is not None:
            return known
        ranks = self._ranks(group, rank)
        key = (group, tuple(ranks))
        gid = self.groups.get(key)
        if gid is None:
            gid = self.groups[key] = len(self.groups) + 1
            self.members[gid] = ranks
        for r in ranks:  # a group is the same group seen from each of its members
            self._of_rank[(group, r)] = (gid, len(ranks))
        return gid, len(ranks)
