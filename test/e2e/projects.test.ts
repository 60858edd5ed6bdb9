// Projects in the desktop UI (browser mode), clicked through as a user would: creating one of each
// source, refused input, environment variables, build configuration, archive uploads and deletion.
// Each test checks what the UI shows and what the platform then holds, through its own API.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { CreateProjectRequest, Project } from '../../src/shared/api/projects.js';
import { nodeAppTarball, tarball } from '../fixtures/tarball.js';
import { errorNextTo, platformApi, screenshot, useAppStack } from './stack.js';

const ui = useAppStack();

const open = (options?: Parameters<typeof ui.open>[0]): Promise<Page> => ui.open(options);

async function apiProjects(): Promise<Project[]> {
  const { status, body } = await platformApi<Project[]>(ui.stack, '/projects');
  expect(status).toBe(200);
  return body;
}

async function apiProject(subdomain: string): Promise<Project | undefined> {
  return (await apiProjects()).find((project) => project.subdomain === subdomain);
}

/** Set-up that is not under test: a project made through the API. */
async function seedProject(request: CreateProjectRequest): Promise<Project> {
  const { status, body } = await platformApi<Project>(ui.stack, '/projects', {
    method: 'POST',
    body: JSON.stringify(request),
  });
  expect(status).toBe(201);
  return body;
}

/** The same size text as the UI's formatBytes. */
function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const kib = bytes / 1024;
  return `${kib < 10 ? kib.toFixed(1) : Math.round(kib)} KB`;
}

async function startNewProject(target: Page, name: string): Promise<void> {
  await target.getByTestId('nav-projects').click();
  await target.getByTestId('new-project').first().click();
  await target.getByTestId('create-project-form').waitFor();
  await target.getByTestId('project-name').fill(name);
}

async function openProject(target: Page, project: Pick<Project, 'name' | 'subdomain'>): Promise<void> {
  await target.getByTestId('nav-projects').click();
  await target
    .getByTestId(`project-row-${project.subdomain}`)
    .getByRole('link', { name: project.name, exact: true })
    .click();
  await target.getByTestId('project-detail').waitFor();
  await expect
    .poll(() => target.getByRole('heading', { level: 1 }).innerText(), { timeout: 5_000 })
    .toBe(project.name);
}

/** Back to the list, where the project is expected with status `created`. */
async function expectListedAsCreated(target: Page, subdomain: string): Promise<void> {
  await target.getByTestId('nav-projects').click();
  const row = target.getByTestId(`project-row-${subdomain}`);
  await row.waitFor();
  expect(await row.getAttribute('data-status')).toBe('created');
  expect(await row.getByTestId('status-badge').getAttribute('data-status')).toBe('created');
}

const archive = (name: string, data: Buffer) => ({ name, mimeType: 'application/gzip', buffer: data });

