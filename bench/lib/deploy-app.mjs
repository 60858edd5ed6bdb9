// Deploys a one-file Node app (`server.js`, listening on $PORT) to a platform in this process, from an
// upload, as a user would; resolves once it runs, with the port the edge proxies it to.
// It calls the API with node:http, which the platform loads anyway: `fetch` would load Node's bundled
// undici into the platform's process (~20 MB of RSS that a platform never holds), and the benches
// measure that process's memory.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';

/** One API call over node:http: the parsed JSON answer (null when empty), or an error with its text. */
function callApi(api, apiKey, method, path, body, type) {
  return new Promise((resolve, reject) => {
    const req = request(
      `${api}${path}`,
      {
        method,
        headers: {
          'x-api-key': apiKey,
          ...(type ? { 'content-type': type } : {}),
          ...(body ? { 'content-length': Buffer.byteLength(body) } : {}),
        },
      },
      (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          if (res.statusCode >= 300) reject(new Error(`${method} ${path}: ${res.statusCode} ${text}`));
          else resolve(text ? JSON.parse(text) : null);
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export async function deployApp(platform, { dataDir, subdomain, serverJs }) {
  const api = `http://127.0.0.1:${platform.app.server.address().port}/api/v1`;
  const apiKey = JSON.parse(readFileSync(join(dataDir, 'local-account.json'), 'utf8')).api_key;
  const call = (method, path, body, type) => callApi(api, apiKey, method, path, body, type);
  const project = await call(
    'POST',
    '/projects',
    JSON.stringify({ name: `Bench ${subdomain}`, subdomain, deploy_source: 'upload' }),
    'application/json',
  );
  const appDir = join(dataDir, `bench-app-${subdomain}`);
  mkdirSync(appDir, { recursive: true });
  writeFileSync(
    join(appDir, 'package.json'),
    JSON.stringify({ name: `bench-${subdomain}`, private: true, scripts: { start: 'node server.js' } }),
  );
  writeFileSync(join(appDir, 'server.js'), serverJs);
  const { create } = await import('tar');
  const chunks = [];
  for await (const chunk of create({ gzip: true, cwd: appDir, portable: true }, [
    'package.json',
    'server.js',
  ]))
    chunks.push(chunk);
  await call('POST', `/projects/${project.id}/upload`, Buffer.concat(chunks), 'application/gzip');
  await call('POST', `/projects/${project.id}/deploy`);
  for (const deadline = Date.now() + 60_000; ;) {
    const detail = await call('GET', `/projects/${project.id}`);
    if (detail.project.status === 'running') break;
    if (detail.project.status === 'failed' || Date.now() > deadline)
      throw new Error(`the bench app did not start: ${detail.project.last_deploy_error}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const target = platform.runtime.target(project.id, null);
  // The bench holds no drain: a redeploy never comes.
  target.done();
  return { projectId: project.id, port: target.port, apiKey };
}
