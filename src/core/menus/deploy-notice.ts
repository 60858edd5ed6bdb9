// What the desktop app says when a deploy ends (a system notification from src/main), or when a deploy
// started from the tray is refused: plain text built from the Bridge's data, unit-tested under Node.
import type { Project } from '../../shared/api/index.js';
import type { BridgeErrorShape, DeployFinishedEvent } from '../../shared/bridge.js';

export interface DeployNotice {
  title: string;
  body: string;
}

/** The longest error text a notification carries; the app shows the rest. */
const MAX_ERROR_CHARS = 200;

export function deployFinishedNotice({ project, outcome }: DeployFinishedEvent): DeployNotice {
  if (outcome === 'running') {
    return { title: `${project.name} is running`, body: `${project.name} is running at ${project.url}` };
  }
  // The platform's error says itself when the previous version keeps serving.
  const error = project.last_deploy_error ?? 'see its logs for why';
  return {
    title: `${project.name} failed to deploy`,
    body: `${project.name} failed to deploy: ${truncate(error, MAX_ERROR_CHARS)}`,
  };
}

export function deployRefusedNotice(
  project: Pick<Project, 'name'> | null,
  error: BridgeErrorShape,
): DeployNotice {
  const name = project?.name ?? 'The project';
  return {
    title: `${name} was not deployed`,
    body: truncate(capitalize(error.detail), MAX_ERROR_CHARS),
  };
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function capitalize(text: string): string {
  return text ? text[0]!.toUpperCase() + text.slice(1) : text;
}
