// API.md §3 and §9 with the AI engines of §8: which engine a request gets (own key, included, none),
// the own key's life over HTTP (saved encrypted, never shown in full), metering through the ledger
// (the included engine only), the per-account rate limit, the 402 on an empty balance, the verified
// email rule, and real AI SDK calls (generateText, streamText, tool calls) through the local fakes of
// the OpenAI and Anthropic wire protocols.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AiEngines, type ResolvedEngine, assertEmailVerified } from '../../src/server/ai/engines.js';
import type { PlatformConfig } from '../../src/server/config.js';
import { ApiError } from '../../src/server/errors.js';
import { Account, UsageEntry } from '../../src/shared/api/account.js';
import { type AiPlatforms, startAiPlatforms } from '../helpers/ai-platform.js';
import type { FakeAi } from '../helpers/fake-ai.js';
import { call, expectProblem, type TestPlatform } from '../helpers/platform.js';

const INCLUDED_KEY = 'sk-included-service-key-0000';
const OWN_OPENAI_KEY = 'sk-proj-OwnKeyOfTheUserXyZ1234567890abcd9f2a';
const OWN_ANTHROPIC_KEY = 'sk-ant-api03-UsersOwnAnthropicKey-ZZZZ-7c1e';
const SECRET = 'a-test-server-secret-of-at-least-32-characters';

let openai: FakeAi;
let anthropic: FakeAi;
/** With an included engine (openai, through the fake). */
let p: TestPlatform;
/** With no included engine. */
let bare: TestPlatform;

let world: AiPlatforms;

beforeAll(async () => {
  world = await startAiPlatforms({
    secret: SECRET,
    ai: {
      key: INCLUDED_KEY,
      ratePerMinute: 1000,
      prices: { input_per_mtok_usd: 3, output_per_mtok_usd: 15 },
    },
  });
  ({ openai, anthropic, included: p, bare } = world);
});

afterAll(() => world?.close());

/** Awaits a promise that must fail with an ApiError of this code; returns it. */
async function apiError(promise: Promise<unknown>, code: string): Promise<ApiError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  expect((error as ApiError).code).toBe(code);
  return error as ApiError;
}

/** Another engines instance over a platform's store, with its config changed and a clock of our own. */
function enginesWith(
  t: TestPlatform,
  ai: Partial<PlatformConfig['ai']>,
  now?: () => number,
  secret: string = SECRET,
): AiEngines {
  const config = { ...t.platform.config, ai: { ...t.platform.config.ai, ...ai } };
  return new AiEngines(t.platform.db, config, t.platform.ledger, secret, now);
}

async function putKey(t: TestPlatform, key: string, body: unknown) {
  return call(`${t.api}/account/ai-key`, { method: 'PUT', key, body });
}

async function usage(t: TestPlatform, key: string) {
  const result = await call<unknown[]>(`${t.api}/account/usage`, { key });
  expect(result.status).toBe(200);
  return result.body.map((entry) => UsageEntry.parse(entry));
}

async function available(t: TestPlatform, key: string): Promise<number> {
  return Account.parse((await call(`${t.api}/account`, { key })).body).balance.available_usd;
}

const weatherTool = (calls: unknown[]) =>
  tool({
    description: 'The weather in a city',
    inputSchema: z.object({ city: z.string() }),
    execute: async (input) => {
      calls.push(input);
      return { city: input.city, sky: 'sunny' };
    },
  });

