"""A real browser on the web UI: Playwright drives Debian's Chromium against `trainsim serve`.

Skips with the reason where Playwright or Chromium is missing (apt-get install chromium;
pip install playwright). The screenshot goes to $TRAINSIM_SCREENSHOT_DIR, else the test's
temporary directory."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("fastapi")


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("browser test skipped: no Chromium found (apt-get install chromium)")


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("browser test skipped: playwright is not installed (pip install playwright)")
    executable = _chromium()
    with sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=executable,
                                  args=["--no-sandbox", "--disable-gpu"])
        except Exception as exc:  # noqa: BLE001 -- a Chromium that cannot start here
            pytest.skip(f"browser test skipped: Chromium did not start ({exc})")
        yield b
        b.close()


def _token(db: str) -> str:
    """A fresh API token in the service's store at ``db``."""
    from trainsim.service.store import Store

    store = Store(db)
    token = store.create_token("browser")
    store.close()
    return token


@pytest.fixture(scope="module")
def served(browser, tmp_path_factory):
    """One ``trainsim serve`` (one worker, no checkers) on a fresh store, and a token of it,
    for the module's pages: each test signs in on its own page and follows its own job."""
    from trainsim.service.testing import server

    db = f"sqlite:///{tmp_path_factory.mktemp('ui') / 'ui.db'}"
    token = _token(db)
    with server(db, workers=1, extra=("--checkers", "0")) as srv:
        yield srv, token


def _new_run_page(browser, base: str, token: str):
    """A page signed in with ``token`` on the new-run form (its fields drawn)."""
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(base + "/")
    page.fill("#token", token)
    page.click("#token-form button")
    page.goto(base + "/#/new")
    page.wait_for_selector("#f-tp")
    return page


def test_a_page_left_before_its_answer_came_does_not_draw_over_the_next(browser, served):
    """CI on b9f724cd: signing in draws the runs list, and opening "New run" before that list
    came back let the late list replace the form (``#f-tp`` never showed). The list's answer is
    held back here so the order is certain; the form must stay."""
    srv, token = served
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(srv.base + "/")
    page.evaluate("""() => { const f = window.fetch; window.fetch = (u, o) =>
        String(u).includes('/jobs?limit') ? new Promise(r => setTimeout(r, 600)).then(() => f(u, o))
                                           : f(u, o); }""")
    page.fill("#token", token)
    page.click("#token-form button")
    page.evaluate("location.hash = '#/new'")
    page.wait_for_selector("#f-tp")
    page.wait_for_timeout(1500)  # the held-back list has come back by now
    assert page.query_selector("#f-tp") is not None
    assert "Your runs" not in page.inner_text("#view")


def test_a_run_from_the_form_shows_its_result(browser, served, tmp_path):
    shots = Path(os.environ.get("TRAINSIM_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    srv, token = served
    page = _new_run_page(browser, srv.base, token)
    page.fill("#f-tp", "3")  # 32 heads: TP 3 is refused at the field
    page.click("#run")
    error = page.wait_for_selector(".field-error")
    assert "does not divide" in error.inner_text()
    assert page.eval_on_selector("#f-tp", "e => e.classList.contains('invalid')")
    page.screenshot(path=str(shots / "trainsim-field-error.png"))
    page.fill("#f-tp", "2")
    page.click("#run")
    page.wait_for_selector("#status:text('done')", timeout=60_000)
    page.wait_for_selector("#timeline svg", timeout=30_000)
    text = page.inner_text("#result")
    for label in ("Iteration time", "Tokens/s", "MFU", "Memory per GPU", "Days", "Cost",
                  "Where the iteration time goes", "Pipeline timeline", "Perfetto trace"):
        assert label in text
    page.screenshot(path=str(shots / "trainsim-result.png"), full_page=True)
    assert (shots / "trainsim-result.png").stat().st_size > 10_000


def test_the_yaml_editor_sends_the_text_the_server_reads_as_the_cli_does(browser, served):
    # the editor parsed YAML in the browser with Number(): framework_version: 0.10 became 0.1
    # (Megatron-core's 0.1 profile) and num_gpus: 010 read as 10 where the CLI refuses it
    import json
    import urllib.request

    srv, token = served
    text = ("model: llama3-8b\nparallel: {tp: 2}\ntraining: {global_batch_size: 128, "
            "seq_length: 8192, framework: megatron-core, framework_version: 0.10}\n"
            "cluster: {node: dgx-h100, num_gpus: 8}\n")
    page = _new_run_page(browser, srv.base, token)
    page.click(".tabs button[data-tab='yaml']")
    page.fill("#yaml", text.replace("num_gpus: 8", "num_gpus: 010"))
    page.click("#yaml-form button[type='submit']")
    error = page.wait_for_selector("#yaml-error .error")
    assert "octal" in error.inner_text()
    page.fill("#yaml", text)
    page.click("#yaml-form button[type='submit']")
    page.wait_for_selector("#status:text('done')", timeout=60_000)
    job_id = page.evaluate("location.hash").split("/")[-1]
    req = urllib.request.Request(f"{srv.base}/api/v1/jobs/{job_id}",
                                 headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req) as r:
        job = json.load(r)
    assert job["result"]["config"]["training"]["framework_version"] == "0.10"


def test_the_forms_number_fields_go_as_typed_where_no_plain_number(browser, served):
    """robust57: ``parseInt`` read a typed "1.28e2" as a global batch of 1 (the browser's own
    check takes it: 128 is a whole number) and "1.5" as 1; a plain number goes as that number,
    which the server reads as a config file's number or refuses naming the field."""
    srv, token = served
    page = _new_run_page(browser, srv.base, token)
    page.fill("#f-micro_batch_size", "1.5")
    page.fill("#f-global_batch_size", "1.28e2")
    training = page.evaluate("configFromForm()")["training"]
    assert training["micro_batch_size"] == 1.5 and training["global_batch_size"] == 128


def test_the_forms_token_field_takes_si_multiples_as_a_config_does(browser, served):
    """robust57 lead 2: the run form's ``<input type=number>`` refused a typed "15T" in the
    browser itself, where ``training.train_tokens: 15T`` is 1.5e13 tokens in a file; now a text
    field sends it as typed, the server reads it as a config's (``si_float``), and refuses
    text that is no number under the field."""
    import json
    import urllib.request

    srv, token = served
    page = _new_run_page(browser, srv.base, token)
    page.fill("#f-train_tokens", "15Q")
    page.click("#run")
    error = page.wait_for_selector("label:has(#f-train_tokens) .field-error")
    assert "training.train_tokens" in error.inner_text()
    page.fill("#f-train_tokens", "15T")
    assert page.evaluate("configFromForm()")["training"]["train_tokens"] == "15T"
    page.click("#run")
    page.wait_for_selector("#status:text('done')", timeout=60_000)
    job_id = page.evaluate("location.hash").split("/")[-1]
    req = urllib.request.Request(f"{srv.base}/api/v1/jobs/{job_id}",
                                 headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req) as r:
        job = json.load(r)
    assert job["result"]["config"]["training"]["train_tokens"] == 1.5e13
