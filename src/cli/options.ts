// Option parsers shared by the subcommands: they turn bad values into one readable usage error.
import { InvalidArgumentError } from 'commander';

export function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 0 || port > 65535) {
    throw new InvalidArgumentError('must be a port number from 0 to 65535');
  }
  return port;
}

export function parseDomain(value: string): string {
  const domain = value.trim().toLowerCase().replace(/\.$/, '');
  if (!/^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/.test(domain)) {
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

export function parsePositiveSeconds(value: string): number {
  const seconds = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || seconds <= 0 || seconds > 3600) {
    throw new InvalidArgumentError('must be a number of seconds from 1 to 3600');
  }
  return seconds;
}