describe('choosing an engine', () => {
  it('gives no engine at all on a platform without one to an account without a key (offline)', async () => {
    const account = await bare.newAccount();
    expect(await bare.platform.engines.resolve(account.accountId)).toBeNull();
  });

  it('answers 503 with how to set it up when the included engine is asked for but not configured', async () => {
    const account = await bare.newAccount();
    const error = await apiError(bare.platform.engines.resolve(account.accountId, 'included'), 'unavailable');
    expect(error.status).toBe(503);
    expect(error.detail).toContain('start the platform with --ai-provider and WHARF_AI_KEY');
  });

  it('says WHARF_AI_KEY is missing when a provider is configured without a key', async () => {
    const account = await bare.newAccount();
    const engines = enginesWith(bare, { provider: 'openai', key: null });
    expect(await engines.resolve(account.accountId)).toBeNull();
    const error = await apiError(engines.resolve(account.accountId, 'included'), 'unavailable');
    expect(error.detail).toContain('WHARF_AI_KEY is not set');
  });

  it('answers 503 pointing at Settings when own_key is asked for but none is saved', async () => {
    const account = await p.newAccount();
    const error = await apiError(p.platform.engines.resolve(account.accountId, 'own_key'), 'unavailable');
    expect(error.status).toBe(503);
    expect(error.detail).toBe(
      'no AI key is saved for this account: add one in Settings (PUT /account/ai-key)',
    );
  });

  it('uses the included engine with its default model when the account has no key', async () => {
    const account = await p.newAccount();
    const engine = await p.platform.engines.resolve(account.accountId);
    expect(engine).toMatchObject({ kind: 'included', provider: 'openai', modelId: 'gpt-4o-mini' });
  });

  it('prefers the saved own key, and still gives the included engine when asked for it', async () => {
    const account = await p.newAccount();
    expect((await putKey(p, account.key, { provider: 'anthropic', key: OWN_ANTHROPIC_KEY })).status).toBe(
      200,
    );
    expect(await p.platform.engines.resolve(account.accountId)).toMatchObject({
      kind: 'own_key',
      provider: 'anthropic',
      modelId: 'claude-haiku-4-5',
    });
    expect(await p.platform.engines.resolve(account.accountId, 'own_key')).toMatchObject({ kind: 'own_key' });
    expect(await p.platform.engines.resolve(account.accountId, 'included')).toMatchObject({
      kind: 'included',
      provider: 'openai',
    });
  });

  it('uses the configured own-key model and the included model when set', async () => {
    const account = await p.newAccount();
    await putKey(p, account.key, { provider: 'anthropic', key: OWN_ANTHROPIC_KEY });
    const engines = enginesWith(p, {
      model: 'gpt-4.1-nano',
      ownKeyModels: { anthropic: 'claude-sonnet-4-0' },
    });
    expect((await engines.resolve(account.accountId))?.modelId).toBe('claude-sonnet-4-0');
    expect((await engines.resolve(account.accountId, 'included'))?.modelId).toBe('gpt-4.1-nano');
  });

  it('refuses a key row copied to another account: it is bound to the account it was saved for', async () => {
    const owner = await p.newAccount();
    const other = await p.newAccount();
    await putKey(p, owner.key, { provider: 'openai', key: OWN_OPENAI_KEY });
    const row = await p.platform.db
      .selectFrom('ai_keys')
      .selectAll()
      .where('account_id', '=', owner.accountId)
      .executeTakeFirstOrThrow();
    await p.platform.db
      .insertInto('ai_keys')
      .values({ ...row, account_id: other.accountId })
      .execute();
    const error = await apiError(p.platform.engines.resolve(other.accountId), 'unavailable');
    expect(error.detail).toContain('can no longer be decrypted');
    // The owner's key still works; and under another server secret it no longer does.
    expect(await p.platform.engines.resolve(owner.accountId)).toMatchObject({ kind: 'own_key' });
    const rotated = enginesWith(p, {}, undefined, `${SECRET}-rotated`);
    await apiError(rotated.resolve(owner.accountId), 'unavailable');
  });
});

