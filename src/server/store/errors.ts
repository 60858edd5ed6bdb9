// What the store's errors mean, whichever database raised them (SQLite's codes, PostgreSQL's SQLSTATEs).

/**
 * Whether a write failed on a unique constraint (or a primary key): another request won a race for the
 * same name between a check and an insert.
 */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (
    code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    code === 'SQLITE_CONSTRAINT_PRIMARYKEY' ||
    // PostgreSQL's unique_violation
    code === '23505'
  );
}
