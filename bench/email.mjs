#!/usr/bin/env node
// Benchmark: the email verifier with SMTP probes, all on loopback (the test fakes: dns2 + smtp-server).
//  1. 100 addresses over 10 domains (one fake MX host per domain on 127.0.0.10…19, one shared port)
//     with 200 ms held before every SMTP reply, the banner included. The time is set against the
//     least the per-domain limit allows: each domain's probes run `perDomainConcurrency` at a time, a
//     probe needs 5 replies (banner, EHLO, MAIL, RCPT, QUIT) plus one RCPT for the catch-all test until
//     the domain's answer is cached, and smtp-server pauses 100 ms before its banner (its early-talker
//     check). Target: ratio <= 1.1.
//  2. 100 distinct domains, no delay: verifications per second. Target >= 50.
// Usage: node bench/email.mjs [--delay-ms 200] [--strict]   (--strict: exit non-zero when a target is missed)
//
// The verifier and the fakes are TypeScript: they are bundled into a temp dir with rolldown (a
// devDependency), as bench/tunnel.mjs does for the tunnel client; dns2 and smtp-server stay external and
// come from this checkout's node_modules.
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    'delay-ms': { type: 'string', default: '200' },
    strict: { type: 'boolean', default: false },
  },
});

const ROOT = new URL('..', import.meta.url);
const DELAY_MS = Number(values['delay-ms']);
const DOMAINS = 10;
const PER_DOMAIN = 10;
const DISTINCT_DOMAINS = 100;
const PER_DOMAIN_CONCURRENCY = 2;
const GREETING_PAUSE_MS = 100; // smtp-server waits this long before its banner
const REPLIES_PER_PROBE = 5;
const TARGETS = { ratio: 1.1, perSecond: 50 };

