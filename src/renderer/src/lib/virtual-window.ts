// The virtual list's arithmetic: with a fixed row height, which rows a viewport shows (plus a few
// above and below, so a quick scroll does not flash blank rows), where they sit, and how far to scroll
// to bring a row into view. Pure, so it is tested without a browser.

export interface WindowInput {
  /** Pixels scrolled from the first row. */
  scrollTop: number;
  /** Height of the visible area, in pixels. */
  viewportHeight: number;
  rowHeight: number;
  /** Rows in all, loaded or not. */
  count: number;
  /** Rows rendered beyond each edge of the viewport. */
  overscan: number;
}

export interface VirtualWindow {
  /** First row to render. */
  start: number;
  /** One past the last row to render. */
  end: number;
  /** Where the first rendered row sits, from the top of the list. */
  offset: number;
  /** The height of the whole list. */
  totalHeight: number;
}

export function virtualWindow({
  scrollTop,
  viewportHeight,
  rowHeight,
  count,
  overscan,
}: WindowInput): VirtualWindow {
  const totalHeight = Math.max(0, count) * rowHeight;
  if (count <= 0 || rowHeight <= 0) return { start: 0, end: 0, offset: 0, totalHeight };
  // A scroll past the end (the list shrank under a scrolled viewport) shows the last rows.
  const maxTop = Math.max(0, totalHeight - viewportHeight);
  const top = Math.min(Math.max(0, scrollTop), maxTop);
  const first = Math.floor(top / rowHeight);
  const last = Math.ceil((top + Math.max(0, viewportHeight)) / rowHeight);
  const start = Math.max(0, first - overscan);
  const end = Math.min(count, Math.max(last, first + 1) + overscan);
  return { start, end, offset: start * rowHeight, totalHeight };
}

/**
 * The scrollTop that brings row `index` fully into view, moving as little as possible; null when it
 * is already in view.
 */
export function scrollToReveal(
  index: number,
  view: { scrollTop: number; viewportHeight: number; rowHeight: number },
): number | null {
  const top = index * view.rowHeight;
  const bottom = top + view.rowHeight;
  if (top < view.scrollTop) return top;
  if (bottom > view.scrollTop + view.viewportHeight) return Math.max(0, bottom - view.viewportHeight);
  return null;
}

/** Whether the rows from `end` on need loading: close to the last loaded row, with more to come. */
export function needsMore(
  end: number,
  loaded: number,
  options: { exhausted: boolean; threshold: number },
): boolean {
  return !options.exhausted && end + options.threshold >= loaded;
}

/** The index `step` rows from `current` (−1 up, +1 down), kept inside the list; the first row if none. */
export function moveIndex(current: number, step: number, count: number): number {
  if (count <= 0) return -1;
  if (current < 0) return 0;
  return Math.min(count - 1, Math.max(0, current + step));
}
