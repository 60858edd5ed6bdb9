// `wharf platform --no-local-repos` (config `localRepos: false`, issue 13 item 11): tenants may not name
// any file:// repository, yet the AI builder's own repository of a project, which the platform itself
// writes under <dataDir>/ai-repos, still deploys. Offline builds from the templates, on 127.0.0.1.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AiBuildResponse } from '../../src/shared/api/ai.js';
import type { Project, ProjectStatus } from '../../src/shared/api/projects.js';
import { gitRepo, logLines, nodeApp, settled, viaEdge, waitFor } from '../helpers/deploy.js';
import { type TestPlatform, call, expectProblem, startPlatform } from '../helpers/platform.js';

const OUTCOME_MS = 90_000;
const repos = mkdtempSync(join(tmpdir(), 'wharf-no-local-'));
let tp: TestPlatform;

beforeAll(async () => {
  tp = await startPlatform({ localRepos: false, healthTimeoutMs: 20_000, limits: { builds: 20 } });
});

afterAll(async () => {
  await tp?.close();
  rmSync(repos, { recursive: true, force: true });
});

async function outcome(projectId: string): Promise<ProjectStatus> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no outcome for ${projectId} in ${OUTCOME_MS} ms`)),
      OUTCOME_MS,
    );
  });
  try {
    return await Promise.race([tp.platform.aiBuilder.waitForOutcome(projectId), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describe('a platform with local repositories off', () => {
  let built: Project;

  it(
    "deploys an AI build from the platform's own generated repository, and it runs",
    async () => {
      const result = await call<AiBuildResponse>(`${tp.api}/ai/build`, {
        key: tp.key,
        body: {
          generator: 'landing',
          prompt: 'A landing page for a bakery in Porto with opening hours',
          subdomain: 'bakery',
        },
      });
      expect(result.status, JSON.stringify(result.body)).toBe(202);
      if (result.body.status !== 'building')
        throw new Error(`expected building: ${JSON.stringify(result.body)}`);
      built = result.body.project;
      expect(built.repo_url).toBe(`file://${join(tp.dataDir, 'ai-repos', built.id)}`);
      const status = await outcome(built.id);
      expect(status, (await logLines(tp, built.id)).join('\n')).toBe('running');
      const home = await viaEdge(tp.edgePort, 'bakery.localhost', '/');
      expect(home.status).toBe(200);
      expect(home.body.toLowerCase()).toContain('bakery');
    },
    OUTCOME_MS + 10_000,
  );

  it('redeploys that project from its own repository', async () => {
    const started = await call<Project>(`${tp.api}/projects/${built.id}/deploy`, {
      key: tp.key,
      method: 'POST',
    });
    expect(started.status).toBe(202);
    const detail = await waitFor(tp, built.id, settled, 60_000);
    expect(detail.project.status, detail.logs.map((l) => l.line).join('\n')).toBe('running');
    expect(detail.project.last_deploy_error).toBeNull();
  });

  it("refuses a tenant's own file:// repo_url with 422, naming --no-local-repos", async () => {
    const url = gitRepo(repos, 'mine', nodeApp());
    const other = await tp.newAccount();
    const refused = await call(`${tp.api}/projects`, {
      key: other.key,
      body: { name: 'Local', subdomain: 'local-repo', repo_url: url },
    });
    expect(expectProblem(refused, 422, 'validation_failed').errors).toContainEqual({
      path: 'repo_url',
      message: expect.stringMatching(/--no-local-repos/),
    });
  });

  it("refuses a tenant naming the AI build's repository, its own project's or another's, with 422", async () => {
    for (const key of [tp.key, (await tp.newAccount()).key]) {
      const refused = await call(`${tp.api}/projects`, {
        key,
        body: {
          name: 'Copy',
          subdomain: 'copy-ai',
          repo_url: `file://${join(tp.dataDir, 'ai-repos', built.id)}`,
        },
      });
      expectProblem(refused, 422, 'validation_failed');
    }
  });
});
