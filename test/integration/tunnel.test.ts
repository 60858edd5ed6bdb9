// Tunnels end to end: a real platform (API + edge), a real local app, the real tunnel client.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TunnelClient } from '../../src/core/tunnel/client.js';
import type { CapturedExchange } from '../../src/core/capture/capture.js';
import { type TestPlatform, call, startPlatform } from '../helpers/platform.js';
import { viaEdge } from '../helpers/deploy.js';

let tp: TestPlatform;
let app: Server;
let appPort: number;

beforeAll(async () => {
  tp = await startPlatform();
  app = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.setHeader('x-app', 'yes');
      res.end(`${req.method} ${req.url} host=${req.headers.host} body=${Buffer.concat(chunks).toString()}`);
    });
  });
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
  appPort = (app.address() as AddressInfo).port;
});

afterAll(async () => {
  app?.close();
  await tp?.close();
});

describe('tunnel', () => {
  it('relays a public request to the local app and captures it on both sides', async () => {
    const client = new TunnelClient({
      platformUrl: tp.api.replace(/\/api\/v1$/, ''),
      apiKey: tp.key,
      localPort: appPort,
      subdomain: 'demo',
    });
    const seen: CapturedExchange[] = [];
    client.on('exchange', (e) => seen.push(e));
    const info = await client.start();
    expect(info.subdomain).toBe('demo');
    expect(info.url).toBe(`http://demo.tunnel.localhost:${tp.edgePort}`);
    const answer = await viaEdge(tp.edgePort, 'demo.tunnel.localhost', '/hello?x=1');
    expect(answer.status).toBe(200);
    expect(answer.body).toBe(`GET /hello?x=1 host=demo.tunnel.localhost:${tp.edgePort} body=`);
    expect(answer.headers['x-app']).toBe('yes');
    const list = await call<Array<{ id: string; path: string; status_code: number }>>(
      `${tp.api}/tunnels/demo/requests`,
      { key: tp.key },
    );
    expect(list.body[0]).toMatchObject({ path: '/hello?x=1', status_code: 200 });
    await new Promise((r) => setTimeout(r, 50));
    expect(seen[0]?.request.id).toBe(list.body[0]!.id);
    await client.stop();
  });
});
