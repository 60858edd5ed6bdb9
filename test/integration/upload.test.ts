// POST /projects/:id/upload (API.md §4) against a real platform: raw and multipart archives, the one
// archive kept per project, media types, every archive rule (nothing is stored after a rejection),
// the 100 MiB limit with and without Content-Length, and uploads to projects that do not take them.
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Problem } from '../../src/shared/api/common.js';
import { Project, Upload } from '../../src/shared/api/projects.js';
import { nodeAppTarball, tarball, type TarEntrySpec } from '../fixtures/tarball.js';
import {
  type CallResult,
  call,
  expectProblem,
  startPlatform,
  type TestPlatform,
} from '../helpers/platform.js';

const MiB = 1024 * 1024;

let t: TestPlatform;
/** An upload project that holds one valid archive before each rejection test. */
let keeper: Project;
let keeperArchive: Buffer;

let labels = 0;
async function newProject(body: Record<string, unknown> = { deploy_source: 'upload' }): Promise<Project> {
  labels += 1;
  const res = await call(`${t.api}/projects`, {
    key: t.key,
    body: { name: 'Upload', subdomain: `up${labels}`, ...body },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return Project.parse(res.body);
}

const uploadUrl = (id: string) => `${t.api}/projects/${id}/upload`;

function upload(id: string, body: Buffer | string, contentType = 'application/gzip'): Promise<CallResult> {
  return call(uploadUrl(id), { key: t.key, body, headers: { 'content-type': contentType } });
}

async function uploadForm(id: string, form: FormData): Promise<CallResult> {
  const response = await fetch(uploadUrl(id), {
    method: 'POST',
    headers: { 'x-api-key': t.key },
    body: form,
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // keep the text
  }
  return { status: response.status, headers: response.headers, body };
}

function archiveBlob(archive: Buffer): Blob {
  return new Blob([new Uint8Array(archive)], { type: 'application/gzip' });
}

interface RawResult {
  status: number;
  contentType: string;
  body: unknown;
}

/**
 * One request through node:http, resolved as soon as the response has arrived, whatever happens to the
 * rest of the request body afterwards (a server may answer 413 before it has read it all; the rest is
 * then dropped). Without a Content-Length header a stream body goes out with chunked transfer encoding.
 */
function rawPost(
  url: string,
  body: Buffer | Readable,
  headers: Record<string, string | number>,
): Promise<RawResult> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = httpRequest(url, { method: 'POST', headers: { 'x-api-key': t.key, ...headers } }, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        // Like any client that has its final answer: stop sending the rest of the body.
        req.destroy();
        if (!Buffer.isBuffer(body)) body.destroy();
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // keep the text
        }
        resolve({
          status: res.statusCode ?? 0,
          contentType: String(res.headers['content-type']),
          body: parsed,
        });
      });
    });
    req.on('error', (error) => {
      if (!answered) reject(new Error(`no response before the request failed: ${error.message}`));
    });
    if (Buffer.isBuffer(body)) {
      req.end(body);
    } else {
      body.on('error', () => undefined);
      body.pipe(req);
    }
  });
}

/** `total` bytes of zeros in 1 MiB chunks, produced lazily. */
function zeros(total: number): Readable {
  let sent = 0;
  const chunk = Buffer.alloc(MiB);
  return new Readable({
    read() {
      if (sent >= total) return void this.push(null);
      const n = Math.min(MiB, total - sent);
      sent += n;
      this.push(n === MiB ? chunk : chunk.subarray(0, n));
    },
  });
}

function uploadsOf(id: string): string[] {
  const dir = join(t.dataDir, 'uploads', id);
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}

function tmpFiles(): string[] {
  const dir = join(t.dataDir, 'tmp');
  return existsSync(dir) ? readdirSync(dir) : [];
}

function expectUpload(res: CallResult, archive: Buffer, files: number): Upload {
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const result = Upload.parse(res.body);
  expect(result.id).toMatch(/^upl_/);
  expect(result.size_bytes).toBe(archive.length);
  expect(result.files).toBe(files);
  expect(Number.isNaN(Date.parse(result.uploaded_at))).toBe(false);
  return result;
}

