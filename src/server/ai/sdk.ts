// The AI SDK, loaded when a model is first called: with its providers' packages (providers/index.ts)
// it holds some 30 MB, built as it loads, that a platform which never calls a model should not.
import type * as AiSdk from 'ai';

let sdk: Promise<typeof AiSdk> | null = null;

/** The `ai` package, loaded once. */
export function aiSdk(): Promise<typeof AiSdk> {
  return (sdk ??= import('ai'));
}
