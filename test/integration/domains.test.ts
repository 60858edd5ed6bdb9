// API.md §5, custom domains, against a DNS server on loopback: adding one (instructions, rules,
// ownership, conflicts), verifying it by CNAME or by an apex's A/AAAA records, clear failures (wrong
// CNAME, no records, a DNS server that does not answer), the edge serving a deployed app at a verified
// domain and not before, and the background re-check that verifies a domain once its DNS is right.
import { createSocket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreatedDomain, Domain, DomainVerification } from '../../src/shared/api/domains.js';
import { nextCheckAt } from '../../src/server/domains/domains.js';
import { type TestDns, startDns } from '../helpers/dns.js';
import { createProject, deployFiles, nodeApp, until, viaEdge } from '../helpers/deploy.js';
import { call, expectProblem, startPlatform, type TestPlatform } from '../helpers/platform.js';

const TARGET = 'cname.localhost';
const TARGET_A = '10.0.0.7';
const TARGET_AAAA = 'fd00::7';

let dns: TestDns;
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
  it('adds a domain, normalized, with CNAME instructions, and lists it', async () => {
    const created = await addDomain({ domain: 'App.Example.COM.' });
    expect(created.instructions).toEqual({ type: 'CNAME', name: 'app.example.com', target: TARGET });
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

  it('answers 409 when the domain exists, on this account or another', async () => {
    await addDomain({ domain: 'taken.example.com' });
    expectProblem(
      await call(`${p.api}/domains`, { key: p.key, body: { domain: 'taken.example.com' } }),
      409,
      'conflict',
    );
    const other = await p.newAccount({ scopes: ['deploy'] });
    const problem = expectProblem(
      await call(`${p.api}/domains`, { key: other.key, body: { domain: 'TAKEN.example.com' } }),
      409,
      'conflict',
    );
    expect(problem.detail).toBe('the domain taken.example.com has already been added');
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
    const result = await verify(created.domain.id);
    expect(result).toMatchObject({
      id: created.domain.id,
      domain: 'www.shop-one.test',
      verified: true,
      cname_target: TARGET,
      found: [TARGET],
      detail: `CNAME points to ${TARGET}`,
    });
    const listed = (await listDomains()).find((d) => d.id === created.domain.id)!;
    expect(listed.verified).toBe(true);
    expect(listed.verified_at).toBe(result.checked_at);
  });

  it("verifies an apex whose A/AAAA records are the target's", async () => {
    const created = await addDomain({ domain: 'shop-two.test' });
    dns.set('shop-two.test', { A: [TARGET_A], AAAA: [TARGET_AAAA] });
    const result = await verify(created.domain.id);
    expect(result.verified).toBe(true);
    expect(result.found.sort()).toEqual([TARGET_A, TARGET_AAAA].sort());
    expect(result.detail).toMatch(/no CNAME, but the A\/AAAA records .* match those of cname\.localhost/);
  });

  it('says where a wrong CNAME points', async () => {
    const created = await addDomain({ domain: 'www.shop-three.test' });
    dns.set('www.shop-three.test', { CNAME: 'foo.example.net' });
    const result = await verify(created.domain.id);
    expect(result.verified).toBe(false);
    expect(result.found).toEqual(['foo.example.net']);
    expect(result.detail).toMatch(/^CNAME points to foo\.example\.net, not cname\.localhost/);
  });

  it('refuses an apex whose addresses are not the target’s', async () => {
    const created = await addDomain({ domain: 'shop-four.test' });
    dns.set('shop-four.test', { A: ['192.0.2.1'] });
    const result = await verify(created.domain.id);
    expect(result.verified).toBe(false);
    expect(result.found).toEqual(['192.0.2.1']);
    expect(result.detail).toMatch(
      /192\.0\.2\.1\) do not match those of cname\.localhost \(10\.0\.0\.7, fd00::7\)/,
    );
  });

  it('says so when there are no records at all (an empty name, or one that does not exist)', async () => {
    const empty = await addDomain({ domain: 'empty.shop-five.test' });
    dns.set('empty.shop-five.test', {});
    const missing = await addDomain({ domain: 'missing.shop-five.test' });
    for (const id of [empty.domain.id, missing.domain.id]) {
      const result = await verify(id);
      expect(result.verified).toBe(false);
      expect(result.found).toEqual([]);
      expect(result.detail).toMatch(
        /^no CNAME, A or AAAA records for \S+: add a CNAME record pointing to cname\.localhost$/,
      );
    }
  });

  it('takes a verification back when DNS now points elsewhere', async () => {
    const created = await addDomain({ domain: 'moved.shop-six.test' });
    dns.set('moved.shop-six.test', { CNAME: TARGET });
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
    expect((await verify(created.domain.id)).verified).toBe(true);
    dns.answer(false);
    try {
      const result = await verify(created.domain.id);
      expect(result.verified).toBe(true);
      expect(result.found).toEqual([]);
      expect(result.detail).toMatch(
        /^could not look up slow\.shop-seven\.test: the DNS server did not answer in time \(ETIMEOUT\); nothing was changed, try again later; the domain stays verified$/,
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
        /^could not look up www\.unreachable\.test: the DNS server (could not be reached \(ECONNREFUSED\)|did not answer in time \(ETIMEOUT\))/,
      );
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
    expect((await verify(created.domain.id)).verified).toBe(true);
    const served = await viaEdge(p.edgePort, 'WWW.Customer.test', '/x');
    expect(served.status).toBe(200);
    expect(served.body).toBe('hello from custom /x');

    // A verified domain linked to nothing routes nowhere.
    const unlinked = await addDomain({ domain: 'unlinked.customer.test' });
    dns.set('unlinked.customer.test', { CNAME: TARGET });
    expect((await verify(unlinked.domain.id)).verified).toBe(true);
    expect((await viaEdge(p.edgePort, 'unlinked.customer.test', '/')).status).toBe(404);

    await call(`${p.api}/domains/${created.domain.id}`, { key: p.key, method: 'DELETE' });
    expect((await viaEdge(p.edgePort, 'www.customer.test', '/x')).status).toBe(404);
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
      expect(row.check_detail).toMatch(/^no CNAME, A or AAAA records/);
      expect(row.next_check_at).not.toBeNull();

      dns.set('later.background.test', { CNAME: TARGET });
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
      await new Promise((r) => setTimeout(r, 600));
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
