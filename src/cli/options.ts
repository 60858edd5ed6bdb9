// Option parsers shared by the subcommands: they turn bad values into one readable usage error.
import { isIP } from 'node:net';
import { InvalidArgumentError } from 'commander';
import { UsageError } from './io.js';
import { isHostname } from '../shared/dns-label.js';

export function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 0 || port > 65535) {
    throw new InvalidArgumentError('must be a port number from 0 to 65535');
  }
  return port;
}

export function parseDomain(value: string): string {
  const domain = value.trim().toLowerCase().replace(/\.$/, '');
  if (!isHostname(domain)) {
    throw new InvalidArgumentError('must be a domain name such as localhost or apps.example.com');
  }
  return domain;
}

export function parseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError('must be a URL such as https://github.com');
  }
  if (!['http:', 'https:', 'file:', 'ssh:', 'git:'].includes(url.protocol)) {
    throw new InvalidArgumentError('must be an http(s), ssh, git or file URL');
  }
  return value.replace(/\/+$/, '');
}

/**
 * A PostgreSQL database URL (postgres:// or postgresql://, with a host and a database name). Refused as
 * a UsageError rather than commander's InvalidArgumentError, whose message quotes the value: a URL
 * holds the database's password.
 */
export function parseDatabaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError('a database URL must look like postgres://wharf:password@127.0.0.1:5432/wharf');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new UsageError('a database URL must be a postgres:// URL (SQLite, the default, needs no option)');
  }
  if (url.hostname === '' || url.pathname.replace(/^\//, '') === '') {
    throw new UsageError(
      'a database URL must name a host and a database: postgres://user:password@host:5432/database',
    );
  }
  return value;
}

export function parsePositiveSeconds(value: string): number {
  const seconds = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || seconds <= 0 || seconds > 3600) {
    throw new InvalidArgumentError('must be a number of seconds from 1 to 3600');
  }
  return seconds;
}

/** `host`, `host:port` or `[v6]:port` of a DNS server, as node:dns `setServers` takes it. */
export function parseDnsServer(value: string, previous: string[] = []): string[] {
  const match = /^(?:\[([0-9a-f:.]+)\]|([0-9.]+|[0-9a-f:]+))(?::(\d{1,5}))?$/i.exec(value.trim());
  const host = match?.[1] ?? match?.[2];
  const port = match?.[3] === undefined ? null : Number(match[3]);
  if (!host || isIP(host) === 0 || (port !== null && (port < 1 || port > 65535))) {
    throw new InvalidArgumentError('must be a DNS server address such as 127.0.0.1:5353 or 1.1.1.1');
  }
  return [...previous, value.trim()];
}

export function parseCount(max: number): (value: string) => number {
  return (value) => {
    const count = Number(value);
    if (!/^\d+$/.test(value) || count < 1 || count > max) {
      throw new InvalidArgumentError(`must be a whole number from 1 to ${max}`);
    }
    return count;
  };
}

/** A number from 0 (meaning none) to `max`, decimals allowed when `decimals` (e.g. CPU cores). */
export function parseCeiling(max: number, decimals = false): (value: string) => number {
  return (value) => {
    const amount = Number(value);
    const pattern = decimals ? /^\d+(\.\d+)?$/ : /^\d+$/;
    if (!pattern.test(value) || amount > max) {
      throw new InvalidArgumentError(
        `must be a ${decimals ? 'number' : 'whole number'} from 0 (no limit) to ${max}`,
      );
    }
    return amount;
  };
}

/** An address of the form local@domain, as MAIL FROM takes it. */
export function parseMailbox(value: string): string {
  const address = value.trim();
  if (address.length > 254 || !/^[^\s@<>]+@[a-z0-9.-]+$/i.test(address)) {
    throw new InvalidArgumentError('must be an email address such as verify@example.com');
  }
  return address;
}

/** An https URL (http only to a loopback address, e.g. a local test CA). */
export function parseHttpsUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError(
      'must be a URL such as https://acme-staging-v02.api.letsencrypt.org/directory',
    );
  }
  const loopback = url.hostname === 'localhost' || url.hostname === '127.0.0.1' || url.hostname === '[::1]';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw new InvalidArgumentError('must be an https URL');
  }
  return value;
}

/** `host:port` (or `[v6]:port`) to listen on; port 0 picks a free one. */
export function parseListen(value: string): string {
  const match = /^(?:\[([0-9a-f:.]+)\]|([^:\s]+)):(\d{1,5})$/i.exec(value.trim());
  const port = match ? Number(match[3]) : -1;
  if (!match || port > 65535) {
    throw new InvalidArgumentError('must be host:port, such as 0.0.0.0:53 or [::]:5353');
  }
  return value.trim();
}
