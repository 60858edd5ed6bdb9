// LogFollowers against a scripted platform client: the backlog, batches, reconnecting with `since`
// without losing or repeating lines, and subscriber counting.
import { afterEach, describe, expect, it } from 'vitest';
import { LogFollowers } from '../../../src/core/api-client/log-follower.js';
import type { LogsQuery, PlatformClient } from '../../../src/core/api-client/platform-client.js';
import type { LogLine } from '../../../src/shared/api/projects.js';
import { BridgeError, type ProjectLogsEvent } from '../../../src/shared/bridge.js';
import { quietFor, until } from '../../helpers/poll.js';

const T0 = '2025-01-01T10:00:00.000Z';
const T1 = '2025-01-01T10:00:01.000Z';
const T2 = '2025-01-01T10:00:02.000Z';
const line = (text: string, ts = T0): LogLine => ({ ts, stream: 'runtime', service: null, line: text });
const sse = (l: LogLine) => `event: log\ndata: ${JSON.stringify(l)}\n\n`;

/** One follow connection the test writes to and ends. */
interface Connection {
  query: LogsQuery;
  signal: AbortSignal;
  send(text: string): void;
  end(): void;
}

function fakeClient(backlog: LogLine[] | BridgeError) {
  const connections: Connection[] = [];
  const waiting: Array<(c: Connection) => void> = [];
  const client = {
    async logs() {
      if (backlog instanceof BridgeError) throw backlog;
      return backlog;
    },
    async followLogs(_id: string, query: LogsQuery, signal: AbortSignal) {
      let controller!: ReadableStreamDefaultController<Uint8Array>;
      const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
      const connection: Connection = {
        query,
        signal,
        send: (text) => controller.enqueue(new TextEncoder().encode(text)),
        end: () => controller.close(),
      };
      signal.addEventListener('abort', () => controller.error(signal.reason));
      connections.push(connection);
      waiting.splice(0).forEach((wake) => wake(connection));
      return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
    },
  };
  const connection = async (n: number): Promise<Connection> => {
    while (connections.length <= n) await new Promise<Connection>((resolve) => waiting.push(resolve));
    return connections[n]!;
  };
  return { client: client as unknown as PlatformClient, connections, connection };
}

const followers: LogFollowers[] = [];
afterEach(() => {
  for (const f of followers.splice(0)) f.closeAll();
});

function setup(backlog: LogLine[] | BridgeError) {
  const fake = fakeClient(backlog);
  const events: ProjectLogsEvent[] = [];
  const logs = new LogFollowers({
    client: async () => fake.client,
    emit: (batch) => events.push(batch),
    flushMs: 20,
    reconnectMinMs: 10,
    reconnectMaxMs: 20,
  });
  followers.push(logs);
  const nextEvent = async (): Promise<ProjectLogsEvent> => {
    const seen = events.length;
    await until(() => events.length !== seen, 'a project-logs batch', 1_000, 5);
    return events[events.length - 1]!;
  };
  return { ...fake, logs, events, nextEvent };
}

describe('LogFollowers', () => {
  it('answers the backlog, then streams what follows it in numbered batches', async () => {
    const t = setup([line('a', T0), line('b', T1)]);
    const answer = await t.logs.follow('prj_1');
    expect(answer).toEqual({ projectId: 'prj_1', lines: [line('a', T0), line('b', T1)], next: 2 });

    const stream = await t.connection(0);
    // Asked from just before the newest backlog line: the platform's `since` means "strictly after".
    expect(stream.query).toEqual({ since: '2025-01-01T10:00:00.999Z', limit: 5000 });
    stream.send(': following logs\n\n' + sse(line('b', T1)) + sse(line('c', T2)) + sse(line('d', T2)));
    const batch = await t.nextEvent();
    expect(batch).toEqual({ projectId: 'prj_1', lines: [line('c', T2), line('d', T2)], from: 2 });
    expect(t.events).toHaveLength(1);
  });

  it('reopens a dropped stream since the last line, skipping lines of that millisecond it already has', async () => {
    const t = setup([]);
    await t.logs.follow('prj_1');
    const first = await t.connection(0);
    expect(first.query).toEqual({});
    first.send(sse(line('x', T1)) + sse(line('same', T2)));
    expect((await t.nextEvent()).lines.map((l) => l.line)).toEqual(['x', 'same']);
    first.end();

    const second = await t.connection(1);
    expect(second.query).toEqual({ since: '2025-01-01T10:00:01.999Z', limit: 5000 });
    // The platform sends the T2 line again, then a second, different line of the same millisecond.
    second.send(sse(line('same', T2)) + sse(line('also', T2)) + sse(line('new', '2025-01-01T10:00:03.000Z')));
    const batch = await t.nextEvent();
    expect(batch.lines.map((l) => l.line)).toEqual(['also', 'new']);
    expect(batch.from).toBe(2);
    expect((await t.logs.follow('prj_1')).lines.map((l) => l.line)).toEqual(['x', 'same', 'also', 'new']);
  });

  it('keeps one stream for many subscribers and closes it when the last one leaves', async () => {
    const t = setup([]);
    await t.logs.follow('prj_1');
    await t.logs.follow('prj_1');
    const stream = await t.connection(0);
    expect(t.logs.followed()).toEqual(new Map([['prj_1', 2]]));
    expect(t.logs.unfollow('prj_1')).toEqual({ projectId: 'prj_1', followers: 1 });
    expect(stream.signal.aborted).toBe(false);
    expect(t.logs.unfollow('prj_1')).toEqual({ projectId: 'prj_1', followers: 0 });
    expect(stream.signal.aborted).toBe(true);
    expect(t.logs.followed().size).toBe(0);
    await quietFor(60);
    expect(t.connections).toHaveLength(1);
    expect(t.logs.unfollow('prj_1')).toEqual({ projectId: 'prj_1', followers: 0 });
  });

  it('refuses to follow a project the platform does not know', async () => {
    const t = setup(new BridgeError('not_found', 404, 'no project prj_x'));
    await expect(t.logs.follow('prj_x')).rejects.toMatchObject({ code: 'not_found' });
    expect(t.logs.followed().size).toBe(0);
    await quietFor(30);
    expect(t.connections).toHaveLength(0);
  });

  it('follows while the platform is offline, and streams once it answers', async () => {
    const t = setup(new BridgeError('offline', 0, 'cannot reach the platform'));
    expect(await t.logs.follow('prj_1')).toEqual({ projectId: 'prj_1', lines: [], next: 0 });
    const stream = await t.connection(0);
    stream.send(sse(line('back')));
    expect((await t.nextEvent()).lines).toEqual([line('back')]);
  });

  it('drops data that is not a log line', async () => {
    const t = setup([]);
    await t.logs.follow('prj_1');
    const stream = await t.connection(0);
    stream.send(
      'event: log\ndata: not json\n\nevent: log\ndata: {"line":1}\n\ndata: {}\n\n' + sse(line('ok')),
    );
    expect((await t.nextEvent()).lines).toEqual([line('ok')]);
  });
});
