// Node's own bookkeeping of an HTTP/2 session's open and pending streams (no public API tells it), for
// the tunnel suites that check a connection rides one stream and that none is left behind. Capture
// streams are not counted: they carry no public traffic, and one is open while a relay client's
// connection lasts (core/tunnel/capture-records.ts).
import type { Http2Session } from 'node:http2';
import type { Mux } from '../../src/core/tunnel/mux.js';
import { STREAM_HEADERS, isCaptureStream } from '../../src/core/tunnel/protocol.js';

type StreamLike = { sentHeaders?: Record<string, unknown> };

export function openStreams(session: Http2Session | null | undefined): number {
  if (!session) return 0;
  const symbol = Object.getOwnPropertySymbols(session).find((s) => s.description === 'state')!;
  const state = (
    session as unknown as Record<
      symbol,
      { streams: Map<number, StreamLike>; pendingStreams: Set<unknown> } | undefined
    >
  )[symbol];
  if (!state) return 0;
  let open = state.pendingStreams.size;
  for (const stream of state.streams.values()) if (!isCaptureStream(stream)) open += 1;
  return open;
}

/** The same of a connection's multiplexer (core/tunnel/mux.ts): its byte streams but the capture stream. */
export function openMuxStreams(mux: Mux | null | undefined): number {
  return mux?.streamsOpen().filter((stream) => !stream.metadata[STREAM_HEADERS.captures]).length ?? 0;
}