describe('creating a project', () => {
  it('creates a git project with a branch, shown with status created in the list', async () => {
    const app = await open();
    await startNewProject(app, 'Git App');
    // The subdomain is suggested from the name.
    expect(await app.getByTestId('project-subdomain').inputValue()).toBe('git-app');
    await app.getByTestId('source-git').check();
    await app.getByTestId('project-repo-url').fill('https://github.com/example/git-app.git');
    await app.getByTestId('project-branch').fill('develop');
    await app.getByTestId('create-project').click();

    await app.getByTestId('project-detail').waitFor();
    expect(
      await app.getByTestId('project-detail').getByTestId('status-badge').getAttribute('data-status'),
    ).toBe('created');
    expect(await app.getByTestId('project-url').innerText()).toContain('git-app.');
    await screenshot(app, 'project-detail-git');
    await expectListedAsCreated(app, 'git-app');

    const project = await apiProject('git-app');
    expect(project).toMatchObject({
      name: 'Git App',
      deploy_source: 'git',
      repo_url: 'https://github.com/example/git-app.git',
      branch: 'develop',
      status: 'created',
    });
  });

  it('creates a project from owner/repo on the git host', async () => {
    const app = await open();
    await startNewProject(app, 'Hosted Repo');
    await app.getByTestId('source-git-host').check();
    await app.getByTestId('project-git-host-repo').fill('example/hosted-repo');
    await app.getByTestId('create-project').click();

    await app.getByTestId('project-detail').waitFor();
    await expectListedAsCreated(app, 'hosted-repo');
    expect(await apiProject('hosted-repo')).toMatchObject({
      name: 'Hosted Repo',
      deploy_source: 'git',
      git_host_repo: 'example/hosted-repo',
      repo_url: '',
      branch: 'main',
      status: 'created',
    });
  });

  it('creates a project from a container image', async () => {
    const app = await open();
    await startNewProject(app, 'Web Server');
    await app.getByTestId('project-subdomain').fill('nginx-box');
    await app.getByTestId('source-image').check();
    await app.getByTestId('project-image').fill('nginx:1.27');
    await app.getByTestId('create-project').click();

    await app.getByTestId('project-detail').waitFor();
    await expectListedAsCreated(app, 'nginx-box');
    expect(await apiProject('nginx-box')).toMatchObject({
      name: 'Web Server',
      deploy_source: 'image',
      image: 'nginx:1.27',
      status: 'created',
    });
  });

  it('creates an upload project from a chosen .tar.gz and shows what arrived (size, files)', async () => {
    const app = await open();
    const data = nodeAppTarball();
    await startNewProject(app, 'Uploaded App');
    await app.getByTestId('source-upload').check();
    await app.getByTestId('upload-input').setInputFiles(archive('app.tar.gz', data));
    expect(await app.getByTestId('upload-drop-zone').innerText()).toContain('app.tar.gz');
    await app.getByTestId('create-project').click();

    await app.getByTestId('project-detail').waitFor();
    const result = app.getByTestId('upload-result');
    await result.waitFor();
    expect(await result.innerText()).toContain(`Uploaded app.tar.gz: ${formatBytes(data.length)}, 2 files`);
    await screenshot(app, 'project-detail-upload');

    await expectListedAsCreated(app, 'uploaded-app');
    await screenshot(app, 'projects-list');
    expect(await apiProject('uploaded-app')).toMatchObject({ deploy_source: 'upload', status: 'created' });
  });
});

describe('refused create input', () => {
  it('shows an uppercase subdomain’s error next to the field and keeps what was typed', async () => {
    const app = await open();
    await startNewProject(app, 'Shouty App');
    await app.getByTestId('project-subdomain').fill('ShoutyApp');
    await app.getByTestId('project-repo-url').fill('https://github.com/example/shouty.git');
    await app.getByTestId('project-branch').fill('release');
    await app.getByTestId('create-project').click();

    const subdomain = app.getByTestId('project-subdomain');
    await expect.poll(() => errorNextTo(subdomain), { timeout: 5_000 }).toMatch(/lowercase/i);
    expect(await subdomain.getAttribute('aria-invalid')).toBe('true');
    expect(await app.getByTestId('create-project-errors').innerText()).toMatch(/check the fields/i);
    await screenshot(app, 'create-errors');

    expect(await app.getByTestId('project-name').inputValue()).toBe('Shouty App');
    expect(await subdomain.inputValue()).toBe('ShoutyApp');
    expect(await app.getByTestId('project-repo-url').inputValue()).toBe(
      'https://github.com/example/shouty.git',
    );
    expect(await app.getByTestId('project-branch').inputValue()).toBe('release');
    expect((await apiProjects()).map((p) => p.name)).not.toContain('Shouty App');
  });

  it('refuses the reserved subdomain "api" next to the field', async () => {
    const app = await open();
    await startNewProject(app, 'Reserved');
    const subdomain = app.getByTestId('project-subdomain');
    await subdomain.fill('api');
    await app.getByTestId('source-image').check();
    await app.getByTestId('project-image').fill('nginx:1.27');
    // Said as soon as it is typed, and again once submitted.
    await expect.poll(() => errorNextTo(subdomain), { timeout: 5_000 }).toMatch(/reserved/);
    await app.getByTestId('create-project').click();
    await app.getByTestId('create-project-errors').waitFor();
    await expect.poll(() => errorNextTo(subdomain), { timeout: 5_000 }).toMatch(/reserved/);

    expect(await subdomain.inputValue()).toBe('api');
    expect(await app.getByTestId('project-image').inputValue()).toBe('nginx:1.27');
    expect(await app.getByTestId('source-image').isChecked()).toBe(true);
    expect(await apiProject('api')).toBeUndefined();
    await screenshot(app, 'create-errors-reserved');
    // Quoting the subdomain as it was typed (lowercase).
    expect(await errorNextTo(subdomain)).toContain('"api" is reserved');
  });

  it('says a taken subdomain is taken, next to the field, keeping the form', async () => {
    await seedProject({ name: 'First Owner', subdomain: 'taken-name', image: 'nginx:1.27' });
    const app = await open();
    await startNewProject(app, 'Second Owner');
    const subdomain = app.getByTestId('project-subdomain');
    await subdomain.fill('taken-name');
    await app.getByTestId('project-repo-url').fill('https://github.com/example/second.git');
    await app.getByTestId('create-project').click();

    await app.getByTestId('create-project-errors').waitFor();
    await screenshot(app, 'create-errors-taken');
    expect(await app.getByTestId('create-project-errors').innerText()).toMatch(/taken/);
    expect(await subdomain.inputValue()).toBe('taken-name');
    expect(await app.getByTestId('project-name').inputValue()).toBe('Second Owner');
    expect(await app.getByTestId('project-repo-url').inputValue()).toBe(
      'https://github.com/example/second.git',
    );
    expect((await apiProjects()).filter((p) => p.subdomain === 'taken-name').map((p) => p.name)).toEqual([
      'First Owner',
    ]);
    // Where the user looks to fix it: the subdomain field.
    expect(await errorNextTo(subdomain)).toMatch(/taken/);
    expect(await subdomain.getAttribute('aria-invalid')).toBe('true');
  });
});

