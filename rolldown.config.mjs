// Bundles the Node side (the `wharf` command and the platform) into dist/: one module graph loads far
// faster than thousands of files from node_modules, which is most of a command's start-up time.
// better-sqlite3 stays external (a native addon), and so does dockerode (its ssh2 dependency loads
// optional native addons); Node built-ins are external by nature.
import { defineConfig } from 'rolldown';

export default defineConfig({
  input: { cli: 'src/cli/index.ts', platform: 'src/server/app.ts', tunnel: 'src/core/tunnel/client.ts' },
  platform: 'node',
  external: [/^node:/, 'better-sqlite3', 'dockerode'],
  resolve: { extensionAlias: { '.js': ['.ts', '.js'] } },
  output: {
    dir: 'dist',
    format: 'esm',
    sourcemap: true,
    chunkFileNames: 'chunks/[name]-[hash].js',
    cleanDir: true,
  },
});
