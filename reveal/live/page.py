"""The live page: one self-contained HTML document (inline CSS and script, nothing fetched from elsewhere) that
polls `/api/state` every second and draws each host's scores, incidents, evidence and traces. Every text from the
data is set as text, never as markup, so a host or channel name cannot inject anything."""

from __future__ import annotations

REFRESH_MS = 1000

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2430}
header{background:#1d2430;color:#fff;padding:10px 18px;display:flex;gap:18px;align-items:baseline}
header h1{font-size:18px;margin:0} #status{opacity:.8}
main{padding:12px 18px;display:grid;gap:14px}
section.host{background:#fff;border:1px solid #d8dde5;border-radius:6px;padding:12px 14px}
section.host h2{margin:0 0 6px;font-size:16px}
.learning{background:#fff6da;border:1px solid #e8cf7a;padding:6px 8px;border-radius:4px;margin:6px 0}
.incident{border-left:4px solid #c0392b;padding:4px 8px;margin:6px 0;background:#fdf1f0}
.incident.closed{border-color:#8a94a6;background:#f3f4f6}
.hint{color:#4a5568;font-style:italic}
.meta{color:#4a5568;font-size:12px}
.charts{display:flex;flex-wrap:wrap;gap:12px}
figure{margin:0} figcaption{font-size:12px;color:#4a5568}
table.evidence{border-collapse:collapse;font-size:12px} table.evidence td{padding:1px 8px 1px 0}
"""

_SCRIPT = """
const SVG = 'http://www.w3.org/2000/svg';
function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}
function clock(ns) { return new Date(ns / 1e6).toLocaleTimeString(); }
function chart(caption, series, width, height) {
  const figure = el('figure'); const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('width', width); svg.setAttribute('height', height);
  const all = series.flatMap(s => s.values).filter(v => v !== null && isFinite(v));
  const low = all.length ? Math.min(...all) : 0, high = all.length ? Math.max(...all) : 1;
  const span = high - low || 1;
  for (const s of series) {
    const n = s.values.length; if (n < 2) continue;
    const points = s.values.map((v, i) => v === null ? null :
      `${(i / (n - 1) * (width - 4) + 2).toFixed(1)},${(height - 2 - (v - low) / span * (height - 4)).toFixed(1)}`)
      .filter(p => p !== null).join(' ');
    const line = document.createElementNS(SVG, 'polyline');
    line.setAttribute('points', points); line.setAttribute('fill', 'none');
    line.setAttribute('stroke', s.color); line.setAttribute('stroke-width', s.dashed ? 1 : 1.5);
    if (s.dashed) line.setAttribute('stroke-dasharray', '4 3');
    svg.appendChild(line);
  }
  figure.appendChild(svg);
  figure.appendChild(el('figcaption', null, `${caption} (${low.toPrecision(3)} … ${high.toPrecision(3)})`));
  return figure;
}
function incident(record, closed) {
  const box = el('div', closed ? 'incident closed' : 'incident');
  box.appendChild(el('div', null, `${closed ? 'closed' : record.state} · ${record.kind}/${record.subsystem || '-'} · ` +
    `since ${clock(record.start_ns)} · severity ${record.severity === null ? '-' : record.severity.toFixed(1)}`));
  box.appendChild(el('div', 'claim', record.summary));
  if (record.hint) box.appendChild(el('div', 'hint', 'hint: ' + record.hint));
  return box;
}
function hostSection(host) {
  const section = el('section', 'host');
  section.appendChild(el('h2', null, host.host));
  section.appendChild(el('div', 'meta', `cluster ${host.cluster} · ${host.channels} channels · ${host.windows} ` +
    `windows · ${host.anomalies} anomalous windows · ${host.open_incidents.length} open incidents`));
  if (host.learning) section.appendChild(el('div', 'learning', host.learning));
  const charts = el('div', 'charts');
  const scores = host.scores;
  if (scores.length) {
    charts.appendChild(chart('anomaly score (solid) against its threshold (dashed)', [
      {values: scores.map(s => s.score), color: '#2b6cb0'},
      {values: scores.map(s => s.threshold), color: '#c0392b', dashed: true}], 360, 90));
    const detectors = Object.keys(scores[scores.length - 1].detectors);
    for (const name of detectors) {
      charts.appendChild(chart(`${name}: score against threshold`, [
        {values: scores.map(s => (s.detectors[name] || {}).score ?? null), color: '#2f855a'},
        {values: scores.map(s => (s.detectors[name] || {}).threshold ?? null), color: '#c0392b', dashed: true}],
        240, 70));
    }
  }
  section.appendChild(charts);
  section.appendChild(el('h3', null, 'Incidents'));
  if (!host.open_incidents.length && !host.recent_incidents.length) section.appendChild(el('div', 'meta', 'none'));
  host.open_incidents.forEach(r => section.appendChild(incident(r, false)));
  host.recent_incidents.forEach(r => section.appendChild(incident(r, true)));
  if (host.latest_anomaly) {
    const a = host.latest_anomaly;
    section.appendChild(el('h3', null, `Latest anomalous window (${clock(a.end_ns)}, ${a.subsystem})`));
    section.appendChild(el('div', 'claim', a.claim));
    if (a.hint) section.appendChild(el('div', 'hint', 'hint: ' + a.hint));
    const table = el('table', 'evidence');
    for (const e of a.evidence) {
      const row = el('tr'); row.appendChild(el('td', null, e.channel)); row.appendChild(el('td', null, e.feature));
      row.appendChild(el('td', null, e.z === null ? '-' : `${e.z.toFixed(1)}σ`)); table.appendChild(row);
    }
    section.appendChild(table);
  }
  if (host.traces.length) {
    section.appendChild(el('h3', null, 'Most implicated channels (last minute)'));
    const traces = el('div', 'charts');
    host.traces.forEach(t => traces.appendChild(chart(`${t.channel}${t.per ? ' ' + t.per : ''} [${t.subsystem}]`,
      [{values: t.values, color: '#6b46c1'}], 300, 70)));
    section.appendChild(traces);
  }
  return section;
}
async function refresh() {
  const status = document.getElementById('status');
  try {
    const response = await fetch('/api/state', {cache: 'no-store'});
    const state = await response.json();
    const main = document.getElementById('hosts');
    main.replaceChildren(...state.hosts.map(hostSection));
    if (!state.hosts.length) main.appendChild(el('div', 'meta', 'waiting for the first frames'));
    status.textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (error) {
    status.textContent = `the run stopped answering (${error})`;
  }
}
refresh(); setInterval(refresh, REFRESH_MS);
"""


def render_live_page() -> str:
    """The page's HTML."""
    script = _SCRIPT.replace("REFRESH_MS", str(REFRESH_MS))
    return ("<!doctype html><html lang=en><head><meta charset=utf-8><title>Reveal — live</title>"
            f"<style>{_STYLE}</style></head><body><header><h1>Reveal — live</h1><span id=status>connecting…</span>"
            f"</header><main id=hosts></main><script>{script}</script></body></html>")
