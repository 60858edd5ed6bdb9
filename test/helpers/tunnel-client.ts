// A tunnel client of a test platform's: its origin and the local account's key filled in.
import { TunnelClient, type TunnelClientOptions } from '../../src/core/tunnel/client.js';
import type { TestPlatform } from './platform.js';

/** Starts a tunnel client of `tp`'s; `started` takes it before its start, so it is stopped even if that fails. */
export async function startTunnelClient(
  tp: TestPlatform,
  options: Omit<TunnelClientOptions, 'platformUrl' | 'apiKey'>,
  started: TunnelClient[],
): Promise<TunnelClient> {
  const client = new TunnelClient({
    platformUrl: tp.api.replace(/\/api\/v1$/, ''),
    apiKey: tp.key,
    ...options,
  });
  started.push(client);
  await client.start();
  return client;
}