describe('the own key over HTTP', () => {
  it('saves a key and shows it only masked, in the PUT answer and in GET /account', async () => {
    const account = await p.newAccount();
    const put = await putKey(p, account.key, { provider: 'openai', key: OWN_OPENAI_KEY });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ provider: 'openai', masked: 'sk-…9f2a' });
    const got = await call(`${p.api}/account`, { key: account.key });
    expect(Account.parse(got.body).ai_key).toEqual({ provider: 'openai', masked: 'sk-…9f2a' });
  });

  it('never returns the key in full: not in any answer, nor in clear in the database files', async () => {
    const account = await p.newAccount();
    const put = await putKey(p, account.key, { provider: 'openai', key: OWN_OPENAI_KEY });
    const middle = OWN_OPENAI_KEY.slice(8, 30);
    const answers = [
      put,
      await call(`${p.api}/account`, { key: account.key }),
      await call(`${p.api}/account/usage`, { key: account.key }),
      await call(`${p.api}/keys`, { key: account.key }),
      await putKey(p, account.key, { provider: 'openai', key: `${OWN_OPENAI_KEY} x` }),
      await call(`${p.api}/openapi.json`),
    ];
    for (const answer of answers) {
      const text = JSON.stringify(answer.body);
      expect(text).not.toContain(OWN_OPENAI_KEY);
      expect(text).not.toContain(middle);
    }
    for (const file of readdirSync(p.dataDir).filter((f) => f.startsWith('platform.db'))) {
      expect(readFileSync(join(p.dataDir, file)).includes(middle), file).toBe(false);
    }
  });

  it('replaces the saved key on a second PUT', async () => {
    const account = await p.newAccount();
    await putKey(p, account.key, { provider: 'openai', key: OWN_OPENAI_KEY });
    const second = await putKey(p, account.key, { provider: 'anthropic', key: OWN_ANTHROPIC_KEY });
    expect(second.body).toEqual({ provider: 'anthropic', masked: 'sk-…7c1e' });
    expect(Account.parse((await call(`${p.api}/account`, { key: account.key })).body).ai_key).toEqual(
      second.body,
    );
  });

  it('rejects an unknown provider and a bad key with 422 naming the field', async () => {
    const account = await p.newAccount();
    const cases: Array<[unknown, string]> = [
      [{ provider: 'cohere', key: OWN_OPENAI_KEY }, 'provider'],
      [{ provider: 'openai', key: 'short' }, 'key'],
      [{ provider: 'openai', key: 'has a space in it' }, 'key'],
      [{ provider: 'openai', key: 'x'.repeat(513) }, 'key'],
      [{ provider: 'openai' }, 'key'],
      [{ provider: 'openai', key: OWN_OPENAI_KEY, extra: 1 }, 'extra'],
    ];
    for (const [body, path] of cases) {
      const problem = expectProblem(await putKey(p, account.key, body), 422, 'validation_failed');
      expect(
        problem.errors?.map((e) => e.path),
        JSON.stringify(body),
      ).toContain(path);
    }
    expect(Account.parse((await call(`${p.api}/account`, { key: account.key })).body).ai_key).toBeNull();
  });

  it('needs the full scope', async () => {
    const account = await p.newAccount({ scopes: ['deploy'] });
    expectProblem(
      await putKey(p, account.key, { provider: 'openai', key: OWN_OPENAI_KEY }),
      403,
      'forbidden',
    );
    expectProblem(
      await call(`${p.api}/account/ai-key`, { method: 'DELETE', key: account.key }),
      403,
      'forbidden',
    );
    expectProblem(await putKey(p, '', { provider: 'openai', key: OWN_OPENAI_KEY }), 401, 'unauthorized');
  });

  it('deletes the key, then answers 404 as there is none', async () => {
    const account = await p.newAccount();
    await putKey(p, account.key, { provider: 'openai', key: OWN_OPENAI_KEY });
    const deleted = await call(`${p.api}/account/ai-key`, { method: 'DELETE', key: account.key });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ deleted: true });
    expect(Account.parse((await call(`${p.api}/account`, { key: account.key })).body).ai_key).toBeNull();
    expect(await p.platform.engines.resolve(account.accountId)).toMatchObject({ kind: 'included' });
    expectProblem(
      await call(`${p.api}/account/ai-key`, { method: 'DELETE', key: account.key }),
      404,
      'not_found',
    );
  });

  it("keeps each account's key to itself", async () => {
    const a = await p.newAccount();
    const b = await p.newAccount();
    await putKey(p, a.key, { provider: 'openai', key: OWN_OPENAI_KEY });
    expect(Account.parse((await call(`${p.api}/account`, { key: b.key })).body).ai_key).toBeNull();
    expectProblem(await call(`${p.api}/account/ai-key`, { method: 'DELETE', key: b.key }), 404, 'not_found');
    expect(Account.parse((await call(`${p.api}/account`, { key: a.key })).body).ai_key).not.toBeNull();
  });
});

