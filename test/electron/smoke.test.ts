// The Electron smoke test: builds the desktop app (scripts/start.mjs --build-only), launches it with
// playwright-core against the Electron binary named by WHARF_ELECTRON_PATH, and checks that the window
// opens hardened and that window.wharf serves the Bridge. The Electron binary cannot be downloaded on
// our machines, so without WHARF_ELECTRON_PATH the test is reported as skipped, saying why.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { _electron, type ElectronApplication, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BridgeResult, RawBridge, SettingsView } from '../../src/shared/bridge.js';

const electronPath = process.env.WHARF_ELECTRON_PATH;
const root = fileURLToPath(new URL('../..', import.meta.url));

/** What the page sees as its global object, for evaluate() callbacks (no DOM types here). */
type PageGlobal = { wharf?: RawBridge; require?: unknown; process?: unknown };

describe('the desktop app (Electron)', () => {
  let app: ElectronApplication | null = null;
  let page: Page;
  let home: string | null = null;

  beforeAll(async () => {
    if (!electronPath) return;
    const built = spawnSync(process.execPath, [join(root, 'scripts/start.mjs'), '--build-only'], {
      cwd: root,
      stdio: 'inherit',
      env: { ...process.env, WHARF_ELECTRON_PATH: electronPath },
    });
    if (built.status !== 0) throw new Error(`building the app failed (exit ${built.status})`);

    home = mkdtempSync(join(tmpdir(), 'wharf-electron-'));
    app = await _electron.launch({
      executablePath: electronPath,
      // Chromium's OS sandbox refuses to run as root (containers, CI); the renderer sandbox stays on.
      args: [...(process.getuid?.() === 0 ? ['--no-sandbox'] : []), join(root, 'out/main/index.js')],
      cwd: root,
      env: { ...process.env, WHARF_HOME: home, ELECTRON_ENABLE_LOGGING: '1' },
      timeout: 60_000,
    });
    page = await app.firstWindow();
    await page.waitForLoadState('domcontentloaded');
  }, 300_000);

  afterAll(async () => {
    await app?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it.skipIf(!electronPath)(
    electronPath
      ? 'opens a hardened window whose window.wharf answers settings.get'
      : 'opens a hardened window whose window.wharf answers settings.get (skipped: WHARF_ELECTRON_PATH is not set to an Electron binary, and none can be downloaded here)',
    async () => {
      const electronApp = app as ElectronApplication;
      const windows = await electronApp.evaluate(({ BrowserWindow }) =>
        BrowserWindow.getAllWindows().map((window) => window.getTitle()),
      );
      expect(windows).toHaveLength(1);

      // Sandboxed, isolated, no Node integration: the page sees window.wharf and nothing of Node.
      const exposed = await page.evaluate(() => {
        const self = globalThis as unknown as PageGlobal;
        return {
          wharf: self.wharf ? Object.keys(self.wharf).sort() : null,
          require: typeof self.require,
          process: typeof self.process,
        };
      });
      expect(exposed).toEqual({ wharf: ['invoke', 'on'], require: 'undefined', process: 'undefined' });

      const settings = await page.evaluate(() =>
        (globalThis as unknown as Required<PageGlobal>).wharf.invoke('settings.get', null),
      );
      expect(settings).toMatchObject({ ok: true, value: { mode: 'local', hasApiKey: true } });
      expect((settings as Extract<BridgeResult<SettingsView>, { ok: true }>).value.platformUrl).toMatch(
        /^http:\/\/127\.0\.0\.1:\d+$/,
      );

      const unknown = await page.evaluate(() =>
        (globalThis as unknown as Required<PageGlobal>).wharf.invoke('shell.exec', 'rm -rf /'),
      );
      expect(unknown).toMatchObject({ ok: false, error: { code: 'unknown_operation' } });
    },
    120_000,
  );
});
