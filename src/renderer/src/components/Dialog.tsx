// A modal dialog on the native <dialog> (showModal makes the rest of the page inert). Tab and Shift+Tab
// wrap inside it, Escape and a click on the backdrop close it, and focus returns to where it was.
// Render it only while open: mounting opens it, unmounting closes it. ConfirmDanger is the "delete
// this?" dialog built on it.
import { useEffect, useId, useRef, useState, type KeyboardEvent, type ReactNode } from 'react';
import type { BridgeErrorShape } from '../../../shared/bridge.js';
import { ErrorNotice } from './Notice';

const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

interface DialogProps {
  title: ReactNode;
  description?: ReactNode;
  onClose: () => void;
  children?: ReactNode;
  footer: ReactNode;
  testId?: string;
  /** Submitting the dialog's form; Enter in an input triggers it. */
  onSubmit?: () => void;
}

export function Dialog({ title, description, onClose, children, footer, testId, onSubmit }: DialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const onCloseRef = useRef(onClose);
  onCloseRef.current = onClose;
  const titleId = useId();
  const descriptionId = useId();

  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    const returnTo = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    if (!dialog.open) dialog.showModal();
    const closed = () => onCloseRef.current();
    dialog.addEventListener('close', closed);
    return () => {
      dialog.removeEventListener('close', closed);
      if (dialog.open) dialog.close();
      returnTo?.focus();
    };
  }, []);

  const trapTab = (event: KeyboardEvent<HTMLDialogElement>) => {
    if (event.key !== 'Tab' || !ref.current) return;
    const focusable = [...ref.current.querySelectorAll<HTMLElement>(FOCUSABLE)].filter(
      (element) => element.offsetParent !== null,
    );
    const first = focusable[0];
    const last = focusable[focusable.length - 1];
    if (!first || !last) return;
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  };

  return (
    <dialog
      ref={ref}
      className="dialog"
      aria-labelledby={titleId}
      aria-describedby={description ? descriptionId : undefined}
      data-testid={testId}
      onKeyDown={trapTab}
      onClick={(event) => {
        // A click on the dialog element itself (not its content) is a click on the backdrop.
        if (event.target === ref.current) onClose();
      }}
    >
      <form
        className="dialog-content"
        method="dialog"
        onSubmit={(event) => {
          event.preventDefault();
          onSubmit?.();
        }}
      >
        <h2 className="dialog-title" id={titleId}>
          {title}
        </h2>
        {description ? (
          <div className="dialog-description" id={descriptionId}>
            {description}
          </div>
        ) : null}
        {children}
        <div className="dialog-footer">{footer}</div>
      </form>
    </dialog>
  );
}

interface DangerFooterProps {
  onCancel: () => void;
  /** The action, e.g. "Delete key"; while busy, `busyLabel` ("Deleting…"). */
  label: string;
  busyLabel: string;
  busy: boolean;
  /** Disabled for another reason than being busy (a confirmation not typed yet). */
  disabled?: boolean;
  testId: string;
}

/** Cancel and a destructive submit button: the footer of every "delete this?" dialog. */
export function DangerFooter({
  onCancel,
  label,
  busyLabel,
  busy,
  disabled = false,
  testId,
}: DangerFooterProps) {
  return (
    <>
      <button type="button" className="btn" onClick={onCancel}>
        Cancel
      </button>
      <button type="submit" className="btn btn-danger" disabled={disabled || busy} data-testid={testId}>
        {busy ? busyLabel : label}
      </button>
    </>
  );
}

interface ConfirmDangerProps {
  title: ReactNode;
  description: ReactNode;
  onClose: () => void;
  testId: string;
  /** The action, e.g. "Delete key"; while it runs, `busyLabel` ("Deleting…"). */
  label: string;
  busyLabel: string;
  confirmTestId: string;
  /** The title of the error shown when the action fails, e.g. "The key was not deleted". */
  failedTitle: string;
  /** Runs the action: null once done (the caller then closes the dialog), else why it failed. */
  onConfirm: () => Promise<BridgeErrorShape | null>;
  /** Not confirmable yet (a confirmation not typed yet). */
  disabled?: boolean;
  /** What the dialog asks for besides the confirmation, under the error if any. */
  children?: ReactNode;
}

/** A destructive action asked for again: the action runs on confirm, and stays open with why it failed. */
export function ConfirmDanger({
  title,
  description,
  onClose,
  testId,
  label,
  busyLabel,
  confirmTestId,
  failedTitle,
  onConfirm,
  disabled = false,
  children,
}: ConfirmDangerProps) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<BridgeErrorShape | null>(null);
  const confirm = async () => {
    if (disabled || busy) return;
    setBusy(true);
    setError(null);
    const failed = await onConfirm();
    if (!failed) return;
    setBusy(false);
    setError(failed);
  };
  return (
    <Dialog
      title={title}
      description={description}
      onClose={onClose}
      onSubmit={() => void confirm()}
      testId={testId}
      footer={
        <DangerFooter
          onCancel={onClose}
          label={label}
          busyLabel={busyLabel}
          busy={busy}
          disabled={disabled}
          testId={confirmTestId}
        />
      }
    >
      {error ? <ErrorNotice error={error} title={failedTitle} /> : null}
      {children}
    </Dialog>
  );
}
