// The agent's local documentation search: markdown split into sections by heading, ranked by BM25 over
// word tokens, against small documents and against Wharf's own README.md and docs/API.md.
import { describe, expect, it } from 'vitest';
import {
  DocsIndex,
  docsIndex,
  findPackageRoot,
  loadDocSections,
  splitSections,
  tokenize,
} from '../../../../src/server/ai/agent/docs-search.js';

describe('tokenize', () => {
  it('lower-cases, drops stop words and folds plurals', () => {
    expect(tokenize('How do I set the Tunnels and their subdomains?')).toEqual([
      'set',
      'tunnel',
      'subdomain',
    ]);
    expect(tokenize('Libraries, batches, access')).toEqual(['library', 'batch', 'access']);
  });
});

describe('splitSections', () => {
  const markdown = [
    '# Title',
    'intro text',
    '## Deploys',
    'deploy text',
    '### Logs',
    'log text',
    '```sh',
    '# not a heading inside a fence',
    '```',
    '## Tunnels',
    'tunnel text',
  ].join('\n');

  it('cuts at headings up to level 3, naming sub-sections after their parents', () => {
    const sections = splitSections('README.md', markdown);
    expect(sections.map((s) => s.heading)).toEqual(['Title', 'Deploys', 'Deploys › Logs', 'Tunnels']);
    expect(sections.every((s) => s.source === 'README.md')).toBe(true);
  });

  it('never takes a comment line inside a code fence for a heading', () => {
    const logs = splitSections('README.md', markdown).find((s) => s.heading === 'Deploys › Logs');
    expect(logs?.text).toContain('# not a heading inside a fence');
  });

  it('keeps text before the first heading as a section named after the file', () => {
    expect(splitSections('notes.md', 'just text\n## A\nmore')[0]).toMatchObject({
      heading: 'notes.md',
      text: 'just text',
    });
  });
});

describe('DocsIndex', () => {
  const index = new DocsIndex([
    {
      source: 'a.md',
      heading: 'Billing',
      text: '## Billing\nThe allowance and the top-up; usage is charged.',
    },
    { source: 'a.md', heading: 'Tunnels', text: '## Tunnels\nA tunnel takes a subdomain; replay requests.' },
    { source: 'a.md', heading: 'Domains', text: '## Domains\nA custom domain points its CNAME at the edge.' },
  ]);

  it('ranks the section sharing the most (and rarest) terms first', () => {
    const hits = index.search('tunnel subdomain');
    expect(hits[0]?.heading).toBe('Tunnels');
    expect(hits).toHaveLength(1);
  });

  it('answers nothing for a query of stop words or unknown words', () => {
    expect(index.search('the of and')).toEqual([]);
    expect(index.search('kubernetes')).toEqual([]);
  });

  it('returns at most `limit` hits, each cut to `maxChars`', () => {
    const hits = index.search('billing tunnel domain', { limit: 2, maxChars: 12 });
    expect(hits).toHaveLength(2);
    for (const hit of hits) expect(hit.text.length).toBeLessThanOrEqual(14);
  });
});

describe("Wharf's own documentation", () => {
  it('finds the package root and reads README.md and docs/API.md', () => {
    const root = findPackageRoot();
    expect(root).not.toBeNull();
    const sources = new Set(loadDocSections(root!).map((s) => s.source));
    expect(sources).toContain('README.md');
    expect(sources).toContain('docs/API.md');
  });

  it('finds the tunnels section for "tunnel subdomain"', () => {
    const hits = docsIndex().search('tunnel subdomain');
    expect(hits.length).toBeGreaterThan(0);
    expect(hits.length).toBeLessThanOrEqual(3);
    expect(hits.some((hit) => /tunnel/i.test(hit.heading))).toBe(true);
    expect(hits[0]?.heading).toMatch(/tunnel/i);
  });

  it('finds the limits for "rate limit 429"', () => {
    const hits = docsIndex().search('AI rate limit 429 Retry-After');
    expect(hits.map((hit) => hit.heading).join(' | ')).toMatch(/Limits|Errors/);
  });
});
