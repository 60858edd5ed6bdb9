// `wharf releases` and `wharf rollback` without a platform: the table's columns and markers, and which
// release a rollback takes when none is named.
import { describe, expect, it } from 'vitest';
import type { Project, Release } from '../../../src/shared/api/index.js';
import { localTime } from '../../../src/cli/format.js';
import { releaseSource, releaseStatus, releaseTable } from '../../../src/cli/releases.js';
import { NothingToRollBackError, defaultRollbackTarget } from '../../../src/cli/rollback.js';

const project = { name: 'Demo', subdomain: 'demo' } as Project;

let ids = 0;
function release(patch: Partial<Release> = {}): Release {
  ids += 1;
  return {
    id: `rel_${String(ids).padStart(20, '0')}`,
    project_id: 'prj_00000000000000000001',
    status: 'retired',
    current: false,
    rollback_available: true,
    source: 'the latest upload',
    commit: null,
    image: null,
    env_vars: {},
    error: null,
    created_at: '2025-01-31T14:02:07.000Z',
    finished_at: '2025-01-31T14:02:09.000Z',
    ...patch,
  };
}

describe('the releases table', () => {
  it('marks the current release, shortens the commit, and leaves out IMAGE when no release has one', () => {
    const current = release({ status: 'running', current: true, rollback_available: false });
    const gone = release({
      rollback_available: false,
      source: 'git https://x/y.git main',
      commit: 'a'.repeat(40),
    });
    const when = localTime(current.created_at);
    expect(releaseTable([current, gone])).toEqual([
      '   RELEASE                   STATUS              CREATED              SOURCE',
      `*  ${current.id}  running             ${when}  the latest upload`,
      `   ${gone.id}  retired (not kept)  ${when}  git https://x/y.git main @ aaaaaaa`,
    ]);
  });

  it('adds an IMAGE column when a release ran an image', () => {
    const lines = releaseTable([release({ image: 'wharf/demo:rel_1' }), release()]);
    expect(lines[0]).toMatch(/SOURCE +IMAGE$/);
    expect(lines[1]).toMatch(/the latest upload {2}wharf\/demo:rel_1$/);
    expect(lines[2]).toMatch(/the latest upload$/);
  });

  it('says "not kept" only of retired releases a rollback cannot reach', () => {
    expect(releaseStatus(release())).toBe('retired');
    expect(releaseStatus(release({ rollback_available: false }))).toBe('retired (not kept)');
    expect(releaseStatus(release({ status: 'failed', rollback_available: false }))).toBe('failed');
    expect(releaseSource(release({ commit: '0123456789abcdef' }))).toBe('the latest upload @ 0123456');
  });
});

describe('defaultRollbackTarget', () => {
  it('takes the newest kept release older than the current one, skipping failed and pruned ones', () => {
    const newer = release();
    const current = release({ status: 'running', current: true, rollback_available: false });
    const failed = release({ status: 'failed', rollback_available: false });
    const pruned = release({ rollback_available: false });
    const kept = release();
    const oldest = release();
    expect(defaultRollbackTarget(project, [newer, current, failed, pruned, kept, oldest])).toBe(kept);
  });

  it('refuses when nothing older is kept, pointing to newer ones when there are', () => {
    const current = release({ status: 'running', current: true, rollback_available: false });
    expect(() => defaultRollbackTarget(project, [release(), current])).toThrow(
      new NothingToRollBackError(
        `nothing to roll back to: no release of demo ("Demo") older than the one serving now (${current.id}) is kept; name a newer one to go forward (wharf releases demo lists them)`,
      ),
    );
    expect(() => defaultRollbackTarget(project, [current, release({ rollback_available: false })])).toThrow(
      /is kept$/,
    );
  });

  it('refuses without releases, and without a current one rather than guess', () => {
    expect(() => defaultRollbackTarget(project, [])).toThrow(/has no releases yet/);
    expect(() => defaultRollbackTarget(project, [release(), release()])).toThrow(
      /^nothing serves demo \("Demo"\) now/,
    );
  });
});
