// SPEC.md §2.4 checked field by field on one captured request, wherever it comes from (the list, the
// live feed, the replay answer, the inspector, the Mirror): the names, and the type of each.
import { expect } from 'vitest';
import { CapturedRequest } from '../../src/shared/api/tunnels.js';
import { CAPTURED_REQUEST, expectSpec } from './spec-contract.js';

/** Asserts SPEC.md §2.4 on `value` (each field present with its type and form); returns it typed. */
export function expectSpecCapturedRequest(value: unknown): CapturedRequest {
  expectSpec(value, CAPTURED_REQUEST, 'the captured request');
  const r = value as Record<string, unknown>;
  expect(r).not.toHaveProperty('started_at');
  expect(r.duration_ms as number).toBeGreaterThanOrEqual(0);
  for (const headers of [r.request_headers, r.response_headers]) {
    for (const name of Object.keys(headers as Record<string, string>)) {
      expect(name, 'header names are lower case').toBe(name.toLowerCase());
    }
  }
  return CapturedRequest.parse(value);
}

/** The port of a `<host>:<port>` remote address. */
export function portOf(remoteAddr: string): number {
  return Number(remoteAddr.slice(remoteAddr.lastIndexOf(':') + 1));
}
