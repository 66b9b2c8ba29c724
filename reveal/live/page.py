"""The live page: one self-contained HTML document (inline CSS and script, page.js; nothing fetched from elsewhere)
that polls `/api/state` every second for the host's scores, learning, incidents and evidence, and reads the stored
frames through the run's read-only `/api/query` for the fleet list, a host overview (CPU, memory, disk, network),
channel search by name and subsystem and traces over a chosen time range, with clock-time axes, units, incident
markers and a scale a spike cannot flatten. Every text from the data is set as text, never as markup, so a host or
channel name cannot inject anything."""

from __future__ import annotations

from importlib.resources import files

REFRESH_MS = 1000

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2430}
header{background:#1d2430;color:#fff;padding:10px 18px;display:flex;gap:18px;align-items:baseline}
header h1{font-size:18px;margin:0} #status{opacity:.8}
main{padding:12px 18px;display:grid;gap:14px}
section.host{background:#fff;border:1px solid #d8dde5;border-radius:6px;padding:12px 14px}
section.host h2{margin:0 0 6px;font-size:16px}
.learning{background:#fff6da;border:1px solid #e8cf7a;padding:6px 8px;border-radius:4px;margin:6px 0}
.sureness{background:#eef4fb;border:1px solid #b7cde6;padding:6px 8px;border-radius:4px;margin:6px 0}
.incident{border-left:4px solid #c0392b;padding:4px 8px;margin:6px 0;background:#fdf1f0}
.incident.closed{border-color:#8a94a6;background:#f3f4f6}
.hint{color:#4a5568;font-style:italic}
.meta{color:#4a5568;font-size:12px}
.charts{display:flex;flex-wrap:wrap;gap:12px}
figure{margin:0;background:#fff;border:1px solid #e2e8f0;border-radius:4px;padding:4px}
figcaption{font-size:12px;color:#4a5568} .legend{font-size:11px;color:#4a5568}
.legend .key{border-left:10px solid;padding:0 6px 0 4px;margin-right:4px}
table.evidence{border-collapse:collapse;font-size:12px} table.evidence td{padding:1px 8px 1px 0}
#layout{display:grid;grid-template-columns:220px 1fr;gap:0}
nav{background:#eef1f5;padding:10px 12px;border-right:1px solid #d8dde5;min-height:100vh}
nav h2{font-size:14px;margin:4px 0} nav ul,ul.channels{list-style:none;padding:0;margin:0}
nav li{padding:4px 6px;border-radius:4px;cursor:pointer;font-size:13px} nav li.on{background:#1d2430;color:#fff}
nav li.alerting{border-left:4px solid #c0392b}
#stored{padding:0 18px 18px;display:grid;gap:12px} #stored h2{font-size:15px;margin:8px 0 0}
#ranges button{margin-right:4px;border:1px solid #8a94a6;background:#2d3748;color:#fff;border-radius:4px;
 padding:2px 8px;cursor:pointer} #ranges button.on{background:#fff;color:#1d2430}
#stored-status{opacity:.7;font-size:12px}
.controls{display:flex;gap:8px;margin-bottom:6px} .controls input{flex:1;padding:4px 6px}
ul.channels li{font-size:12px;padding:2px 4px;cursor:pointer;border-bottom:1px solid #edf2f7}
ul.channels li.chosen{background:#ebf4ff;font-weight:600}
"""

def render_live_page() -> str:
    """The page's HTML."""
    script = files("reveal.live").joinpath("page.js").read_text(encoding="utf-8").replace("REFRESH_MS",
                                                                                          str(REFRESH_MS))
    return ("<!doctype html><html lang=en><head><meta charset=utf-8><title>Reveal — live</title>"
            f"<style>{_STYLE}</style></head><body><header><h1>Reveal — live</h1><span id=ranges></span>"
            "<span id=status>connecting…</span><span id=stored-status></span></header>"
            "<div id=layout><nav><h2>Hosts</h2><ul id=fleet></ul></nav><div id=content><main id=hosts></main>"
            f"<section id=stored></section></div></div><script>{script}</script></body></html>")
