// What a verification answer changes in the domain list: the domain's `verified`, and `verified_at`
// (kept from the first time it was verified; cleared when the record no longer points at us).
import type { Domain, DomainVerification } from '../../../../shared/api/domains.js';

/** The list with the domain's verification applied: `verified` and the time it first was. */
export function applyVerification(domains: Domain[], result: DomainVerification): Domain[] {
  return domains.map((domain) =>
    domain.id === result.id
      ? {
          ...domain,
          verified: result.verified,
          verified_at: result.verified ? (domain.verified_at ?? result.checked_at) : null,
        }
      : domain,
  );
}
