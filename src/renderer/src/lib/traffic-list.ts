// The live traffic list as pure functions over plain data: new exchanges merged in (newest first,
// never twice, filtered with the matcher), held back while the user is scrolled away from the top
// (the "N new" pill), released when they come back, and older pages appended as they scroll down.
// The store (stores/traffic) calls these once per animation frame with everything that arrived.
import type { CapturedRequest } from '../../../shared/api/tunnels.js';
import type { TrafficPage, TrafficQuery } from '../../../shared/bridge.js';
import { matchTraffic } from './traffic-filter.js';

export interface LiveList {
  /** The loaded rows, newest first: a contiguous prefix of everything that matches. */
  rows: CapturedRequest[];
  /** How many rows the list has in all, loaded or not (the scroll height); never below rows.length. */
  total: number;
  /** New matching rows held while the user looks further down, newest first. */
  held: CapturedRequest[];
  /** Whether the user is at the top, where new rows go straight in. */
  following: boolean;
  /** Whether the Mirror has nothing older than the last row. */
  exhausted: boolean;
}

export const EMPTY_LIST: LiveList = { rows: [], total: 0, held: [], following: true, exhausted: false };

/** The first page of a query. `known` is reset to its ids. */
export function fromFirstPage(page: TrafficPage, limit: number, known: Set<string>): LiveList {
  known.clear();
  const rows: CapturedRequest[] = [];
  for (const request of page.requests) {
    if (known.has(request.id)) continue;
    known.add(request.id);
    rows.push(request);
  }
  const exhausted = page.requests.length < limit;
  return {
    rows,
    total: exhausted ? rows.length : Math.max(page.total, rows.length),
    held: [],
    following: true,
    exhausted,
  };
}

/**
 * Merges a batch of new exchanges, oldest first as the Mirror stored them (so the list keeps its order,
 * newest on top): those the query matches go on top (or into `held` while not following); `askMirror`
 * says that some need the Mirror's full-text search to decide. Adds the ids it takes to `known`.
 */
export function ingest(
  list: LiveList,
  batch: readonly CapturedRequest[],
  query: TrafficQuery,
  known: Set<string>,
): { list: LiveList; askMirror: boolean } {
  const added: CapturedRequest[] = [];
  let askMirror = false;
  for (const request of batch) {
    if (known.has(request.id)) continue;
    const verdict = matchTraffic(request, query);
    if (verdict === 'match') {
      known.add(request.id);
      added.push(request);
    } else if (verdict === 'ask-mirror') askMirror = true;
  }
  return { list: addOnTop(list, added.reverse()), askMirror };
}

/**
 * Adds rows the Mirror says match (a refresh of the newest page while full-text search is on): the
 * ones not in the list yet, keeping the page's order (newest first).
 */
export function addFromMirror(list: LiveList, page: TrafficPage, known: Set<string>): LiveList {
  const added = page.requests.filter((request) => !known.has(request.id));
  for (const request of added) known.add(request.id);
  return addOnTop(list, added);
}

/** `added` is newest first. */
function addOnTop(list: LiveList, added: CapturedRequest[]): LiveList {
  if (added.length === 0) return list;
  if (!list.following) return { ...list, held: added.concat(list.held) };
  return { ...list, rows: added.concat(list.rows), total: list.total + added.length };
}

/** The user is back at the top (or clicked the pill): held rows go in. */
export function follow(list: LiveList, following: boolean): LiveList {
  if (!following) return list.following ? { ...list, following: false } : list;
  if (list.following && list.held.length === 0) return list;
  return {
    ...list,
    rows: list.held.concat(list.rows),
    total: list.total + list.held.length,
    held: [],
    following: true,
  };
}

/** An older page (asked with `before` = the last row's id) appended below. */
export function appendOlder(list: LiveList, page: TrafficPage, limit: number, known: Set<string>): LiveList {
  const older = page.requests.filter((request) => !known.has(request.id));
  for (const request of older) known.add(request.id);
  const rows = list.rows.concat(older);
  const exhausted = page.requests.length < limit;
  return {
    ...list,
    rows,
    exhausted,
    // Everything is loaded once the Mirror has nothing older. Until then, the Mirror's count of all
    // that matches (which includes the held rows), and at least one row more than is loaded.
    total: exhausted ? rows.length : Math.max(rows.length + 1, page.total - list.held.length),
  };
}

/** Rows taken out (the history was cleared): they leave the list and its count. */
export function removeAll(known: Set<string>): LiveList {
  known.clear();
  return { ...EMPTY_LIST, exhausted: true };
}
