// Typo suggestions: real corrections of popular mail domains and TLD slips, and no false ones.
import { describe, expect, it } from 'vitest';
import { suggestedAddress } from '../../../../src/shared/api/email.js';
import { editDistance, suggestDomain } from '../../../../src/server/email/suggest.js';

describe('suggestDomain', () => {
  it.each([
    ['gmial.com', 'gmail.com'],
    ['gmai.com', 'gmail.com'],
    ['yaho.com', 'yahoo.com'],
    ['hotmial.com', 'hotmail.com'],
    ['hotmal.com', 'hotmail.com'],
    ['outlok.com', 'outlook.com'],
    ['outloook.com', 'outlook.com'],
    ['iclod.com', 'icloud.com'],
    ['gmail.con', 'gmail.com'],
    ['gmail.cmo', 'gmail.com'],
    ['yahoo.ocm', 'yahoo.com'],
    ['hotmail.comm', 'hotmail.com'],
    ['gmial.con', 'gmail.com'],
    ['gmail.co', 'gmail.com'],
    ['hotmial.co.uk', 'hotmail.co.uk'],
    ['stripe.con', 'stripe.com'],
    ['aol.con', 'aol.com'],
    ['gmx.con', 'gmx.com'],
    ['comcast.nte', 'comcast.net'],
  ])('corrects %s to %s', (typo, fixed) => {
    expect(suggestDomain(typo)).toBe(fixed);
  });

  it.each([
    'acme.com',
    'me.com',
    'mail.com',
    'email.com',
    'gmx.net',
    'gmx.de',
    'hey.com',
    'fastmail.com',
    'stripe.com',
    'cloud.com',
    'aon.com',
    'gmail.com',
    'yahoo.co.jp',
    'yandex.ua',
    'outlook.cl',
    'proton.me',
    'ymail.com',
    'live.com',
    'example.co',
    'xn--bcher-kva.de',
  ])('leaves %s alone', (domain) => {
    expect(suggestDomain(domain)).toBeNull();
  });
});

describe('editDistance', () => {
  it('counts an adjacent transposition as one edit', () => {
    expect(editDistance('gmial', 'gmail')).toBe(1);
    expect(editDistance('yaho', 'yahoo')).toBe(1);
    expect(editDistance('acme', 'me')).toBe(2);
    expect(editDistance('abcdefgh', 'a', 3)).toBe(4);
  });
});

describe('suggestedAddress', () => {
  it('puts the suggested domain in place of the typed one, keeping the local part as typed', () => {
    expect(suggestedAddress({ email: 'Jane.Doe@gmial.con', suggestion: 'gmail.com' })).toBe(
      'Jane.Doe@gmail.com',
    );
    expect(suggestedAddress({ email: ' a@b@yaho.com ', suggestion: 'yahoo.com' })).toBe('a@b@yahoo.com');
    expect(suggestedAddress({ email: 'jane@gmail.com', suggestion: '' })).toBeNull();
  });
});
