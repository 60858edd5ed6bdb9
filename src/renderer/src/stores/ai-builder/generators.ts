// The seven generators of the AI builder, as the Build screen offers them, and which projects it made.
import type { Generator } from '../../../../shared/api/ai.js';
import type { Project } from '../../../../shared/api/projects.js';

export const GENERATOR_CHOICES: ReadonlyArray<{
  id: Generator;
  label: string;
  description: string;
  example: string;
}> = [
  {
    id: 'landing',
    label: 'Landing page',
    description: 'A one-page site for a product or event, from our templates.',
    example: 'A landing page for a weekend bakery pop-up in Lisbon, with opening hours and a sign-up.',
  },
  {
    id: 'portfolio',
    label: 'Portfolio',
    description: 'A personal site with projects, an about section and contacts.',
    example: 'A portfolio for a freelance illustrator who draws maps and book covers.',
  },
  {
    id: 'web',
    label: 'Web app',
    description: 'A server-rendered web app with pages and forms.',
    example: 'A guestbook where visitors leave a name and a message, newest first.',
  },
  {
    id: 'api',
    label: 'HTTP API',
    description: 'A JSON API with its routes and a health check.',
    example: 'An API that stores short notes: create, list, get and delete them.',
  },
  {
    id: 'messaging-bot',
    label: 'Messaging bot',
    description: 'A Telegram-style chat bot that answers messages (needs its bot token).',
    example: 'A bot that replies to /weather with a made-up forecast and to anything else with help.',
  },
  {
    id: 'community-bot',
    label: 'Community bot',
    description: 'A Discord-style bot for a server: commands, greetings, roles.',
    example: 'A bot that welcomes new members and answers !rules with the server rules.',
  },
  {
    id: 'worker',
    label: 'Background worker',
    description: 'A process that runs jobs on a schedule, with a status page.',
    example: 'A worker that checks a list of URLs every minute and reports which are down.',
  },
];

/** Whether the AI builder made this project: its source is its own repository in `ai-repos`. */
export function isAiProject(project: Pick<Project, 'id' | 'repo_url'>): boolean {
  return !!project.repo_url && /[/\\]ai-repos[/\\]prj_[^/\\]+\/?$/.test(project.repo_url);
}

/** Environment variable names that hold secrets, to be typed into password inputs. */
export function looksSecret(name: string): boolean {
  return /TOKEN|SECRET|KEY|PASSWORD|PASS\b|CREDENTIAL|PRIVATE|AUTH/i.test(name);
}