describe('environment variables', () => {
  it('saves rows added in the table, then replaces the whole set with a pasted .env', async () => {
    const project = await seedProject({
      name: 'Env Vars',
      subdomain: 'env-vars',
      repo_url: 'https://github.com/example/env.git',
      env_vars: { OLD_ONLY: 'to be replaced' },
    });
    const app = await open();
    await openProject(app, project);
    const env = app.getByTestId('env-vars');
    expect(await env.getByTestId('env-name-0').inputValue()).toBe('OLD_ONLY');

    await env.getByTestId('env-remove-0').click();
    await env.getByTestId('env-add').click();
    await env.getByTestId('env-name-0').fill('DATABASE_URL');
    await env.getByTestId('env-value-0').fill('postgres://db.internal:5432/app');
    await env.getByTestId('env-add').click();
    await env.getByTestId('env-name-1').fill('GREETING');
    await env.getByTestId('env-value-1').fill('hello world');
    await env.getByTestId('save-env').click();
    await env.getByTestId('env-saved').waitFor();
    expect((await apiProject('env-vars'))?.env_vars).toEqual({
      DATABASE_URL: 'postgres://db.internal:5432/app',
      GREETING: 'hello world',
    });

    await env.getByTestId('env-bulk-toggle').click();
    const bulk = env.getByTestId('env-bulk');
    // The bulk editor starts from the saved set.
    expect(await bulk.inputValue()).toBe(
      'DATABASE_URL=postgres://db.internal:5432/app\nGREETING="hello world"\n',
    );

    // A broken line is pointed at, and nothing is saved.
    await bulk.fill('GOOD=1\nthis line has no equals sign\n');
    await env.getByTestId('save-env').click();
    await expect
      .poll(() => env.getByTestId('env-bulk-problems').innerText(), { timeout: 5_000 })
      .toMatch(/Line 2/);
    expect(await env.getByTestId('env-errors').innerText()).toMatch(/nothing was saved/i);
    expect(Object.keys((await apiProject('env-vars'))?.env_vars ?? {})).toEqual(['DATABASE_URL', 'GREETING']);

    await bulk.fill(
      [
        '# Production settings',
        'export NODE_ENV=production',
        '',
        'GREETING="hello, \\"world\\"\\nsecond line"',
        "LITERAL='no $EXPANSION or \\n here'",
        'API_URL=https://api.example.com # where the API lives',
        'EMPTY=',
        '',
      ].join('\n'),
    );
    await screenshot(app, 'env-bulk');
    await env.getByTestId('save-env').click();
    await env.getByTestId('env-saved').waitFor();

    expect((await apiProject('env-vars'))?.env_vars).toEqual({
      NODE_ENV: 'production',
      GREETING: 'hello, "world"\nsecond line',
      LITERAL: 'no $EXPANSION or \\n here',
      API_URL: 'https://api.example.com',
      EMPTY: '',
    });
    // Back in the table, one row per saved variable.
    expect(await env.getByTestId('env-name-0').inputValue()).toBe('NODE_ENV');
    expect(await env.locator('[data-testid^="env-row-"]').count()).toBe(5);
    await screenshot(app, 'env-saved', { show: env });
  });
});

