// A project's status as a coloured pill; `building` pulses.
import type { ProjectStatus } from '../../../shared/api/projects.js';

const LABELS: Record<ProjectStatus, string> = {
  created: 'Created',
  building: 'Building',
  running: 'Running',
  failed: 'Failed',
  stopped: 'Stopped',
};

export function StatusBadge({ status }: { status: ProjectStatus }) {
  return (
    <span className="badge" data-status={status} data-testid="status-badge" title={`Status: ${status}`}>
      <span className="badge-dot" aria-hidden="true" />
      {LABELS[status] ?? status}
    </span>
  );
}
