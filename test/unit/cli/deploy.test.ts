// `wharf deploy --follow`: reading the outcome from the project, the phase from the log, and the
// progress line on a terminal.
import { describe, expect, it } from 'vitest';
import type { LogLine, Project } from '../../../src/shared/api/index.js';
import {
  Progress,
  initialPhase,
  outcomeOf,
  phaseAfter,
  urlLines,
  type Terminal,
} from '../../../src/cli/deploy.js';

function project(patch: Partial<Project> = {}): Project {
  return {
    id: 'prj_00000000000000000001',
    name: 'Demo',
    subdomain: 'demo',
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
    status: 'building',
    url: 'http://demo.localhost:8788',
    service_urls: {},
    created_at: '2025-01-01T00:00:00.000Z',
    updated_at: '2025-01-01T00:00:00.000Z',
    last_deploy_at: '2025-01-01T00:00:00.000Z',
    last_deploy_error: null,
    ...patch,
  };
}

const line = (stream: LogLine['stream'], text: string): LogLine => ({
  ts: '2025-01-01T00:00:01.000Z',
  stream,
  service: null,
  line: text,
});

describe('outcomeOf', () => {
  it('waits while the project builds', () => {
    expect(outcomeOf(project())).toEqual({ done: false });
  });

  it('succeeds when it runs without a deploy error', () => {
    expect(outcomeOf(project({ status: 'running' }))).toEqual({ done: true, ok: true });
  });

  it('fails with the error when the deploy failed, also when the previous version keeps running', () => {
    expect(outcomeOf(project({ status: 'failed', last_deploy_error: 'install failed' }))).toEqual({
      done: true,
      ok: false,
      reason: 'install failed',
    });
    expect(outcomeOf(project({ status: 'running', last_deploy_error: 'the new version failed' }))).toEqual({
      done: true,
      ok: false,
      reason: 'the new version failed',
    });
  });

  it('fails when the project was stopped, or failed without saying why', () => {
    expect(outcomeOf(project({ status: 'stopped' }))).toMatchObject({
      ok: false,
      reason: 'the project was stopped during the deploy',
    });
    expect(outcomeOf(project({ status: 'failed' }))).toMatchObject({
      ok: false,
      reason: 'the project is failed (the platform gave no reason)',
    });
  });
});

describe('phases', () => {
  it('starts from the source', () => {
    expect(initialPhase(project({ deploy_source: 'git' }))).toBe('cloning');
    expect(initialPhase(project({ deploy_source: 'upload' }))).toBe('unpacking');
    expect(initialPhase(project({ deploy_source: 'image' }))).toBe('pulling');
  });

  it("follows the runtime's lines: clone, install and build commands, pull, start", () => {
    const steps: Array<[LogLine, string]> = [
      [line('build', 'cloning file:///repo.git (branch main)'), 'cloning'],
      [line('build', 'Cloning into …'), 'cloning'],
      [line('build', '$ npm ci'), 'installing'],
      [line('build', 'added 120 packages'), 'installing'],
      [line('build', '$ npm run build'), 'building'],
      [line('build', '$ pip install -r requirements.txt'), 'installing'],
      [line('build', '$ yarn'), 'installing'],
      [line('build', '$ make'), 'building'],
      [line('runtime', '$ not a command line'), 'building'],
      [line('system', 'starting the app: npm run start (PORT=4000)'), 'starting'],
      [line('build', 'pulling nginx:1.27'), 'pulling'],
    ];
    let phase = initialPhase(project({ deploy_source: 'git' }));
    for (const [next, expected] of steps) {
      phase = phaseAfter(next, phase);
      expect(phase, next.line).toBe(expected);
    }
  });
});

describe('Progress', () => {
  function terminal(isTTY: boolean): Terminal & { text: string } {
    const t = { isTTY, text: '', write: (s: string) => void (t.text += s) };
    return t;
  }

  it('rewrites one line in place with the phase and the seconds since the start', () => {
    let now = 1_000;
    const tty = terminal(true);
    const progress = new Progress(tty, 'Demo', 'installing', 1_000, () => now);
    progress.render();
    now = 13_500;
    progress.phase = 'building';
    progress.render();
    expect(tty.text).toBe(
      '\r\x1b[2KDeploying Demo: installing (0 s)\r\x1b[2KDeploying Demo: building (12 s)',
    );
    progress.clear();
    progress.clear();
    expect(tty.text.endsWith('(12 s)\r\x1b[2K')).toBe(true);
    progress.stop();
  });

  it('writes nothing when stderr is not a terminal', () => {
    const pipe = terminal(false);
    const progress = new Progress(pipe, 'Demo', 'cloning');
    progress.start();
    progress.render();
    progress.clear();
    progress.stop();
    expect(pipe.text).toBe('');
  });
});

describe('urlLines', () => {
  it('prints the URL, and each service URL aligned below it', () => {
    expect(
      urlLines(
        project({
          status: 'running',
          service_urls: { web: 'http://demo-web.localhost:8788', admin: 'http://demo-admin.localhost:8788' },
        }),
      ),
    ).toEqual([
      'Demo is running at http://demo.localhost:8788',
      '  web    http://demo-web.localhost:8788',
      '  admin  http://demo-admin.localhost:8788',
    ]);
  });
});
