// How the Runtime card in Settings reads the platform's answer, and why it has none.
import { describe, expect, it } from 'vitest';
import { runtimeSummary, runtimeUnavailable } from '../../../src/renderer/src/views/settings/runtime.js';

describe('runtimeSummary', () => {
  it('names containers plainly, with the releases kept and the platform’s notes as written', () => {
    const summary = runtimeSummary({
      runtime: 'container',
      runtime_notes: [
        'apps run in containers on Docker 20.10.24+dfsg1 at /var/run/docker.sock (an engine answered)',
      ],
      keep_releases: 5,
    });
    expect(summary).toMatchObject({
      kind: 'container',
      label: 'Containers',
      keptReleases: '5 releases per project',
      notes: ['apps run in containers on Docker 20.10.24+dfsg1 at /var/run/docker.sock (an engine answered)'],
      warning: null,
    });
    expect(summary.description).toMatch(/container of its own/);
  });

  it('names the sandbox after bubblewrap, says "release" for one, and drops blank notes', () => {
    const summary = runtimeSummary({
      runtime: 'sandbox',
      runtime_notes: ['  no containers: no container engine answers at /var/run/docker.sock ', ''],
      keep_releases: 1,
    });
    expect(summary.label).toBe('Sandbox (bubblewrap)');
    expect(summary.keptReleases).toBe('1 release per project');
    expect(summary.notes).toEqual(['no containers: no container engine answers at /var/run/docker.sock']);
    expect(summary.warning).toBeNull();
  });

  it('warns that processes run as the platform’s own user, for one account, and what to install', () => {
    const summary = runtimeSummary({ runtime: 'process', runtime_notes: [], keep_releases: 3 });
    expect(summary.label).toBe('Processes');
    expect(summary.notes).toEqual([]);
    expect(summary.warning?.title).toBe('Apps run as the platform’s own user');
    expect(summary.warning?.text).toMatch(/one account only/);
    expect(summary.warning?.install.join(' ')).toMatch(/Docker or Podman.*container.*bubblewrap.*sandbox/);
  });
});

describe('runtimeUnavailable', () => {
  it('reads a 404 as a platform older than the app, as a warning', () => {
    const answer = runtimeUnavailable({
      code: 'not_found',
      status: 404,
      detail: 'no route for GET /api/v1/platform',
    });
    expect(answer.tone).toBe('warning');
    expect(answer.title).toMatch(/does not say how it runs apps/);
    expect(answer.detail).toMatch(/older than this app/);
  });

  it('says the platform cannot be reached, keeping why', () => {
    expect(
      runtimeUnavailable({
        code: 'offline',
        status: 0,
        detail: 'cannot reach the platform at http://127.0.0.1:9: nothing is listening there',
      }),
    ).toEqual({
      tone: 'error',
      title: 'The platform cannot be reached',
      detail: 'Cannot reach the platform at http://127.0.0.1:9: nothing is listening there',
    });
  });

  it('names a refused or missing key, and passes anything else through', () => {
    expect(runtimeUnavailable({ code: 'unauthorized', status: 401, detail: 'bad key' }).title).toBe(
      'The platform refused the API key',
    );
    expect(runtimeUnavailable({ code: 'not_configured', status: 400, detail: 'no key' }).title).toBe(
      'No API key is saved',
    );
    expect(runtimeUnavailable({ code: 'internal', status: 500, detail: 'boom' })).toEqual({
      tone: 'error',
      title: 'The runtime could not be loaded',
      detail: 'Boom',
    });
  });
});
