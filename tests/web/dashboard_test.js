// SPDX-License-Identifier: Apache-2.0
// The dashboard end to end: a real `cardiac agent` on the fake NVML's gpu-lost scenario, its page
// driven in headless Chromium by playwright-core. Checks the 8 GPU cards and their verdicts,
// that every range draws charts, that an ack from the page reaches the alert book, and that the
// page logs no console error. Screenshots go to the artefact directory.
//
// usage: node dashboard_test.js CARDIAC FAKE_NVML SOURCE_DIR ARTEFACT_DIR
// Exit 0 pass, 1 fail, 77 skipped (no /usr/bin/chromium).
'use strict';

const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');

const [cardiac, fakeNvml, sourceDir, artefacts] = process.argv.slice(2);
const kChromium = '/usr/bin/chromium';
const kDeadlineMs = 30000;

if (!cardiac || !fakeNvml || !sourceDir || !artefacts) {
  console.error('usage: node dashboard_test.js CARDIAC FAKE_NVML SOURCE_DIR ARTEFACT_DIR');
  process.exit(2);
}
if (!fs.existsSync(kChromium)) {
  console.log('SKIP: ' + kChromium + ' is not installed (scripts/setup.sh installs Debian\'s chromium)');
  process.exit(77);
}
const { chromium } = require(path.join(sourceDir, 'web', 'node_modules', 'playwright-core'));

function fail(msg) {
  throw new Error(msg);
}
function check(cond, msg) {
  if (!cond) fail(msg);
}

const poll = require(path.join(__dirname, 'poll.js'));
const eventually = (what, fn, ms = kDeadlineMs) => poll.eventually(what, fn, ms);

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

async function get(base, p, headers) {
  const res = await fetch(base + p, { headers: headers || {} });
  return { status: res.status, body: await res.text(), headers: res.headers };
}

async function startAgent(dir) {
  // The port is free when found, but another test may take it before the agent binds; then
  // the agent exits and another port is tried.
  for (let attempt = 0; attempt < 5; ++attempt) {
    const port = await freePort();
    fs.writeFileSync(path.join(dir, 'cardiac.toml'),
      '[nvml]\nlibrary = "' + fakeNvml + '"\ntimeout = "1s"\n' +
      '[kmsg]\nsource = "' + path.join(dir, 'kern.log') + '"\n' +
      '[agent]\nstate_dir = "' + path.join(dir, 'state') + '"\nlisten = "127.0.0.1:' + port + '"\n');
    const log = fs.openSync(path.join(artefacts, 'agent.log'), 'w');
    const child = spawn(cardiac, ['agent', '--config', path.join(dir, 'cardiac.toml')], {
      env: Object.assign({}, process.env, {
        CARDIAC_FAKE_NVML_SCENARIO: path.join(sourceDir, 'tests/fixtures/scenarios/gpu-lost.json'),
      }),
      stdio: ['ignore', log, log],
    });
    let exited = false;
    child.on('exit', () => { exited = true; });
    const base = 'http://127.0.0.1:' + port;
    const up = await eventually('the agent to answer', async () => {
      if (exited) return 'exited';
      const r = await get(base, '/api/v1/dashboard/overview');
      const o = JSON.parse(r.body);
      return r.status === 200 && o.gpus && o.gpus.cards.length === 8 ? 'up' : false;
    });
    if (up === 'up') return { child, base };
  }
  fail('the agent did not start; see ' + path.join(artefacts, 'agent.log'));
}

// The number of non-transparent pixels of the first canvas in each chart panel.
async function paintedPixels(page) {
  return page.evaluate(() => Array.from(document.querySelectorAll('#charts .panel canvas')).map((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) ++n;
    return n;
  }));
}

