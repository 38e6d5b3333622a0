// SPDX-License-Identifier: Apache-2.0
// The Fleet tab: every node of the Prometheus in the agent's [fleet] table, as the agent reads
// it (GET /api/v1/fleet, cardiac.fleet/v1). The tab shows when the overview says the agent has
// [fleet] (`fleet: true`); without it the endpoint answers 501 and the page never asks. A read
// that fails is shown as broken with its reason, never as an empty fleet.
'use strict';

(function () {
  const kRefreshMs = 5000;
  const kTokenKey = 'cardiac-api-token';
  const state = { offered: false, shown: false, expanded: new Set(), last: null, timer: null };

  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('data-') || k.startsWith('aria-')) e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }

  // {status, body}: the status decides between the view, "no [fleet]" and "broken".
  async function read() {
    const headers = {};
    const t = sessionStorage.getItem(kTokenKey);
    if (t) headers.Authorization = 'Bearer ' + t;
    let res;
    try {
      res = await fetch('/api/v1/fleet', { headers });
    } catch (e) {
      return { status: 0, body: { error: 'the agent did not answer (' + e.message + ')' } };
    }
    let body = null;
    try { body = await res.json(); } catch (e) { body = null; }
    return { status: res.status, body: body || { error: res.statusText } };
  }

  const label = (v) => (v || 'unknown').toUpperCase();
  const opt = (v, f) => (v === null || v === undefined ? 'n/a' : f(v));
  const gib = (b) => (b / 1073741824).toFixed(1);

  function xidText(g) {
    const parts = Object.entries(g.xids || {}).filter(([, n]) => n > 0).map(([c, n]) => c + '×' + n);
    if (!parts.length && g.last_xid) return 'last ' + g.last_xid;
    return parts.join(' ') || '–';
  }

  function alertItem(a) {
    return el('li', { class: a.severity === 'critical' ? 'fail' : a.severity === 'warning' ? 'warn' : '' },
      el('strong', { text: a.name }), ' [' + (a.severity || 'none') + ']',
      a.gpu !== null && a.gpu !== undefined ? ' GPU ' + a.gpu : '', ': ' + (a.summary || ''));
  }

  function gpuTable(n) {
    const table = el('table', { class: 'fleet-gpus' },
      el('thead', {}, el('tr', {}, ...['GPU', 'verdict', 'util', 'memory', 'temp', 'power', 'Xids', 'reason']
        .map((h) => el('th', { text: h })))));
    const body = el('tbody');
    for (const g of n.gpus) {
      const mem = g.memory_used_bytes === null ? 'n/a'
        : gib(g.memory_used_bytes) + (g.memory_total_bytes !== null ? ' / ' + gib(g.memory_total_bytes) : '') + ' GiB';
      body.append(el('tr', { 'data-gpu': g.index, 'data-verdict': g.verdict },
        el('td', { text: String(g.index) }),
        el('td', { class: g.verdict, text: label(g.verdict) }),
        el('td', { text: opt(g.utilization, (v) => (v * 100).toFixed(0) + ' %') }),
        el('td', { text: mem }),
        el('td', { text: opt(g.temperature_celsius, (v) => v.toFixed(0) + ' °C') }),
        el('td', { text: opt(g.power_watts, (v) => v.toFixed(0) + ' W') }),
        el('td', { text: xidText(g) }),
        el('td', { text: g.reason || (g.answering ? '' : 'not answering NVML') })));
    }
    table.append(body);
    return table;
  }

  function nodeCard(n) {
    const open = state.expanded.has(n.instance);
    const xids = n.gpus.reduce((s, g) => s + Object.values(g.xids || {}).reduce((a, b) => a + b, 0), 0);
    const card = el('div', {
      class: 'card node ' + n.verdict, tabIndex: 0, 'data-instance': n.instance,
      'data-verdict': n.verdict, 'aria-expanded': String(open),
      title: (open ? 'Fold ' : 'Show ') + (n.hostname || n.instance) + "'s GPUs and alerts",
    },
    el('div', { class: 'head' }, el('span', { text: n.hostname || n.instance }),
      el('span', { class: 'verdict', text: label(n.verdict) })),
    el('div', { class: 'name', text: n.instance }),
    el('div', { class: 'reason', text: n.reason || (n.verdict === 'ok' ? 'OK' : '') }),
    el('dl', {},
      el('dt', { text: 'GPUs' }), el('dd', { text: n.scraped ? String(n.gpus.length) : 'n/a' }),
      el('dt', { text: 'alerts' }), el('dd', { text: String(n.alerts.length) }),
      el('dt', { text: 'Xids' }), el('dd', { text: n.scraped ? String(xids) : 'n/a' })));
    if (open) {
      const more = el('div', { class: 'node-detail' });
      if (!n.scraped) more.append(el('p', { class: 'warn', text: 'Not scraped: ' + (n.scrape_error || 'no reason given') }));
      else if (n.gpus.length) more.append(gpuTable(n));
      else more.append(el('p', { class: 'empty-note', text: 'No GPU series from this target.' }));
      if (n.alerts.length) more.append(el('ul', { class: 'fleet-alerts' }, ...n.alerts.map(alertItem)));
      // Clicks inside the detail (selecting text) do not fold the card.
      more.addEventListener('click', (e) => e.stopPropagation());
      card.append(more);
    }
    const toggle = () => {
      if (state.expanded.has(n.instance)) state.expanded.delete(n.instance);
      else state.expanded.add(n.instance);
      if (state.last) render(state.last, null);
      const again = document.querySelector('#fleet-nodes [data-instance="' + CSS.escape(n.instance) + '"]');
      if (again) again.focus();
    };
    card.addEventListener('click', toggle);
    card.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); toggle(); } });
    return card;
  }

  // `view`: the newest view read (maybe older than `error`); `error`: why the newest read failed.
  function render(view, error) {
    const errors = $('fleet-errors');
    errors.textContent = '';
    const nodes = $('fleet-nodes');
    nodes.classList.toggle('broken', !!error);
    if (error) errors.append(el('div', { class: 'error-box', text: 'Could not read the fleet: ' + error + (view ? ' (showing the view read at ' + view.read_at + ')' : '') }));
    const pill = $('fleet-verdict');
    if (!view) {
      pill.className = 'pill unknown';
      pill.textContent = error ? 'UNKNOWN' : 'loading…';
      $('fleet-summary').textContent = '';
      nodes.textContent = '';
      $('fleet-alerts-section').hidden = true;
      return;
    }
    pill.className = 'pill ' + view.verdict;
    pill.textContent = label(view.verdict);
    const c = view.nodes_by_verdict || {};
    $('fleet-summary').textContent = view.nodes.length + ' nodes (' + (c.ok || 0) + ' OK, ' + (c.warn || 0) +
      ' WARN, ' + (c.fail || 0) + ' FAIL, ' + (c.unknown || 0) + ' UNKNOWN), ' + view.gpus + ' GPUs; job "' +
      view.job + '" of ' + view.prometheus + '; read ' + (view.read_at || '');
    nodes.textContent = '';
    for (const n of view.nodes) nodes.append(nodeCard(n));
    if (!view.nodes.length) nodes.append(el('div', { class: 'error-box', text: 'The job "' + view.job + '" lists no target: no node was looked at.' }));
    const fa = view.fleet_alerts || [];
    $('fleet-alerts-section').hidden = fa.length === 0;
    const list = $('fleet-alerts');
    list.textContent = '';
    for (const a of fa) list.append(alertItem(a));
  }

  async function refresh() {
    const r = await read();
    if (r.status === 501 || r.status === 404) {
      // [fleet] gone since the overview said otherwise (a restarted agent): no tab.
      offer(false);
      return;
    }
    if (r.status === 200 && r.body && r.body.schema === 'cardiac.fleet/v1') {
      state.last = r.body;
      render(state.last, null);
    } else {
      render(state.last, r.body.error || ('HTTP ' + r.status));
    }
  }

  function offer(yes) {
    if (yes === state.offered) return;
    state.offered = yes;
    $('tabs').hidden = !yes;
    if (yes && location.hash === '#fleet') show('fleet');
    if (!yes && state.shown) show('host');
  }

  function show(tab) {
    state.shown = tab === 'fleet';
    $('host-page').hidden = state.shown;
    $('fleet-page').hidden = !state.shown;
    for (const b of document.querySelectorAll('#tabs button')) b.setAttribute('aria-pressed', String(b.dataset.tab === tab));
    if (location.hash !== (state.shown ? '#fleet' : '')) history.replaceState(null, '', state.shown ? '#fleet' : location.pathname);
    clearInterval(state.timer);
    if (state.shown) {
      refresh();
      state.timer = setInterval(refresh, kRefreshMs);
    }
  }

  function init() {
    for (const b of document.querySelectorAll('#tabs button')) b.addEventListener('click', () => show(b.dataset.tab));
  }
  // Listened for at once: the first overview may arrive before this file runs (app.js keeps it
  // in window.cardiacOverview too).
  window.addEventListener('cardiac-overview', (e) => offer(!!(e.detail && e.detail.fleet)));
  if (window.cardiacOverview) offer(!!window.cardiacOverview.fleet);

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
