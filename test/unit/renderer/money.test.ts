// Money reads the same on every screen (Settings' balance, Email's balance and each check's cost):
// cents always, a fraction of a cent when there is one, never rounded away.
import { describe, expect, it } from 'vitest';
import { formatUsd } from '../../../src/renderer/src/lib/format.js';

describe('formatUsd', () => {
  it.each([
    [5, '$5.00'],
    [4.999, '$4.999'],
    [4.99, '$4.99'],
    [0.002, '$0.002'],
    [0.0005, '$0.0005'],
    [0, '$0.00'],
    [1234.5, '$1,234.50'],
  ])('%s reads %s', (amount, text) => {
    // The app formats in the browser's locale; en-US is what these tests run in.
    expect(formatUsd(amount).replace(/\u00a0/g, ' ')).toBe(text);
  });
});
