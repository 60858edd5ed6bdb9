// The DNS record a custom domain needs (type, name, target), each value with its copy button, and what
// the last verification found.
import type { DnsInstructions, Domain, DomainVerification } from '../../../../shared/api/domains.js';
import type { z } from 'zod';
import { CopyButton } from '../../components/CopyButton';
import { Icon } from '../../components/Icon';
import { ErrorNotice } from '../../components/Notice';
import type { BridgeErrorShape } from '../../../../shared/bridge.js';
import { formatWhen } from '../../lib/format';

export type Instructions = z.infer<typeof DnsInstructions>;

/** What to create for a domain: the instructions the platform gave at creation, else the same record. */
export function instructionsFor(domain: Domain, given?: Instructions | null): Instructions {
  return given ?? { type: 'CNAME', name: domain.domain, target: domain.cname_target };
}

export function DnsRecordTable({ record, testId }: { record: Instructions; testId?: string }) {
  const rows: Array<{ label: string; value: string; key: string }> = [
    { label: 'Type', value: record.type, key: 'type' },
    { label: 'Name', value: record.name, key: 'name' },
    { label: 'Target', value: record.target, key: 'target' },
  ];
  return (
    <table className="dns-record" data-testid={testId}>
      <caption className="sr-only">DNS record to create</caption>
      <tbody>
        {rows.map((row) => (
          <tr key={row.key}>
            <th scope="row">{row.label}</th>
            <td>
              <span className="mono" data-testid={testId ? `${testId}-${row.key}` : undefined}>
                {row.value}
              </span>
            </td>
            <td className="dns-record-copy">
              <CopyButton
                text={row.value}
                iconOnly
                ariaLabel={`Copy ${row.label.toLowerCase()} ${row.value}`}
                className="icon-button"
              />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The answer of the last `Verify`: verified, or what was found instead and why it is not enough. */
export function VerificationResult({
  result,
  error,
}: {
  result: DomainVerification | null;
  error: BridgeErrorShape | null;
}) {
  if (error)
    return <ErrorNotice error={error} title="The domain could not be checked" testId="verify-error" />;
  if (!result) return null;
  return (
    <div
      className={`notice ${result.verified ? 'notice-success' : 'notice-warning'}`}
      role="status"
      data-testid="verify-result"
      data-verified={result.verified}
    >
      <Icon name={result.verified ? 'check' : 'alert'} className="notice-icon" />
      <div className="notice-body">
        <p className="notice-title">
          {result.verified
            ? `${result.domain} is verified`
            : `${result.domain} does not point at ${result.cname_target} yet`}
        </p>
        <p data-testid="verify-detail">{sentence(result.detail)}</p>
        <p className="verify-found">
          {result.found.length === 0 ? (
            'No CNAME, A or AAAA records were found.'
          ) : (
            <>
              Found:{' '}
              {result.found.map((record, i) => (
                <span key={`${record}-${i}`}>
                  {i > 0 ? ', ' : null}
                  <span className="mono">{record}</span>
                </span>
              ))}
            </>
          )}
        </p>
        <p className="muted">
          Checked at {formatWhen(result.checked_at)}.
          {result.verified
            ? null
            : ' DNS changes can take a while to be visible: check again in a few minutes.'}
        </p>
      </div>
    </div>
  );
}

function sentence(text: string): string {
  const trimmed = text.trim();
  if (!trimmed) return trimmed;
  const capital = /^[a-z]/.test(trimmed) ? trimmed[0]!.toUpperCase() + trimmed.slice(1) : trimmed;
  return /[.!?]$/.test(capital) ? capital : `${capital}.`;
}