describe('metering', () => {
  it('charges the included engine by its token prices, once per idempotency key', async () => {
    const account = await p.newAccount();
    const engine = (await p.platform.engines.resolve(account.accountId)) as ResolvedEngine;
    const before = await available(p, account.key);
    // 1,000 in × $3/Mtok + 2,000 out × $15/Mtok = $0.003 + $0.03
    const cost = await p.platform.engines.meter(
      account.accountId,
      engine,
      { inputTokens: 1000, outputTokens: 2000 },
      'AI build of hello',
      'ai:test:1',
    );
    expect(cost).toBeCloseTo(0.033, 9);
    await p.platform.engines.meter(
      account.accountId,
      engine,
      { inputTokens: 1000, outputTokens: 2000 },
      'AI build of hello',
      'ai:test:1',
    );
    const entries = (await usage(p, account.key)).filter((e) => e.kind === 'ai_usage');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ amount_usd: -0.033, description: 'AI build of hello' });
    expect(await available(p, account.key)).toBeCloseTo(before - 0.033, 9);
  });

  it('does not bill the own key', async () => {
    const account = await p.newAccount();
    await putKey(p, account.key, { provider: 'openai', key: OWN_OPENAI_KEY });
    const engine = (await p.platform.engines.resolve(account.accountId)) as ResolvedEngine;
    expect(engine.kind).toBe('own_key');
    const before = await available(p, account.key);
    const cost = await p.platform.engines.meter(
      account.accountId,
      engine,
      { inputTokens: 50_000, outputTokens: 50_000 },
      'agent run',
      'ai:test:own',
    );
    expect(cost).toBe(0);
    expect((await usage(p, account.key)).filter((e) => e.kind === 'ai_usage')).toEqual([]);
    expect(await available(p, account.key)).toBe(before);
  });

  it('charges nothing for a call that reports no tokens', async () => {
    const account = await p.newAccount();
    const engine = (await p.platform.engines.resolve(account.accountId)) as ResolvedEngine;
    expect(await p.platform.engines.meter(account.accountId, engine, {}, 'nothing', 'ai:test:none')).toBe(0);
    expect((await usage(p, account.key)).filter((e) => e.kind === 'ai_usage')).toEqual([]);
  });
});

describe('limits', () => {
  it('rate-limits each account to ratePerMinute calls a minute with 429 and Retry-After', async () => {
    let now = 1_700_000_000_000;
    const engines = enginesWith(p, { ratePerMinute: 3 }, () => now);
    const a = await p.newAccount();
    const b = await p.newAccount();
    const engine = (await engines.resolve(a.accountId)) as ResolvedEngine;
    for (let i = 0; i < 3; i += 1) {
      await engines.admit(a.accountId, engine);
      now += 10_000;
    }
    // Calls at 0, 10 and 20 s; now 30 s: the first leaves the window at 60 s.
    const limited = await apiError(engines.admit(a.accountId, engine), 'rate_limited');
    expect(limited.status).toBe(429);
    expect(limited.headers).toEqual({ 'retry-after': '30' });
    expect(limited.detail).toContain('3 AI calls per minute');
    // Another account is not affected.
    await engines.admit(b.accountId, engine);
    now += 29_000;
    expect((await apiError(engines.admit(a.accountId, engine), 'rate_limited')).headers).toEqual({
      'retry-after': '1',
    });
    now += 1_001;
    await engines.admit(a.accountId, engine);
    expect((await apiError(engines.admit(a.accountId, engine), 'rate_limited')).headers).toEqual({
      'retry-after': '10',
    });
  });

  it('rate-limits the own key too', async () => {
    const now = 1_700_000_000_000;
    const engines = enginesWith(p, { ratePerMinute: 1 }, () => now);
    const account = await p.newAccount();
    await putKey(p, account.key, { provider: 'openai', key: OWN_OPENAI_KEY });
    const engine = (await engines.resolve(account.accountId)) as ResolvedEngine;
    expect(engine.kind).toBe('own_key');
    await engines.admit(account.accountId, engine);
    await apiError(engines.admit(account.accountId, engine), 'rate_limited');
  });

  it('refuses the included engine with 402 when the balance is empty, but not the own key', async () => {
    const account = await p.newAccount();
    const left = await p.platform.ledger.availableMicros(account.accountId);
    await p.platform.ledger.charge({
      accountId: account.accountId,
      micros: left,
      kind: 'test',
      description: 'spend it all',
      idempotencyKey: 'test:drain',
    });
    const included = (await p.platform.engines.resolve(account.accountId)) as ResolvedEngine;
    const error = await apiError(
      p.platform.engines.admit(account.accountId, included),
      'insufficient_balance',
    );
    expect(error.status).toBe(402);
    await putKey(p, account.key, { provider: 'openai', key: OWN_OPENAI_KEY });
    const own = (await p.platform.engines.resolve(account.accountId)) as ResolvedEngine;
    await p.platform.engines.admit(account.accountId, own);
  });

  it('takes what is left for a call that cost more than the balance, then answers 402', async () => {
    const account = await p.newAccount();
    const left = await p.platform.ledger.availableMicros(account.accountId);
    await p.platform.ledger.charge({
      accountId: account.accountId,
      micros: left - 10_000,
      kind: 'test',
      description: 'leave one cent',
      idempotencyKey: 'test:drain',
    });
    const engine = (await p.platform.engines.resolve(account.accountId)) as ResolvedEngine;
    await p.platform.engines.admit(account.accountId, engine);
    await apiError(
      p.platform.engines.meter(
        account.accountId,
        engine,
        { outputTokens: 100_000 },
        'big build',
        'ai:test:big',
      ),
      'insufficient_balance',
    );
    expect(await available(p, account.key)).toBe(0);
    const entry = (await usage(p, account.key)).find((e) => e.kind === 'ai_usage');
    expect(entry).toMatchObject({
      amount_usd: -0.01,
      description: 'big build (partly paid: the balance ran out)',
    });
    await apiError(p.platform.engines.admit(account.accountId, engine), 'insufficient_balance');
  });

  it('requires a verified email (403 email_not_verified)', async () => {
    const unverified = await p.newAccount({ verified: false });
    const error = await apiError(
      assertEmailVerified(p.platform.db, unverified.accountId),
      'email_not_verified',
    );
    expect(error.status).toBe(403);
    const verified = await p.newAccount();
    await expect(assertEmailVerified(p.platform.db, verified.accountId)).resolves.toBeUndefined();
  });
});