beforeAll(async () => {
  t = await startPlatform();
  keeper = await newProject();
  keeperArchive = nodeAppTarball();
  expectUpload(await upload(keeper.id, keeperArchive), keeperArchive, 2);
});

afterAll(async () => {
  await t?.close();
});

describe('accepted uploads', () => {
  it.each(['application/gzip', 'application/x-gzip', 'application/octet-stream'])(
    'accepts a raw .tar.gz body sent as %s with its size and file count',
    async (type) => {
      const project = await newProject();
      const archive = nodeAppTarball();
      expectUpload(await upload(project.id, archive, type), archive, 2);
      expect(uploadsOf(project.id)).toHaveLength(1);
    },
  );

  it('accepts a Content-Type with parameters', async () => {
    const project = await newProject();
    const archive = nodeAppTarball();
    expectUpload(await upload(project.id, archive, 'application/octet-stream; charset=binary'), archive, 2);
  });

  it('counts files only, not directories or links', async () => {
    const project = await newProject();
    const archive = tarball([
      { path: 'src/', type: 'Directory' },
      { path: 'src/a.js', content: 'a' },
      { path: 'src/lib/', type: 'Directory' },
      { path: 'src/lib/b.js', content: 'b'.repeat(2000) },
      { path: 'c.txt', content: '' },
      { path: 'src/link', type: 'SymbolicLink', linkpath: 'a.js' },
      { path: 'src/hard', type: 'Link', linkpath: 'src/a.js' },
    ]);
    expectUpload(await upload(project.id, archive), archive, 3);
  });

  it('accepts a link that stays inside the root after climbing within it', async () => {
    const project = await newProject();
    const archive = tarball([
      { path: 'a/b/c.js', content: 'c' },
      { path: 'a/b/up', type: 'SymbolicLink', linkpath: '../x.js' },
      { path: 'a/x.js', content: 'x' },
    ]);
    expectUpload(await upload(project.id, archive), archive, 2);
  });

  it('accepts exactly 10,000 entries', async () => {
    const project = await newProject();
    const archive = tarball(Array.from({ length: 10_000 }, (_, i) => ({ path: `f${i}` })));
    expectUpload(await upload(project.id, archive), archive, 10_000);
  });

  it('accepts a multipart/form-data upload in the field "file"', async () => {
    const project = await newProject();
    const archive = nodeAppTarball();
    const form = new FormData();
    form.append('file', archiveBlob(archive), 'app.tar.gz');
    expectUpload(await uploadForm(project.id, form), archive, 2);
    const stored = uploadsOf(project.id);
    expect(stored).toHaveLength(1);
    expect(readFileSync(join(t.dataDir, 'uploads', project.id, stored[0]!)).equals(archive)).toBe(true);
  });

  it('accepts a multipart upload whose "file" part follows a text field', async () => {
    const project = await newProject();
    const archive = nodeAppTarball();
    const form = new FormData();
    form.append('note', 'hello');
    form.append('file', archiveBlob(archive), 'app.tar.gz');
    expectUpload(await uploadForm(project.id, form), archive, 2);
  });

  it('keeps only the latest archive: a second upload replaces the first', async () => {
    const project = await newProject();
    const first = nodeAppTarball();
    const second = tarball([{ path: 'index.html', content: '<h1>v2</h1>' }]);
    const a = expectUpload(await upload(project.id, first), first, 2);
    const b = expectUpload(await upload(project.id, second), second, 1);
    expect(b.id).not.toBe(a.id);
    const stored = uploadsOf(project.id);
    expect(stored).toHaveLength(1);
    expect(readFileSync(join(t.dataDir, 'uploads', project.id, stored[0]!)).equals(second)).toBe(true);
    expect(tmpFiles()).toEqual([]);
  });

  it('keeps exactly one archive after five simultaneous uploads, all answered 200', async () => {
    const project = await newProject();
    const archives = Array.from({ length: 5 }, (_, i) => tarball([{ path: `v${i}.txt`, content: `v${i}` }]));
    const results = await Promise.all(archives.map((a) => upload(project.id, a)));
    for (const [i, res] of results.entries()) expectUpload(res, archives[i]!, 1);
    const stored = uploadsOf(project.id);
    expect(stored).toHaveLength(1);
    const kept = readFileSync(join(t.dataDir, 'uploads', project.id, stored[0]!));
    expect(archives.some((a) => a.equals(kept))).toBe(true);
    expect(tmpFiles()).toEqual([]);
  });

  it('removes the archive when the project is deleted', async () => {
    const project = await newProject();
    const archive = nodeAppTarball();
    expectUpload(await upload(project.id, archive), archive, 2);
    expect(uploadsOf(project.id)).toHaveLength(1);
    const res = await call(`${t.api}/projects/${project.id}`, { method: 'DELETE', key: t.key });
    expect(res.status).toBe(200);
    expect(uploadsOf(project.id)).toEqual([]);
  });
});

