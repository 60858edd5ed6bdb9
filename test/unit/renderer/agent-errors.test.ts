// The AI endpoints' refusals in the app's words: the platform's "no engine" details (written for API
// and command-line clients) come out without API paths or flags, and say whether an AI key fixes it.
import { describe, expect, it } from 'vitest';
import { explainAiError } from '../../../src/renderer/src/stores/agent/errors.js';

const API_TERMS = /PUT \/account|WHARF_AI_KEY|--ai-provider|own_key/;

describe('explainAiError', () => {
  it.each([
    [
      'no AI key is saved for this account: add one in Settings (PUT /account/ai-key)',
      'You chose your own AI key, but none is saved.',
    ],
    [
      'this platform has no included AI engine: start the platform with --ai-provider and WHARF_AI_KEY, or use your own key (engine "own_key", saved with PUT /account/ai-key)',
      'This platform has no included AI engine: choose your own key, or add one.',
    ],
    [
      'the agent needs an AI engine and none is available: save your own key for one of the supported providers (PUT /account/ai-key, or Settings › AI key in the app), or have the platform started with an included engine (--ai-provider and WHARF_AI_KEY)',
      'The agent needs an AI engine to work. This platform has no included AI engine, and you have not saved your own AI key.',
    ],
    [
      'editing needs an AI engine: "make it blue" is not one of the simple edits done offline; without an AI engine only simple edits of portfolio and landing sites work (change the title; add an item). Save your own key (PUT /account/ai-key) or start the platform with an included engine (--ai-provider and WHARF_AI_KEY)',
      'Editing needs an AI engine: "make it blue" is not one of the simple edits done offline. Without one, only simple edits of portfolio and landing sites work (change the title; add an item).',
    ],
  ])('says %j as the app does, with the way to the key field', (detail, said) => {
    const explained = explainAiError('unavailable', 503, detail);
    expect(explained.detail).toBe(said);
    expect(explained.detail).not.toMatch(API_TERMS);
    expect(explained.title).toBe('No AI engine is available');
    expect(explained.addKey).toBe(true);
  });

  it('leaves API terms out of details it does not know, and offers no key for other refusals', () => {
    const stopped = explainAiError('unavailable', 503, 'the run was stopped while the deploy went on');
    expect(stopped).toMatchObject({
      title: 'Not available right now',
      detail: 'The run was stopped while the deploy went on',
      addKey: false,
    });
    const other = explainAiError(
      'unavailable',
      503,
      'the saved AI key can no longer be decrypted (the server secret changed since it was saved): save it again in Settings (PUT /account/ai-key)',
    );
    expect(other.detail).not.toMatch(API_TERMS);
    expect(other.addKey).toBe(true);
    expect(explainAiError('rate_limited', 429, 'at most 20 AI calls per minute').addKey).toBe(false);
    expect(explainAiError('insufficient_balance', 402, 'not enough balance').addKey).toBe(true);
  });
});
