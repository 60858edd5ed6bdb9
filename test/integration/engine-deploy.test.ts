// The Engine's deploy operations against a real platform (runtime and edge included): deploy, live logs
// through logs.follow and `project-logs` events, `deploy-finished` when a deploy ends, stop, and the
// platform's log streams closed once nobody follows them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { BridgeSession } from '../../src/core/bridge-session.js';
import { Engine } from '../../src/core/engine.js';
import { startInspector } from '../../src/core/inspector/server.js';
import { FileSecretStore } from '../../src/core/secret-store.js';
import type { LogLine } from '../../src/shared/api/projects.js';
import { BridgeError, type BridgeEvents, type ProjectLogsEvent } from '../../src/shared/bridge.js';
import { archiveOf, nodeApp, viaEdge } from '../helpers/deploy.js';
import { quietFor, until } from '../helpers/poll.js';
import { startPlatform, type TestPlatform } from '../helpers/platform.js';

let tp: TestPlatform;
const dirs: string[] = [];
const engines: Engine[] = [];
/** Log streams the platform serves right now (its follow subscriptions). */
let openStreams = 0;

beforeAll(async () => {
  tp = await startPlatform({ healthTimeoutMs: 15_000, workerGraceMs: 300 });
  const follow = tp.platform.logs.follow.bind(tp.platform.logs);
  vi.spyOn(tp.platform.logs, 'follow').mockImplementation((projectId, listener) => {
    openStreams++;
    const unfollow = follow(projectId, listener);
    let done = false;
    return () => {
      if (!done) openStreams--;
      done = true;
      unfollow();
    };
  });
});
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close();
  await until(() => openStreams === 0, 'the platform’s log streams to close');
});
afterAll(async () => {
  await tp?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function newEngine(): Engine {
  const home = mkdtempSync(join(tmpdir(), 'wharf-engine-deploy-'));
  dirs.push(home);
  const engine = new Engine({
    home,
    secrets: new FileSecretStore(join(home, 'secrets.json')),
    localPlatform: async () => ({ url: tp.api.replace(/\/api\/v1$/, ''), apiKey: tp.key }),
    pollIntervalMs: 100,
    buildingPollIntervalMs: 100,
  });
  engines.push(engine);
  return engine;
}

/** Everything the Engine emits of one event, until `off()`. */
function record<E extends keyof BridgeEvents>(engine: Engine, event: E) {
  const seen: Array<BridgeEvents[E]> = [];
  const off = engine.on(event, (payload) => seen.push(payload));
  return { seen, off };
}

let serial = 0;
async function uploadProject(engine: Engine, files: Record<string, string> | null) {
  serial++;
  const project = await engine.invoke('projects.create', {
    name: `Engine deploy ${serial}`,
    subdomain: `engine-deploy-${serial}`,
    deploy_source: 'upload',
  });
  if (files) {
    await engine.invoke('projects.upload', {
      id: project.id,
      fileName: 'app.tar.gz',
      data: new Uint8Array(archiveOf(files)),
    });
  }
  return project;
}

const linesOf = (events: ProjectLogsEvent[], projectId: string): LogLine[] =>
  events.filter((e) => e.projectId === projectId).flatMap((e) => e.lines);

const failingApp = {
  'package.json': JSON.stringify({ name: 'broken', scripts: { start: 'node server.js' } }),
  'server.js':
    "console.log('booting the broken app'); console.error('missing DATABASE_URL'); process.exit(3);\n",
};

describe('deploying through the Engine', () => {
  it('deploys, streams the build and runtime lines live, and reports the deploy running', async () => {
    const engine = newEngine();
    const logs = record(engine, 'project-logs');
    const finished = record(engine, 'deploy-finished');
    const project = await uploadProject(engine, nodeApp('hello from the engine'));

    const follow = await engine.invoke('logs.follow', { id: project.id });
    expect(follow).toEqual({ projectId: project.id, lines: [], next: 0 });
    const accepted = await engine.invoke('projects.deploy', { id: project.id });
    expect(accepted.status).toBe('building');

    await until(() => finished.seen.some((e) => e.project.id === project.id), 'deploy-finished', 30_000);
    const event = finished.seen.find((e) => e.project.id === project.id)!;
    expect(event.outcome).toBe('running');
    expect(event.project).toMatchObject({ status: 'running', last_deploy_error: null });

    // The status and the log lines reach the Engine by separate polls, so the
    // "running at" line may arrive a poll after deploy-finished.
    await until(
      () =>
        linesOf(logs.seen, project.id).some((l) => /^listening on \d+$/.test(l.line)) &&
        linesOf(logs.seen, project.id).some((l) => l.stream === 'system' && /^running at /.test(l.line)),
      'the app’s own line and the "running at" line in project-logs',
    );
    const lines = linesOf(logs.seen, project.id);
    expect(lines.some((l) => l.stream === 'build')).toBe(true);
    expect(lines.some((l) => l.stream === 'runtime')).toBe(true);
    expect(lines.some((l) => l.stream === 'system' && /^running at /.test(l.line))).toBe(true);
    // Numbered without gaps or repeats, batch after batch.
    const batches = logs.seen.filter((e) => e.projectId === project.id);
    let expected = 0;
    for (const batch of batches) {
      expect(batch.from).toBe(expected);
      expected += batch.lines.length;
    }
    // The same lines as the platform has, in the same order.
    const stored = await engine.invoke('projects.logs', { id: project.id, limit: 1000 });
    expect(lines.map((l) => l.line)).toEqual(stored.map((l) => l.line));

    const answer = await viaEdge(tp.edgePort, `${project.subdomain}.localhost`, '/ok');
    expect(answer.body).toBe('hello from the engine /ok');

    // One deploy, one event, even though polling goes on.
    await quietFor(300);
    expect(finished.seen.filter((e) => e.project.id === project.id)).toHaveLength(1);
    logs.off();
    finished.off();
  });

  it('reports a failed deploy with its error, and a failed redeploy of a running app', async () => {
    const engine = newEngine();
    const finished = record(engine, 'deploy-finished');
    const logs = record(engine, 'project-logs');
    const project = await uploadProject(engine, failingApp);
    await engine.invoke('logs.follow', { id: project.id });
    await engine.invoke('projects.deploy', { id: project.id });
    await until(() => finished.seen.length > 0, 'deploy-finished for the failing app', 30_000);
    expect(finished.seen[0]).toMatchObject({
      outcome: 'failed',
      project: { id: project.id, status: 'failed', last_deploy_error: expect.any(String) },
    });
    await until(
      () => linesOf(logs.seen, project.id).some((l) => l.line === 'missing DATABASE_URL'),
      'the app’s stderr line',
    );

    // Now a good version, then a broken redeploy: the good one keeps serving.
    await engine.invoke('projects.upload', {
      id: project.id,
      fileName: 'good.tar.gz',
      data: new Uint8Array(archiveOf(nodeApp('still serving'))),
    });
    await engine.invoke('projects.deploy', { id: project.id });
    await until(() => finished.seen.length > 1, 'deploy-finished for the good version', 30_000);
    expect(finished.seen[1]).toMatchObject({ outcome: 'running', project: { status: 'running' } });

    await engine.invoke('projects.upload', {
      id: project.id,
      fileName: 'broken.tar.gz',
      data: new Uint8Array(archiveOf(failingApp)),
    });
    await engine.invoke('projects.deploy', { id: project.id });
    await until(() => finished.seen.length > 2, 'deploy-finished for the broken redeploy', 30_000);
    expect(finished.seen[2]).toMatchObject({
      outcome: 'failed',
      project: { status: 'running', last_deploy_error: expect.stringMatching(/previous version/) },
    });
    expect((await viaEdge(tp.edgePort, `${project.subdomain}.localhost`, '/')).body).toBe('still serving /');
    await engine.invoke('logs.unfollow', { id: project.id });
    logs.off();
    finished.off();
  });

  it('stops a running project', async () => {
    const engine = newEngine();
    const finished = record(engine, 'deploy-finished');
    const project = await uploadProject(engine, nodeApp('to stop'));
    await engine.invoke('projects.deploy', { id: project.id });
    await until(() => finished.seen.length > 0, 'deploy-finished', 30_000);
    const stopped = await engine.invoke('projects.stop', { id: project.id });
    expect(stopped.status).toBe('stopped');
    const list = await engine.invoke('projects.list', undefined);
    expect(list.projects.find((p) => p.id === project.id)?.status).toBe('stopped');
    finished.off();
  });

  it('passes the platform’s upload_required refusal through', async () => {
    const engine = newEngine();
    const project = await uploadProject(engine, null);
    const error = await engine.invoke('projects.deploy', { id: project.id }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(BridgeError);
    expect(error).toMatchObject({ code: 'upload_required', status: 409 });
  });
});

describe('following logs', () => {
  it('releases what a Bridge session followed when its client goes, and nothing of another client', async () => {
    const engine = newEngine();
    const project = await uploadProject(engine, null);
    const page = new BridgeSession(engine);
    await page.invoke('logs.follow', { id: project.id });
    await page.invoke('logs.follow', { id: project.id });
    expect(await page.invoke('logs.unfollow', { id: project.id })).toMatchObject({ followers: 1 });
    await page.invoke('logs.follow', { id: project.id });
    // Another client, following on its own.
    await engine.invoke('logs.follow', { id: project.id });
    await until(() => openStreams === 1, 'one platform stream');

    await page.release();
    // Only the other client's follow is left: its unfollow is the last.
    expect(await engine.invoke('logs.unfollow', { id: project.id })).toEqual({
      projectId: project.id,
      followers: 0,
    });
    await until(() => openStreams === 0, 'the platform stream to close');
    // Released once: a second release unfollows nothing more.
    await page.release();
  });

  it('keeps one platform stream per project, however many follow it, and closes it after the last', async () => {
    const engine = newEngine();
    const logs = record(engine, 'project-logs');
    const project = await uploadProject(engine, null);
    await engine.invoke('logs.follow', { id: project.id });
    await engine.invoke('logs.follow', { id: project.id });
    await until(() => openStreams === 1, 'one platform stream');

    await tp.platform.logs.append(project.id, [{ stream: 'system', service: null, line: 'hello followers' }]);
    await until(() => linesOf(logs.seen, project.id).length === 1, 'the line');
    expect(logs.seen).toEqual([
      { projectId: project.id, lines: [expect.objectContaining({ line: 'hello followers' })], from: 0 },
    ]);

    expect(await engine.invoke('logs.unfollow', { id: project.id })).toEqual({
      projectId: project.id,
      followers: 1,
    });
    await quietFor(100);
    expect(openStreams).toBe(1);
    expect(await engine.invoke('logs.unfollow', { id: project.id })).toEqual({
      projectId: project.id,
      followers: 0,
    });
    await until(() => openStreams === 0, 'the platform stream to close');

    // Nothing more arrives once unfollowed.
    await tp.platform.logs.append(project.id, [{ stream: 'system', service: null, line: 'after' }]);
    await quietFor(150);
    expect(linesOf(logs.seen, project.id).map((l) => l.line)).toEqual(['hello followers']);

    // A later follower gets what was written meanwhile as the answer's backlog.
    const again = await engine.invoke('logs.follow', { id: project.id });
    expect(again.lines.map((l) => l.line)).toEqual(['hello followers', 'after']);
    expect(again.next).toBe(2);
    await engine.invoke('logs.unfollow', { id: project.id });
    logs.off();
  });

  it('closes the streams when the last project-logs listener leaves, and when the Engine closes', async () => {
    const engine = newEngine();
    const a = await uploadProject(engine, null);
    const b = await uploadProject(engine, null);
    const logs = record(engine, 'project-logs');
    await engine.invoke('logs.follow', { id: a.id });
    await engine.invoke('logs.follow', { id: b.id });
    await until(() => openStreams === 2, 'two platform streams');
    logs.off();
    await until(() => openStreams === 0, 'both streams to close with the last listener');

    const again = record(engine, 'project-logs');
    await engine.invoke('logs.follow', { id: a.id });
    await until(() => openStreams === 1, 'a stream again');
    await engine.close();
    await until(() => openStreams === 0, 'the stream to close with the Engine');
    again.off();
  });

  it('refuses to follow a project that does not exist', async () => {
    const engine = newEngine();
    const error = await engine.invoke('logs.follow', { id: 'prj_doesnotexist0000' }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'not_found' });
    expect(openStreams).toBe(0);
  });

  it('over the inspector, unfollows what a page followed when its event socket closes', async () => {
    const engine = newEngine();
    const project = await uploadProject(engine, null);
    const inspector = await startInspector({ bridge: engine, port: 0, staticDir: null, token: 'test-token' });
    try {
      const socket = new WebSocket(`ws://127.0.0.1:${inspector.port}/bridge/events`, {
        headers: { origin: inspector.origin },
      });
      const messages: Array<{ type: string; session?: string; event?: string; payload?: unknown }> = [];
      socket.on('message', (data) => messages.push(JSON.parse(String(data)) as (typeof messages)[number]));
      await new Promise((resolve) => socket.once('open', resolve));
      socket.send(JSON.stringify({ type: 'auth', token: 'test-token' }));
      await until(() => messages.some((m) => m.type === 'ready'), 'the ready message');
      const session = messages.find((m) => m.type === 'ready')!.session;
      expect(session).toMatch(/^[\w-]{16,}$/);

      const invoke = (operation: string, input: unknown, withSession = true) =>
        fetch(`${inspector.origin}/bridge/invoke/${operation}`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-wharf-token': 'test-token',
            ...(withSession ? { 'x-wharf-session': session! } : {}),
          },
          body: JSON.stringify(input),
        }).then((response) => response.json() as Promise<{ ok: boolean; value: unknown }>);

      // Followed twice by this page, unfollowed once: one follow is left when the page goes.
      expect((await invoke('logs.follow', { id: project.id })).ok).toBe(true);
      expect((await invoke('logs.follow', { id: project.id })).ok).toBe(true);
      expect((await invoke('logs.unfollow', { id: project.id })).value).toEqual({
        projectId: project.id,
        followers: 1,
      });
      await until(() => openStreams === 1, 'the platform stream');
      await tp.platform.logs.append(project.id, [{ stream: 'system', service: null, line: 'to the page' }]);
      await until(
        () => messages.some((m) => m.type === 'event' && m.event === 'project-logs'),
        'project-logs over the socket',
      );
      expect(messages.find((m) => m.event === 'project-logs')?.payload).toEqual({
        projectId: project.id,
        lines: [expect.objectContaining({ line: 'to the page' })],
        from: 0,
      });

      // Another subscriber (no session) keeps the stream open while the page's follow goes away.
      const other = record(engine, 'project-logs');
      await engine.invoke('logs.follow', { id: project.id });
      socket.close();
      await quietFor(200);
      expect(openStreams).toBe(1);
      // The page's follow was given back for it: the other subscriber is the last one.
      expect(await engine.invoke('logs.unfollow', { id: project.id })).toEqual({
        projectId: project.id,
        followers: 0,
      });
      await until(() => openStreams === 0, 'the stream to close');
      other.off();
    } finally {
      await inspector.close();
    }
  });
});