/** Bundles the verifier and the test fakes into `dir`; returns their module URLs. */
async function bundle(dir) {
  const { build } = await import('rolldown');
  await build({
    input: {
      email: fileURLToPath(new URL('src/server/email/index.ts', ROOT)),
      mail: fileURLToPath(new URL('test/helpers/mail.ts', ROOT)),
    },
    platform: 'node',
    external: [
      /^node:/,
      'dns2',
      'smtp-server',
      /^disposable-email-domains/,
      /^email-providers/,
      /^role-based/,
    ],
    resolve: { extensionAlias: { '.js': ['.ts', '.js'] } },
    logLevel: 'silent',
    output: { dir, format: 'esm', entryFileNames: '[name].js' },
  });
  symlinkSync(fileURLToPath(new URL('node_modules', ROOT)), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
  return { email: pathToFileURL(join(dir, 'email.js')).href, mail: pathToFileURL(join(dir, 'mail.js')).href };
}

function emailConfig(smtpPort) {
  return {
    smtpPort,
    heloName: 'bench.wharf.localhost',
    mailFrom: 'verify@wharf.localhost',
    connectTimeoutMs: 5_000,
    replyTimeoutMs: 5_000,
    perDomainConcurrency: PER_DOMAIN_CONCURRENCY,
    perProviderConcurrency: 6,
    allowPrivate: true,
  };
}

/** Accepts every mailbox but the catch-all test's random one. */
const rcpt = (address) =>
  address.startsWith('wharf-probe-') ? { code: 550, message: '5.1.1 user unknown' } : null;

const fmt = (n, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function limitedScenario({ EmailVerifier }, { startDns, startSmtp }) {
  const zone = {};
  for (let i = 0; i < DOMAINS; i += 1) {
    zone[`d${i}.bench`] = { MX: [{ exchange: `mx.d${i}.bench`, priority: 10 }] };
    zone[`mx.d${i}.bench`] = { A: [`127.0.0.${10 + i}`] };
  }
  const dns = await startDns(zone);
  const servers = [];
  try {
    for (let i = 0; i < DOMAINS; i += 1)
      servers.push(
        await startSmtp({
          host: `127.0.0.${10 + i}`,
          port: servers[0]?.port ?? 0,
          replyDelayMs: DELAY_MS,
          rcpt,
        }),
      );
    const addresses = [];
    for (let n = 0; n < PER_DOMAIN; n += 1)
      for (let i = 0; i < DOMAINS; i += 1) addresses.push(`jane${n}@d${i}.bench`);
    const verifier = new EmailVerifier({
      dnsServers: [dns.server],
      dnsTimeoutMs: 2_000,
      email: emailConfig(servers[0].port),
    });
    const started = performance.now();
    const results = await verifier.verifyMany(addresses, { smtp: true });
    const elapsed = performance.now() - started;
    verifier.close();
    const wrong = results.filter((result) => result.reason !== 'mailbox_exists');
    if (wrong.length > 0)
      throw new Error(`${wrong.length} unexpected results, e.g. ${JSON.stringify(wrong[0])}`);

    const probesPerSlot = Math.ceil(PER_DOMAIN / PER_DOMAIN_CONCURRENCY);
    const minimum = probesPerSlot * (REPLIES_PER_PROBE * DELAY_MS + GREETING_PAUSE_MS) + DELAY_MS;
    // Sessions per recipient domain as the mail servers saw them, from accept to close (SPEC.md §4.4).
    const perDomain = Object.assign({}, ...servers.map((server) => server.stats.maxConcurrentByDomain));
    const maxConcurrent = Math.max(...Object.values(perDomain));
    return { elapsed, minimum, ratio: elapsed / minimum, maxConcurrent };
  } finally {
    await Promise.all(servers.map((server) => server.close()));
    await dns.close();
  }
}

async function throughputScenario({ EmailVerifier }, { startDns, startSmtp }) {
  const zone = { 'mx.bench': { A: ['127.0.0.1'] } };
  for (let i = 0; i < DISTINCT_DOMAINS; i += 1)
    zone[`t${i}.bench`] = { MX: [{ exchange: `mx${i}.t${i}.bench`, priority: 10 }] };
  for (let i = 0; i < DISTINCT_DOMAINS; i += 1) zone[`mx${i}.t${i}.bench`] = { A: ['127.0.0.1'] };
  const dns = await startDns(zone);
  const smtp = await startSmtp({ rcpt });
  try {
    const verifier = new EmailVerifier({
      dnsServers: [dns.server],
      dnsTimeoutMs: 2_000,
      email: emailConfig(smtp.port),
    });
    await verifier.verify('warm@t0.bench', { smtp: true }); // loads the lists once
    const addresses = Array.from({ length: DISTINCT_DOMAINS }, (_, i) => `jane@t${i}.bench`);
    const started = performance.now();
    const results = await verifier.verifyMany(addresses, { smtp: true });
    const elapsed = performance.now() - started;
    verifier.close();
    const wrong = results.filter((result) => result.reason !== 'mailbox_exists');
    if (wrong.length > 0)
      throw new Error(`${wrong.length} unexpected results, e.g. ${JSON.stringify(wrong[0])}`);
    return { elapsed, perSecond: (DISTINCT_DOMAINS / elapsed) * 1000 };
  } finally {
    await smtp.close();
    await dns.close();
  }
}

const temp = mkdtempSync(join(tmpdir(), 'wharf-bench-email-'));
try {
  const modules = await bundle(temp);
  const email = await import(modules.email);
  const mail = await import(modules.mail);

  console.log(`Email verifier, loopback fakes (${DELAY_MS} ms before every SMTP reply in scenario 1)\n`);
  const limited = await limitedScenario(email, mail);
  console.log(
    `1. ${DOMAINS * PER_DOMAIN} addresses over ${DOMAINS} domains: ${fmt(limited.elapsed)} ms, minimum ${fmt(limited.minimum)} ms ` +
      `(${PER_DOMAIN_CONCURRENCY} per domain at once), ratio ${fmt(limited.ratio, 3)}; most sessions any domain saw at once: ${limited.maxConcurrent}`,
  );
  const throughput = await throughputScenario(email, mail);
  console.log(
    `2. ${DISTINCT_DOMAINS} distinct domains, no delay: ${fmt(throughput.elapsed)} ms, ${fmt(throughput.perSecond, 1)} verifications/s`,
  );

  const checks = [
    [
      `limited batch: ${fmt(limited.ratio, 3)} of the minimum (target <= ${TARGETS.ratio})`,
      limited.ratio <= TARGETS.ratio,
    ],
    [
      `per-domain limit held: at most ${limited.maxConcurrent} sessions at once on any domain, counted at the mail server (limit ${PER_DOMAIN_CONCURRENCY})`,
      limited.maxConcurrent <= PER_DOMAIN_CONCURRENCY,
    ],
    [
      `throughput: ${fmt(throughput.perSecond, 1)} verifications/s (target >= ${TARGETS.perSecond})`,
      throughput.perSecond >= TARGETS.perSecond,
    ],
  ];
  console.log('\nTargets');
  const misses = [];
  for (const [text, ok] of checks) {
    console.log(`  ${ok ? 'PASS' : 'MISS'}  ${text}`);
    if (!ok) misses.push(text);
  }
  if (values.strict && misses.length > 0) process.exitCode = 1;
} finally {
  rmSync(temp, { recursive: true, force: true });
}
