// The files the front writes for HAProxy besides its configuration: each written whole or not at all
// (0600), the error pages it answers with when an app does not (the Node edge's own), and the issued
// certificates (chain and key, in certs/).
import { createHash } from 'node:crypto';
import { readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deriveKeyEncryptionKey, openAiKey, type SealedKey } from '../ai/keys.js';
import { type EdgePage, notRunningPage, renderPage } from '../edge/pages.js';
import { formatBytes } from '../limits.js';
import type { Store } from '../store/open.js';
import { ERROR_PAGES, TOO_LARGE_PAGE, certificateFile } from './haproxy-config.js';

/** The error pages of HAProxy's `errorfile`s, and the page of a request body past `bodyBytes`. */
export function writePages(dir: string, bodyBytes: number): void {
  for (const code of ERROR_PAGES) writeAtomic(join(dir, 'errors', `${code}.http`), errorResponse(code));
  const limit = formatBytes(bodyBytes);
  writeAtomic(
    join(dir, TOO_LARGE_PAGE),
    // The Node edge's own 413 page (edge.ts bodyTooLarge).
    renderPage({
      status: 413,
      title: 'Request body too large',
      message: `This address takes request bodies of up to ${limit}.`,
      hint: 'Send a smaller body, or split it over several requests.',
    }),
  );
}

/** The certificates the platform issued, as the files HAProxy loads. */
export class CertificateFiles {
  private readonly kek: Buffer;
  /** Certificate files as written, by name: what they were made from, and their text. */
  private readonly written = new Map<string, { from: string; text: string }>();

  constructor(
    private readonly db: Store,
    secret: Uint8Array | string,
    /** The front's folder (the files go to its certs/). */
    private readonly dir: string,
  ) {
    this.kek = deriveKeyEncryptionKey(secret);
  }

  /**
   * Writes each issued, unexpired certificate as `certs/<name>.pem` (chain, then key; 0600) and removes
   * the others; returns the files and a digest of their contents.
   */
  async write(): Promise<{ files: string[]; digest: string }> {
    const rows = await this.db
      .selectFrom('tls_certificates')
      .select(['name', 'cert_pem', 'key_secret', 'not_after', 'updated_at'])
      .where('cert_pem', 'is not', null)
      .orderBy('name')
      .execute();
    const now = Date.now();
    const files: string[] = [];
    const hash = createHash('sha256');
    const keep = new Set<string>();
    for (const row of rows) {
      const file = certificateFile(row.name);
      if (!file || !row.cert_pem || !row.key_secret || !row.not_after) continue;
      if (Date.parse(row.not_after) <= now) continue;
      const from = `${row.updated_at}\0${row.not_after}`;
      let entry = this.written.get(row.name);
      if (entry?.from !== from) {
        let key: string;
        try {
          // Sealed by the certificate manager (tls/certificates.ts) under the same context.
          key = openAiKey(this.kek, `tls:${row.name}`, JSON.parse(row.key_secret) as SealedKey);
        } catch {
          continue;
        }
        entry = { from, text: `${row.cert_pem.trim()}\n${key.trim()}\n` };
        writeAtomic(join(this.dir, file), entry.text);
        this.written.set(row.name, entry);
      }
      files.push(file);
      keep.add(file.slice('certs/'.length));
      hash.update(`${file}\0${entry.text}\0`);
    }
    for (const name of readdirSync(join(this.dir, 'certs'))) {
      if (!keep.has(name)) rmSync(join(this.dir, 'certs', name), { force: true });
    }
    for (const name of [...this.written.keys()]) {
      const file = certificateFile(name);
      if (!file || !keep.has(file.slice('certs/'.length))) this.written.delete(name);
    }
    return { files, digest: hash.digest('hex') };
  }
}

/** Written whole or not at all (HAProxy may read it at any reload), 0600. */
export function writeAtomic(path: string, text: string): void {
  const temp = `${path}.tmp`;
  rmSync(temp, { force: true });
  writeFileSync(temp, text, { mode: 0o600 });
  renameSync(temp, path);
}

/**
 * A whole HTTP response for HAProxy's `errorfile`: the page the Node edge answers when an app does
 * not (edge.ts: a proxy error is `notRunningPage(502)`), with the same headers as its pages.
 */
function errorResponse(code: (typeof ERROR_PAGES)[number]): string {
  const page: EdgePage =
    code === 504
      ? { status: 504, title: 'Not answering', message: 'This app did not answer in time.', retryAfter: 5 }
      : notRunningPage(code, code === 503 ? 5 : undefined);
  const body = renderPage(page);
  const reason = { 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout' }[code];
  return [
    `HTTP/1.1 ${code} ${reason}`,
    'content-type: text/html; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    'cache-control: no-store',
    `x-wharf-edge: ${page.title}`,
    ...(page.retryAfter ? [`retry-after: ${page.retryAfter}`] : []),
    'connection: close',
    '',
    body,
  ].join('\r\n');
}
