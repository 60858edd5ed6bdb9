// Traffic: the captured exchanges of this Engine's tunnels, from the Mirror (so the history is there
// offline) and live. The filter bar's query goes to `traffic.list`; live `traffic` events are queued and
// merged once per animation frame with the same query (lib/traffic-list.ts), and when full-text search
// needs the bodies, the newest page is asked again (at most a few times a second). Older pages load as
// the list scrolls down. Details, replays (plain and edited), HAR, cURL and clearing go through here.
import { create } from 'zustand';
import type { CapturedRequest, CapturedRequestDetail } from '../../../../shared/api/tunnels.js';
import type {
  BridgeErrorShape,
  BridgeResult,
  ReplayInput,
  TrafficQuery,
  TrafficTunnel,
} from '../../../../shared/bridge.js';
import { bridge } from '../../bridge';
import { attempt, toErrorShape } from '../../lib/outcome';
import { EMPTY_FILTER, queryKey, toTrafficQuery, type TrafficFilter } from '../../lib/traffic-filter';
import { subdomainOf } from '../../lib/traffic-tunnels';
import {
  EMPTY_LIST,
  addFromMirror,
  appendOlder,
  follow,
  fromFirstPage,
  ingest,
  removeAll,
  type LiveList,
} from '../../lib/traffic-list';

/** Rows of the first page, and of each older page. */
export const FIRST_PAGE = 200;
export const OLDER_PAGE = 500;
/** The most exchanges one HAR export of the list takes (the newest ones). */
export const HAR_MAX_ENTRIES = 1_000;
/** Text typed in the filter bar is sent once typing pauses this long. */
const TYPING_MS = 250;
/** At most one refresh of the newest page per this many ms while full-text search is on. */
const MIRROR_REFRESH_MS = 400;
/** Details kept in memory (they hold bodies of up to 1 MiB each). */
const MAX_DETAILS = 30;

export interface DetailState {
  detail: CapturedRequestDetail | null;
  loading: boolean;
  error: BridgeErrorShape | null;
}

export interface ReplayState {
  input: ReplayInput;
  edited: boolean;
  pending: boolean;
  /** The new exchange, captured like any other. */
  result: CapturedRequestDetail | null;
  error: BridgeErrorShape | null;
}

export type ListStatus = 'idle' | 'loading' | 'ready' | 'error';

interface TrafficState extends LiveList {
  filter: TrafficFilter;
  /** The query the list shows (the filter bar's, once typing paused). */
  query: TrafficQuery;
  status: ListStatus;
  error: BridgeErrorShape | null;
  loadingMore: boolean;
  moreError: BridgeErrorShape | null;
  details: Readonly<Record<string, DetailState>>;
  /** The last replay of each request, by the original's id. */
  replays: Readonly<Record<string, ReplayState>>;
  /** The tunnels the history holds requests of (for their names and the tunnel filter). */
  tunnels: readonly TrafficTunnel[];

  /** Loads the first page unless it is loaded (or loading) already. */
  ensureLoaded(): void;
  /** Changes the filter bar; text fields apply once typing pauses, the rest at once. */
  setFilter(patch: Partial<TrafficFilter>, options?: { typing?: boolean }): void;
  resetFilter(): void;
  reload(): Promise<void>;
  loadMore(): Promise<void>;
  /** Whether the list is scrolled to the top, where new rows go straight in. */
  setFollowing(following: boolean): void;
  loadDetail(id: string): Promise<void>;
  replay(input: ReplayInput, edited: boolean): Promise<BridgeResult<CapturedRequestDetail>>;
  closeReplay(id: string): void;
  clear(): Promise<BridgeResult<{ deleted: number }>>;
  /** HAR of these exchanges. */
  har(ids: string[]): Promise<BridgeResult<string>>;
  /** HAR of the list as filtered (the newest HAR_MAX_ENTRIES), loading older pages as needed. */
  harOfList(): Promise<BridgeResult<{ har: string; count: number }>>;
  curl(id: string): Promise<BridgeResult<string>>;
  /** Follows the `traffic` event; returns the unsubscribe. */
  subscribe(): () => void;
}

// What lives outside the state: it changes on every frame of traffic and no component renders it.
/** Ids in `rows` and `held`, so nothing shows twice. */
const known = new Set<string>();
/** Events not merged yet. */
let queue: CapturedRequest[] = [];
/** The pending merge: an animation frame, or a timer while the page is hidden. */
let frame: { kind: 'frame' | 'timer'; handle: number } | null = null;
/** Bumped by every new query: answers to an older one are dropped. */
let generation = 0;
let typingTimer: ReturnType<typeof setTimeout> | null = null;
let mirrorTimer: ReturnType<typeof setTimeout> | null = null;
let lastMirrorRefresh = 0;
/** Details by last use, oldest first. */
const detailOrder: string[] = [];
/** Whether the history's tunnels are being asked for. */
let tunnelsAsked = false;

