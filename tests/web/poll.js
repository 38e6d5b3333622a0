// SPDX-License-Identifier: Apache-2.0
// What the browser tests share: polling a condition with a deadline (the page's CSP forbids
// playwright's waitForFunction, which needs eval).
'use strict';

// Polls `fn` until it returns a truthy value or `ms` pass; then throws, naming `what` and the
// last answer.
async function eventually(what, fn, ms) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e.message;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('timed out waiting for ' + what + (last ? ' (last: ' + JSON.stringify(last).slice(0, 300) + ')' : ''));
}

module.exports = { eventually };
