// The line under a project's name says what its last deploy came to: never "deployed" for a deploy
// still building or one that failed.
import { describe, expect, it } from 'vitest';
import { deployPhrase, redeployFailed } from '../../../src/renderer/src/views/projects/source.js';

const at = '2026-11-27T12:35:00.000Z';
const when = () => '12:35';

describe('deployPhrase', () => {
  it.each([
    [{ status: 'created', last_deploy_at: null, last_deploy_error: null }, 'not deployed yet'],
    [{ status: 'building', last_deploy_at: null, last_deploy_error: null }, 'first deploy under way'],
    [{ status: 'building', last_deploy_at: at, last_deploy_error: null }, 'deploy under way since 12:35'],
    [{ status: 'failed', last_deploy_at: at, last_deploy_error: 'build failed' }, 'deploy of 12:35 failed'],
    [
      { status: 'running', last_deploy_at: at, last_deploy_error: 'the new version failed (x)' },
      'deploy of 12:35 failed; the previous version serves',
    ],
    [{ status: 'running', last_deploy_at: at, last_deploy_error: null }, 'deployed 12:35'],
    [{ status: 'stopped', last_deploy_at: at, last_deploy_error: null }, 'stopped; last deployed 12:35'],
  ] as const)('%j reads "%s"', (project, phrase) => {
    expect(deployPhrase(project, when)).toBe(phrase);
  });

  it('marks a running project whose redeploy failed, and no other', () => {
    expect(redeployFailed({ status: 'running', last_deploy_error: 'the new version failed (x)' })).toBe(true);
    expect(redeployFailed({ status: 'running', last_deploy_error: null })).toBe(false);
    expect(redeployFailed({ status: 'failed', last_deploy_error: 'x' })).toBe(false);
  });
});
