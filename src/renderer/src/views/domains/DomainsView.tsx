// Custom domains: the form to add one, the two DNS records to create for the one just added (the CNAME
// and the TXT proof of ownership, with Verify), and every domain of the account with its status,
// project (changeable) and times.
import { useEffect } from 'react';
import { CloseButton } from '../../components/CloseButton';
import { Icon } from '../../components/Icon';
import { LoadFailed } from '../../components/Notice';
import {
  useCreatedDomain,
  useDomainActions,
  useDomainList,
  useVerification,
} from '../../stores/domains/selectors';
import { AddDomainForm } from './AddDomainForm';
import { DnsRecordTable, VerificationResult, onThisMachine, recordsFor } from './DnsRecord';
import { DomainRow, VerifyButton } from './DomainRow';
import { Card, CardHeader } from '../../components/Card';

const PENDING_REFRESH_MS = 30_000;

export function DomainsView() {
  const { domains, loading, error } = useDomainList();
  const { load } = useDomainActions();
  const created = useCreatedDomain();

  useEffect(() => {
    void load();
  }, [load]);

  // The platform re-checks pending domains in the background: while some are pending, look again now
  // and then, so one that became verified shows it.
  const pending = domains?.some((domain) => !domain.verified) ?? false;
  useEffect(() => {
    if (!pending) return;
    const timer = setInterval(() => void load(), PENDING_REFRESH_MS);
    return () => clearInterval(timer);
  }, [pending, load]);

  return (
    <div className="page" data-testid="domains-page">
      <header className="page-header">
        <div className="title-block">
          <h1 className="page-title">Domains</h1>
          <p className="page-subtitle">Serve your projects at domain names you own.</p>
        </div>
        <button type="button" className="btn" onClick={() => void load()} disabled={loading}>
          <Icon name="refresh" className={loading ? 'spin' : undefined} />
          Refresh
        </button>
      </header>

      <div className="stack">
        <AddDomainForm />

        {created ? <CreatedInstructions /> : null}

        {error && !domains ? (
          <LoadFailed
            error={error}
            title="The domains could not be loaded"
            testId="domains-error"
            onRetry={() => void load()}
            retrying={loading}
          />
        ) : null}

        {!domains && !error ? (
          <div className="domain-list" aria-busy="true" aria-label="Loading domains">
            {[0, 1].map((i) => (
              <div key={i} className="project-row skeleton-row" />
            ))}
          </div>
        ) : null}

        {domains && domains.length === 0 ? (
          <div className="empty-state" data-testid="domains-empty">
            <span className="empty-icon" aria-hidden="true">
              <Icon name="globe" size={22} />
            </span>
            <h2>No custom domains yet</h2>
            <p>
              A custom domain lets people reach a project at a name you own, such as app.example.com, instead
              of its address on the platform. Add the domain above, create the two records we show you at your
              DNS provider (a CNAME that points it at Wharf, a TXT record that proves it is yours), then
              verify it: once verified, its requests reach the project.
            </p>
          </div>
        ) : null}

        {domains && domains.length > 0 ? (
          <section aria-labelledby="domain-list-title">
            <h2 className="section-heading" id="domain-list-title">
              Your domains
            </h2>
            <ul className="domain-list" data-testid="domain-list">
              {domains.map((domain) => (
                <DomainRow key={domain.id} domain={domain} showDetails={created?.domain.id !== domain.id} />
              ))}
            </ul>
          </section>
        ) : null}
      </div>
    </div>
  );
}

/** The records to create for the domain just added, with Verify next to them. */
function CreatedInstructions() {
  const created = useCreatedDomain();
  const { domains } = useDomainList();
  const { dismissCreated } = useDomainActions();
  const id = created?.domain.id ?? '';
  const { result, error } = useVerification(id);
  if (!created) return null;
  const domain = domains?.find((d) => d.id === id) ?? created.domain;
  return (
    <Card titleId="instructions-title" testId="domain-instructions">
      <CardHeader
        title={<>Point {domain.domain} at Wharf</>}
        actions={<CloseButton label="Close the DNS instructions" title="Close" onClick={dismissCreated} />}
      >
        At your DNS provider, create both records: the CNAME sends its traffic to Wharf, the TXT proves the
        domain is yours. Changes can take from a minute to an hour to be visible.
      </CardHeader>
      <div className="card-body stack">
        {onThisMachine(domain.cname_target) ? (
          <p className="notice notice-warning" data-testid="local-cname-note">
            <span>
              {domain.cname_target} is this machine&apos;s own name: this platform runs locally, so no DNS
              provider can point {domain.domain} at it. Serving a real domain takes a platform on a public
              server (<code>wharf platform --base-domain</code> with your domain), whose CNAME target DNS
              providers can reach.
            </span>
          </p>
        ) : null}
        <DnsRecordTable records={recordsFor(domain)} testId="dns-record" checked={result} />
        <div className="button-row">
          <VerifyButton domain={domain} primary />
        </div>
        <VerificationResult result={result} error={error} showsRecords />
      </div>
    </Card>
  );
}
