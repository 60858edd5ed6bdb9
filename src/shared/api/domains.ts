// API.md §5: custom domains, proven by a TXT record and a CNAME (or an apex's A/AAAA), routed to a project.
import { z } from 'zod';
import { DOMAIN_NAME_PATTERN } from '../dns-label.js';
import { Timestamp, idOf } from './common.js';

/** A fully qualified host name of at least two labels, lowercase ASCII (IDNs in their xn-- form). */
export const DomainName = z
  .string()
  .max(253, 'must be at most 253 characters')
  .transform((v) => v.trim().toLowerCase().replace(/\.$/, ''))
  .pipe(z.string().regex(DOMAIN_NAME_PATTERN, 'must be a domain name such as app.example.com'));

/** The proof of ownership: a TXT record `_wharf-challenge.<domain>` holding this account's token. */
export const DomainChallenge = z
  .object({ type: z.literal('TXT'), name: z.string(), value: z.string() })
  .meta({ id: 'DomainChallenge' });
export type DomainChallenge = z.infer<typeof DomainChallenge>;

/** The certificate HTTPS serves the domain with (our choice; null on a platform without HTTPS). */
export const DomainCertificate = z
  .object({
    status: z.enum(['none', 'pending', 'issued', 'failed']).meta({
      description:
        '`none`: not asked for yet (it is once the domain is verified); `pending`: the CA is checking; `issued`; `failed`: see `error` (retried with back-off; a certificate issued before keeps serving)',
    }),
    not_after: Timestamp.nullable().meta({ description: 'Until when the certificate served now is valid' }),
    error: z.string().nullable().meta({ description: "Why the last order failed, in the CA's words" }),
  })
  .meta({ id: 'DomainCertificate' });
export type DomainCertificate = z.infer<typeof DomainCertificate>;

export const Domain = z
  .object({
    id: idOf('dom'),
    domain: z.string(),
    verified: z.boolean(),
    cname_target: z.string(),
    project_id: idOf('prj').nullable(),
    created_at: Timestamp,
    verified_at: Timestamp.nullable(),
    /** The TXT record proving it is the account's (also after it is verified: a re-check looks again). */
    verification: DomainChallenge,
    hsts: z
      .boolean()
      .meta({ description: 'HTTPS answers for the domain send Strict-Transport-Security (opt-in, PATCH)' }),
    certificate: DomainCertificate.nullable(),
  })
  .meta({ id: 'Domain' });
export type Domain = z.infer<typeof Domain>;

export const CreateDomainRequest = z
  .strictObject({ domain: DomainName, project_id: idOf('prj').optional() })
  .meta({ id: 'CreateDomainRequest' });
export type CreateDomainRequest = z.infer<typeof CreateDomainRequest>;

/**
 * `PATCH /domains/:id`: the project the domain routes to, or null for none (no new verification);
 * `hsts`: whether HTTPS answers send Strict-Transport-Security. At least one of them.
 */
export const LinkDomainRequest = z
  .strictObject({ project_id: idOf('prj').nullable().optional(), hsts: z.boolean().optional() })
  .refine((body) => body.project_id !== undefined || body.hsts !== undefined, {
    message: 'give project_id, hsts or both',
    path: ['project_id'],
  })
  .meta({ id: 'LinkDomainRequest' });
export type LinkDomainRequest = z.infer<typeof LinkDomainRequest>;

/** Where the domain must point: a CNAME record `name` → `target` (an apex: A/AAAA equal to the target's). */
export const DnsInstructions = z.object({ type: z.literal('CNAME'), name: z.string(), target: z.string() });

export const CreatedDomain = z
  .object({ domain: Domain, instructions: DnsInstructions, verification: DomainChallenge })
  .meta({ id: 'CreatedDomain' });
export type CreatedDomain = z.infer<typeof CreatedDomain>;

/** What one record came to: `found`, `not found`, `points to … instead`, `lookup failed: …`. */
export const RecordCheck = z.object({ ok: z.boolean(), seen: z.string() }).meta({ id: 'DomainRecordCheck' });
export type RecordCheck = z.infer<typeof RecordCheck>;

export const DomainVerification = z
  .object({
    id: idOf('dom'),
    domain: z.string(),
    verified: z.boolean(),
    cname_target: z.string(),
    found: z.array(z.string()).meta({
      description:
        'What the check saw, each as `TYPE value`: the TXT values of `_wharf-challenge.<domain>`, then its CNAME targets, else its A/AAAA addresses',
    }),
    records: z.object({ txt: RecordCheck, cname: RecordCheck }).optional().meta({
      description:
        'Our addition: each record on its own (absent when the check did not get that far, e.g. the name is verified by another account)',
    }),
    checked_at: Timestamp,
    detail: z.string(),
  })
  .meta({ id: 'DomainVerification' });
export type DomainVerification = z.infer<typeof DomainVerification>;
