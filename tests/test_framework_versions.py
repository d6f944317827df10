"""A framework version written as a release or as a date, read through the release table
(catalog/framework_releases.yaml, from the repositories' tags): each expected entry below was
derived by hand from the tag dates listed there and the profiles' ``since`` values."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from trainsim.catalog import _read_yaml
from trainsim.catalog.framework_versions import _TABLE, parse, release_table
from trainsim.catalog.frameworks import framework_profile, version_reading
from trainsim.errors import CatalogError, ConfigError
from trainsim.validate.vocab import normalized_training_row

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name, version, entry", [
    # DeepSpeed releases on its date-keyed profile (2021-03, 2021-07, 2022-03, 2022-04,
    # 2023-06-02, 2024-02-23):
    ("deepspeed", "0.14.0", "2024-02-23"),    # v0.14.0 tagged 2024-03-07
    ("deepspeed", "v0.9", "2022-04"),         # v0.9.0 2023-04-12
    ("deepspeed", "0.9.3", "2023-06-02"),     # 2023-06-02
    ("deepspeed", "v0.13.2", "2023-06-02"),   # 2024-02-10
    ("deepspeed", "0.13.3", "2024-02-23"),    # 2024-02-23
    ("deepspeed", "v0.4.0", "2021-03"),       # 2021-06-08
    ("deepspeed", "v0.4.4", "2021-07"),       # 2021-07-29
    ("deepspeed", "v0.5.10", "2021-10-31"),   # 2022-01-14
    ("deepspeed", "v0.5.5", "2021-10-31"),    # 2021-11-02: _allgather_params_coalesced (c0eeb69df)
    ("deepspeed", "v0.6.0", "2022-03"),       # 2022-03-07
    ("llm-foundry", "v0.10.0", "2024-01"),    # 2024-07-02
    ("torchtitan", "v0.1.0", "2025-05"),      # 2025-06-17 (entries 2025-04, 2025-05, 2025-10)
    ("torchtitan", "v0.2.2", "2026-02"),      # 2026-02-20 (contains e215f4f32, 2026-02-05)
    ("megatron-lm", "core_r0.8.0", "2024-06-13"),  # 2024-08-12 (entries 2024-06-13, 2024-09)
    ("megatron-lm", "core_v0.9.0", "2024-09"),  # 2024-10-24
    ("megatron-lm", "v2.5", "2021-03"),       # 2021-08-10 (entries 2021-03, 2021-09)
    ("megatron-lm", "0.8", "2024-06-13"),
    # suffixes read as the release
    ("megatron-core", "0.8.0rc1", "0.8"),
    ("megatron-core", "core_r0.8.0", "0.8"),
    ("megatron-bridge", "26.04.01", "26.04"),
    ("nemo", "24.09.01", "24.09"),
    # a year alone reads as its January: 2024-01 is before the 2024-04 entry
    ("megatron-lm", "2024", "2023-12"),
    ("megatron-lm", "2023", "2023-01"),
    ("torchtitan", "July 2024", "2024-07"),
    # dates on release-keyed profiles: the latest release (container) tagged by then
    ("megatron-core", "2024-07", "0.7"),      # core_v0.7.0 2024-05-30, core_v0.8.0 2024-08-12
    ("megatron-core", "2024-08", "0.8"),      # a month includes its releases
    ("megatron-core", "2024-08-01", "0.7"),   # a day does not include later ones
    ("megatron-bridge", "2026-04", "26.04"),  # container 26.04 is dated April 2026
    ("megatron-bridge", "2026-04-01", "26.04"),  # ... on every day of that month
    ("megatron-bridge", "2026-03-31", "26.02"),
    ("nemo", "2024-12", "24.09"),             # container 24.09 (v2.0.0 2024-11-14)
    ("nemo", "2024-07-31", "24.07"),          # container 24.07 is dated July 2024, its own month
    # real releases newer than the profile's last entry, known to the table
    ("megatron-core", "0.19", "0.18"),        # core_v0.19.0 2026-08-19
    ("megatron-core", "0.19.3", "0.18"),      # a patch of the newest tagged minor release
    ("megatron-bridge", "26.08", "26.06"),    # ships v0.6.0 (docs/versions1.json @ v0.6.0)
    ("megatron-bridge", "v0.6.0", "26.06"),
    ("nemo", "25.07", "25.07"),               # the container shipping NeMo v2.4.0
    ("nemo", "25.06", "25.04"),               # a container not listed, before 25.07's month
    # library releases on container-keyed profiles: the container shipping them
    ("megatron-bridge", "v0.2.0", "25.11"),
    ("megatron-bridge", "v0.3.1", "26.02"),   # 2026-03-20: latest container then is 26.02
    ("nemo", "2.0", "24.09"),
    ("nemo", "v2.0.0", "24.09"),
    ("megatron-bridge", "0.1.0", "25.09"),   # only v0.1.0rc3 was tagged: container 25.09
    # NeMo 2.x: v2.2.0/v2.3.0 run the 25.02/25.04 containers (their own docs); 25.09, 25.11
    # and 26.02 ship 2.5.0, 2.6.0, 2.7.0 (Megatron-Bridge docs/releases/software-versions.md)
    ("nemo", "2.5.0rc0", "25.07"),           # AMD's MLPerf v5.1 code: container 25.09
    ("nemo", "2.3.0", "25.04"),
    ("nemo", "v2.3.0", "25.04"),             # the release the 25.04 entry cites
    ("nemo", "2.4.0", "25.07"),              # the container that ships v2.4.0
    ("nemo", "2025-05", "25.04"),            # container 25.04 (v2.3.0 2025-05-08)
    ("nemo", "2026-01", "25.07"),            # container 25.11: the 25.07 entry, the last before it
    ("nemo", "2025-07-01", "25.07"),         # container 25.07 is dated July 2025, its own month
    ("nemo", "2025-06-30", "25.04"),
    ("nemo", "v2.4.0", "25.07"),             # the container that ships it
    ("nemo", "v2.3.2", "25.07"),             # 2025-07-08: a container counts on every day of its month
    ("nemo", "v2.3.1", "25.04"),             # 2025-05-25: the latest container by then, 25.04
    ("nemo", "2.2.1", "25.02"),              # 2025-03-31: container 25.02, before 25.04's entry
    ("nemo", "v2.2.0", "25.02"),
    ("nemo", "2025-02", "25.02"),            # container 25.02 is dated its own month
    ("nemo", "2.1.0", "24.09"),
    # before the first entry: the first entry (and the reading says so)
    ("deepspeed", "2020-06", "2021-03"),
    ("megatron-core", "2023-06", "0.4"),
    ("llm-foundry", "v0.4.0", "2024-01"),     # 2023-11-21
])
def test_spelling_selects_the_entry_derived_from_tag_dates(name, version, entry):
    assert framework_profile(name, version).version == entry


@pytest.mark.parametrize("name, version, says", [
    ("deepspeed", "0.14.0", "2024-03-07"),
    ("megatron-lm", "2024", "January"),
    ("nemo", "2.0", "24.09"),
    ("nemo", "2024-12", "24.09"),
    ("megatron-core", "2024-07", "0.7"),
    ("megatron-bridge", "v0.2.0", "25.11"),
    ("megatron-core", "0.8.0rc1", "read as its release"),
    ("deepspeed", "2020-06", "first profile entry"),
    ("nemo", "2024-07-31", "24.07 (the latest container (r2.0.0rc1) by 2024-07-31: 2024-07)"),
    ("nemo", "2024-06-30", "24.05"),
    ("megatron-bridge", "v0.6.0", "26.08"),
    ("nemo", "2.5.0rc0", "25.09 (the container that ships v2.5.0)"),
    ("nemo", "v2.6.0", "25.11 (the container that ships v2.6.0)"),
    ("nemo", "2.3.0", "25.04 (the container that ships v2.3.0)"),
    ("nemo", "2.4.0", "25.07 (the container that ships v2.4.0)"),
    ("nemo", "2.3.1", "25.04 (the latest container by nemo 2.3.1 of 2025-05-25)"),
    ("nemo", "2025-10", "25.09"),
])
def test_reading_is_reported(name, version, says):
    assert says in version_reading(name, version)


def test_native_spellings_read_as_written():
    for name, version in [("megatron-lm", "2021-04"), ("megatron-core", "0.8"),
                          ("nemo", "24.07"), ("megatron-bridge", "26.06"),
                          ("mlperf-nemo", "3.1"), ("torchtitan", "2024-12")]:
        assert version_reading(name, version) == ""


@pytest.mark.parametrize("name, version, both", [
    ("deepspeed", "v0.0.1", True),         # no such release, older than every tag
    ("deepspeed", "banana", True),
    ("megatron-core", "latest", True),
    ("megatron-deepspeed", "v1.0", False),  # no release table: dates only
    ("automodel", "2025-10", False),        # no release dates: releases only
    # a container where there are none, or a number shaped like no container
    ("megatron-core", "24.07", True),
    ("megatron-core", "2101", True),
    ("nemo", "v99.0", True),
    ("nemo", "24.13", True),
    ("megatron-lm", "24.01", True),        # no such release; 23.06 is not the newest series
    ("megatron-lm", "99.0", True),
    ("megatron-lm", "2.7", True),          # an old series (2.x, 2021) is not continued
    ("megatron-core", "2.7", True),        # past the table (0.19), continuing no series
    ("megatron-core", "3.0", True),
    # dates that are none
    ("torchtitan", "Mayday 2024", True),
    ("torchtitan", "2024-02-31", True),
])
def test_unknown_spellings_are_one_line_errors(name, version, both):
    with pytest.raises(CatalogError) as exc:
        framework_profile(name, version)
    msg = str(exc.value)
    assert "\n" not in msg and repr(version) in msg
    if both:  # both accepted forms, each with an example
        assert "give a date (YYYY-MM, e.g. '" in msg and f"or a {name} release (e.g. '" in msg
    else:  # the one form this framework takes, with an example
        assert "such as '" in msg


@pytest.mark.parametrize("name, version, entry, read", [
    # releases made after the table was written read as its newest, and say so
    ("megatron-core", "0.20", "0.18", "newer than framework_releases.yaml knows"),
    ("megatron-core", "1.0", "0.18", "newer than framework_releases.yaml knows"),
    ("nemo", "26.03", "25.07", "newer than framework_releases.yaml knows"),
    ("nemo", "2.8.0", "25.07", "read as its newest container"),
    ("megatron-bridge", "26.10", "26.06", "newer than framework_releases.yaml knows"),
    ("megatron-bridge", "v0.7.0", "26.06", "read as its newest container"),
    ("deepspeed", "v0.99", "2024-02-23", "read as its newest release"),
    ("llm-foundry", "v0.22.0", "2024-01", "read as its newest release"),
    # Megatron-LM's numbering restarted (23.06, then 0.4.0): 0.20 continues the newest series
    ("megatron-lm", "core_v0.20.0", "2026-04-28", "read as its newest release, 0.19.0"),
])
def test_releases_past_the_table_read_as_its_newest(name, version, entry, read):
    assert framework_profile(name, version).version == entry
    assert read in version_reading(name, version)


def test_megatron_lm_patch_release_carries_its_minor_features():
    # core_v0.13.1 (2025-08-11) is cut from the 0.13 branch, which lacks main's 720c8b40
    # (2025-07-29, MLA down-projections 'duplicated'); core_v0.14.0 (2025-10-08) has it
    feats = framework_profile("megatron-lm", "core_v0.13.1").features
    assert not feats.get("mla_down_proj_duplicated")
    assert "2025-07-25" in version_reading("megatron-lm", "core_v0.13.1")
    assert framework_profile("megatron-lm", "core_v0.14.0").features["mla_down_proj_duplicated"]
    assert "2025-05-06" in version_reading("megatron-lm", "0.12.3")  # tagged after 0.13.0


def test_core_tag_is_read_in_the_core_numbering():
    # core_v1.0.0 is a next Megatron Core major, not Megatron-LM 1.0 of 2020
    read = version_reading("megatron-lm", "core_v1.0.0")
    assert "newer than framework_releases.yaml knows" in read and "0.19.0" in read
    assert framework_profile("megatron-lm", "core_v1.0.0").version == \
        framework_profile("megatron-lm", "0.19.0").version
    assert "2020-04-21" in version_reading("megatron-lm", "1.0")  # without the prefix: 1.0


def test_reading_names_the_version_as_written():
    assert version_reading("megatron-core", " 1.0 ").startswith("1.0 (newer")
    assert "megatron-bridge v1.0 is newer" in version_reading("megatron-bridge", "v1.0")


def test_parse_forms():
    assert parse("2024").key == (2024, 1, 1) and parse("2024").precision == 2
    assert parse("2024/07").key == (2024, 7, 1)
    assert parse("Jul 2024").key == parse("2024-07").key
    assert parse("core_r0.8.0").key == (0, 8) and parse("0.8.0rc1").suffix == "rc1"
    assert parse("2024-13") is None and parse("next") is None
    assert parse("Mayday 2024") is None and parse("Junk 2024") is None
    assert parse("2024-02-31") is None and parse("2023-02-29") is None
    assert parse("2024-02-29").key == (2024, 2, 29)
    for spelled in ("Sep 2024", "Sept 2024", "sep. 2024", "September 2024"):
        assert parse(spelled).key == (2024, 9, 1), spelled


def test_validation_row_reports_the_reading():
    row, read = normalized_training_row({"framework": "DeepSpeed", "framework_version": "v0.14.0"})
    assert row["framework"] == "deepspeed" and "2024-03-07" in read["framework_version"]
    _, read = normalized_training_row({"framework": "megatron-lm", "framework_version": "2021-04"})
    assert "framework_version" not in read
    with pytest.raises(ConfigError) as exc:  # a container number on megatron-core is no version
        normalized_training_row({"framework": "megatron-core", "framework_version": "24.07"})
    assert "\n" not in str(exc.value) and "e.g. '0.4'" in str(exc.value)


def _months(date: str) -> int:
    return int(date[:4]) * 12 + int(date[5:7])


def test_table_file_is_ordered_and_containers_dated_by_their_month():
    """The file as written (not release_table, which sorts): releases oldest first; containers
    in number order, each shipping a tag tagged after the one before, tagged from one month before
    to two months after the container's own month, which is the date the reader gives it."""
    raw = _read_yaml(_TABLE)
    assert release_table("megatron-deepspeed") is None
    for name, body in raw.items():
        dates = list(body["releases"].values())
        assert dates == sorted(dates), name
        boxes = list((body.get("containers") or {}).items())
        assert [parse(b).key for b, _ in boxes] == sorted(parse(b).key for b, _ in boxes), name
        # a cited tag newer than the mirror has no date (null): only after every dated one
        tagged = [date for _, (_, date) in boxes]
        dated = [d for d in tagged if d is not None]
        assert tagged[:len(dated)] == dated == sorted(set(dated)), name
        read = {c[0]: c[2] for c in release_table(name).containers}
        for box, (tag, tag_date) in boxes:
            yy, mm = (int(x) for x in box.split(".")[:2])
            assert read[parse(box).key] == (2000 + yy, mm), (name, box)
            if tag_date is None:
                continue
            assert -1 <= _months(tag_date) - (yy * 12 + 2000 * 12 + mm) <= 2, (name, box, tag)
            final = body["releases"].get(tag.lstrip("vr"))
            assert final in (None, tag_date), (name, box, tag)


