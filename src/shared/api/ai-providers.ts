// The AI providers an engine can use (API.md §3), on their own so that both the account's schemas and
// the platform's (common.ts) can name them without importing each other.
import { z } from 'zod';

export const AI_PROVIDERS = [
  'openai',
  'anthropic',
  'google',
  'mistral',
  'groq',
  'deepseek',
  'xai',
  'openrouter',
] as const;
export const AiProvider = z.enum(AI_PROVIDERS);
export type AiProvider = z.infer<typeof AiProvider>;
