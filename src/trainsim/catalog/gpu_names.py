"""A GPU name as people write it -> the one catalog entry it names.

Users copy GPU names from papers, cloud consoles and ``nvidia-smi`` ("NVIDIA H100 80GB HBM3",
"A100-SXM4-80GB", "Tesla V100-SXM2-32GB", "AMD Instinct MI300X"), not the catalog's file
names. A name resolves, in this order, to:

1. the catalog entry of that name (case-insensitive, spaces and underscores read as ``-``);
2. the entry listing it under ``aliases:`` in its YAML file (names ``nvidia-smi`` prints and
   the plain names a datasheet headlines, e.g. ``h100`` for the H100 SXM5 80 GB);
3. the single entry whose name (or an alias) holds every word of it once the words that never
   tell GPUs apart are dropped (vendor and brand words, the memory type) and the form-factor
   generations are merged (``sxm2``/``sxm4``/``sxm5``/``sxm6`` -> ``sxm``).

Of several entries at step 3, the one whose file name states the memory size the name states
("H100 94GB": h100-nvl-94gb); then, where the entries differ only in form factor and the name
states none ("A100 80GB"), the SXM part (``form_factor_default``: the form factor of HGX/DGX
training clusters; a validation row says it assumed so). Several left is an ambiguity, answered
by one line that lists them ("a100" could be a PCIe or SXM part of 40 or 80 GB); none is the
catalog's "unknown GPU ... did you mean" error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from trainsim.catalog.names import dashed, spellings

NOISE_WORDS = frozenset({"nvidia", "amd", "instinct", "tesla", "hbm2", "hbm2e", "hbm3", "hbm3e",
                         "gddr6", "gpu"})
"""Words that never tell two catalog GPUs apart: vendor and brand names, the memory type."""
_SXM = re.compile(r"^sxm\d$")
PLATFORM_WORDS = frozenset({"dgx", "hgx"})
"""NVIDIA's server and baseboard names: their GPUs are SXM modules ("DGX H100" is the H100 SXM5,
"HGX B200" the B200 SXM6), read as ``sxm``."""
_GIGA = re.compile(r"^(\d+)g$")
_SIZE = re.compile(r"^(\d+)gb$")
SIZE_TOLERANCE = 0.08
"""How far a memory size in a name (``B200 192GB``) may be from an entry's memory, as GiB or as
GB, where no entry's names state that size: vendors print 80 GB for 79.6 GiB (H100), 192 GB for
179 GiB (B200: 192.3 GB), 192 GB for 191.7 GiB (MI300X); 8 % keeps 80 from 94 and 141 from 180."""
NOT_GPUS = {"tpu": "a Google TPU", "gaudi": "an Intel Gaudi accelerator",
            "trainium": "an AWS Trainium chip", "trn1": "an AWS Trainium chip",
            "trn2": "an AWS Trainium chip", "inferentia": "an AWS Inferentia chip",
            "ascend": "a Huawei Ascend NPU", "mtia": "a Meta MTIA chip",
            "cerebras": "a Cerebras wafer", "wse": "a Cerebras wafer", "groq": "a Groq LPU"}
"""Words of accelerators that are not GPUs: trainsim's catalog and kernel models are NVIDIA's
and AMD's GPUs only; a row naming one is refused saying so."""


def normalize(name: str) -> str:
    """Lower case, runs of spaces, underscores and hyphens as one ``-`` (``names.dashed``)."""
    return dashed(name, hyphens=True)


def words(name: str) -> frozenset[str]:
    """The words of ``name`` that tell GPUs apart (``NOISE_WORDS`` dropped, sxmN as sxm)."""
    out = set()
    for word in normalize(name).split("-"):
        if word and word not in NOISE_WORDS:
            giga = _GIGA.match(word)  # "80G" (as Chinese vendors' listings write it) is 80 GB
            out.add("sxm" if _SXM.match(word) or word in PLATFORM_WORDS else
                    f"{giga.group(1)}gb" if giga else word)
    return frozenset(out)


def not_a_gpu(name: str) -> str | None:
    """What ``name`` is where it names an accelerator that is not a GPU (``NOT_GPUS``), else
    None."""
    for word in normalize(name).split("-"):
        for stem, what in NOT_GPUS.items():
            if word == stem or word.startswith(stem) and word[len(stem):].lstrip("v").isdigit():
                return what
    return None


class Ambiguous(LookupError):
    """A name that several catalog entries match; ``candidates`` lists them."""

    def __init__(self, candidates: list[str]) -> None:
        super().__init__(", ".join(candidates))
        self.candidates = candidates