async function main() {
  fs.mkdirSync(artefacts, { recursive: true });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cardiac-web-'));
  fs.writeFileSync(path.join(dir, 'kern.log'), '');
  const { child, base } = await startAgent(dir);
  const args = process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [];
  const browser = await chromium.launch({ executablePath: kChromium, args });
  const consoleErrors = [];
  try {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
    page.on('pageerror', (e) => consoleErrors.push('page error: ' + e.message));
    page.on('requestfailed', (r) => consoleErrors.push('request failed: ' + r.url()));
    // index.html preloads the overview; app.js must take that answer, not ask again.
    let overviewAsks = 0;
    page.on('request', (r) => { if (r.url().includes('/api/v1/dashboard/overview')) ++overviewAsks; });

    // Overview: 8 cards, GPU 5 lost (FAIL), the other seven OK.
    await page.goto(base + '/');
    await eventually('8 GPU cards', async () => (await page.locator('#gpus .card').count()) === 8);
    // By the time the first overview is drawn, only the preload has asked for it (a second ask
    // would be app.js missing the preloaded answer; its next refresh comes 5 s after that draw).
    const firstAsks = overviewAsks;
    check(firstAsks === 1, 'the overview should be asked for once on load (the preload taken), got ' + firstAsks);
    const cards = await page.$$eval('#gpus .card', (els) => els.map((e) => ({
      gpu: e.dataset.gpu, verdict: e.dataset.verdict, health: e.dataset.health,
      cls: e.className, text: e.textContent })));
    for (const c of cards) {
      if (c.gpu === '5') {
        check(c.verdict === 'FAIL' && c.health === 'lost' && c.cls.includes('fail'),
          'GPU 5 should be FAIL/lost, got ' + JSON.stringify(c));
        check(/lost from the bus/.test(c.text) && /LOST/.test(c.text) && /FENCED/.test(c.text),
          'GPU 5 card should say it is lost and fenced: ' + c.text);
      } else {
        check(c.verdict === 'OK' && c.cls.includes('ok'), 'GPU ' + c.gpu + ' should be OK, got ' + JSON.stringify(c));
      }
    }
    check((await page.textContent('#verdict')) === 'FAIL', 'the host verdict should read FAIL');
    await eventually('the gpu_lost alert row', async () =>
      (await page.locator('#alerts tr[data-alert]').filter({ hasText: 'gpu_lost' }).count()) === 1);
    await eventually('the lost incident in the timeline', async () =>
      /incident: GPU 5 lost/.test(await page.textContent('#timeline')));
    await page.screenshot({ path: path.join(artefacts, 'overview.png'), fullPage: true });

    // Charts for GPU 0 and the host in each range: drawn, with values.
    for (const target of ['0', 'host']) {
      await page.selectOption('#target', target);
      for (const range of ['15m', '1h', '24h', '7d']) {
        await page.click('#ranges button[data-range="' + range + '"]');
        const want = target === 'host' ? 'host' : 'gpu ' + target;
        await eventually(target + ' ' + range + ' charts', async () => page.evaluate(([r, t]) => {
          const c = document.getElementById('charts');
          return c.dataset.range === r && c.dataset.target === t && Number(c.dataset.points) > 0;
        }, [range, want]));
        const panels = await page.$$eval('#charts .panel', (els) => els.map((e) => Number(e.dataset.points)));
        check(panels.length >= 3 && panels.every((n) => n > 0),
          target + ' ' + range + ': every panel should have values, got ' + JSON.stringify(panels));
        const pixels = await paintedPixels(page);
        check(pixels.length === panels.length && pixels.every((n) => n > 0),
          target + ' ' + range + ': every chart canvas should be drawn, got ' + JSON.stringify(pixels));
        await page.screenshot({ path: path.join(artefacts, 'chart-' + target + '-' + range + '.png'), fullPage: true });
      }
    }

    // Without a token the page says so and offers no ack; with it, ack reaches the store.
    const summary = await page.textContent('#token-state');
    check(/No API token set/.test(summary), 'the page should explain that no token is set: ' + summary);
    const row = page.locator('#alerts tr[data-alert]').filter({ hasText: 'gpu_lost' });
    check(await row.locator('button[data-ack]').isDisabled(), 'Ack should be disabled without a token');
    const id = Number(await row.getAttribute('data-alert'));
    const token = fs.readFileSync(path.join(dir, 'state', 'api-token'), 'utf8').trim();
    await page.click('#token-state');
    await page.fill('#token-input', token);
    await page.click('#token-form button[type="submit"]');
    await eventually('the Ack button to be enabled', async () =>
      !(await page.locator('#alerts tr[data-alert="' + id + '"] button[data-ack]').isDisabled()));
    await page.click('#alerts tr[data-alert="' + id + '"] button[data-ack]');
    const acked = await eventually('the alert acked in /api/v1/alerts', async () => {
      const alerts = JSON.parse((await get(base, '/api/v1/alerts')).body);
      const a = alerts.find((x) => x.id === id);
      return a && a.acked ? a : false;
    });
    check(/^api-token/.test(acked.acked_by), 'the ack should be recorded as the token holder: ' + acked.acked_by);
    await eventually('the row shown as acked', async () =>
      (await page.getAttribute('#alerts tr[data-alert="' + id + '"]', 'data-status')) === 'acked');

    // Silence from the page: the alert's rule and labels for 2 h.
    const fenced = page.locator('#alerts tr[data-alert]').filter({ hasText: 'gpu_fenced' });
    const fencedId = Number(await fenced.getAttribute('data-alert'));
    await page.click('#alerts tr[data-alert="' + fencedId + '"] button[data-silence]');
    await eventually('the alert silenced in /api/v1/alerts', async () => {
      const alerts = JSON.parse((await get(base, '/api/v1/alerts')).body);
      const a = alerts.find((x) => x.id === fencedId);
      return a && a.silenced;
    });

    // Dark theme: the charts are drawn again in its colours.
    await page.evaluate(() => { document.getElementById('charts').dataset.range = ''; });
    await page.emulateMedia({ colorScheme: 'dark' });
    await eventually('the charts drawn again for the dark theme', async () =>
      (await page.getAttribute('#charts', 'data-range')) === '7d');
    await page.screenshot({ path: path.join(artefacts, 'overview-dark.png'), fullPage: true });

    // An agent that stops answering is shown as such.

    check(consoleErrors.length === 0, 'console errors: ' + JSON.stringify(consoleErrors));
    child.kill('SIGKILL');
    await eventually('the page to show the agent gone', async () =>
      (await page.textContent('#verdict')) === 'NO DATA' && /did not answer/.test(await page.textContent('#errors')), 15000);
    await page.screenshot({ path: path.join(artefacts, 'agent-gone.png'), fullPage: true });
    console.log('PASS: 8 GPU cards (GPU 5 lost), charts for 4 ranges, ack and silence from the page, no console error; screenshots in ' + artefacts);
  } finally {
    await browser.close();
    child.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error('FAIL: ' + e.message);
  process.exit(1);
});
