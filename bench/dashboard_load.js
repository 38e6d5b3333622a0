// SPDX-License-Identifier: Apache-2.0
// The dashboard in headless Chromium against a running agent: first load (the page, its
// scripts, styles and uPlot, and the overview JSON; a new browser context each time, so nothing
// is cached) and the 7-day charts of each GPU (request, server, transfer and uPlot drawing).
// The machine's load swings wall times; the renderer's busy time (Chrome's TaskDuration: its
// main thread running tasks) and the agent's CPU time (AGENT_PID's user+sys) swing less.
// usage: node dashboard_load.js URL SOURCE_DIR [RUNS] [AGENT_PID]
'use strict';
const fs = require('fs');
const path = require('path');

const [url, sourceDir, runsArg, agentPid] = process.argv.slice(2);
// The agent's user+sys CPU in ms (0 without a pid).
function agentCpuMs() {
  if (!agentPid) return 0;
  const f = fs.readFileSync('/proc/' + agentPid + '/stat', 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100;  // utime, stime in USER_HZ (100)
}
const runs = Number(runsArg || 10);
const { chromium } = require(path.join(sourceDir, 'web', 'node_modules', 'playwright-core'));

function stats(xs) {
  const s = xs.slice().sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)], min: s[0], max: s[s.length - 1] };
}
const ms = (x) => x.toFixed(1) + ' ms';

// Waits for the 8 GPU cards (polling from outside: the page's CSP forbids waitForFunction's eval).
async function cards(page) {
  for (;;) {
    if ((await page.locator('#gpus .card').count()) === 8) return;
    await new Promise((r) => setTimeout(r, 5));
  }
}

(async () => {
  const args = process.getuid() === 0 ? ['--no-sandbox'] : [];
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args });
  const cpu0 = agentCpuMs();
  const busy = [];
  const loads = [];
  const ready = [];
  const painted = [];
  const icons = [];
  const drawn = [];
  let bytes = 0;
  for (let i = 0; i < runs; ++i) {
    const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await ctx.newPage();
    const cdp = await ctx.newCDPSession(page);
    await cdp.send('Performance.enable');
    await page.goto(url);
    await cards(page);
    const m = (await cdp.send('Performance.getMetrics')).metrics;
    busy.push(m.find((x) => x.name === 'TaskDuration').value * 1000);
    // From the navigation's start to the last of the page's resources and the overview answer.
    // Not counted: the first chart (timed below) and the favicon, which Chromium asks for only
    // after the load event, off the page's critical path (it is reported on its own).
    const r = await page.evaluate(() => {
      const all = performance.getEntriesByType('resource');
      const res = all.filter((e) => !e.name.includes('/chart') && !e.name.includes('/favicon'));
      const nav = performance.getEntriesByType('navigation')[0];
      const icon = all.find((e) => e.name.includes('/favicon'));
      return {
        end: Math.max(nav.responseEnd, ...res.map((e) => e.responseEnd)),
        ready: nav.domContentLoadedEventEnd,
        icon: icon ? icon.responseEnd : null,
        painted: performance.getEntriesByName('cardiac-overview-drawn')[0].startTime,
        drawn: performance.now(),
        bytes: nav.transferSize + res.reduce((n, e) => n + e.transferSize, 0),
        overview: res.some((e) => e.name.includes('/api/v1/dashboard/overview')),
      };
    });
    if (!r.overview) throw new Error('the overview was not fetched');
    loads.push(r.end);
    ready.push(r.ready);
    painted.push(r.painted);
    if (r.icon !== null) icons.push(r.icon);
    drawn.push(r.drawn);
    bytes = r.bytes;
    await ctx.close();
  }
  const fl = stats(loads);
  console.log('first load (page + scripts + styles + uPlot + overview JSON, cold cache): median ' +
    ms(fl.median) + ', min ' + ms(fl.min) + ', max ' + ms(fl.max) + ' over ' + runs + ' runs; ' + bytes + ' bytes transferred');
  const agentMs = (agentCpuMs() - cpu0) / runs;
  const b = stats(busy);
  console.log('  renderer main thread busy per load (TaskDuration): median ' + ms(b.median) +
    '; agent CPU per load (user+sys, 10 ms ticks averaged): ' + ms(agentMs));
  const rd = stats(ready);
  console.log('  scripts run (DOMContentLoaded end): median ' + ms(rd.median) + ', min ' + ms(rd.min) +
    ', max ' + ms(rd.max) + (icons.length ? '; favicon answered (after the load event): median ' +
    ms(stats(icons).median) : ''));
  const pt = stats(painted);
  console.log('  overview on the page (the page\'s own mark after drawing it): median ' + ms(pt.median) +
    ', min ' + ms(pt.min) + ', max ' + ms(pt.max));
  const dr = stats(drawn);
  console.log('  cards seen drawn (polled from outside, an upper bound): median ' + ms(dr.median) +
    ', min ' + ms(dr.min) + ', max ' + ms(dr.max));

  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(url);
  await cards(page);
  // The 7-day range is picked once, as a person would, and waited for: picking it again for
  // each GPU would ask the agent for the previous GPU's chart too (the page draws only the
  // last answer, but the agent computes both), doubling the agent's work per measured chart.
  await page.evaluate(async () => {
    const root = document.getElementById('charts');
    document.querySelector('#ranges button[data-range="7d"]').click();
    while (!(root.dataset.range === '7d' && Number(root.dataset.points) > 0)) {
      await new Promise((r) => setTimeout(r, 1));
    }
  });
  const cpu1 = agentCpuMs();
  const per = [];
  const fetches = [];
  const renders = [];
  for (let round = 0; round < 3; ++round) {
    for (let g = 0; g < 8; ++g) {
      // Timed inside the page: from the request to the drawn charts.
      const t = await page.evaluate(async (gpu) => {
        const root = document.getElementById('charts');
        root.dataset.target = '';
        const t0 = performance.now();
        const sel = document.getElementById('target');
        sel.value = String(gpu);
        sel.dispatchEvent(new Event('change'));
        while (!(root.dataset.target === 'gpu ' + gpu && root.dataset.range === '7d' && Number(root.dataset.points) > 0)) {
          await new Promise((r) => setTimeout(r, 1));
        }
        const done = performance.now();
        const e = performance.getEntriesByType('resource').filter((x) => x.name.includes('gpu=' + gpu + '&range=7d')).pop();
        return { total: done - t0, fetch: e.responseEnd - e.requestStart, render: done - e.responseEnd };
      }, g);
      per.push(t.total);
      fetches.push(t.fetch);
      renders.push(t.render);
    }
  }
  const c = stats(per);
  console.log('7-day chart of one GPU (request + server + transfer + render of 5 panels): median ' +
    ms(c.median) + ', min ' + ms(c.min) + ', max ' + ms(c.max) + ' over ' + per.length + '; all 8 GPUs: ' +
    ms(per.slice(-8).reduce((a, b) => a + b, 0)) + ' (last round)');
  const f = stats(fetches);
  const r = stats(renders);
  if (agentPid) console.log('  agent CPU per 7-day chart (user+sys): ' + ms((agentCpuMs() - cpu1) / per.length));
  console.log('  of which request to last byte (server + loopback): median ' + ms(f.median) +
    '; answer to drawn (JSON parse + uPlot): median ' + ms(r.median));
  await browser.close();
})().catch((e) => { console.error(e); process.exit(1); });
