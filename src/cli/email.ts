// `wharf email verify ADDRESS… [--file list.txt] [--smtp] [--json]`: checks addresses through the
// platform (API.md §6), 100 per request, and prints one row each in input order.
import { readFile } from 'node:fs/promises';
import { Command } from 'commander';
import { type EmailVerification, suggestedAddress } from '../shared/api/email.js';
import { type ConnectionOptions, withConnectionOptions, withPlatform } from './connect.js';
import { table } from './format.js';
import { UsageError, type Io } from './io.js';

/** The API's batch limit (API.md §9). */
const BATCH = 100;

interface VerifyOptions extends ConnectionOptions {
  file?: string;
  smtp: boolean;
  json: boolean;
}

/**
 * The addresses of a list file: one per line, blank lines and `#` comments skipped. A CSV line gives
 * its first field that holds an `@` (a header line without one is skipped).
 */
export function addressesOf(text: string): string[] {
  const addresses: string[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (!/[,;\t]/.test(line)) {
      addresses.push(line);
      continue;
    }
    const field = line
      .split(/[,;\t]/)
      .map((f) => f.trim().replace(/^"(.*)"$/, '$1'))
      .find((f) => f.includes('@'));
    if (field) addresses.push(field);
  }
  return addresses;
}

function row(result: EmailVerification): string[] {
  return [
    result.email,
    result.score,
    String(result.confidence),
    result.reason,
    suggestedAddress(result) ? `did you mean ${suggestedAddress(result)}?` : '',
  ];
}

export function emailCommand(io: Io): Command {
  const email = new Command('email').description(
    'verify email addresses: syntax, domain, mail server and mailbox',
  );
  email.addCommand(
    withConnectionOptions(
      new Command('verify')
        .description(
          'check addresses: syntax, disposable/role/free lists, DNS MX and optionally an SMTP probe',
        )
        .argument('[address...]', 'addresses to check')
        .option('--file <path>', 'read addresses from a file (one per line, or a CSV column)')
        .option('--smtp', 'also ask the mail server whether the mailbox exists (costs more)', false)
        .option('--json', 'print the results as the API returns them (a JSON array)', false),
    ).action(async (given: string[], options: VerifyOptions) => {
      const addresses = [...given];
      if (options.file !== undefined) {
        let text: string;
        try {
          text = await readFile(options.file, 'utf8');
        } catch (error) {
          throw new UsageError(
            `cannot read ${options.file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
          );
        }
        addresses.push(...addressesOf(text));
      }
      if (addresses.length === 0) {
        throw new UsageError('give at least one address, or a file of them with --file');
      }
      const results: EmailVerification[] = [];
      /** What stopped a long list part way (the balance or the daily cap): said after what was checked. */
      let stopped: unknown = null;
      await withPlatform(options, async ({ client }) => {
        if (addresses.length === 1) {
          results.push(await client.verifyEmail({ email: addresses[0]!, smtp_probe: options.smtp }));
          return;
        }
        for (let start = 0; start < addresses.length; start += BATCH) {
          const chunk = addresses.slice(start, start + BATCH);
          try {
            const batch = await client.verifyEmailBatch({ emails: chunk, smtp_probe: options.smtp });
            results.push(...batch.results);
          } catch (error) {
            if (results.length === 0) throw error;
            stopped = error;
            return;
          }
          if (addresses.length > BATCH) io.err(`checked ${results.length} of ${addresses.length}`);
        }
      });
      if (options.json) {
        io.out(JSON.stringify(results, null, 2));
        if (stopped !== null) throw stopped;
        return;
      }
      for (const line of table([['EMAIL', 'SCORE', 'CONFIDENCE', 'REASON', ''], ...results.map(row)]))
        io.out(line);
      const cost = results.reduce((sum, r) => sum + r.cost_usd, 0);
      const counts = new Map<string, number>();
      for (const r of results) counts.set(r.score, (counts.get(r.score) ?? 0) + 1);
      io.out(
        `${results.length} checked: ${[...counts].map(([score, n]) => `${n} ${score}`).join(', ')}; cost $${cost.toFixed(4).replace(/0{1,2}$/, '')}`,
      );
      if (stopped !== null) {
        io.err(`stopped after ${results.length} of ${addresses.length} addresses:`);
        throw stopped;
      }
    }),
  );
  return email;
}
