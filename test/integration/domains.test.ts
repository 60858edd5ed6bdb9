// API.md §5, custom domains, against a DNS server on loopback: adding one (both records to create,
// rules, conflicts), verifying it by its TXT proof and a CNAME or an apex's A/AAAA records, clear
// failures (wrong CNAME, no records, a DNS server that does not answer), ownership between accounts
// (a CNAME alone takes nobody's domain; the first to prove it wins; verified elsewhere → 409), relinking,
// the edge serving a deployed app at a verified domain and not before, and the background re-check.
import { createSocket } from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../src/core/engine.js';
import { FileSecretStore } from '../../src/core/secret-store.js';
import { CreatedDomain, Domain, DomainVerification } from '../../src/shared/api/domains.js';
import { BridgeError } from '../../src/shared/bridge.js';
import { nextCheckAt } from '../../src/server/domains/domains.js';
import { type FakeDns, startDns } from '../helpers/dns.js';
import { createProject, deployFiles, nodeApp, viaEdge } from '../helpers/deploy.js';
import { quietFor, until } from '../helpers/poll.js';
import { call, expectProblem, startPlatform, type TestPlatform } from '../helpers/platform.js';

const TARGET = 'cname.localhost';
const TARGET_A = '10.0.0.7';
const TARGET_AAAA = 'fd00::7';

let dns: FakeDns;
let p: TestPlatform;

