// Deploys end to end: real platform, real runtime, real edge, fixture apps the tests create.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestPlatform, startPlatform } from '../helpers/platform.js';
import {
  createProject,
  deploy,
  gitRepo,
  nodeApp,
  settled,
  viaEdge,
  waitFor,
} from '../helpers/deploy.js';

let tp: TestPlatform;
let repos: string;

beforeAll(async () => {
  repos = mkdtempSync(join(tmpdir(), 'wharf-repos-'));
  tp = await startPlatform({ healthTimeoutMs: 10_000, gitHostUrl: `file://${repos}` });
});

afterAll(async () => {
  await tp?.close();
  rmSync(repos, { recursive: true, force: true });
});

describe('deploy from git', () => {
  it('clones a file:// repository, detects Node, runs it and serves it at its host', async () => {
    const url = gitRepo(repos, 'git-app', nodeApp('hello from git'));
    const project = await createProject(tp, { name: 'Git app', subdomain: 'git-app', repo_url: url });
    const accepted = await deploy(tp, project.id);
    expect(accepted.status).toBe('building');
    const { project: running, logs } = await waitFor(tp, project.id, settled);
    expect(running.status, logs.map((l) => l.line).join('\n')).toBe('running');
    const lines = logs.map((l) => l.line);
    expect(lines).toContainEqual(expect.stringMatching(/^detected Node\.js: package\.json found/));
    expect(lines).toContain('listening on ' + lines.find((l) => l.startsWith('listening on '))!.slice(13));
    const answer = await viaEdge(tp.edgePort, 'git-app.localhost', '/x');
    expect(answer.status).toBe(200);
    expect(answer.body).toBe('hello from git /x');
  });
});
