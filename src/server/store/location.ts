// Where the store is: a SQLite file, or a PostgreSQL database named by URL. Nothing here opens it, so
// the CLI can use it without loading the drivers.

/** Whether `location` names a PostgreSQL database (a postgres:// or postgresql:// URL). */
export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/** The store's location as it can be shown: a file path, or a URL without its password. */
export function describeLocation(location: string): string {
  if (!isPostgresUrl(location)) return location;
  try {
    const url = new URL(location);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return 'a PostgreSQL URL that does not parse';
  }
}

/** `text` with the password of any postgres:// URL in it masked (a driver's error may quote the URL). */
export function withoutPasswords(text: string): string {
  return text.replace(/(postgres(?:ql)?:\/\/[^:/@\s]+:)[^@\s]+@/gi, '$1***@');
}