const listOf = (state: TrafficState): LiveList => ({
  rows: state.rows,
  total: state.total,
  held: state.held,
  following: state.following,
  exhausted: state.exhausted,
});

export const useTrafficStore = create<TrafficState>()((set, get) => {
  const setList = (list: LiveList) => {
    const state = get();
    if (
      list.rows === state.rows &&
      list.held === state.held &&
      list.total === state.total &&
      list.following === state.following &&
      list.exhausted === state.exhausted
    ) {
      return;
    }
    set(list);
  };

  const scheduleFlush = () => {
    if (frame !== null) return;
    // Hidden pages get no animation frames: merge once a second instead, so the queue stays small.
    if (document.hidden) frame = { kind: 'timer', handle: window.setTimeout(onFrame, 1000) };
    else frame = { kind: 'frame', handle: requestAnimationFrame(onFrame) };
  };

  const onFrame = () => {
    frame = null;
    merge();
  };

  /** Merges the queued events into the list. */
  const merge = () => {
    const state = get();
    // Before the first page, the Mirror's answer will hold these; while it loads, they wait.
    if (state.status !== 'ready') {
      if (state.status !== 'loading') queue = [];
      return;
    }
    const batch = queue;
    queue = [];
    if (batch.length === 0) return;
    noteTunnels(batch);
    const { list, askMirror } = ingest(listOf(state), batch, state.query, known);
    setList(list);
    if (askMirror) scheduleMirrorRefresh();
  };

  const scheduleMirrorRefresh = () => {
    if (mirrorTimer !== null) return;
    const wait = Math.max(0, lastMirrorRefresh + MIRROR_REFRESH_MS - Date.now());
    mirrorTimer = setTimeout(() => {
      mirrorTimer = null;
      lastMirrorRefresh = Date.now();
      void refreshFromMirror();
    }, wait);
  };

  const refreshFromMirror = async () => {
    const asked = generation;
    const { query } = get();
    try {
      const page = await bridge.invoke('traffic.list', { ...query, limit: FIRST_PAGE });
      if (asked !== generation || get().status !== 'ready') return;
      setList(addFromMirror(listOf(get()), page, known));
    } catch {
      // The next event asks again; the list itself is still right.
    }
  };

  const rememberDetail = (id: string, patch: Partial<DetailState>) => {
    const at = detailOrder.indexOf(id);
    if (at !== -1) detailOrder.splice(at, 1);
    detailOrder.push(id);
    const dropped =
      detailOrder.length > MAX_DETAILS ? detailOrder.splice(0, detailOrder.length - MAX_DETAILS) : [];
    set((state) => {
      const details: Record<string, DetailState> = { ...state.details };
      for (const gone of dropped) delete details[gone];
      details[id] = { detail: null, loading: false, error: null, ...state.details[id], ...patch };
      return { details };
    });
  };

  /** The history's tunnels, asked again (one question at a time: a second one waits for the first). */
  const refreshTunnels = async () => {
    if (tunnelsAsked) return;
    tunnelsAsked = true;
    try {
      set({ tunnels: await bridge.invoke('traffic.tunnels', undefined) });
    } catch {
      // Names fall back to the subdomain alone; the next page load asks again.
    } finally {
      tunnelsAsked = false;
    }
  };

  /** A live exchange of a tunnel the history did not name yet (a new tunnel): ask for the names. */
  const noteTunnels = (batch: readonly CapturedRequest[]) => {
    const named = new Set(get().tunnels.map((t) => t.subdomain));
    const unnamed = (request: CapturedRequest) => {
      const subdomain = subdomainOf(request.url);
      return subdomain !== null && !named.has(subdomain);
    };
    if (batch.some(unnamed)) void refreshTunnels();
  };

  const applyQuery = () => {
    const state = get();
    const query = toTrafficQuery(state.filter);
    if (queryKey(query) === queryKey(state.query) && state.status !== 'error') return;
    set({ query });
    void get().reload();
  };

  return {
    ...EMPTY_LIST,
    filter: EMPTY_FILTER,
    query: {},
    status: 'idle',
    error: null,
    loadingMore: false,
    moreError: null,
    details: {},
    replays: {},
    tunnels: [],

    ensureLoaded() {
      if (get().status === 'idle') void get().reload();
    },

    setFilter(patch, options) {
      set((state) => ({ filter: { ...state.filter, ...patch } }));
      if (typingTimer !== null) clearTimeout(typingTimer);
      typingTimer = null;
      if (options?.typing) {
        typingTimer = setTimeout(() => {
          typingTimer = null;
          applyQuery();
        }, TYPING_MS);
      } else applyQuery();
    },

    resetFilter() {
      get().setFilter(EMPTY_FILTER);
    },

    async reload() {
      const asked = ++generation;
      if (mirrorTimer !== null) clearTimeout(mirrorTimer);
      mirrorTimer = null;
      const { query } = get();
      // The rows stay while the new ones load: a filter change does not flash an empty list.
      set({ status: 'loading', error: null, moreError: null, loadingMore: false });
      // The names once (a new tunnel's first request asks again): not at every change of the filters.
      if (get().tunnels.length === 0) void refreshTunnels();
      try {
        const page = await bridge.invoke('traffic.list', { ...query, limit: FIRST_PAGE });
        if (asked !== generation) return;
        set({ ...fromFirstPage(page, FIRST_PAGE, known), status: 'ready' });
        // What arrived while the page loaded: merged now, known ids skipped.
        merge();
      } catch (error) {
        if (asked !== generation) return;
        known.clear();
        set({ ...EMPTY_LIST, status: 'error', error: toErrorShape(error) });
      }
    },

    async loadMore() {
      const state = get();
      const last = state.rows[state.rows.length - 1];
      if (state.status !== 'ready' || state.loadingMore || state.exhausted || !last) return;
      const asked = generation;
      set({ loadingMore: true, moreError: null });
      try {
        const page = await bridge.invoke('traffic.list', {
          ...state.query,
          before: last.id,
          limit: OLDER_PAGE,
        });
        if (asked !== generation) return;
        setList(appendOlder(listOf(get()), page, OLDER_PAGE, known));
        set({ loadingMore: false });
      } catch (error) {
        if (asked !== generation) return;
        set({ loadingMore: false, moreError: toErrorShape(error) });
      }
    },

    setFollowing(following) {
      setList(follow(listOf(get()), following));
    },

    async loadDetail(id) {
      const current = get().details[id];
      // Captured exchanges never change: one answer is enough.
      if (current?.detail || current?.loading) {
        rememberDetail(id, {});
        return;
      }
      rememberDetail(id, { loading: true, error: null });
      const outcome = await attempt(() => bridge.invoke('traffic.get', { id }));
      if (outcome.ok) rememberDetail(id, { detail: outcome.value, loading: false, error: null });
      else rememberDetail(id, { loading: false, error: outcome.error });
    },

    async replay(input, edited) {
      set((state) => ({
        replays: {
          ...state.replays,
          [input.id]: { input, edited, pending: true, result: null, error: null },
        },
      }));
      const outcome = await attempt(() => bridge.invoke('traffic.replay', input));
      set((state) => {
        const current = state.replays[input.id];
        // Closed (or replaced by a newer replay) meanwhile.
        if (!current || current.input !== input) return {};
        return {
          replays: {
            ...state.replays,
            [input.id]: {
              ...current,
              pending: false,
              result: outcome.ok ? outcome.value : null,
              error: outcome.ok ? null : outcome.error,
            },
          },
        };
      });
      if (outcome.ok)
        rememberDetail(outcome.value.id, { detail: outcome.value, loading: false, error: null });
      return outcome;
    },

    closeReplay(id) {
      set((state) => {
        const { [id]: _gone, ...replays } = state.replays;
        return { replays };
      });
    },

    async clear() {
      const outcome = await attempt(() => bridge.invoke('traffic.clear', {}));
      if (outcome.ok) {
        ++generation;
        queue = [];
        detailOrder.length = 0;
        set({ ...removeAll(known), status: 'ready', details: {}, replays: {}, tunnels: [] });
      }
      return outcome;
    },

    har: (ids) => attempt(() => bridge.invoke('traffic.har', { ids })),

    async harOfList() {
      // Older pages until the export is complete (or as long as the cap allows).
      for (;;) {
        const state = get();
        if (state.status !== 'ready') break;
        if (state.held.length + state.rows.length >= HAR_MAX_ENTRIES || state.exhausted) break;
        const before = state.rows.length;
        await get().loadMore();
        if (get().rows.length === before) break;
      }
      const { held, rows } = get();
      const ids = held
        .concat(rows)
        .slice(0, HAR_MAX_ENTRIES)
        .map((request) => request.id);
      const outcome = await attempt(() => bridge.invoke('traffic.har', { ids }));
      return outcome.ok ? { ok: true, value: { har: outcome.value, count: ids.length } } : outcome;
    },

    curl: (id) => attempt(() => bridge.invoke('traffic.curl', { id })),

    subscribe() {
      const off = bridge.on('traffic', (event) => {
        if (get().status === 'idle') return;
        for (const request of event.requests) queue.push(request);
        scheduleFlush();
      });
      return () => {
        off();
        if (frame?.kind === 'timer') clearTimeout(frame.handle);
        else if (frame) cancelAnimationFrame(frame.handle);
        frame = null;
      };
    },
  };
});
