// The two DNS records a custom domain needs (the CNAME that points it at the platform, the TXT that
// proves it is the account's), each name and value with its copy button, and what the last check found.
import type { Domain, DomainVerification, RecordCheck } from '../../../../shared/api/domains.js';
import type { BridgeErrorShape } from '../../../../shared/bridge.js';
import { CopyButton } from '../../components/CopyButton';
import { Icon } from '../../components/Icon';
import { ErrorNotice } from '../../components/Notice';
import { formatWhen } from '../../lib/format';

export interface DnsRecordRow {
  type: 'CNAME' | 'TXT';
  name: string;
  value: string;
  purpose: string;
}

/** A target under `.localhost` (the local platform's own names), which only this machine resolves. */
export function onThisMachine(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost');
}

/** What to create for a domain: the CNAME to the platform, and the TXT that proves it is the account's. */
export function recordsFor(domain: Domain): DnsRecordRow[] {
  return [
    {
      type: 'CNAME',
      name: domain.domain,
      value: domain.cname_target,
      purpose:
        'Sends the traffic to Wharf. At the apex of a zone, where a CNAME is not allowed, use A/AAAA records equal to those of the target.',
    },
    {
      type: 'TXT',
      name: domain.verification.name,
      value: domain.verification.value,
      purpose: 'Proves the domain is yours: no other account can take it once verified.',
    },
  ];
}

export function DnsRecordTable({
  records,
  testId,
  checked,
}: {
  records: DnsRecordRow[];
  testId?: string;
  /** The last check's word on each record: a column of its own, so the answer sits next to the record. */
  checked?: DomainVerification | null;
}) {
  const id = (record: DnsRecordRow, part: string) =>
    testId ? `${testId}-${record.type.toLowerCase()}-${part}` : undefined;
  const checks = checked?.records;
  return (
    <table className="dns-record" data-testid={testId}>
      <caption className="sr-only">DNS records to create</caption>
      <thead>
        <tr>
          <th scope="col">Type</th>
          <th scope="col">Name</th>
          <th scope="col">Value</th>
          {checks ? <th scope="col">Last check</th> : null}
        </tr>
      </thead>
      <tbody>
        {records.map((record) => (
          <tr key={record.type} title={record.purpose}>
            <th scope="row">
              <span className="mono" data-testid={id(record, 'type')}>
                {record.type}
              </span>
            </th>
            {(['name', 'value'] as const).map((part) => (
              <td key={part}>
                <span className="dns-record-cell">
                  <span className="mono dns-record-value" data-testid={id(record, part)}>
                    {record[part]}
                  </span>
                  <CopyButton
                    text={record[part]}
                    iconOnly
                    ariaLabel={`Copy ${record.type} ${part} ${record[part]}`}
                    className="icon-button"
                  />
                </span>
              </td>
            ))}
            {checks ? (
              <RecordStatus
                check={record.type === 'TXT' ? checks.txt : checks.cname}
                testId={id(record, 'check')}
              />
            ) : null}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function RecordStatus({ check, testId }: { check: RecordCheck; testId: string | undefined }) {
  return (
    <td
      className={`dns-record-check ${check.ok ? 'is-ok' : 'is-missing'}`}
      data-testid={testId}
      data-ok={check.ok}
    >
      <span className="dns-record-cell">
        <Icon name={check.ok ? 'check' : 'alert'} size={14} />
        <span>{capitalizeFirst(check.seen)}</span>
      </span>
    </td>
  );
}

function capitalizeFirst(text: string): string {
  return text ? text[0]!.toUpperCase() + text.slice(1) : text;
}

/**
 * The answer of the last `Verify`: verified, or not yet and when it was checked. What each record came to
 * is in the records' table (`checked`); the platform's full sentence only when it says more than that
 * (an older platform without per-record answers, or a name another account has verified).
 */
export function VerificationResult({
  result,
  error,
  showsRecords = false,
}: {
  result: DomainVerification | null;
  error: BridgeErrorShape | null;
  /** The records' table above shows each record's check (see DnsRecordTable's `checked`). */
  showsRecords?: boolean;
}) {
  if (error)
    return <ErrorNotice error={error} title="The domain could not be checked" testId="verify-error" />;
  if (!result) return null;
  const perRecord = showsRecords && result.records !== undefined;
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
          {result.verified ? `${result.domain} is verified` : `${result.domain} is not verified yet`}
        </p>
        {perRecord ? null : <p data-testid="verify-detail">{sentence(result.detail)}</p>}
        {perRecord ? null : (
          <div className="verify-found" data-testid="verify-found">
            {result.found.length === 0 ? (
              <p>No TXT, CNAME, A or AAAA records were found.</p>
            ) : (
              <>
                <p>The check found:</p>
                <ul className="verify-found-list">
                  {result.found.map((record, i) => (
                    <li key={`${record}-${i}`} className="mono">
                      {record}
                    </li>
                  ))}
                </ul>
              </>
            )}
          </div>
        )}
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
