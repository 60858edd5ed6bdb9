// HAProxy's own view of the front, for tests: what its current worker sent where, read through the
// master CLI in the front's folder.
import { connect } from 'node:net';
import { join } from 'node:path';

/** One line to HAProxy's master CLI in `dir`, and its whole answer. */
function masterCli(dir: string, line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(join(dir, 'master.sock'));
    let answer = '';
    socket.setTimeout(5_000, () => socket.destroy(new Error(`no answer to ${line}`)));
    socket.on('data', (d: Buffer) => (answer += d.toString()));
    socket.once('error', reject);
    socket.once('close', () => resolve(answer));
    socket.end(`${line}\n`);
  });
}

/**
 * Sessions HAProxy's current worker has sent to each server address so far (`stot`). Rejects while
 * the master CLI answers no stats (a reload under way): the caller asks again.
 */
export async function sentTo(dir: string): Promise<Map<string, number>> {
  const csv = await masterCli(dir, '@1 show stat');
  const lines = csv.split('\n').filter(Boolean);
  if (!lines[0]?.startsWith('# '))
    throw new Error(`no stats from HAProxy's master CLI: ${csv.slice(0, 200)}`);
  const columns = lines[0].slice(2).split(',');
  const [addr, stot, svname] = [columns.indexOf('addr'), columns.indexOf('stot'), columns.indexOf('svname')];
  const sent = new Map<string, number>();
  for (const line of lines.slice(1)) {
    const fields = line.split(',');
    if (fields[svname] === 'FRONTEND' || fields[svname] === 'BACKEND') continue;
    sent.set(fields[addr]!, (sent.get(fields[addr]!) ?? 0) + Number(fields[stot]));
  }
  return sent;
}
