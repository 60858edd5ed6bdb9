// The traffic WebSocket (`/api/v1/ws/traffic/:tunnelUrl`): each exchange a tunnel of the caller's
// captures, sent live as a CapturedRequest; the feed holds one of the account's stream slots.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { CapturedRequest } from '../../shared/api/tunnels.js';
import { type UpgradeContext, callerOf } from './accept.js';

/** What one live-feed subscriber may have waiting to be sent before entries are skipped. */
const FEED_BUFFER_BYTES = 4 * 1024 * 1024;

/** Takes a feed's upgrade; throws the ApiError that refuses it. */
export async function openTrafficFeed(
  context: UpgradeContext,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  tunnelUrl: string,
): Promise<void> {
  const { tunnels, limits, auth, wss } = context;
  const caller = await callerOf(auth, req);
  const tunnel = tunnels.find(caller.accountId, tunnelUrl);
  // The feed holds one of the account's stream slots until its connection closes.
  // Gone while its slot was counted (its slot is back already): nothing to feed.
  if (!(await limits.streams.takeFor(caller.accountId, socket))) return;
  wss.handleUpgrade(req, socket, head, (ws) => {
    const send = (request: CapturedRequest) => {
      // A subscriber that does not keep up misses entries rather than growing the edge's memory.
      if (ws.bufferedAmount < FEED_BUFFER_BYTES) ws.send(JSON.stringify(request));
    };
    tunnel.feed.on('request', send);
    ws.on('close', () => tunnel.feed.off('request', send));
    ws.on('error', () => ws.terminate());
  });
}
