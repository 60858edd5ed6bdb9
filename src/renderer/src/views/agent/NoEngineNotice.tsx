// Said up front when no AI engine can run (the platform has no included engine and no own key is
// saved): what is missing, why it matters on this screen, and "Add your AI key", which opens Settings
// at the AI key's input (scrolled to and focused). Also that link on its own, for refusals.
import { Icon } from '../../components/Icon';
import { NO_ENGINE_REASON } from '../../stores/agent/errors';
import { AI_KEY_ROUTE, routeHref } from '../../stores/navigation/store';

export function AddAiKeyLink({ testId, primary = false }: { testId?: string; primary?: boolean }) {
  return (
    <a
      className={`btn btn-sm${primary ? ' btn-primary' : ''}`}
      href={routeHref(AI_KEY_ROUTE)}
      data-testid={testId}
    >
      <Icon name="key" />
      Add your AI key
    </a>
  );
}

const WHY = {
  agent: {
    title: 'The agent needs an AI engine',
    why: 'It uses one to understand your questions and choose each step, so nothing you send here can run yet.',
  },
  build: {
    title: 'No AI engine: apps are built from our templates',
    why: 'Building still works: each kind of app comes from our own templates, filled in from your description. Changing a built app with Edit with AI needs an engine.',
  },
} as const;

export function NoEngineNotice({ where, id }: { where: 'agent' | 'build'; id?: string }) {
  const { title, why } = WHY[where];
  return (
    <div
      className="notice notice-warning no-engine-notice"
      role="note"
      id={id}
      data-testid={`${where}-no-engine`}
    >
      <Icon name="alert" className="notice-icon" />
      <div className="notice-body">
        <p className="notice-title">{title}</p>
        <p>
          {NO_ENGINE_REASON} {why}
        </p>
      </div>
      <div className="notice-action">
        <AddAiKeyLink primary testId={`${where}-add-key`} />
      </div>
    </div>
  );
}
