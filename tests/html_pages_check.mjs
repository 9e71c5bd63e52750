// Opens tierzero's HTML pages in headless Chromium (Debian's, driven by
// playwright-core from web/) with every request but the page file itself
// refused, and fails on a console error, an uncaught exception, any
// request for something else (a page must open with no network), a chart
// whose canvas stayed blank (under 1% of its pixels inked), that has no
// data, or whose ECharts model holds another number of data items than
// the page carries; and a chart that misleads as it is drawn: two texts
// whose boxes overlap (axis labels, names, legend, markers), a text cut by
// the canvas's edge, its clip (a legend that scrolls) or an ellipsis, a
// legend item not drawn whole, or a line drawn on top of another one over
// its whole length (it hides it).
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
    const title = c.chart.getOption().title[0].text;
    const flaws = [];
    // Every text drawn, as zrender draws it (a tspan per line), in canvas pixels.
    const zr = c.chart.getZr();
    const width = zr.getWidth(), height = zr.getHeight();
    const texts = zr.storage.getDisplayList(true).filter((el) => el.type === 'tspan' && el.style.text && !el.invisible).map((el) => {
      const r = el.getBoundingRect().clone();
      if (el.transform) r.applyTransform(el.transform);
      const clip = (el.__clipPaths || []).map((p) => { const b = p.getBoundingRect().clone(); if (p.transform) b.applyTransform(p.transform); return b; });
      return { text: String(el.style.text), x: r.x, y: r.y, w: r.width, h: r.height, clip };
    });
    const inside = (t, b) => t.x >= b.x - 0.5 && t.y >= b.y - 0.5 && t.x + t.w <= b.x + b.width + 0.5 && t.y + t.h <= b.y + b.height + 0.5;
    for (const t of texts) {
      if (!inside(t, { x: 0, y: 0, width, height })) flaws.push(`'${t.text}' runs past the chart's edge`);
      else if (t.clip.some((b) => !inside(t, b))) flaws.push(`'${t.text}' is cut (clipped)`);
      if (/…|\.\.\.$/.test(t.text)) flaws.push(`'${t.text}' is cut short`);
    }
    for (let i = 0; i < texts.length; ++i)
      for (let j = i + 1; j < texts.length; ++j) {
        const a = texts[i], b = texts[j];
        const dx = Math.min(a.x + a.w, b.x + b.w) - Math.max(a.x, b.x), dy = Math.min(a.y + a.h, b.y + b.h) - Math.max(a.y, b.y);
        if (dx > 1 && dy > 1) flaws.push(`'${a.text}' overlaps '${b.text}'`);
      }
    // The legend: one item per series, each drawn whole (its text once, uncut).
    const option = c.chart.getOption();
    if (option.legend && option.legend.length)
      for (const s of option.series) {
        const drawn = texts.filter((t) => t.text === s.name);
        if (drawn.length === 0) flaws.push(`legend item '${s.name}' is not drawn whole`);
      }
    // A line whose every point lies within 2 px of another line's: one hides the other. (A stacked area's top meets
    // the one below where its part is zero: its area says so, not a line.)
    const lines = c.chart.getModel().getSeries().filter((s) => s.subType === 'line' && !s.get('stack')).map((s) => {
      const d = s.getData();
      const pts = [];
      const flat = d.getLayout('points') || [];  // x0, y0, x1, y1, ...
      for (let i = 0; i + 1 < flat.length; i += 2) pts.push([flat[i], flat[i + 1]]);
      return { name: s.name, pts };
    });
    for (let i = 0; i < lines.length; ++i)
      for (let j = i + 1; j < lines.length; ++j) {
        const a = lines[i].pts, b = lines[j].pts;
        if (a.length < 2 || a.length !== b.length) continue;
        if (a.every((p, k) => Math.abs(p[0] - b[k][0]) <= 2 && Math.abs(p[1] - b[k][1]) <= 2))
          flaws.push(`line '${lines[i].name}' and line '${lines[j].name}' are drawn on top of each other`);
      }
    return { title, inked: inked / Math.max(1, pixels.length / 4), held, marks: c.marks, flaws };
  }));
  const expected = await page.evaluate(() => document.querySelectorAll('.chart').length);
  if (charts.length !== expected) problems.push(`${charts.length} of ${expected} charts drawn`);
  for (const c of charts) {
    if (!(c.inked >= 0.01)) problems.push(`chart '${c.title}' is blank (${(100 * c.inked).toFixed(2)}% of its pixels inked)`);
    if (c.marks === 0) problems.push(`chart '${c.title}' has no data`);
    if (c.held !== c.marks) problems.push(`chart '${c.title}' holds ${c.held} data items, the page carries ${c.marks}`);
    for (const f of [...new Set(c.flaws)]) problems.push(`chart '${c.title}': ${f}`);
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
