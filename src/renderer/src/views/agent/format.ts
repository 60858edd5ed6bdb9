// How the Agent screen writes tool inputs and results: a one-line summary for the step's header, and
// pretty JSON (cut at a readable length) for its details.

/** Characters of a result shown before "Show all". */
export const RESULT_PREVIEW_CHARS = 4_000;

export function prettyJson(value: unknown): string {
  if (value === undefined) return '';
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/** `generator: landing, subdomain: bakery` for an object input; the value itself otherwise. */
export function summarizeInput(input: unknown, max = 90): string {
  if (input === undefined || input === null) return '';
  let text: string;
  if (typeof input === 'object' && !Array.isArray(input)) {
    text = Object.entries(input as Record<string, unknown>)
      .map(([key, value]) => `${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`)
      .join(', ');
  } else text = typeof input === 'string' ? input : JSON.stringify(input);
  text = text.replace(/\s+/g, ' ').trim();
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** `list_projects` → `List projects`. */
export function toolLabel(tool: string): string {
  const words = tool.replace(/[_-]+/g, ' ').trim();
  return words ? words[0]!.toUpperCase() + words.slice(1) : tool;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
}
