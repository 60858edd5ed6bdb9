// A platform whose included AI engine is OpenAI-compatible and answered by a local fake (fake-ai.ts):
// the setup the AI builder, agent and AI contract suites share, started together and closed together.
import type { AiConfig, PlatformConfigInput } from '../../src/server/config.js';
import { type FakeAi, startFakeAnthropic, startFakeOpenAI } from './fake-ai.js';
import { startPlatform, type TestPlatform } from './platform.js';

/** The `ai` config of an included `openai` engine (key `sk-test` unless `ai` names one) reached at `fake`. */
export function fakeOpenAiEngine(fake: FakeAi, ai: Partial<AiConfig> = {}) {
  return {
    provider: 'openai' as const,
    key: 'sk-test',
    ...ai,
    baseUrls: { openai: fake.baseUrl, ...ai.baseUrls },
  } satisfies Partial<AiConfig>;
}

export interface AiPlatform {
  tp: TestPlatform;
  fake: FakeAi;
  /** Closes the platform, then the fake. */
  close(): Promise<void>;
}

/** Starts the fake, then a platform of `config` whose `ai` is `fakeOpenAiEngine(fake, config.ai)`. */
export async function startAiPlatform(config: PlatformConfigInput = {}): Promise<AiPlatform> {
  const fake = await startFakeOpenAI();
  let tp: TestPlatform;
  try {
    tp = await startPlatform({ ...config, ai: fakeOpenAiEngine(fake, config.ai) });
  } catch (error) {
    await fake.close();
    throw error;
  }
  return {
    tp,
    fake,
    close: async () => {
      await tp.close();
      await fake.close();
    },
  };
}

export interface AiPlatforms {
  openai: FakeAi;
  anthropic: FakeAi;
  /** Its included engine is `openai`, through the fake. */
  included: TestPlatform;
  /** No included engine; it reaches both fakes when an account brings its own key. */
  bare: TestPlatform;
  /** Closes both platforms, then both fakes. */
  close(): Promise<void>;
}

/**
 * Fakes of OpenAI and Anthropic, and two platforms that reach them: one whose included engine is
 * `fakeOpenAiEngine(openai, config.ai)` (with `config`), one with no engine (the own-key paths).
 */
export async function startAiPlatforms(config: PlatformConfigInput = {}): Promise<AiPlatforms> {
  const [openai, anthropic] = await Promise.all([startFakeOpenAI(), startFakeAnthropic()]);
  const baseUrls = { openai: openai.baseUrl, anthropic: anthropic.baseUrl };
  const started = await Promise.allSettled([
    startPlatform({ ...config, ai: fakeOpenAiEngine(openai, { ...config.ai, baseUrls }) }),
    startPlatform({ ai: { baseUrls } }),
  ]);
  const [included, bare] = started.map((s) => (s.status === 'fulfilled' ? s.value : undefined));
  const close = async () => {
    await Promise.all([included?.close(), bare?.close(), openai.close(), anthropic.close()]);
  };
  if (!included || !bare) {
    await close();
    throw (started.find((s) => s.status === 'rejected') as PromiseRejectedResult).reason;
  }
  return { openai, anthropic, included, bare, close };
}
