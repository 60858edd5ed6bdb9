// ACME challenges in a cluster (tls/challenges.ts): the CA's check may reach any node, so a challenge
// one node's order set up is answered by every other, from the store: HTTP-01 tokens (for their own
// host only) and the built-in DNS responder's TXT records. Run on both stores.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import DNS2 from 'dns2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CHALLENGE_PATH,
  DnsResponder,
  HttpChallenges,
  SharedChallenges,
} from '../../src/server/tls/challenges.js';
import { type Store, openStore } from '../../src/server/store/open.js';
import { countingReads, testStoreLocation } from '../helpers/test-store.js';

const dir = mkdtempSync(join(tmpdir(), 'wharf-acme-challenges-'));
let db: Store;
let drop: () => Promise<void>;
const responders: DnsResponder[] = [];

beforeAll(async () => {
  const location = await testStoreLocation(dir);
  drop = location.drop;
  db = await openStore(location.location);
});

afterAll(async () => {
  await Promise.all(responders.map((r) => r.close()));
  await db?.destroy();
  await drop?.();
  rmSync(dir, { recursive: true, force: true });
});

const token = (n: number) => `${'t'.repeat(40)}${n}`;

describe('ACME challenges shared by the nodes of a cluster', () => {
  it('answers on another node an HTTP-01 token, for its own host only, until it is removed', async () => {
    const [a, b] = [
      new HttpChallenges(new SharedChallenges(db)),
      new HttpChallenges(new SharedChallenges(db)),
    ];
    await a.add('Shop.Example.test', token(1), 'key-authorization-1');
    expect(await b.answer('shop.example.test', CHALLENGE_PATH + token(1))).toBe('key-authorization-1');
    expect(await b.answer('other.example.test', CHALLENGE_PATH + token(1))).toBeNull();
    expect(await b.answer('shop.example.test', CHALLENGE_PATH + token(2))).toBeNull();
    expect(await b.answer('shop.example.test', `${CHALLENGE_PATH}not a token`)).toBeNull();
    await a.remove('shop.example.test', token(1), 'key-authorization-1');
    // B answers from what it read in the last second: gone once that is a second old.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await b.answer('shop.example.test', CHALLENGE_PATH + token(1))).toBeNull();
    // A single node keeps its challenges to itself.
    const alone = new HttpChallenges();
    await alone.add('solo.example.test', token(3), 'solo');
    expect(await b.answer('solo.example.test', CHALLENGE_PATH + token(3))).toBeNull();
    expect(await alone.answer('solo.example.test', CHALLENGE_PATH + token(3))).toBe('solo');
  });

  it('answers on another node’s DNS responder the TXT values of an order, and still refuses other names', async () => {
    const [a, b] = [new DnsResponder(new SharedChallenges(db)), new DnsResponder(new SharedChallenges(db))];
    responders.push(a, b);
    await a.listen('127.0.0.1', 0);
    const port = await b.listen('127.0.0.1', 0);
    await a.add('wild.example.test', 'token', 'txt-value');
    const resolver = new DNS2({ nameServers: ['127.0.0.1'], port, timeout: 2_000 });
    const answer = await resolver.resolve('_acme-challenge.wild.example.test', 'TXT');
    expect(answer.answers.map((r) => (r as unknown as { data: string[] }).data.join(''))).toEqual([
      'txt-value',
    ]);
    expect((await resolver.resolve('wild.example.test', 'A')).header.rcode).toBe(5);
    await a.remove('wild.example.test', 'token', 'txt-value');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await resolver.resolve('_acme-challenge.wild.example.test', 'TXT')).answers).toEqual([]);
  });

  it('forgets challenges a node left a day ago (an order it never finished)', async () => {
    const shared = new SharedChallenges(db);
    await db
      .insertInto('acme_challenges')
      .values({
        kind: 'http-01',
        key: token(9),
        value: 'left',
        domain: 'left.example.test',
        created_at: new Date(Date.now() - 25 * 3_600_000).toISOString(),
      })
      .execute();
    expect(await shared.find('http-01', token(9))).toHaveLength(1);
    await shared.add('http-01', token(10), 'new.example.test', 'new');
    expect(await shared.find('http-01', token(9))).toEqual([]);
    expect(await shared.find('http-01', token(10))).toEqual([{ domain: 'new.example.test', value: 'new' }]);
  });

  it('costs the store one read a second whatever the public asks, and a new challenge is answered everywhere once added', async () => {
    const counted = countingReads(db);
    const b = new HttpChallenges(new SharedChallenges(counted.db));
    const a = new HttpChallenges(new SharedChallenges(db));
    // A flood of well-formed tokens nobody ordered, at once and one after another.
    const flood = Array.from({ length: 200 }, (_, i) => `${'x'.repeat(30)}${i}`);
    await Promise.all(flood.map((t) => b.answer('shop.example.test', CHALLENGE_PATH + t)));
    for (const t of flood) expect(await b.answer('shop.example.test', CHALLENGE_PATH + t)).toBeNull();
    expect(counted.reads()).toBe(1);
    // B has just read "none" for this token: A's add returns only once B answers it anyway.
    expect(await b.answer('late.example.test', CHALLENGE_PATH + token(20))).toBeNull();
    await a.add('late.example.test', token(20), 'late-value');
    expect(await b.answer('late.example.test', CHALLENGE_PATH + token(20))).toBe('late-value');
    expect(counted.reads()).toBe(2);
    await a.remove('late.example.test', token(20), 'late-value');
  });
});
