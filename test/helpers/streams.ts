// Event streams and limits as the tests meet them: a stream opened (a log follow, the agent's stream)
// and held open until closed, or its refusal read; and the 429 a limit answers with.
import { type IncomingMessage, request } from 'node:http';
import { expect } from 'vitest';
import { type CallResult, expectProblem } from './platform.js';

/** What an opened stream answered: 200 and a way to close it, or a refusal with its problem. */
export interface Opened extends CallResult {
  close(): void;
}

/** Opens an event stream (GET log follow, POST agent stream) and resolves once it is answered. */
export function openStream(url: string, key: string, body?: unknown): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      agent: false,
      timeout: 10_000,
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url}`)));
    req.on('error', reject);
    req.on('response', (res) => {
      const headers = new Headers(res.headers as Record<string, string>);
      if (res.statusCode === 200) {
        res.on('error', () => undefined);
        res.resume();
        resolve({ status: 200, headers, body: undefined, close: () => req.destroy() });
        return;
      }
      readJson(res).then((parsed) =>
        resolve({ status: res.statusCode ?? 0, headers, body: parsed, close() {} }),
      );
    });
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

export async function readJson(res: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString();
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Asserts a 429 limit_reached problem for `name` at `value`, with a detail that says what to do. */
export function expectLimit(result: CallResult, name: string, value: number): void {
  const problem = expectProblem(result, 429, 'limit_reached') as unknown as {
    detail: string;
    limit: { name: string; value: number };
  };
  expect(problem.limit).toEqual({ name, value });
  expect(problem.detail).toContain(`limit "${name}" is ${value}`);
  expect(problem.detail).toContain(`--limit-${name}`);
}
