// SPDX-License-Identifier: Apache-2.0
// The dashboard page: fetches the agent's view models (/api/v1/dashboard/…) and draws them.
// It decides nothing itself; what could not be read is shown as broken, never as "all good".
'use strict';

(function () {
  const kRefreshMs = 5000;
  const kTokenKey = 'cardiac-api-token';
  const state = { target: 'host', range: '1h', overview: null, targetsKey: '' };

  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('data-')) e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }

  function token() {
    return sessionStorage.getItem(kTokenKey) || '';
  }

  // GET or POST on this agent; throws an Error whose message says what failed.
  async function api(path, options) {
    const opts = Object.assign({ headers: {} }, options || {});
    if (token()) opts.headers.Authorization = 'Bearer ' + token();
    let res;
    try {
      res = await fetch(path, opts);
      // index.html preloads the overview without the token; where reads need one (an agent
      // bound beyond loopback) that first answer is 401, so ask again, with it.
      if (res.status === 401 && opts.headers.Authorization && !state.askedAgain) {
        state.askedAgain = true;
        res = await fetch(path, opts);
      }
    } catch (e) {
      throw new Error('the agent did not answer (' + e.message + ')');
    }
    let body = null;
    try { body = await res.json(); } catch (e) { body = null; }
    if (!res.ok) {
      const why = body && body.error ? body.error : res.statusText;
      throw new Error('HTTP ' + res.status + ': ' + why);
    }
    return body;
  }

  // Readings: null is "n/a", never 0.
  function num(v, digits, unit) {
    if (v === null || v === undefined) return 'n/a';
    return Number(v).toFixed(digits) + (unit || '');
  }
  function gib(bytes) {
    return bytes === null || bytes === undefined ? 'n/a' : (bytes / 1073741824).toFixed(1) + ' GiB';
  }
  function rate(bps) {
    if (bps === null || bps === undefined) return 'n/a';
    const mbit = (bps * 8) / 1e6;
    return mbit.toFixed(mbit < 10 ? 2 : 0) + ' Mb/s';
  }
  function shortTime(iso) {
    return iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '';
  }

  function showErrors(list) {
    const box = $('errors');
    box.textContent = '';
    for (const e of list) {
      box.append(el('div', { class: 'error-box', 'data-part': e.part, text: 'Could not read ' + e.part + ': ' + e.error }));
    }
  }

  function renderVerdict(o) {
    const v = $('verdict');
    v.className = 'pill ' + o.class;
    v.textContent = o.verdict;
    $('hostname').textContent = o.hostname || (o.host && o.host.hostname) || '';
    $('updated').textContent = o.taken_at ? 'sampled ' + shortTime(o.taken_at) : 'no sample yet';
  }

  function gpuCard(c) {
    const head = el('div', { class: 'head' },
      el('span', { text: 'GPU ' + c.index }),
      el('span', { class: 'verdict', text: c.health !== 'ok' && c.health !== 'unknown' ? c.health.toUpperCase() : c.verdict }));
    if (c.fenced) head.firstChild.append(el('span', { class: 'tag', text: 'FENCED' }));
    const dl = el('dl', {},
      el('dt', { text: 'util' }), el('dd', { text: num(c.utilization_pct, 0, ' %') }),
      el('dt', { text: 'memory' }), el('dd', { text: gib(c.memory_used_bytes) + ' / ' + gib(c.memory_total_bytes) }),
      el('dt', { text: 'temp' }), el('dd', { text: num(c.temperature_c, 0, ' °C') + (c.temperature_slowdown_c !== null ? ' (slowdown ' + c.temperature_slowdown_c + ')' : '') }),
      el('dt', { text: 'power' }), el('dd', { text: num(c.power_w, 0, ' W') + ' / ' + num(c.power_limit_w, 0, ' W') }));
    if (c.throttle && c.throttle.filter((t) => t !== 'gpu_idle').length) {
      dl.append(el('dt', { text: 'clocks' }), el('dd', { text: c.throttle.join(', ') }));
    }
    const card = el('div', {
      class: 'card ' + c.class, tabIndex: 0, 'data-gpu': c.index, 'data-verdict': c.verdict,
      'data-health': c.health, title: 'Show GPU ' + c.index + "'s charts",
    }, head, el('div', { class: 'name', text: c.name || c.uuid || '' }),
    el('div', { class: 'reason', text: c.reason }), dl);
    const pick = () => { selectTarget(String(c.index)); };
    card.addEventListener('click', pick);
    card.addEventListener('keydown', (e) => { if (e.key === 'Enter') pick(); });
    return card;
  }

  function renderGpus(g) {
    const root = $('gpus');
    root.textContent = '';
    root.classList.toggle('broken', !!g.error);
    if (g.error) root.append(el('div', { class: 'error-box', text: g.error }));
    for (const c of g.cards) root.append(gpuCard(c));
    if (!g.cards.length && !g.error) root.append(el('p', { class: 'empty-note', text: 'This host has no GPU that NVML reports.' }));
    if (g.device_count !== null && g.device_count !== undefined && g.cards.length < g.device_count) {
      root.append(el('div', { class: 'error-box', text: 'NVML reports ' + g.device_count + ' GPUs; ' + g.cards.length + ' were read.' }));
    }
  }

  function renderHost(h) {
    const root = $('host');
    root.textContent = '';
    root.classList.toggle('broken', !!h.error);
    if (h.error) { root.append(el('div', { class: 'error-box', text: h.error })); return; }
    root.className = 'host';
    const memUsed = h.memory_total_bytes !== null && h.memory_available_bytes !== null
      ? h.memory_total_bytes - h.memory_available_bytes : null;
    const dl = el('dl', {},
      el('dt', { text: 'verdict' }), el('dd', { class: h.class, text: h.verdict + ' — ' + h.reason }),
      el('dt', { text: 'kernel' }), el('dd', { text: h.kernel || 'n/a' }),
      el('dt', { text: 'CPU' }), el('dd', { text: num(h.cpu_cores, 0, ' cores') + ', load ' + num(h.load1, 2) }),
      el('dt', { text: 'memory' }), el('dd', { text: gib(memUsed) + ' used of ' + gib(h.memory_total_bytes) }));
    for (const fs of h.filesystems) {
      dl.append(el('dt', { text: 'disk ' + fs.mount_point }), el('dd', { text: num(fs.used_pct, 1, ' % used') + ' of ' + gib(fs.total_bytes) }));
    }
    for (const n of h.nics) {
      const speed = n.speed_mbps ? ' of ' + n.speed_mbps + ' Mb/s link' : ' (link speed unknown)';
      dl.append(el('dt', { text: 'net ' + n.name }),
        el('dd', { text: 'rx ' + rate(n.rx_bytes_per_s) + ', tx ' + rate(n.tx_bytes_per_s) + speed + (n.util_pct !== null ? ' (' + num(n.util_pct, 1, ' %') + ')' : '') }));
    }
    root.append(dl);
  }

  function matcherFor(a) {
    const parts = ['rule=' + a.rule];
    for (const [k, v] of Object.entries(a.labels || {})) parts.push(k + '=' + v);
    return parts.join(',');
  }

  async function act(button, path, body) {
    button.disabled = true;
    try {
      const opts = { method: 'POST' };
      if (body) { opts.headers = { 'Content-Type': 'application/json' }; opts.body = JSON.stringify(body); }
      await api(path, opts);
      await refresh();
    } catch (e) {
      button.disabled = false;
      $('alerts').prepend(el('div', { class: 'error-box', text: 'Not done: ' + e.message }));
    }
  }

  function renderAlerts(a) {
    const root = $('alerts');
    root.textContent = '';
    root.classList.toggle('broken', !!a.error);
    if (a.error) { root.append(el('div', { class: 'error-box', text: 'Alerts could not be read: ' + a.error })); return; }
    if (!a.firing.length) {
      root.append(el('p', { class: 'empty-note', text: 'No alert is firing' + (a.pending ? ' (' + a.pending + ' pending).' : '.') }));
      return;
    }
    const canAct = !!token();
    const rows = a.firing.map((x) => {
      const ack = el('button', { type: 'button', text: 'Ack', disabled: !canAct || !!x.acked, 'data-ack': x.id });
      ack.addEventListener('click', () => act(ack, '/api/v1/alerts/' + x.id + '/ack', { by: 'dashboard' }));
      const sil = el('button', { type: 'button', text: 'Silence 2 h', disabled: !canAct || x.silenced, 'data-silence': x.id });
      sil.addEventListener('click', () => act(sil, '/api/v1/silences', { matcher: matcherFor(x), duration: '2h', by: 'dashboard', comment: 'from the dashboard' }));
      const status = x.silenced ? 'silenced' : x.acked ? 'acked by ' + x.acked_by : 'open';
      return el('tr', { 'data-alert': x.id, 'data-status': x.acked ? 'acked' : 'open' },
        el('td', { class: x.severity === 'critical' ? 'fail' : 'warn', text: x.severity }),
        el('td', { text: x.rule }),
        el('td', { text: x.description }),
        el('td', { text: shortTime(x.fired) }),
        el('td', { class: 'alert-status', text: status }),
        el('td', {}, ack, ' ', sil));
    });
    root.append(el('table', {}, el('thead', {}, el('tr', {}, ...['severity', 'rule', 'what', 'since', 'state', ''].map((t) => el('th', { text: t })))), el('tbody', {}, ...rows)));
    if (a.pending) root.append(el('p', { class: 'muted', text: a.pending + ' more pending (not yet held for their duration).' }));
  }

  function renderTimeline(items) {
    const root = $('timeline');
    root.textContent = '';
    if (!items.length) { root.append(el('li', { class: 'empty-note', text: 'No event or incident in the last day.' })); return; }
    for (const t of items) {
      let what = t.type === 'incident' ? 'incident: GPU ' + t.gpu + ' ' + t.kind + (t.open ? ' (open)' : ' (ended)') : t.kind + (t.xid !== undefined ? ' Xid ' + t.xid : '') + (t.gpu !== undefined ? ' GPU ' + t.gpu : '');
      root.append(el('li', { class: t.type },
        el('time', { dateTime: t.time, text: shortTime(t.time) }),
        el('span', { text: t.type }),
        el('span', { text: what + (t.message ? ' — ' + t.message : '') })));
    }
  }

  function renderQueue(q) {
    const section = $('queue-section');
    const root = $('queue');
    if (q === null) { section.hidden = true; return; }
    section.hidden = false;
    root.textContent = '';
    root.classList.toggle('broken', !!q.error);
    if (q.error) { root.append(el('div', { class: 'error-box', text: 'The queue could not be read: ' + q.error })); return; }
    const counts = Object.entries(q.counts || {}).filter(([, n]) => n > 0).map(([s, n]) => n + ' ' + s).join(', ');
    root.append(el('p', {}, 'Policy ' + q.policy + '. ' + (counts || 'No job.') + (q.blocked ? ' Blocked: ' + q.blocked : '')));
    const jobs = (q.jobs || []).filter((j) => j.state === 'pending' || j.state === 'running' || j.state === 'held');
    if (jobs.length) {
      const rows = jobs.map((j) => el('tr', { 'data-job': j.id },
        el('td', { text: j.id }), el('td', { text: j.user }), el('td', { text: j.state }),
        el('td', { text: j.state === 'running' ? (j.gpu_indices || []).join(',') : String(j.gpus) }),
        el('td', { text: j.name || (j.argv || []).join(' ') }),
        el('td', { text: j.state === 'running' ? 'since ' + shortTime(j.started) : (j.why || '') })));
      root.append(el('table', {}, el('thead', {}, el('tr', {}, ...['job', 'user', 'state', 'GPUs', 'command', 'why / since'].map((t) => el('th', { text: t })))), el('tbody', {}, ...rows)));
    }
    const fences = q.fences || [];
    root.append(el('h3', { text: 'Fences' }));
    if (!fences.length) root.append(el('p', { class: 'empty-note', text: 'No GPU is fenced.' }));
    for (const f of fences) {
      root.append(el('p', { 'data-fence': f.gpu }, 'GPU ' + f.gpu + ' fenced since ' + shortTime(f.since) + ' by ' + f.who + ': ' + f.reason));
    }
  }

  function updateTargets(o) {
    const cards = o.gpus.cards || [];
    const key = cards.map((c) => c.index).join(',');
    if (key === state.targetsKey) return;
    state.targetsKey = key;
    const sel = $('target');
    sel.textContent = '';
    sel.append(el('option', { value: 'host', text: 'host' }));
    for (const c of cards) sel.append(el('option', { value: String(c.index), text: 'GPU ' + c.index }));
    sel.value = state.target;
  }

  async function refresh() {
    try {
      const o = await api('/api/v1/dashboard/overview');
      state.overview = o;
      document.body.classList.remove('stale');
      renderVerdict(o);
      showErrors(o.errors || []);
      renderGpus(o.gpus);
      renderHost(o.host);
      renderAlerts(o.alerts);
      renderTimeline(o.timeline || []);
      renderQueue(o.queue);
      updateTargets(o);
      // When the first overview is on the page (bench/dashboard_load.js reads it).
      if (!performance.getEntriesByName('cardiac-overview-drawn').length) performance.mark('cardiac-overview-drawn');
      // fleet.js offers its tab when this agent has [fleet] prometheus.
      window.cardiacOverview = o;
      window.dispatchEvent(new CustomEvent('cardiac-overview', { detail: o }));
    } catch (e) {
      // Keep the last picture but say loudly that it is old: never a silent "all good".
      showErrors([{ part: 'the overview', error: e.message }]);
      const v = $('verdict');
      v.className = 'pill unknown';
      v.textContent = 'NO DATA';
      for (const id of ['gpus', 'host', 'alerts']) $(id).classList.add('broken');
    }
  }

  let chartSeq = 0;
  async function loadChart() {
    const seq = ++chartSeq;
    const note = $('chart-note');
    const errs = $('chart-errors');
    const root = $('charts');
    note.textContent = 'loading…';
    try {
      const gpu = state.target === 'host' ? 'host' : state.target;
      const c = await api('/api/v1/dashboard/chart?gpu=' + encodeURIComponent(gpu) + '&range=' + state.range);
      if (seq !== chartSeq) return;
      errs.textContent = '';
      for (const e of c.errors) errs.append(el('div', { class: 'error-box', text: e.metric + ': ' + e.error }));
      root.classList.remove('broken');
      const drawn = window.cardiacCharts.render(root, c);
      root.dataset.range = c.range;
      root.dataset.target = c.target;
      root.dataset.points = String(drawn);
      note.textContent = c.target + ', ' + c.range + ' in ' + c.step_s + ' s steps' + (c.throttle.length ? ', throttled periods shaded' : '');
    } catch (e) {
      if (seq !== chartSeq) return;
      window.cardiacCharts.destroyAll();
      root.textContent = '';
      root.classList.add('broken');
      root.dataset.points = '0';
      errs.textContent = '';
      errs.append(el('div', { class: 'error-box', text: 'Charts could not be read: ' + e.message }));
      note.textContent = '';
    }
  }

  function selectTarget(t) {
    state.target = t;
    $('target').value = t;
    loadChart();
    $('charts-section').scrollIntoView({ behavior: 'smooth', block: 'start' });
  }

  function tokenUi() {
    const has = !!token();
    $('token-state').textContent = has
      ? 'API token set for this tab: alerts can be acknowledged and silenced.'
      : 'No API token set: alerts can be read, not acknowledged or silenced. Set one…';
    $('token-forget').disabled = !has;
  }

  function init() {
    $('token-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const v = $('token-input').value.trim();
      if (v) sessionStorage.setItem(kTokenKey, v);
      $('token-input').value = '';
      tokenUi();
      refresh();
    });
    $('token-forget').addEventListener('click', () => {
      sessionStorage.removeItem(kTokenKey);
      tokenUi();
      refresh();
    });
    $('target').addEventListener('change', (e) => { state.target = e.target.value; loadChart(); });
    for (const b of document.querySelectorAll('#ranges button')) {
      b.addEventListener('click', () => {
        state.range = b.dataset.range;
        for (const o of document.querySelectorAll('#ranges button')) o.setAttribute('aria-pressed', String(o === b));
        loadChart();
      });
    }
    tokenUi();
    // Charts need uPlot and charts.js, which run after this file (all deferred): they have
    // when DOMContentLoaded fires.
    const scriptsReady = new Promise((resolve) => {
      if (window.cardiacCharts) resolve();
      else document.addEventListener('DOMContentLoaded', resolve);
    });
    Promise.all([refresh(), scriptsReady]).then(loadChart);
    setInterval(refresh, kRefreshMs);
    // The charts' colours are read from the theme when drawn: draw again when it changes.
    window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', loadChart);
    // Chart refresh is slower: a range of hours changes little in 5 s.
    setInterval(loadChart, 6 * kRefreshMs);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
