// API.md §5: custom domains, proven by a TXT record and a CNAME (or an apex's A/AAAA), routed to a project.
import { z } from 'zod';
import { Timestamp, idOf } from './common.js';

/** A fully qualified host name of at least two labels, lowercase ASCII (IDNs in their xn-- form). */
export const DomainName = z
  .string()
  .max(253, 'must be at most 253 characters')
  .transform((v) => v.trim().toLowerCase().replace(/\.$/, ''))
  .pipe(
    z
      .string()
      .regex(
        /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$/,
        'must be a domain name such as app.example.com',
      ),
  );

/** The proof of ownership: a TXT record `_wharf-challenge.<domain>` holding this account's token. */
export const DomainChallenge = z
  .object({ type: z.literal('TXT'), name: z.string(), value: z.string() })
  .meta({ id: 'DomainChallenge' });
export type DomainChallenge = z.infer<typeof DomainChallenge>;

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
  })
  .meta({ id: 'Domain' });
export type Domain = z.infer<typeof Domain>;

export const CreateDomainRequest = z
  .strictObject({ domain: DomainName, project_id: idOf('prj').optional() })
  .meta({ id: 'CreateDomainRequest' });
export type CreateDomainRequest = z.infer<typeof CreateDomainRequest>;

/** `PATCH /domains/:id`: the project the domain routes to, or null for none (no new verification). */
export const LinkDomainRequest = z
  .strictObject({ project_id: idOf('prj').nullable() })
  .meta({ id: 'LinkDomainRequest' });
export type LinkDomainRequest = z.infer<typeof LinkDomainRequest>;

/** Where the domain must point: a CNAME record `name` → `target` (an apex: A/AAAA equal to the target's). */
export const DnsInstructions = z.object({ type: z.literal('CNAME'), name: z.string(), target: z.string() });

export const CreatedDomain = z
  .object({ domain: Domain, instructions: DnsInstructions, verification: DomainChallenge })
  .meta({ id: 'CreatedDomain' });
export type CreatedDomain = z.infer<typeof CreatedDomain>;

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
    checked_at: Timestamp,
    detail: z.string(),
  })
  .meta({ id: 'DomainVerification' });
export type DomainVerification = z.infer<typeof DomainVerification>;