describe('build configuration', () => {
  it('shows each problem of a bad configuration on its own input, saving nothing', async () => {
    const project = await seedProject({ name: 'Bad Build', subdomain: 'bad-build', image: 'nginx:1.27' });
    const app = await open({ viewport: { width: 1280, height: 1100 } });
    await openProject(app, project);
    const form = app.getByTestId('build-config');

    await form.getByTestId('build-root-dir').fill('../up');
    await form.getByTestId('build-port-override').fill('0');
    await form.getByTestId('build-replicas').fill('11');
    await form.getByTestId('add-service').click();
    await form.getByTestId('add-service').click();
    await form.getByTestId('service-0-name').fill('web');
    await form.getByTestId('service-0-start-cmd').fill('node web.js');
    await form.getByTestId('service-0-port').fill('70000');
    await form.getByTestId('service-1-name').fill('web');
    await form.getByTestId('service-1-start-cmd').fill('node other.js');
    await form.getByTestId('save-build-config').click();

    await form.getByTestId('build-config-errors').waitFor();
    await expect
      .poll(() => errorNextTo(form.getByTestId('service-0-port')), { timeout: 5_000 })
      .toMatch(/65535/);
    await screenshot(app, 'build-config-errors-at-save');
    await screenshot(app, 'build-config-errors', { show: form.getByTestId('build-config-errors') });
    expect(await errorNextTo(form.getByTestId('build-root-dir'))).toMatch(/\.\./);
    expect(await errorNextTo(form.getByTestId('build-port-override'))).toMatch(/between 1 and 65535/);
    expect(await errorNextTo(form.getByTestId('build-replicas'))).toMatch(/between 1 and 10/);
    // Naming the service as it was typed.
    expect(await errorNextTo(form.getByTestId('service-1-name'))).toContain(
      '"web" is used by another service',
    );
    expect(await errorNextTo(form.getByTestId('service-0-name'))).toBe('');
    // What was typed stays.
    expect(await form.getByTestId('service-0-port').inputValue()).toBe('70000');
    expect(await form.getByTestId('build-root-dir').inputValue()).toBe('../up');

    const saved = await apiProject('bad-build');
    expect(saved?.build_config).toMatchObject({ root_dir: '.', replicas: 1, services: [] });
  });

  it('says replicas must be a whole number before sending, then saves them', async () => {
    const project = await seedProject({ name: 'Many', subdomain: 'many', image: 'nginx:1.27' });
    const app = await open();
    await openProject(app, project);
    const form = app.getByTestId('build-config');
    expect(await form.getByTestId('build-replicas').inputValue()).toBe('1');
    await form.getByTestId('build-replicas').fill('two');
    await form.getByTestId('save-build-config').click();
    await expect
      .poll(() => errorNextTo(form.getByTestId('build-replicas')), { timeout: 5_000 })
      .toMatch(/whole number/);
    expect((await apiProject('many'))?.build_config.replicas).toBe(1);
    await form.getByTestId('build-replicas').fill('3');
    await form.getByTestId('save-build-config').click();
    await form.getByTestId('build-config-saved').waitFor();
    expect((await apiProject('many'))?.build_config.replicas).toBe(3);
    await screenshot(app, 'build-config-replicas', { show: form.getByTestId('build-replicas') });
  });

  it('saves a configuration with two services and shows their URLs', async () => {
    const project = await seedProject({ name: 'Two Services', subdomain: 'duo', image: 'nginx:1.27' });
    const app = await open();
    await openProject(app, project);
    const form = app.getByTestId('build-config');

    await form.getByTestId('build-root-dir').fill('app');
    await form.getByTestId('build-install-cmd').fill('npm ci');
    await form.getByTestId('build-start-cmd').fill('node index.js');
    await form.getByTestId('build-port-override').fill('8080');
    await form.getByTestId('add-service').click();
    await form.getByTestId('service-0-name').fill('api');
    await form.getByTestId('service-0-port').fill('4000');
    await form.getByTestId('service-0-start-cmd').fill('node api.js');
    await form.getByTestId('add-service').click();
    await form.getByTestId('service-1-name').fill('jobs');
    await form.getByTestId('service-1-kind').selectOption('worker');
    await form.getByTestId('service-1-start-cmd').fill('node jobs.js');
    await form.getByTestId('service-1-root-dir').fill('workers');
    await form.getByTestId('save-build-config').click();
    await form.getByTestId('build-config-saved').waitFor();

    const saved = await apiProject('duo');
    expect(saved?.build_config).toMatchObject({
      root_dir: 'app',
      install_cmd: 'npm ci',
      start_cmd: 'node index.js',
      port_override: 8080,
      replicas: 1,
      services: [
        { name: 'api', kind: 'web', port: 4000, start_cmd: 'node api.js' },
        { name: 'jobs', kind: 'worker', port: null, start_cmd: 'node jobs.js', root_dir: 'workers' },
      ],
    });
    // The worker serves no HTTP: only the web service has a URL.
    expect(Object.keys(saved?.service_urls ?? {})).toEqual(['api']);
    expect(await app.getByTestId('service-url-jobs').count()).toBe(0);
    for (const [name, url] of Object.entries(saved?.service_urls ?? {})) {
      const link = app.getByTestId(`service-url-${name}`);
      await link.waitFor();
      expect(await link.getAttribute('href')).toBe(url);
      expect(await link.innerText()).toContain(`duo-${name}.`);
    }
    await screenshot(app, 'build-config-saved', { show: app.getByTestId('service-url-api') });
  });
});

