// SPDX-License-Identifier: Apache-2.0
// The dashboard's Fleet tab in headless Chromium (playwright-core from web/node_modules), on
// agents that tests/integration/fleet_ui_test.cpp started beside a real Prometheus:
//  - `with`: an agent whose [fleet] names that Prometheus: the tab shows, a card per node with
//    its verdict, the lost-GPU node expands into its GPUs (one FAIL) and its gpu_lost alert;
//    no console error. Screenshots fleet.png and fleet-expanded.png.
//  - `without`: an agent without [fleet]: no tab, and the page never asks for the fleet.
//  - `broken`: an agent whose [fleet] names a Prometheus that is down: the tab shows the error
//    and a broken view, never an empty fleet. Screenshot fleet-broken.png.
//
// usage: node fleet_page.js SOURCE_DIR ARTEFACT_DIR EXPECT_JSON
//   EXPECT_JSON: {"with": URL, "without": URL, "broken": URL, "nodes": {instance: verdict},
//                 "lost": instance}
// Exit 0 pass, 1 fail.
'use strict';

const path = require('path');

const [sourceDir, artefacts, expectText] = process.argv.slice(2);
const kChromium = '/usr/bin/chromium';
const kDeadlineMs = 30000;
const { chromium } = require(path.join(sourceDir, 'web', 'node_modules', 'playwright-core'));
const expect = JSON.parse(expectText);

function check(cond, msg) {
  if (!cond) throw new Error(msg);
}

const poll = require(path.join(__dirname, 'poll.js'));
const eventually = (what, fn, ms = kDeadlineMs) => poll.eventually(what, fn, ms);

async function page(browser, errors, fleetRequests) {
  const p = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  p.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  p.on('pageerror', (e) => errors.push('page error: ' + e.message));
  p.on('requestfailed', (r) => errors.push('request failed: ' + r.url()));
  p.on('request', (r) => { if (r.url().includes('/api/v1/fleet')) fleetRequests.push(r.url()); });
  return p;
}

async function main() {
  const args = process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [];
  const browser = await chromium.launch({ executablePath: kChromium, args });
  try {
    // An agent with [fleet]: the tab, a card per node, the verdicts.
    const errors = [];
    const asked = [];
    const p = await page(browser, errors, asked);
    await p.goto(expect.with + '/');
    await eventually('the Fleet tab', async () => p.isVisible('#tabs button[data-tab="fleet"]'));
    await p.click('#tabs button[data-tab="fleet"]');
    const want = Object.keys(expect.nodes).length;
    await eventually(want + ' node cards', async () => (await p.$$('#fleet-nodes .card.node')).length === want);
    check(await p.isHidden('#host-page'), 'the host page stays shown beside the fleet');
    for (const [instance, verdict] of Object.entries(expect.nodes)) {
      const card = await p.$('#fleet-nodes .card[data-instance="' + instance + '"]');
      check(card, 'no card for ' + instance);
      check(await card.getAttribute('data-verdict') === verdict, instance + ': verdict ' + await card.getAttribute('data-verdict') + ', want ' + verdict);
      const cls = await card.getAttribute('class');
      check(cls.split(' ').includes(verdict), instance + ': card class "' + cls + '" is not coloured ' + verdict);
      check((await card.textContent()).includes(verdict.toUpperCase()), instance + ': no ' + verdict.toUpperCase() + ' on its card');
    }
    check((await p.textContent('#fleet-verdict')) === 'FAIL', 'fleet verdict: ' + await p.textContent('#fleet-verdict'));
    await p.screenshot({ path: path.join(artefacts, 'fleet.png'), fullPage: true });

    // The lost-GPU node expands into its GPUs (one FAIL, not answering) and its alert.
    const lost = '#fleet-nodes .card[data-instance="' + expect.lost + '"]';
    await p.click(lost);
    await eventually('the node expanded', async () => (await p.getAttribute(lost, 'aria-expanded')) === 'true');
    const failing = await p.$$(lost + ' .fleet-gpus tr[data-verdict="fail"]');
    check(failing.length === 1, failing.length + ' failing GPUs on the lost-GPU node, want 1');
    check((await p.$$(lost + ' .fleet-gpus tbody tr')).length === 8, 'the lost-GPU node does not list 8 GPUs');
    check(/gpu_lost/.test(await p.textContent(lost + ' .fleet-alerts')), 'no gpu_lost alert under the node');
    await p.screenshot({ path: path.join(artefacts, 'fleet-expanded.png'), fullPage: true });
    // It stays open across a refresh, and folds on Enter.
    const before = asked.length;
    await eventually('a refresh of the fleet', async () => asked.length > before, 15000);
    await eventually('the node still open', async () => (await p.getAttribute(lost, 'aria-expanded')) === 'true');
    await p.focus(lost);
    await p.keyboard.press('Enter');
    await eventually('the node folded', async () => (await p.getAttribute(lost, 'aria-expanded')) === 'false');
    check(errors.length === 0, 'console errors: ' + JSON.stringify(errors));

    // An agent without [fleet]: no tab, and the page does not ask.
    const errors2 = [];
    const asked2 = [];
    const q = await page(browser, errors2, asked2);
    await q.goto(expect.without + '/');
    await eventually('the overview drawn', async () => (await q.$$('#gpus .card')).length > 0);
    check(await q.isHidden('#tabs'), 'a Fleet tab on an agent without [fleet]');
    check(asked2.length === 0, 'the page asked for the fleet: ' + JSON.stringify(asked2));
    check(errors2.length === 0, 'console errors: ' + JSON.stringify(errors2));

    // An agent whose Prometheus is down: the reason, a broken view, never an empty fleet.
    const errors3 = [];
    const r = await page(browser, errors3, []);
    await r.goto(expect.broken + '/#fleet');
    await eventually('the fleet error', async () => /Could not read the fleet: .*could not connect/.test(await r.textContent('#fleet-errors')));
    check(await r.isVisible('#fleet-page'), '#fleet did not open the Fleet tab');
    check((await r.textContent('#fleet-verdict')) === 'UNKNOWN', 'verdict of an unreadable fleet: ' + await r.textContent('#fleet-verdict'));
    check((await r.getAttribute('#fleet-nodes', 'class')).includes('broken'), 'the nodes are not marked broken');
    await r.screenshot({ path: path.join(artefacts, 'fleet-broken.png'), fullPage: true });
    // The browser reports the 503 itself; nothing else may be logged.
    const other = errors3.filter((e) => !/status of 503/.test(e));
    check(other.length === 0, 'console errors: ' + JSON.stringify(other));
    console.log('PASS: ' + want + ' node cards with their verdicts, the lost-GPU node expanded, no tab without [fleet], an unreadable Prometheus shown broken; screenshots in ' + artefacts);
  } finally {
    await browser.close();
  }
}

main().catch((e) => {
  console.error('FAIL: ' + e.message);
  process.exit(1);
});
