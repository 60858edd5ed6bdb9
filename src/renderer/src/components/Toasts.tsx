// The toasts of the toasts store, stacked in the bottom-right corner. Each closes itself after a while,
// but not while the pointer or keyboard focus is on it, and has a close button; screen readers hear
// them through a polite live region.
import { useEffect, useState } from 'react';
import { routeHref } from '../stores/navigation/store';
import { TOAST_MS, useToastsStore, type Toast } from '../stores/toasts/store';
import { CloseButton } from './CloseButton';
import { Icon } from './Icon';

export function Toasts() {
  const toasts = useToastsStore((state) => state.toasts);
  return (
    <div className="toasts" role="status" aria-live="polite" aria-label="Notifications">
      {toasts.map((toast) => (
        <ToastItem key={toast.id} toast={toast} />
      ))}
    </div>
  );
}

function ToastItem({ toast }: { toast: Toast }) {
  const dismiss = useToastsStore((state) => state.dismiss);
  const [held, setHeld] = useState(false);

  useEffect(() => {
    if (held) return;
    const timer = setTimeout(() => dismiss(toast.id), TOAST_MS);
    return () => clearTimeout(timer);
  }, [held, dismiss, toast.id]);

  return (
    <div
      className={`toast toast-${toast.tone}`}
      data-testid="toast"
      data-tone={toast.tone}
      onMouseEnter={() => setHeld(true)}
      onMouseLeave={() => setHeld(false)}
      onFocus={() => setHeld(true)}
      onBlur={() => setHeld(false)}
    >
      <Icon name={toast.tone === 'success' ? 'check' : 'alert'} className="toast-icon" />
      <div className="toast-body">
        <p className="toast-message">{toast.message}</p>
        <div className="toast-links">
          {toast.url ? (
            <a href={toast.url} target="_blank" rel="noopener noreferrer" data-testid="toast-url">
              Open
            </a>
          ) : null}
          {toast.projectId ? (
            <a href={routeHref({ screen: 'project', id: toast.projectId })} onClick={() => dismiss(toast.id)}>
              {toast.tone === 'error' ? 'Show logs' : 'Show project'}
            </a>
          ) : null}
        </div>
      </div>
      <CloseButton label="Dismiss" small className="toast-close" onClick={() => dismiss(toast.id)} />
    </div>
  );
}
