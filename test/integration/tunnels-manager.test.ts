// The Engine's tunnel manager on its own (core/tunnel/tunnels.ts), against a real platform and a real
// local app: a tunnel started, named by every id it went by, its exchanges handed on with where they
// came from, its views changing as it goes, bad input refused, and a stop that ends it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CapturedExchange } from '../../src/core/capture/capture.js';
import type { CaptureOrigin } from '../../src/core/mirror/captures.js';
import { Tunnels } from '../../src/core/tunnel/tunnels.js';
import type { BridgeError, LocalTunnel } from '../../src/shared/bridge.js';
import { viaEdge } from '../helpers/deploy.js';
import { closedPort, startTextApp, type LocalApp } from '../helpers/local-app.js';
import { startPlatform, type TestPlatform } from '../helpers/platform.js';
import { until } from '../helpers/poll.js';

let tp: TestPlatform;
let app: LocalApp;
let appPort: number;

beforeAll(async () => {
  tp = await startPlatform();
  app = await startTextApp((req) => `local app: ${req.url}`);
  appPort = app.port;
});

afterAll(async () => {
  await app?.close();
  await tp?.close();
});

function manager() {
  const stored: Array<{ exchange: CapturedExchange; origin: CaptureOrigin }> = [];
  const views: LocalTunnel[][] = [];
  const tunnels: Tunnels = new Tunnels({
    platform: async () => ({ origin: new URL(tp.api).origin, apiKey: tp.key }),
    store: (exchange, origin) => stored.push({ exchange, origin }),
    changed: () => views.push(tunnels.views()),
    closing: () => false,
    backoffMs: 50,
    portCheckMs: 50,
  });
  return { tunnels, stored, views };
}

describe('Tunnels', () => {
  it('starts a tunnel, finds it by every id, hands on its exchanges, and stops it', async () => {
    const { tunnels, stored, views } = manager();
    const view = await tunnels.start({ port: appPort, subdomain: 'manager-one' });
    expect(view).toMatchObject({
      localPort: appPort,
      subdomain: 'manager-one',
      state: 'online',
      listening: true,
    });
    expect(view.id).toMatch(/^tun_/);
    const running = tunnels.find(view.id)!;
    expect(running).not.toBeNull();
    expect(tunnels.find(running.key)).toBe(running);
    expect(tunnels.names(view.id).sort()).toEqual([running.key, view.id, 'manager-one'].sort());
    expect(tunnels.names('tun_unknown')).toEqual(['tun_unknown']);
    expect(views.at(-1)?.[0]).toMatchObject({ id: view.id, state: 'online' });

    const answer = await viaEdge(tp.edgePort, 'manager-one.tunnel.localhost', '/hello');
    expect(answer.body).toBe('local app: /hello');
    await until(() => stored.length === 1, 'the exchange to be handed on');
    expect(stored[0]!.exchange.request).toMatchObject({ method: 'GET', path: '/hello', status_code: 200 });
    expect(stored[0]!.origin).toEqual({
      tunnelKey: running.key,
      subdomain: 'manager-one',
      localPort: appPort,
      hostHeader: 'preserve',
    });

    const stopped = await tunnels.stop(running);
    expect(stopped).toMatchObject({ state: 'stopped', listening: null });
    expect(tunnels.views()).toEqual([]);
    expect(tunnels.find(view.id)).toBeNull();
  });

  it('refuses bad input and a subdomain one of its tunnels already uses, naming the field', async () => {
    const { tunnels } = manager();
    const refusal = (input: object) =>
      tunnels.start(input as never).then(
        () => null,
        (error: BridgeError) => ({ status: error.status, path: error.errors?.[0]?.path ?? null }),
      );
    expect(await refusal({ port: 0 })).toEqual({ status: 422, path: 'port' });
    expect(await refusal({ port: appPort, subdomain: 'Not A Label' })).toEqual({
      status: 422,
      path: 'subdomain',
    });
    expect(await refusal({ port: appPort, subdomain: 'api' })).toEqual({ status: 422, path: 'subdomain' });
    expect(await refusal({ port: appPort, hostHeader: 'bad host' })).toEqual({
      status: 422,
      path: 'hostHeader',
    });

    const first = await tunnels.start({ port: appPort, subdomain: 'manager-two' });
    expect(await refusal({ port: appPort + 1, subdomain: 'manager-two' })).toEqual({
      status: 409,
      path: null,
    });
    await tunnels.stopAll();
    expect(tunnels.find(first.id)).toBeNull();
  });

  it('says when nothing listens on the local port, from the start', async () => {
    const { tunnels } = manager();
    const deadPort = await closedPort();
    const view = await tunnels.start({ port: deadPort });
    expect(view.listening).toBe(false);
    await tunnels.stopAll();
  });
});