describe('rejected uploads store nothing', () => {
  /** Asserts a 422 on `file`, the keeper's archive untouched, and no temporary file left. */
  async function rejects(res: Promise<CallResult>) {
    const before = uploadsOf(keeper.id);
    const problem = expectProblem(await res, 422, 'validation_failed');
    expect(problem.errors?.map((e) => e.path)).toEqual(['file']);
    expect(uploadsOf(keeper.id)).toEqual(before);
    expect(before).toHaveLength(1);
    expect(readFileSync(join(t.dataDir, 'uploads', keeper.id, before[0]!)).equals(keeperArchive)).toBe(true);
    expect(tmpFiles()).toEqual([]);
  }

  const bad = (entries: TarEntrySpec[]) => upload(keeper.id, tarball(entries));

  it('rejects a path climbing out with ../ with 422 and the path file', async () => {
    await rejects(
      bad([
        { path: 'ok.js', content: 'x' },
        { path: '../evil.sh', content: 'x' },
      ]),
    );
    await rejects(bad([{ path: 'app/../../evil.sh', content: 'x' }]));
  });

  it('rejects an absolute path with 422 and the path file', async () => {
    await rejects(bad([{ path: '/etc/cron.d/evil', content: 'x' }]));
  });

  it('rejects a symlink escaping the root with 422 and the path file', async () => {
    await rejects(bad([{ path: 'app/link', type: 'SymbolicLink', linkpath: '../../etc/passwd' }]));
    await rejects(bad([{ path: 'link', type: 'SymbolicLink', linkpath: '/etc/passwd' }]));
    await rejects(bad([{ path: 'a/link', type: 'SymbolicLink', linkpath: 'b/../../..' }]));
  });

  it('rejects a hard link escaping the root with 422 and the path file', async () => {
    await rejects(bad([{ path: 'hard', type: 'Link', linkpath: '../outside' }]));
    await rejects(bad([{ path: 'hard', type: 'Link', linkpath: '/etc/shadow' }]));
  });

  it('rejects device files and FIFOs with 422 and the path file', async () => {
    await rejects(bad([{ path: 'dev', type: 'CharacterDevice' }]));
    await rejects(bad([{ path: 'pipe', type: 'FIFO' }]));
  });

  it('rejects more than 10,000 entries with 422 and the path file', async () => {
    await rejects(bad(Array.from({ length: 10_001 }, (_, i) => ({ path: `f${i}` }))));
  });

  it('rejects a body that is not gzip at all with 422 and the path file', async () => {
    await rejects(upload(keeper.id, Buffer.from('this is not an archive, just text')));
    await rejects(upload(keeper.id, Buffer.from('PK\u0003\u0004 a zip file pretending', 'binary')));
  });

  it('rejects an uncompressed tar with 422 and the path file', async () => {
    const { gunzipSync } = await import('node:zlib');
    await rejects(upload(keeper.id, gunzipSync(nodeAppTarball())));
  });

  it('rejects a truncated or corrupt gzip stream with 422 and the path file', async () => {
    const archive = nodeAppTarball();
    await rejects(upload(keeper.id, archive.subarray(0, Math.floor(archive.length / 2))));
    const corrupt = Buffer.from(archive);
    for (let i = 12; i < corrupt.length - 8; i++) corrupt[i] = 0xff;
    await rejects(upload(keeper.id, corrupt));
  });

  it('rejects gzip data that is not a tar archive with 422 and the path file', async () => {
    const { gzipSync } = await import('node:zlib');
    await rejects(upload(keeper.id, gzipSync(Buffer.from('plain text inside gzip, not tar'.repeat(40)))));
  });

  it('rejects an empty body with 422 and the path file', async () => {
    await rejects(upload(keeper.id, Buffer.alloc(0)));
  });

  it('rejects a multipart upload in a field other than "file" with 422 and the path file', async () => {
    const form = new FormData();
    form.append('archive', archiveBlob(nodeAppTarball()), 'app.tar.gz');
    await rejects(uploadForm(keeper.id, form));
  });

  it('rejects a multipart body without any file with 422 and the path file', async () => {
    const form = new FormData();
    form.append('note', 'no file here');
    await rejects(uploadForm(keeper.id, form));
  });

  it('rejects a malicious archive sent as multipart with 422 and the path file', async () => {
    const form = new FormData();
    form.append('file', archiveBlob(tarball([{ path: '../evil', content: 'x' }])), 'app.tar.gz');
    await rejects(uploadForm(keeper.id, form));
  });
});