async function addDomain(body: Record<string, unknown>, key = p.key, tp = p): Promise<CreatedDomain> {
  const created = await call(`${tp.api}/domains`, { key, body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return CreatedDomain.parse(created.body);
}

async function verify(id: string, key = p.key, tp = p): Promise<DomainVerification> {
  const result = await call(`${tp.api}/domains/${id}/verify`, { key, method: 'POST' });
  expect(result.status, JSON.stringify(result.body)).toBe(200);
  return DomainVerification.parse(result.body);
}

/** Publishes the TXT proof the platform asked for at `created`. */
function prove(created: CreatedDomain): void {
  dns.set(created.verification.name, { TXT: [created.verification.value] });
}

async function listDomains(key = p.key, tp = p): Promise<Domain[]> {
  const result = await call<unknown[]>(`${tp.api}/domains`, { key });
  expect(result.status).toBe(200);
  return result.body.map((d) => Domain.parse(d));
}

beforeAll(async () => {
  dns = await startDns({ [TARGET]: { A: [TARGET_A], AAAA: [TARGET_AAAA] } });
  p = await startPlatform({ dnsServers: [dns.server], dnsTimeoutMs: 1_500 });
});

afterAll(async () => {
  await p?.close();
  await dns?.close();
});

describe('POST /domains', () => {
  it('adds a domain, normalized, with CNAME instructions and a TXT challenge, and lists it', async () => {
    const created = await addDomain({ domain: 'App.Example.COM.' });
    expect(created.instructions).toEqual({ type: 'CNAME', name: 'app.example.com', target: TARGET });
    expect(created.verification).toEqual({
      type: 'TXT',
      name: '_wharf-challenge.app.example.com',
      value: expect.stringMatching(/^wharf-verify=[0-9A-Za-z]{32}$/),
    });
    expect(created.domain).toMatchObject({
      id: expect.stringMatching(/^dom_/),
      domain: 'app.example.com',
      verified: false,
      cname_target: TARGET,
      project_id: null,
      verified_at: null,
    });
    expect((await listDomains()).map((d) => d.domain)).toContain('app.example.com');
  });

  it('answers 409 when the account has the domain already', async () => {
    await addDomain({ domain: 'taken.example.com' });
    const problem = expectProblem(
      await call(`${p.api}/domains`, { key: p.key, body: { domain: 'TAKEN.example.com' } }),
      409,
      'conflict',
    );
    expect(problem.detail).toBe('the domain taken.example.com has already been added');
  });

  it('gives each account its own token for a domain, and the same one when it is added again', async () => {
    const first = await addDomain({ domain: 'again.example.com' });
    const other = await p.newAccount({ scopes: ['deploy'] });
    const theirs = await addDomain({ domain: 'again.example.com' }, other.key);
    expect(theirs.verification.value).not.toBe(first.verification.value);
    await call(`${p.api}/domains/${first.domain.id}`, { key: p.key, method: 'DELETE' });
    const readded = await addDomain({ domain: 'again.example.com' });
    expect(readded.verification.value).toBe(first.verification.value);
  });

  it.each([
    [{ domain: 'not a domain' }, 'domain'],
    [{ domain: 'localhost' }, 'domain'],
    [{ domain: 'example.123' }, 'domain'],
    [{ domain: '-bad.example.com' }, 'domain'],
    [{ domain: 'x'.repeat(64) + '.example.com' }, 'domain'],
    [{ domain: 42 }, 'domain'],
    [{}, 'domain'],
    [{ domain: 'shop.localhost' }, 'domain'],
    [{ domain: 'demo.tunnel.localhost' }, 'domain'],
    [{ domain: 'cname.localhost' }, 'domain'],
    [{ domain: 'ok.example.com', project_id: 'nope' }, 'project_id'],
    [{ domain: 'ok.example.com', extra: true }, 'extra'],
  ])('refuses %j with 422 naming %s', async (body, path) => {
    const problem = expectProblem(
      await call(`${p.api}/domains`, { key: p.key, body }),
      422,
      'validation_failed',
    );
    expect(problem.errors?.map((e) => e.path)).toContain(path);
  });

  it("answers 404 for a project of another account, and links the account's own project", async () => {
    const other = await p.newAccount({ scopes: ['deploy'] });
    const theirs = await call(`${p.api}/projects`, {
      key: other.key,
      body: { name: 'Theirs', subdomain: 'theirs-dom', image: 'nginx' },
    });
    expect(theirs.status).toBe(201);
    const refused = expectProblem(
      await call(`${p.api}/domains`, {
        key: p.key,
        body: { domain: 'link.example.com', project_id: (theirs.body as { id: string }).id },
      }),
      404,
      'not_found',
    );
    expect(refused.detail).toMatch(/project prj_\w+ was not found/);
    expectProblem(
      await call(`${p.api}/domains`, {
        key: p.key,
        body: { domain: 'link.example.com', project_id: 'prj_doesnotexist' },
      }),
      404,
      'not_found',
    );
    const mine = await createProject(p, { name: 'Mine', subdomain: 'mine-dom', image: 'nginx' });
    const linked = await addDomain({ domain: 'link.example.com', project_id: mine.id });
    expect(linked.domain.project_id).toBe(mine.id);
  });
});

describe('ownership and scope', () => {
  it("hides another account's domains: not listed, 404 to verify and delete", async () => {
    const created = await addDomain({ domain: 'private.example.com' });
    const other = await p.newAccount({ scopes: ['deploy'] });
    expect(await listDomains(other.key)).toEqual([]);
    expectProblem(
      await call(`${p.api}/domains/${created.domain.id}/verify`, { key: other.key, method: 'POST' }),
      404,
      'not_found',
    );
    expectProblem(
      await call(`${p.api}/domains/${created.domain.id}`, { key: other.key, method: 'DELETE' }),
      404,
      'not_found',
    );
    expect((await listDomains()).map((d) => d.id)).toContain(created.domain.id);
  });

  it('needs the deploy scope (or full), and a key', async () => {
    const email = await p.newAccount({ scopes: ['email'] });
    expectProblem(await call(`${p.api}/domains`, { key: email.key }), 403, 'forbidden');
    expectProblem(await call(`${p.api}/domains`), 401, 'unauthorized');
  });

  it('deletes a domain, then answers 404 for it', async () => {
    const created = await addDomain({ domain: 'gone.example.com' });
    const deleted = await call(`${p.api}/domains/${created.domain.id}`, { key: p.key, method: 'DELETE' });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: created.domain.id, deleted: true });
    expectProblem(
      await call(`${p.api}/domains/${created.domain.id}`, { key: p.key, method: 'DELETE' }),
      404,
      'not_found',
    );
    expectProblem(
      await call(`${p.api}/domains/dom_unknown/verify`, { key: p.key, method: 'POST' }),
      404,
      'not_found',
    );
    // Its name can be added again.
    await addDomain({ domain: 'gone.example.com' });
  });
});

