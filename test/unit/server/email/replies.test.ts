// Reading SMTP replies: multi-line parsing, enhanced codes, and the code-class rules of API.md §6.
import { describe, expect, it } from 'vitest';
import { classifyRcpt, isPrivateAddress, parseReply, providerOf } from '../../../../src/server/email/smtp.js';

describe('parseReply', () => {
  it('joins a multi-line reply and takes the enhanced code from its first line', () => {
    expect(parseReply(['250-mx.example.com', '250-PIPELINING', '250 SIZE 10240000'])).toEqual({
      code: 250,
      enhancedCode: null,
      message: 'mx.example.com PIPELINING SIZE 10240000',
    });
    expect(
      parseReply(['550-5.1.1 The email account that you tried to reach does', '550 5.1.1 not exist.']),
    ).toEqual({
      code: 550,
      enhancedCode: '5.1.1',
      message: 'The email account that you tried to reach does not exist.',
    });
  });

  it('reads a bare code', () => {
    expect(parseReply(['250'])).toEqual({ code: 250, enhancedCode: null, message: '' });
  });

  it('refuses lines that are not one reply', () => {
    expect(parseReply([])).toBeNull();
    expect(parseReply(['hello'])).toBeNull();
    expect(parseReply(['250-a', '251 b'])).toBeNull();
  });
});

describe('classifyRcpt', () => {
  const read = (line: string) => classifyRcpt(parseReply([line])!);

  it.each([
    ['250 2.1.5 OK', 'accepted'],
    ['251 User not local; will forward', 'accepted'],
    ['550 5.1.1 user unknown', 'rejected'],
    ['550 No such user here', 'rejected'],
    ['550 5.2.1 mailbox disabled', 'rejected'],
    ['553 5.1.3 bad destination mailbox address syntax', 'rejected'],
    ['551 5.1.6 user has moved', 'rejected'],
    ['451 4.7.1 Greylisting in action', 'inconclusive'],
    ['450 4.2.0 <a@b.c>: Recipient address rejected: Greylisted', 'inconclusive'],
    ['421 4.7.0 Try again later', 'inconclusive'],
    ['452 4.2.2 mailbox full', 'inconclusive'],
    ['554 5.7.1 Service unavailable; client host blocked', 'inconclusive'],
    ['550 5.7.1 relaying denied', 'inconclusive'],
    ['552 5.2.2 mailbox full', 'inconclusive'],
    ['552 Requested mail action aborted: exceeded storage', 'inconclusive'],
    ['550 5.2.2 over quota', 'inconclusive'],
    ['554 Transaction failed', 'inconclusive'],
    ['503 5.5.1 bad sequence of commands', 'inconclusive'],
  ])('reads %s as %s', (line, verdict) => {
    expect(read(line)).toBe(verdict);
  });
});

describe('isPrivateAddress', () => {
  it.each([
    '127.0.0.1',
    '127.0.0.2',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    '::',
    'fe80::1',
    'fd00::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
  ])('refuses %s', (address) => {
    expect(isPrivateAddress(address)).toBe(true);
  });

  it.each(['8.8.8.8', '142.250.1.27', '2a00:1450:4001:80b::201a', '::ffff:8.8.8.8', '172.32.0.1'])(
    'allows %s',
    (address) => {
      expect(isPrivateAddress(address)).toBe(false);
    },
  );
});

describe('providerOf', () => {
  it('groups MX hosts by registrable domain', () => {
    expect(providerOf('gmail-smtp-in.l.google.com')).toBe('google.com');
    expect(providerOf('alt1.aspmx.l.google.com')).toBe('google.com');
    expect(providerOf('mx1.example.co.uk')).toBe('example.co.uk');
    expect(providerOf('example.com')).toBe('example.com');
  });
});
