// The one place a project's status changes: each event leaves only the statuses the table allows.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../../src/server/config.js';
import { ProjectService } from '../../../src/server/projects/projects.js';
import { type StatusEvent, TRANSITIONS, transition } from '../../../src/server/runtime/status.js';
import { openStore, type Store } from '../../../src/server/store/open.js';
import { createAccount } from '../../../src/server/accounts/accounts.js';
import { testStoreLocation } from '../../helpers/test-store.js';
import { PROJECT_STATUSES, type ProjectStatus } from '../../../src/shared/api/projects.js';

describe('the status transition table', () => {
  let dir: string;
  let db: Store;
  let store: Awaited<ReturnType<typeof testStoreLocation>>;
  let projects: ProjectService;
  let accountId: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'wharf-status-'));
    store = await testStoreLocation(dir);
    db = await openStore(store.location);
    const config = resolveConfig({ dataDir: dir });
    projects = new ProjectService(db, config, 'a secret of at least thirty-two bytes!!');
    accountId = (
      await createAccount(db, { email: 'status@example.com', verified: true, plan: 'free', scopes: ['full'] })
    ).accountId;
  });
  afterAll(async () => {
    await db.destroy();
    await store.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  let n = 0;
  async function projectIn(status: ProjectStatus): Promise<string> {
    n += 1;
    const project = await projects.create(accountId, {
      name: `P${n}`,
      subdomain: `status-${n}`,
      deploy_source: 'upload',
    });
    await db.updateTable('projects').set({ status }).where('id', '=', project.id).execute();
    return project.id;
  }
  const statusOf = async (id: string) =>
    (await db.selectFrom('projects').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;

  const events: StatusEvent[] = [
    { type: 'deploy-started' },
    { type: 'served', release: '{"id":"rel_x","dir":"/x","services":[]}' },
    { type: 'deploy-failed', error: 'boom', serving: false },
    { type: 'went-down', error: 'it kept crashing' },
    { type: 'stopped' },
    { type: 'needs-setup' },
  ];

  for (const event of events) {
    for (const from of PROJECT_STATUSES) {
      const allowed = TRANSITIONS[event.type].from.includes(from);
      it(`${event.type} from ${from}: ${allowed ? `to ${TRANSITIONS[event.type].to}` : 'refused, unchanged'}`, async () => {
        const id = await projectIn(from);
        expect(await transition(projects, id, event)).toBe(allowed);
        expect(await statusOf(id)).toBe(allowed ? TRANSITIONS[event.type].to : from);
      });
    }
  }

  it('a deploy that ends after a stop does not bring `running` back', async () => {
    const id = await projectIn('building');
    await transition(projects, id, { type: 'stopped' });
    expect(await transition(projects, id, { type: 'served', release: '{}' })).toBe(false);
    expect(await statusOf(id)).toBe('stopped');
  });

  it('a failed redeploy keeps `running` and says the previous version serves', async () => {
    const id = await projectIn('building');
    await transition(projects, id, { type: 'deploy-failed', error: 'build failed', serving: true });
    const row = await db.selectFrom('projects').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(row.status).toBe('running');
    expect(row.last_deploy_error).toBe(
      'the new version failed (build failed); the previous version keeps serving',
    );
  });
});
