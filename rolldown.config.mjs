// Bundles the Node side (the `wharf` command and the platform) into dist/: one module graph loads far
// faster than thousands of files from node_modules, which is most of a command's start-up time.
// better-sqlite3 stays external (a native addon), and so does dockerode (its ssh2 dependency loads
// optional native addons); Node built-ins are external by nature.
// The output is ASCII and without comments: V8 keeps each module's source text in memory (for
// functions compiled lazily and for toString), as one byte a character only when all of it is Latin-1.
// A single non-ASCII character (a typographic quote in a comment, an accented name in a package's
// licence header) made a whole chunk two bytes a character; ASCII output took the platform's memory at
// rest from 97 to 90 MB. The licences of what is bundled stay with the packages in node_modules, and
// the source maps lead back to the commented sources.
import { defineConfig } from 'rolldown';

export default defineConfig({
  input: {
    cli: 'src/cli/index.ts',
    platform: 'src/server/app.ts',
    tunnel: 'src/core/tunnel/client.ts',
    // The traffic history's writer thread (core/mirror/history-thread.ts loads it by this name).
    'history-writer': 'src/core/mirror/history-writer.ts',
  },
  platform: 'node',
  external: [/^node:/, 'better-sqlite3', 'dockerode'],
  resolve: { extensionAlias: { '.js': ['.ts', '.js'] } },
  output: {
    dir: 'dist',
    format: 'esm',
    sourcemap: true,
    chunkFileNames: 'chunks/[name]-[hash].js',
    cleanDir: true,
    charset: 'ascii',
    comments: false,
  },
});
