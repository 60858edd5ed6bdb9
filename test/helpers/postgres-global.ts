// vitest globalSetup of the `postgres` project (vitest.config.ts): one PostgreSQL server for the run,
// its superuser URL provided to the test files (test-store.ts makes a database per store from it), and
// stopped when the run ends.
import type { TestProject } from 'vitest/node';
import { startPostgres } from './postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startPostgres();
  project.provide('postgresUrl', server.url);
  return () => server.stop();
}