describe('media types and sizes', () => {
  it('rejects Content-Type text/plain with 415 unsupported_media_type', async () => {
    const before = uploadsOf(keeper.id);
    expectProblem(await upload(keeper.id, nodeAppTarball(), 'text/plain'), 415, 'unsupported_media_type');
    expect(uploadsOf(keeper.id)).toEqual(before);
    expect(tmpFiles()).toEqual([]);
  });

  it.each(['application/zip', 'image/png', 'application/json'])(
    'rejects an archive sent as Content-Type %s with 415 unsupported_media_type',
    async (type) => {
      expectProblem(await upload(keeper.id, nodeAppTarball(), type), 415, 'unsupported_media_type');
    },
  );

  it('rejects a JSON body (application/json) with 415 unsupported_media_type: uploads are not JSON', async () => {
    const before = uploadsOf(keeper.id);
    expectProblem(await upload(keeper.id, '{"file":"x"}', 'application/json'), 415, 'unsupported_media_type');
    expect(uploadsOf(keeper.id)).toEqual(before);
    expect(tmpFiles()).toEqual([]);
  });

  it('rejects a POST without body and without Content-Type with 415 unsupported_media_type', async () => {
    const res = await call(uploadUrl(keeper.id), { method: 'POST', key: t.key });
    expectProblem(res, 415, 'unsupported_media_type');
  });

  it('leaves no temporary file behind after bodiless uploads (60 tries, each checked after it settles)', async () => {
    const before = uploadsOf(keeper.id);
    const leftovers = new Set<string>();
    for (let i = 0; i < 60; i++) {
      const res =
        i % 2 === 0
          ? await call(uploadUrl(keeper.id), { method: 'POST', key: t.key })
          : await call(uploadUrl(keeper.id), { key: t.key, body: Buffer.alloc(0) });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      await new Promise((resolve) => setTimeout(resolve, 5));
      for (const file of tmpFiles()) leftovers.add(file);
    }
    // Clean up before asserting, so that the later tests start from an empty tmp dir either way.
    for (const file of tmpFiles()) rmSync(join(t.dataDir, 'tmp', file), { force: true });
    expect([...leftovers]).toEqual([]);
    expect(uploadsOf(keeper.id)).toEqual(before);
  });

  it.each([
    [
      'without a boundary',
      'multipart/form-data',
      '--x\r\nContent-Disposition: form-data; name="file"\r\n\r\nabc',
    ],
    ['without a boundary and no body', 'multipart/form-data', ''],
    ['whose body never mentions the boundary', 'multipart/form-data; boundary=x', 'junk'],
    [
      'cut off inside the file part',
      'multipart/form-data; boundary=x',
      '--x\r\nContent-Disposition: form-data; name="file"; filename="a.tar.gz"\r\n\r\nabc',
    ],
  ])('answers a malformed multipart body (%s) with a 4xx problem, never 500', async (_what, type, body) => {
    const before = uploadsOf(keeper.id);
    const res = await upload(keeper.id, body, type);
    expect(res.status, JSON.stringify(res.body)).toBeGreaterThanOrEqual(400);
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
    expect(res.headers.get('content-type') ?? '').toMatch(/^application\/problem\+json/);
    Problem.parse(res.body);
    expect(uploadsOf(keeper.id)).toEqual(before);
    expect(tmpFiles()).toEqual([]);
  });

  it('rejects a body over 100 MiB with a Content-Length with 413 payload_too_large, storing nothing', async () => {
    const before = uploadsOf(keeper.id);
    const body = Buffer.alloc(101 * MiB);
    const res = await rawPost(uploadUrl(keeper.id), body, {
      'content-type': 'application/gzip',
      'content-length': body.length,
    });
    expectProblem(res, 413, 'payload_too_large');
    expect(uploadsOf(keeper.id)).toEqual(before);
    expect(tmpFiles()).toEqual([]);
  });

  it('rejects a body one byte over 100 MiB with 413 payload_too_large', async () => {
    const before = uploadsOf(keeper.id);
    const size = 100 * MiB + 1;
    const res = await rawPost(uploadUrl(keeper.id), zeros(size), {
      'content-type': 'application/octet-stream',
      'content-length': size,
    });
    expectProblem(res, 413, 'payload_too_large');
    expect(uploadsOf(keeper.id)).toEqual(before);
    expect(tmpFiles()).toEqual([]);
  });

  it('rejects a chunked body over 100 MiB without Content-Length with 413 payload_too_large, storing nothing', async () => {
    const before = uploadsOf(keeper.id);
    const res = await rawPost(uploadUrl(keeper.id), zeros(101 * MiB), {
      'content-type': 'application/gzip',
      'transfer-encoding': 'chunked',
    });
    expectProblem(res, 413, 'payload_too_large');
    expect(uploadsOf(keeper.id)).toEqual(before);
    expect(tmpFiles()).toEqual([]);
  });

  it('rejects a multipart file over 100 MiB with 413 payload_too_large', async () => {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(101 * MiB)], { type: 'application/gzip' }), 'big.tar.gz');
    const before = uploadsOf(keeper.id);
    expectProblem(await uploadForm(keeper.id, form), 413, 'payload_too_large');
    expect(uploadsOf(keeper.id)).toEqual(before);
    expect(tmpFiles()).toEqual([]);
  });

  it('still serves requests after the oversized uploads', async () => {
    const res = await call(`${t.api}/projects/${keeper.id}`, { key: t.key });
    expect(res.status).toBe(200);
  });
});

