// Project logs: stored lines read back in order, bounded per project, and followed live over SSE.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOG_LINES_KEPT, LOG_LINE_MAX_CHARS } from '../../src/server/projects/logs.js';
import { call, expectProblem, startPlatform, type TestPlatform } from '../helpers/platform.js';
import { readSseEvents } from '../helpers/sse.js';

let t: TestPlatform;
let n = 0;

beforeAll(async () => {
  t = await startPlatform();
});
afterAll(async () => {
  await t.close();
});

async function newProject(): Promise<string> {
  n += 1;
  const created = await call<{ id: string }>(`${t.api}/projects`, {
    key: t.key,
    body: { name: `Logs ${n}`, subdomain: `logs-${n}`, image: 'nginx' },
  });
  expect(created.status).toBe(201);
  return created.body.id;
}

const runtime = (line: string) => ({ stream: 'runtime' as const, service: null, line });

describe('GET /projects/:id/logs', () => {
  it('answers an empty list for a project that has written nothing', async () => {
    const id = await newProject();
    const result = await call(`${t.api}/projects/${id}/logs`, { key: t.key });
    expect(result.status).toBe(200);
    expect(result.body).toEqual([]);
  });

  it('returns the lines oldest first in the API shape, and GET /projects/:id shows them too', async () => {
    const id = await newProject();
    await t.platform.logs.append(id, [
      { stream: 'build', service: null, line: 'npm ci' },
      { stream: 'runtime', service: 'web', line: 'listening on 3000' },
      { stream: 'system', service: null, line: 'running' },
    ]);
    const result = await call<Array<Record<string, unknown>>>(`${t.api}/projects/${id}/logs`, { key: t.key });
    expect(result.body.map((l) => l.line)).toEqual(['npm ci', 'listening on 3000', 'running']);
    expect(Object.keys(result.body[1]!).sort()).toEqual(['line', 'service', 'stream', 'ts']);
    expect(result.body[1]).toMatchObject({ stream: 'runtime', service: 'web' });
    const detail = await call<{ logs: unknown[] }>(`${t.api}/projects/${id}`, { key: t.key });
    expect(detail.body.logs).toEqual(result.body);
  });

  it('keeps a line with NUL bytes (an app may print any), each shown as U+FFFD, and the lines after it', async () => {
    const id = await newProject();
    await t.platform.logs.append(id, [runtime('before'), runtime('a\u0000b\u0000'), runtime('after')]);
    const result = await call<Array<{ line: string }>>(`${t.api}/projects/${id}/logs`, { key: t.key });
    expect(result.body.map((l) => l.line)).toEqual(['before', 'a\ufffdb\ufffd', 'after']);
  });

  it('gives the newest `limit` lines, and only those after `since`', async () => {
    const id = await newProject();
    await t.platform.logs.append(id, [
      runtime('old'),
      { ...runtime('older'), ts: '2020-01-01T00:00:00.000Z' },
    ]);
    await t.platform.logs.append(
      id,
      [1, 2, 3, 4, 5].map((i) => ({ ...runtime(`line ${i}`), ts: `2030-01-01T00:00:0${i}.000Z` })),
    );
    const limited = await call<Array<{ line: string }>>(`${t.api}/projects/${id}/logs?limit=2`, {
      key: t.key,
    });
    expect(limited.body.map((l) => l.line)).toEqual(['line 4', 'line 5']);
    const since = await call<Array<{ line: string }>>(
      `${t.api}/projects/${id}/logs?since=2030-01-01T00:00:03Z`,
      { key: t.key },
    );
    expect(since.body.map((l) => l.line)).toEqual(['line 4', 'line 5']);
  });

  it(`keeps the newest ${LOG_LINES_KEPT} lines of a project and cuts very long lines`, async () => {
    const id = await newProject();
    await t.platform.logs.append(
      id,
      Array.from({ length: LOG_LINES_KEPT + 10 }, (_, i) => runtime(`#${i}`)),
    );
    await t.platform.logs.append(id, [runtime('x'.repeat(LOG_LINE_MAX_CHARS + 100))]);
    const all = await call<Array<{ line: string }>>(`${t.api}/projects/${id}/logs?limit=10000`, {
      key: t.key,
    });
    expect(all.body).toHaveLength(LOG_LINES_KEPT);
    expect(all.body[0]!.line).toBe('#11');
    expect(all.body.at(-1)!.line).toMatch(/… \(line cut\)$/);
  });

  it('refuses a bad limit or since with 422 and the query path', async () => {
    const id = await newProject();
    const zero = await call(`${t.api}/projects/${id}/logs?limit=0`, { key: t.key });
    expectProblem(zero, 422, 'validation_failed');
    expect(zero.body.errors[0].path).toBe('querystring.limit');
    const since = await call(`${t.api}/projects/${id}/logs?since=yesterday`, { key: t.key });
    expectProblem(since, 422, 'validation_failed');
  });

  it("answers 404 for another account's project", async () => {
    const id = await newProject();
    const other = await t.newAccount();
    expectProblem(await call(`${t.api}/projects/${id}/logs`, { key: other.key }), 404, 'not_found');
    expectProblem(await call(`${t.api}/projects/${id}/logs?follow=1`, { key: other.key }), 404, 'not_found');
  });
});

describe('GET /projects/:id/logs?follow=1', () => {
  it('streams the backlog, then each new line once, as server-sent events', async () => {
    const id = await newProject();
    await t.platform.logs.append(id, [runtime('before 1'), runtime('before 2')]);
    const response = await fetch(`${t.api}/projects/${id}/logs?follow=1`, {
      headers: { 'x-api-key': t.key },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = readSseEvents(response, 'log', 4);
    await new Promise((r) => setTimeout(r, 100));
    await t.platform.logs.append(id, [runtime('after 1')]);
    await t.platform.logs.append(id, [runtime('after 2')]);
    expect((await events).map((e) => (JSON.parse(e.data) as { line: string }).line)).toEqual([
      'before 1',
      'before 2',
      'after 1',
      'after 2',
    ]);
  });
});

describe('shutting down', () => {
  it('ends open follow streams so the platform closes promptly', async () => {
    const own = await startPlatform();
    const created = await call<{ id: string }>(`${own.api}/projects`, {
      key: own.key,
      body: { name: 'Follow', subdomain: 'follow', image: 'nginx' },
    });
    const response = await fetch(`${own.api}/projects/${created.body.id}/logs?follow=1`, {
      headers: { 'x-api-key': own.key },
    });
    expect(response.status).toBe(200);
    const started = Date.now();
    await own.close();
    expect(Date.now() - started).toBeLessThan(3_000);
    await response.body?.cancel().catch(() => undefined);
  });
});
