// A project's host names: the subdomain must not be one the platform keeps, each service's host label
// (`<subdomain>-<name>`) must fit a DNS label, and each is claimed in project_hosts, which no two
// projects share.
import type { Transaction } from 'kysely';
import type { BuildConfig as BuildConfigType } from '../../shared/api/projects.js';
import { DNS_LABEL_MAX, RESERVED_SUBDOMAINS, serviceLabel } from '../../shared/dns-label.js';
import type { FieldError } from '../../shared/errors.js';
import type { PlatformConfig } from '../config.js';
import { ApiError, validationError } from '../errors.js';
import type { Database } from '../store/schema.js';

/** Refuses a subdomain the platform keeps for itself (and the tunnel domain's label under it). */
export function checkSubdomain(config: PlatformConfig, subdomain: string): void {
  const tunnelLabel = config.tunnelDomain.endsWith(`.${config.baseDomain}`)
    ? config.tunnelDomain.slice(0, -config.baseDomain.length - 1)
    : null;
  if (RESERVED_SUBDOMAINS.has(subdomain) || subdomain === tunnelLabel) {
    throw validationError([{ path: 'subdomain', message: `"${subdomain}" is reserved for the platform` }]);
  }
}

/** Refuses service names that make a host label longer than a DNS label (field errors under `prefix`). */
export function checkServiceHosts(subdomain: string, config: BuildConfigType, prefix: string[]): void {
  const errors: FieldError[] = [];
  config.services.forEach((service, i) => {
    const label = serviceLabel(subdomain, service.name);
    if (label.length > DNS_LABEL_MAX) {
      errors.push({
        path: [...prefix, `services[${i}].name`].join('.'),
        message: `makes the host label "${label}" ${label.length} characters long; "<subdomain>-<name>" must be at most ${DNS_LABEL_MAX}`,
      });
    }
  });
  if (errors.length > 0) throw validationError(errors);
}

/** Claims each service's host for the project: 409 when another project answers at one. */
export async function claimServiceHosts(
  trx: Transaction<Database>,
  projectId: string,
  subdomain: string,
  config: BuildConfigType,
) {
  for (const service of config.services) {
    const label = serviceLabel(subdomain, service.name);
    await claimHost(
      trx,
      label,
      projectId,
      `the host "${label}" of service "${service.name}" is taken by another project`,
    );
  }
}

/** Throws 409 when another project answers at `label`; returns whether this project already does. */
export async function assertHostFree(
  trx: Transaction<Database>,
  label: string,
  projectId: string,
  message: string,
): Promise<boolean> {
  const taken = await trx
    .selectFrom('project_hosts')
    .select('project_id')
    .where('label', '=', label)
    .executeTakeFirst();
  if (taken && taken.project_id !== projectId) throw new ApiError('conflict', message);
  return taken !== undefined;
}

/** Claims `label` for the project (409 when another project answers there). */
export async function claimHost(
  trx: Transaction<Database>,
  label: string,
  projectId: string,
  message: string,
): Promise<void> {
  if (!(await assertHostFree(trx, label, projectId, message))) {
    await trx.insertInto('project_hosts').values({ label, project_id: projectId }).execute();
  }
}
