// The email verifier (API.md §6): syntax, list checks, typo suggestion, DNS and the optional SMTP probe,
// combined into one EmailVerification per address. A library: the routes, billing and the daily cap
// live elsewhere and fill `cost_usd`.
import type { Socket } from 'node:net';
import type { EmailConfig } from '../config.js';
import { EMAIL_REASONS, type EmailVerification } from '../../shared/api/email.js';
import { MailDns, type MailRoute } from './dns.js';
import { KeyedLimiter } from './limiter.js';
import { commonProviderDomains, isDisposable, isFreeProvider, isRoleAccount } from './lists.js';
import { type ProbeOutcome, probeMailbox, providerOf } from './smtp.js';
import { suggestDomain } from './suggest.js';
import { parseAddress } from './syntax.js';

export type EmailReason = EmailVerification['reason'];
export type EmailScore = EmailVerification['score'];

/**
 * The score word (SPEC.md §2.5) and numeric confidence each reason gives (binding, API.md §6). No
 * adjustment for other flags.
 */
export const REASON_OUTCOMES: Readonly<Record<EmailReason, { score: EmailScore; confidence: number }>> = {
  invalid_syntax: { score: 'invalid', confidence: 0 },
  no_mail_server: { score: 'invalid', confidence: 5 },
  disposable: { score: 'risky', confidence: 15 },
  mailbox_not_found: { score: 'invalid', confidence: 5 },
  smtp_inconclusive: { score: 'unknown', confidence: 50 },
  catch_all: { score: 'risky', confidence: 60 },
  role_account: { score: 'risky', confidence: 65 },
  ok: { score: 'valid', confidence: 80 },
  mailbox_exists: { score: 'valid', confidence: 97 },
};

/** How long a domain's catch-all answer is trusted. */
export const CATCH_ALL_TTL_MS = 60 * 60 * 1000;

export interface EmailVerifierOptions {
  /** `host` or `host:port`; null for the system's resolvers. */
  dnsServers: string[] | null;
  dnsTimeoutMs: number;
  email: EmailConfig;
  /** The clock (ms) of the rate limits and caches. */
  now?: () => number;
  /** Minimum time between two probe starts on one mail domain; 0 (the default) for none. */
  perDomainIntervalMs?: number;
}

export interface VerifyOptions {
  /** Run the SMTP probe (not for disposable domains). */
  smtp: boolean;
}

/** Whether a result is charged: not when nothing could be concluded, nor for bad syntax. */
export function isBillable(result: EmailVerification): boolean {
  return result.score !== 'unknown' && result.reason !== 'invalid_syntax';
}

type HostAddresses = Awaited<ReturnType<MailDns['addresses']>>;

/** DNS answers shared by the addresses of one batch. */
interface BatchDns {
  routes: Map<string, Promise<MailRoute>>;
  hosts: Map<string, Promise<HostAddresses>>;
}

export class EmailVerifier {
  readonly #dns: MailDns;
  readonly #email: EmailConfig;
  readonly #now: () => number;
  readonly #domains: KeyedLimiter;
  readonly #providers: KeyedLimiter;
  readonly #catchAll = new Map<string, { value: boolean; at: number }>();
  readonly #sockets = new Set<Socket>();

