// The live page's script: the run's state every REFRESH_MS (scores, learning, incidents, evidence), and the stored
// frames through the run's read-only query service for the chosen host and time range (overview, searched channels,
// implicated channels), drawn with clock-time axes, units, incident markers and a scale that a spike cannot flatten.
// Every text from the data is set as text, never as markup.
const SVG = 'http://www.w3.org/2000/svg';
const RANGES = [['5 min', 300], ['1 h', 3600], ['all', 0]];
const OVERVIEW = [
  ['CPU (ticks/s)', [/^cpu\.user\.all$/, /^cpu\.system\.all$/, /^cpu\.iowait\.all$/]],
  ['Memory', [/^mem\.MemAvailable$/, /^mem\.Cached$/]],
  ['Disk (sectors/s)', [/^disk\.sectors_read\./, /^disk\.sectors_written\./]],
  ['Network', [/^net\.rx_bytes\.(?!lo$|ifb)/, /^net\.tx_bytes\.(?!lo$|ifb)/]],
];
const COLORS = ['#2b6cb0', '#c05621', '#2f855a', '#6b46c1', '#b83280', '#718096'];
const MAX_LISTED = 40, MAX_CHOSEN = 8, POINTS = 240;
const view = {range: 300, host: null, chosen: [], search: '', subsystem: '', catalog: null, stored: null,
              lastStored: 0};

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}
function svgEl(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}
function clock(ms) { return new Date(ms).toLocaleTimeString([], {hour12: false}); }
function number(v) { return typeof v === 'number' && isFinite(v) ? v : null; }
function decode(v) { return v && typeof v === 'object' && '$float' in v ? null : v; }
function si(v, unit) {
  if (v === null) return '-';
  const a = Math.abs(v), steps = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
  const [d, p] = steps.find(([d]) => a >= d) || [1, ''];
  return `${(v / d).toPrecision(3)}${p}${unit ? ' ' + unit : ''}`;
}
function unitOf(channel) {
  const unit = channel.unit === 'bytes' ? 'B' : channel.unit;
  return channel.kind === 'counter' || channel.kind === 'event' ? `${unit || ''}/s` : unit || '';
}

async function query(sql, parameters) {
  const response = await fetch('/api/query', {method: 'POST', cache: 'no-store',
    headers: {'Content-Type': 'application/json'}, body: JSON.stringify({sql, parameters})});
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body.rows;
}