def test_table_matches_the_mirrors():
    """``benchmarks/framework_releases.py --check`` finds the table as the frameworks' tags in
    the repository mirrors under /work/.mirror give it. A check for machines that hold
    the mirrors: skipped where they are missing (CI); there the script's own tests
    (``test_check_catches_deleted_moved_and_reordered_lines``) keep ``--check`` honest."""
    if not Path("/work/.mirror/deepspeedai+DeepSpeed/repo").exists():
        pytest.skip("no repository mirrors here")
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks/framework_releases.py"),
                          "--check"], check=False, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def _script():
    spec = importlib.util.spec_from_file_location(
        "framework_releases", ROOT / "benchmarks/framework_releases.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_check_catches_deleted_moved_and_reordered_lines():
    """--check compares (framework, line) pairs: megatron-lm and megatron-core share the line
    '"0.8.0": "2024-08-12"', so deleting it from one section must still fail."""
    differences = _script().differences
    now = _TABLE.read_text()
    line = '    "0.8.0": "2024-08-12"\n'
    assert now.count(line) == 2
    assert differences(now, now) == ([], [])
    core = now.index("megatron-core:")
    deleted = now[:core] + now[core:].replace(line, "", 1)
    wrong, _ = differences(deleted, now)
    assert wrong == ['megatron-core: missing from the file: "0.8.0": "2024-08-12"']
    moved = now[:core] + now[core:].replace(line, "", 1).replace(
        "nemo:\n  repo: NVIDIA/NeMo\n", "nemo:\n  repo: NVIDIA/NeMo\n" + line, 1)
    wrong, _ = differences(moved, now)
    assert 'nemo: not in the mirrors: "0.8.0": "2024-08-12"' in wrong and len(wrong) == 2
    a, b = '    "0.9.0": "2024-10-24"\n', '    "0.10.0": "2025-02-17"\n'
    swapped = now[:core] + now[core:].replace(a + b, b + a, 1)
    assert differences(swapped, now)[0] == ["the file's lines are not in the mirrors' order"]
    newer = now.replace('    "0.6.0": "2026-08-19"\n',
                        '    "0.6.0": "2026-08-19"\n    "0.6.1": "2026-09-01"\n')
    assert differences(now, newer) == (
        [], ['megatron-bridge: newer in the mirrors: "0.6.1": "2026-09-01"'])
    older = now.replace('    "0.6.0": "2026-08-19"\n',
                        '    "0.5.2": "2026-07-30"\n    "0.6.0": "2026-08-19"\n')
    assert differences(now, older)[0] == [
        'megatron-bridge: missing from the file: "0.5.2": "2026-07-30"']


def test_rows_spelled_otherwise_predict_the_same():
    """A public row whose version is rewritten in another spelling of the same profile entry
    gives the same prediction, and says how it was read."""
    import csv

    from trainsim.validate import BUNDLED_DIR
    from trainsim.validate.training import predict_training_row

    path = BUNDLED_DIR / "training_public.csv"
    swap = {("deepspeed", "2021-03"): "v0.3.13", ("megatron-core", "0.8"): "2024-08",
            ("nemo", "24.07"): "v2.0.0rc1", ("megatron-lm", "2022-05"): "May 2022",
            ("megatron-bridge", "25.11"): "v0.2.0", ("llm-foundry", "2024-01"): "2024"}
    done = set()
    for row in csv.DictReader(path.open()):
        key = (row["framework"], row["framework_version"])
        if key not in swap or key in done:
            continue
        done.add(key)
        a = predict_training_row(row)
        b = predict_training_row(dict(row, framework_version=swap[key]))
        assert a.error is None and b.error is None, (row["id"], b.error)
        assert b.predicted == a.predicted, row["id"]
        assert b.extra["read_as"]["framework_version"].startswith(swap[key] + " -> ")
    assert done == set(swap)
