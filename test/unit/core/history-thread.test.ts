// The traffic history in its writer thread (TrafficHistory, with the built dist/history-writer.js):
// batches acknowledged by id, reads that see every exchange added before them, the bound on what waits
// for the writer, a history that cannot be opened, and closing with what is queued written.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { Exchange, type CapturedExchange } from '../../../src/core/capture/capture.js';
import type { CaptureOrigin } from '../../../src/core/mirror/captures.js';
import { rowJson } from '../../../src/core/mirror/captures-schema.js';
import type { FromWriter, ToWriter, WireExchange } from '../../../src/core/mirror/history-protocol.js';
import { TrafficHistory, type TrafficHistoryOptions } from '../../../src/core/mirror/history-thread.js';
import { Mirror } from '../../../src/core/mirror/mirror.js';
import { wharfPackage } from '../../../src/core/package-root.js';
import type { CapturedRequest } from '../../../src/shared/api/tunnels.js';

const WRITER = join(wharfPackage().root, 'dist', 'history-writer.js');
const histories: TrafficHistory[] = [];
const dirs: string[] = [];

function open(options: Partial<TrafficHistoryOptions> = {}): TrafficHistory {
  const history = new TrafficHistory({
    file: ':memory:',
    writerScript: WRITER,
    captures: { flushMs: 5 },
    ...options,
  });
  histories.push(history);
  return history;
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'wharf-history-'));
  dirs.push(dir);
  return dir;
}

