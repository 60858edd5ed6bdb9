// Custom domains (API.md §5): an account adds a domain, optionally linked to one of its projects, proves
// it owns it (a TXT record `_wharf-challenge.<domain>` holding the account's token) and points it at the
// platform (a CNAME, or an apex's A/AAAA), then verifies it; a verified, linked domain is routed by the
// edge to the project. Several accounts may hold a name pending; the first to prove ownership takes it
// and every other is refused from then on. The platform's own domains cannot be added.
import type {
  CreateDomainRequest,
  CreatedDomain,
  Domain,
  DomainVerification,
  LinkDomainRequest,
} from '../../shared/api/domains.js';
import type { PlatformConfig } from '../config.js';
import { ApiError, invalid, notFound } from '../errors.js';
import { newId, randomBase62 } from '../ids.js';
import { isUniqueViolation } from '../store/errors.js';
import type { Store } from '../store/open.js';
import type { Selectable } from 'kysely';
import type { CertificateStatus } from '../tls/certificates.js';
import type { DomainsTable as DomainsColumns } from '../store/schema.js';

type DomainsTable = Selectable<DomainsColumns>;
import { type DnsLookup, type DomainCheck, challengeName, checkDomain, normalizeName } from './dns-check.js';

/** What precedes the random part of a challenge token, so the TXT record says what it is for. */
const TOKEN_PREFIX = 'wharf-verify=';

/** When background re-checks of an unverified domain happen (PlatformConfig's domainRecheck* fields). */
export interface RecheckSchedule {
  /** The first re-check comes this long after creation; each next one waits twice as long… */
  firstMs: number;
  /** …up to this long… */
  maxMs: number;
  /** …for this long after creation; then only a manual verify checks again. */
  windowMs: number;
}

/**
 * When to check an unverified domain next, after `attempts` background checks: `firstMs` doubling
 * up to `maxMs`, never past the end of the window (a last check lands on its end); null once it ended.
 */
export function nextCheckAt(
  createdAt: Date,
  attempts: number,
  now: Date,
  schedule: RecheckSchedule,
): Date | null {
  const end = createdAt.getTime() + schedule.windowMs;
  if (now.getTime() >= end) return null;
  const delay = Math.min(schedule.maxMs, schedule.firstMs * 2 ** Math.min(attempts, 40));
  return new Date(Math.min(now.getTime() + delay, end));
}

export interface DomainServiceOptions {
  now?: () => Date;
  /** Called with a domain name whose routing may have changed (verified, unverified, deleted). */
  onRouteChange?: (domain: string) => void;
  /** The certificate HTTPS serves a domain with; absent: the platform serves no HTTPS. */
  certificateOf?: (domain: string) => Promise<CertificateStatus | null>;
}

export class DomainService {
  private readonly now: () => Date;
  private readonly onRouteChange: (domain: string) => void;
  private readonly certificateOf: DomainServiceOptions['certificateOf'];
  readonly schedule: RecheckSchedule;

  constructor(
    private readonly db: Store,
    private readonly config: PlatformConfig,
    private readonly lookup: DnsLookup,
    options: DomainServiceOptions = {},
  ) {
    this.now = options.now ?? (() => new Date());
    this.onRouteChange = options.onRouteChange ?? (() => {});
    this.certificateOf = options.certificateOf;
    this.schedule = {
      firstMs: config.domainRecheckMs,
      maxMs: config.domainRecheckMaxMs,
      windowMs: config.domainRecheckWindowMs,
    };
  }

  async list(accountId: string): Promise<Domain[]> {
    const rows = await this.db
      .selectFrom('domains')
      .leftJoin('domain_challenges', (join) =>
        join
          .onRef('domain_challenges.account_id', '=', 'domains.account_id')
          .onRef('domain_challenges.domain', '=', 'domains.domain'),
      )
      .selectAll('domains')
      .select('domain_challenges.token')
      .where('domains.account_id', '=', accountId)
      .orderBy('domains.id', 'desc')
      .execute();
    return Promise.all(
      rows.map(async ({ token, ...row }) =>
        this.toDomain(row, token ?? (await this.token(accountId, row.domain))),
      ),
    );
  }

