// What the API keys card says, as plain data it only renders: a line on each scope (API.md §2), how a
// key's scopes read, and why the keys cannot be shown or changed, with what to do about it.
import { SCOPES, type Scope } from '../../../../shared/api/account.js';
import type { BridgeErrorShape } from '../../../../shared/bridge.js';

export const SCOPE_CHOICES: ReadonlyArray<{ scope: Scope; label: string; description: string }> = [
  {
    scope: 'deploy',
    label: 'Deploy',
    description: 'Projects, deploys and logs, AI builds, tunnels, domains.',
  },
  { scope: 'email', label: 'Email', description: 'Email verification only.' },
  { scope: 'full', label: 'Full', description: 'Everything, including API keys and account settings.' },
];

/** The scopes as the platform takes them: in a fixed order, `full` alone since it covers the rest. */
export function scopesToSend(chosen: ReadonlySet<Scope>): Scope[] {
  if (chosen.has('full')) return ['full'];
  return SCOPES.filter((scope) => chosen.has(scope));
}

export interface KeysProblem {
  title: string;
  detail: string;
  /** Whether asking again may help (the platform was down), as opposed to a key to change first. */
  retry: boolean;
}

const NEEDS_FULL =
  'Managing API keys needs a key with the full scope, and the key this app signs in with has fewer. Save a key with the full scope under Platform above (create it from an app or the CLI that has one), then come back here.';

/** Why the keys cannot be listed (or a key made or revoked), in words, with what to do. */
export function keysProblem(error: BridgeErrorShape): KeysProblem {
  const detail = capitalizeFirst(error.detail);
  switch (error.code) {
    case 'offline':
      return { title: 'The platform cannot be reached', detail, retry: true };
    case 'forbidden':
      return { title: 'This app’s key cannot manage API keys', detail: NEEDS_FULL, retry: false };
    case 'not_configured':
      return { title: 'No API key is saved', detail, retry: false };
    case 'unauthorized':
      return { title: 'The platform refused the API key', detail, retry: false };
    default:
      return { title: 'The API keys could not be loaded', detail, retry: true };
  }
}

function capitalizeFirst(text: string): string {
  return text ? text[0]!.toUpperCase() + text.slice(1) : text;
}
