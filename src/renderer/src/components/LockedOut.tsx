// The full-page message when the page cannot talk to the Wharf app: opened without its token, or with
// a token the app no longer accepts.
export function LockedOut({ reason }: { reason: 'no-token' | 'refused' }) {
  return (
    <main className="locked-out" data-testid="auth-required">
      <div className="locked-out-card">
        <span className="brand-mark brand-mark-large" aria-hidden="true">
          <svg viewBox="0 0 24 24" width="26" height="26">
            <path
              d="M3 15h18l-2.5 5h-13L3 15Zm3-3V6h5v6m2 0V3h5v9"
              fill="none"
              stroke="currentColor"
              strokeWidth="2"
              strokeLinejoin="round"
            />
          </svg>
        </span>
        <h1>{reason === 'no-token' ? 'Open Wharf from its link' : 'This link has expired'}</h1>
        <p>
          {reason === 'no-token'
            ? 'This page must be opened from the URL printed by '
            : 'The Wharf app refused this page’s access token; it was probably restarted. Open the page again from the new URL printed by '}
          <code>wharf app</code>. That URL carries an access token, new at every launch, that keeps other web
          pages out.
        </p>
        <pre className="locked-out-example">
          <code>$ wharf app{'\n'}Wharf app: http://127.0.0.1:4040/#token=…</code>
        </pre>
      </div>
    </main>
  );
}