  async create(accountId: string, input: CreateDomainRequest): Promise<CreatedDomain> {
    const domain = input.domain;
    this.assertNotOurs(domain);
    if (input.project_id !== undefined) await this.assertOwnProject(accountId, input.project_id);
    const held = await this.db
      .selectFrom('domains')
      .select('account_id')
      .where('domain', '=', domain)
      .where((eb) => eb.or([eb('account_id', '=', accountId), eb('verified', '=', 1)]))
      .executeTakeFirst();
    // Whose it is stays unsaid: another account's domains are not to be revealed.
    if (held?.account_id === accountId)
      throw new ApiError('conflict', `the domain ${domain} has already been added`);
    if (held) throw takenElsewhere(domain);
    const now = this.now();
    const row: DomainsTable = {
      id: newId('dom'),
      account_id: accountId,
      domain,
      project_id: input.project_id ?? null,
      verified: 0,
      created_at: now.toISOString(),
      verified_at: null,
      checked_at: null,
      check_detail: null,
      check_attempts: 0,
      next_check_at: nextCheckAt(now, 0, now, this.schedule)?.toISOString() ?? null,
      hsts: 0,
    };
    // A concurrent add of the same name by the same account fails on the unique index: 409.
    await this.db.insertInto('domains').values(row).execute();
    const created = await this.toDomain(row, await this.token(accountId, domain));
    return {
      domain: created,
      instructions: { type: 'CNAME', name: domain, target: this.target },
      verification: created.verification,
    };
  }

  /** Links the domain to another of the account's projects, or to none; it stays verified (or not). */
  async link(accountId: string, id: string, input: LinkDomainRequest): Promise<Domain> {
    const row = await this.find(accountId, id);
    if (input.project_id !== undefined && input.project_id !== null) {
      await this.assertOwnProject(accountId, input.project_id);
    }
    const changed = {
      project_id: input.project_id === undefined ? row.project_id : input.project_id,
      hsts: input.hsts === undefined ? row.hsts : input.hsts ? 1 : 0,
    };
    await this.db.updateTable('domains').set(changed).where('id', '=', row.id).execute();
    if (row.project_id !== changed.project_id || row.hsts !== changed.hsts) this.onRouteChange(row.domain);
    return this.toDomain({ ...row, ...changed }, await this.token(accountId, row.domain));
  }

  /** Checks the account's domain now (manual verify) and records the outcome. */
  async verify(accountId: string, id: string): Promise<DomainVerification> {
    const row = await this.find(accountId, id);
    return this.checkAndRecord(row, false);
  }

  async remove(accountId: string, id: string): Promise<void> {
    const row = await this.find(accountId, id);
    await this.db.deleteFrom('domains').where('id', '=', row.id).execute();
    this.onRouteChange(row.domain);
  }

  /** Unverified domains whose background re-check is due, soonest first. */
  async due(limit: number): Promise<DomainsTable[]> {
    return this.db
      .selectFrom('domains')
      .selectAll()
      .where('verified', '=', 0)
      .where('next_check_at', 'is not', null)
      .where('next_check_at', '<=', this.now().toISOString())
      .orderBy('next_check_at')
      .limit(limit)
      .execute();
  }

  /** When the next background re-check is due, null when none is scheduled. */
  async nextDueAt(): Promise<Date | null> {
    const row = await this.db
      .selectFrom('domains')
      .select('next_check_at')
      .where('verified', '=', 0)
      .where('next_check_at', 'is not', null)
      .orderBy('next_check_at')
      .limit(1)
      .executeTakeFirst();
    return row?.next_check_at ? new Date(row.next_check_at) : null;
  }

  /** One background re-check of an unverified domain: records it and schedules the next one. */
  async recheck(row: DomainsTable): Promise<DomainVerification> {
    return this.checkAndRecord(row, true);
  }

  /** Ends DNS lookups under way (the platform is closing). */
  cancel(): void {
    this.lookup.cancel?.();
  }

  private get target(): string {
    return normalizeName(this.config.cnameTarget);
  }

  private assertNotOurs(domain: string): void {
    for (const own of [this.config.baseDomain, this.config.tunnelDomain, this.config.cnameTarget]) {
      const name = normalizeName(own);
      if (domain === name || domain.endsWith(`.${name}`)) {
        throw invalid(
          'domain',
          `must not be the platform's own domain ${name} or one under it: apps there get their address from their subdomain`,
        );
      }
    }
  }

  private async assertOwnProject(accountId: string, projectId: string): Promise<void> {
    const project = await this.db
      .selectFrom('projects')
      .select('id')
      .where('id', '=', projectId)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    if (!project) throw notFound(`project ${projectId}`);
  }

