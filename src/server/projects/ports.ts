// Which ports a build config may declare for its services. Apps of the process and sandbox runtimes
// share the machine's network, so a declared port is a claim on the whole machine: one that belongs to
// the platform (its API, its edge) or to another project would hand that one's traffic to this app, or
// make the edge send requests to itself. Such ports are refused when the config is saved; the runtime
// checks again at each start (a port taken meanwhile fails that deploy, and the health check only
// counts a listener of the project's own processes).
import type { BuildConfig } from '../../shared/api/projects.js';
import type { FieldError } from '../../shared/errors.js';
import { portIsFree } from '../runtime/ports.js';
import type { Store } from '../store/open.js';

export async function refusedServicePorts(
  db: Store,
  projectId: string | null,
  config: BuildConfig,
  prefix: string[],
): Promise<FieldError[]> {
  if (config.services.length === 0) return [];
  const others = await db
    .selectFrom('projects')
    .select(['id', 'name', 'build_config'])
    .$if(projectId !== null, (q) => q.where('id', '!=', projectId!))
    .where('build_config', 'like', '%"port"%')
    .execute();
  const claimed = new Map<number, string>();
  for (const other of others) {
    for (const service of (JSON.parse(other.build_config) as BuildConfig).services) {
      if (service.port !== null) claimed.set(service.port, other.id);
    }
  }
  const own = new Set<number>();
  if (projectId !== null) {
    const row = await db
      .selectFrom('projects')
      .select('build_config')
      .where('id', '=', projectId)
      .executeTakeFirst();
    for (const service of row ? (JSON.parse(row.build_config) as BuildConfig).services : []) {
      if (service.port !== null) own.add(service.port);
    }
  }
  const errors: FieldError[] = [];
  for (const [i, service] of config.services.entries()) {
    const path = [...prefix, `services[${i}].port`].join('.');
    const { port } = service;
    if (port === null) continue;
    if (claimed.has(port)) {
      errors.push({ path, message: `port ${port} is declared by another project on this platform` });
    } else if (!own.has(port) && !(await portIsFree(port))) {
      // Held by the platform itself (API, edge), another app, or another program on this machine. A
      // port this project declared already may be held by its own running version.
      errors.push({
        path,
        message: `port ${port} is in use on this machine (by the platform or another program)`,
      });
    }
  }
  return errors;
}
