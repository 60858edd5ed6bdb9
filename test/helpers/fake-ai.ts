// Local fake AI providers that speak the real wire protocols, scripted turn by turn: an OpenAI-compatible
// chat-completions server (`POST /v1/chat/completions`) and an Anthropic messages server
// (`POST /v1/messages`), each with and without streaming, with tool calls and token usage. Each request
// takes the next scripted turn (a turn may be a function of the request body); with none left the
// server answers 500 saying so (the AI SDK retries a 500 twice, with backoff, unless `maxRetries: 0`).
// Every request is recorded (path, parsed body, lower-cased headers) so tests can check what the
// platform sent, e.g. which key (`authorization` / `x-api-key`).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedTurn {
  /** The assistant's text (streamed in a few pieces when the request streams). */
  text?: string;
  /** Tool calls the assistant makes after its text; `args` is sent as JSON. */
  toolCalls?: Array<{ name: string; args: unknown }>;
  /** Token counts reported for the turn (default 10 in, 5 out). */
  usage?: { input: number; output: number };
  /** Answer with this HTTP error instead (in the provider's error shape). */
  error?: { status: number; message: string };
  /**
   * OpenAI-compatible streams: each tool call in one chunk, id, name and arguments together, as xAI
   * sends them (its SDK requires it), instead of the name first and the arguments in pieces as OpenAI.
   */
  wholeToolCalls?: boolean;
}

/** A scripted turn, or one computed from the request body. */
export type Turn = ScriptedTurn | ((body: any) => ScriptedTurn);

export interface FakeAiRequest {
  path: string;
  body: any;
  headers: Record<string, string>;
}

export interface FakeAi {
  /** Ends with `/v1`: the base URL the AI SDK providers take. */
  baseUrl: string;
  requests: FakeAiRequest[];
  push(...turns: Turn[]): void;
  /** Turns not yet taken. */
  pending(): number;
  close(): Promise<void>;
}

const DEFAULT_USAGE = { input: 10, output: 5 };

export function startFakeOpenAI(turns: Turn[] = []): Promise<FakeAi> {
  return startFake('OpenAI', '/v1/chat/completions', turns, answerOpenAI);
}

export function startFakeAnthropic(turns: Turn[] = []): Promise<FakeAi> {
  return startFake('Anthropic', '/v1/messages', turns, answerAnthropic);
}

/** Google's Gemini API: `POST /v1/models/<model>:generateContent` and `:streamGenerateContent?alt=sse`. */
export function startFakeGoogle(turns: Turn[] = []): Promise<FakeAi> {
  return startFake(
    'Google',
    /^\/v1\/models\/[^/:]+:(generateContent|streamGenerateContent)$/,
    turns,
    answerGoogle,
  );
}

type Answer = (res: ServerResponse, turn: ScriptedTurn, body: any, seq: number, path: string) => void;

async function startFake(
  name: string,
  path: string | RegExp,
  initial: Turn[],
  answer: Answer,
): Promise<FakeAi> {
  const queue: Turn[] = [...initial];
  const requests: FakeAiRequest[] = [];
  let seq = 0;
  const server: Server = createServer((req, res) => {
    void readBody(req).then((raw) => {
      const url = (req.url ?? '/').split('?')[0] ?? '/';
      let body: any = raw;
      try {
        body = raw === '' ? undefined : JSON.parse(raw);
      } catch {
        // not JSON: recorded as text
      }
      requests.push({ path: url, body, headers: flatHeaders(req) });
      seq += 1;
      if (req.method !== 'POST' || (typeof path === 'string' ? url !== path : !path.test(url))) {
        sendJson(res, 404, { error: { message: `fake ${name}: no route for ${req.method} ${url}` } });
        return;
      }
      const next = queue.shift();
      if (next === undefined) {
        sendJson(res, 500, {
          error: {
            type: 'fake_script_exhausted',
            message: `fake ${name}: no scripted turn left for request #${seq} (push more turns)`,
          },
        });
        return;
      }
      const turn = typeof next === 'function' ? next(body) : next;
      if (turn.error) {
        sendJson(res, turn.error.status, {
          type: 'error',
          error: { type: 'fake_error', message: turn.error.message },
        });
        return;
      }
      answer(res, turn, body, seq, url);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    push: (...turns) => void queue.push(...turns),
    pending: () => queue.length,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function flatHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(req.headers)) {
    if (value !== undefined) out[key] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function startSse(res: ServerResponse): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
}

/** Splits text into a few pieces (keeping the spaces) so streams carry more than one delta. */
function pieces(text: string): string[] {
  const parts = text.match(/\S+\s*|\s+/g) ?? [];
  return parts.length > 0 ? parts : [text];
}

// ---------------------------------------------------------------------------------------------------
// OpenAI chat completions

function answerOpenAI(res: ServerResponse, turn: ScriptedTurn, body: any, seq: number): void {
  const usage = turn.usage ?? DEFAULT_USAGE;
  const id = `chatcmpl-fake${seq}`;
  const model = typeof body?.model === 'string' ? body.model : 'fake-model';
  const created = Math.floor(Date.now() / 1000);
  const toolCalls = (turn.toolCalls ?? []).map((call, i) => ({
    id: `call_${seq}_${i}`,
    type: 'function' as const,
    function: { name: call.name, arguments: JSON.stringify(call.args ?? {}) },
  }));
  const finishReason = toolCalls.length > 0 ? 'tool_calls' : 'stop';
  const usageBody = {
    prompt_tokens: usage.input,
    completion_tokens: usage.output,
    total_tokens: usage.input + usage.output,
  };

  if (body?.stream !== true) {
    sendJson(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: turn.text ?? null,
            ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
          },
          finish_reason: finishReason,
        },
      ],
      usage: usageBody,
    });
    return;
  }

  startSse(res);
  const chunk = (choice: Record<string, unknown> | null, extra: Record<string, unknown> = {}) =>
    res.write(
      `data: ${JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        choices: choice ? [{ index: 0, ...choice }] : [],
        ...extra,
      })}\n\n`,
    );
  chunk({ delta: { role: 'assistant', content: '' }, finish_reason: null });
  if (turn.text) {
    for (const piece of pieces(turn.text)) chunk({ delta: { content: piece }, finish_reason: null });
  }
  toolCalls.forEach((call, index) => {
    if (turn.wholeToolCalls) {
      chunk({ delta: { tool_calls: [{ index, ...call }] }, finish_reason: null });
      return;
    }
    // The name first, then the arguments in two halves, as OpenAI streams them.
    chunk({
      delta: {
        tool_calls: [
          { index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } },
        ],
      },
      finish_reason: null,
    });
    const args = call.function.arguments;
    const half = Math.ceil(args.length / 2);
    for (const part of [args.slice(0, half), args.slice(half)].filter((p) => p !== '')) {
      chunk({ delta: { tool_calls: [{ index, function: { arguments: part } }] }, finish_reason: null });
    }
  });
  chunk({ delta: {}, finish_reason: finishReason });
  if (body?.stream_options?.include_usage === true) chunk(null, { usage: usageBody });
  res.end('data: [DONE]\n\n');
}

