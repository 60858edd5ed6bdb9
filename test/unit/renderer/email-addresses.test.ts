// The Email screen's list input: which addresses a pasted list or a CSV file yields, from which column,
// with headers skipped and repeats left out.
import { describe, expect, it } from 'vitest';
import {
  detectEmailColumn,
  extractAddresses,
  looksLikeEmail,
  parseRows,
} from '../../../src/renderer/src/stores/email/addresses.js';

describe('looksLikeEmail', () => {
  it('accepts plain addresses and refuses names, headers and half addresses', () => {
    expect(looksLikeEmail('ada@example.com')).toBe(true);
    expect(looksLikeEmail('  grace.hopper+navy@mail.example.org ')).toBe(true);
    expect(looksLikeEmail('email')).toBe(false);
    expect(looksLikeEmail('Ada Lovelace')).toBe(false);
    expect(looksLikeEmail('ada@localhost')).toBe(false);
    expect(looksLikeEmail('ada @example.com')).toBe(false);
  });
});

describe('extractAddresses from pasted lines', () => {
  it('takes one address per line in input order, dropping blank lines and surrounding spaces', () => {
    const out = extractAddresses('ada@example.com\n\n  grace@example.org  \r\nlinus@example.net\n');
    expect(out.emails).toEqual(['ada@example.com', 'grace@example.org', 'linus@example.net']);
    expect(out.column).toEqual({ index: 0, header: null });
    expect(out.duplicates).toBe(0);
  });

  it('keeps a line that is not an address (the platform reports it as invalid_syntax)', () => {
    const out = extractAddresses('ada@example.com\nnot-an-address\ngrace@example.org');
    expect(out.emails).toEqual(['ada@example.com', 'not-an-address', 'grace@example.org']);
  });

  it('checks a repeated address once, whatever its case, and counts the repeats', () => {
    const out = extractAddresses('ada@example.com\nADA@example.com\ngrace@example.org\nada@example.com');
    expect(out.emails).toEqual(['ada@example.com', 'grace@example.org']);
    expect(out.duplicates).toBe(2);
  });

  it('yields nothing for empty or blank text', () => {
    expect(extractAddresses('').emails).toEqual([]);
    expect(extractAddresses('  \n\n \t\n').emails).toEqual([]);
  });
});

describe('extractAddresses from CSV', () => {
  it('takes the column that looks like addresses and skips its header', () => {
    const csv = 'name,email,plan\nAda,ada@example.com,pro\nGrace,grace@example.org,free\n';
    const out = extractAddresses(csv);
    expect(out.emails).toEqual(['ada@example.com', 'grace@example.org']);
    expect(out.column).toEqual({ index: 1, header: 'email' });
    expect(out.columnCount).toBe(3);
  });

  it('finds the column with semicolons or tabs as delimiters, and with quoted cells', () => {
    expect(extractAddresses('id;contact\n1;ada@example.com\n2;grace@example.org').emails).toEqual([
      'ada@example.com',
      'grace@example.org',
    ]);
    expect(extractAddresses('id\tcontact\n1\tada@example.com').emails).toEqual(['ada@example.com']);
    expect(
      extractAddresses('"Lovelace, Ada","ada@example.com"\n"Hopper, Grace","grace@example.org"').emails,
    ).toEqual(['ada@example.com', 'grace@example.org']);
  });

  it('prefers the column where most cells are addresses when several hold some', () => {
    const csv = [
      'primary,backup',
      'ada@example.com,ada@example.net',
      'grace@example.org,none',
      'linus@example.net,',
    ].join('\n');
    const out = extractAddresses(csv);
    expect(out.column.index).toBe(0);
    expect(out.emails).toEqual(['ada@example.com', 'grace@example.org', 'linus@example.net']);
  });

  it('keeps the first row when it is an address too (a file without a header)', () => {
    const out = extractAddresses('Ada,ada@example.com\nGrace,grace@example.org');
    expect(out.column).toEqual({ index: 1, header: null });
    expect(out.emails).toEqual(['ada@example.com', 'grace@example.org']);
  });

  it('falls back to a column named like an address column when no cell looks like one', () => {
    const out = extractAddresses('name,Email\nAda,ada-at-example\nGrace,grace');
    expect(out.column).toEqual({ index: 1, header: 'Email' });
    expect(out.emails).toEqual(['ada-at-example', 'grace']);
  });

  it('falls back to the first column when nothing looks like an address', () => {
    const out = extractAddresses('alpha,1\nbeta,2');
    expect(out.column).toEqual({ index: 0, header: null });
    expect(out.emails).toEqual(['alpha', 'beta']);
  });

  it('ignores a byte-order mark and rows shorter than the address column', () => {
    const out = extractAddresses('\uFEFFname,email\nAda,ada@example.com\nGrace\nLinus,linus@example.net');
    expect(out.column.header).toBe('email');
    expect(out.emails).toEqual(['ada@example.com', 'linus@example.net']);
  });
});

describe('detectEmailColumn', () => {
  it('answers the first column without a header for no rows', () => {
    expect(detectEmailColumn([])).toEqual({ index: 0, hasHeader: false });
  });

  it('treats a single address row as data, not as a header', () => {
    expect(detectEmailColumn([['ada@example.com']])).toEqual({ index: 0, hasHeader: false });
  });

  it('reads rows through papaparse, dropping blank lines', () => {
    expect(parseRows('a,b\n\nc,d\n')).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
  });
});
