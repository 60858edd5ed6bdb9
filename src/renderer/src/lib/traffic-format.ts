// How the Traffic screen writes an exchange's numbers: the status and its class (for its colour),
// durations, the time of day to the millisecond, and headers as text for copying.
import type { CapturedRequest, HeaderList } from '../../../shared/api/tunnels.js';

export type StatusTone = 'info' | 'success' | 'redirect' | 'client-error' | 'server-error' | 'error';

export function statusTone(code: number | null): StatusTone {
  if (code === null) return 'error';
  if (code >= 500) return 'server-error';
  if (code >= 400) return 'client-error';
  if (code >= 300) return 'redirect';
  if (code >= 200) return 'success';
  return 'info';
}

/** The status the public client got (the edge's own, such as 502, when the app did not answer). */
export function statusLabel(request: Pick<CapturedRequest, 'status_code'>): string {
  return String(request.status_code);
}

/**
 * Whether no response came from the app: its status is then the one the edge or the tunnel client
 * answered (502, 504) or 499 (the public client went away), and its error says why.
 */
export function withoutAppResponse(
  request: Pick<CapturedRequest, 'error' | 'response_header_list'>,
): boolean {
  return request.error !== null && request.response_header_list.length === 0;
}

/** The tone of an exchange's status: `error` when the app never answered. */
export function exchangeTone(
  request: Pick<CapturedRequest, 'status_code' | 'error' | 'response_header_list'>,
): StatusTone {
  return withoutAppResponse(request) ? 'error' : statusTone(request.status_code);
}

/** `0.42 ms`, `12 ms`, `1.24 s`, `2 min 5 s`; an em dash when unknown. */
export function formatDuration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return '—';
  // Captured durations are whole milliseconds (SPEC.md §2.4): no decimals they do not have.
  if (Number.isInteger(ms) && ms < 1000) return `${ms} ms`;
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 999.5) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms - minutes * 60_000) / 1000)} s`;
}

/** `14:03:07.123` in local time. */
export function formatClock(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}.${String(date.getMilliseconds()).padStart(3, '0')}`;
}

/** Headers as an HTTP message writes them, one `Name: value` per line. */
export function headersText(headers: HeaderList): string {
  return headers.map((h) => `${h.name}: ${h.value}`).join('\n');
}

/** The file name for a HAR export: `wharf-traffic-2025-01-31T14-03-07.har`. */
export function harFileName(now: Date, label = 'traffic'): string {
  const stamp = now
    .toISOString()
    .replace(/\.\d+Z$/, '')
    .replace(/:/g, '-');
  return `wharf-${label}-${stamp}.har`;
}
