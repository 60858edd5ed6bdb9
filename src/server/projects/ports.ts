// Which ports a build config may declare (its port_override and its services' ports). Apps of the
// process and sandbox runtimes share the machine's network, so a declared port is a claim on the whole machine: one that belongs to
// the platform (its API, its edge) or to another project would hand that one's traffic to this app, or
// make the edge send requests to itself. Such ports are refused when the config is saved; the runtime
// checks again at each start (a port taken meanwhile fails that deploy, and the health check only
// counts a listener of the project's own processes).
import type { BuildConfig, DeploySource } from '../../shared/api/projects.js';
import type { FieldError } from '../../shared/errors.js';
import { portIsFree } from '../runtime/ports.js';
import type { Store } from '../store/open.js';

export async function refusedServicePorts(
  db: Store,
  projectId: string | null,
  config: BuildConfig,
  prefix: string[],
  source: DeploySource,
): Promise<FieldError[]> {
  const declared = declaredPorts(config, prefix, source);
  if (declared.length === 0) return [];
  const others = await db
    .selectFrom('projects')
    .select(['id', 'name', 'build_config', 'deploy_source'])
    .$if(projectId !== null, (q) => q.where('id', '!=', projectId!))
    .where((eb) =>
      eb.or([eb('build_config', 'like', '%"port"%'), eb('build_config', 'like', '%"port_override"%')]),
    )
    .execute();
  const claimed = new Map<number, string>();
  for (const other of others) {
    for (const { port } of declaredPorts(
      JSON.parse(other.build_config) as BuildConfig,
      [],
      other.deploy_source as DeploySource,
    )) {
      claimed.set(port, other.id);
    }
  }
  const own = new Set<number>();
  if (projectId !== null) {
    const row = await db
      .selectFrom('projects')
      .select(['build_config', 'deploy_source'])
      .where('id', '=', projectId)
      .executeTakeFirst();
    for (const { port } of row
      ? declaredPorts(JSON.parse(row.build_config) as BuildConfig, [], row.deploy_source as DeploySource)
      : []) {
      own.add(port);
    }
  }
  const errors: FieldError[] = [];
  for (const { path, port } of declared) {
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

/**
 * The ports of the machine a config claims, with the path of each: port_override (an image's is the
 * port inside its container, which claims nothing here), then each service's port.
 */
function declaredPorts(
  config: BuildConfig,
  prefix: string[],
  source: DeploySource,
): Array<{ path: string; port: number }> {
  const ports: Array<{ path: string; port: number }> = [];
  // Stored configs from before port_override lack the field.
  if (config.port_override !== null && config.port_override !== undefined && source !== 'image') {
    ports.push({ path: [...prefix, 'port_override'].join('.'), port: config.port_override });
  }
  config.services.forEach((service, i) => {
    if (service.port !== null)
      ports.push({ path: [...prefix, `services[${i}].port`].join('.'), port: service.port });
  });
  return ports;
}
