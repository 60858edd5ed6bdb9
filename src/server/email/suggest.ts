// Typo suggestions for mail domains: `jane@gmial.con` → `jane@gmail.com`. A wrong suggestion is worse
// than none, so this corrects only (1) top-level domains that do not exist and are one slip away from
// .com/.net/.org, and (2) domains one or two edits from a popular mail domain with a long enough name,
// and never a domain that is itself a known real one. Short popular names (me.com, aol.com, gmx.net,
// qq.com…) are never a correction target: too many real domains sit one edit away from them.
import { commonProviderDomains } from './lists.js';

/** Top-level domains that do not exist, typed for a real one. (.co, .cm, .om and .cam exist: not here.) */
const TLD_TYPOS: Readonly<Record<string, string>> = {
  con: 'com',
  cmo: 'com',
  ocm: 'com',
  comm: 'com',
  coom: 'com',
  cpm: 'com',
  vom: 'com',
  xom: 'com',
  clm: 'com',
  ckm: 'com',
  cim: 'com',
  comn: 'com',
  nte: 'net',
  nett: 'net',
  ney: 'net',
  ogr: 'org',
  prg: 'org',
  orgg: 'org',
};

/** Popular mail domains that typos are corrected to (names of five letters or more only). */
const TARGETS = [
  'gmail.com',
  'googlemail.com',
  'yahoo.com',
  'hotmail.com',
  'outlook.com',
  'icloud.com',
  'protonmail.com',
  'yandex.com',
  'yandex.ru',
  'comcast.net',
  'verizon.net',
  'sbcglobal.net',
  'hotmail.co.uk',
  'yahoo.co.uk',
];

/** Real domains close to a target that must never be "corrected" (beyond the common providers list). */
const REAL = new Set([
  'email.com',
  'gmx.com',
  'gmx.net',
  'gmx.de',
  'proton.me',
  'fastmail.com',
  'hey.com',
  'ymail.com',
  'cloud.com',
  'yahoo.co.jp',
  'outlook.de',
  'outlook.fr',
  'hotmail.fr',
  'hotmail.de',
  'hotmail.it',
  'hotmail.es',
  'live.com',
  'live.co.uk',
]);

function isKnown(domain: string): boolean {
  return REAL.has(domain) || TARGETS.includes(domain) || commonProviderDomains().has(domain);
}

/** Optimal string alignment distance (Levenshtein plus adjacent transpositions), capped at `max + 1`. */
export function editDistance(a: string, b: string, max = 3): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let prev2: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const row = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, prev2[j - 2]! + 1);
      row.push(best);
    }
    prev2 = prev;
    prev = row;
  }
  return Math.min(prev[b.length]!, max + 1);
}

/** Real country domains that are also the usual slips for .com/.net, corrected only on a popular name. */
const SUFFIX_SLIPS: Readonly<Record<string, string>> = { co: 'com', cm: 'com', om: 'com', ne: 'net' };

function splitName(domain: string): [name: string, suffix: string] {
  const dot = domain.indexOf('.');
  return [domain.slice(0, dot), domain.slice(dot + 1)];
}

/** The popular domain `domain` is most likely a typo of, or null. */
function closestTarget(domain: string): string | null {
  if (isKnown(domain)) return null;
  const [name, suffix] = splitName(domain);
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const target of TARGETS) {
    const [targetName, targetSuffix] = splitName(target);
    // gmail.co → gmail.com, but never outlook.cl → outlook.com: only the listed slips.
    if (name === targetName) {
      if (SUFFIX_SLIPS[suffix] === targetSuffix) return target;
      continue;
    }
    if (suffix !== targetSuffix) continue;
    // One edit for 5–6 letter names (gmail, yahoo, icloud), two for longer ones (hotmail, outlook).
    const allowed = targetName.length >= 7 ? 2 : 1;
    const distance = editDistance(name, targetName, allowed);
    if (distance > allowed || distance >= bestDistance) continue;
    // A slip at the first letter that also changes the length (cloud.com ← icloud.com, mail.com ←
    // gmail.com) is far more often a different real domain than a typo.
    if (name[0] !== targetName[0] && name.length !== targetName.length) continue;
    best = target;
    bestDistance = distance;
  }
  return best;
}

/** The corrected domain for a lowercase ASCII mail domain, or null when it looks right. */
export function suggestDomain(domain: string): string | null {
  let candidate = domain;
  const dot = candidate.lastIndexOf('.');
  const fixedTld = TLD_TYPOS[candidate.slice(dot + 1)];
  if (dot > 0 && fixedTld !== undefined) candidate = `${candidate.slice(0, dot)}.${fixedTld}`;
  candidate = closestTarget(candidate) ?? candidate;
  return candidate === domain ? null : candidate;
}
