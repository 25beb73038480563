// Renders Mermaid sources to SVG and PNG with Mermaid's own renderer in headless Chromium.
//   node dev/mermaid/render.mjs docs/plan-dev.mmd docs/diff-sample.mmd
// writes docs/<name>.svg and docs/<name>.png next to each source, and docs/pictures.lock.json with the
// sha256 of every source rendered (the test compares it with the committed sources).
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';

const here = dirname(fileURLToPath(import.meta.url));
const chromium = process.env.CHROMIUM || '/usr/bin/chromium';
const sources = process.argv.slice(2);
if (sources.length === 0) {
  console.error('usage: node render.mjs FILE.mmd ...');
  process.exit(2);
}
if (!existsSync(chromium)) {
  console.error(`${chromium} not found: apt-get update && apt-get install -y chromium (or set CHROMIUM)`);
  process.exit(2);
}
const profile = mkdtempSync(join(tmpdir(), 'mermaid-chromium-'));
const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  userDataDir: profile,
  args: [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
  ],
});
const lock = {};
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1600, height: 1000, deviceScaleFactor: 1.5 });
  await page.setContent('<!doctype html><html><body style="margin:0;background:#fff"><div id="out"></div></body></html>');
  await page.addScriptTag({ path: join(here, 'node_modules', 'mermaid', 'dist', 'mermaid.min.js') });
  for (const file of sources) {
    const text = readFileSync(file, 'utf8');
    const svg = await page.evaluate(async (source) => {
      window.mermaid.initialize({ startOnLoad: false, securityLevel: 'strict', theme: 'default' });
      const { svg } = await window.mermaid.render('graph', source);
      document.getElementById('out').innerHTML = svg;
      return svg;
    }, text);
    const svgFile = file.replace(/\.mmd$/, '.svg');
    writeFileSync(svgFile, svg + '\n');
    const element = await page.$('#out svg');
    await element.screenshot({ path: file.replace(/\.mmd$/, '.png'), omitBackground: false });
    lock[basename(file)] = createHash('sha256').update(text).digest('hex');
    console.log(`rendered ${svgFile} and ${file.replace(/\.mmd$/, '.png')}`);
  }
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
}
const lockFile = join(dirname(sources[0]), 'pictures.lock.json');
const previous = existsSync(lockFile) ? JSON.parse(readFileSync(lockFile, 'utf8')) : {};
writeFileSync(lockFile, JSON.stringify({ ...previous, ...lock }, null, 2) + '\n');
