// When the Engine says a deploy ended (deploy-finished), and what the desktop notification says then.
import { describe, expect, it } from 'vitest';
import { deployOutcome, type DeployState } from '../../../src/core/deploy-watch.js';
import { deployFinishedNotice, deployRefusedNotice } from '../../../src/core/menus/deploy-notice.js';
import type { Project } from '../../../src/shared/api/index.js';

const T1 = '2025-01-01T10:00:00.000Z';
const T2 = '2025-01-01T11:00:00.000Z';

const state = (
  status: DeployState['status'],
  last_deploy_at: string | null = T1,
  last_deploy_error: string | null = null,
): DeployState => ({ status, last_deploy_at, last_deploy_error });

describe('deployOutcome', () => {
  it('reports building → running and building → failed', () => {
    expect(deployOutcome(state('building'), state('running'))).toBe('running');
    expect(deployOutcome(state('building'), state('failed', T1, 'npm start exited with 1'))).toBe('failed');
  });

  it('reports a redeploy that failed while the previous version keeps serving as failed', () => {
    expect(deployOutcome(state('building'), state('running', T1, 'the new version failed'))).toBe('failed');
  });

  it('says nothing while building, for a stop, or when nothing changed', () => {
    expect(deployOutcome(state('running'), state('building', T2))).toBeNull();
    expect(deployOutcome(state('created', null), state('building'))).toBeNull();
    expect(deployOutcome(state('building'), state('stopped'))).toBeNull();
    expect(deployOutcome(state('running'), state('stopped'))).toBeNull();
    expect(deployOutcome(state('running'), state('running'))).toBeNull();
    expect(deployOutcome(state('failed', T1, 'x'), state('failed', T1, 'x'))).toBeNull();
  });

  it('notices a whole deploy that happened between two looks (a new last_deploy_at)', () => {
    expect(deployOutcome(state('running', T1), state('running', T2))).toBe('running');
    expect(deployOutcome(state('created', null), state('running', T2))).toBe('running');
    expect(deployOutcome(state('failed', T1, 'old'), state('failed', T2, 'new'))).toBe('failed');
  });

  it('notices last_deploy_error appearing', () => {
    expect(deployOutcome(state('running'), state('running', T1, 'the new version failed'))).toBe('failed');
    expect(deployOutcome(state('running'), state('failed', T1, 'web kept crashing'))).toBe('failed');
  });
});

function project(extra: Partial<Project> = {}): Project {
  return {
    id: 'prj_00000001',
    name: 'Shop',
    subdomain: 'shop',
    repo_url: '',
    git_host_repo: '',
    branch: '',
    image: '',
    deploy_source: 'upload',
    env_vars: {},
    build_config: {
      root_dir: '.',
      install_cmd: null,
      build_cmd: null,
      start_cmd: null,
      port_override: null,
      replicas: 1,
      services: [],
    },
    status: 'running',
    url: 'http://shop.localhost:8788',
    service_urls: {},
    created_at: T1,
    updated_at: T1,
    last_deploy_at: T1,
    last_deploy_error: null,
    ...extra,
  };
}

describe('deploy notices', () => {
  it('says where a running project is', () => {
    expect(deployFinishedNotice({ project: project(), outcome: 'running' })).toEqual({
      title: 'Shop is running',
      body: 'Shop is running at http://shop.localhost:8788',
    });
  });

  it('says why a deploy failed, shortened to fit a notification', () => {
    const failed = deployFinishedNotice({
      project: project({ status: 'failed', last_deploy_error: 'npm start exited with code 1' }),
      outcome: 'failed',
    });
    expect(failed).toEqual({
      title: 'Shop failed to deploy',
      body: 'Shop failed to deploy: npm start exited with code 1',
    });
    const long = deployFinishedNotice({
      project: project({ status: 'failed', last_deploy_error: 'x'.repeat(500) }),
      outcome: 'failed',
    });
    expect(long.body.length).toBeLessThan(240);
    expect(long.body.endsWith('…')).toBe(true);
  });

  it('says why a deploy from the tray was refused', () => {
    expect(
      deployRefusedNotice(
        { name: 'Shop' },
        { code: 'upload_required', status: 409, detail: 'project Shop deploys from an upload' },
      ),
    ).toEqual({ title: 'Shop was not deployed', body: 'Project Shop deploys from an upload' });
  });
});
