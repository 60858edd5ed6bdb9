// Vite: builds the renderer (src/renderer) into out/renderer, the page `wharf app` serves to a browser
// and Electron loads from file:// (hence the relative `base`). Hand-written CSS, no UI library: the
// initial JavaScript stays small.
//
// `npx vite` serves the renderer with hot reload; set WHARF_INSPECTOR to a running `wharf app`
// (e.g. http://127.0.0.1:4040) to proxy /bridge to it, then open http://localhost:5173/#token=<token>.
import { resolve } from 'node:path';
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vite';

const root = import.meta.dirname;
const inspector = process.env.WHARF_INSPECTOR;

/**
 * The dev server injects an inline script (React Refresh's preamble), which the page's strict CSP
 * (`script-src 'self'`) forbids. While serving, and only then, the meta tag allows inline scripts.
 */
export function devContentSecurityPolicy(): Plugin {
  return {
    name: 'wharf:dev-csp',
    apply: 'serve',
    transformIndexHtml: (html) => html.replace("script-src 'self'", "script-src 'self' 'unsafe-inline'"),
  };
}

export default defineConfig({
  root: resolve(root, 'src/renderer'),
  base: './',
  plugins: [react(), devContentSecurityPolicy()],
  build: {
    outDir: resolve(root, 'out/renderer'),
    emptyOutDir: true,
    target: 'chrome120',
    reportCompressedSize: true,
  },
  server: {
    host: '127.0.0.1',
    proxy: inspector
      ? {
          // The inspector refuses foreign Origins: present the proxied calls as its own page's.
          '/bridge': { target: inspector, ws: true, changeOrigin: true, headers: { origin: inspector } },
        }
      : {},
  },
});
