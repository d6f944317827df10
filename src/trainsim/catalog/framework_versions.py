"""A framework version as users and papers write it, read in the style of the framework's profile.

A profile (``catalog/frameworks/*.yaml``) is keyed either by dates (megatron-lm, deepspeed,
torchtitan, llm-foundry, ...) or by release numbers (megatron-core "0.8", NeMo and
Megatron-Bridge containers "24.07" / "25.11"). A validation row may give either
(``validation/README.md``: "the training software and its version or date"); the release table
``catalog/framework_releases.yaml`` (written by ``benchmarks/framework_releases.py`` from the
repositories' tags) translates between them:

- a date: ``YYYY-MM-DD``, ``YYYY-MM``, ``YYYY/MM``, ``YYYY.MM``, ``Jul 2024``, ``July 2024``
  (a month's full English name or its three-letter abbreviation; a day that the calendar lacks,
  ``2024-02-31``, is an error); a year alone (``2024``) reads as January of that year (a paper's year bounds the code from
  above; the first month is the earliest code it can mean). A date compares at the precision it
  was written: ``2024-08`` includes every release of August 2024.
- a release: ``0.8``, ``0.8.0``, ``v0.14.0``, ``r0.8.0``, ``core_v0.8.0``, ``core_r0.8.0``,
  ``25.09.01``; a pre-release or post-release suffix (``0.8.0rc1``, ``1.2.post1``, ``-beta``)
  reads as its release.
- a release on a date-keyed framework reads as the date of that release's tag (a patch the
  table lacks: the latest patch of its minor release before it); a date on a release-keyed one
  as the latest release (for NeMo and Megatron-Bridge: container) tagged by then. Where the
  table says ``patches: branch`` (Megatron-LM), a patch release is cut from its minor's release
  branch and carries that minor's features, so it reads at the date of the minor's first tag:
  core_v0.13.1 (tagged 2025-08-11) reads as 2025-07-25 (core_v0.13.0), since it lacks main's
  720c8b40 of 2025-07-29 (``git merge-base --is-ancestor 720c8b40 core_v0.13.1`` fails).
- a Megatron Core tag (``core_v0.8.0``, ``core_r0.8.0``) on megatron-lm is matched only against
  the table's newest numbering (from core_r0.4.0 on, after 23.06), never against Megatron-LM
  1.0 .. 2.6 of 2020-21: ``core_v1.0.0`` is a next major release, read as the newest.
- NeMo and Megatron-Bridge profiles are keyed by container (major >= 20); a library release
  (``nemo 2.0``, ``megatron-bridge v0.2.0``) reads as the container that ships it, or, where the
  table names none, the latest container tagged by that release's date.
- a container (``YY.MM``, ``YY.MM.patch``) is dated by its own month: NVIDIA publishes container
  ``24.07`` in July 2024, whatever the date of the library tag it ships (NeMo ``r2.0.0rc1``
  was tagged 2024-08-15). Any day of that month includes it (``nemo 2024-07-31`` is 24.07).

A version before every entry of a profile selects the first entry (``frameworks``), and says so
in the reading. A release past the newest the table knows (a minor release after the last
tagged one; a container whose month is after the newest tag's date) is a release made after the
table was written: it reads as the newest release known, and the reading says so (a run on
tomorrow's release behaves as today's newest until a profile entry says otherwise). A container
number on a framework that has no containers (``megatron-core 24.07``), a number shaped like no
container, and anything else unreadable are one-line errors naming both forms with an example.
"""

from __future__ import annotations

import datetime
import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainsim.errors import CatalogError

_TABLE = Path(__file__).parent / "framework_releases.yaml"
CONTAINER_MAJOR = 20
"""Release numbers from here up are container names (YY.MM); below, library releases."""

_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
                "september", "october", "november", "december")
_MONTHS = {**{m[:3]: i + 1 for i, m in enumerate(_MONTH_NAMES)},
           **{m: i + 1 for i, m in enumerate(_MONTH_NAMES)}, "sept": 9}
_DATE = re.compile(r"^(\d{4})(?:[-/.](\d{1,2})(?:[-/.](\d{1,2}))?)?$")
_MONTH_YEAR = re.compile(r"^([a-z]+)\.?,?\s+(\d{4})$")
_RELEASE = re.compile(r"^(?:tags/)?(core_v|core_r|core-v|v|r)?(\d+(?:\.\d+)*)"
                      r"((?:[.\-_+]?(?:rc|alpha|beta|a|b|post|dev|pre)[.\-_]?\d*)*)$")

Key = tuple[int, ...]


