// Replay on its own: a captured request sent again to a real local HTTP server, its Host set by the
// tunnel's mode, connection headers left out, edits applied, failures captured rather than thrown.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Exchange, toDetail } from '../../../src/core/capture/capture.js';
import { checkReplayInput, replayExchange } from '../../../src/core/replay.js';
import type { CapturedRequestDetail } from '../../../src/shared/api/tunnels.js';
import { BridgeError } from '../../../src/shared/bridge.js';
import { closedPort, startRecordingApp, type RecordingApp } from '../../helpers/local-app.js';

let app: RecordingApp;
let port: number;

beforeAll(async () => {
  app = await startRecordingApp((req, res) => {
    res.writeHead(201, { 'content-type': 'text/plain', 'x-app': 'yes' }).end(`got ${req.method} ${req.url}`);
  });
  port = app.port;
});

afterAll(() => app?.close());

/** A captured POST as the tunnel would have stored it (`bodyBytes` kept of `size`). */
function captured(body = '{"a":1}', size = body.length): CapturedRequestDetail {
  const exchange = new Exchange({
    tunnelId: 'tun_test',
    method: 'POST',
    path: '/orders?x=1',
    url: 'http://shop.tunnel.example.test:8788/orders?x=1',
    httpVersion: 'HTTP/1.1',
    requestHeaders: [
      { name: 'Host', value: 'shop.tunnel.example.test:8788' },
      { name: 'Content-Type', value: 'application/json' },
      { name: 'Connection', value: 'keep-alive' },
      { name: 'Content-Length', value: String(size) },
      { name: 'X-Trace', value: 'abc' },
    ],
    remoteAddr: '203.0.113.9:5000',
  });
  exchange.requestBody.push(Buffer.from(body));
  exchange.response(200, [{ name: 'content-type', value: 'text/plain' }]);
  const detail = toDetail(exchange.finish());
  return size > body.length ? { ...detail, request_size: size, request_body_truncated: true } : detail;
}

describe('replayExchange', () => {
  it('sends the request again with the public Host, without its connection headers, and captures the answer', async () => {
    const original = captured();
    const result = await replayExchange(original, {}, { port, hostMode: 'preserve', tunnelId: 'tun_now' });
    const sent = app.received.at(-1)!;
    expect(sent).toMatchObject({ method: 'POST', url: '/orders?x=1', body: '{"a":1}' });
    expect(sent.headers.host).toBe('shop.tunnel.example.test:8788');
    expect(sent.headers['x-trace']).toBe('abc');
    expect(sent.headers.connection).not.toBe('keep-alive');
    expect(sent.headers['content-length']).toBe('7');
    expect(result.request).toMatchObject({
      status_code: 201,
      replay_of: original.id,
      tunnel_id: 'tun_now',
      remote_addr: '203.0.113.9:5000',
      error: null,
    });
    expect(result.responseBody.toString()).toBe('got POST /orders?x=1');
  });

  it('sets Host by the tunnel mode: localhost:<port> for rewrite, a fixed name as given', async () => {
    await replayExchange(captured(), {}, { port, hostMode: 'rewrite', tunnelId: 't' });
    expect(app.received.at(-1)!.headers.host).toBe(`localhost:${port}`);
    await replayExchange(captured(), {}, { port, hostMode: 'api.internal.test', tunnelId: 't' });
    expect(app.received.at(-1)!.headers.host).toBe('api.internal.test');
  });

  it('applies an edit: method, path, headers (a Host among them wins) and body', async () => {
    const edit = checkReplayInput({
      id: 'req_x',
      method: 'put',
      path: '/orders/7',
      headers: [
        { name: 'Host', value: 'edited.test' },
        { name: 'X-Edited', value: '1' },
      ],
      body: Buffer.from('changed').toString('base64'),
    });
    await replayExchange(captured(), edit, { port, hostMode: 'preserve', tunnelId: 't' });
    const sent = app.received.at(-1)!;
    expect(sent).toMatchObject({ method: 'PUT', url: '/orders/7', body: 'changed' });
    expect(sent.headers.host).toBe('edited.test');
    expect(sent.headers['x-edited']).toBe('1');
    expect(sent.headers['x-trace']).toBeUndefined();
  });

  it('refuses to replay a body the capture cut short, unless the edit gives one', async () => {
    const cut = captured('{"a":', 5_000_000);
    const error = await replayExchange(cut, {}, { port, hostMode: 'preserve', tunnelId: 't' }).catch(
      (e) => e,
    );
    expect(error).toBeInstanceOf(BridgeError);
    expect(error).toMatchObject({ status: 400 });
    expect((error as BridgeError).detail).toMatch(/only the first 5 of the 5000000 bytes/);
    const given = await replayExchange(
      cut,
      { body: Buffer.from('{}') },
      { port, hostMode: 'preserve', tunnelId: 't' },
    );
    expect(given.request.status_code).toBe(201);
  });

  it('captures a port nothing listens on as what happened, not as a thrown error', async () => {
    const deadPort = await closedPort();
    const result = await replayExchange(
      captured(),
      {},
      { port: deadPort, hostMode: 'preserve', tunnelId: 't' },
    );
    expect(result.request.error).toBe(`nothing is listening on 127.0.0.1:${deadPort}`);
    expect(result.request.status_code).toBe(502);
  });
});

describe('checkReplayInput', () => {
  it('names the field that is wrong', () => {
    const refusal = (input: object) => {
      try {
        checkReplayInput({ id: 'req_x', ...input } as never);
      } catch (error) {
        return (error as BridgeError).errors?.[0]?.path;
      }
      return null;
    };
    expect(refusal({ method: 'GE T' })).toBe('method');
    expect(refusal({ path: 'no-slash' })).toBe('path');
    expect(refusal({ path: '/a b' })).toBe('path');
    expect(refusal({ headers: 'x' })).toBe('headers');
    expect(refusal({ headers: [{ name: 'Bad Name', value: 'x' }] })).toBe('headers[0].name');
    expect(refusal({ headers: [{ name: 'X', value: 'a\r\nb' }] })).toBe('headers[0].value');
    expect(refusal({ body: '***' })).toBe('body');
    expect(refusal({ method: 'get', body: null })).toBeNull();
  });
});
