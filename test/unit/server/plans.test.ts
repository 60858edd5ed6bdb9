// The operator's plans file and what a plan gives each project.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../../src/server/config.js';
import { PlansFileError, loadPlans } from '../../../src/server/plans.js';
import { describeLimits, planLimits } from '../../../src/server/runtime/resources.js';

const dir = mkdtempSync(join(tmpdir(), 'wharf-plans-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

describe('loadPlans', () => {
  it('reads <data-dir>/plans.json when no file is named, and nothing when there is none', () => {
    const dataDir = mkdtempSync(join(dir, 'data-'));
    expect(loadPlans(dataDir)).toBeNull();
    const plans = { hobby: { allowance_usd: 0, memory_mib: 256 } };
    writeFileSync(join(dataDir, 'plans.json'), JSON.stringify({ plans }));
    expect(loadPlans(dataDir)).toEqual({ plans, defaultPlan: 'hobby', file: join(dataDir, 'plans.json') });
  });

  it('takes a named file before the data dir’s, with its default plan', () => {
    const path = file('named.json', {
      default_plan: 'team',
      plans: { solo: { allowance_usd: 5 }, team: { allowance_usd: 50, cpus: 2, pids: 500 } },
    });
    expect(loadPlans(dir, path)).toMatchObject({ defaultPlan: 'team', file: path });
  });

  it.each([
    ['a missing named file', undefined, /there is no such file/],
    ['text that is not JSON', '{ plans: ', /is not JSON/],
    ['no plan at all', { plans: {} }, /plans: name at least one plan/],
    [
      'two plans and no default',
      { plans: { a: { allowance_usd: 1 }, b: { allowance_usd: 2 } } },
      /default_plan: say which plan/,
    ],
    [
      'a default that is not a plan',
      { default_plan: 'gold', plans: { a: { allowance_usd: 1 } } },
      /"gold" is not one of the plans \(a\)/,
    ],
    ['a negative memory', { plans: { a: { allowance_usd: 1, memory_mib: -5 } } }, /plans\.a\.memory_mib/],
    ['a fractional process count', { plans: { a: { allowance_usd: 1, pids: 1.5 } } }, /plans\.a\.pids/],
    ['CPU as a string', { plans: { a: { allowance_usd: 1, cpus: '2' } } }, /plans\.a\.cpus/],
    ['no allowance', { plans: { a: { memory_mib: 5 } } }, /plans\.a\.allowance_usd/],
    ['a field it does not know', { plans: { a: { allowance_usd: 1, memory: 5 } } }, /plans\.a.*memory/],
    ['a name with capitals', { plans: { Gold: { allowance_usd: 1 } } }, /lowercase/],
  ])('refuses %s, naming what is wrong', (_what, content, message) => {
    const path =
      content === undefined ? join(dir, 'absent.json') : file(`bad-${Math.random()}.json`, content);
    expect(() => loadPlans(dir, path)).toThrow(PlansFileError);
    expect(() => loadPlans(dir, path)).toThrow(message);
  });
});

describe('planLimits', () => {
  const config = resolveConfig({
    plans: {
      small: { allowance_usd: 1, memory_mib: 128, cpus: 0.5, pids: 64 },
      open: { allowance_usd: 1, memory_mib: 0, cpus: 0, pids: 0 },
      some: { allowance_usd: 1, pids: 10 },
    },
    sandbox: { memoryMiB: 1024, cpus: 2, pids: 500 },
  });

  it('gives a plan’s own ceilings, the defaults for what it leaves out, and none for 0', () => {
    expect(planLimits(config, 'small')).toEqual({ memoryBytes: 128 * 1024 * 1024, cpus: 0.5, pids: 64 });
    expect(planLimits(config, 'some')).toEqual({ memoryBytes: 1024 * 1024 * 1024, cpus: 2, pids: 10 });
    expect(planLimits(config, 'open')).toEqual({ memoryBytes: null, cpus: null, pids: null });
  });

  it('gives an account on a plan the config no longer knows the defaults', () => {
    expect(planLimits(config, 'retired')).toEqual(
      planLimits(resolveConfig({ sandbox: config.sandbox }), 'x'),
    );
  });

  it('describes limits in words', () => {
    expect(describeLimits(planLimits(config, 'small'))).toBe('128 MiB memory, 0.5 CPU, 64 processes');
    expect(describeLimits(planLimits(config, 'open'))).toBe(
      'no memory limit, no CPU limit, no process limit',
    );
  });
});
