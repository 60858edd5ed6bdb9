// electron-vite: builds the desktop app into out/ (main → out/main, preload → out/preload, renderer →
// out/renderer), which scripts/start.mjs launches and electron-builder.yml packages. The browser build of
// the same renderer (`wharf app`) is vite.config.ts; the renderer here uses its plugins (React, and the
// dev-server CSP relaxation) so both builds produce the same page.
import { resolve } from 'node:path';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'electron-vite';
import { devContentSecurityPolicy } from './vite.config.js';

const root = import.meta.dirname;

export default defineConfig({
  main: {
    build: {
      outDir: resolve(root, 'out/main'),
      // Packages stay in node_modules (electron-builder ships the production ones), better-sqlite3
      // above all: its .node binary cannot be bundled and is rebuilt for Electron's ABI.
      externalizeDeps: { include: ['better-sqlite3'] },
      sourcemap: true,
      rolldownOptions: {
        input: {
          index: resolve(root, 'src/main/index.ts'),
          // The traffic history's writer thread, beside index.js (src/main/index.ts passes its path).
          'history-writer': resolve(root, 'src/core/mirror/history-writer.ts'),
        },
      },
    },
  },
  preload: {
    build: {
      outDir: resolve(root, 'out/preload'),
      // A sandboxed preload runs as a classic script with a require() that only knows `electron` and a
      // few built-ins: one self-contained CommonJS file, no chunks, no node_modules.
      externalizeDeps: false,
      isolatedEntries: true,
      sourcemap: 'inline',
      rolldownOptions: {
        input: { index: resolve(root, 'src/preload/index.ts') },
        external: ['electron'],
        output: { format: 'cjs', entryFileNames: '[name].cjs', codeSplitting: false },
      },
    },
  },
  renderer: {
    root: resolve(root, 'src/renderer'),
    plugins: [react(), devContentSecurityPolicy()],
    build: {
      outDir: resolve(root, 'out/renderer'),
      emptyOutDir: true,
      rolldownOptions: {
        input: { index: resolve(root, 'src/renderer/index.html') },
      },
    },
  },
});
