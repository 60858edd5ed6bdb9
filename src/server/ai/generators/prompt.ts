// What the offline templates read from a prompt: simple, predictable heuristics (no model). A title and
// subject, the features a sentence lists, the resource an API manages, whether the app stores data, how
// often a job runs, URLs, an email address and colours. Each falls back to a sensible default, so any
// prompt gives a working app.

export interface PromptFacts {
  /** Short display name, e.g. "Coffee Shop in Lyon". */
  title: string;
  /** What the app is about, lower-case prose, e.g. "a coffee shop in Lyon". */
  subject: string;
  /** The prompt itself, trimmed and on one line (shown in READMEs and pages). */
  sentence: string;
  /** One sentence for a page's tagline: the subject and the features, e.g. "Bakery with cakes and tarts." */
  blurb: string;
  /** Things the prompt lists after "with", "including"…, at most 6. */
  features: string[];
  /** The plural noun an API manages, e.g. "books"; "items" when none is found. */
  resource: string;
  /** Its singular, e.g. "book". */
  singular: string;
  urls: string[];
  email: string | null;
  /** Seconds between runs of a periodic job (default 60). */
  intervalSeconds: number;
  /** Colour words the prompt used, in order (e.g. ["green", "dark"]). */
  colours: string[];
}

const LEADING = [
  /^(please|hi|hello|hey)[,!\s]+/i,
  /^(can|could|would) you\s+/i,
  /^(i|we)\s+(want|need|would like|'d like)\s+(you\s+to\s+)?/i,
  /^(build|create|make|generate|write|code|design|give|set up|setup|spin up|deploy)\s+(me|us)?\s*/i,
  /^(a|an|the|my|our|some)\s+/i,
  /^(simple|small|tiny|basic|quick|little|nice|modern|clean|beautiful|minimal|one-page|single-page)[,\s]+/i,
];

const KINDS =
  '(?:web ?site|site|web ?page|page|landing page|portfolio|web ?app|app|application|api|rest api|service|server|backend|bot|telegram bot|discord bot|chat ?bot|worker|job|cron job|script|dashboard|blog)';

const SMALL_WORDS = new Set([
  'a',
  'an',
  'the',
  'of',
  'in',
  'on',
  'for',
  'and',
  'or',
  'to',
  'with',
  'at',
  'by',
]);

const STOP_PLURALS = new Set([
  'is',
  'us',
  'this',
  'was',
  'has',
  'its',
  'yes',
  'does',
  'process',
  'address',
  'business',
  'access',
  'status',
  'news',
  'always',
  'sometimes',
  'perhaps',
  'minutes',
  'seconds',
  'hours',
  'days',
  'weeks',
  'less',
  'class',
  'glass',
  'across',
  'analysis',
  'basis',
  'bus',
  'plus',
  'thus',
  'as',
  'requests',
  'endpoints',
  'apis',
  'uses',
  'lets',
  'gets',
  'sends',
  'works',
  'runs',
  'checks',
  'stores',
  'saves',
  'tracks',
  'manages',
  'lists',
  'keeps',
  'handles',
  'shows',
  'allows',
  'needs',
  'wants',
  'helps',
  'gives',
  'takes',
  'makes',
  'posts',
  'answers',
  'replies',
]);

const COLOUR_WORDS = [
  'red',
  'orange',
  'yellow',
  'green',
  'teal',
  'blue',
  'indigo',
  'purple',
  'violet',
  'pink',
  'brown',
  'gray',
  'grey',
  'black',
  'white',
  'dark',
  'light',
  'gold',
  'beige',
];

/** Reads the facts the templates need from a prompt. */
export function readPrompt(prompt: string): PromptFacts {
  const sentence = prompt.replace(/\s+/g, ' ').trim();
  const core = corePhrase(sentence);
  const named = namedTitle(sentence);
  const subject = subjectOf(core) || core || 'my project';
  const title = truncateWords(named ?? titleCase(subject), 8) || 'My Project';
  const resource = resourceOf(sentence);
  const features = featuresOf(sentence);
  const list =
    features.length > 1
      ? `${features.slice(0, -1).join(', ')} and ${features[features.length - 1]}`
      : features[0];
  return {
    title,
    subject,
    sentence,
    blurb: `${capitalize(subject)}${list ? ` with ${list}` : ''}.`,
    features,
    resource,
    singular: singularOf(resource),
    urls: [...new Set(sentence.match(/https?:\/\/[^\s,;)"'<>]+/g) ?? [])].map((u) => u.replace(/[.]+$/, '')),
    email: /[\w.+-]+@[\w-]+(\.[\w-]+)+/.exec(sentence)?.[0] ?? null,
    intervalSeconds: intervalOf(sentence),
    colours: coloursOf(sentence),
  };
}

/** The prompt without its request words: "Build me a landing page for X, with Y" → "landing page for X". */
function corePhrase(sentence: string): string {
  let text = sentence;
  for (let i = 0; i < 3; i += 1) for (const re of LEADING) text = text.replace(re, '');
  const cut =
    /[.,;:!?(]|\s(?:with|that|which|where|so|using|including|featuring|showing|listing|who)\s/i.exec(text);
  if (cut) text = text.slice(0, cut.index);
  return text.trim();
}

/** A name the prompt gives outright: `called "X"`, `named X`, or a quoted phrase. */
function namedTitle(sentence: string): string | null {
  const quoted =
    /(?:called|named|titled)\s+["“']([^"”']{2,60})["”']/i.exec(sentence) ??
    /["“]([^"”]{2,60})["”]/.exec(sentence);
  if (quoted) return quoted[1]!.trim();
  const bare = /(?:called|named|titled)\s+([A-Z][\w'&-]*(?:\s+[A-Z][\w'&-]*){0,4})/.exec(sentence);
  return bare ? bare[1]!.trim() : null;
}

/** "landing page for a coffee shop in Lyon" → "coffee shop in Lyon"; "todo api" → "todo". */
function subjectOf(core: string): string {
  const about = new RegExp(
    `^(?:.*?\\b)?${KINDS}\\s+(?:for|about|of|to|that|on|showcasing)\\s+(.+)$`,
    'i',
  ).exec(core);
  let subject = about ? about[1]! : core.replace(new RegExp(`\\s*\\b${KINDS}$`, 'i'), '');
  subject = subject
    .replace(/^(?:a|an|the|my|our|some|me|us)\s+/i, '')
    .replace(/\s*\b(?:called|named|titled)\b.*$/i, '')
    .trim();
  return subject || core;
}

function featuresOf(sentence: string): string[] {
  const match =
    /\b(?:with|including|featuring|showing|listing|showcasing|that has|which has|offering)\s+(.+)$/i.exec(
      sentence,
    );
  if (!match) return [];
  const text = match[1]!.split(/[.;!?]/)[0]!;
  return [
    ...new Set(
      text
        .split(/,|\band\b|\bplus\b|&/i)
        .map((part) =>
          part
            .replace(/^\s*(?:a|an|the|some|my|our|its|their)\s+/i, '')
            .replace(/\s+/g, ' ')
            .trim(),
        )
        .filter((part) => part.length > 1 && part.length <= 60),
    ),
  ].slice(0, 6);
}

/** The first plural noun after "for", "manage", "track"…, e.g. "an API to track books" → "books". */
function resourceOf(sentence: string): string {
  const words = sentence.toLowerCase().match(/[a-z][a-z-]*/g) ?? [];
  const triggers = new Set([
    'manage',
    'manages',
    'managing',
    'track',
    'tracks',
    'tracking',
    'store',
    'stores',
    'storing',
    'list',
    'lists',
    'listing',
    'keep',
    'keeps',
    'keeping',
    'save',
    'saves',
    'saving',
    'crud',
    'of',
    'for',
    'my',
    'our',
    'with',
    'about',
  ]);
  const plural = (word: string) =>
    word.length > 3 && word.endsWith('s') && !word.endsWith('ss') && !STOP_PLURALS.has(word);
  for (let i = 0; i < words.length; i += 1) {
    if (!triggers.has(words[i]!)) continue;
    for (const word of words.slice(i + 1, i + 4)) if (plural(word)) return word.replace(/-/g, '_');
  }
  const any = words.find(plural);
  return any ? any.replace(/-/g, '_') : 'items';
}

export function singularOf(plural: string): string {
  if (/ies$/.test(plural)) return `${plural.slice(0, -3)}y`;
  if (/(ches|shes|sses|xes|zes)$/.test(plural)) return plural.slice(0, -2);
  if (plural.endsWith('s') && plural.length > 1) return plural.slice(0, -1);
  return plural === 'items' ? 'item' : plural;
}

function intervalOf(sentence: string): number {
  const text = sentence.toLowerCase();
  const every = /every\s+(\d+)?\s*(second|sec|s|minute|min|m|hour|hr|h|day|d)s?\b/.exec(text);
  if (every) {
    const count = every[1] ? Number(every[1]) : 1;
    const unit = every[2]!;
    const seconds = unit.startsWith('s')
      ? 1
      : unit.startsWith('m')
        ? 60
        : unit.startsWith('h')
          ? 3600
          : 86_400;
    return Math.min(Math.max(count * seconds, 1), 7 * 86_400);
  }
  if (/\bhourly\b/.test(text)) return 3600;
  if (/\b(daily|nightly|every day|each day)\b/.test(text)) return 86_400;
  if (/\bweekly\b/.test(text)) return 7 * 86_400;
  return 60;
}

function coloursOf(sentence: string): string[] {
  const words = sentence.toLowerCase().match(/[a-z]+/g) ?? [];
  return [...new Set(words.filter((w) => COLOUR_WORDS.includes(w)).map((w) => (w === 'grey' ? 'gray' : w)))];
}

/** "coffee shop in lyon" → "Coffee Shop in Lyon"; words with capitals (API, iOS) keep them. */
export function titleCase(text: string): string {
  return text
    .split(/\s+/)
    .filter(Boolean)
    .map((word, i) => {
      if (/[A-Z]/.test(word)) return word;
      if (i > 0 && SMALL_WORDS.has(word)) return word;
      return word.charAt(0).toUpperCase() + word.slice(1);
    })
    .join(' ');
}

function truncateWords(text: string, count: number): string {
  const words = text.split(/\s+/).filter(Boolean);
  const kept = words.slice(0, count);
  while (kept.length > 1 && SMALL_WORDS.has(kept[kept.length - 1]!.toLowerCase())) kept.pop();
  return kept.join(' ');
}

/** Sentence case for a feature or heading: "opening hours" → "Opening hours". */
export function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

const DATABASE_WORDS =
  /\b(stor(e|es|ed|ing)|sav(e|es|ed|ing)|persist\w*|databases?|db|postgres\w*|sql|users?|accounts?|orders?|sign[- ]?ups?|log[- ]?ins?|registrations?|register|customers?|bookings?|reservations?|inventory|records?)\b/i;

/** For `web` and `api`: does the prompt ask for data that outlives a restart? */
export function wantsDatabase(prompt: string): boolean {
  return DATABASE_WORDS.test(prompt);
}
