// The browser transport: the Bridge over the inspector server that `wharf app` runs on 127.0.0.1.
//
// - The page is opened as `http://127.0.0.1:<port>/#token=<token>`. The token is taken from the
//   fragment, kept in sessionStorage (`wharf-token`, so a reload keeps working and a new tab does not
//   inherit it) and removed from the address bar.
// - At boot the page trades the token for the server's HttpOnly, SameSite=Strict cookie
//   (`POST /bridge/session` with `X-Wharf-Token`), so plain links to the inspector's /api (downloads)
//   and the event socket's upgrade are authorized too. A 401 there means the token is refused.
// - Calls: `POST /bridge/invoke/<operation>` with `X-Wharf-Token`, a JSON body (`null` for no input),
//   answered with a JSON BridgeResult. Uploads: `POST /bridge/upload/<id>?fileName=…` with the raw
//   archive as application/octet-stream (sent with XMLHttpRequest, which reports upload progress).
// - Events: one WebSocket to `/bridge/events`, opened once the session call has answered; the cookie
//   authorizes its upgrade, and its first message carries the token too (for when cookies are off).
//   Close code 4401 means the token was refused (no retry), any other close reconnects with backoff.
// - The socket's `ready` message names its session; calls send it as X-Wharf-Session, so the server
//   unfollows the logs this page follows when the socket closes. `logs.follow` and `logs.unfollow` wait
//   (briefly) for the session to be known.
import {
  BridgeError,
  isBridgeErrorShape,
  isBridgeEvent,
  type BridgeEventName,
  type BridgeEvents,
  type BridgeInput,
  type BridgeOperation,
  type BridgeOutput,
  type UploadInput,
} from '../../../shared/bridge.js';
import { ERROR_STATUS, type ErrorCode } from '../../../shared/errors.js';
import type { InvokeOptions, RendererBridge, TransportState } from './types';

export const TOKEN_STORAGE_KEY = 'wharf-token';
export const TOKEN_REFUSED_CLOSE_CODE = 4401;

const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 10_000;
/** How long a follow call waits for the event socket's session before going without it. */
const SESSION_WAIT_MS = 3_000;
const SESSION_OPERATIONS: ReadonlySet<BridgeOperation> = new Set(['logs.follow', 'logs.unfollow']);

/** The code to report for a bare HTTP status: the first one sent with it (413 → payload_too_large). */
function codeForStatus(status: number): ErrorCode | 'internal' {
  const entry = Object.entries(ERROR_STATUS).find(([, s]) => s === status);
  return entry ? (entry[0] as ErrorCode) : 'internal';
}

type TokenStorage = Pick<Storage, 'getItem' | 'setItem'>;

export interface HttpBridgeOptions {
  /** Where the token is kept between reloads; sessionStorage by default, null for none. */
  storage?: TokenStorage | null;
  history?: Pick<History, 'replaceState' | 'state'>;
  fetch?: typeof fetch;
  WebSocket?: typeof WebSocket;
  XMLHttpRequest?: typeof XMLHttpRequest;
}

