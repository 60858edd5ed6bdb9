// The Domains screen updates its list from a verification answer without fetching it again.
import { describe, expect, it } from 'vitest';
import type { Domain, DomainVerification } from '../../../src/shared/api/domains.js';
import { applyVerification } from '../../../src/renderer/src/stores/domains/apply.js';

const domain = (extra: Partial<Domain>): Domain => ({
  id: 'dom_pending0000000000000000',
  domain: 'app.example.com',
  verified: false,
  cname_target: 'edge.wharf.test',
  project_id: null,
  created_at: '2025-01-31T10:00:00.000Z',
  verified_at: null,
  verification: { type: 'TXT', name: '_wharf-challenge.app.example.com', value: 'wharf-verify=token' },
  hsts: false,
  certificate: null,
  ...extra,
});

const answer = (extra: Partial<DomainVerification>): DomainVerification => ({
  id: 'dom_pending0000000000000000',
  domain: 'app.example.com',
  verified: true,
  cname_target: 'edge.wharf.test',
  found: ['edge.wharf.test'],
  checked_at: '2025-01-31T12:00:00.000Z',
  detail: 'the CNAME points at edge.wharf.test',
  ...extra,
});

describe('applyVerification', () => {
  it('marks the verified domain with the check time and leaves the others alone', () => {
    const other = domain({ id: 'dom_other000000000000000000', domain: 'www.example.com' });
    const list = applyVerification([domain({}), other], answer({}));
    expect(list[0]).toMatchObject({ verified: true, verified_at: '2025-01-31T12:00:00.000Z' });
    expect(list[1]).toBe(other);
  });

  it('keeps the first verification time when a domain is verified again', () => {
    const list = applyVerification(
      [domain({ verified: true, verified_at: '2025-01-30T09:00:00.000Z' })],
      answer({}),
    );
    expect(list[0]!.verified_at).toBe('2025-01-30T09:00:00.000Z');
  });

  it('marks a domain whose record no longer points at the platform as pending again', () => {
    const list = applyVerification(
      [domain({ verified: true, verified_at: '2025-01-30T09:00:00.000Z' })],
      answer({ verified: false, found: ['203.0.113.7'] }),
    );
    expect(list[0]).toMatchObject({ verified: false, verified_at: null });
  });
});
