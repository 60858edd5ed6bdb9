// The eight providers of API.md §3 behind one function: a Vercel AI SDK language model from a provider
// name, a key, an optional base URL (an OpenAI-compatible gateway, a proxy, or a local fake in tests)
// and a model id. Both engines (included and own key) come through here.
import type { LanguageModel } from 'ai';
import type { AiProvider } from '../../../shared/api/account.js';

/**
 * The model each provider uses when the configuration names none: a fast, inexpensive model with tool
 * calling, among the ids the installed provider package knows.
 */
export const DEFAULT_MODELS: Record<AiProvider, string> = {
  openai: 'gpt-4o-mini',
  anthropic: 'claude-haiku-4-5',
  google: 'gemini-2.5-flash',
  mistral: 'mistral-small-latest',
  groq: 'llama-3.3-70b-versatile',
  deepseek: 'deepseek-v4-flash',
  xai: 'grok-4.3',
  openrouter: 'openai/gpt-4o-mini',
};

export interface ModelSettings {
  apiKey: string;
  /** The provider's API root (e.g. `https://api.openai.com/v1`); undefined: the provider's own. */
  baseURL?: string;
  modelId: string;
}

/** A provider's language model; its package is loaded when first asked for (see ../sdk.ts). */
export async function languageModel(
  provider: AiProvider,
  { apiKey, baseURL, modelId }: ModelSettings,
): Promise<LanguageModel> {
  const settings = { apiKey, ...(baseURL === undefined ? {} : { baseURL }) };
  switch (provider) {
    // Chat completions rather than the Responses API: it is what OpenAI-compatible gateways speak.
    case 'openai':
      return (await import('@ai-sdk/openai')).createOpenAI(settings).chat(modelId);
    case 'anthropic':
      return (await import('@ai-sdk/anthropic')).createAnthropic(settings)(modelId);
    case 'google':
      return (await import('@ai-sdk/google')).createGoogleGenerativeAI(settings)(modelId);
    case 'mistral':
      return (await import('@ai-sdk/mistral')).createMistral(settings)(modelId);
    case 'groq':
      return (await import('@ai-sdk/groq')).createGroq(settings)(modelId);
    case 'deepseek':
      return (await import('@ai-sdk/deepseek')).createDeepSeek(settings)(modelId);
    case 'xai':
      return (await import('@ai-sdk/xai')).createXai(settings).chat(modelId);
    case 'openrouter':
      return (await import('@openrouter/ai-sdk-provider')).createOpenRouter(settings).chat(modelId);
  }
}
