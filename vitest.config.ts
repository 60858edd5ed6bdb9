import { defineConfig } from 'vitest/config';

/**
 * Several platform nodes on one database, one killed under traffic: run one at a time after the others
 * (how many requests a kill may cost depends on how fast the balancer sees it, which load slows).
 */
const CLUSTER_SUITES = [
  'test/integration/cluster.test.ts',
  'test/integration/cluster-kill.test.ts',
  'test/integration/cluster-tls.test.ts',
];

/**
 * The suites that run a second time with the store on PostgreSQL (issue 20): the store's own, and the
 * API's and the CLI's over it. The rest (the tunnel client, the inspector, the engines, the UI) reach
 * the store through the same services.
 */
const POSTGRES_SUITES = [
  'test/unit/server/billing/ledger.test.ts',
  'test/unit/server/billing/daily-cap.test.ts',
  'test/unit/server/status.test.ts',
  'test/integration/store-postgres.test.ts',
  'test/integration/migrate-store.test.ts',
  'test/integration/store-chunks.test.ts',
  'test/integration/shared-repos.test.ts',
  'test/integration/acme-challenges.test.ts',
  'test/integration/certificates-cluster.test.ts',
  'test/integration/auth.test.ts',
  'test/integration/account-keys.test.ts',
  'test/integration/projects.test.ts',
  'test/integration/billing.test.ts',
  'test/integration/domains.test.ts',
  'test/integration/idempotency.test.ts',
  'test/integration/errors.test.ts',
  'test/integration/spec-contract-projects.test.ts',
  'test/integration/spec-contract-domains-email.test.ts',
  'test/integration/tenant-isolation.test.ts',
  'test/integration/email-api.test.ts',
  'test/integration/releases.test.ts',
  'test/integration/tunnel.test.ts',
  'test/integration/tunnels-manager.test.ts',
  'test/integration/tls.test.ts',
  'test/integration/logs.test.ts',
  'test/integration/upload.test.ts',
  'test/integration/limits.test.ts',
  'test/integration/ai-engines.test.ts',
  'test/integration/agent-runs.test.ts',
  'test/integration/spec-contract-tunnels.test.ts',
  'test/integration/redirects.test.ts',
  'test/integration/project-sync.test.ts',
  'test/integration/platform-info.test.ts',
  'test/integration/deploy.test.ts',
  'test/integration/deploy-lifecycle.test.ts',
  'test/integration/spec-contract-ai.test.ts',
  'test/integration/plan-resources.test.ts',
  'test/integration/fuzz.test.ts',
  'test/integration/registry-credentials.test.ts',
  'test/integration/repo-secrets.test.ts',
  'test/integration/ai-builder.test.ts',
  'test/integration/ai-builder-no-local-repos.test.ts',
  'test/integration/ai-agent.test.ts',
  'test/integration/ai-templates.test.ts',
  'test/integration/ai-containers.test.ts',
  'test/integration/files-escape.test.ts',
  'test/integration/tenant-attacks.test.ts',
  'test/integration/containers.test.ts',
  'test/integration/edge.test.ts',
  'test/integration/platform-connection.test.ts',
  'test/integration/cli-deploy.test.ts',
  'test/integration/cli-email.test.ts',
  'test/integration/cli-http.test.ts',
  'test/integration/cli-releases.test.ts',
  'test/integration/cli.test.ts',
  'test/integration/cli-plans.test.ts',
];

/**
 * Files run at once in the main and postgres projects. Most of their time is spent waiting (on
 * servers, engines, builds), so two on two cores finish sooner than one after the other.
 */
const PARALLEL = 2;

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    teardownTimeout: 10_000,
    pool: 'forks',
    // Memory assertions (a tenant's flood must not grow the platform) collect garbage first.
    execArgv: ['--expose-gc'],
    reporters: ['default', 'json'],
    outputFile: { json: 'test-results/vitest.json' },
    projects: [
      {
        extends: true,
        test: {
          name: 'main',
          include: ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts'],
          maxWorkers: PARALLEL,
          // PostgreSQL's own suites (the postgres project) and several nodes on one database (cluster).
          exclude: [
            'test/integration/store-postgres.test.ts',
            'test/integration/migrate-store.test.ts',
            ...CLUSTER_SUITES,
          ],
        },
      },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: POSTGRES_SUITES,
          maxWorkers: PARALLEL,
          env: { WHARF_TEST_STORE: 'postgres' },
          globalSetup: ['test/helpers/postgres-global.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'cluster',
          include: CLUSTER_SUITES,
          env: { WHARF_TEST_STORE: 'postgres' },
          globalSetup: ['test/helpers/postgres-global.ts'],
          maxWorkers: 1,
        },
      },
      {
        extends: true,
        test: {
          // The screens in Chromium, one file at a time after the others: a browser's rendering and
          // the timings the screens show want the machine to themselves.
          name: 'ui',
          include: ['test/e2e/**/*.test.ts', 'test/electron/**/*.test.ts'],
          maxWorkers: 1,
        },
      },
    ],
  },
});