@dataclass(frozen=True)
class Version:
    """One spelling parsed: a date (``precision`` 1-3: year, month, day) or a release."""

    kind: str  # "date" | "release"
    key: Key
    precision: int = 0
    suffix: str = ""
    core: bool = False  # written as a Megatron Core tag (core_v0.8.0, core_r0.8.0)


def _norm(parts: list[int] | tuple[int, ...]) -> Key:
    out = list(parts)
    while len(out) > 1 and out[-1] == 0:  # "0.8.0" == "0.8"
        out.pop()
    return tuple(out)


def parse(text: str) -> Version | None:
    """``text`` as a date or a release, or None."""
    t = text.strip().lower()
    m = _MONTH_YEAR.match(t)
    if m:  # a month's exact name or abbreviation ("Mayday 2024" is none)
        month = _MONTHS.get(m.group(1))
        if month is None:
            return None
        t = f"{m.group(2)}-{month}"
    m = _DATE.match(t)
    if m and 1990 <= int(m.group(1)) <= 2100:
        parts = [int(g) for g in m.groups() if g is not None]
        key = (parts + [1, 1])[:3]
        try:  # a day the calendar has (2024-02-29 yes, 2024-02-31 no)
            datetime.date(*key)
        except ValueError:
            return None
        return Version("date", tuple(key), max(len(parts), 2))  # a year reads as its January
    m = _RELEASE.match(t)
    if m:
        return Version("release", _norm([int(p) for p in m.group(2).split(".")]),
                       suffix=m.group(3), core=(m.group(1) or "").startswith("core"))
    return None


def date_text(key: Key, precision: int = 3) -> str:
    return "-".join(f"{v:04d}" if i == 0 else f"{v:02d}" for i, v in enumerate(key[:precision]))


def release_text(key: Key) -> str:
    return ".".join(f"{v:02d}" if key[0] >= CONTAINER_MAJOR and i else str(v)
                    for i, v in enumerate(key))


@dataclass(frozen=True)
class Releases:
    """One framework's release table: (release, tag text, date) oldest first; containers."""

    repo: str
    releases: tuple[tuple[Key, str, Key], ...]
    containers: tuple[tuple[Key, str, Key], ...]  # (container, library tag, its month (y, m))
    branch_patches: bool = False  # patch releases are cut from their minor's release branch

    @property
    def newest(self) -> tuple[str, Key]:
        """(text, date) of the newest release or container the table knows."""
        rows = [(r[1], r[2]) for r in self.releases]
        rows += [(release_text(c[0]), c[2]) for c in self.containers]
        return max(rows, key=lambda r: r[1])


def container_month(key: Key) -> Key | None:
    """The month ``(year, month)`` a container ``YY.MM[.patch]`` was published in, or None
    where ``key`` is not shaped like one."""
    if not CONTAINER_MAJOR <= key[0] <= 99 or len(key) not in (2, 3) or not 1 <= key[1] <= 12:
        return None
    return (2000 + key[0], key[1])


def _date_of(text: Any) -> Key:
    v = parse(str(text))
    if v is None or v.kind != "date" or v.precision != 3:
        raise CatalogError(f"{_TABLE.name}: {text!r} is not a YYYY-MM-DD date")
    return v.key


@functools.cache
def release_table(name: str) -> Releases | None:
    """The release table of framework ``name``, or None where it has none."""
    from trainsim.catalog import _read_yaml

    raw = _read_yaml(_TABLE).get(name)
    if raw is None:
        return None
    rels = []
    for number, date in (raw.get("releases") or {}).items():
        v = parse(str(number))
        if v is None or v.kind != "release":
            raise CatalogError(f"{_TABLE.name}: {name}: {number!r} is not a release number")
        rels.append((v.key, str(number), _date_of(date)))
    boxes = []
    for box, (tag, date) in (raw.get("containers") or {}).items():
        v = parse(str(box))
        month = container_month(v.key) if v is not None and v.kind == "release" else None
        if month is None:
            raise CatalogError(f"{_TABLE.name}: {name}: {box!r} is not a container number")
        if date is not None:  # null: a cited tag newer than the mirror the table was read from
            _date_of(date)  # the tag's date: evidence for the table's check, not the container's
        boxes.append((v.key, str(tag), month))
    patches = raw.get("patches", "trunk")
    if patches not in ("trunk", "branch"):
        raise CatalogError(f"{_TABLE.name}: {name}: patches {patches!r} is not trunk or branch")
    return Releases(str(raw.get("repo", "")), tuple(sorted(rels, key=lambda r: r[2])),
                    tuple(sorted(boxes)), patches == "branch")