  constructor(options: EmailVerifierOptions) {
    this.#dns = new MailDns({ servers: options.dnsServers, timeoutMs: options.dnsTimeoutMs });
    this.#email = options.email;
    this.#now = options.now ?? Date.now;
    this.#domains = new KeyedLimiter({
      limit: options.email.perDomainConcurrency,
      minIntervalMs: options.perDomainIntervalMs ?? 0,
      now: this.#now,
    });
    this.#providers = new KeyedLimiter({ limit: options.email.perProviderConcurrency, now: this.#now });
  }

  async verify(address: string, options: VerifyOptions): Promise<EmailVerification> {
    const [result] = await this.verifyMany([address], options);
    return result!;
  }

  /** One result per address, in input order; the same normalized address is checked once. */
  async verifyMany(addresses: string[], options: VerifyOptions): Promise<EmailVerification[]> {
    const batch: BatchDns = { routes: new Map(), hosts: new Map() };
    const checks = new Map<string, Promise<EmailVerification>>();
    const pending = addresses.map((input) => {
      const parsed = parseAddress(input);
      const key = parsed?.normalized ?? `\0${input}`;
      let check = checks.get(key);
      if (check === undefined) {
        check = this.#check(input, parsed, options, batch);
        checks.set(key, check);
      }
      return check.then((result) => ({ ...result, email: input }));
    });
    return Promise.all(pending);
  }

  /** Cancels DNS queries and probes in flight (they end as inconclusive) and forgets the caches. */
  close(): void {
    this.#dns.close();
    for (const socket of this.#sockets) socket.destroy();
    this.#catchAll.clear();
  }

  async #check(
    input: string,
    parsed: ReturnType<typeof parseAddress>,
    options: VerifyOptions,
    batch: BatchDns,
  ): Promise<EmailVerification> {
    const checkedAt = new Date(this.#now()).toISOString();
    if (parsed === null) {
      const trimmed = input.trim();
      const at = trimmed.lastIndexOf('@');
      return build(input, checkedAt, new Set(['invalid_syntax']), {
        normalized: trimmed,
        // Whatever follows the last @, so a client can still group or show it; '' without an @.
        domain: at < 0 ? '' : trimmed.slice(at + 1).toLowerCase(),
        syntax_valid: false,
        has_mx: false,
        disposable: false,
        role_based: false,
        free_provider: false,
        suggestion: '',
        mailbox_checked: false,
        catch_all: false,
        mx_records: [],
        smtp: null,
      });
    }
    const { local, domain, normalized } = parsed;
    const disposable = isDisposable(domain);
    const role = isRoleAccount(local);
    const reasons = new Set<EmailReason>();
    if (disposable) reasons.add('disposable');
    if (role) reasons.add('role_account');

    // Disposable domains still get their DNS lookup (has_mx is worth knowing) but never a probe.
    let route = batch.routes.get(domain);
    if (route === undefined) {
      route = this.#dns.route(domain);
      batch.routes.set(domain, route);
    }
    const answered = await route;
    // A resolver that says one of the most used mail providers does not exist (or takes no mail) is
    // broken or filtered, not telling the truth about the domain: nothing is concluded, as on a failure.
    const mail =
      answered.kind === 'none' && commonProviderDomains().has(domain)
        ? { kind: 'error' as const, detail: `DNS says ${domain} takes no mail, which is not so` }
        : answered;
    // A DNS failure concludes nothing; `smtp_inconclusive` is the one reason the contract has for it.
    if (mail.kind === 'none') reasons.add('no_mail_server');
    if (mail.kind === 'error') reasons.add('smtp_inconclusive');

    let probe: ProbeOutcome | null = null;
    if (options.smtp && !disposable && mail.kind === 'mx') {
      probe = await this.#probe(normalized, domain, mail.hosts, batch);
      if (probe.verdict === 'not_found') reasons.add('mailbox_not_found');
      if (probe.verdict === 'inconclusive') reasons.add('smtp_inconclusive');
      if (probe.verdict === 'exists') reasons.add(probe.catchAll ? 'catch_all' : 'mailbox_exists');
    }

    return build(input, checkedAt, reasons, {
      normalized,
      domain,
      syntax_valid: true,
      // A DNS failure is false too: the reason (smtp_inconclusive) and score (unknown) say it is not known.
      has_mx: mail.kind === 'mx',
      disposable,
      role_based: role,
      free_provider: isFreeProvider(domain),
      suggestion: suggestDomain(domain) ?? '',
      mailbox_checked: probe !== null,
      catch_all: probe?.catchAll ?? false,
      mx_records: mail.kind === 'mx' ? mail.hosts : [],
      smtp:
        probe === null
          ? null
          : {
              mx_host: probe.mxHost,
              code: probe.reply?.code ?? null,
              enhanced_code: probe.reply?.enhancedCode ?? null,
              message: probe.detail ?? probe.reply?.message ?? null,
            },
    });
  }

  async #probe(address: string, domain: string, mxHosts: string[], batch: BatchDns): Promise<ProbeOutcome> {
    const resolveHost = (host: string): Promise<HostAddresses> => {
      let addresses = batch.hosts.get(host);
      if (addresses === undefined) {
        addresses = this.#dns.addresses(host);
        batch.hosts.set(host, addresses);
      }
      return addresses;
    };
    const settings = {
      port: this.#email.smtpPort,
      heloName: this.#email.heloName,
      mailFrom: this.#email.mailFrom,
      connectTimeoutMs: this.#email.connectTimeoutMs,
      replyTimeoutMs: this.#email.replyTimeoutMs,
      allowPrivate: this.#email.allowPrivate,
    };
    return this.#domains.run(domain, () =>
      this.#providers.run(providerOf(mxHosts[0]!), async () => {
        const knownCatchAll = this.#cachedCatchAll(domain);
        const outcome = await probeMailbox(
          { address, domain, mxHosts, knownCatchAll, resolveHost },
          settings,
          this.#sockets,
        );
        if (knownCatchAll === null && outcome.catchAll !== null)
          this.#catchAll.set(domain, { value: outcome.catchAll, at: this.#now() });
        return outcome;
      }),
    );
  }

  #cachedCatchAll(domain: string): boolean | null {
    const cached = this.#catchAll.get(domain);
    if (cached === undefined) return null;
    if (this.#now() - cached.at >= CATCH_ALL_TTL_MS) {
      this.#catchAll.delete(domain);
      return null;
    }
    return cached.value;
  }
}

type Fields = Omit<
  EmailVerification,
  'email' | 'score' | 'reason' | 'confidence' | 'cost_usd' | 'checked_at'
>;

/** The result for the reasons that apply: the first in precedence order decides score and confidence. */
function build(
  email: string,
  checkedAt: string,
  reasons: Set<EmailReason>,
  fields: Fields,
): EmailVerification {
  const reason = EMAIL_REASONS.find((candidate) => reasons.has(candidate)) ?? 'ok';
  const { score, confidence } = REASON_OUTCOMES[reason];
  const { normalized, domain, ...flags } = fields;
  const { mx_records, smtp, ...spec } = flags;
  // SPEC.md §2.5's order first, then the extras.
  return {
    email,
    normalized,
    domain,
    score,
    reason,
    ...spec,
    confidence,
    mx_records,
    smtp,
    cost_usd: 0,
    checked_at: checkedAt,
  };
}
