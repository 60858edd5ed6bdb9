#!/usr/bin/env node
// Benchmark: time from starting `wharf app` to the projects list painted in Chromium, versus a static
// HTML page served by a fresh Node process and painted in the same browser, in one run; plus the
// renderer's initial JavaScript size, gzipped.
// Usage: npm run build && node bench/ui.mjs [--runs 5]
// Targets: ratio <= 3; initial JS <= 300 KB gzip.
import { spawn } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';

const root = join(import.meta.dirname, '..');
const bin = join(root, 'bin', 'wharf.js');
const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' } } });
const runs = Number(values.runs);

function start(args, ready, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    let output = '';
    const timer = setTimeout(() => reject(new Error(`did not start: ${args.join(' ')}\n${output}`)), 20_000);
    const onData = (data) => {
      output += data.toString();
      const match = ready.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ child, match });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', reject);
  });
}

async function stop(child) {
  if (child.exitCode !== null) return;
  const exited = new Promise((done) => child.once('close', done));
  child.kill('SIGTERM');
  await exited;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main() {
  const home = mkdtempSync(join(tmpdir(), 'wharf-bench-ui-'));
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
    ],
  });
  const platform = await start(
    [bin, 'platform', '--data-dir', join(home, 'platform'), '--port', '0'],
    /API\s+(http:\/\/127\.0\.0\.1:(\d+)\/api\/v1)/,
  );
  try {
    await new Promise((r) => setTimeout(r, 300));
    const api = platform.match[1];
    const port = platform.match[2];
    const key = JSON.parse(readFileSync(join(home, 'platform', 'local-account.json'), 'utf8')).api_key;
    for (let i = 0; i < 20; i++) {
      const res = await fetch(`${api}/projects`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `Project ${i}`, subdomain: `bench-${i}`, image: 'nginx:1.27' }),
      });
      if (res.status !== 201) throw new Error(`seeding failed: ${await res.text()}`);
    }

    // The baseline: a static page listing the same 20 names, served by a fresh Node process.
    const staticDir = mkdtempSync(join(tmpdir(), 'wharf-bench-static-'));
    const rows = Array.from(
      { length: 20 },
      (_, i) => `<li data-testid="project-row-bench-${i}">Project ${i}</li>`,
    ).join('');
    writeFileSync(
      join(staticDir, 'index.html'),
      `<!doctype html><meta charset="utf-8"><title>static</title><ul>${rows}</ul>`,
    );
    const server = join(staticDir, 'server.mjs');
    writeFileSync(
      server,
      `import http from 'node:http'; import fs from 'node:fs';
       const page = fs.readFileSync(${JSON.stringify(join(staticDir, 'index.html'))});
       const s = http.createServer((q, r) => r.end(page)).listen(0, '127.0.0.1', () => console.log('static http://127.0.0.1:' + s.address().port + '/'));
       process.on('SIGTERM', () => process.exit(0));`,
    );

    const measure = async (args, ready, env) => {
      const page = await browser.newPage();
      const started = performance.now();
      const { child, match } = await start(args, ready, env);
      try {
        await page.goto(match[1]);
        await page
          .locator('[data-testid="project-row-bench-0"]')
          .waitFor({ state: 'visible', timeout: 20_000 });
        // Two animation frames: the rows are not only in the DOM but painted.
        // eslint-disable-next-line no-undef -- runs in the page
        await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
        return performance.now() - started;
      } finally {
        await page.close();
        await stop(child);
      }
    };

    const wharfTimes = [];
    const staticTimes = [];
    for (let i = 0; i < runs; i++) {
      const appHome = mkdtempSync(join(tmpdir(), 'wharf-bench-app-'));
      // The app reuses the running platform as its local one, as the desktop app does.
      mkdirSync(join(appHome, 'platform'));
      copyFileSync(
        join(home, 'platform', 'local-account.json'),
        join(appHome, 'platform', 'local-account.json'),
      );
      wharfTimes.push(
        await measure(
          [bin, 'app', '--port', '0', '--data-dir', appHome],
          /Wharf app: (http:\/\/\S+)[\s\S]*Ctrl\+C/,
          { WHARF_PORT: port },
        ),
      );
      rmSync(appHome, { recursive: true, force: true });
      staticTimes.push(await measure([server], /static (http:\/\/\S+)/));
    }
    rmSync(staticDir, { recursive: true, force: true });

    const assets = join(root, 'out', 'renderer', 'assets');
    const index = readFileSync(join(root, 'out', 'renderer', 'index.html'), 'utf8');
    const initialJs = readdirSync(assets)
      .filter((f) => f.endsWith('.js') && index.includes(f))
      .reduce((sum, f) => sum + gzipSync(readFileSync(join(assets, f))).length, 0);

    const ratio = median(wharfTimes) / median(staticTimes);
    console.log(`Start to painted project list (median of ${runs})`);
    console.log(
      `  wharf app + renderer:   ${median(wharfTimes).toFixed(0)} ms  (${wharfTimes.map((t) => t.toFixed(0)).join(', ')})`,
    );
    console.log(
      `  static page (node):     ${median(staticTimes).toFixed(0)} ms  (${staticTimes.map((t) => t.toFixed(0)).join(', ')})`,
    );
    console.log(`  ratio: ${ratio.toFixed(2)} (target <= 3) ${ratio <= 3 ? 'PASS' : 'FAIL'}`);
    console.log(
      `Initial JS: ${(initialJs / 1024).toFixed(1)} KB gzip (target <= 300 KB) ${initialJs <= 300 * 1024 ? 'PASS' : 'FAIL'}`,
    );
    process.exitCode = ratio <= 3 && initialJs <= 300 * 1024 ? 0 : 1;
  } finally {
    await stop(platform.child);
    await browser.close();
    rmSync(home, { recursive: true, force: true });
  }
}

await main();
