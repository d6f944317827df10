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


def test_a_run_from_the_form_shows_its_result(browser, tmp_path):
    from trainsim.service.store import Store
    from trainsim.service.testing import server

    shots = Path(os.environ.get("TRAINSIM_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    db = f"sqlite:///{tmp_path / 'ui.db'}"
    store = Store(db)
    token = store.create_token("browser")
    store.close()
    with server(db, workers=1, extra=("--checkers", "0")) as srv:
        page = browser.new_page(viewport={"width": 1366, "height": 900})
        page.goto(srv.base + "/")
        page.fill("#token", token)
        page.click("#token-form button")
        page.goto(srv.base + "/#/new")
        page.wait_for_selector("#f-tp")
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
