// Custom domains (API.md §5): an account adds a domain, optionally linked to one of its projects, points
// a CNAME at the platform's target, and verifies it; a verified, linked domain is routed by the edge to
// the project. Domains are unique platform-wide; the platform's own domains cannot be added.
import type {
  CreateDomainRequest,
  CreatedDomain,
  Domain,
  DomainVerification,
} from '../../shared/api/domains.js';
import type { PlatformConfig } from '../config.js';
import { ApiError, invalid, notFound } from '../errors.js';
import { newId } from '../ids.js';
import type { Store } from '../store/open.js';
import type { DomainsTable } from '../store/schema.js';
import { type DnsLookup, type DomainCheck, checkDomain, normalizeName } from './dns-check.js';

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
}

export class DomainService {
  private readonly now: () => Date;
  private readonly onRouteChange: (domain: string) => void;
  readonly schedule: RecheckSchedule;

  constructor(
    private readonly db: Store,
    private readonly config: PlatformConfig,
    private readonly lookup: DnsLookup,
    options: DomainServiceOptions = {},
  ) {
    this.now = options.now ?? (() => new Date());
    this.onRouteChange = options.onRouteChange ?? (() => {});
    this.schedule = {
      firstMs: config.domainRecheckMs,
      maxMs: config.domainRecheckMaxMs,
      windowMs: config.domainRecheckWindowMs,
    };
  }

  async list(accountId: string): Promise<Domain[]> {
    const rows = await this.db
      .selectFrom('domains')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('id', 'desc')
      .execute();
    return rows.map((row) => this.toDomain(row));
  }

  async create(accountId: string, input: CreateDomainRequest): Promise<CreatedDomain> {
    const domain = input.domain;
    this.assertNotOurs(domain);
    if (input.project_id !== undefined) {
      const project = await this.db
        .selectFrom('projects')
        .select('id')
        .where('id', '=', input.project_id)
        .where('account_id', '=', accountId)
        .executeTakeFirst();
      if (!project) throw notFound(`project ${input.project_id}`);
    }
    const taken = await this.db
      .selectFrom('domains')
      .select('id')
      .where('domain', '=', domain)
      .executeTakeFirst();
    // Whose it is stays unsaid: another account's domains are not to be revealed.
    if (taken) throw new ApiError('conflict', `the domain ${domain} has already been added`);
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
    };
    // A concurrent add of the same name fails on the unique index: the error handler answers 409.
    await this.db.insertInto('domains').values(row).execute();
    return {
      domain: this.toDomain(row),
      instructions: { type: 'CNAME', name: domain, target: this.target },
    };
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
    const check = await checkDomain(this.lookup, row.domain, target);
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
      checked_at: checkedAt,
      detail,
    };
  }

  /** A failed lookup changes nothing; what DNS answers decides. */
  private verifiedAfter(row: DomainsTable, check: DomainCheck): boolean {
    if (check.verified) return true;
    return check.definitive ? false : row.verified === 1;
  }

  private toDomain(row: DomainsTable): Domain {
    return {
      id: row.id,
      domain: row.domain,
      verified: row.verified === 1,
      cname_target: this.target,
      project_id: row.project_id,
      created_at: row.created_at,
      verified_at: row.verified_at,
    };
  }
}
