// Turns zod issues into the `errors` list of a 422 problem: one `{ path, message }` per failed rule,
// paths written as API.md writes them (`services[2].name`).
import type { z } from 'zod';
import { formatPath, type FieldError } from '../errors.js';

export function fieldErrors(
  issues: ReadonlyArray<z.core.$ZodIssue>,
  prefix: ReadonlyArray<PropertyKey> = [],
): FieldError[] {
  const out: FieldError[] = [];
  for (const issue of issues) {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys)
        out.push({ path: formatPath([...path, key]), message: 'is not a known field' });
    } else if (issue.code === 'invalid_key') {
      const inner = issue.issues[0]?.message ?? issue.message;
      out.push({ path: formatPath(path), message: `has an invalid name: ${inner}` });
    } else if (issue.code === 'invalid_union' && issue.errors.length > 0 && issue.errors[0]!.length > 0) {
      out.push(...fieldErrors(issue.errors[0]!, path));
    } else {
      out.push({ path: formatPath(path), message: issue.message });
    }
  }
  return out;
}
