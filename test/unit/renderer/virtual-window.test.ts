// The virtual list's arithmetic: which rows to render for a viewport, revealing a row, paging.
import { describe, expect, it } from 'vitest';
import {
  moveIndex,
  needsMore,
  scrollToReveal,
  virtualWindow,
} from '../../../src/renderer/src/lib/virtual-window.js';

const base = { rowHeight: 30, viewportHeight: 300, overscan: 5 };

describe('virtualWindow', () => {
  it('renders the visible rows and the overscan below them at the top', () => {
    expect(virtualWindow({ ...base, scrollTop: 0, count: 100_000 })).toEqual({
      start: 0,
      end: 15,
      offset: 0,
      totalHeight: 3_000_000,
    });
  });

  it('renders the same number of rows anywhere in 100,000', () => {
    const middle = virtualWindow({ ...base, scrollTop: 1_500_000, count: 100_000 });
    expect(middle).toEqual({ start: 49_995, end: 50_015, offset: 49_995 * 30, totalHeight: 3_000_000 });
    expect(middle.end - middle.start).toBe(20);
  });

  it('counts a row cut by the viewport edge as visible', () => {
    const window = virtualWindow({ ...base, overscan: 0, scrollTop: 15, count: 100 });
    expect(window).toMatchObject({ start: 0, end: 11 });
  });

  it('stops at the last row', () => {
    expect(virtualWindow({ ...base, scrollTop: 2_999_700, count: 100_000 })).toMatchObject({
      start: 99_985,
      end: 100_000,
    });
  });

  it('shows the last rows when scrolled past the end of a list that shrank', () => {
    expect(virtualWindow({ ...base, overscan: 0, scrollTop: 90_000, count: 50 })).toMatchObject({
      start: 40,
      end: 50,
      offset: 1200,
    });
  });

  it('renders everything for a list shorter than the viewport, and nothing for an empty one', () => {
    expect(virtualWindow({ ...base, scrollTop: 0, count: 3 })).toEqual({
      start: 0,
      end: 3,
      offset: 0,
      totalHeight: 90,
    });
    expect(virtualWindow({ ...base, scrollTop: 0, count: 0 })).toEqual({
      start: 0,
      end: 0,
      offset: 0,
      totalHeight: 0,
    });
  });

  it('renders at least one row before the viewport is measured', () => {
    expect(virtualWindow({ ...base, overscan: 0, viewportHeight: 0, scrollTop: 0, count: 10 })).toMatchObject(
      {
        start: 0,
        end: 1,
      },
    );
  });
});

describe('scrollToReveal', () => {
  const view = { scrollTop: 300, viewportHeight: 300, rowHeight: 30 };

  it('leaves a visible row where it is', () => {
    expect(scrollToReveal(10, view)).toBeNull();
    expect(scrollToReveal(19, view)).toBeNull();
  });

  it('scrolls up to put a row above the viewport at its top', () => {
    expect(scrollToReveal(9, view)).toBe(270);
  });

  it('scrolls down to put a row below the viewport at its bottom', () => {
    expect(scrollToReveal(20, view)).toBe(330);
    expect(scrollToReveal(99, view)).toBe(2700);
  });
});

describe('paging and moving', () => {
  it('asks for more when the window nears the last loaded row, unless the history ended', () => {
    expect(needsMore(150, 200, { exhausted: false, threshold: 50 })).toBe(true);
    expect(needsMore(100, 200, { exhausted: false, threshold: 50 })).toBe(false);
    expect(needsMore(199, 200, { exhausted: true, threshold: 50 })).toBe(false);
  });

  it('moves the selection within the list, starting at the first row', () => {
    expect(moveIndex(-1, 1, 10)).toBe(0);
    expect(moveIndex(-1, -1, 10)).toBe(0);
    expect(moveIndex(3, 1, 10)).toBe(4);
    expect(moveIndex(9, 1, 10)).toBe(9);
    expect(moveIndex(0, -1, 10)).toBe(0);
    expect(moveIndex(0, 1, 0)).toBe(-1);
  });
});
