// One custom domain in the list: its name, status, linked project (changed in place, no new
// verification) and times; Verify, with the answer shown under the row; the records still to create
// while it is pending; removal behind a confirmation.
import { useState } from 'react';
import type { Domain } from '../../../../shared/api/domains.js';
import type { BridgeErrorShape } from '../../../../shared/bridge.js';
import { ConfirmDanger } from '../../components/Dialog';
import { Icon } from '../../components/Icon';
import { ErrorNotice } from '../../components/Notice';
import { formatAgo, formatDate, formatDateTime } from '../../lib/format';
import { routeHref } from '../../stores/navigation/store';
import { useDomainActions, useLinking, useVerification } from '../../stores/domains/selectors';
import { useProject, useProjectList } from '../../stores/projects/selectors';
import { DnsRecordTable, VerificationResult, recordsFor } from './DnsRecord';

export function DomainBadge({ verified }: { verified: boolean }) {
  return (
    <span
      className="badge"
      data-status={verified ? 'verified' : 'pending'}
      data-testid="domain-status"
      title={
        verified
          ? 'Its TXT record proves it is yours and its CNAME points at the platform'
          : 'Waiting for its TXT and CNAME records'
      }
    >
      <span className="badge-dot" aria-hidden="true" />
      {verified ? 'Verified' : 'Pending'}
    </span>
  );
}

/** The certificate HTTPS serves the domain with; nothing on a platform that serves no HTTPS. */
export function CertificateBadge({ domain }: { domain: Domain }) {
  const certificate = domain.certificate;
  if (certificate === null) return null;
  const until = certificate.not_after ? formatDateTime(certificate.not_after) : null;
  const [status, label, title] =
    certificate.status === 'issued'
      ? ['verified', 'HTTPS', `Its certificate is valid until ${until}; it is renewed 30 days before`]
      : certificate.status === 'pending'
        ? ['pending', 'Certificate pending', 'The certificate authority is checking the domain']
        : certificate.status === 'failed'
          ? [
              'failed',
              until ? 'HTTPS (renewal failed)' : 'No certificate',
              `${until ? `The current certificate is valid until ${until}. ` : ''}The last order failed: ${certificate.error ?? 'no reason given'}`,
            ]
          : ['pending', 'No certificate yet', 'A certificate is ordered once the domain is verified'];
  return (
    <span className="badge" data-status={status} data-testid="domain-certificate" title={title}>
      <Icon name={status === 'verified' ? 'lock' : 'unlock'} />
      {certificate.status === 'issued' && certificate.not_after
        ? `${label} until ${formatDate(certificate.not_after)}`
        : label}
    </span>
  );
}

/** Strict-Transport-Security for the domain: browsers then refuse plain HTTP for it for a year. */
function HstsSwitch({
  domain,
  onError,
}: {
  domain: Domain;
  onError: (error: BridgeErrorShape | null) => void;
}) {
  const { setHsts } = useDomainActions();
  const busy = useLinking(domain.id);
  if (domain.certificate === null || !domain.verified) return null;
  const toggle = async (on: boolean) => {
    onError(null);
    const outcome = await setHsts(domain.id, on);
    if (!outcome.ok) onError(outcome.error);
  };
  return (
    <label
      className="check domain-hsts"
      title="HSTS: browsers that have seen it refuse plain HTTP for this domain for a year. Turn it on once HTTPS works."
    >
      <input
        type="checkbox"
        checked={domain.hsts}
        disabled={busy}
        onChange={(event) => void toggle(event.target.checked)}
        data-testid="domain-hsts"
      />
      HSTS
    </label>
  );
}

export function VerifyButton({ domain, primary = false }: { domain: Domain; primary?: boolean }) {
  const { verify } = useDomainActions();
  const { pending } = useVerification(domain.id);
  return (
    <button
      type="button"
      className={`btn btn-sm${primary ? ' btn-primary' : ''}`}
      onClick={() => void verify(domain.id)}
      disabled={pending}
      aria-label={`${domain.verified ? 'Check again' : 'Verify'} ${domain.domain}`}
      data-testid="verify-domain"
    >
      <Icon name={pending ? 'spinner' : 'refresh'} className={pending ? 'spin' : undefined} />
      {pending ? 'Checking…' : domain.verified ? 'Check again' : 'Verify'}
    </button>
  );
}

