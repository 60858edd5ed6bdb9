// The content of a `portfolio` or `landing` site: a JSON document (content.json in the project) that
// our own templates render. Offline it is filled from the prompt by heuristics; with a model, the model
// fills it and nothing else, so every site is our HTML and CSS whatever the model writes.
import { z } from 'zod';
import type { PromptFacts } from '../prompt.js';
import { capitalize } from '../prompt.js';

const HexColour = z.string().regex(/^#[0-9a-fA-F]{6}$/, 'must be a #rrggbb colour');
/** Links a page may carry: the web, mail, or an anchor on the page itself. */
const Href = z
  .string()
  .max(500)
  .regex(
    /^(https?:\/\/[^\s"'<>]+|mailto:[^\s"'<>]+|#[A-Za-z0-9_-]*)$/,
    'must be an http(s), mailto: or #anchor link',
  );

export const SiteItem = z.object({
  title: z.string().min(1).max(120),
  description: z.string().max(600).default(''),
  link: Href.nullable().default(null),
});

export const SiteSection = z.object({
  id: z
    .string()
    .regex(/^[a-z][a-z0-9-]{0,39}$/, 'must be a lower-case slug')
    .describe('anchor id, e.g. "work"'),
  heading: z.string().min(1).max(120),
  body: z.string().max(2000).default(''),
  items: z.array(SiteItem).max(24).default([]),
});

export const SiteContent = z.object({
  kind: z.enum(['portfolio', 'landing']),
  title: z.string().min(1).max(120),
  tagline: z.string().max(300).default(''),
  colours: z.object({
    primary: HexColour,
    accent: HexColour,
    background: HexColour,
    text: HexColour,
  }),
  sections: z.array(SiteSection).min(1).max(12),
  call_to_action: z
    .object({ label: z.string().min(1).max(60), href: Href })
    .nullable()
    .default(null),
  contact: z
    .object({
      email: z.email().nullable().default(null),
      links: z
        .array(z.object({ label: z.string().min(1).max(60), href: Href }))
        .max(10)
        .default([]),
    })
    .default({ email: null, links: [] }),
  footer: z.string().max(300).default(''),
});
export type SiteContent = z.infer<typeof SiteContent>;
export type SiteSection = z.infer<typeof SiteSection>;

interface Palette {
  primary: string;
  accent: string;
}

const PALETTES: Record<string, Palette> = {
  red: { primary: '#b91c1c', accent: '#f59e0b' },
  orange: { primary: '#c2410c', accent: '#0ea5e9' },
  yellow: { primary: '#a16207', accent: '#2563eb' },
  gold: { primary: '#a16207', accent: '#1e293b' },
  green: { primary: '#15803d', accent: '#f59e0b' },
  teal: { primary: '#0f766e', accent: '#f97316' },
  blue: { primary: '#1d4ed8', accent: '#f59e0b' },
  indigo: { primary: '#4338ca', accent: '#ec4899' },
  purple: { primary: '#7e22ce', accent: '#f59e0b' },
  violet: { primary: '#6d28d9', accent: '#10b981' },
  pink: { primary: '#be185d', accent: '#0ea5e9' },
  brown: { primary: '#78350f', accent: '#d97706' },
  beige: { primary: '#78716c', accent: '#b45309' },
  gray: { primary: '#374151', accent: '#2563eb' },
  black: { primary: '#111827', accent: '#f59e0b' },
};

/** Named colours an edit may use ("make it green"), plus the palettes' primaries. */
export function colourFromWord(word: string): Palette | null {
  return PALETTES[word.toLowerCase() === 'grey' ? 'gray' : word.toLowerCase()] ?? null;
}

/** The four colours from the prompt's colour words: a hue, and "dark" for a dark page. */
export function coloursFor(words: string[], fallback: string): SiteContent['colours'] {
  const hue = words.find((w) => PALETTES[w]) ?? fallback;
  const palette = PALETTES[hue]!;
  const dark = words.includes('dark') || (words.includes('black') && !words.includes('white'));
  return dark
    ? { primary: lighten(palette.primary), accent: palette.accent, background: '#0b1120', text: '#e5e7eb' }
    : { ...palette, background: '#ffffff', text: '#1f2937' };
}

/** A brighter version of a dark primary, readable on a dark background. */
export function lighten(hex: string): string {
  const channel = (i: number) => {
    const value = parseInt(hex.slice(i, i + 2), 16);
    return Math.round(value + (255 - value) * 0.45)
      .toString(16)
      .padStart(2, '0');
  };
  return `#${channel(1)}${channel(3)}${channel(5)}`;
}

/** A portfolio or landing page's content, from the prompt alone. */
export function contentFromPrompt(kind: 'portfolio' | 'landing', facts: PromptFacts): SiteContent {
  return kind === 'portfolio' ? portfolioContent(facts) : landingContent(facts);
}

function portfolioContent(facts: PromptFacts): SiteContent {
  const role =
    /\b(?:a|an|as)\s+((?:[a-z-]+\s+){0,2}(?:photographer|designer|developer|engineer|artist|illustrator|writer|architect|musician|consultant|painter|filmmaker|animator|researcher|student|chef|maker|coach|teacher))\b/i.exec(
      facts.sentence,
    )?.[1];
  const work = facts.features.length
    ? facts.features.map((feature) => ({
        title: capitalize(feature),
        description: `A selection of ${feature}.`,
        link: null,
      }))
    : [
        { title: 'Selected project', description: `Recent work by ${facts.title}.`, link: null },
        { title: 'Collaboration', description: 'Work done with clients and partners.', link: null },
        { title: 'Personal project', description: 'Something made for the joy of it.', link: null },
      ];
  const contactLinks = linksOf(facts.urls);
  return SiteContent.parse({
    kind: 'portfolio',
    title: facts.title,
    tagline: role ? capitalize(role) : capitalize(facts.subject),
    colours: coloursFor(facts.colours, 'indigo'),
    sections: [
      {
        id: 'about',
        heading: 'About',
        body: role
          ? `I am ${facts.title}, ${/^[aeiou]/i.test(role) ? 'an' : 'a'} ${role.toLowerCase()}.${facts.features.length ? ` My work: ${facts.features.join(', ')}.` : ''}`
          : `Welcome to ${facts.title}: ${facts.blurb.charAt(0).toLowerCase()}${facts.blurb.slice(1)}`,
        items: [],
      },
      { id: 'work', heading: 'Work', body: '', items: work },
      {
        id: 'contact',
        heading: 'Contact',
        body: facts.email
          ? `Write to ${facts.email}: I answer every message.`
          : 'Get in touch for projects and collaborations.',
        items: [],
      },
    ],
    call_to_action: facts.email
      ? { label: 'Get in touch', href: `mailto:${facts.email}` }
      : { label: 'See the work', href: '#work' },
    contact: { email: facts.email, links: contactLinks },
    footer: `© ${new Date().getUTCFullYear()} ${facts.title}`,
  });
}

function landingContent(facts: PromptFacts): SiteContent {
  const features = facts.features.length
    ? facts.features.map((feature) => ({
        title: capitalize(feature),
        description: `${capitalize(feature)}, done right.`,
        link: null,
      }))
    : [
        {
          title: 'Made for you',
          description: `Everything about ${facts.subject}, in one place.`,
          link: null,
        },
        { title: 'Simple', description: 'Clear, friendly and easy to start with.', link: null },
        { title: 'Reliable', description: 'Here when you need it.', link: null },
      ];
  return SiteContent.parse({
    kind: 'landing',
    title: facts.title,
    tagline: facts.blurb,
    colours: coloursFor(facts.colours, 'blue'),
    sections: [
      { id: 'features', heading: 'Why ' + facts.title, body: '', items: features },
      {
        id: 'how-it-works',
        heading: 'How it works',
        body: '',
        items: [
          { title: '1. Get in touch', description: 'Tell us what you need.', link: null },
          {
            title: '2. We talk it through',
            description: `We find the right fit for you at ${facts.title}.`,
            link: null,
          },
          { title: '3. Enjoy', description: 'That is all there is to it.', link: null },
        ],
      },
      {
        id: 'contact',
        heading: 'Contact',
        body: facts.email ? `Write to ${facts.email}.` : 'We would love to hear from you.',
        items: [],
      },
    ],
    call_to_action: facts.email
      ? { label: 'Contact us', href: `mailto:${facts.email}` }
      : { label: 'Learn more', href: '#features' },
    contact: { email: facts.email, links: linksOf(facts.urls) },
    footer: `© ${new Date().getUTCFullYear()} ${facts.title}`,
  });
}

function linksOf(urls: string[]): Array<{ label: string; href: string }> {
  return urls.slice(0, 5).flatMap((url) => {
    try {
      return [{ label: new URL(url).hostname, href: url }];
    } catch {
      return [];
    }
  });
}
