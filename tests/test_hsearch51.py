"""hsearch51: plan's --pue / --price beside a --set of the same cluster field, to another value,
is refused in one line (robust51's lead 1: the option won in silence), on the command line and
in the service's plan job; an equal value is one setting."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from trainsim.errors import ConfigError
from trainsim.search.cli import plan_cmd
from trainsim.search.cli_inputs import check_plan_sets


@pytest.mark.parametrize(("sets", "pue", "price", "words"), [
    (("cluster.pue=1.1",), 1.5, None, "--set cluster.pue=1.1 and --pue 1.5"),
    (("cluster.price_per_gpu_hour=5",), None, 3.0,
     "--set cluster.price_per_gpu_hour=5 and --price 3"),
])
def test_plan_option_and_set_of_one_field_two_values_refused(sets, pue, price, words):
    with pytest.raises(ConfigError, match=words.replace(".", r"\.")):
        check_plan_sets(sets, pue, price)


@pytest.mark.parametrize(("sets", "pue", "price"), [
    (("cluster.pue=1.5",), 1.5, None),               # equal: one setting
    (("cluster.price_per_gpu_hour=3",), None, 3.0),  # 3 == 3.0
    (("cluster.pue=1.1",), None, None),              # the option not given: the --set stands
    ((), 1.5, 2.0),
])
def test_plan_option_and_set_agreeing_or_alone_pass(sets, pue, price):
    check_plan_sets(sets, pue, price)


def test_plan_cli_refuses_before_searching():
    r = CliRunner().invoke(plan_cmd, ["llama3-8b", "--gpu", "h100-sxm-80gb", "--tokens", "1e9",
                                      "--days", "30", "--pue", "1.5", "--set", "cluster.pue=1.1"])
    assert r.exit_code != 0
    assert "--set cluster.pue=1.1 and --pue 1.5 set the same field; give one" in r.output


def test_service_plan_job_refuses_as_options(tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from trainsim.service import Settings, create_app

    app = create_app(Settings(db_url=f"sqlite:///{tmp_path / 's.db'}", workers=0, checkers=0),
                     start_workers=False)
    with TestClient(app) as client:
        headers = {"Authorization": f"Bearer {app.state.store.create_token('t')}"}

        def post(options):
            return client.post("/api/v1/jobs", headers=headers, json={
                "kind": "plan", "options": {"model": "llama3-8b", "gpu": "h100-sxm-80gb",
                                            "tokens": "1e9", "days": 30, **options}})

        r = post({"price": 3, "set": ["cluster.price_per_gpu_hour=5"]})
        assert r.status_code == 422, r.text
        err = r.json()["error"]
        assert "cluster.price_per_gpu_hour=5" in err and "price" in err and "\n" not in err.strip()
        r = post({"pue": 1.5, "set": ["cluster.pue=1.1"]})
        assert r.status_code == 422, r.text
        assert "cluster.pue=1.1" in r.json()["error"]
        assert post({"pue": 1.5, "set": ["cluster.pue=1.5"]}).status_code == 202
