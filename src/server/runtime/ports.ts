// Who holds a TCP port. Apps of the process and sandbox runtimes share the machine's network, so a
// port that accepts connections proves nothing by itself: another tenant's app (or the platform's own
// edge) may be the one listening. Before the edge sends a project's traffic to a port, the runtime
// checks that the listening socket belongs to a process of that project's own process group, read
// from /proc (Linux). Elsewhere (a desktop app's embedded platform on macOS) the check cannot be made
// and a listening port is taken on trust: one person's machine.
import { existsSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';

const TCP_LISTEN = '0A';

/** Whether this machine lets us see which process holds a socket. */
export function canCheckPortOwners(): boolean {
  return existsSync('/proc/net/tcp') && existsSync('/proc/self/fd');
}

/** The inodes of the sockets listening on `port` (any address, IPv4 or IPv6). */
export function listeningSockets(port: number): Set<string> {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const row of text.split('\n').slice(1)) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      const fields = row.trim().split(/\s+/);
      if (fields.length < 10) continue;
      const local = fields[1]!;
      if (fields[3] === TCP_LISTEN && local.slice(local.lastIndexOf(':') + 1) === hexPort) {
        inodes.add(fields[9]!);
      }
    }
  }
  return inodes;
}

/** The pids of the live processes whose process group is `pgid`. */
export function groupMembers(pgid: number): number[] {
  const members: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return members;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // `pid (comm) state ppid pgrp …`, where comm may hold spaces and parentheses.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z') members.push(Number(entry));
  }
  return members;
}

/** Whether a process of the group `pgid` holds a socket listening on `port`. */
export function groupHoldsPort(pgid: number, port: number): boolean {
  const sockets = listeningSockets(port);
  if (sockets.size === 0) return false;
  for (const pid of groupMembers(pgid)) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        if (target.startsWith('socket:[') && sockets.has(target.slice(8, -1))) return true;
      } catch {
        // closed meanwhile
      }
    }
  }
  return false;
}

/**
 * Whether nothing listens on 127.0.0.1:`port` (nor on every address) right now. A port this process
 * may not bind (below 1024 without privileges) is not known to be taken, so it counts as free.
 */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => resolve(error.code !== 'EADDRINUSE'));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
