// The front's routing table: the hosts HAProxy sends straight to an app's servers (each app and service
// host, each verified custom domain of a project), from the store and where the runtime runs them now:
// a port on this machine, or the ports of a Swarm service's tasks.
import type { PlatformConfig } from '../config.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Store } from '../store/open.js';
import type { FrontRoute } from './haproxy-config.js';

/** The hosts to send straight to an app's servers: each app and service host, each verified domain. */
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
    // Static, down, deploying: none, and the Node edge answers.
    const servers = runtime.servers(row.id, service);
    if (servers) routes.push({ host: `${row.label}.${config.baseDomain}`, servers, hsts: false });
  }
  for (const row of domains) {
    const servers = runtime.servers(row.project_id!, null);
    if (servers) routes.push({ host: row.domain, servers, hsts: row.hsts === 1 });
  }
  return routes;
}
