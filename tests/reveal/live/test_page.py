"""The live page: one self-contained document that polls the run's state, sets every text from the data as text, and
in headless Chromium on a real run shows the host learning and its scores without injecting anything."""

import re

from reveal.live.page import REFRESH_MS, render_live_page
from tests.reveal.chromium import chromium, png_facts


def test_the_page_is_self_contained_and_sets_data_only_as_text():
    html = render_live_page()
    assert html.startswith("<!doctype html>") and "<title>Reveal — live</title>" in html
    assert re.findall(r"fetch\('([^']*)'", html) == ["/api/state"]
    assert not re.search(r"<(link|img|iframe)\b|\bsrc=|\bhref=", html), "nothing is fetched from elsewhere"
    assert "innerHTML" not in html and "insertAdjacentHTML" not in html and "document.write" not in html
    assert f"setInterval(refresh, {REFRESH_MS})" in html and "REFRESH_MS" not in html


def test_the_page_shows_the_host_learning_and_scores_and_injects_nothing(live_run, tmp_path):
    _, url = live_run
    dumped = chromium(tmp_path, "--virtual-time-budget=4000", "--dump-dom", f"{url}/")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = dumped.stdout
    assert "&lt;img src=x onerror=" in dom and "<img" not in dom and "<title>Reveal — live</title>" in dom
    assert 'class="host"' in dom and "anomaly score (solid) against its threshold" in dom
    assert "windows ·" in dom and "<svg" in dom
    shot = tmp_path / "live.png"
    taken = chromium(tmp_path, "--virtual-time-budget=4000", "--window-size=1280,1400", f"--screenshot={shot}",
                     f"{url}/")
    assert taken.returncode == 0, taken.stderr[-2000:]
    width, height, distinct = png_facts(shot)
    assert (width, height) == (1280, 1400) and distinct > 20
