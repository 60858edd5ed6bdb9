// Registry credentials of image sources: saved sealed, shown without the password, for the owner only,
// refused for projects that build their own image. (The pull with them runs in containers.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registryOf } from '../../src/server/projects/projects.js';
import { createProject } from '../helpers/deploy.js';
import { call, expectProblem, startPlatform, type TestPlatform } from '../helpers/platform.js';
import { storeBytes } from '../helpers/test-store.js';

const PASSWORD = 'reg-secret-0f9e8d7c6b5a';

describe('registry credentials', () => {
  let tp: TestPlatform;
  let imageId: string;
  let gitId: string;
  const url = (id: string) => `${tp.api}/projects/${id}/registry-credentials`;

  beforeAll(async () => {
    tp = await startPlatform();
    imageId = (
      await createProject(tp, { name: 'Private', subdomain: 'reg-private', image: 'ghcr.io/acme/app:1' })
    ).id;
    gitId = (
      await createProject(tp, { name: 'Git', subdomain: 'reg-git', repo_url: 'https://example.com/a.git' })
    ).id;
  });
  afterAll(async () => tp?.close());

  it('saves them, shows the registry and user name but never the password, and forgets them', async () => {
    const saved = await call(url(imageId), {
      key: tp.key,
      method: 'PUT',
      body: { username: 'robot', password: PASSWORD },
    });
    expect(saved.status).toBe(200);
    expect(saved.body).toEqual({ registry: 'ghcr.io', username: 'robot' });
    const shown = await call(url(imageId), { key: tp.key });
    expect(shown.body).toEqual({ registry: 'ghcr.io', username: 'robot' });
    const project = await call(`${tp.api}/projects/${imageId}`, { key: tp.key });
    expect(JSON.stringify(project.body)).not.toContain(PASSWORD);
    // Sealed in the store: the database file holds no plain password.
    const row = tp.platform.db
      .selectFrom('projects')
      .select('registry_auth_secret')
      .where('id', '=', imageId)
      .executeTakeFirstOrThrow();
    expect((await row).registry_auth_secret).not.toContain(PASSWORD);
    expect((await storeBytes(tp.dataDir, tp.databaseUrl)).includes(PASSWORD)).toBe(false);

    expect((await call(url(imageId), { key: tp.key, method: 'DELETE' })).body).toEqual({ deleted: true });
    const gone = await call<{ code: string }>(url(imageId), { key: tp.key });
    expect(gone.status).toBe(404);
    expect(gone.body.code).toBe('not_found');
  });

  it.each([
    ['no password', { username: 'robot' }, 'password'],
    ['an empty user name', { username: '', password: 'x' }, 'username'],
    ['a password with a newline', { username: 'robot', password: 'a\nb' }, 'password'],
    ['a user name that is not a string', { username: 7, password: 'x' }, 'username'],
  ])('refuses %s with 422, naming the field', async (_what, body, field) => {
    const answer = await call(url(imageId), { key: tp.key, method: 'PUT', body });
    const problem = expectProblem(answer, 422, 'validation_failed');
    expect(problem.errors?.map((e) => e.path)).toContain(field);
  });

  it('refuses a request without a body', async () => {
    const answer = await call(url(imageId), { key: tp.key, method: 'PUT' });
    expect(answer.status).toBeGreaterThanOrEqual(400);
    expect(answer.status).toBeLessThan(500);
    expect(answer.headers.get('content-type') ?? '').toMatch(/^application\/problem\+json/);
  });

  it('refuses them for a project that builds its own image (409)', async () => {
    const answer = await call<{ code: string; detail: string }>(url(gitId), {
      key: tp.key,
      method: 'PUT',
      body: { username: 'robot', password: PASSWORD },
    });
    expect(expectProblem(answer, 409, 'conflict').detail).toMatch(/image sources only/);
  });

  it('another account neither sees, sets nor deletes them (404)', async () => {
    await call(url(imageId), { key: tp.key, method: 'PUT', body: { username: 'robot', password: PASSWORD } });
    const other = await tp.newAccount();
    for (const method of ['GET', 'PUT', 'DELETE'] as const) {
      const answer = await call(url(imageId), {
        key: other.key,
        method,
        ...(method === 'PUT' ? { body: { username: 'thief', password: 'x' } } : {}),
      });
      expect(answer.status, method).toBe(404);
    }
    expect((await call(url(imageId), { key: tp.key })).body).toEqual({
      registry: 'ghcr.io',
      username: 'robot',
    });
  });

  it('names the registry of a reference as the engine does', () => {
    expect(registryOf('nginx:1.27')).toBe('docker.io');
    expect(registryOf('library/nginx')).toBe('docker.io');
    expect(registryOf('ghcr.io/acme/app:1')).toBe('ghcr.io');
    expect(registryOf('127.0.0.1:5000/app')).toBe('127.0.0.1:5000');
    expect(registryOf('localhost/app')).toBe('localhost');
  });
});
