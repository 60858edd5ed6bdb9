// The plans an operator offers: what each grants every month, and the resources one project of an
// account on that plan may use (memory, CPU, processes) in the container and sandbox runtimes. The
// defaults are in config.ts; an operator's own come from a JSON file, `--plans <file>` or else
// `<data-dir>/plans.json` when it exists, which `wharf platform` and `wharf admin` read alike, so the
// two always agree on the plans there are.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { fieldErrors } from '../shared/api/validation.js';
import type { Plan } from './config.js';

/** `<data-dir>/plans.json`: read when no other file is named. */
export const PLANS_FILE = 'plans.json';

const planSchema = z
  .object({
    allowance_usd: z.number().min(0).max(1_000_000),
    memory_mib: z.number().int().min(0).max(1_048_576).optional(),
    cpus: z.number().min(0).max(1_024).optional(),
    pids: z.number().int().min(0).max(1_000_000).optional(),
  })
  .strict();

const PLAN_NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;

const plansFileSchema = z
  .object({
    default_plan: z.string().optional(),
    plans: z.record(z.string(), planSchema),
  })
  .strict()
  .superRefine((file, ctx) => {
    const names = Object.keys(file.plans);
    for (const name of names.filter((n) => !PLAN_NAME.test(n))) {
      ctx.addIssue({
        code: 'custom',
        path: ['plans', name],
        message: 'a plan name is 1–32 lowercase letters, digits, - and _, starting with a letter or digit',
      });
    }
    if (names.length === 0) {
      ctx.addIssue({ code: 'custom', path: ['plans'], message: 'name at least one plan' });
    } else if (file.default_plan === undefined && names.length > 1) {
      ctx.addIssue({
        code: 'custom',
        path: ['default_plan'],
        message: `say which plan new accounts get (one of ${names.join(', ')})`,
      });
    } else if (file.default_plan !== undefined && !(file.default_plan in file.plans)) {
      ctx.addIssue({
        code: 'custom',
        path: ['default_plan'],
        message: `"${file.default_plan}" is not one of the plans (${names.join(', ')})`,
      });
    }
  });

export interface PlansSetting {
  plans: Record<string, Plan>;
  defaultPlan: string;
  /** The file they were read from. */
  file: string;
}

export class PlansFileError extends Error {}

/**
 * The operator's plans: from `explicit` (which must exist), else from `<dataDir>/plans.json` when it
 * exists, else null (the built-in plans). A file that does not parse or validate is an error naming
 * every field at fault.
 */
export function loadPlans(dataDir: string, explicit?: string): PlansSetting | null {
  const file = explicit ?? join(dataDir, PLANS_FILE);
  if (explicit === undefined && !existsSync(file)) return null;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new PlansFileError(
      `cannot read the plans file ${file}: ${code === 'ENOENT' ? 'there is no such file' : (error as Error).message}`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new PlansFileError(`the plans file ${file} is not JSON: ${(error as Error).message}`);
  }
  const parsed = plansFileSchema.safeParse(json);
  if (!parsed.success) {
    const problems = fieldErrors(parsed.error.issues).map(
      ({ path, message }) => `${path || '(the file)'}: ${message}`,
    );
    throw new PlansFileError(`the plans file ${file} is not valid: ${problems.join('; ')}`);
  }
  const { plans, default_plan } = parsed.data;
  return { plans, defaultPlan: default_plan ?? Object.keys(plans)[0]!, file };
}
