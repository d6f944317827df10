"""Framework profiles: which mechanisms a training framework had, and what it did by default,
at each of its versions.

One YAML file per framework lives in ``catalog/frameworks/``. A profile selects mechanisms
(the attention kernel, the dtype of the data-parallel gradient reduction, whether the backward
tensor-parallel reduction overlaps the weight-gradient GEMM, how ZeRO-3/FSDP issues its
all-gathers, ...) and defaults; it never carries a speed or efficiency multiplier.

File layout::

    name: megatron-lm
    description: one line
    versions:                 # oldest first
      - since: "2021-04"      # "YYYY-MM" / "YYYY" for git-dated frameworks, "24.07" / "0.8" for releases
        source: "<repo>@<commit> <file>; ..."
        features: {...}       # what the framework could do at that version
        defaults: {...}       # what it did when the user said nothing
        notes: optional text

A run's version selects the latest entry whose ``since`` is not after it; a version older than
the first entry selects the first entry. Entries after the first list only what changed: a key
they leave out keeps the value of the entry before (nested mappings such as
``grad_reduce_dtype`` are merged key by key). Every value may be ``null``: unknown, or not
applicable; the YAML comment beside it says which.

Dates compare as dates ("2023" reads as January 2023); release numbers compare as numeric
tuples ("0.12" > "0.8", "26.04.01" > "26.04"). All entries of one profile use one style. A run
may give the other style, or a release as its tag reads ("v0.14.0", "core_r0.8.0", "0.8.0rc1"):
``catalog.framework_versions`` reads it through the release table
``catalog/framework_releases.yaml`` (a release as its tag's date, a date as the release out by
then); ``version_reading`` says how, for a validation row's ``read_as``.

The keys ``features`` and ``defaults`` may hold, and the values each may take, are in
``catalog.framework_schema``; this module reads the files against it and answers queries.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainsim.catalog.framework_schema import (
    ATTENTION,
    DEFAULTS,
    FEATURES,
    FORBIDDEN_KEY_WORDS,
    MERGED_KEYS,
    MOE_DISPATCHERS,
    OPTIONAL_KEYS,
)
from trainsim.catalog.framework_versions import parse, resolve
from trainsim.catalog.names import aliases_of, dashed, spellings
from trainsim.catalog.schema_checks import tuned_options_problem
from trainsim.config._build import suggest
from trainsim.errors import CatalogError

_DIR = Path(__file__).parent / "frameworks"
_TOP_KEYS = {"name", "description", "aliases", "versions"}
_ENTRY_KEYS = {"since", "source", "features", "defaults", "notes"}

# ---------------------------------------------------------------------------- versions

def _style_of(sinces: list[str]) -> str | None:
    """'date' or 'release' where every ``since`` parses as one of that kind, else None."""
    kinds = {v.kind if v is not None else None for v in map(parse, sinces)}
    return kinds.pop() if len(kinds) == 1 and None not in kinds else None


# ---------------------------------------------------------------------------- profiles


@dataclass(frozen=True)
class FrameworkProfile:
    """What one framework could do, and did by default, at one version."""

    name: str
    version: str  # the ``since`` of the selected entry
    source: str  # where the selected entry's values were read
    features: dict[str, Any]
    defaults: dict[str, Any]
    description: str = ""
    notes: str = ""
    #: (since, source) of every entry merged into this profile, oldest first; a value the
    #: selected entry does not list was read at the source of the entry that set it.
    sources: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    def grad_reduce_dtype(self, dtype: str) -> str | None:
        """Dtype of the data-parallel gradient reduction for training in ``dtype``
        (fp16, bf16, fp8); None where the profile does not know or the framework lacks it."""
        key = str(dtype).strip().lower()
        if key == "fp32":
            return "fp32"  # fp32 training has fp32 gradients
        table = self.defaults.get("grad_reduce_dtype") or {}
        return table.get(key)

    def fp8_param_gather(self, recipe: str) -> bool | None:
        """Whether the framework keeps and gathers its matmul weights in fp8 under fp8
        ``recipe`` (delayed, current, blockwise, mxfp8) where a run does not say; None where the
        profile does not know (a per-recipe mapping without that recipe)."""
        value = self.defaults.get("fp8_param_gather")
        if isinstance(value, dict):
            return value.get(str(recipe).strip().lower())
        return value

    def supports(self, feature: str) -> bool | None:
        """Whether the framework could do ``feature`` at this version; None when unknown.

        ``feature`` is a key of ``features``, an attention implementation name (``flash2``) or
        a MoE token dispatcher (``deepep``). An attention kernel is supported where the entry
        lists it (``attention_kernels``); one the framework reaches only through SDPA
        (``sdpa_backends``: torchtitan's cuDNN) is not, so the fallback's kernel rule does not
        take it (benchmarks/RESULTS.md 55th session, titan55: blind scores worse with it)."""
        if feature in self.features:
            value = self.features[feature]
            if value is None or isinstance(value, bool):
                return value
            if isinstance(value, str):  # uneven_pipeline
                return value != "none"
            return bool(value)
        if feature in ATTENTION:
            kernels = self.features.get("attention_kernels")
            return None if kernels is None else feature in kernels
        if feature in MOE_DISPATCHERS:
            dispatchers = self.features.get("moe_dispatchers")
            return None if dispatchers is None else feature in dispatchers
        if feature in OPTIONAL_KEYS:  # a feature a profile need not state: unknown
            return None
        raise CatalogError(f"unknown framework feature {feature!r}{suggest(feature, FEATURES)}; "
                           f"known: {', '.join(FEATURES)}")

    def attention_for(self, arch: str | None = None) -> str | None:
        """Default attention implementation, on GPU architecture ``arch`` (``"sm89"``) if given.
        An ``attention_by_arch`` key holds from its architecture up to the next key
        ({sm80: flash2, sm90: cudnn}: flash2 on sm80, sm86 and sm89, cudnn from Hopper on, as
        Transformer Engine's get_attention_backend prefers cuDNN on sm90+ only); an
        architecture below every key takes ``attention``. An ``amd`` key holds on every AMD
        GPU (``catalog.defaults.gpu_arch``), which takes ``attention`` without one."""
        return self._for_arch("attention", arch)

    def grouped_gemm_for(self, arch: str | None = None) -> str | None:
        """The experts' GEMM kernel (``grouped_gemm``) on GPU architecture ``arch``, a
        ``grouped_gemm_by_arch`` key holding as ``attention_by_arch``'s do (torchtitan falls
        back to its per-expert loop below SM90: ``{sm70: loop, sm90: cutlass}``)."""
        return self._for_arch("grouped_gemm", arch)

    def _for_arch(self, key: str, arch: str | None) -> str | None:
        by_arch = self.defaults.get(f"{key}_by_arch") or {}
        if arch is not None and _sm(arch) is None:
            return by_arch.get(str(arch), self.defaults.get(key))
        level = _sm(arch)
        if level is not None:
            held = [(n, impl) for n, impl in ((_sm(k), v) for k, v in by_arch.items())
                    if n is not None and n <= level]
            if held:
                return max(held)[1]
        return self.defaults.get(key)


def _sm(arch: object) -> int | None:
    """``"sm89"`` -> 89; None for anything else (no architecture, another vendor's GPU)."""
    text = str(arch).strip().lower().replace("_", "") if arch is not None else ""
    return int(text[2:]) if re.fullmatch(r"sm\d{2,3}", text) else None


def _fail(path: Path, where: str, msg: str) -> CatalogError:
    return CatalogError(f"{path.name}: {where}: {msg}")


def _check_words(path: Path, data: Any, where: str = "") -> None:
    if isinstance(data, dict):
        for k, v in data.items():
            if isinstance(k, str) and any(w in k.lower() for w in FORBIDDEN_KEY_WORDS):
                raise _fail(path, f"{where}{k}", "a profile selects mechanisms; "
                            "it may not carry a speed or efficiency factor")
            _check_words(path, v, f"{where}{k}.")
    elif isinstance(data, list):
        for i, v in enumerate(data):
            _check_words(path, v, f"{where}[{i}].")


def _check_section(path: Path, where: str, section: Any,
                   schema: dict[str, Callable[[Any], str | None]], complete: bool) -> dict[str, Any]:
    if not isinstance(section, dict):
        raise _fail(path, where, "expected a mapping")
    for key, value in section.items():
        if key not in schema:
            raise _fail(path, f"{where}.{key}", f"unknown key{suggest(str(key), schema)}; "
                        f"known: {', '.join(schema)}")
        problem = schema[key](value)
        if problem:
            raise _fail(path, f"{where}.{key}", problem)
    if complete:
        missing = [k for k in schema if k not in section and k not in OPTIONAL_KEYS]
        if missing:
            raise _fail(path, where, f"the first entry must give every key; missing {missing}")
    return section


@dataclass(frozen=True)
class _Entry:
    since: str
    key: tuple[int, ...]
    source: str
    notes: str
    features: dict[str, Any]
    defaults: dict[str, Any]
    sources: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class _Profile:
    name: str
    description: str
    style: str
    entries: tuple[_Entry, ...]
    aliases: tuple[str, ...] = ()


def _merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in update.items():
        if k in MERGED_KEYS and isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = {**out[k], **copy.deepcopy(v)}
        else:
            out[k] = copy.deepcopy(v)
    return out


def _read(path: Path) -> _Profile:
    from trainsim.catalog import _read_yaml

    data = _read_yaml(path)
    _check_words(path, data)
    for key in data:
        if key not in _TOP_KEYS:
            raise _fail(path, str(key), f"unknown key{suggest(str(key), _TOP_KEYS)}; "
                        f"known: {', '.join(sorted(_TOP_KEYS))}")
    if data.get("name") != path.stem:
        raise _fail(path, "name", f"{data.get('name')!r} must equal the file name {path.stem!r}")
    versions = data.get("versions")
    if not isinstance(versions, list) or not versions:
        raise _fail(path, "versions", "expected a non-empty list of entries")
    sinces = []
    for i, entry in enumerate(versions):
        where = f"versions[{i}]"
        if not isinstance(entry, dict):
            raise _fail(path, where, "expected a mapping")
        for key in entry:
            if key not in _ENTRY_KEYS:
                raise _fail(path, f"{where}.{key}", f"unknown key{suggest(str(key), _ENTRY_KEYS)}; "
                            f"known: {', '.join(sorted(_ENTRY_KEYS))}")
        since = entry.get("since")
        if not isinstance(since, str) or not since.strip():
            raise _fail(path, f"{where}.since", "expected a quoted version string such as "
                        "\"2021-04\" or \"24.07\"")
        sinces.append(since.strip())
    style = _style_of(sinces)
    if style is None:
        raise _fail(path, "versions", f"since values {sinces} must all be dates (YYYY-MM) or all "
                    "release numbers (24.07)")
    entries: list[_Entry] = []
    features: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    chain: tuple[tuple[str, str], ...] = ()
    for i, (entry, since) in enumerate(zip(versions, sinces)):
        where = f"versions[{i}]"
        parsed = parse(since)
        assert parsed is not None
        key = parsed.key
        if entries and key <= entries[-1].key:
            raise _fail(path, f"{where}.since", f"{since!r} is not after {entries[-1].since!r}; "
                        "list entries oldest first")
        source = entry.get("source")
        if not isinstance(source, str) or not source.strip():
            raise _fail(path, f"{where}.source", "every entry names where its values were read")
        notes = entry.get("notes") or ""
        if not isinstance(notes, str):
            raise _fail(path, f"{where}.notes", "expected text")
        first = not entries
        missing = None if first else {}  # later entries may leave a section out
        feats = _check_section(path, f"{where}.features", entry.get("features", missing),
                               FEATURES, first)
        defs = _check_section(path, f"{where}.defaults", entry.get("defaults", missing),
                              DEFAULTS, first)
        features = _merge(features, feats)
        if features.get("fsdp_pp_unsharded") and features.get("fsdp_pp_sync_every_microbatch"):
            raise _fail(path, f"{where}.features", "fsdp_pp_unsharded and "
                        "fsdp_pp_sync_every_microbatch exclude each other: set one true at most")
        defaults = _merge(defaults, defs)
        problem = tuned_options_problem(features, defaults)
        if problem:
            raise _fail(path, f"{where}.defaults.tuned_options", problem)
        chain = chain + ((since, source.strip()),)
        entries.append(_Entry(since, key, source.strip(), notes.strip(), _frozen(features),
                              _frozen(defaults), chain))
    description = data.get("description") or ""
    if not isinstance(description, str):
        raise _fail(path, "description", "expected one line of text")
    return _Profile(path.stem, description.strip(), style, tuple(entries),
                    aliases_of(path, data))


@functools.cache
def _files() -> dict[str, Path]:
    return {p.stem: p for p in sorted(_DIR.glob("*.yaml"))}


@functools.cache
def _load(name: str) -> _Profile:
    return _read(_files()[name])


@functools.cache
def _aliases() -> dict[str, str]:
    """Other names users write for a framework (each profile's ``aliases``) -> its file name."""
    files = _files()
    table, clashes = spellings({stem: _load(stem).aliases for stem in files}, dashed)
    for stem, alias, other in clashes:
        raise _fail(files[stem], "aliases", f"{alias!r} already names {other}")
    return {key: stem for key, stem in table.items() if key not in files}


def canonical_framework(name: object) -> str:
    """The catalog name of framework ``name`` as a user may write it (case, spaces, underscores
    and the profiles' ``aliases`` forgiven); the normalised input where it names none."""
    key = dashed(name)
    return key if key in _files() else _aliases().get(key, key)


def framework_specs() -> list[dict[str, Any]]:
    """One row per framework profile for ``trainsim catalog frameworks``: its versions (oldest and
    newest entry), how many entries, the other names it answers to and what it is."""
    rows = []
    for name in _files():
        profile = _load(name)
        rows.append({"name": name, "first": profile.entries[0].since,
                     "newest": profile.entries[-1].since, "entries": len(profile.entries),
                     "aliases": ", ".join(profile.aliases) or None,
                     "description": profile.description})
    return rows


def framework_entries(name: str) -> list[str]:
    """The ``since`` of each entry of framework profile ``name``, oldest first."""
    return [e.since for e in _load(canonical_framework(name)).entries]


def framework_names() -> list[str]:
    """Names of the frameworks with a profile (the validation CSV's ``framework`` values)."""
    return list(_files())


def framework_profile(name: str, version: str | None = None) -> FrameworkProfile:
    """The profile of framework ``name`` at ``version`` (None or "" = its newest entry): one
    object per (framework, entry), shared by every caller, whose ``features`` and ``defaults``
    refuse any change (a caller that needs to change them changes a :func:`thawed` copy)."""
    files = _files()
    key = canonical_framework(name)
    if key not in files:
        raise CatalogError(f"unknown framework {name!r}{suggest(key, files)}; "
                           f"known: {', '.join(files)}")
    return _shared(key, "" if version is None else str(version).strip())


@functools.cache
def _shared(key: str, text: str) -> FrameworkProfile:
    entry = _entry(key, text)
    return FrameworkProfile(key, entry.since, entry.source, entry.features, entry.defaults,
                            _load(key).description, entry.notes, entry.sources)


@functools.cache
def _entry(key: str, text: str) -> _Entry:
    """The entry of profile ``key`` that version ``text`` selects ('' = its newest), kept per
    (key, text): a validated row asks for its framework's profile some hundred times."""
    profile = _load(key)
    entry = profile.entries[-1]
    if text:
        wanted, _ = resolve(key, profile.style, profile.entries[0].since, text)
        entry = profile.entries[0]  # older than the first entry: the first entry
        for candidate in profile.entries:
            if candidate.key <= wanted:
                entry = candidate
    return entry


def _refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
    raise TypeError("a framework profile is shared by every caller and cannot be changed; "
                    "change a copy (catalog.frameworks.thawed, or copy.deepcopy)")


class _FrozenDict(dict):  # type: ignore[type-arg]
    """A mapping of a profile: a dict to read (``isinstance``, ``==``, JSON as a dict's), any
    change refused; ``copy.deepcopy`` gives a plain dict to change."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> Any:  # pickled and copied whole, not key by key
        return (_FrozenDict, (dict(self),))

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return thawed(self)


class _FrozenList(list):  # type: ignore[type-arg]
    """A list of a profile, as :class:`_FrozenDict` is a mapping of one."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = reverse = sort = clear = _refuse

    def __reduce__(self) -> Any:
        return (_FrozenList, (list(self),))

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return thawed(self)


def _frozen(value: Any) -> Any:
    """A profile's parsed YAML (dicts and lists of immutable scalars) as it is shared: every
    dict and list refusing change."""
    if isinstance(value, dict):
        return _FrozenDict({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return _FrozenList(_frozen(v) for v in value)
    return value


def thawed(value: Any) -> Any:
    """A copy of a profile's ``features``, ``defaults`` or one of their values that the caller
    may change: plain dicts and lists all the way down."""
    if isinstance(value, dict):
        return {k: thawed(v) for k, v in value.items()}
    return [thawed(v) for v in value] if isinstance(value, list) else value


def released_before(name: str, version: str, release: str) -> bool:
    """Whether ``version`` of framework ``name`` predates its ``release`` (both read as
    ``framework_profile`` reads a version: a release as its tag's date, a date at the
    precision it was written, so ``2021-03`` includes a release of 2021-03-12)."""
    profile = _load(canonical_framework(name))
    first = profile.entries[0].since
    have = resolve(name, profile.style, first, str(version))[0]
    need = resolve(name, profile.style, first, str(release))[0]
    given = parse(str(version).strip())
    if given is not None and given.kind == "date":
        need = need[:given.precision]
    return tuple(have[:len(need)]) < tuple(need)


_FULL_HASH = re.compile(r"\b([0-9a-f]{10})[0-9a-f]{30}\b")


def _top_level(text: str, seps: str) -> list[str]:
    """``text`` split at the characters ``seps`` outside parentheses, each part stripped."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch in seps and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return [p for p in (*parts, text[start:].strip()) if p]


def short_source(text: str, about: str = "", limit: int = 120) -> str:
    """A profile entry's ``source`` as a one-line refusal cites it (robust59 lead 3: the whole
    text ran to hundreds of characters on the line): spaces folded, a full commit hash cut to
    its first 10 digits; the part (``;``- or ``,``-separated outside parentheses) that names
    every word of ``about`` (a feature: ``pipeline_parallel``; ``-`` and ``_`` read as spaces),
    after the entry's leading reference where the part names no repository, else the first
    ``;`` clause; past ``limit`` characters cut at a word, with `` ...`` and the parentheses it
    leaves open closed. The whole text is the profile's own (catalog/frameworks)."""
    text = _FULL_HASH.sub(r"\1", " ".join(str(text).split()) or "?")
    words = [w for w in about.lower().split("_") if w]

    def names(part: str) -> bool:
        plain = part.lower().replace("-", " ").replace("_", " ")
        return all(w in plain for w in words)

    part = next((p for p in _top_level(text, ";,") if words and names(p)), None)
    if part is None:
        text = _top_level(text, ";")[0]
    elif "@" in part or part == text.split(" ", 1)[0]:
        text = part
    else:
        text = f"{text.split(' ', 1)[0]} ... {part}"
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    head = text[:cut if cut > limit // 2 else limit].rstrip(" ,;:(")
    return head + " ..." + ")" * max(0, head.count("(") - head.count(")"))


def feature_source(profile: FrameworkProfile, feature: str, *, whole: bool = False) -> str:
    """The source of the entry that last set ``feature`` to its value in ``profile`` (the
    selected entry's own source may be about something else: a later entry of the pytorch
    profile reads the SDPA default, not the optimizer). Where the feature is absent (false)
    and a later entry brings it, that entry's source (the introducing commit) leads. Cut to
    a citation (:func:`short_source`) unless ``whole``."""
    def cite(text: str) -> str:
        return text if whole else short_source(text, feature)

    source, before = profile.source, object()
    entries = _load(profile.name).entries
    for i, entry in enumerate(entries):
        value = entry.features.get(feature)
        if value != before:
            source, before = entry.source, value
        if entry.since == profile.version:
            if value is False:
                later = next((e for e in entries[i + 1:] if e.features.get(feature) is not False),
                             None)
                if later is not None:
                    return f"first in {profile.name} {later.since}: {cite(later.source)}"
            break
    return cite(source)


def version_reading(name: str, version: str | None) -> str:
    """How ``version`` of framework ``name`` was read, for a result's ``read_as`` ('' where it
    selects its profile entry as written): a release read as its date, a date as the release
    out by then, a year as its January (``catalog.framework_versions``), a version before the
    profile's first entry as that entry."""
    key = canonical_framework(name)
    text = "" if version is None else str(version).strip()
    if not text or key not in _files():
        return ""
    profile = _load(key)
    first = profile.entries[0]
    wanted, note = resolve(key, profile.style, first.since, text)
    if wanted < first.key:
        note = f"{note}; " if note else ""
        note += f"before {key}'s first profile entry: read as '{first.since}'"
    return note


@functools.cache
def framework_supports(framework: str | None, version: str | None, feature: str) -> bool:
    """Whether the profile of ``framework`` at ``version`` has the mechanism ``feature``
    (False for a run that names no framework)."""
    return bool(framework) and framework_profile(framework, version).supports(feature) is True


@functools.cache
def framework_feature(framework: str, version: str | None, feature: str) -> Any:
    """The profile's value of ``feature`` for ``framework`` at ``version`` (a list as a tuple),
    kept per (framework, version, feature): workload builders ask it per chunk and pass."""
    value = framework_profile(framework, version).features.get(feature)
    return tuple(value) if isinstance(value, list) else value


@functools.cache
def framework_default(framework: str, version: str | None, key: str) -> Any:
    """The profile's default ``key`` for ``framework`` at ``version`` (a list as a tuple), kept
    per (framework, version, key) as :func:`framework_feature` keeps features: read it, never
    change it (the same object for every caller)."""
    value = framework_profile(framework, version).defaults.get(key)
    return tuple(value) if isinstance(value, list) else value


@functools.cache
def te_at_least(framework: str | None, version: str | None, release: str) -> bool:
    """Whether the framework at ``version`` runs Transformer Engine ``release`` or later (the
    profile's ``te_version``; False where it records none or no framework is named)."""
    te = framework_feature(framework, version, "te_version") if framework else None
    return te is not None and _release_key(te) >= _release_key(release)


def _release_key(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def profile_supports(cfg: Any, feature: str) -> bool:
    """Whether the framework profile of the run ``cfg`` has the mechanism ``feature``."""
    t = cfg.training
    return framework_supports(t.framework, t.framework_version, feature)