// ---------------------------------------------------------------------------------------------------
// Anthropic messages

function answerAnthropic(res: ServerResponse, turn: ScriptedTurn, body: any, seq: number): void {
  const usage = turn.usage ?? DEFAULT_USAGE;
  const id = `msg_fake${seq}`;
  const model = typeof body?.model === 'string' ? body.model : 'fake-model';
  const toolUses = (turn.toolCalls ?? []).map((call, i) => ({
    type: 'tool_use' as const,
    id: `toolu_${seq}_${i}`,
    name: call.name,
    input: call.args ?? {},
  }));
  const stopReason = toolUses.length > 0 ? 'tool_use' : 'end_turn';
  const content: Array<Record<string, unknown>> = [
    ...(turn.text ? [{ type: 'text', text: turn.text }] : []),
    ...toolUses,
  ];

  if (body?.stream !== true) {
    sendJson(res, 200, {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content,
      stop_reason: stopReason,
      stop_sequence: null,
      usage: { input_tokens: usage.input, output_tokens: usage.output },
    });
    return;
  }

  startSse(res);
  const event = (type: string, data: Record<string, unknown>) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  event('message_start', {
    message: {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: usage.input, output_tokens: 1 },
    },
  });
  let index = 0;
  if (turn.text) {
    event('content_block_start', { index, content_block: { type: 'text', text: '' } });
    for (const piece of pieces(turn.text)) {
      event('content_block_delta', { index, delta: { type: 'text_delta', text: piece } });
    }
    event('content_block_stop', { index });
    index += 1;
  }
  for (const use of toolUses) {
    event('content_block_start', {
      index,
      content_block: { type: 'tool_use', id: use.id, name: use.name, input: {} },
    });
    const json = JSON.stringify(use.input);
    const half = Math.ceil(json.length / 2);
    for (const part of [json.slice(0, half), json.slice(half)]) {
      event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: part } });
    }
    event('content_block_stop', { index });
    index += 1;
  }
  event('message_delta', {
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: { output_tokens: usage.output },
  });
  event('message_stop', {});
  res.end();
}

// ---------------------------------------------------------------------------------------------------
// Google Gemini generateContent

function answerGoogle(res: ServerResponse, turn: ScriptedTurn, _body: any, _seq: number, path: string): void {
  const usage = turn.usage ?? DEFAULT_USAGE;
  const usageMetadata = {
    promptTokenCount: usage.input,
    candidatesTokenCount: usage.output,
    totalTokenCount: usage.input + usage.output,
  };
  const calls = (turn.toolCalls ?? []).map((call) => ({
    functionCall: { name: call.name, args: call.args ?? {} },
  }));
  const candidate = (parts: unknown[], last: boolean) => ({
    content: { role: 'model', parts },
    index: 0,
    ...(last ? { finishReason: 'STOP' } : {}),
  });
  if (!path.endsWith(':streamGenerateContent')) {
    const parts = [...(turn.text ? [{ text: turn.text }] : []), ...calls];
    sendJson(res, 200, { candidates: [candidate(parts, true)], usageMetadata });
    return;
  }
  // A chunk per piece of text; the last one carries the function calls, the finish reason and usage.
  startSse(res);
  const texts = turn.text ? pieces(turn.text) : [];
  const last = texts.pop();
  for (const text of texts)
    res.write(`data: ${JSON.stringify({ candidates: [candidate([{ text }], false)] })}\r\n\r\n`);
  const finalParts = [...(last === undefined ? [] : [{ text: last }]), ...calls];
  res.end(`data: ${JSON.stringify({ candidates: [candidate(finalParts, true)], usageMetadata })}\r\n\r\n`);
}