/** Reads the token from `#token=…` (then hides it) or, after a reload, from storage. */
export function takeToken(
  location: Pick<Location, 'hash' | 'pathname' | 'search'>,
  history: Pick<History, 'replaceState' | 'state'>,
  storage: TokenStorage | null,
): string | null {
  const fromHash = new URLSearchParams(location.hash.replace(/^#/, '')).get('token');
  if (fromHash) {
    try {
      storage?.setItem(TOKEN_STORAGE_KEY, fromHash);
    } catch {
      // Storage disabled: the token lives in memory for this page only.
    }
    history.replaceState(history.state, '', `${location.pathname}${location.search}`);
    return fromHash;
  }
  try {
    return storage?.getItem(TOKEN_STORAGE_KEY) || null;
  } catch {
    return null;
  }
}

function defaultStorage(): TokenStorage | null {
  try {
    return window.sessionStorage;
  } catch {
    return null;
  }
}

export function httpBridge(location: Location, options: HttpBridgeOptions = {}): RendererBridge {
  const token = takeToken(
    location,
    options.history ?? window.history,
    options.storage === undefined ? defaultStorage() : options.storage,
  );
  const doFetch = options.fetch ?? window.fetch.bind(window);
  const Xhr = options.XMLHttpRequest ?? window.XMLHttpRequest;
  const socketUrl = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/bridge/events`;
  // Settles whatever happens: the socket's first-message auth still works without the cookie.
  const session: Promise<void> = token
    ? Promise.resolve()
        .then(() =>
          doFetch('/bridge/session', {
            method: 'POST',
            headers: { 'X-Wharf-Token': token },
            credentials: 'same-origin',
            cache: 'no-store',
          }),
        )
        .then(
          (response) => {
            if (response.status === 401) events.refuse();
          },
          () => undefined,
        )
    : Promise.resolve();
  const events = new EventStream(socketUrl, token, options.WebSocket ?? window.WebSocket, session);

  const unreachable = () =>
    new BridgeError(
      'offline',
      0,
      `cannot reach the Wharf app at ${location.host}: is \`wharf app\` still running?`,
    );

  const requireToken = (): string => {
    if (token) return token;
    throw new BridgeError(
      'unauthorized',
      401,
      'this page has no access token: open it from the URL printed by `wharf app`',
    );
  };

  const upload = (input: UploadInput, onProgress?: InvokeOptions['onUploadProgress']) =>
    new Promise<unknown>((resolve, reject) => {
      const xhr = new Xhr();
      const query = `fileName=${encodeURIComponent(input.fileName)}`;
      xhr.open('POST', `/bridge/upload/${encodeURIComponent(input.id)}?${query}`);
      xhr.setRequestHeader('X-Wharf-Token', requireToken());
      xhr.setRequestHeader('Content-Type', 'application/octet-stream');
      if (onProgress) {
        xhr.upload.onprogress = (event) =>
          onProgress(event.loaded, event.lengthComputable ? event.total : input.data.byteLength);
      }
      xhr.onload = () => {
        try {
          resolve(readResult(xhr.status, xhr.responseText));
        } catch (error) {
          reject(error);
        }
      };
      xhr.onerror = () => reject(unreachable());
      xhr.onabort = () => reject(new BridgeError('bad_request', 0, 'the upload was cancelled'));
      xhr.send(input.data as Uint8Array<ArrayBuffer>);
    });

  return {
    host: 'browser',

    async invoke<K extends BridgeOperation>(
      operation: K,
      input: BridgeInput<K>,
      invokeOptions?: InvokeOptions,
    ): Promise<BridgeOutput<K>> {
      if (operation === 'projects.upload') {
        return (await upload(input as UploadInput, invokeOptions?.onUploadProgress)) as BridgeOutput<K>;
      }
      const headers: Record<string, string> = {
        'X-Wharf-Token': requireToken(),
        'Content-Type': 'application/json',
      };
      const session = SESSION_OPERATIONS.has(operation)
        ? await events.sessionWithin(SESSION_WAIT_MS)
        : events.session;
      if (session) headers['X-Wharf-Session'] = session;
      let response: Response;
      try {
        response = await doFetch(`/bridge/invoke/${encodeURIComponent(operation)}`, {
          method: 'POST',
          headers,
          body: JSON.stringify(input === undefined ? null : input),
          cache: 'no-store',
        });
      } catch {
        throw unreachable();
      }
      let text: string;
      try {
        text = await response.text();
      } catch {
        throw unreachable();
      }
      try {
        return readResult(response.status, text) as BridgeOutput<K>;
      } catch (error) {
        // The server no longer knows this page's token (e.g. `wharf app` was restarted).
        if (error instanceof BridgeError && error.code === 'token_refused') events.refuse();
        throw error;
      }
    },

    on<E extends BridgeEventName>(event: E, listener: (payload: BridgeEvents[E]) => void): () => void {
      return events.on(event, listener as (payload: unknown) => void);
    },

    onTransportState(listener: (state: TransportState) => void): () => void {
      return events.onState(listener);
    },
  };
}

/** A BridgeResult body becomes its value or a thrown BridgeError; anything else an error by status. */
function readResult(status: number, text: string): unknown {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (typeof body === 'object' && body !== null && 'ok' in body) {
    const result = body as { ok: unknown; value?: unknown; error?: unknown };
    if (result.ok === true) return result.value;
    if (result.ok === false && isBridgeErrorShape(result.error)) throw BridgeError.from(result.error);
  }
  // Not a BridgeResult: a refusal by the server itself (Host or Origin check, body too large…).
  const message =
    typeof body === 'object' && body !== null && typeof (body as { message?: unknown }).message === 'string'
      ? (body as { message: string }).message
      : text.trim().slice(0, 300) || `the Wharf app answered HTTP ${status}`;
  throw new BridgeError(codeForStatus(status), status, message);
}

/** The event WebSocket: opened on the first listener, re-opened with backoff until the token is refused. */
class EventStream {
  private readonly listeners = new Map<string, Set<(payload: unknown) => void>>();
  private readonly stateListeners = new Set<(state: TransportState) => void>();
  private state: TransportState;
  private started = false;
  private attempts = 0;
  /** The server's name for the current socket, once it is ready. */
  session: string | null = null;
  private readonly sessionWaiters = new Set<() => void>();

  constructor(
    private readonly url: string,
    private readonly token: string | null,
    private readonly Socket: typeof WebSocket,
    /** The cookie exchange: the first socket waits for it, so its upgrade carries the cookie. */
    private readonly before: Promise<void>,
  ) {
    this.state = token ? 'connecting' : 'no-token';
  }

  on(event: string, listener: (payload: unknown) => void): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(listener);
    this.start();
    return () => {
      set.delete(listener);
    };
  }

  /** The session once the socket is ready, or null if it is not within `ms`. */
  sessionWithin(ms: number): Promise<string | null> {
    if (this.session || !this.token || this.state === 'refused') return Promise.resolve(this.session);
    this.start();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.sessionWaiters.delete(done);
        resolve(this.session);
      };
      const timer = setTimeout(done, ms);
      this.sessionWaiters.add(done);
    });
  }

  /** The token was refused over HTTP: stop reconnecting and tell the UI. */
  refuse(): void {
    this.setState('refused');
  }

  onState(listener: (state: TransportState) => void): () => void {
    this.stateListeners.add(listener);
    listener(this.state);
    this.start();
    return () => {
      this.stateListeners.delete(listener);
    };
  }

  private start(): void {
    if (this.started || !this.token) return;
    this.started = true;
    const token = this.token;
    void this.before.then(() => this.open(token));
  }

  private open(token: string): void {
    if (this.state === 'refused') return;
    let socket: WebSocket;
    try {
      socket = new this.Socket(this.url);
    } catch {
      this.retry(token);
      return;
    }
    socket.onopen = () => socket.send(JSON.stringify({ type: 'auth', token }));
    socket.onmessage = (message) => {
      let data: { type?: unknown; event?: unknown; payload?: unknown; session?: unknown };
      try {
        data = JSON.parse(String(message.data)) as typeof data;
      } catch {
        return;
      }
      if (data.type === 'ready') {
        this.attempts = 0;
        this.session = typeof data.session === 'string' ? data.session : null;
        for (const wake of [...this.sessionWaiters]) wake();
        this.setState('ready');
      } else if (data.type === 'event' && isBridgeEvent(data.event)) {
        for (const listener of [...(this.listeners.get(data.event) ?? [])]) {
          try {
            listener(data.payload);
          } catch (error) {
            console.error(`a listener of the "${data.event}" event failed`, error);
          }
        }
      }
    };
    socket.onclose = (event) => {
      this.session = null;
      if (event.code === TOKEN_REFUSED_CLOSE_CODE) {
        this.setState('refused');
        return;
      }
      this.setState('reconnecting');
      this.retry(token);
    };
  }

  private retry(token: string): void {
    const base = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** this.attempts);
    this.attempts++;
    setTimeout(() => this.open(token), base * (0.8 + Math.random() * 0.4));
  }

  private setState(state: TransportState): void {
    if (state === this.state) return;
    this.state = state;
    for (const listener of [...this.stateListeners]) listener(state);
  }
}
