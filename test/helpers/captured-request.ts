// SPEC.md §2.4 checked field by field on one captured request, wherever it comes from (the list, the
// live feed, the replay answer, the inspector, the Mirror): the names, and the type of each.
import { expect } from 'vitest';
import { CapturedRequest } from '../../src/shared/api/tunnels.js';

const SPEC_FIELDS = [
  'id',
  'method',
  'path',
  'status_code',
  'duration_ms',
  'request_headers',
  'response_headers',
  'request_size',
  'response_size',
  'remote_addr',
  'timestamp',
] as const;

const headerObject = (value: unknown) => {
  expect(typeof value === 'object' && value !== null && !Array.isArray(value), 'a header object').toBe(true);
  for (const [name, text] of Object.entries(value as Record<string, unknown>)) {
    expect(name, 'header names are lower case').toBe(name.toLowerCase());
    expect(typeof text, `header ${name} is a string`).toBe('string');
  }
};

/** Asserts SPEC.md §2.4 on `value` (each field present with its type); returns it typed. */
export function expectSpecCapturedRequest(value: unknown): CapturedRequest {
  expect(typeof value).toBe('object');
  const r = value as Record<string, unknown>;
  for (const field of SPEC_FIELDS) expect(r, `has ${field}`).toHaveProperty(field);
  expect(r).not.toHaveProperty('started_at');
  expect(typeof r.id).toBe('string');
  expect(typeof r.method).toBe('string');
  expect(typeof r.path).toBe('string');
  expect(Number.isInteger(r.status_code), 'status_code is an integer').toBe(true);
  expect(Number.isInteger(r.duration_ms), 'duration_ms is whole milliseconds').toBe(true);
  expect(r.duration_ms as number).toBeGreaterThanOrEqual(0);
  headerObject(r.request_headers);
  headerObject(r.response_headers);
  expect(Number.isInteger(r.request_size), 'request_size is an integer').toBe(true);
  expect(Number.isInteger(r.response_size), 'response_size is an integer').toBe(true);
  expect(r.remote_addr).toMatch(/^(?:\[[0-9a-f:.]+\]|[^\s:[\]]+):\d{1,5}$/i);
  expect(r.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z$/);
  expect(new Date(r.timestamp as string).toISOString()).toBe(r.timestamp);
  return CapturedRequest.parse(value);
}

/** The port of a `<host>:<port>` remote address. */
export function portOf(remoteAddr: string): number {
  return Number(remoteAddr.slice(remoteAddr.lastIndexOf(':') + 1));
}
