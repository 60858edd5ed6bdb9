// Routes of API.md §4: create, list, get, env vars, build config, upload, deploy, stop, logs, delete.
// Deploy and stop hand over to the runtime, which builds and runs the app in the background.
import { createReadStream, mkdirSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import multipart from '@fastify/multipart';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { Deleted, IdParams } from '../../shared/api/common.js';
import {
  BuildConfig,
  CreateProjectRequest,
  LIMITS,
  LogLine,
  LogsQuery,
  Project,
  RegistryCredentials,
  RegistryCredentialsRequest,
  Release,
  RollbackRequest,
  ProjectDetail,
  UpdateProjectRequest,
  Upload,
} from '../../shared/api/projects.js';
import type { PlatformConfig } from '../config.js';
import { ApiError, validationError } from '../errors.js';
import { newId } from '../ids.js';
import { accountLimits } from '../limits.js';
import type { Runtime } from '../runtime/runtime.js';
import { storeChunks } from '../store/chunks.js';
import { locksRows } from '../store/dialect.js';
import type { Store } from '../store/open.js';
import { inspectArchive, saveStream } from './archive.js';
import { type LogStore, type SequencedLine, publicLine } from './logs.js';
import type { ProjectService } from './projects.js';
import { startEventStream } from '../event-stream.js';

export interface ProjectRoutesOptions {
  db: Store;
  logs: LogStore;
  config: PlatformConfig;
  projects: ProjectService;
  runtime: Runtime;
}

const RAW_ARCHIVE_TYPES = ['application/gzip', 'application/x-gzip', 'application/octet-stream'];

export const projectRoutes: FastifyPluginAsyncZod<ProjectRoutesOptions> = async (
  app,
  { db, config, projects, logs, runtime },
) => {
  const uploadsDir = join(config.dataDir, 'uploads');
  const tmpDir = join(config.dataDir, 'tmp');
  mkdirSync(uploadsDir, { recursive: true });
  mkdirSync(tmpDir, { recursive: true });

  const tags = ['projects'];
  const limits = accountLimits(config);

  app.get('/projects', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'List projects, newest first',
      description: 'Answers with an ETag; send it back in If-None-Match to get a 304 while nothing changed.',
      tags,
      response: { 200: z.array(Project) },
    },
    handler: async (request, typedReply) => {
      // The list is sent pre-serialized (see ProjectService.listJson), so the typed reply is set aside.
      const reply = typedReply as FastifyReply;
      const { json, etag } = await projects.listJson(request.caller.accountId);
      reply.header('etag', etag).header('cache-control', 'private, no-cache');
      const ifNoneMatch = request.headers['if-none-match'];
      if (ifNoneMatch && ifNoneMatch.split(',').some((tag) => tag.trim() === etag))
        return reply.code(304).send();
      return reply.type('application/json; charset=utf-8').send(json);
    },
  });

  app.post('/projects', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'Create a project from git, a git host repo, an image or an upload',
      tags,
      body: CreateProjectRequest,
      response: { 201: Project },
    },
    handler: async (request, reply) => {
      const { accountId } = request.caller;
      return reply.code(201).send(await projects.create(accountId, request.body));
    },
  });

  app.get('/projects/:id', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'A project and its last 500 log lines',
      tags,
      params: IdParams,
      response: { 200: ProjectDetail },
    },
    handler: async (request) => {
      const project = await projects.get(request.caller.accountId, request.params.id);
      const lines = await logs.read(project.id, { limit: LIMITS.logLines });
      return { project, logs: lines.map(publicLine) };
    },
  });

  app.put('/projects/:id', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'Replace the environment variables',
      tags,
      params: IdParams,
      body: UpdateProjectRequest,
      response: { 200: Project },
    },
    handler: async (request) =>
      projects.setEnvVars(request.caller.accountId, request.params.id, request.body.env_vars),
  });

  app.put('/projects/:id/registry-credentials', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'Save the login an image source is pulled with (a private registry)',
      description:
        'Stored encrypted with the server secret and used for the pull alone; the password is never shown ' +
        'again. 409 conflict for a project that is not an image source.',
      tags,
      params: IdParams,
      body: RegistryCredentialsRequest,
      response: { 200: RegistryCredentials },
    },
    handler: async (request) =>
      projects.setRegistryCredentials(request.caller.accountId, request.params.id, request.body),
  });

  app.get('/projects/:id/registry-credentials', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'The registry and user name an image source is pulled with (404 when none are saved)',
      tags,
      params: IdParams,
      response: { 200: RegistryCredentials },
    },
    handler: async (request) => projects.getRegistryCredentials(request.caller.accountId, request.params.id),
  });

  app.delete('/projects/:id/registry-credentials', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'Forget the registry login: the image is pulled anonymously',
      tags,
      params: IdParams,
      response: { 200: z.object({ deleted: z.literal(true) }) },
    },
    handler: async (request) => {
      await projects.deleteRegistryCredentials(request.caller.accountId, request.params.id);
      return { deleted: true as const };
    },
  });

  app.put('/projects/:id/build-config', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'Replace the build configuration',
      tags,
      params: IdParams,
      body: BuildConfig,
      response: { 200: Project },
    },
    handler: async (request) =>
      projects.setBuildConfig(request.caller.accountId, request.params.id, request.body),
  });

  app.post('/projects/:id/deploy', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'Build and run the project (answers at once; status `building`, then `running` or `failed`)',
      description:
        'A redeploy of a running project is zero-downtime: the new version takes traffic once healthy; if it ' +
        'fails, the old one keeps serving and `last_deploy_error` says why. An upload project without an ' +
        'upload answers 409 upload_required.',
      tags,
      params: IdParams,
      response: { 202: Project },
    },
    handler: async (request, reply) =>
      reply.code(202).send(await runtime.deploy(request.caller.accountId, request.params.id)),
  });

  app.get('/projects/:id/releases', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'The project’s releases, newest first: every deploy, what it ran and how it ended',
      description:
        'The newest releases that served (5 by default, `--keep-releases`) keep their image or files: ' +
        '`rollback_available` says which POST /rollback can bring back.',
      tags,
      params: IdParams,
      response: { 200: z.array(Release) },
    },
    handler: async (request) => runtime.listReleases(request.caller.accountId, request.params.id),
  });

  app.post('/projects/:id/rollback', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'Start a kept release again, without a build (answers at once; status `building`)',
      description:
        'The release runs with its own image or files and the env vars it was deployed with, which become ' +
        'the project’s env vars again. Like a redeploy it is zero-downtime, and if it fails the current ' +
        'version keeps serving. 404 for a release of another project; 409 conflict for the current release, ' +
        'one that never served, or one no longer kept.',
      tags,
      params: IdParams,
      body: RollbackRequest,
      response: { 202: Project },
    },
    handler: async (request, reply) =>
      reply
        .code(202)
        .send(await runtime.rollback(request.caller.accountId, request.params.id, request.body.release_id)),
  });

  app.post('/projects/:id/stop', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'Stop the project: cancel its deploy, stop its processes, free its ports',
      tags,
      params: IdParams,
      response: { 200: Project },
    },
    handler: async (request) => runtime.stop(request.caller.accountId, request.params.id),
  });

  /** What one log follower may have waiting to be sent before its lines are skipped. */
  const FOLLOW_BUFFER_BYTES = 1024 * 1024;
  // Open follow streams never go idle: end them when the platform shuts down, or close() would wait.
  const followers = new Set<ServerResponse>();
  app.addHook('preClose', async () => {
    for (const stream of followers) stream.end();
  });

  app.get('/projects/:id/logs', {
    config: { scope: 'deploy' },
    schema: {
      summary: "A project's log lines, oldest first; ?follow=1 streams them as server-sent events",
      description:
        'Without follow: the newest `limit` lines (default 500) after `since`, oldest first. With follow=1: ' +
        'the same lines, then each new one, as `log` events of text/event-stream, with a comment every 15 s.',
      tags,
      params: IdParams,
      querystring: LogsQuery,
      response: { 200: z.array(LogLine) },
    },
    handler: async (request, reply) => {
      const project = await projects.row(request.caller.accountId, request.params.id);
      const query = { limit: request.query.limit ?? LIMITS.logLines, since: request.query.since };
      const follow = request.query.follow === '1' || request.query.follow === 'true';
      if (!follow) return (await logs.read(project.id, query)).map(publicLine);

      // Follow: subscribe before reading, so nothing written meanwhile is lost; the sequence numbers
      // drop what the backlog already holds.
      const pending: SequencedLine[] = [];
      let lastSent = 0;
      let live = false;
      const raw = reply.raw;
      // A follower that reads slower than the project writes (or not at all) must not make the
      // platform hold its lines: past FOLLOW_BUFFER_BYTES unsent, lines are skipped, and once the
      // client has caught up it is told how many (`skipped`), so it can read them with ?since.
      let skipped = 0;
      const send = (line: SequencedLine) => {
        if (line.seq <= lastSent) return;
        lastSent = line.seq;
        if (raw.writableLength > FOLLOW_BUFFER_BYTES) {
          if (skipped === 0)
            raw.once('drain', () => {
              raw.write(
                `event: skipped\ndata: ${JSON.stringify({ lines: skipped, last_seq: lastSent })}\n\n`,
              );
              skipped = 0;
            });
          skipped += 1;
          return;
        }
        raw.write(`event: log\nid: ${line.seq}\ndata: ${JSON.stringify(publicLine(line))}\n\n`);
      };
      // An open stream holds one of the account's stream slots until it closes.
      const slot = await limits.streams.takeFor(request.caller.accountId, raw);
      if (!slot) {
        // Gone while its slot was counted: nothing to follow, nobody to answer.
        reply.hijack();
        return;
      }
      const unfollow = logs.follow(project.id, (lines) => {
        if (live) lines.forEach(send);
        else pending.push(...lines);
      });
      const heartbeat = setInterval(() => raw.write(': keep-alive\n\n'), 15_000);
      const stop = () => {
        clearInterval(heartbeat);
        unfollow();
        slot.release();
      };
      request.raw.once('close', stop);
      followers.add(raw);
      raw.once('close', () => followers.delete(raw));
      try {
        const backlog = await logs.read(project.id, query);
        reply.hijack();
        startEventStream(raw);
        raw.write(': following logs\n\n');
        backlog.forEach(send);
        pending.forEach(send);
        live = true;
      } catch (error) {
        stop();
        throw error;
      }
    },
  });

  app.delete('/projects/:id', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'Stop and delete a project, with its uploads and releases',
      tags,
      params: IdParams,
      response: { 200: Deleted('prj') },
    },
    handler: async (request) => {
      await projects.row(request.caller.accountId, request.params.id);
      await runtime.remove(request.params.id);
      const row = await projects.delete(request.caller.accountId, request.params.id);
      await rm(join(uploadsDir, row.id), { recursive: true, force: true });
      return { id: row.id, deleted: true as const };
    },
  });

  // Uploads live in their own scope: its content-type parsers and multipart support apply here only.
  await app.register(async (scope) => {
    // Only archives here: a JSON (or any other) body is answered 415, not parsed.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(RAW_ARCHIVE_TYPES, (_request, payload, done) => done(null, payload));
    await scope.register(multipart, {
      limits: { fileSize: LIMITS.uploadBytes, files: 1, fields: 10, parts: 20, fieldSize: 1024 },
    });

    const receive = async (request: FastifyRequest, file: string): Promise<number> => {
      const declared = Number(request.headers['content-length'] ?? 0);
      if (declared > LIMITS.uploadBytes + 64 * 1024) {
        throw new ApiError('payload_too_large', 'the upload is over 100 MiB');
      }
      if (request.isMultipart()) {
        let part;
        try {
          part = await request.file();
        } catch (error) {
          throw new ApiError('bad_request', `the multipart body is malformed: ${(error as Error).message}`);
        }
        if (!part) {
          throw validationError([
            { path: 'file', message: 'is required: send the archive in the multipart field "file"' },
          ]);
        }
        if (part.fieldname !== 'file') {
          part.file.resume();
          throw validationError([
            { path: 'file', message: `is required: the archive came in field "${part.fieldname}"` },
          ]);
        }
        return saveStream(part.file, file, LIMITS.uploadBytes);
      }
      if (!(request.body instanceof Readable)) {
        throw new ApiError(
          'unsupported_media_type',
          `send the archive as ${RAW_ARCHIVE_TYPES.join(', ')} or multipart/form-data`,
        );
      }
      return saveStream(request.body, file, LIMITS.uploadBytes);
    };

    scope.withTypeProvider<ZodTypeProvider>().post('/projects/:id/upload', {
      bodyLimit: LIMITS.uploadBytes,
      config: { scope: 'deploy', acceptsUploads: true },
      schema: {
        summary: 'Upload the source archive (.tar.gz) of an upload project',
        description:
          'Raw body (application/gzip, application/x-gzip, application/octet-stream) or multipart/form-data field "file".',
        tags,
        params: IdParams,
        response: { 200: Upload },
      },
      handler: async (request) => {
        const row = await projects.row(request.caller.accountId, request.params.id);
        if (row.deploy_source !== 'upload') {
          throw new ApiError(
            'conflict',
            `project ${row.id} deploys from ${row.deploy_source}; uploads are for projects created with deploy_source "upload"`,
          );
        }
        const uploadId = newId('upl');
        const tmpFile = join(tmpDir, `${uploadId}.tar.gz`);
        const size = await receive(request, tmpFile);
        try {
          const summary = await inspectArchive(tmpFile);
          const projectDir = join(uploadsDir, row.id);
          mkdirSync(projectDir, { recursive: true });
          const finalPath = join(projectDir, `${uploadId}.tar.gz`);
          await rename(tmpFile, finalPath);
          const uploadedAt = new Date().toISOString();
          const previous = await db.transaction().execute(async (trx) => {
            // One upload of a project replaces another at a time (PostgreSQL runs them side by side:
            // both would delete nothing, then the second insert would break the one-upload rule).
            await trx
              .selectFrom('projects')
              .select('id')
              .where('id', '=', row.id)
              .$if(locksRows(trx), (query) => query.forUpdate())
              .execute();
            const old = await trx
              .selectFrom('uploads')
              .select('path')
              .where('project_id', '=', row.id)
              .executeTakeFirst();
            await trx.deleteFrom('uploads').where('project_id', '=', row.id).execute();
            await trx
              .insertInto('uploads')
              .values({
                id: uploadId,
                project_id: row.id,
                size_bytes: size,
                files: summary.files,
                path: finalPath,
                uploaded_at: uploadedAt,
              })
              .execute();
            // The other nodes of a cluster deploy it from the database (with the row, or not at all).
            if (config.nodeUrl !== null)
              await storeChunks(trx, 'upload_chunks', uploadId, createReadStream(finalPath));
            return old?.path;
          });
          if (previous) await rm(previous, { force: true });
          return { id: uploadId, size_bytes: size, files: summary.files, uploaded_at: uploadedAt };
        } finally {
          await rm(tmpFile, { force: true });
        }
      },
    });
  });
};
