// A refused check (no balance left, the daily cap reached, the platform offline…) in words, with what
// to do about it and, where it helps, a way to Settings.
import type { BridgeErrorShape } from '../../../../shared/bridge.js';
import { ErrorNotice } from '../../components/Notice';
import { routeHref } from '../../stores/navigation/store';

/** What a refusal of a check means for the user, with where to go when there is somewhere. */
export function CheckError({ error, title }: { error: BridgeErrorShape; title: string }) {
  const hint =
    error.code === 'insufficient_balance'
      ? 'Checks that reach a verdict cost credits: top up your balance, or wait for the monthly allowance to reset.'
      : error.code === 'daily_cap_reached'
        ? 'The daily cap protects against runaway scripts; it resets at midnight UTC.'
        : null;
  return (
    <ErrorNotice
      error={hint ? { ...error, detail: `${error.detail.replace(/\.?$/, '.')} ${hint}` } : error}
      title={title}
      testId="email-error"
      action={
        error.code === 'not_configured' || error.code === 'unauthorized' || error.code === 'forbidden' ? (
          <a className="btn btn-sm" href={routeHref({ screen: 'settings' })}>
            Open Settings
          </a>
        ) : undefined
      }
    />
  );
}
