// Deploys a one-file Node app (`server.js`, listening on $PORT) to a platform in this process, from an
// upload, as a user would; resolves once it runs, with the port the edge proxies it to.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export async function deployApp(platform, { dataDir, subdomain, serverJs }) {
  const api = `http://127.0.0.1:${platform.app.server.address().port}/api/v1`;
  const apiKey = JSON.parse(readFileSync(join(dataDir, 'local-account.json'), 'utf8')).api_key;
  const call = async (method, path, body, type) => {
    const res = await fetch(`${api}${path}`, {
      method,
      headers: { 'x-api-key': apiKey, ...(type ? { 'content-type': type } : {}) },
      body,
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
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
