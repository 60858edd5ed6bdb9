// The front's routing table: the hosts HAProxy sends straight to an app's port (each app and service
// host, each verified custom domain of a project), from the store and where the runtime runs them now.
import type { PlatformConfig } from '../config.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Store } from '../store/open.js';
import type { FrontRoute } from './haproxy-config.js';

/** The hosts to send straight to an app's port: each app and service host, each verified domain. */
export async function frontRoutes(
  db: Store,
  config: PlatformConfig,
  runtime: Runtime,
): Promise<FrontRoute[]> {
  const [hosts, domains] = await Promise.all([
    db
      .selectFrom('project_hosts')
      .innerJoin('projects', 'projects.id', 'project_hosts.project_id')
      .select(['project_hosts.label', 'projects.id', 'projects.subdomain'])
      .execute(),
    db
      .selectFrom('domains')
      .select(['domain', 'project_id', 'hsts'])
      .where('verified', '=', 1)
      .where('project_id', 'is not', null)
      .execute(),
  ]);
  const routes: FrontRoute[] = [];
  for (const row of hosts) {
    const service = row.label === row.subdomain ? null : row.label.slice(row.subdomain.length + 1);
    const port = portOf(runtime, row.id, service);
    if (port !== null) routes.push({ host: `${row.label}.${config.baseDomain}`, port, hsts: false });
  }
  for (const row of domains) {
    const port = portOf(runtime, row.project_id!, null);
    if (port !== null) routes.push({ host: row.domain, port, hsts: row.hsts === 1 });
  }
  return routes;
}

/** The port a host of the project goes to now, or null (static, down, deploying: the Node edge). */
function portOf(runtime: Runtime, projectId: string, service: string | null): number | null {
  const target = runtime.target(projectId, service);
  if (target?.kind !== 'proxy') return null;
  // Asked where it is, not sent a request: nothing to drain.
  target.done();
  return target.port;
}
