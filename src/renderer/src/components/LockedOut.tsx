// The full-page message when the page cannot talk to the Wharf app: opened without its token, or with
// a token the app no longer accepts.
import { BrandMark } from './Icon';

export function LockedOut({ reason }: { reason: 'no-token' | 'refused' }) {
  return (
    <main className="locked-out" data-testid="auth-required">
      <div className="locked-out-card">
        <BrandMark large />
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
