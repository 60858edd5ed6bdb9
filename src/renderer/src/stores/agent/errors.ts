// What the AI endpoints' refusals mean to a user: a title for each code the builder and the agent
// answer with, what to do about it, and the platform's detail in the app's words. The platform speaks
// to API clients (`PUT /account/ai-key`, `--ai-provider and WHARF_AI_KEY`); here a missing engine is
// said as the app says it, and the screen offers "Add your AI key", which lands on that field.

export interface AiErrorExplanation {
  title: string;
  /** The platform's detail, as the app says it. */
  detail: string;
  /** What to do next, when there is something. */
  hint: string | null;
  /** Whether saving an AI key would fix it: the screen then links straight to the key field. */
  addKey: boolean;
}

/** What the agent and the builder say when no engine can run at all. */
export const NO_ENGINE_REASON =
  'This platform has no included AI engine, and you have not saved your own AI key.';

/** The platform's own words for "no engine", each put as the app says it (the first match wins). */
const ENGINE_DETAILS: { pattern: RegExp; detail: (match: RegExpExecArray) => string }[] = [
  {
    pattern: /^the agent needs an AI engine and none is available/i,
    detail: () => `The agent needs an AI engine to work. ${NO_ENGINE_REASON}`,
  },
  {
    pattern: /^an edit needs an AI engine and none is available/i,
    detail: () => `Editing needs an AI engine. ${NO_ENGINE_REASON}`,
  },
  {
    // editApp's: what was asked, then which edits work offline and how to set an engine up.
    pattern:
      /^editing needs an AI engine: (.*?); without an AI engine (only simple edits .*?)\. Save your own key/i,
    detail: (match) => `Editing needs an AI engine: ${match[1]}. Without one, ${match[2]}.`,
  },
  {
    pattern: /^no AI key is saved for this account/i,
    detail: () => 'You chose your own AI key, but none is saved.',
  },
  {
    pattern: /^this platform has no included AI engine/i,
    detail: () => 'This platform has no included AI engine: choose your own key, or add one.',
  },
  {
    pattern: /^the saved AI key can no longer be decrypted/i,
    detail: () =>
      'Your saved AI key can no longer be read (the platform’s secret changed since it was saved): save it again.',
  },
];

/** API and command-line terms the platform adds for its other clients, left out of what the app shows. */
const API_TERMS = [
  / \((?:PUT \/account\/ai-key|--ai-provider and WHARF_AI_KEY)[^)]*\)/g,
  / \(engine "own_key", saved with PUT \/account\/ai-key\)/g,
];

function inAppWords(detail: string): { detail: string; addKey: boolean } {
  for (const known of ENGINE_DETAILS) {
    const match = known.pattern.exec(detail);
    if (match) return { detail: known.detail(match), addKey: true };
  }
  let plain = detail;
  for (const term of API_TERMS) plain = plain.replace(term, '');
  return { detail: capitalize(plain), addKey: /\bAI (engine|key)\b/i.test(detail) };
}

export function explainAiError(code: string, status?: number, detail = ''): AiErrorExplanation {
  const said = inAppWords(detail);
  const base = { detail: said.detail, addKey: said.addKey };
  switch (code) {
    case 'insufficient_balance':
      return {
        ...base,
        title: 'Not enough credit for the included engine',
        hint: 'Top up the account, or add your own AI key: runs on your key are not billed here.',
        addKey: true,
      };
    case 'rate_limited':
      return {
        ...base,
        title: 'Too many AI requests',
        hint: 'AI calls are limited per minute: wait a moment and try again.',
      };
    case 'unavailable':
      return said.addKey
        ? {
            ...base,
            title: 'No AI engine is available',
            hint: 'A key from OpenAI, Anthropic, Google, Mistral or another supported provider works, and runs on it are not billed here.',
          }
        : { ...base, title: 'Not available right now', hint: null };
    case 'email_not_verified':
      return {
        ...base,
        title: 'Verify your email first',
        hint: 'The AI builder and agent need a verified account email.',
      };
    case 'offline':
      return { ...base, title: 'The platform cannot be reached', hint: null };
    case 'validation_failed':
      return { ...base, title: 'The request was not accepted', hint: null };
    case 'not_found':
      return { ...base, title: 'Not found', hint: null };
    case 'unauthorized':
    case 'not_configured':
      return { ...base, title: 'The platform refused the API key', hint: 'Check the key in Settings.' };
    default:
      return {
        ...base,
        title: status && status >= 500 ? 'The platform failed' : 'Something went wrong',
        hint: null,
      };
  }
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