def _release_date(table: Releases, key: Key) -> tuple[str, Key] | None:
    """(tag text, date) of release ``key``: the release itself, else the latest patch of its
    minor release numbered below it (``0.14`` -> 0.14.0; ``0.12.9`` -> 0.12.3)."""
    exact = [r for r in table.releases if r[0] == key]
    if exact:
        return exact[0][1], exact[0][2]
    minor = key[:2]
    below = [r for r in table.releases if _norm(r[0][:2]) == _norm(minor) and r[0] <= key]
    if not below:
        return None
    best = max(below, key=lambda r: r[0])
    return best[1], best[2]


def _past_newest(table: Releases, key: Key) -> tuple[Key, str, Key] | None:
    """The newest release of ``table`` (by date) where release ``key`` continues its numbering
    past it (a release made after the table was written), else None. Numbering can restart:
    Megatron-LM went 23.06 -> 0.4.0, so ``key`` continues the newest release's series or
    opens the next major number, never a series an older release used."""
    if not table.releases:
        return None
    last = max(table.releases, key=lambda r: (r[2], _norm(r[0])))
    older = {r[0][0] for r in table.releases if r[0][0] != last[0][0]}
    if key[0] in older or key[0] > last[0][0] + 1:
        return None
    return last if _norm(key) > _norm(last[0]) else None


def _by_date(rows: list[tuple[Key, str, Key]], when: Version) -> tuple[Key, str, Key] | None:
    """The latest of ``rows`` (release, tag, date) tagged by ``when`` at its precision (a
    container's date is its month, so it is out on every day of that month)."""
    p = when.precision
    done = [r for r in rows if r[2][:p] <= when.key[:p]]
    return max(done, key=lambda r: (r[2], r[0])) if done else None


def _forms(name: str, style: str, first: str, table: Releases | None) -> str:
    rows = (table.containers or table.releases) if table else ()
    date_ex = first if style == "date" else date_text(rows[-1][2], 2) if rows else ""
    if style == "release":
        rel_ex = first
    else:
        rel_ex = table.releases[-1][1] if table and table.releases else ""
    if style == "date" and not rel_ex:
        return f"{name} versions are dates (YYYY-MM) such as '{first}' (no release table here)"
    if style == "release" and not date_ex:
        return f"{name} versions are release numbers such as '{first}' (no release dates here)"
    return f"give a date (YYYY-MM, e.g. '{date_ex}') or a {name} release (e.g. '{rel_ex}')"


def _fail(name: str, text: str, why: str, style: str, first: str,
          table: Releases | None) -> CatalogError:
    return CatalogError(f"framework '{name}' version {text!r}: {why}"
                        f"{_forms(name, style, first, table)}")


def resolve(name: str, style: str, first: str, text: str) -> tuple[Key, str]:
    """(the key that selects ``name``'s profile entry for the version ``text``, how it was read:
    '' where it was read as written). ``style`` is the profile's ("date" or "release"),
    ``first`` its first entry's ``since`` (for the error's example)."""
    return _resolve(name, style, first, text.strip())


@functools.cache
def _resolve(name: str, style: str, first: str, text: str) -> tuple[Key, str]:
    table = release_table(name)
    v = parse(text)
    if v is None:
        why = "not a calendar date; " if _DATE.match(text) else ""
        raise _fail(name, text, why, style, first, table)
    suffix = f" ({text} read as its release)" if v.suffix else ""
    if v.kind == "date":
        year = " (a year alone reads as its January)" if v.precision == 2 and \
            re.fullmatch(r"\d{4}", text) else ""
        if style == "date":
            written = date_text(v.key, v.precision)
            return v.key, f"{written}{year}" if year or written != text else ""
        rows = list(table.containers or table.releases) if table else []
        if not rows:
            raise _fail(name, text, "", style, first, table)
        hit = _by_date(rows, v)
        if hit is None:
            return (0,), year.strip(" ()")  # before the first release: the first entry
        what = f"container ({hit[1]})" if table and table.containers else f"release ({hit[1]})"
        return hit[0], (f"{release_text(hit[0])} (the latest {what} by "
                        f"{date_text(v.key, v.precision)}: {date_text(hit[2])}){year}")
    # a release number
    if style == "release":
        if table and table.containers and v.key[0] < CONTAINER_MAJOR:
            return _library_release(name, text, v, table, style, first)
        why = _unknown(name, v.key, table) if table else ""
        if why:
            raise _fail(name, text, why, style, first, table)
        past = _past_note(name, text, v.key, table) if table else ""
        if past:
            return v.key, past
        if table and not table.containers and table.releases and \
                _release_date(table, v.key) is None and v.key > max(r[0] for r in table.releases):
            # past the table and continuing no series of it (megatron-core 2.7): no release
            raise _fail(name, text, _no_release(name, text, table), style, first, table)
        return v.key, (release_text(v.key) + suffix) if v.suffix else ""
    if table is None or not table.releases:
        raise _fail(name, text, "", style, first, table)
    if v.core:  # a core_ tag names a release of the newest numbering (Megatron Core's 0.x)
        table = _newest_run(table)
    found = _release_date(table, v.key)
    if found is None:
        newest = _past_newest(table, v.key)
        if newest is None:
            raise _fail(name, text, _no_release(name, text, table), style, first, table)
        return newest[2], (f"{date_text(newest[2])} ({name} {text} is newer than "
                           f"{_TABLE.name} knows: read as its newest release, {newest[1]})")
    if table.branch_patches:  # a patch is cut from its minor's release branch
        minor = [r for r in table.releases if _norm(r[0][:2]) == _norm(v.key[:2])]
        opened = min(minor, key=lambda r: r[2])
        if opened[1] != found[0]:
            return opened[2], (f"{date_text(opened[2])} (the tag date of {table.repo} "
                               f"{opened[1]}: {text} is a patch on its release branch){suffix}")
    return found[1], f"{date_text(found[1])} (the tag date of {table.repo} {found[0]}){suffix}"