describe('projects that do not take uploads', () => {
  it('rejects an upload to a git project with 409 conflict', async () => {
    const project = await newProject({ repo_url: 'https://github.com/acme/demo.git' });
    expectProblem(await upload(project.id, nodeAppTarball()), 409, 'conflict');
    expect(uploadsOf(project.id)).toEqual([]);
    expect(tmpFiles()).toEqual([]);
  });

  it('rejects an upload to a git_host_repo project with 409 conflict', async () => {
    const project = await newProject({ git_host_repo: 'acme/demo' });
    expectProblem(await upload(project.id, nodeAppTarball()), 409, 'conflict');
  });

  it('rejects an upload to an image project with 409 conflict', async () => {
    const project = await newProject({ image: 'nginx:1.27' });
    expectProblem(await upload(project.id, nodeAppTarball()), 409, 'conflict');
    expect(uploadsOf(project.id)).toEqual([]);
  });

  it('answers 404 not_found to an upload for an unknown project', async () => {
    expectProblem(await upload('prj_00000000000000000000', nodeAppTarball()), 404, 'not_found');
  });

  it('answers 401 unauthorized to an upload without a key', async () => {
    const res = await call(uploadUrl(keeper.id), {
      body: nodeAppTarball(),
      headers: { 'content-type': 'application/gzip' },
    });
    expectProblem(res, 401, 'unauthorized');
  });
});
