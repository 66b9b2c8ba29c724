"""The live page: one self-contained document that polls the run's state and reads its stored frames through the
run's query service, sets every text from the data as text, and in headless Chromium on a real run shows the host's
scores, the fleet, an overview with clock-time axes and units, chosen and searched channels, without injecting
anything."""

import re

from reveal.live.page import REFRESH_MS, render_live_page
from tests.reveal.chromium import chromium, png_facts


def test_the_page_is_self_contained_and_sets_data_only_as_text():
    html = render_live_page()
    assert html.startswith("<!doctype html>") and "<title>Reveal — live</title>" in html
    assert set(re.findall(r"fetch\('([^']*)'", html)) == {"/api/state", "/api/query"}
    assert not re.search(r"<(link|img|iframe)\b|\bsrc=|\bhref=", html), "nothing is fetched from elsewhere"
    assert "innerHTML" not in html and "insertAdjacentHTML" not in html and "document.write" not in html
    assert f"setInterval(() => refreshAll(false), {REFRESH_MS})" in html and "REFRESH_MS" not in html


def test_the_page_shows_the_host_its_overview_and_chosen_channels_and_injects_nothing(live_run, tmp_path):
    _, url = live_run
    link = f"{url}/#range=300&search=cpu.user&channels=cpu.user.all,mem.MemFree"
    dumped = chromium(tmp_path, "--virtual-time-budget=8000", "--dump-dom", link)
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = dumped.stdout
    assert "&lt;img src=x onerror=" in dom and "<img" not in dom and "<title>Reveal — live</title>" in dom
    assert 'class="host live"' in dom and "anomaly score (solid) against its threshold" in dom
    assert re.search(r'<ul id="fleet"><li class="on[^"]*">&lt;img src=x', dom), "the fleet lists the host, chosen"
    captions = [caption.split(" · ")[0] for caption in re.findall(r"<figcaption>([^<]*)", dom)]
    assert {"CPU (ticks/s)", "Memory", "Network", "cpu.user.all [cpu]", "mem.MemFree [memory]"} <= set(captions)
    assert re.search(r"<text[^>]*>\d\d:\d\d:\d\d</text>", dom), "clock-time axes"
    assert re.search(r"<text[^>]*>[\d.]+[kMG]? (ticks/s|B)</text>", dom), "values with their units"
    listed = re.findall(r"<ul class=\"channels\">(.*?)</ul>", dom)[0]
    assert "cpu.user.all · cpu · counter" in listed and "mem.MemFree" not in listed, "the search filters by name"
    assert re.search(r'stored-status">stored data to \d\d:\d\d:\d\d', dom)
    shot = tmp_path / "live.png"
    taken = chromium(tmp_path, "--virtual-time-budget=8000", "--window-size=1280,1400", f"--screenshot={shot}", link)
    assert taken.returncode == 0, taken.stderr[-2000:]
    width, height, distinct = png_facts(shot)
    assert (width, height) == (1280, 1400) and distinct > 20
