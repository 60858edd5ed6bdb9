// The Build screen's database setup (browser mode) against a platform given a real PostgreSQL server
// (WHARF_POSTGRES_URL, a server started here on loopback): an API that keeps data stops at its setup
// form with "Create a PostgreSQL database" ticked; sent without it, the form says why it cannot run;
// with it, the app runs, stores a row through its own role, and reads it back at its URL.
import type { Page } from 'playwright-core';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Project, ProjectDetail } from '../../src/shared/api/projects.js';
import { viaEdge } from '../helpers/deploy.js';
import { type TestPostgres, postgresBin, startPostgres } from '../helpers/postgres.js';
import { errorNextTo, platformApi, screenshot, useAppStack } from './stack.js';

const RUN_MS = 120_000;

describe.skipIf(!postgresBin())('building an app with a PostgreSQL database from the Build screen', () => {
  let pg: TestPostgres | undefined;
  beforeAll(async () => {
    pg = await startPostgres();
  }, 60_000);
  const ui = useAppStack({
    // The app reaches `pg` through NODE_PATH in this checkout (see below), which may lie under /tmp, and
    // the sandbox gives apps a /tmp of their own: these apps run as plain processes (one account).
    platformEnv: () => ({ WHARF_POSTGRES_URL: pg!.url, WHARF_RUNTIME: 'process' }),
    teardown: async () => {
      await pg?.stop();
    },
  });

  async function openBuild(): Promise<Page> {
    const page = await ui.open({ viewport: { width: 1280, height: 1000 } });
    await page.getByTestId('nav-build').click();
    await page.getByTestId('build-form').waitFor();
    return page;
  }

  it('creates the database from the setup form, and the app stores and reads rows at its URL', async () => {
    const page = await openBuild();
    await page.getByTestId('generator-api').check();
    await page.getByTestId('build-prompt').fill('A REST API to store books for our library');
    await page.getByTestId('build-subdomain').fill('shelf');
    await page.getByTestId('build-submit').click();
    const setup = page.getByTestId('setup-form');
    await setup.waitFor({ timeout: 60_000 });
    const database = page.getByTestId('setup-database');
    expect(await database.isChecked()).toBe(true);
    expect(await setup.innerText()).toMatch(/Create a PostgreSQL database/);

    // Without the database, the platform refuses to deploy an app that needs one, and the form says so.
    await database.uncheck();
    await page.getByTestId('setup-deploy').click();
    await expect
      .poll(() => errorNextTo(database), { timeout: 15_000 })
      .toMatch(/The app needs a PostgreSQL database: keep this on/);
    expect(await page.getByTestId('setup-error').count()).toBe(0);
    await screenshot(page, 'build-database-refused');

    // The template's one dependency (`pg`) would come from the npm registry, and these tests stay on
    // loopback: the app finds this repository's copy through NODE_PATH instead of `npm install`.
    const projects = await platformApi<Project[]>(ui.stack, '/projects');
    const shelf = projects.body.find((project) => project.subdomain === 'shelf')!;
    expect(shelf.status).toBe('created');
    const configured = await platformApi(ui.stack, `/projects/${shelf.id}/build-config`, {
      method: 'PUT',
      body: JSON.stringify({ install_cmd: 'echo "pg comes from NODE_PATH in this test"' }),
    });
    expect(configured.status).toBe(200);
    const env = await platformApi(ui.stack, `/projects/${shelf.id}`, {
      method: 'PUT',
      body: JSON.stringify({ env_vars: { NODE_PATH: join(process.cwd(), 'node_modules') } }),
    });
    expect(env.status).toBe(200);

    await database.check();
    await page.getByTestId('setup-deploy').click();
    await page.getByTestId('build-app-url').waitFor({ timeout: RUN_MS });
    const url = new URL((await page.getByTestId('build-app-url').getAttribute('href'))!);
    await screenshot(page, 'build-database-running');

    const created = await viaEdge(Number(url.port), url.hostname, '/books', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Dune', description: 'Frank Herbert' }),
    });
    expect(created.status, created.body).toBe(201);
    const listed = await viaEdge(Number(url.port), url.hostname, '/books');
    expect(listed.body).toContain('Dune');
    const health = await viaEdge(Number(url.port), url.hostname, '/health');
    expect(JSON.parse(health.body)).toMatchObject({ database: 'ok' });

    const after = await platformApi<ProjectDetail>(ui.stack, `/projects/${shelf.id}`);
    expect(after.body.project.env_vars.DATABASE_URL).toMatch(/^postgres:\/\/wharf_prj_/);
  }, 200_000);
});
