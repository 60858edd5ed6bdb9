// `application/x-www-form-urlencoded` bodies and query strings, read the one way the capture, its HAR
// export, the history's search index and the inspector's views all use: `+` is a space, `%xx` escapes are
// decoded, and a bad escape is kept as sent rather than failing the whole body.

export interface FormField {
  name: string;
  value: string;
}

/** One name or value: `+` is a space, bad escapes are kept. */
export function decodeFormComponent(value: string): string {
  const spaced = value.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced;
  }
}

/** `a=1&b=two+words&c` as fields, in order, decoded; empty parts are skipped. */
export function parseForm(text: string): FormField[] {
  const fields: FormField[] = [];
  for (const part of text.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const name = eq === -1 ? part : part.slice(0, eq);
    const value = eq === -1 ? '' : part.slice(eq + 1);
    fields.push({ name: decodeFormComponent(name), value: decodeFormComponent(value) });
  }
  return fields;
}

/** The query parameters of a path such as `/search?q=a+b&page=2#top`. */
export function queryParams(path: string): FormField[] {
  const question = path.indexOf('?');
  if (question === -1) return [];
  const hash = path.indexOf('#', question);
  return parseForm(path.slice(question + 1, hash === -1 ? undefined : hash));
}