describe('model calls through the fakes', () => {
  it('runs generateText with a tool call on the included engine (OpenAI chat completions), metered', async () => {
    const account = await p.newAccount();
    const engine = (await p.platform.engines.resolve(account.accountId)) as ResolvedEngine;
    const from = openai.requests.length;
    openai.push(
      { toolCalls: [{ name: 'weather', args: { city: 'Oslo' } }], usage: { input: 100, output: 20 } },
      (body) => ({
        text: `Sunny (${body.messages.filter((m: { role: string }) => m.role === 'tool').length} tool result)`,
        usage: { input: 150, output: 30 },
      }),
    );
    const calls: unknown[] = [];
    await p.platform.engines.admit(account.accountId, engine);
    const result = await generateText({
      model: engine.model,
      tools: { weather: weatherTool(calls) },
      stopWhen: stepCountIs(3),
      prompt: 'What is the weather in Oslo?',
    });
    expect(calls).toEqual([{ city: 'Oslo' }]);
    expect(result.text).toBe('Sunny (1 tool result)');
    expect(result.totalUsage).toMatchObject({ inputTokens: 250, outputTokens: 50 });
    const sent = openai.requests.slice(from);
    expect(sent.map((r) => r.path)).toEqual(['/v1/chat/completions', '/v1/chat/completions']);
    expect(sent[0]?.headers.authorization).toBe(`Bearer ${INCLUDED_KEY}`);
    expect(sent[0]?.body).toMatchObject({ model: 'gpt-4o-mini', tools: [{ type: 'function' }] });
    const toolMessage = sent[1]?.body.messages.find((m: { role: string }) => m.role === 'tool');
    expect(JSON.parse(toolMessage.content)).toEqual({ city: 'Oslo', sky: 'sunny' });

    const cost = await p.platform.engines.meter(
      account.accountId,
      engine,
      result.totalUsage,
      'agent run',
      'ai:test:generate',
    );
    expect(cost).toBeCloseTo((250 * 3 + 50 * 15) / 1e6, 9);
    expect((await usage(p, account.key)).find((e) => e.kind === 'ai_usage')?.amount_usd).toBeCloseTo(
      -cost,
      9,
    );
  });

  it('runs streamText with a tool call on OpenAI chat completions, with usage in the last chunk', async () => {
    const account = await p.newAccount();
    const engine = (await p.platform.engines.resolve(account.accountId)) as ResolvedEngine;
    const from = openai.requests.length;
    openai.push(
      {
        text: 'Let me look.',
        toolCalls: [{ name: 'weather', args: { city: 'Bergen' } }],
        usage: { input: 40, output: 8 },
      },
      { text: 'It is sunny in Bergen today.', usage: { input: 60, output: 9 } },
    );
    const calls: unknown[] = [];
    const result = streamText({
      model: engine.model,
      tools: { weather: weatherTool(calls) },
      stopWhen: stepCountIs(3),
      prompt: 'Weather in Bergen?',
    });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);
    expect(deltas.length).toBeGreaterThan(2);
    expect(deltas.join('')).toBe('Let me look.It is sunny in Bergen today.');
    expect(calls).toEqual([{ city: 'Bergen' }]);
    expect(await result.totalUsage).toMatchObject({ inputTokens: 100, outputTokens: 17 });
    const sent = openai.requests.slice(from);
    expect(sent[0]?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('runs generateText and streamText with tool calls on an own Anthropic key (messages API), unbilled', async () => {
    const account = await p.newAccount();
    await putKey(p, account.key, { provider: 'anthropic', key: OWN_ANTHROPIC_KEY });
    const engine = (await p.platform.engines.resolve(account.accountId)) as ResolvedEngine;
    expect(engine).toMatchObject({ kind: 'own_key', provider: 'anthropic' });
    const from = anthropic.requests.length;
    anthropic.push(
      {
        text: 'Checking.',
        toolCalls: [{ name: 'weather', args: { city: 'Rome' } }],
        usage: { input: 70, output: 12 },
      },
      { text: 'Rome is sunny.', usage: { input: 90, output: 6 } },
      { toolCalls: [{ name: 'weather', args: { city: 'Lima' } }], usage: { input: 20, output: 4 } },
      { text: 'Lima is sunny too.', usage: { input: 30, output: 5 } },
    );
    const calls: unknown[] = [];
    const generated = await generateText({
      model: engine.model,
      tools: { weather: weatherTool(calls) },
      stopWhen: stepCountIs(3),
      prompt: 'Weather in Rome?',
    });
    expect(generated.text).toBe('Rome is sunny.');
    expect(generated.totalUsage).toMatchObject({ inputTokens: 160, outputTokens: 18 });

    const streamed = streamText({
      model: engine.model,
      tools: { weather: weatherTool(calls) },
      stopWhen: stepCountIs(3),
      prompt: 'Weather in Lima?',
    });
    let text = '';
    for await (const delta of streamed.textStream) text += delta;
    expect(text).toBe('Lima is sunny too.');
    expect(await streamed.totalUsage).toMatchObject({ inputTokens: 50, outputTokens: 9 });
    expect(calls).toEqual([{ city: 'Rome' }, { city: 'Lima' }]);

    const sent = anthropic.requests.slice(from);
    expect(sent.map((r) => r.path)).toEqual(Array(4).fill('/v1/messages'));
    expect(sent.every((r) => r.headers['x-api-key'] === OWN_ANTHROPIC_KEY)).toBe(true);
    expect(sent[0]?.body).toMatchObject({ model: 'claude-haiku-4-5', tools: [{ name: 'weather' }] });
    expect(sent[2]?.body.stream).toBe(true);
    const toolResult = sent[1]?.body.messages
      .flatMap((m: { content: unknown }) => (Array.isArray(m.content) ? m.content : []))
      .find((c: { type: string }) => c.type === 'tool_result');
    expect(toolResult).toMatchObject({ tool_use_id: 'toolu_' + (from + 1) + '_0' });

    expect(
      await p.platform.engines.meter(
        account.accountId,
        engine,
        generated.totalUsage,
        'agent run',
        'ai:test:own',
      ),
    ).toBe(0);
    expect((await usage(p, account.key)).filter((e) => e.kind === 'ai_usage')).toEqual([]);
  });

  it("passes a scripted provider error through in the provider's error shape", async () => {
    const account = await p.newAccount();
    const engine = (await p.platform.engines.resolve(account.accountId)) as ResolvedEngine;
    openai.push({ error: { status: 400, message: 'the fake refuses this prompt' } });
    await expect(generateText({ model: engine.model, prompt: 'hi', maxRetries: 0 })).rejects.toThrow(
      /the fake refuses this prompt/,
    );
  });

  it('fails clearly when the fake has no scripted turn left', async () => {
    const account = await p.newAccount();
    const engine = (await p.platform.engines.resolve(account.accountId)) as ResolvedEngine;
    expect(openai.pending()).toBe(0);
    await expect(generateText({ model: engine.model, prompt: 'hi', maxRetries: 0 })).rejects.toThrow(
      /no scripted turn left/,
    );
  });
});
