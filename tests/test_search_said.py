"""What the search says to its user, wherever the user is: the replicas line reaches the CLI's
stderr once and the JSON of the CLI and of a service job (``warnings``), not only a service
worker's stderr; a search-space error names the option the user wrote (the service files it
under ``options.<name>``, not ``config``)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from trainsim.cli import main
from trainsim.service import Settings, jobs

SETTINGS = Settings(db_url="sqlite://", workers=0)
SETS = ["training.framework=pytorch", "parallel.dp_replicate=2"]
FLAGS = ["--gpus", "16", "--global-batch", "64", "--seq", "4096", "--tp", "1", "--pp", "1",
         "--cp", "1", "--recompute", "none", "--max-micro-batch", "1", "--overlap", "on",
         "--workers", "1", "--top", "1"]
OPTIONS = {"gpus": "16", "global_batch": 64, "seq": 4096, "tp": "1", "pp": "1", "cp": "1",
           "recompute": "none", "max_micro_batch": 1, "overlap": "on", "top": 1, "set": SETS}
SAID = "runs its fsdp1 engine at stages 2, 3 only (not 0, 1)"


def _cli(*args: str):
    from trainsim.search.core import DEFAULT_CACHE

    DEFAULT_CACHE.__init__(DEFAULT_CACHE.max_entries)  # as a fresh process
    res = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert res.exit_code == 0, res.stderr
    return res


def test_the_replicas_line_reaches_the_cli_json_and_the_service_job():
    """The pytorch HSDP search's one line (``search.fixed.sharded_for_replicas``) was a
    warning said in whichever process read the inputs: a service job ran it in a worker, whose
    stderr no user reads. Now the CLI prints it once and both JSONs carry it."""
    sets = [a for s in SETS for a in ("--set", s)]
    res = _cli("search", "llama3.2-1b", *FLAGS, *sets, "--format", "json")
    lines = [x for x in res.stderr.splitlines() if "dp_replicate" in x]
    assert len(lines) == 1 and SAID in lines[0] and lines[0].startswith("warning:")
    cli_json = json.loads(res.stdout)
    assert len(cli_json["warnings"]) == 1 and SAID in cli_json["warnings"][0]
    out = json.loads(jobs.run("search", {"model": "llama3.2-1b"}, dict(OPTIONS), SETTINGS).result)
    assert out["warnings"] == cli_json["warnings"] and out["top"] == cli_json["top"]
    quiet = _cli("search", "llama3.2-1b", *FLAGS, "--format", "json")
    assert json.loads(quiet.stdout)["warnings"] == [] and "warning:" not in quiet.stderr


def test_a_search_space_error_names_the_option_the_request_wrote():
    """Errors in a search's own options were filed under ``config`` (the service) and some
    named no option at all ('search space: zero values [5] ...', a --schedules or --reference
    error naming only the config field). Now each names the option as written: the CLI's
    flag, the service's ``options.<name>`` (field and message)."""
    import pytest

    from trainsim.errors import ConfigError
    from trainsim.search.cli_inputs import build_base, parse_reference, search_space

    cfg = {"model": "llama3-8b"}
    opts = {"gpus": "16", "global_batch": 64, "seq": 4096}
    for given, field in (({"tp": "x"}, "options.tp"), ({"zero": "5"}, "options.zero"),
                         ({"recompute": "foo"}, "options.recompute"),
                         ({"overlap": "maybe"}, "options.overlap"),
                         ({"dispatcher": "xx"}, "options.dispatcher"),  # was accepted
                         ({"schedules": "zzz"}, "options.schedules"),
                         ({"reference": "tp=3"}, "options.reference"),
                         ({"set": ["parallel.ep=3"]}, "options.set"),
                         ({"set": ["training.zero=1"]}, "options.set")):
        said = jobs.problem("search", cfg, {**opts, **given}, SETTINGS)
        assert said is not None and said[1] == field and field in said[2], (given, said)
        assert "--" not in said[2], said
    for kw, flag in (({"zero": "5"}, "--zero"), ({"schedules": "zzz"}, "--schedules")):
        args = {"zero": None, "schedules": None, **kw}
        with pytest.raises(ConfigError, match=flag):
            search_space(None, None, None, 8, 1, "none", args["zero"], "search",
                         schedules=args["schedules"])
    base = build_base("llama3-8b", "h100-sxm-80gb", 16, 64, 4096, 8, 400.0, "bf16")
    with pytest.raises(ConfigError, match="^--reference 'tp=3'"):
        parse_reference("tp=3", base, 16)
    with pytest.raises(ConfigError, match="--set training.zero"):
        build_base("llama3-8b", "h100-sxm-80gb", 16, 64, 4096, 8, 400.0, "bf16",
                   ("training.zero=1",))