// A chart: series [{label, points: [[ms, value]], color}], markers [{from, to, open}], on [t0, t1].
function chart(caption, unit, series, markers, t0, t1, width, height) {
  const figure = el('figure', 'chart');
  const svg = svgEl('svg', {width, height, role: 'img'});
  const left = 84, bottom = 18, top = 6, plotW = width - left - 6, plotH = height - bottom - top;
  const values = series.flatMap(s => s.points.map(p => p[1])).filter(v => v !== null).sort((a, b) => a - b);
  let low = values.length ? values[0] : 0, high = values.length ? values[values.length - 1] : 1, clipped = false;
  if (values.length > 20) {
    const p99 = values[Math.floor(values.length * 0.99)], p1 = values[Math.floor(values.length * 0.01)];
    if (high > p99 + 3 * Math.max(p99 - p1, Math.abs(p99) * 1e-3)) { high = p99 + 0.15 * (p99 - p1 || 1); clipped = true; }
  }
  if (high === low) { high = low + (Math.abs(low) || 1); }
  const x = t => left + (t - t0) / Math.max(t1 - t0, 1) * plotW;
  const y = v => top + plotH - (Math.min(v, high) - low) / (high - low) * plotH;
  for (const m of markers) {
    const from = Math.max(m.from, t0), to = Math.min(m.open ? t1 : m.to, t1);
    if (to < t0 || from > t1) continue;
    svg.appendChild(svgEl('rect', {x: x(from), y: top, width: Math.max(x(to) - x(from), 2), height: plotH,
                                   fill: m.open ? '#c0392b' : '#8a94a6', 'fill-opacity': 0.18, class: 'marker'}));
  }
  svg.appendChild(svgEl('line', {x1: left, y1: top + plotH, x2: left + plotW, y2: top + plotH, stroke: '#a0aec0'}));
  for (let i = 0; i <= 2; i++) {
    const t = t0 + (t1 - t0) * i / 2, label = svgEl('text', {x: x(t), y: height - 4, 'font-size': 10,
      'text-anchor': i === 0 ? 'start' : i === 2 ? 'end' : 'middle', fill: '#4a5568'});
    label.textContent = clock(t); svg.appendChild(label);
  }
  for (const [v, dy] of [[high, 10], [low, 0]]) {
    const label = svgEl('text', {x: left - 4, y: y(v) + dy - 2, 'font-size': 10, 'text-anchor': 'end',
                                 fill: '#4a5568'});
    label.textContent = si(v, unit); svg.appendChild(label);
  }
  series.forEach((s, index) => {
    const shown = s.points.filter(p => p[1] !== null && p[0] >= t0 && p[0] <= t1);
    if (shown.length > 1) {
      svg.appendChild(svgEl('polyline', {points: shown.map(p => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(' '),
        fill: 'none', stroke: s.color || COLORS[index % COLORS.length], 'stroke-width': 1.4,
        ...(s.dashed ? {'stroke-dasharray': '4 3'} : {})}));
    }
    for (const p of shown.filter(p => p[1] > high)) {
      svg.appendChild(svgEl('path', {d: `M${x(p[0]) - 3},${top + 5} l3,-5 l3,5 z`, fill: '#c0392b', class: 'clip'}));
    }
  });
  figure.appendChild(svg);
  const peak = values.length ? values[values.length - 1] : null;
  figure.appendChild(el('figcaption', null, caption + (clipped ? ` · peak ${si(peak, unit)} above the scale (▲)` : '')));
  const legend = el('div', 'legend');
  series.forEach((s, index) => {
    const key = el('span', 'key', s.label); key.style.borderColor = s.color || COLORS[index % COLORS.length];
    legend.appendChild(key);
  });
  figure.appendChild(legend);
  return figure;
}

function incident(record, closed) {
  const box = el('div', closed ? 'incident closed' : 'incident');
  box.appendChild(el('div', null, `${closed ? 'closed' : record.state} · ${record.kind}/${record.subsystem || '-'} · ` +
    `since ${clock(record.start_ns / 1e6)} · severity ${record.severity === null ? '-' : record.severity.toFixed(1)}`));
  box.appendChild(el('div', 'claim', record.summary));
  if (record.hint) box.appendChild(el('div', 'hint', 'hint: ' + record.hint));
  return box;
}

function liveSection(host) {
  const section = el('section', 'host live');
  section.appendChild(el('h2', null, host.host));
  section.appendChild(el('div', 'meta', `cluster ${host.cluster} · ${host.channels} channels · ${host.windows} ` +
    `windows · ${host.anomalies} anomalous windows · ${host.open_incidents.length} open incidents`));
  if (host.learning) section.appendChild(el('div', 'learning', host.learning));
  if (host.sureness) section.appendChild(el('div', 'sureness', host.sureness));
  const scores = host.scores;
  if (scores.length) {
    const t1 = scores[scores.length - 1].end_ns / 1e6, t0 = scores[0].end_ns / 1e6;
    section.appendChild(chart('anomaly score (solid) against its threshold (dashed)', '', [
      {label: 'score', points: scores.map(s => [s.end_ns / 1e6, number(s.score)]), color: '#2b6cb0'},
      {label: 'threshold', points: scores.map(s => [s.end_ns / 1e6, number(s.threshold)]), color: '#c0392b',
       dashed: true}],
      [], t0, t1, 420, 110));
  }
  section.appendChild(el('h3', null, 'Incidents'));
  if (!host.open_incidents.length && !host.recent_incidents.length) section.appendChild(el('div', 'meta', 'none'));
  host.open_incidents.forEach(r => section.appendChild(incident(r, false)));
  host.recent_incidents.forEach(r => section.appendChild(incident(r, true)));
  if (host.latest_anomaly) {
    const a = host.latest_anomaly;
    section.appendChild(el('h3', null, `Latest anomalous window (${clock(a.end_ns / 1e6)}, ${a.subsystem})`));
    section.appendChild(el('div', 'claim', a.claim));
    if (a.hint) section.appendChild(el('div', 'hint', 'hint: ' + a.hint));
    const table = el('table', 'evidence');
    for (const e of a.evidence) {
      const row = el('tr'); row.appendChild(el('td', null, e.channel)); row.appendChild(el('td', null, e.feature));
      row.appendChild(el('td', null, e.z === null ? '-' : `${e.z.toFixed(1)}σ`)); table.appendChild(row);
    }
    section.appendChild(table);
  }
  return section;
}

async function loadCatalog(host) {
  const rows = await query('SELECT version, names, subsystems, kinds, units FROM catalogs ' +
    'WHERE host = {h:String} ORDER BY seen_at DESC LIMIT 1', {h: host});
  if (!rows.length) return null;
  const [version, names, subsystems, kinds, units] = rows[0];
  return {version, channels: names.map((name, i) => ({name, index: i + 1, subsystem: subsystems[i], kind: kinds[i],
                                                       unit: units[i]}))};
}

function overviewChannels(catalog) {
  return OVERVIEW.map(([title, patterns]) => [title,
    patterns.map(p => catalog.channels.find(c => p.test(c.name))).filter(Boolean)]);
}

async function loadStored(host, catalog, channels) {
  const now = Date.now(), since = view.range ? now - view.range * 1000 : 0;
  const bounds = await query('SELECT count(), toUnixTimestamp64Milli(min(ts)), toUnixTimestamp64Milli(max(ts)) ' +
    'FROM frames WHERE host = {h:String} AND ts >= fromUnixTimestamp64Milli({since:Int64})', {h: host, since});
  const [count, first, last] = bounds[0].map(decode);
  if (!count) return {t0: since, t1: now, series: {}, markers: []};
  const t0 = Math.max(since, first), t1 = view.range ? Math.max(now, last) : last;
  const bucket = Math.max(100, Math.round((t1 - t0) / POINTS));
  const rows = await query('SELECT intDiv(toUnixTimestamp64Milli(ts), {b:UInt64}) * {b:UInt64} AS t, ' +
    'maxForEach(arrayMap(i -> values[i], {idx:Array(UInt32)})) FROM frames WHERE host = {h:String} ' +
    'AND catalog_version = {v:UInt32} AND ts >= fromUnixTimestamp64Milli({since:Int64}) GROUP BY t ORDER BY t',
    {h: host, v: catalog.version, since: t0, b: bucket, idx: channels.map(c => c.index)});
  const series = {};
  channels.forEach((c, j) => {
    const raw = rows.map(r => [r[0] + bucket / 2, number(decode(r[1][j]))]);
    series[c.name] = c.kind === 'counter' || c.kind === 'event'
      ? raw.slice(1).map((p, i) => {
          const before = raw[i], rate = p[1] !== null && before[1] !== null ? (p[1] - before[1]) / ((p[0] - before[0]) / 1000) : null;
          return [p[0], rate !== null && rate >= 0 ? rate : null];
        })
      : raw;
  });
  const alerts = await query('SELECT alert_id, toUnixTimestamp64Milli(min(start)), toUnixTimestamp64Milli(max(end)), ' +
    'max(state = \'closed\') FROM alerts FINAL WHERE host = {h:String} AND end >= fromUnixTimestamp64Milli({since:Int64}) ' +
    'GROUP BY alert_id', {h: host, since: t0});
  return {t0, t1, series, markers: alerts.map(a => ({from: a[1], to: a[2], open: !a[3]}))};
}

function explorer(catalog, live) {
  const box = el('section', 'host explorer');
  box.appendChild(el('h2', null, 'Channels'));
  const search = el('input'); search.type = 'search'; search.placeholder = 'search channels by name';
  search.value = view.search; search.id = 'search';
  search.addEventListener('input', () => { view.search = search.value; drawList(); });
  const subsystem = el('select'); subsystem.id = 'subsystem';
  ['', ...new Set(catalog.channels.map(c => c.subsystem))].forEach(s => {
    const option = el('option', null, s || 'every subsystem'); option.value = s; subsystem.appendChild(option);
  });
  subsystem.value = view.subsystem;
  subsystem.addEventListener('change', () => { view.subsystem = subsystem.value; drawList(); });
  const list = el('ul', 'channels');
  function drawList() {
    const text = view.search.toLowerCase();
    const found = catalog.channels.filter(c => (!text || c.name.toLowerCase().includes(text)) &&
                                               (!view.subsystem || c.subsystem === view.subsystem));
    list.replaceChildren(...found.slice(0, MAX_LISTED).map(c => {
      const item = el('li', view.chosen.includes(c.name) ? 'chosen' : '', `${c.name} · ${c.subsystem} · ${c.kind}` +
                                                                          (c.unit ? ` · ${c.unit}` : ''));
      item.addEventListener('click', () => {
        view.chosen = view.chosen.includes(c.name) ? view.chosen.filter(n => n !== c.name)
                                                   : [c.name, ...view.chosen].slice(0, MAX_CHOSEN);
        refreshStored(true);
      });
      return item;
    }));
    if (found.length > MAX_LISTED) list.appendChild(el('li', 'meta', `and ${found.length - MAX_LISTED} more`));
  }
  drawList();
  const controls = el('div', 'controls'); controls.appendChild(search); controls.appendChild(subsystem);
  box.appendChild(controls); box.appendChild(list);
  return box;
}

async function refreshStored(force) {
  const now = Date.now(), every = Math.max(5000, view.range * 1000 / 120 || 60000);
  if (!view.host || (!force && now - view.lastStored < every)) return;
  view.lastStored = now;
  const status = document.getElementById('stored-status');
  try {
    view.catalog = await loadCatalog(view.host);
    const area = document.getElementById('stored');
    if (!view.catalog) { area.replaceChildren(el('div', 'meta', 'no catalog stored for this host yet')); return; }
    const overview = overviewChannels(view.catalog);
    const implicated = (view.live && view.live.traces || []).map(t => t.channel);
    const traced = [...new Set([...view.chosen, ...implicated])]
      .map(n => view.catalog.channels.find(c => c.name === n)).filter(Boolean);
    const wanted = [...new Set([...overview.flatMap(([, cs]) => cs), ...traced])];
    const stored = await loadStored(view.host, view.catalog, wanted);
    const overviewBox = el('div', 'charts overview');
    for (const [title, channels] of overview) {
      if (!channels.length) continue;
      overviewBox.appendChild(chart(title, unitOf(channels[0]), channels.map(c => ({label: c.name,
        points: stored.series[c.name] || []})), stored.markers, stored.t0, stored.t1, 300, 120));
    }
    const tracesBox = el('div', 'charts traces');
    for (const c of traced) {
      tracesBox.appendChild(chart(`${c.name} [${c.subsystem}]` + (implicated.includes(c.name) ? ' · implicated' : ''),
        unitOf(c), [{label: c.name, points: stored.series[c.name] || []}], stored.markers, stored.t0, stored.t1,
        300, 110));
    }
    area.replaceChildren(el('h2', null, `${view.host}: overview`), overviewBox,
                         el('h2', null, 'Traces (choose channels below; incidents shaded)'), tracesBox,
                         explorer(view.catalog, view.live));
    status.textContent = `stored data to ${clock(stored.t1)}`;
  } catch (error) {
    status.textContent = `stored data unavailable (${error.message || error})`;
  }
}

function rangeButtons() {
  const box = document.getElementById('ranges');
  box.replaceChildren(...RANGES.map(([label, seconds]) => {
    const button = el('button', view.range === seconds ? 'on' : '', label);
    button.addEventListener('click', () => { view.range = seconds; rangeButtons(); refreshStored(true); });
    return button;
  }));
}

async function refreshFleet(liveHosts) {
  if (view.stored === null || Date.now() - (view.storedAt || 0) > 30000) {
    try {
      view.stored = (await query('SELECT host, any(cluster) FROM catalogs GROUP BY host ORDER BY host', {}))
        .map(r => ({host: r[0], cluster: r[1]}));
      view.storedAt = Date.now();
    } catch (error) { view.stored = []; }
  }
  const live = new Map(liveHosts.map(h => [h.host, h]));
  const hosts = [...new Set([...liveHosts.map(h => h.host), ...view.stored.map(h => h.host)])].sort();
  if (!view.host && hosts.length) view.host = hosts[0];
  const list = document.getElementById('fleet');
  list.replaceChildren(...hosts.map(name => {
    const h = live.get(name), open = h ? h.open_incidents.length : 0;
    const item = el('li', (name === view.host ? 'on ' : '') + (open ? 'alerting' : ''),
      `${name}${h ? ` · ${h.windows} windows` : ' · stored'}${open ? ` · ${open} open` : ''}`);
    item.addEventListener('click', () => { view.host = name; view.chosen = []; refreshAll(true); });
    return item;
  }));
}

async function refreshAll(force) {
  const status = document.getElementById('status');
  try {
    const response = await fetch('/api/state', {cache: 'no-store'});
    const state = await response.json();
    await refreshFleet(state.hosts);
    view.live = state.hosts.find(h => h.host === view.host) || null;
    const main = document.getElementById('hosts');
    main.replaceChildren(...(view.live ? [liveSection(view.live)] : []));
    if (!state.hosts.length && !(view.stored || []).length) main.appendChild(el('div', 'meta', 'waiting for the first frames'));
    status.textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (error) {
    status.textContent = `the run stopped answering (${error})`;
  }
  await refreshStored(force);
}
// A link can carry the view: #host=h1&range=3600&search=cpu&subsystem=cpu&channels=cpu.user.all,mem.MemFree
function fromLink() {
  const link = new URLSearchParams(location.hash.slice(1));
  if (link.has('host')) view.host = link.get('host');
  if (link.has('range') && RANGES.some(([, s]) => String(s) === link.get('range'))) view.range = Number(link.get('range'));
  view.search = link.get('search') || '';
  view.subsystem = link.get('subsystem') || '';
  view.chosen = (link.get('channels') || '').split(',').filter(Boolean).slice(0, MAX_CHOSEN);
}
fromLink(); rangeButtons(); refreshAll(true); setInterval(() => refreshAll(false), REFRESH_MS);
