// The Dockerfile the container runtime writes, and the supervisor that runs several services in one
// container (run here under the machine's own /bin/sh, as it runs inside an image).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  generateDockerfile,
  inApp,
  parseSupervisedLine,
  serviceLabel,
  supervisorScript,
} from '../../../src/server/runtime/dockerfile.js';
import { until } from '../../helpers/poll.js';

describe('generateDockerfile', () => {
  it('copies the source to /app and runs each folder’s install and build as RUN steps', () => {
    const text = generateDockerfile({
      base: 'node:22-slim',
      steps: [
        { dir: '.', install: 'npm ci', build: null },
        { dir: 'api', install: null, build: 'npm run build' },
      ],
      path: [],
      labels: { 'dev.wharf.platform': 'p1', 'dev.wharf.project': 'prj_1' },
    });
    expect(text.split('\n')).toEqual([
      '# Written by Wharf from the build config and what it detected in the source.',
      '# Add a Dockerfile to the source to build it your own way.',
      'FROM node:22-slim',
      'LABEL dev.wharf.platform="p1" dev.wharf.project="prj_1"',
      'WORKDIR /app',
      'COPY . /app',
      'RUN CI=true npm ci',
      'WORKDIR /app/api',
      'RUN CI=true npm run build',
      'WORKDIR /app',
      '',
    ]);
  });

  it('has no step that does nothing: a source without install or build is FROM, WORKDIR, COPY', () => {
    const text = generateDockerfile({
      base: 'node:22-slim',
      steps: [{ dir: '.', install: null, build: null }],
      path: [],
    });
    expect(text.split('\n').filter((l) => l && !l.startsWith('#'))).toEqual([
      'FROM node:22-slim',
      'WORKDIR /app',
      'COPY . /app',
    ]);
  });

  it('puts a virtualenv first on PATH and runs a multi-line command through sh -c', () => {
    const text = generateDockerfile({
      base: 'python:3.12-slim',
      steps: [{ dir: '.', install: 'python3 -m venv .venv\n.venv/bin/pip install flask', build: null }],
      path: ['/app/.venv/bin'],
    });
    expect(text).toContain(`RUN CI=true sh -c 'python3 -m venv .venv\n.venv/bin/pip install flask'`);
    expect(text).toContain('ENV PATH=/app/.venv/bin:/usr/local/sbin:');
  });

  it('never holds env vars', () => {
    const text = generateDockerfile({
      base: 'x',
      steps: [{ dir: '.', install: 'true', build: null }],
      path: [],
    });
    expect(text).not.toMatch(/^(ENV|ARG) (?!PATH=)/m);
  });
});

describe('inApp', () => {
  it.each([
    ['.', '/app'],
    ['./', '/app'],
    ['api', '/app/api'],
    ['./api/', '/app/api'],
    ['.venv/bin', '/app/.venv/bin'],
    ['web/.venv/bin', '/app/web/.venv/bin'],
  ])('%s is %s inside the image', (dir, inside) => {
    expect(inApp(dir)).toBe(inside);
  });
});

describe('the supervisor', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  function run(script: string, timeoutMs = 10_000) {
    return new Promise<{ code: number | null; lines: string[] }>((resolve) => {
      // A group of its own, as in a container: the supervisor stops its whole group.
      const child = spawn('/bin/sh', ['-c', script], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve({ code, lines: out.split('\n').filter(Boolean) });
      });
    });
  }

  it('marks each service’s lines with its name, gives each its own folder and env, and stops all when one exits', async () => {
    const a = mkdtempSync(join(tmpdir(), 'wharf-sup-a-'));
    const b = mkdtempSync(join(tmpdir(), 'wharf-sup-b-'));
    dirs.push(a, b);
    const script = supervisorScript([
      {
        label: serviceLabel('api'),
        cwd: a,
        start: 'echo "$NAME in $(pwd)"; echo "it\'s $PORT" >&2; sleep 1; exit 4',
        env: { NAME: 'api', PORT: '5000' },
        path: [],
      },
      {
        label: serviceLabel(null),
        cwd: b,
        start: 'echo "$NAME in $(pwd)"; sleep 30',
        env: { NAME: "the app's" },
        path: ['/opt/x/bin'],
      },
    ]);
    const started = Date.now();
    const { code, lines } = await run(script);
    // The long-running one was stopped, not waited for.
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(code).toBe(1);
    const parsed = lines.map((line) => parseSupervisedLine(line));
    expect(parsed).toContainEqual({ label: 'api', line: `api in ${a}`, supervisor: false });
    expect(parsed).toContainEqual({ label: 'api', line: "it's 5000", supervisor: false });
    expect(parsed).toContainEqual({ label: '.', line: `the app's in ${b}`, supervisor: false });
    expect(parsed.filter((p) => p.supervisor).map((p) => p.line)).toEqual([
      'a service exited: the container stops so that the platform restarts it',
    ]);
  });

  it('ends every service on SIGTERM', async () => {
    const script = supervisorScript([
      { label: 'one', cwd: '/', start: 'sleep 30', env: {}, path: [] },
      { label: 'two', cwd: '/', start: 'sleep 30', env: {}, path: [] },
    ]);
    const child = spawn('/bin/sh', ['-c', script], { stdio: 'ignore', detached: true });
    await new Promise((r) => setTimeout(r, 300));
    const started = Date.now();
    child.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(code).toBe(143);
    // Nothing of its group is left (once the kernel has reaped the last of them).
    const gone = () => {
      try {
        process.kill(-child.pid!, 0);
        return false;
      } catch {
        return true;
      }
    };
    await until(gone, 'the processes gone', 2_500, 50);
    expect(gone()).toBe(true);
  });

  it('leaves unmarked lines to the app, and names no service it does not know', () => {
    expect(parseSupervisedLine('plain output')).toEqual({
      label: null,
      line: 'plain output',
      supervisor: false,
    });
    expect(parseSupervisedLine('\u001eno end')).toEqual({
      label: null,
      line: '\u001eno end',
      supervisor: false,
    });
  });
});