describe('archive uploads from the project page', () => {
  it('uploads a new archive, and refuses one with a ../ entry with the reason', async () => {
    const project = await seedProject({
      name: 'Archive Box',
      subdomain: 'archive-box',
      deploy_source: 'upload',
    });
    const app = await open();
    await openProject(app, project);
    const panel = app.getByTestId('upload-panel');
    const data = nodeAppTarball();

    await panel.getByTestId('upload-input').setInputFiles(archive('release-2.tar.gz', data));
    await panel.getByTestId('upload-submit').click();
    await panel.getByTestId('upload-result').waitFor();
    expect(await panel.getByTestId('upload-result').innerText()).toContain(
      `Uploaded release-2.tar.gz: ${formatBytes(data.length)}, 2 files`,
    );

    const evil = tarball([
      { path: 'app/index.js', content: 'console.log(1)\n' },
      { path: '../evil', content: 'escaped' },
    ]);
    await panel.getByTestId('upload-input').setInputFiles(archive('evil.tar.gz', evil));
    await panel.getByTestId('upload-submit').click();
    const error = panel.getByTestId('upload-error');
    await error.waitFor();
    expect(await error.innerText()).toContain('evil.tar.gz was not uploaded');
    expect(await error.innerText()).toMatch(/\.\./);
    expect(await panel.getByTestId('upload-result').count()).toBe(0);
    await screenshot(app, 'upload-error');
  });
});

describe('deleting a project', () => {
  it('deletes only once the name is typed, and the project is gone from the list and the API', async () => {
    const project = await seedProject({ name: 'Doomed App', subdomain: 'doomed', image: 'nginx:1.27' });
    const app = await open();
    await openProject(app, project);

    await app.getByTestId('delete-project').click();
    const dialog = app.getByTestId('delete-dialog');
    await dialog.waitFor();
    const confirm = dialog.getByTestId('confirm-delete');
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByTestId('confirm-delete-input').fill('Doomed');
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByTestId('confirm-delete-input').fill('Doomed App');
    expect(await confirm.isEnabled()).toBe(true);
    await screenshot(app, 'delete-dialog');
    await confirm.click();

    await app.getByTestId('project-list').waitFor();
    await expect.poll(() => app.getByTestId('project-row-doomed').count(), { timeout: 5_000 }).toBe(0);
    expect(await apiProject('doomed')).toBeUndefined();
    expect((await platformApi(ui.stack, `/projects/${project.id}`)).status).toBe(404);
  });
});

describe('layout', () => {
  it('stays readable at 900 px wide and in dark mode', async () => {
    const project = await seedProject({
      name: 'A project with a rather long name to see how it wraps',
      subdomain: 'long-name',
      repo_url: 'https://github.com/example-organisation/a-repository-with-a-long-name.git',
      branch: 'feature/very-long-branch-name',
    });
    const narrow = await open({ viewport: { width: 900, height: 900 } });
    await narrow.getByTestId('project-list').waitFor();
    await screenshot(narrow, 'projects-list-900');
    await openProject(narrow, project);
    await screenshot(narrow, 'project-detail-900');
    await narrow.context().close();

    const dark = await open({ colorScheme: 'dark', viewport: { width: 900, height: 900 } });
    await dark.getByTestId('project-list').waitFor();
    await screenshot(dark, 'projects-list-dark-900');
    await openProject(dark, project);
    await screenshot(dark, 'project-detail-dark-900');
    await dark.getByTestId('nav-projects').click();
    await dark.getByTestId('new-project').first().click();
    await dark.getByTestId('project-subdomain').fill('API');
    await dark.getByTestId('create-project').click();
    await dark.getByTestId('create-project-errors').waitFor();
    await screenshot(dark, 'create-errors-dark-900');
  });
});