export function DomainRow({ domain, showDetails }: { domain: Domain; showDetails: boolean }) {
  const project = useProject(domain.project_id ?? '');
  const { result, error } = useVerification(domain.id);
  const [confirming, setConfirming] = useState(false);
  const [linkError, setLinkError] = useState<BridgeErrorShape | null>(null);

  return (
    <li
      className="domain-row"
      data-testid={`domain-row-${domain.domain}`}
      data-verified={domain.verified}
      data-https={domain.certificate !== null}
      aria-label={domain.domain}
    >
      <div className="domain-summary">
        <div className="domain-main">
          <span className="domain-name mono">{domain.domain}</span>
          <span className="domain-project muted" data-testid="domain-project-name">
            {domain.project_id === null ? (
              'No project linked'
            ) : project ? (
              <>
                Routes to{' '}
                <a href={routeHref({ screen: 'project', id: project.id })} className="domain-project-link">
                  {project.name}
                </a>
              </>
            ) : (
              <>
                Routes to <span className="mono">{domain.project_id}</span>
              </>
            )}
          </span>
        </div>
        <div className="domain-badges">
          <DomainBadge verified={domain.verified} />
          <CertificateBadge domain={domain} />
        </div>
        <div className="domain-times muted">
          <span title={formatDateTime(domain.created_at)}>Added {formatAgo(domain.created_at)}</span>
          <span title={domain.verified_at ? formatDateTime(domain.verified_at) : undefined}>
            {domain.verified_at ? `Verified ${formatAgo(domain.verified_at)}` : 'Not verified yet'}
          </span>
        </div>
        <div className="button-row domain-actions">
          <HstsSwitch domain={domain} onError={setLinkError} />
          <ProjectPicker domain={domain} onError={setLinkError} />
          <VerifyButton domain={domain} />
          <button
            type="button"
            className="icon-button"
            onClick={() => setConfirming(true)}
            aria-label={`Remove ${domain.domain}`}
            title="Remove domain"
            data-testid="delete-domain"
          >
            <Icon name="trash" />
          </button>
        </div>
      </div>
      {linkError ? (
        <div className="domain-details">
          <ErrorNotice error={linkError} title="The domain was not changed" testId="link-error" />
        </div>
      ) : null}
      {domain.certificate?.status === 'failed' && domain.certificate.error ? (
        <div className="domain-details">
          <p className="notice notice-warning" data-testid="certificate-error">
            The certificate could not be {domain.certificate.not_after ? 'renewed' : 'issued'}:{' '}
            {domain.certificate.error}. It is tried again with back-off
            {domain.certificate.not_after ? '; the current one keeps serving' : ''}.
          </p>
        </div>
      ) : null}
      {showDetails && (!domain.verified || result || error) ? (
        <div className="domain-details stack">
          {!domain.verified ? (
            <div className="domain-record">
              <p className="muted">Create these records at your DNS provider, then verify:</p>
              <DnsRecordTable records={recordsFor(domain)} testId="row-dns-record" checked={result} />
            </div>
          ) : null}
          <VerificationResult result={result} error={error} showsRecords={!domain.verified} />
        </div>
      ) : null}
      {confirming ? <ConfirmRemove domain={domain} onClose={() => setConfirming(false)} /> : null}
    </li>
  );
}

/** The project the domain routes to, changed in place: a verified domain stays verified. */
function ProjectPicker({
  domain,
  onError,
}: {
  domain: Domain;
  onError: (error: BridgeErrorShape | null) => void;
}) {
  const { link } = useDomainActions();
  const linking = useLinking(domain.id);
  const { list } = useProjectList();
  const projects = list?.projects ?? [];
  const linked = domain.project_id ?? '';
  const known = linked === '' || projects.some((project) => project.id === linked);

  const change = async (value: string) => {
    onError(null);
    const outcome = await link(domain.id, value === '' ? null : value);
    if (!outcome.ok) onError(outcome.error);
  };

  return (
    <select
      className="input domain-link"
      value={linked}
      disabled={linking}
      aria-label={`Project for ${domain.domain}`}
      aria-busy={linking || undefined}
      onChange={(event) => void change(event.target.value)}
      data-testid="domain-link-project"
    >
      <option value="">No project</option>
      {known ? null : <option value={linked}>{linked}</option>}
      {projects.map((project) => (
        <option key={project.id} value={project.id}>
          {project.name}
        </option>
      ))}
    </select>
  );
}

function ConfirmRemove({ domain, onClose }: { domain: Domain; onClose: () => void }) {
  const { remove } = useDomainActions();
  return (
    <ConfirmDanger
      title={`Remove ${domain.domain}?`}
      description={
        <p>
          {domain.verified
            ? 'Requests to this domain stop reaching its project. '
            : 'The domain is forgotten before it was verified. '}
          You can add it again later; remember to remove its CNAME and TXT records at your DNS provider if you
          no longer need them.
        </p>
      }
      onClose={onClose}
      testId="delete-domain-dialog"
      label="Remove domain"
      busyLabel="Removing…"
      confirmTestId="confirm-delete-domain"
      failedTitle="The domain was not removed"
      onConfirm={async () => {
        const outcome = await remove(domain.id);
        if (!outcome.ok && outcome.error.code !== 'not_found') return outcome.error;
        onClose();
        return null;
      }}
    />
  );
}