describe('POST /domains/:id/verify', () => {
  it('verifies a CNAME to the target (any case, trailing dot or not)', async () => {
    const created = await addDomain({ domain: 'www.shop-one.test' });
    dns.set('www.shop-one.test', { CNAME: 'CNAME.Localhost' });
    prove(created);
    const result = await verify(created.domain.id);
    expect(result).toMatchObject({
      id: created.domain.id,
      domain: 'www.shop-one.test',
      verified: true,
      cname_target: TARGET,
      found: [`TXT ${created.verification.value}`, `CNAME ${TARGET}`],
      detail: `the TXT record _wharf-challenge.www.shop-one.test holds this account's token, and the CNAME points to ${TARGET}`,
      records: { txt: { ok: true, seen: 'found' }, cname: { ok: true, seen: 'found' } },
    });
    const listed = (await listDomains()).find((d) => d.id === created.domain.id)!;
    expect(listed.verified).toBe(true);
    expect(listed.verified_at).toBe(result.checked_at);
  });

  it("verifies an apex whose A/AAAA records are the target's", async () => {
    const created = await addDomain({ domain: 'shop-two.test' });
    dns.set('shop-two.test', { A: [TARGET_A], AAAA: [TARGET_AAAA] });
    expect((await verify(created.domain.id)).verified).toBe(false);
    prove(created);
    const result = await verify(created.domain.id);
    expect(result.verified).toBe(true);
    expect(result.found).toEqual([
      `TXT ${created.verification.value}`,
      `A ${TARGET_A}`,
      `AAAA ${TARGET_AAAA}`,
    ]);
    expect(result.detail).toMatch(/no CNAME, but the A\/AAAA records .* match those of cname\.localhost/);
  });

  it('says where a wrong CNAME points', async () => {
    const created = await addDomain({ domain: 'www.shop-three.test' });
    dns.set('www.shop-three.test', { CNAME: 'foo.example.net' });
    prove(created);
    const result = await verify(created.domain.id);
    expect(result.verified).toBe(false);
    expect(result.found).toEqual([`TXT ${created.verification.value}`, 'CNAME foo.example.net']);
    expect(result.detail).toMatch(/; the CNAME points to foo\.example\.net, not cname\.localhost/);
    expect(result.records).toEqual({
      txt: { ok: true, seen: 'found' },
      cname: { ok: false, seen: 'points to foo.example.net instead' },
    });
  });

  it('refuses an apex whose addresses are not the target’s', async () => {
    const created = await addDomain({ domain: 'shop-four.test' });
    dns.set('shop-four.test', { A: ['192.0.2.1'] });
    prove(created);
    const result = await verify(created.domain.id);
    expect(result.verified).toBe(false);
    expect(result.found).toEqual([`TXT ${created.verification.value}`, 'A 192.0.2.1']);
    expect(result.detail).toMatch(
      /192\.0\.2\.1\) do not match those of cname\.localhost \(10\.0\.0\.7, fd00::7\)/,
    );
  });

  it('says so when there are no records at all (an empty name, or one that does not exist)', async () => {
    const empty = await addDomain({ domain: 'empty.shop-five.test' });
    dns.set('empty.shop-five.test', {});
    const missing = await addDomain({ domain: 'missing.shop-five.test' });
    for (const created of [empty, missing]) {
      const result = await verify(created.domain.id);
      expect(result.verified).toBe(false);
      expect(result.found).toEqual([]);
      expect(result.detail).toBe(
        `no TXT record _wharf-challenge.${created.domain.domain}: add one with the value ${created.verification.value}; no CNAME, A or AAAA records for ${created.domain.domain}: add a CNAME record pointing to cname.localhost`,
      );
    }
  });

  it('takes a verification back when DNS now points elsewhere', async () => {
    const created = await addDomain({ domain: 'moved.shop-six.test' });
    dns.set('moved.shop-six.test', { CNAME: TARGET });
    prove(created);
    expect((await verify(created.domain.id)).verified).toBe(true);
    dns.set('moved.shop-six.test', { CNAME: 'elsewhere.example.net' });
    expect((await verify(created.domain.id)).verified).toBe(false);
    expect((await listDomains()).find((d) => d.id === created.domain.id)).toMatchObject({
      verified: false,
      verified_at: null,
    });
  });

  it('answers 200 with a clear detail, not a 500, when the DNS server does not answer, and keeps a verification', async () => {
    const created = await addDomain({ domain: 'slow.shop-seven.test' });
    dns.set('slow.shop-seven.test', { CNAME: TARGET });
    prove(created);
    expect((await verify(created.domain.id)).verified).toBe(true);
    dns.answer(false);
    try {
      const result = await verify(created.domain.id);
      expect(result.verified).toBe(true);
      expect(result.found).toEqual([]);
      expect(result.detail).toBe(
        'could not look up _wharf-challenge.slow.shop-seven.test: the DNS server did not answer in time (ETIMEOUT); could not look up slow.shop-seven.test: the DNS server did not answer in time (ETIMEOUT); nothing was changed, try again later; the domain stays verified',
      );
    } finally {
      dns.answer(true);
    }
  });

  it('reports a DNS server that cannot be reached', async () => {
    // A port nobody listens on: bind one, then free it.
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    const { port } = socket.address() as AddressInfo;
    await new Promise<void>((resolve) => socket.close(() => resolve()));
    const down = await startPlatform({ dnsServers: [`127.0.0.1:${port}`], dnsTimeoutMs: 300 });
    try {
      const created = await addDomain({ domain: 'www.unreachable.test' }, down.key, down);
      const result = await verify(created.domain.id, down.key, down);
      expect(result.verified).toBe(false);
      expect(result.detail).toMatch(
        /^could not look up _wharf-challenge\.www\.unreachable\.test: the DNS server (could not be reached \(ECONNREFUSED\)|did not answer in time \(ETIMEOUT\))/,
      );
      // Each record says its lookup failed, not that it is missing.
      expect(result.records?.txt).toMatchObject({
        ok: false,
        seen: expect.stringMatching(/^lookup failed: /),
      });
      expect(result.records?.cname).toMatchObject({
        ok: false,
        seen: expect.stringMatching(/^lookup failed: /),
      });
    } finally {
      await down.close();
    }
  });
});

