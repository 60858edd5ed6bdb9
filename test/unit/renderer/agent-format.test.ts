// How the Agent and Build screens write tools, inputs, durations, and which projects the builder made.
import { describe, expect, it } from 'vitest';
import {
  formatDuration,
  prettyJson,
  summarizeInput,
  toolLabel,
} from '../../../src/renderer/src/views/agent/format.js';
import { explainAiError } from '../../../src/renderer/src/stores/agent/errors.js';
import { isAiProject, looksSecret } from '../../../src/renderer/src/stores/ai-builder/generators.js';

describe('agent formatting', () => {
  it('labels tools in words', () => {
    expect(toolLabel('list_projects')).toBe('List projects');
    expect(toolLabel('search-docs')).toBe('Search docs');
  });

  it('summarizes an input on one line, cut with an ellipsis', () => {
    expect(summarizeInput({ generator: 'landing', subdomain: 'bakery' })).toBe(
      'generator: landing, subdomain: bakery',
    );
    expect(summarizeInput({ env: { A: '1' } })).toBe('env: {"A":"1"}');
    expect(summarizeInput({})).toBe('');
    expect(summarizeInput(undefined)).toBe('');
    const long = summarizeInput({ prompt: 'x'.repeat(200) }, 20);
    expect(long).toHaveLength(20);
    expect(long.endsWith('…')).toBe(true);
  });

  it('pretty-prints results, strings as they are', () => {
    expect(prettyJson({ a: 1 })).toBe('{\n  "a": 1\n}');
    expect(prettyJson('plain')).toBe('plain');
    expect(prettyJson(undefined)).toBe('');
  });

  it('writes durations in ms, s and min', () => {
    expect(formatDuration(12)).toBe('12 ms');
    expect(formatDuration(1500)).toBe('1.5 s');
    expect(formatDuration(42_000)).toBe('42 s');
    expect(formatDuration(125_000)).toBe('2 min 5 s');
  });

  it('titles refusals by what they mean', () => {
    expect(explainAiError('insufficient_balance', 402).title).toMatch(/credit/);
    expect(explainAiError('rate_limited', 429).hint).toMatch(/wait/);
    // 503 is "no AI engine" only when the platform says so; otherwise something else is down.
    expect(explainAiError('unavailable', 503, 'no AI engine is available for this account').title).toBe(
      'No AI engine is available',
    );
    expect(explainAiError('unavailable', 503).title).toBe('Not available right now');
    expect(explainAiError('weird', 500).title).toBe('The platform failed');
  });
});

describe('AI projects', () => {
  it('are the git projects in the builder’s own repositories', () => {
    expect(isAiProject({ id: 'prj_1', repo_url: 'file:///data/platform/ai-repos/prj_abc123' })).toBe(true);
    expect(isAiProject({ id: 'prj_1', repo_url: 'https://github.com/acme/ai-repos' })).toBe(false);
    expect(isAiProject({ id: 'prj_1', repo_url: '' })).toBe(false);
  });

  it('treats tokens, keys and passwords as secrets', () => {
    expect(looksSecret('TELEGRAM_BOT_TOKEN')).toBe(true);
    expect(looksSecret('DISCORD_PUBLIC_KEY')).toBe(true);
    expect(looksSecret('ADMIN_PASSWORD')).toBe(true);
    expect(looksSecret('SITE_TITLE')).toBe(false);
  });
});
