// The list checks: disposable domains (and their subdomains), role accounts, free providers.
import { describe, expect, it } from 'vitest';
import { isDisposable, isFreeProvider, isRoleAccount } from '../../../../src/server/email/lists.js';

describe('isDisposable', () => {
  it('knows disposable domains and their subdomains', () => {
    expect(isDisposable('mailinator.com')).toBe(true);
    expect(isDisposable('inbox.mailinator.com')).toBe(true);
    expect(isDisposable('a.b.yopmail.com')).toBe(true);
  });

  it('knows the wildcard list (freeml.net is only there)', () => {
    expect(isDisposable('freeml.net')).toBe(true);
    expect(isDisposable('x.freeml.net')).toBe(true);
  });

  it('does not flag real domains, nor a domain that merely ends like one', () => {
    expect(isDisposable('gmail.com')).toBe(false);
    expect(isDisposable('stripe.com')).toBe(false);
    expect(isDisposable('not-mailinator.example')).toBe(false);
    expect(isDisposable('com')).toBe(false);
  });
});

describe('isRoleAccount', () => {
  it.each(['info', 'admin', 'Support', 'POSTMASTER', 'sales+eu', 'noreply'])('flags %s', (local) => {
    expect(isRoleAccount(local)).toBe(true);
  });

  it.each(['jane', 'jane.doe', 'john+info', '+info'])('does not flag %s', (local) => {
    expect(isRoleAccount(local)).toBe(false);
  });
});

describe('isFreeProvider', () => {
  it('flags free mail providers', () => {
    expect(isFreeProvider('gmail.com')).toBe(true);
    expect(isFreeProvider('yahoo.com')).toBe(true);
    expect(isFreeProvider('gmx.net')).toBe(true);
  });

  it('does not flag company domains, nor disposable domains that the providers list also has', () => {
    expect(isFreeProvider('stripe.com')).toBe(false);
    // mailinator.com is in email-providers' list too: disposable wins.
    expect(isFreeProvider('mailinator.com')).toBe(false);
  });
});