describe('the edge at a custom domain', () => {
  it('serves the linked project once the domain is verified, and not before nor after deletion', async () => {
    const project = await createProject(p, {
      name: 'Custom',
      subdomain: 'custom-dom',
      deploy_source: 'upload',
    });
    await deployFiles(p, project.id, nodeApp('hello from custom'));
    expect((await viaEdge(p.edgePort, 'custom-dom.localhost', '/x')).body).toBe('hello from custom /x');

    const created = await addDomain({ domain: 'www.customer.test', project_id: project.id });
    const before = await viaEdge(p.edgePort, 'www.customer.test', '/x');
    expect(before.status).toBe(404);

    dns.set('www.customer.test', { CNAME: 'wrong.example.net' });
    expect((await verify(created.domain.id)).verified).toBe(false);
    expect((await viaEdge(p.edgePort, 'www.customer.test', '/x')).status).toBe(404);

    dns.set('www.customer.test', { CNAME: TARGET });
    prove(created);
    expect((await verify(created.domain.id)).verified).toBe(true);
    const served = await viaEdge(p.edgePort, 'WWW.Customer.test', '/x');
    expect(served.status).toBe(200);
    expect(served.body).toBe('hello from custom /x');

    // A verified domain linked to nothing routes nowhere.
    const unlinked = await addDomain({ domain: 'unlinked.customer.test' });
    dns.set('unlinked.customer.test', { CNAME: TARGET });
    prove(unlinked);
    expect((await verify(unlinked.domain.id)).verified).toBe(true);
    expect((await viaEdge(p.edgePort, 'unlinked.customer.test', '/')).status).toBe(404);

    await call(`${p.api}/domains/${created.domain.id}`, { key: p.key, method: 'DELETE' });
    expect((await viaEdge(p.edgePort, 'www.customer.test', '/x')).status).toBe(404);
  });
});