def _no_release(name: str, text: str, table: Releases | None = None) -> str:
    """Why ``text`` selects nothing: no such release of ``name`` in the table (with the span
    of ``table``'s tags where given)."""
    tags = (f" ({table.repo} tags {table.releases[0][1]} .. {table.releases[-1][1]})"
            if table is not None else "")
    return f"no {name} release {text} in {_TABLE.name}{tags}; "


def _newest_run(table: Releases) -> Releases:
    """``table`` from its last restart of numbering on: the last release (by date) numbered
    below every release before it (Megatron-LM 23.06 -> core_r0.4.0), and all after it."""
    start, low = 0, None
    for i, r in enumerate(table.releases):
        if low is None or r[0] < low:
            start, low = i, r[0]
    return Releases(table.repo, table.releases[start:], table.containers, table.branch_patches)


def _unknown(name: str, key: Key, table: Releases) -> str:
    """Why release number ``key`` cannot select a profile entry of ``name`` ('' where it can):
    a container on a framework without any, or a number shaped like no container."""
    if key[0] >= CONTAINER_MAJOR:
        if not table.containers:
            return f"{name} is numbered by its releases, not by containers (YY.MM); "
        if container_month(key) is None:
            return f"{release_text(key)} is not a container (YY.MM); "
    return ""


def _past_note(name: str, text: str, key: Key, table: Releases) -> str:
    """The reading of a release ``key`` numbered after everything the table knows (it selects
    the profile's newest entry), else ''."""
    newest, when = table.newest
    month = container_month(key) if key[0] >= CONTAINER_MAJOR else None
    if month is not None and month > when[:2] or \
            month is None and _past_newest(table, key[:2]) is not None:
        return (f"{text} (newer than {_TABLE.name} knows, {newest} of "
                f"{date_text(when)}: read as the newest {name} profile entry)")
    return ""


def _library_release(name: str, text: str, v: Version, table: Releases, style: str,
                     first: str) -> tuple[Key, str]:
    """A library release on a container-keyed profile: the container that ships it."""
    # the container of this very tag, else of its final release, else of a pre-release of it
    # (Megatron-Bridge 0.1 shipped only as v0.1.0rc3)
    ships = [(t.suffix != v.suffix, bool(t.suffix), box, tag) for box, tag, _ in table.containers
             if (t := parse(tag)) is not None and t.key == v.key]
    if ships:
        _, _, box, tag = min(ships)
        return box, f"{release_text(box)} (the container that ships {tag})"
    found = _release_date(table, v.key)
    if found is None:
        newest = _past_newest(table, v.key)
        if newest is None:
            raise _fail(name, text, _no_release(name, text), style, first, table)
        box = max(table.containers)
        return box[0], (f"{release_text(box[0])} ({name} {text} is newer than "
                        f"{_TABLE.name} knows: read as its newest container)")
    hit = _by_date(list(table.containers), Version("date", found[1], 3))
    if hit is None:
        return (0,), f"{name} {found[0]} of {date_text(found[1])}, before the first container here"
    return hit[0], (f"{release_text(hit[0])} (the latest container by {name} {found[0]} of "
                    f"{date_text(found[1])})")