  /**
   * The account's TXT value for the domain, made on first use and kept (a domain removed and added
   * again asks for the record already published). Random: knowing one account's says nothing of another's.
   */
  private async token(accountId: string, domain: string): Promise<string> {
    await this.db
      .insertInto('domain_challenges')
      .values({
        account_id: accountId,
        domain,
        token: `${TOKEN_PREFIX}${randomBase62(32)}`,
        created_at: this.now().toISOString(),
      })
      .onConflict((oc) => oc.columns(['account_id', 'domain']).doNothing())
      .execute();
    const row = await this.db
      .selectFrom('domain_challenges')
      .select('token')
      .where('account_id', '=', accountId)
      .where('domain', '=', domain)
      .executeTakeFirstOrThrow();
    return row.token;
  }

  /** Whether another account has the domain verified (then this row can never be). */
  private async verifiedElsewhere(row: DomainsTable): Promise<boolean> {
    const other = await this.db
      .selectFrom('domains')
      .select('id')
      .where('domain', '=', row.domain)
      .where('verified', '=', 1)
      .where('account_id', '!=', row.account_id)
      .executeTakeFirst();
    return other !== undefined;
  }

  private async find(accountId: string, id: string): Promise<DomainsTable> {
    const row = await this.db
      .selectFrom('domains')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    if (!row) throw notFound(`domain ${id}`);
    return row;
  }

  private async checkAndRecord(row: DomainsTable, background: boolean): Promise<DomainVerification> {
    const target = this.target;
    // Taken by another account: nothing this one's DNS says can change that, and a manual check says so.
    if (row.verified === 0 && (await this.verifiedElsewhere(row))) {
      if (!background) throw takenElsewhere(row.domain);
      return this.record(row, background, {
        verified: false,
        found: [],
        detail: `the domain ${row.domain} has been verified by another account`,
        definitive: true,
      });
    }
    const token = await this.token(row.account_id, row.domain);
    const check = await checkDomain(this.lookup, row.domain, target, token);
    try {
      return await this.record(row, background, check);
    } catch (error) {
      // Another account proved the same name a moment earlier: the partial unique index refused ours.
      if (!isUniqueViolation(error)) throw error;
      if (!background) throw takenElsewhere(row.domain);
      return this.record(row, background, {
        verified: false,
        found: check.found,
        detail: `the domain ${row.domain} has been verified by another account`,
        definitive: true,
      });
    }
  }

  private async record(
    row: DomainsTable,
    background: boolean,
    check: DomainCheck,
  ): Promise<DomainVerification> {
    const target = this.target;
    const now = this.now();
    const checkedAt = now.toISOString();
    const verified = this.verifiedAfter(row, check);
    const detail =
      !check.definitive && row.verified === 1 ? `${check.detail}; the domain stays verified` : check.detail;
    const attempts = background ? row.check_attempts + 1 : row.check_attempts;
    const next = verified
      ? null
      : background
        ? (nextCheckAt(new Date(row.created_at), attempts, now, this.schedule)?.toISOString() ?? null)
        : row.next_check_at;
    await this.db
      .updateTable('domains')
      .set({
        verified: verified ? 1 : 0,
        verified_at: verified ? (row.verified_at ?? checkedAt) : null,
        checked_at: checkedAt,
        check_detail: detail,
        check_attempts: attempts,
        next_check_at: next,
      })
      .where('id', '=', row.id)
      .execute();
    if (verified !== (row.verified === 1)) this.onRouteChange(row.domain);
    return {
      id: row.id,
      domain: row.domain,
      verified,
      cname_target: target,
      found: check.found,
      ...(check.records ? { records: check.records } : {}),
      checked_at: checkedAt,
      detail,
    };
  }

  /** A failed lookup changes nothing; what DNS answers decides. */
  private verifiedAfter(row: DomainsTable, check: DomainCheck): boolean {
    if (check.verified) return true;
    return check.definitive ? false : row.verified === 1;
  }

  private async toDomain(row: DomainsTable, token: string): Promise<Domain> {
    let certificate: Domain['certificate'] = null;
    if (this.certificateOf) {
      const found = await this.certificateOf(row.domain);
      certificate = found
        ? { status: found.status, not_after: found.not_after, error: found.error }
        : { status: 'none', not_after: null, error: null };
    }
    return {
      id: row.id,
      domain: row.domain,
      verified: row.verified === 1,
      cname_target: this.target,
      project_id: row.project_id,
      created_at: row.created_at,
      verified_at: row.verified_at,
      verification: { type: 'TXT', name: challengeName(row.domain), value: token },
      hsts: row.hsts === 1,
      certificate,
    };
  }
}

function takenElsewhere(domain: string): ApiError {
  return new ApiError('conflict', `the domain ${domain} has been verified by another account`);
}
