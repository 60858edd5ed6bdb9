// The agent's `search_docs` tool: Wharf's own documentation (README.md and docs/*.md of the package,
// among them docs/API.md, the public API contract), split into sections by heading and ranked against
// the question with BM25 over plain word tokens, all locally: no network, no model, no index on disk.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface DocSection {
  /** The file, relative to the package root, e.g. `docs/API.md`. */
  source: string;
  /** The heading path, e.g. `7. Tunnels` or `Deploys › Logs`. */
  heading: string;
  /** The section's text, heading line included. */
  text: string;
}

export interface DocHit {
  source: string;
  heading: string;
  /** The section's text, cut to at most `maxChars` characters. */
  text: string;
  score: number;
}

/** BM25's usual constants: term-frequency saturation and length normalization. */
const K1 = 1.2;
const B = 0.75;
/** A word of the heading counts as this many words of the body: headings say what a section is about. */
const HEADING_WEIGHT = 3;
const DEFAULT_MAX_CHARS = 1_500;

const STOP_WORDS = new Set(
  (
    'a an and are as at be by can do does for from how i in is it its me my of on or so that the their ' +
    'them then there these this to was what when where which who why will with you your'
  ).split(' '),
);

/** Lower-case word tokens without stop words, with plural endings folded (`tunnels` → `tunnel`). */
export function tokenize(text: string): string[] {
  const words = text.toLowerCase().match(/[a-z0-9_]+/g) ?? [];
  return words.filter((word) => !STOP_WORDS.has(word)).map(stem);
}

function stem(word: string): string {
  if (word.length > 4 && word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.length > 4 && /(ches|shes|sses|xes)$/.test(word)) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith('s') && !word.endsWith('ss') && !word.endsWith('us')) {
    return word.slice(0, -1);
  }
  return word;
}

/**
 * Splits markdown into sections at headings of levels 1–3 (never inside a code fence); each section's
 * heading names its parents below the top level (`Deploys › Logs`). Text before the first heading is a
 * section named after the file.
 */
export function splitSections(source: string, markdown: string): DocSection[] {
  const sections: DocSection[] = [];
  const trail: string[] = [];
  let heading = source;
  let lines: string[] = [];
  let inFence = false;
  const flush = () => {
    const text = lines.join('\n').trim();
    if (text !== '') sections.push({ source, heading, text });
    lines = [];
  };
  for (const line of markdown.split(/\r?\n/)) {
    if (/^\s*(```|~~~)/.test(line)) inFence = !inFence;
    const match = inFence ? null : /^(#{1,3})\s+(.+?)\s*#*\s*$/.exec(line);
    if (match) {
      flush();
      const level = match[1]!.length;
      trail.length = level - 1;
      trail[level - 1] = match[2]!.replace(/`/g, '');
      // The document title (level 1) adds nothing to the sections under it.
      heading = trail.slice(1).filter(Boolean).join(' › ') || trail[0]!;
    }
    lines.push(line);
  }
  flush();
  return sections;
}

interface IndexedSection {
  section: DocSection;
  terms: Map<string, number>;
  length: number;
}

export class DocsIndex {
  private readonly indexed: IndexedSection[];
  private readonly documentFrequency = new Map<string, number>();
  private readonly averageLength: number;

  constructor(sections: DocSection[]) {
    this.indexed = sections.map((section) => {
      const terms = new Map<string, number>();
      const add = (term: string, weight: number) => terms.set(term, (terms.get(term) ?? 0) + weight);
      for (const term of tokenize(section.heading)) add(term, HEADING_WEIGHT);
      for (const term of tokenize(section.text)) add(term, 1);
      let length = 0;
      for (const count of terms.values()) length += count;
      return { section, terms, length };
    });
    for (const { terms } of this.indexed) {
      for (const term of terms.keys()) {
        this.documentFrequency.set(term, (this.documentFrequency.get(term) ?? 0) + 1);
      }
    }
    const total = this.indexed.reduce((sum, entry) => sum + entry.length, 0);
    this.averageLength = this.indexed.length === 0 ? 1 : total / this.indexed.length;
  }

  get size(): number {
    return this.indexed.length;
  }

  /** The best `limit` sections for the query, best first; sections sharing no term are left out. */
  search(query: string, options: { limit?: number; maxChars?: number } = {}): DocHit[] {
    const limit = options.limit ?? 3;
    const maxChars = options.maxChars ?? DEFAULT_MAX_CHARS;
    const queryTerms = [...new Set(tokenize(query))];
    if (queryTerms.length === 0) return [];
    const count = this.indexed.length;
    const scored = this.indexed
      .map((entry) => {
        let score = 0;
        for (const term of queryTerms) {
          const frequency = entry.terms.get(term);
          if (!frequency) continue;
          const df = this.documentFrequency.get(term) ?? 0;
          const idf = Math.log(1 + (count - df + 0.5) / (df + 0.5));
          const norm = K1 * (1 - B + (B * entry.length) / this.averageLength);
          score += (idf * (frequency * (K1 + 1))) / (frequency + norm);
        }
        return { entry, score };
      })
      .filter(({ score }) => score > 0)
      .sort((a, b) => b.score - a.score)
      .slice(0, limit);
    return scored.map(({ entry, score }) => ({
      source: entry.section.source,
      heading: entry.section.heading,
      text: trimText(entry.section.text, maxChars),
      score: Math.round(score * 1000) / 1000,
    }));
  }
}

function trimText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const cut = text.slice(0, maxChars);
  const lastBreak = cut.lastIndexOf('\n');
  return `${lastBreak > maxChars / 2 ? cut.slice(0, lastBreak) : cut}\n…`;
}

/** The package's root: the nearest directory above this module whose package.json is wharf's. */
export function findPackageRoot(from: string = dirname(fileURLToPath(import.meta.url))): string | null {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string };
      if (pkg.name === 'wharf') return dir;
    } catch {
      // no package.json here: keep looking upwards
    }
  }
  return null;
}

/** README.md and docs/*.md of the package root, as sections; files that are missing are skipped. */
export function loadDocSections(root: string): DocSection[] {
  const files = ['README.md'];
  try {
    for (const name of readdirSync(join(root, 'docs')).sort()) {
      if (name.endsWith('.md')) files.push(`docs/${name}`);
    }
  } catch {
    // no docs folder
  }
  const sections: DocSection[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(join(root, file), 'utf8');
    } catch {
      continue;
    }
    sections.push(...splitSections(file, text));
  }
  return sections;
}

let shared: DocsIndex | null = null;

/** The index of the package's documentation, built on first use and kept. */
export function docsIndex(): DocsIndex {
  if (shared) return shared;
  const root = findPackageRoot();
  shared = new DocsIndex(root === null ? [] : loadDocSections(root));
  return shared;
}
