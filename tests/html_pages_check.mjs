// Opens tierzero's HTML pages in headless Chromium (Debian's, driven by
// playwright-core from web/) with every request but the page file itself
// refused, and fails on a console error, an uncaught exception, any
// request for something else (a page must open with no network), a chart
// whose canvas stayed blank (under 1% of its pixels inked), that has no
// data, or whose ECharts model holds another number of data items than
// the page carries.
// Saves a full-page screenshot of each page in OUT_DIR. A page given as
// !PAGE.html must fail the check (the test of the check itself).
//   node html_pages_check.mjs CHROMIUM OUT_DIR [!]PAGE.html...
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(path.resolve(process.env.TZ_WEB_DIR, 'package.json'));
const { chromium } = require('playwright-core');
const [chromiumPath, outDir, ...pages] = process.argv.slice(2);

// The flags this machine's Chromium needs headless as root, with no background connections.
const browser = await chromium.launch({
  executablePath: chromiumPath,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync'],
});
let failed = 0;
for (const arg of pages) {
  const mustFail = arg.startsWith('!');
  const file = mustFail ? arg.slice(1) : arg;
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console error: ' + m.text()); });
  page.on('pageerror', (e) => problems.push('uncaught: ' + e.message));
  const url = 'file://' + path.resolve(file);
  await context.route('**/*', (route) => {
    const asked = route.request().url();
    if (asked === url) return route.continue();
    problems.push('requested ' + asked);
    return route.abort();
  });
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForFunction(() => window.tierzeroCharts !== undefined, null, { timeout: 10000 }).catch(() => {});
  const charts = await page.evaluate(() => (window.tierzeroCharts || []).map((c) => {
    const canvas = document.querySelector('#' + c.id + ' canvas');
    const pixels = canvas ? canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data : [];
    let inked = 0;
    for (let i = 0; i < pixels.length; i += 4)
      if (pixels[i + 3] > 0 && (pixels[i] < 240 || pixels[i + 1] < 240 || pixels[i + 2] < 240)) ++inked;
    const held = c.chart.getModel().getSeries().reduce((n, s) => n + s.getData().count(), 0);
    return { title: c.chart.getOption().title[0].text, inked: inked / Math.max(1, pixels.length / 4), held, marks: c.marks };
  }));
  const expected = await page.evaluate(() => document.querySelectorAll('.chart').length);
  if (charts.length !== expected) problems.push(`${charts.length} of ${expected} charts drawn`);
  for (const c of charts) {
    if (!(c.inked >= 0.01)) problems.push(`chart '${c.title}' is blank (${(100 * c.inked).toFixed(2)}% of its pixels inked)`);
    if (c.marks === 0) problems.push(`chart '${c.title}' has no data`);
    if (c.held !== c.marks) problems.push(`chart '${c.title}' holds ${c.held} data items, the page carries ${c.marks}`);
  }
  const shot = path.join(outDir, path.basename(file, '.html') + '.png');
  await page.screenshot({ path: shot, fullPage: true });
  const summary = charts.map((c) => `${c.title} ${c.held}/${(100 * c.inked).toFixed(1)}%`).join('; ');
  if (mustFail) {
    if (!problems.length) failed += 1;
    console.log(`${problems.length ? 'ok' : 'FAIL'}: ${path.basename(file)} must fail the check: ${problems.join('; ') || 'it passed'}`);
  } else if (problems.length) {
    failed += 1;
    console.log(`FAIL: ${file}: ${problems.join('; ')}`);
  } else {
    console.log(`ok: ${path.basename(file)}: ${charts.length} charts drawn (${summary}); no console error, no request; ${shot}`);
  }
  await context.close();
}
await browser.close();
process.exit(failed ? 1 : 0);