def resolve(name: str, aliases: Mapping[str, tuple[str, ...]],
            memory_gib: Mapping[str, float] | None = None) -> str | None:
    """The catalog entry ``name`` names, given every entry's aliases (entry -> its aliases);
    None when none matches. Raises ``Ambiguous`` when several do. Of several entries, one with
    a name whose words are exactly ``name``'s is the one ("SXM5 H100" is the alias h100-sxm5).
    Where none matches and ``memory_gib`` (entry -> its memory) is given, the memory sizes in
    ``name`` are compared with each entry's memory instead of its names (``SIZE_TOLERANCE``):
    "B200 192GB" is the B200 whose file says 180 GB (179 GiB, 192.3 GB)."""
    named = _named(name, aliases)
    if named:
        return named
    wanted = words(name)
    if not wanted:
        return None
    found = _matching(wanted, aliases)
    if not found and memory_gib:
        sizes = {int(m.group(1)) for w in wanted if (m := _SIZE.match(w))}
        rest = frozenset(w for w in wanted if not _SIZE.match(w))
        found = [e for e in _matching(rest, aliases) if rest and sizes and e in memory_gib
                 and all(_near_size(n, memory_gib[e]) for n in sizes)]
        # the name without its size, where it is an entry's own name or alias ("B200": the
        # 1000 W part, not the power-limited entry beside it of the same memory)
        plain = _named("-".join(w for w in normalize(name).split("-")
                                if not _SIZE.match(_GIGA.sub(r"\1gb", w))), aliases)
        if plain in found:
            return plain
    if len(found) > 1:
        exact = [e for e in found if any(words(label) == wanted for label in (e, *aliases[e]))]
        if len(exact) == 1:
            return exact[0]
        sized = _sized(wanted, found)
        if len(sized) == 1:
            return sized[0]
        sxm = form_factor_default(wanted, sized)
        if sxm:
            return sxm
        raise Ambiguous(found)
    return found[0] if found else None


FORM_WORDS = frozenset({"sxm", "pcie", "nvl"})
"""The words of a catalog name that say its form factor (module, card, card pair)."""


def _sized(wanted: frozenset[str], found: list[str]) -> list[str]:
    """Of the entries ``found``, those whose own file name states every memory size of
    ``wanted`` (``H100 94GB``: h100-nvl-94gb, not h100-sxm-96gb-500w whose 94 GB only an alias
    of it states: an exact size beats a near one); all of ``found`` where none or all do."""
    sizes = {w for w in wanted if _SIZE.match(w)}
    hit = [e for e in found if sizes and sizes <= words(e)]
    return hit or found


def form_factor_default(wanted: frozenset[str], found: list[str]) -> str | None:
    """The SXM entry of ``found`` where the name (``wanted``, its words) states no form factor
    and the entries differ in nothing else (their file names' words less ``FORM_WORDS`` are
    the same: ``A100 80GB`` is a100-sxm-80gb or a100-pcie-80gb). Published training clusters
    are HGX/DGX servers of SXM modules (``h100`` names the SXM5 part for the same reason,
    h100-sxm-80gb.yaml); a name that leaves the memory size open too (``a100``: 40 or 80 GB)
    stays ambiguous. None where this does not apply."""
    if wanted & FORM_WORDS or len(found) < 2:
        return None
    if len({words(e) - FORM_WORDS for e in found}) != 1:
        return None
    sxm = [e for e in found if "sxm" in words(e)]
    return sxm[0] if len(sxm) == 1 else None


def assumed_form_factor(name: str, aliases: Mapping[str, tuple[str, ...]]) -> str | None:
    """The SXM entry ``name`` resolves to by ``form_factor_default`` (a name that states no
    form factor), None where it names its entry otherwise: for a row to say what it assumed."""
    if _named(name, aliases):
        return None
    wanted = words(name)
    found = _matching(wanted, aliases) if wanted else []
    if len(found) < 2 or any(any(words(label) == wanted for label in (e, *aliases[e]))
                             for e in found):
        return None
    sized = _sized(wanted, found)
    return form_factor_default(wanted, sized) if len(sized) > 1 else None


def _named(name: str, aliases: Mapping[str, tuple[str, ...]]) -> str | None:
    """The entry whose file name or alias ``name`` is (``normalize``d), or None."""
    key = normalize(name)
    if key in aliases:
        return key
    return next((entry for entry, names in aliases.items()
                 if key in (normalize(a) for a in names)), None)


def _matching(wanted: frozenset[str], aliases: Mapping[str, tuple[str, ...]]) -> list[str]:
    return sorted(entry for entry, names in aliases.items()
                  if any(wanted <= words(label) for label in (entry, *names)))


def _near_size(gb: int, gib: float) -> bool:
    """Whether a name's ``gb`` is the memory ``gib`` as GiB or as GB (``SIZE_TOLERANCE``)."""
    return any(abs(gb - have) <= SIZE_TOLERANCE * have for have in (gib, gib * 2**30 / 1e9))


def alias_clashes(aliases: Mapping[str, tuple[str, ...]]) -> list[str]:
    """Aliases that another entry also claims, or that are another entry's name: each alias
    must name one entry only (checked by the catalog tests)."""
    return [f"{alias} ({entry})" for entry, alias, _ in spellings(aliases, normalize)[1]]


__all__ = ["FORM_WORDS", "NOISE_WORDS", "NOT_GPUS", "Ambiguous", "alias_clashes",
           "assumed_form_factor", "form_factor_default", "normalize", "not_a_gpu", "resolve",
           "words"]
