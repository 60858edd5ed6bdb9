// The providers that speak OpenAI's chat-completions wire protocol (OpenAI itself, Mistral, Groq,
// DeepSeek, xAI, OpenRouter) through the same languageModel() the engines use, against the local fake
// OpenAI-compatible server at each provider's configurable base URL: the request reaches
// `/v1/chat/completions` with the provider's key as a Bearer token and the configured model, and the
// text, a tool call and the token counts come back, plain and streamed. Google the same over its own
// generateContent protocol, against a fake of that. (Anthropic has its own fake and tests elsewhere.)
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { languageModel } from '../../src/server/ai/providers/index.js';
import type { AiProvider } from '../../src/shared/api/account.js';
import { type FakeAi, startFakeGoogle, startFakeOpenAI } from '../helpers/fake-ai.js';

const COMPATIBLE: AiProvider[] = ['openai', 'mistral', 'groq', 'deepseek', 'xai', 'openrouter'];

let fake: FakeAi;
beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake?.close();
});

/** A tool that answers the weather of a city, noting each input it gets in `seen`. */
function lookupTool(seen: unknown[]) {
  return tool({
    description: 'The weather of a city',
    inputSchema: jsonSchema<{ city: string }>({
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
    }),
    execute: async (input) => {
      seen.push(input);
      return { sky: 'sunny' };
    },
  });
}

const modelOf = (provider: AiProvider) =>
  languageModel(provider, {
    apiKey: `key-of-${provider}`,
    baseURL: fake.baseUrl,
    modelId: `model-of-${provider}`,
  });

describe.each(COMPATIBLE)('%s over the chat-completions protocol', (provider) => {
  it('sends the key and model to the base URL and reads the text and token counts', async () => {
    const before = fake.requests.length;
    fake.push({ text: `hello from ${provider}`, usage: { input: 42, output: 7 } });
    const result = await generateText({ model: await modelOf(provider), prompt: 'Say hello', maxRetries: 0 });
    expect(result.text).toBe(`hello from ${provider}`);
    expect(result.usage).toMatchObject({ inputTokens: 42, outputTokens: 7 });
    const request = fake.requests[before]!;
    expect(request.path).toBe('/v1/chat/completions');
    expect(request.headers.authorization).toBe(`Bearer key-of-${provider}`);
    expect(request.body.model).toBe(`model-of-${provider}`);
    expect(JSON.stringify(request.body.messages)).toContain('Say hello');
  });

  it('streams a reply that calls a tool, then the answer after its result', async () => {
    fake.push(
      {
        text: 'Looking it up. ',
        toolCalls: [{ name: 'lookup', args: { city: 'Lisbon' } }],
        // xAI sends each tool call whole, and its SDK reads only that.
        wholeToolCalls: provider === 'xai',
      },
      { text: `It is sunny (${provider})` },
    );
    const seen: unknown[] = [];
    const result = streamText({
      model: await modelOf(provider),
      prompt: 'Weather in Lisbon?',
      maxRetries: 0,
      stopWhen: stepCountIs(3),
      tools: { lookup: lookupTool(seen) },
    });
    expect(await result.text).toBe(`It is sunny (${provider})`);
    expect(seen).toEqual([{ city: 'Lisbon' }]);
    const followUp = fake.requests.at(-1)!;
    expect(followUp.body.stream).toBe(true);
    expect(JSON.stringify(followUp.body.messages)).toContain('sunny');
  });
});

describe('google over the generateContent protocol', () => {
  let google: FakeAi;
  beforeAll(async () => {
    google = await startFakeGoogle();
  });
  afterAll(async () => {
    await google?.close();
  });
  const model = () =>
    languageModel('google', { apiKey: 'key-of-google', baseURL: google.baseUrl, modelId: 'gemini-test' });

  it('sends the key and model to the base URL and reads the text and token counts', async () => {
    google.push({ text: 'hello from google', usage: { input: 42, output: 7 } });
    const result = await generateText({ model: await model(), prompt: 'Say hello', maxRetries: 0 });
    expect(result.text).toBe('hello from google');
    expect(result.usage).toMatchObject({ inputTokens: 42, outputTokens: 7 });
    const request = google.requests.at(-1)!;
    expect(request.path).toBe('/v1/models/gemini-test:generateContent');
    expect(request.headers['x-goog-api-key']).toBe('key-of-google');
    expect(JSON.stringify(request.body.contents)).toContain('Say hello');
  });

  it('streams a reply that calls a tool, then the answer after its result', async () => {
    google.push(
      { text: 'Looking it up. ', toolCalls: [{ name: 'lookup', args: { city: 'Lisbon' } }] },
      { text: 'It is sunny (google)' },
    );
    const seen: unknown[] = [];
    const result = streamText({
      model: await model(),
      prompt: 'Weather in Lisbon?',
      maxRetries: 0,
      stopWhen: stepCountIs(3),
      tools: { lookup: lookupTool(seen) },
    });
    expect(await result.text).toBe('It is sunny (google)');
    expect(seen).toEqual([{ city: 'Lisbon' }]);
    const followUp = google.requests.at(-1)!;
    expect(followUp.path).toBe('/v1/models/gemini-test:streamGenerateContent');
    expect(JSON.stringify(followUp.body.contents)).toContain('sunny');
  });
});
