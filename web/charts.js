// SPDX-License-Identifier: Apache-2.0
// Draws one cardiac.dashboard.chart/v1 answer with uPlot: a panel per chart, its limits as
// dashed lines, throttle periods as shaded bands. Everything shown is computed by the agent.
'use strict';

(function () {
  const plots = [];

  function cssVar(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  }

  // Shades [from, to) periods behind the series (unix seconds on the x scale).
  function throttleBands(periods) {
    return (u) => {
      if (!periods.length) return;
      const ctx = u.ctx;
      ctx.save();
      ctx.fillStyle = cssVar('--throttle');
      for (const p of periods) {
        const x0 = u.valToPos(p.from, 'x', true);
        const x1 = u.valToPos(p.to, 'x', true);
        ctx.fillRect(x0, u.bbox.top, Math.max(1, x1 - x0), u.bbox.height);
      }
      ctx.restore();
    };
  }

  function panelOptions(panel, width, throttle) {
    const colors = [cssVar('--s1'), cssVar('--s2'), cssVar('--muted')];
    const unit = panel.unit ? ' ' + panel.unit : '';
    const fmt = (u, v) => (v == null ? 'n/a' : (Math.round(v * 10) / 10) + unit);
    const series = [{}];
    panel.series.forEach((s, i) => {
      // A value with no neighbour draws no line: give such series visible points.
      const isolated = s.values.some((v, k) => v !== null &&
        (k === 0 || s.values[k - 1] === null) && (k === s.values.length - 1 || s.values[k + 1] === null));
      series.push({ label: s.label, stroke: colors[i % colors.length], width: 1.5,
        value: fmt, spanGaps: false,
        points: isolated ? { show: true, size: 5, fill: colors[i % colors.length] } : {} });
    });
    panel.limits.forEach((l) => {
      series.push({ label: l.label, stroke: cssVar('--limit'), width: 1, dash: [6, 4],
        value: fmt, points: { show: false } });
    });
    const axis = { stroke: cssVar('--muted'), grid: { stroke: cssVar('--border'), width: 1 },
      ticks: { stroke: cssVar('--border'), width: 1 } };
    return {
      width: width, height: 190, series: series,
      // Percentages on their whole scale, so 5 % does not look like a full chart.
      scales: panel.unit === '%' ? { x: { time: true }, y: { range: [0, 100] } } : { x: { time: true } },
      axes: [Object.assign({}, axis), Object.assign({}, axis, { size: 56 })],
      legend: { live: true },
      cursor: { drag: { x: false, y: false } },
      hooks: { drawClear: [throttleBands(throttle)] },
    };
  }

  function destroyAll() {
    while (plots.length) plots.pop().destroy();
  }

  // Renders `chart` into `root`; returns how many values it drew.
  function render(root, chart) {
    destroyAll();
    root.textContent = '';
    let drawn = 0;
    for (const panel of chart.panels) {
      const box = document.createElement('div');
      box.className = 'panel';
      box.dataset.panel = panel.id;
      const h = document.createElement('h3');
      h.textContent = panel.title + (panel.unit ? ' (' + panel.unit + ')' : '');
      box.appendChild(h);
      root.appendChild(box);
      const values = panel.series.reduce(
        (n, s) => n + s.values.filter((v) => v !== null).length, 0);
      box.dataset.points = String(values);
      if (values === 0) {
        const p = document.createElement('p');
        p.className = 'empty';
        p.textContent = 'No samples in this range.';
        box.appendChild(p);
        continue;
      }
      drawn += values;
      const data = [chart.times];
      for (const s of panel.series) data.push(s.values);
      for (const l of panel.limits) data.push(chart.times.map(() => l.value));
      const width = Math.max(300, box.clientWidth - 12);
      plots.push(new uPlot(panelOptions(panel, width, chart.throttle || []), data, box));
    }
    return drawn;
  }

  window.cardiacCharts = { render: render, destroyAll: destroyAll };
})();
