#!/usr/bin/env node
// Summarizes V8 CPU profiles (`node --cpu-prof`, or the benches' --cpu-prof DIR): the functions with the
// most self time, with their file, as a share of the samples, and the same grouped by package (or by
// file of ours), so that a profile before and after a change can be compared as text.
// Usage: node bench/profile-summary.mjs <file.cpuprofile>... [--top 25]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  options: { top: { type: 'string', default: '25' } },
  allowPositionals: true,
});
if (positionals.length === 0) {
  console.error('usage: node bench/profile-summary.mjs <file.cpuprofile>... [--top 25]');
  process.exit(2);
}

/** Where a function comes from: a package, a file of ours, Node's own code, or V8 (GC, idle, native). */
function origin(url) {
  if (!url) return '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0];
  return url.replace(/^file:\/\//, '').replace(/^.*\/(dist|src|bench)\//, '$1/');
}

for (const file of positionals) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfSamples = new Map();
  for (const id of profile.samples) selfSamples.set(id, (selfSamples.get(id) ?? 0) + 1);
  const total = profile.samples.length;
  const functions = new Map();
  const origins = new Map();
  for (const [id, count] of selfSamples) {
    const { callFrame } = byId.get(id);
    const name = callFrame.functionName || '(anonymous)';
    const where = origin(callFrame.url);
    const key = `${name}  ${where}${callFrame.url ? `:${callFrame.lineNumber + 1}` : ''}`;
    functions.set(key, (functions.get(key) ?? 0) + count);
    const group = name === '(idle)' || name === '(program)' || name === '(garbage collector)' ? name : where;
    origins.set(group, (origins.get(group) ?? 0) + count);
  }
  const pct = (n) => `${((100 * n) / total).toFixed(1).padStart(5)} %`;
  const top = Number(values.top);
  console.log(`${file}: ${total} samples over ${((profile.endTime - profile.startTime) / 1e6).toFixed(1)} s`);
  console.log('\n  by origin');
  for (const [name, n] of [...origins].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`  ${pct(n)}  ${name}`);
  console.log('\n  by function (self time)');
  for (const [name, n] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`  ${pct(n)}  ${name}`);
  console.log('');
}