afterEach(async () => {
  await Promise.all(histories.splice(0).map((history) => history.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const origin: CaptureOrigin = {
  tunnelKey: 'local_a',
  subdomain: 'demo',
  localPort: 3000,
  hostHeader: 'preserve',
};

function exchange(path: string, body = '', id?: string): CapturedExchange {
  const e = new Exchange({
    tunnelId: 'tun_aaaaaaaaaaaaaaaaaaaaaa',
    method: 'POST',
    path,
    url: `http://demo.tunnel.localhost:8788${path}`,
    httpVersion: 'HTTP/1.1',
    requestHeaders: [{ name: 'content-type', value: 'text/plain' }],
    remoteAddr: '127.0.0.1:50123',
    ...(id ? { id } : {}),
  });
  if (body) e.requestBody.push(Buffer.from(body));
  e.response(201, [{ name: 'content-type', value: 'text/plain' }]);
  if (body) e.responseBody.push(Buffer.from(body.toUpperCase()));
  return e.finish();
}

describe('the traffic history in its writer thread', () => {
  it('stores batches, announces them in order once committed, and reads them back with their bodies', async () => {
    const history = open();
    const announced: CapturedRequest[] = [];
    history.on('stored', (requests) => announced.push(...requests));
    const sent = ['/a', '/b', '/c'].map((path) => exchange(path, `body of ${path}`));
    for (const one of sent) history.add(one, origin);
    await history.flush();
    expect(announced.map((r) => r.path)).toEqual(['/a', '/b', '/c']);
    // The requests announced are the ones added, not copies the writer sent back.
    expect(announced[0]).toBe(sent[0]!.request);

    const page = await history.list();
    expect(page.total).toBe(3);
    expect(page.requests.map((r) => r.path)).toEqual(['/c', '/b', '/a']);
    const stored = await history.get(sent[1]!.request.id);
    expect(stored?.detail.request_body).toBe(Buffer.from('body of /b').toString('base64'));
    expect(stored?.detail.response_body).toBe(Buffer.from('BODY OF /B').toString('base64'));
    expect(stored?.subdomain).toBe('demo');
    expect(await history.tunnels()).toEqual([{ subdomain: 'demo', localPort: 3000, requests: 3 }]);
    expect(await history.get('req_missing')).toBeNull();
  });

  it('lets a read see every exchange added before it, without waiting for the gather', async () => {
    const history = open({ captures: { flushMs: 60_000 } });
    history.add(exchange('/now', 'x'), origin);
    expect((await history.list({ q: 'now' })).requests.map((r) => r.path)).toEqual(['/now']);
    expect((await history.stats()).count).toBe(1);
  });

  it('keeps an id once: a second exchange with the same id is not stored nor announced', async () => {
    const history = open();
    const announced: string[] = [];
    history.on('stored', (requests) => announced.push(...requests.map((r) => r.id)));
    history.add(exchange('/first', '', 'req_same'), origin);
    history.add(exchange('/second', '', 'req_same'), origin);
    history.add(exchange('/third'), origin);
    await history.flush();
    expect(announced).toHaveLength(2);
    expect(announced[0]).toBe('req_same');
    expect((await history.list()).requests.map((r) => r.path)).toEqual(['/third', '/first']);
  });

  it('bounds the bytes that wait for the writer: bodies go first, then whole exchanges', async () => {
    const fits = exchange('/aa', 'a'.repeat(10)); // 20 bytes of bodies
    const shed = exchange('/bb', 'b'.repeat(20)); // 40
    const dropped = exchange('/cc');
    const json = (one: CapturedExchange) => rowJson(one.request).length;
    // Room for the first whole and the second's request, not its bodies, and nothing of the third.
    const bytes = json(fits) + 20 + json(shed) + 39;
    const history = open({ queue: { exchanges: 100, bytes } });
    const failed: Error[] = [];
    history.on('failed', (error) => failed.push(error));
    // In one turn of the loop: nothing is acknowledged in between.
    for (const one of [fits, shed, dropped]) history.add(one, origin);
    await history.flush();

    const page = await history.list();
    expect(page.requests.map((r) => r.path)).toEqual(['/bb', '/aa']);
    const kept = await history.get(fits.request.id);
    expect(Buffer.from(kept!.detail.request_body!, 'base64').toString()).toBe('a'.repeat(10));
    const without = await history.get(shed.request.id);
    expect(without?.detail.request_body).toBeNull();
    expect(without?.detail.response_body).toBeNull();
    expect(without?.detail.request_body_truncated).toBe(true);
    expect(without?.detail.response_body_truncated).toBe(true);
    // What the request says it carried stays true.
    expect(without?.detail.request_size).toBe(20);
    expect(await history.stats()).toMatchObject({ count: 2, shedBodies: 1, dropped: 1 });
    expect(failed).toEqual([]);

    // Once written, the queue is free again.
    const later = exchange('/dd', 'd'.repeat(10));
    history.add(later, origin);
    await history.flush();
    expect((await history.get(later.request.id))?.detail.request_body).not.toBeNull();
  });

  it('bounds the exchanges that wait for the writer', async () => {
    const history = open({ queue: { exchanges: 2, bytes: 1024 * 1024 } });
    for (const path of ['/1', '/2', '/3']) history.add(exchange(path, 'x'), origin);
    await history.flush();
    expect((await history.list()).requests.map((r) => r.path)).toEqual(['/2', '/1']);
    expect(await history.stats()).toMatchObject({ count: 2, shedBodies: 0, dropped: 1 });
  });

  it('answers a query the history refuses with its reason, and carries on', async () => {
    const history = open();
    history.add(exchange('/ok'), origin);
    await expect(history.list({ limit: -5 } as never)).rejects.toThrow(/limit/);
    expect((await history.list()).total).toBe(1);
  });

  it('says why when the history cannot be opened, and fails every call with that', async () => {
    const dir = tempDir();
    // A directory where the file should be: SQLite cannot open it.
    const file = join(dir, 'mirror.db');
    mkdirSync(file);
    const history = open({ file });
    const failed: Error[] = [];
    history.on('failed', (error) => failed.push(error));
    await expect(history.list()).rejects.toThrow(/traffic history cannot be opened/);
    history.add(exchange('/lost'), origin);
    await expect(history.stats()).rejects.toThrow(/cannot be opened/);
    expect(failed).toHaveLength(1);
  });

  it('refuses to start without its built writer, naming the command that builds it', () => {
    expect(() => open({ writerScript: join(tempDir(), 'history-writer.js') })).toThrow(/npm run build/);
  });

  it('writes what is queued when closed; the file holds it for the next history, and calls after close fail', async () => {
    const file = join(tempDir(), 'mirror.db');
    new Mirror(file).close();
    const first = open({ file, captures: { flushMs: 60_000 } });
    const announced: string[] = [];
    first.on('stored', (requests) => announced.push(...requests.map((r) => r.path)));
    first.add(exchange('/kept', 'through a restart'), origin);
    await first.close();
    expect(announced).toEqual(['/kept']);
    await expect(first.list()).rejects.toThrow(/closed/);
    first.add(exchange('/after'), origin);

    const second = open({ file });
    const page = await second.list();
    expect(page.requests.map((r) => r.path)).toEqual(['/kept']);
    const stored = await second.get(page.requests[0]!.id);
    expect(Buffer.from(stored!.detail.request_body!, 'base64').toString()).toBe('through a restart');
  });

  it('writes the rest of a batch when one of its exchanges cannot be read, and says why', async () => {
    const worker = new Worker(WRITER, { workerData: { file: ':memory:', captures: {} } });
    try {
      const good = exchange('/good');
      const item = (json: string): WireExchange => ({
        json,
        origin,
        requestBody: 0,
        requestLength: 0,
        responseBody: 0,
        responseLength: 0,
        requestTruncated: false,
        responseTruncated: false,
      });
      const answer = new Promise<FromWriter>((resolve) => worker.once('message', resolve));
      worker.postMessage({
        kind: 'add',
        items: [item('{"id": "req_broken'), item(rowJson(good.request))],
        bodies: new ArrayBuffer(0),
      } satisfies ToWriter);
      const reply = await answer;
      expect(reply).toMatchObject({ kind: 'stored', ids: [good.request.id] });
      expect(reply.kind === 'stored' ? reply.error : null).toMatch(/JSON/);
    } finally {
      await worker.terminate();
    }
  });

  it('keeps a history shared by two writers within one bound', async () => {
    const file = join(tempDir(), 'mirror.db');
    const a = open({ file, captures: { flushMs: 5, limitBytes: 8_000 } });
    const b = open({ file, captures: { flushMs: 5, limitBytes: 8_000 } });
    for (let i = 0; i < 40; i++) (i % 2 ? a : b).add(exchange(`/n${i}`, 'z'.repeat(200)), origin);
    await Promise.all([a.flush(), b.flush()]);
    const stats = await a.stats();
    expect(stats.bytes).toBeLessThanOrEqual(8_000);
    expect(stats.count).toBeGreaterThan(0);
    expect(stats.count).toBeLessThan(40);
    expect((await b.stats()).count).toBe(stats.count);
  });
});
