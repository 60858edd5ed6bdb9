// The API keys card's words: the scopes it sends for a choice, and why keys cannot be shown.
import { describe, expect, it } from 'vitest';
import { SCOPES } from '../../../src/shared/api/account.js';
import {
  SCOPE_CHOICES,
  keysProblem,
  scopesToSend,
} from '../../../src/renderer/src/views/settings/api-keys.js';

describe('scopesToSend', () => {
  it('sends the chosen scopes in a fixed order, and full alone since it covers the rest', () => {
    expect(scopesToSend(new Set(['email', 'deploy']))).toEqual(['deploy', 'email']);
    expect(scopesToSend(new Set(['email']))).toEqual(['email']);
    expect(scopesToSend(new Set(['deploy', 'full']))).toEqual(['full']);
    expect(scopesToSend(new Set())).toEqual([]);
  });

  it('offers every scope of the API, each with a line on what it allows', () => {
    expect(SCOPE_CHOICES.map((choice) => choice.scope)).toEqual([...SCOPES]);
    for (const choice of SCOPE_CHOICES) expect(choice.description).toMatch(/\.$/);
  });
});

describe('keysProblem', () => {
  it('says what to do when the app’s key lacks the full scope, not the bare refusal', () => {
    const problem = keysProblem({ code: 'forbidden', status: 403, detail: 'this key’s scopes (deploy)…' });
    expect(problem.title).toBe('This app’s key cannot manage API keys');
    expect(problem.detail).toMatch(/key with the full scope under Platform above/);
    expect(problem.retry).toBe(false);
  });

  it('names an unreachable platform and offers to ask again', () => {
    const problem = keysProblem({ code: 'offline', status: 503, detail: 'cannot reach the platform' });
    expect(problem).toEqual({
      title: 'The platform cannot be reached',
      detail: 'Cannot reach the platform',
      retry: true,
    });
  });

  it('tells a refused or missing key apart from other failures', () => {
    expect(keysProblem({ code: 'unauthorized', status: 401, detail: 'x' }).title).toMatch(/refused/);
    expect(keysProblem({ code: 'not_configured', status: 401, detail: 'x' }).title).toMatch(/No API key/);
    expect(keysProblem({ code: 'internal', status: 500, detail: 'x' }).title).toMatch(/could not be loaded/);
  });
});
