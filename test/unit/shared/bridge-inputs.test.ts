// The Bridge's input schemas: the operations they list, what they make of good input (trimmed,
// defaults filled in), and the 422 naming the field for bad input, before any handler runs.
import { describe, expect, it } from 'vitest';
import {
  BRIDGE_INPUTS,
  BRIDGE_OPERATIONS,
  isBridgeOperation,
  parseBridgeInput,
} from '../../../src/shared/bridge-inputs.js';
import { BridgeError, type BridgeOperation } from '../../../src/shared/bridge.js';

/** The refusal of an input: its code, status, detail and the fields it names. */
function refusal(operation: BridgeOperation, input: unknown) {
  try {
    parseBridgeInput(operation, input);
  } catch (error) {
    expect(error).toBeInstanceOf(BridgeError);
    const { code, status, detail, errors } = error as BridgeError;
    return { code, status, detail, paths: errors?.map((e) => e.path) };
  }
  throw new Error(`${operation} took ${JSON.stringify(input)}`);
}

describe('the Bridge operations', () => {
  it('are the keys of the schema map, each once, and nothing an object inherits', () => {
    expect(BRIDGE_OPERATIONS).toEqual(Object.keys(BRIDGE_INPUTS));
    expect(new Set(BRIDGE_OPERATIONS).size).toBe(BRIDGE_OPERATIONS.length);
    expect(BRIDGE_OPERATIONS).toContain('projects.create');
    expect(BRIDGE_OPERATIONS).toContain('ai.agent.stop');
    for (const name of BRIDGE_OPERATIONS) expect(isBridgeOperation(name)).toBe(true);
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'projects', '', 42, null])
      expect(isBridgeOperation(name)).toBe(false);
  });
});

describe('parseBridgeInput', () => {
  it('drops whatever an operation without input is sent', () => {
    expect(parseBridgeInput('projects.list', { anything: true })).toBeUndefined();
    expect(parseBridgeInput('settings.get', undefined)).toBeUndefined();
  });

  it('normalizes what it takes: defaults, trimming, case, caps', () => {
    expect(parseBridgeInput('tunnels.start', { port: 3000, subdomain: '', hostHeader: null })).toEqual({
      port: 3000,
      hostHeader: 'preserve',
    });
    expect(
      parseBridgeInput('tunnels.start', { port: 3000, subdomain: 'my-app', hostHeader: 'rewrite' }),
    ).toEqual({
      port: 3000,
      subdomain: 'my-app',
      hostHeader: 'rewrite',
    });
    expect(
      parseBridgeInput('traffic.list', {
        methods: [' get ', ''],
        statuses: ['4xx', 'error'],
        limit: 50_000,
        path: null,
      }),
    ).toMatchObject({ methods: ['GET'], statuses: ['4xx', 'error'], limit: 1_000, path: undefined });
    expect(parseBridgeInput('keys.create', { scopes: ['deploy'], name: '  CI  ' })).toEqual({
      scopes: ['deploy'],
      name: 'CI',
    });
    expect(parseBridgeInput('keys.create', { scopes: ['full'], name: null })).toEqual({ scopes: ['full'] });
    expect(parseBridgeInput('account.setAiKey', { provider: 'openai', key: ' sk-1 \n' })).toEqual({
      provider: 'openai',
      key: 'sk-1',
    });
    expect(parseBridgeInput('traffic.replay', { id: 'req_1', method: 'post', body: null })).toEqual({
      id: 'req_1',
      method: 'POST',
      body: null,
    });
    expect(parseBridgeInput('email.verify', { email: 'a@b.c', smtp_probe: null })).toEqual({
      email: 'a@b.c',
    });
    expect(
      parseBridgeInput('ai.agent.start', { messages: [{ role: 'user', content: 'hi' }], engine: 'openai' }),
    ).toEqual({ messages: [{ role: 'user', content: 'hi' }], engine: 'openai' });
    // Unknown fields are left out; bodies the platform checks pass whole.
    expect(parseBridgeInput('projects.get', { id: 'prj_1', extra: 1 })).toEqual({ id: 'prj_1' });
    expect(parseBridgeInput('projects.create', { name: 'x', services: [{ kind: 'web' }] })).toEqual({
      name: 'x',
      services: [{ kind: 'web' }],
    });
  });

  it('refuses bad input with a 422 naming each field that is wrong', () => {
    expect(refusal('projects.get', {})).toEqual({
      code: 'validation_failed',
      status: 422,
      detail: 'id is required: a project id',
      paths: ['id'],
    });
    // A missing input reads as an empty one: the fields say what they lack.
    expect(refusal('projects.rollback', undefined).paths).toEqual(['id', 'release_id']);
    expect(refusal('projects.get', 'prj_1')).toMatchObject({ detail: 'the input must be an object' });
    expect(refusal('projects.create', [1]).detail).toBe('must be an object');
    expect(
      refusal('projects.upload', { id: 'prj_1', fileName: 'a.tar.gz', data: new Uint8Array() }).paths,
    ).toEqual(['file']);
    expect(refusal('tunnels.start', { port: 70_000 }).paths).toEqual(['port']);
    expect(refusal('tunnels.start', { port: 3000, subdomain: 'api' }).detail).toBe(
      'subdomain "api" is reserved for the platform',
    );
    expect(refusal('tunnels.start', { port: 3000, hostHeader: 'a b' }).paths).toEqual(['hostHeader']);
    expect(refusal('traffic.list', { statuses: ['2x'] }).detail).toContain('statuses has "2x"');
    expect(refusal('traffic.list', { methods: ['GET; DROP'] }).paths).toEqual(['methods']);
    expect(refusal('traffic.list', { header: ': x' }).paths).toEqual(['header']);
    expect(refusal('traffic.list', { minDurationMs: -1, limit: 0 }).paths).toEqual([
      'minDurationMs',
      'limit',
    ]);
    expect(refusal('traffic.replay', { id: 'r', headers: [{ name: 'X', value: 'a\r\nb' }] }).paths).toEqual([
      'headers[0].value',
    ]);
    expect(refusal('traffic.har', { ids: [] }).paths).toEqual(['ids']);
    expect(refusal('traffic.clear', { tunnelId: '' }).paths).toEqual(['tunnelId']);
    expect(refusal('domains.link', { id: 'dom_1' })).toMatchObject({
      detail: 'project_id give project_id, hsts or both',
      paths: ['project_id'],
    });
    expect(refusal('domains.create', { domain: '  ' }).paths).toEqual(['domain']);
    expect(refusal('email.verify', { email: 'a@b.c', smtp_probe: 'yes' }).paths).toEqual(['smtp_probe']);
    expect(refusal('email.verifyBatch', { emails: ['a@b.c', 3] }).paths).toEqual(['emails[1]']);
    expect(refusal('keys.create', { scopes: [1] }).paths).toEqual(['scopes']);
    expect(refusal('keys.create', { scopes: ['deploy'], name: ' ' }).paths).toEqual(['name']);
    expect(refusal('account.setAiKey', { provider: 'openai', key: '   ' }).paths).toEqual(['key']);
    expect(refusal('ai.agent.start', { messages: [] }).paths).toEqual(['messages']);
    expect(refusal('ai.agent.start', { messages: [{ role: 'system', content: 'x' }] }).paths).toEqual([
      'messages[0].role',
    ]);
    expect(
      refusal('ai.agent.start', { messages: [{ role: 'user', content: 'x' }], runId: 'bad id' }).paths,
    ).toEqual(['runId']);
    expect(refusal('settings.update', { apiKey: 42 }).paths).toEqual(['apiKey']);
  });
});
