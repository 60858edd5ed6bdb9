// Own AI keys at rest (API.md §3): AES-256-GCM under a key derived from the server secret, bound to the
// account by its id as associated data, and masked on every read.
import { describe, expect, it } from 'vitest';
import { deriveKeyEncryptionKey, maskAiKey, openAiKey, sealAiKey } from '../../../../src/server/ai/keys.js';

const SECRET = 'a-server-secret-of-at-least-thirty-two-characters';
const KEY = 'sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789f2a';

describe('sealing and opening an own AI key', () => {
  const kek = deriveKeyEncryptionKey(SECRET);

  it('opens what it sealed, for the same account', () => {
    const sealed = sealAiKey(kek, 'acc_one', KEY);
    expect(openAiKey(kek, 'acc_one', sealed)).toBe(KEY);
  });

  it('derives the same 32-byte key from the secret as text or bytes, and another from another secret', () => {
    expect(kek).toHaveLength(32);
    expect(deriveKeyEncryptionKey(new TextEncoder().encode(SECRET)).equals(kek)).toBe(true);
    expect(deriveKeyEncryptionKey(`${SECRET}!`).equals(kek)).toBe(false);
  });

  it('refuses a secret shorter than 32 bytes', () => {
    expect(() => deriveKeyEncryptionKey('short')).toThrow(/32/);
  });

  it('stores neither the key nor any part of it in clear, and uses a fresh IV every time', () => {
    const a = sealAiKey(kek, 'acc_one', KEY);
    const b = sealAiKey(kek, 'acc_one', KEY);
    expect(Buffer.from(a.iv, 'base64')).toHaveLength(12);
    expect(Buffer.from(a.tag, 'base64')).toHaveLength(16);
    expect(a.iv).not.toBe(b.iv);
    expect(a.ciphertext).not.toBe(b.ciphertext);
    const stored = JSON.stringify(a);
    expect(stored).not.toContain(KEY);
    expect(stored).not.toContain(KEY.slice(8, 20));
    expect(Buffer.from(a.ciphertext, 'base64').toString('latin1')).not.toContain(KEY.slice(8, 20));
  });

  it('fails to open a key sealed for another account (the account id is the associated data)', () => {
    const sealed = sealAiKey(kek, 'acc_one', KEY);
    expect(() => openAiKey(kek, 'acc_two', sealed)).toThrow();
  });

  it('fails to open under another server secret', () => {
    const sealed = sealAiKey(kek, 'acc_one', KEY);
    expect(() => openAiKey(deriveKeyEncryptionKey(`${SECRET}-rotated`), 'acc_one', sealed)).toThrow();
  });

  it('fails when the ciphertext, the tag or the IV was tampered with', () => {
    const sealed = sealAiKey(kek, 'acc_one', KEY);
    const flip = (b64: string) => {
      const bytes = Buffer.from(b64, 'base64');
      bytes[0] = (bytes[0] ?? 0) ^ 0x01;
      return bytes.toString('base64');
    };
    expect(() => openAiKey(kek, 'acc_one', { ...sealed, ciphertext: flip(sealed.ciphertext) })).toThrow();
    expect(() => openAiKey(kek, 'acc_one', { ...sealed, tag: flip(sealed.tag) })).toThrow();
    expect(() => openAiKey(kek, 'acc_one', { ...sealed, iv: flip(sealed.iv) })).toThrow();
    expect(() => openAiKey(kek, 'acc_one', { ...sealed, tag: '' })).toThrow(/malformed/);
  });
});

describe('masking an own AI key', () => {
  it('shows the first 3 and last 4 characters', () => {
    expect(maskAiKey('sk-abcdefghijklmnop9f2a')).toBe('sk-…9f2a');
    expect(maskAiKey(KEY)).toBe('sk-…9f2a');
  });

  it('shows a key of exactly 12 characters the same way', () => {
    expect(maskAiKey('abc12345wxyz')).toBe('abc…wxyz');
  });

  it('shows only the last 2 characters of a key shorter than 12', () => {
    expect(maskAiKey('abcdefgh')).toBe('…gh');
    expect(maskAiKey('abcdefghijk')).toBe('…jk');
  });

  it('never shows more than 7 characters of the key', () => {
    for (const length of [8, 11, 12, 20, 100]) {
      const key = 'x'.repeat(length);
      expect(maskAiKey(key).replace('…', '').length).toBeLessThanOrEqual(7);
    }
  });
});
