// What the AI endpoints' refusals mean to a user: a title for each code the builder and the agent
// answer with, and what to do about it. The platform's detail is shown under it as it came.

export interface AiErrorExplanation {
  title: string;
  /** What to do next, when there is something. */
  hint: string | null;
}

export function explainAiError(code: string, status?: number): AiErrorExplanation {
  switch (code) {
    case 'insufficient_balance':
      return {
        title: 'Not enough credit for the included engine',
        hint: 'Top up the account, or save your own provider key in Settings: runs on your key are not billed here.',
      };
    case 'rate_limited':
      return {
        title: 'Too many AI requests',
        hint: 'AI calls are limited per minute: wait a moment and try again.',
      };
    case 'unavailable':
      return { title: 'No AI engine is available', hint: null };
    case 'email_not_verified':
      return {
        title: 'Verify your email first',
        hint: 'The AI builder and agent need a verified account email.',
      };
    case 'offline':
      return { title: 'The platform cannot be reached', hint: null };
    case 'validation_failed':
      return { title: 'The request was not accepted', hint: null };
    case 'not_found':
      return { title: 'Not found', hint: null };
    case 'unauthorized':
    case 'not_configured':
      return { title: 'The platform refused the API key', hint: 'Check the key in Settings.' };
    default:
      return { title: status && status >= 500 ? 'The platform failed' : 'Something went wrong', hint: null };
  }
}