describe('ownership between accounts', () => {
  it("does not let another account take a domain with the CNAME alone: not verified, not routed; the owner's TXT proof wins, then 409 for the other", async () => {
    const victim = await createProject(p, {
      name: 'Shop',
      subdomain: 'victim-shop',
      deploy_source: 'upload',
    });
    await deployFiles(p, victim.id, nodeApp('the real shop'));
    const attacker = await p.newAccount({ scopes: ['deploy'] });
    const as = { ...p, key: attacker.key };
    const bait = await createProject(as, {
      name: 'Bait',
      subdomain: 'attacker-bait',
      deploy_source: 'upload',
    });
    await deployFiles(as, bait.id, nodeApp('phished'));

    // The shop already points its CNAME at the platform; the attacker adds the name first.
    dns.set('blog.someones-shop.test', { CNAME: TARGET });
    const theirs = await addDomain({ domain: 'blog.someones-shop.test', project_id: bait.id }, attacker.key);
    const attempt = await verify(theirs.domain.id, attacker.key);
    expect(attempt.verified).toBe(false);
    expect(attempt.found).toEqual([`CNAME ${TARGET}`]);
    expect(attempt.detail).toMatch(/^no TXT record _wharf-challenge\.blog\.someones-shop\.test: add one/);
    expect((await listDomains(attacker.key))[0]!.verified).toBe(false);
    expect((await viaEdge(p.edgePort, 'blog.someones-shop.test', '/')).status).toBe(404);

    // The shop adds it too (the attacker's pending row does not block it) and proves it.
    const mine = await addDomain({ domain: 'blog.someones-shop.test', project_id: victim.id });
    expect(mine.verification.value).not.toBe(theirs.verification.value);
    prove(mine);
    expect((await verify(mine.domain.id)).verified).toBe(true);
    const served = await viaEdge(p.edgePort, 'blog.someones-shop.test', '/');
    expect(served.status).toBe(200);
    expect(served.body).toBe('the real shop /');

    // Now the attacker's verify and add are refused, even with its own token published beside.
    dns.set(theirs.verification.name, { TXT: [mine.verification.value, theirs.verification.value] });
    const refused = expectProblem(
      await call(`${p.api}/domains/${theirs.domain.id}/verify`, { key: attacker.key, method: 'POST' }),
      409,
      'conflict',
    );
    expect(refused.detail).toBe('the domain blog.someones-shop.test has been verified by another account');
    await call(`${p.api}/domains/${theirs.domain.id}`, { key: attacker.key, method: 'DELETE' });
    expectProblem(
      await call(`${p.api}/domains`, { key: attacker.key, body: { domain: 'blog.someones-shop.test' } }),
      409,
      'conflict',
    );
    expect((await viaEdge(p.edgePort, 'blog.someones-shop.test', '/')).body).toBe('the real shop /');
  });

  it('lets several accounts hold a domain pending, and gives it to the first that proves it', async () => {
    const one = await p.newAccount({ scopes: ['deploy'] });
    const two = await p.newAccount({ scopes: ['deploy'] });
    const first = await addDomain({ domain: 'contested.example.test' }, one.key);
    const second = await addDomain({ domain: 'contested.example.test' }, two.key);
    dns.set('contested.example.test', { CNAME: TARGET });
    // Both tokens are published: whoever verifies first takes it.
    dns.set(first.verification.name, { TXT: [first.verification.value, second.verification.value] });
    expect((await verify(second.domain.id, two.key)).verified).toBe(true);
    expectProblem(
      await call(`${p.api}/domains/${first.domain.id}/verify`, { key: one.key, method: 'POST' }),
      409,
      'conflict',
    );
    expect((await listDomains(one.key)).find((d) => d.id === first.domain.id)!.verified).toBe(false);

    // Once the winner lets it go, the other may prove it.
    await call(`${p.api}/domains/${second.domain.id}`, { key: two.key, method: 'DELETE' });
    expect((await verify(first.domain.id, one.key)).verified).toBe(true);
  });

  it('lets only one of two concurrent proofs win', async () => {
    const one = await p.newAccount({ scopes: ['deploy'] });
    const two = await p.newAccount({ scopes: ['deploy'] });
    const a = await addDomain({ domain: 'race.example.test' }, one.key);
    const b = await addDomain({ domain: 'race.example.test' }, two.key);
    dns.set('race.example.test', { CNAME: TARGET });
    dns.set(a.verification.name, { TXT: [a.verification.value, b.verification.value] });
    const results = await Promise.all([
      call(`${p.api}/domains/${a.domain.id}/verify`, { key: one.key, method: 'POST' }),
      call(`${p.api}/domains/${b.domain.id}/verify`, { key: two.key, method: 'POST' }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    const rows = await p.platform.db
      .selectFrom('domains')
      .select('verified')
      .where('domain', '=', 'race.example.test')
      .execute();
    expect(rows.filter((r) => r.verified === 1)).toHaveLength(1);
  });

  it('records a background check of a domain verified by another account as taken', async () => {
    const bg = await startPlatform({ dnsServers: [dns.server], dnsTimeoutMs: 1_500, domainRecheckMs: 100 });
    try {
      const other = await bg.newAccount({ scopes: ['deploy'] });
      const loser = await addDomain({ domain: 'owned.background.test' }, other.key, bg);
      const winner = await addDomain({ domain: 'owned.background.test' }, bg.key, bg);
      dns.set('owned.background.test', { CNAME: TARGET });
      // The loser publishes its token too, too late.
      dns.set(winner.verification.name, { TXT: [winner.verification.value] });
      expect((await verify(winner.domain.id, bg.key, bg)).verified).toBe(true);
      dns.set(winner.verification.name, { TXT: [winner.verification.value, loser.verification.value] });
      const stored = () =>
        bg.platform.db
          .selectFrom('domains')
          .select(['verified', 'check_detail'])
          .where('id', '=', loser.domain.id)
          .executeTakeFirstOrThrow();
      const taken = 'the domain owned.background.test has been verified by another account';
      await until(async () => (await stored()).check_detail === taken, 'a background check', 5_000);
      expect((await stored()).verified).toBe(0);
      expect((await listDomains(bg.key, bg))[0]!.verified).toBe(true);
    } finally {
      await bg.close();
    }
  });
});

describe('PATCH /domains/:id', () => {
  it('relinks a verified domain to another project without verifying again, and the edge follows', async () => {
    const one = await createProject(p, { name: 'One', subdomain: 'relink-one', deploy_source: 'upload' });
    await deployFiles(p, one.id, nodeApp('from one'));
    const two = await createProject(p, { name: 'Two', subdomain: 'relink-two', deploy_source: 'upload' });
    await deployFiles(p, two.id, nodeApp('from two'));
    const created = await addDomain({ domain: 'relink.example.test', project_id: one.id });
    dns.set('relink.example.test', { CNAME: TARGET });
    prove(created);
    const verified = await verify(created.domain.id);
    expect((await viaEdge(p.edgePort, 'relink.example.test', '/')).body).toBe('from one /');

    const queries = dns.queries.length;
    const moved = await call(`${p.api}/domains/${created.domain.id}`, {
      key: p.key,
      method: 'PATCH',
      body: { project_id: two.id },
    });
    expect(moved.status).toBe(200);
    expect(Domain.parse(moved.body)).toEqual({
      ...created.domain,
      project_id: two.id,
      verified: true,
      verified_at: verified.checked_at,
    });
    expect(dns.queries.length).toBe(queries);
    expect((await viaEdge(p.edgePort, 'relink.example.test', '/')).body).toBe('from two /');

    const unlinked = await call(`${p.api}/domains/${created.domain.id}`, {
      key: p.key,
      method: 'PATCH',
      body: { project_id: null },
    });
    expect(unlinked.status).toBe(200);
    expect(Domain.parse(unlinked.body)).toMatchObject({ project_id: null, verified: true });
    expect((await viaEdge(p.edgePort, 'relink.example.test', '/')).status).toBe(404);
    expect((await listDomains()).find((d) => d.id === created.domain.id)!.project_id).toBeNull();
  });

  it("answers 404 for another account's domain or project, and leaves the link as it was", async () => {
    const mine = await createProject(p, { name: 'Kept', subdomain: 'relink-kept', image: 'nginx' });
    const created = await addDomain({ domain: 'guarded.example.test', project_id: mine.id });
    const other = await p.newAccount({ scopes: ['deploy'] });
    const theirs = await call<{ id: string }>(`${p.api}/projects`, {
      key: other.key,
      body: { name: 'Theirs', subdomain: 'relink-theirs', image: 'nginx' },
    });
    expect(theirs.status).toBe(201);
    // The other account cannot touch my domain, even pointing it at its own project.
    expectProblem(
      await call(`${p.api}/domains/${created.domain.id}`, {
        key: other.key,
        method: 'PATCH',
        body: { project_id: theirs.body.id },
      }),
      404,
      'not_found',
    );
    // Nor can I point my domain at its project.
    const problem = expectProblem(
      await call(`${p.api}/domains/${created.domain.id}`, {
        key: p.key,
        method: 'PATCH',
        body: { project_id: theirs.body.id },
      }),
      404,
      'not_found',
    );
    expect(problem.detail).toMatch(/project prj_\w+ was not found/);
    expectProblem(
      await call(`${p.api}/domains/dom_unknown`, { key: p.key, method: 'PATCH', body: { project_id: null } }),
      404,
      'not_found',
    );
    expect((await listDomains()).find((d) => d.id === created.domain.id)!.project_id).toBe(mine.id);
  });

  it.each([
    [{}, 'project_id', 1],
    [{ project_id: 'nope' }, 'project_id', 2],
    [{ project_id: 42 }, 'project_id', 3],
    [{ project_id: null, domain: 'other.example.test' }, 'domain', 4],
  ])('refuses %j with 422 naming %s', async (body, path, n) => {
    const created = await addDomain({ domain: `bad-body-${n}.example.test` });
    const problem = expectProblem(
      await call(`${p.api}/domains/${created.domain.id}`, { key: p.key, method: 'PATCH', body }),
      422,
      'validation_failed',
    );
    expect(problem.errors?.map((e) => e.path)).toContain(path);
  });

  it('needs the deploy scope', async () => {
    const email = await p.newAccount({ scopes: ['email'] });
    expectProblem(
      await call(`${p.api}/domains/dom_x`, { key: email.key, method: 'PATCH', body: { project_id: null } }),
      403,
      'forbidden',
    );
  });
});

describe("the desktop app's domains.link", () => {
  it('relinks through the platform, and refuses a bad project id before sending it', async () => {
    const home = mkdtempSync(join(tmpdir(), 'wharf-domains-engine-'));
    const engine = new Engine({
      home,
      secrets: new FileSecretStore(join(home, 'secrets.json')),
      localPlatform: async () => ({ url: p.api.replace(/\/api\/v1$/, ''), apiKey: p.key }),
      pollIntervalMs: 60_000,
    });
    try {
      const project = await createProject(p, { name: 'Linked', subdomain: 'engine-link', image: 'nginx' });
      const created = await addDomain({ domain: 'engine.example.test' });
      const linked = await engine.invoke('domains.link', { id: created.domain.id, project_id: project.id });
      expect(linked).toMatchObject({ id: created.domain.id, project_id: project.id });
      const unlinked = await engine.invoke('domains.link', { id: created.domain.id, project_id: null });
      expect(unlinked.project_id).toBeNull();
      for (const input of [
        { id: created.domain.id, project_id: 42 },
        { id: created.domain.id, project_id: '' },
        { id: created.domain.id },
      ]) {
        const error = await engine.invoke('domains.link', input as never).then(
          () => null,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(BridgeError);
        expect(error).toMatchObject({ status: 422, code: 'validation_failed' });
      }
      const missing = await engine.invoke('domains.link', { id: 'dom_unknown', project_id: null }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(missing).toMatchObject({ status: 404, code: 'not_found' });
    } finally {
      await engine.close();
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('the OpenAPI document', () => {
  it('describes the relink route and the TXT challenge of the add answer', async () => {
    const doc = await call<{
      paths: Record<string, Record<string, unknown>>;
      components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
    }>(`${p.api}/openapi.json`);
    expect(Object.keys(doc.body.paths['/api/v1/domains/{id}'] ?? {})).toEqual(
      expect.arrayContaining(['patch', 'delete']),
    );
    expect(Object.keys(doc.body.components.schemas.CreatedDomain?.properties ?? {})).toEqual([
      'domain',
      'instructions',
      'verification',
    ]);
    expect(Object.keys(doc.body.components.schemas.Domain?.properties ?? {})).toEqual([
      'id',
      'domain',
      'verified',
      'cname_target',
      'project_id',
      'created_at',
      'verified_at',
      'verification',
      'hsts',
      'certificate',
    ]);
  });
});

describe('the domain list', () => {
  it('carries each domain’s own TXT record, the same as when it was added, and only to its account', async () => {
    const owner = await p.newAccount();
    const other = await p.newAccount();
    const added = await call<{ domain: { id: string }; verification: { name: string; value: string } }>(
      `${p.api}/domains`,
      { key: owner.key, body: { domain: 'listed.owner-shop.test' } },
    );
    expect(added.status).toBe(201);
    const mine = await call<
      Array<{ id: string; verification: { type: string; name: string; value: string } }>
    >(`${p.api}/domains`, { key: owner.key });
    expect(mine.body.find((d) => d.id === added.body.domain.id)?.verification).toEqual({
      type: 'TXT',
      name: '_wharf-challenge.listed.owner-shop.test',
      value: added.body.verification.value,
    });
    const theirs = await call<Array<{ verification: { value: string } }>>(`${p.api}/domains`, {
      key: other.key,
    });
    expect(JSON.stringify(theirs.body)).not.toContain(added.body.verification.value);
  });
});

describe('background re-check', () => {
  it('verifies a domain on its own once its DNS is right, backing off meanwhile, and stops with the platform', async () => {
    const bg = await startPlatform({
      dnsServers: [dns.server],
      dnsTimeoutMs: 1_500,
      domainRecheckMs: 100,
      domainRecheckMaxMs: 400,
    });
    let closed = false;
    try {
      const created = await addDomain({ domain: 'later.background.test' }, bg.key, bg);
      const asked = () => dns.queries.filter((q) => q === 'CNAME later.background.test').length;
      const stored = () =>
        bg.platform.db
          .selectFrom('domains')
          .select(['check_attempts', 'check_detail', 'next_check_at'])
          .where('id', '=', created.domain.id)
          .executeTakeFirstOrThrow();
      // A check asks the DNS server first and stores its outcome after: wait for both.
      await until(
        async () => asked() >= 3 && (await stored()).check_attempts >= 3,
        'three background checks, stored',
      );
      expect((await listDomains(bg.key, bg))[0]!.verified).toBe(false);
      const row = await stored();
      expect(row.check_attempts).toBeGreaterThanOrEqual(3);
      expect(row.check_detail).toMatch(/^no TXT record _wharf-challenge\.later\.background\.test/);
      expect(row.next_check_at).not.toBeNull();

      // The CNAME alone is not enough, in the background either.
      dns.set('later.background.test', { CNAME: TARGET });
      const attempts = (await stored()).check_attempts;
      await until(async () => (await stored()).check_attempts >= attempts + 2, 'two more checks');
      expect((await listDomains(bg.key, bg))[0]!.verified).toBe(false);
      prove(created);
      await until(
        async () => (await listDomains(bg.key, bg))[0]!.verified,
        'the background verification',
        5_000,
      );
      const after = await bg.platform.db
        .selectFrom('domains')
        .select('next_check_at')
        .where('id', '=', created.domain.id)
        .executeTakeFirstOrThrow();
      expect(after.next_check_at).toBeNull();

      // Another unverified domain keeps being checked until the platform closes, and not after.
      await addDomain({ domain: 'never.background.test' }, bg.key, bg);
      const never = () => dns.queries.filter((q) => q === 'CNAME never.background.test').length;
      await until(() => never() >= 1, 'a check of the second domain');
      await bg.close();
      closed = true;
      const count = never();
      await quietFor(600);
      expect(never()).toBe(count);
    } finally {
      if (!closed) await bg.close();
    }
  });
});

describe('the re-check schedule', () => {
  const schedule = { firstMs: 60_000, maxMs: 3_600_000, windowMs: 72 * 3_600_000 };
  const created = new Date('2025-01-01T00:00:00.000Z');
  const at = (ms: number) => new Date(created.getTime() + ms);

  it('waits a minute, doubling up to an hour', () => {
    const delays = [0, 1, 2, 3, 5, 6, 7, 20].map(
      (attempts) => nextCheckAt(created, attempts, created, schedule)!.getTime() - created.getTime(),
    );
    expect(delays).toEqual([60_000, 120_000, 240_000, 480_000, 1_920_000, 3_600_000, 3_600_000, 3_600_000]);
  });

  it('checks last at the end of the 72 hours, then no more', () => {
    const end = 72 * 3_600_000;
    expect(nextCheckAt(created, 30, at(end - 600_000), schedule)).toEqual(at(end));
    expect(nextCheckAt(created, 30, at(end), schedule)).toBeNull();
    expect(nextCheckAt(created, 30, at(end + 1), schedule)).toBeNull();
  });
});
