// Turning what the user pastes or picks (a list of lines, or a CSV file) into the addresses to check.
// Both go through one CSV parser (papaparse guesses the delimiter; a plain list is a one-column CSV).
// The column is the one whose cells look most like email addresses, else the first; a first row that
// does not look like an address in that column while the others do is a header and is skipped.
// Blank cells are dropped and repeated addresses are checked once (the first one keeps its place).
import Papa from 'papaparse';

/** Loose on purpose: it only picks the column; the platform judges each address. */
const LOOKS_LIKE_EMAIL = /^[^\s@<>"',;]+@[^\s@<>"',;]+\.[^\s@<>"',;]+$/;

/** Header names that say a column holds addresses, for files where no cell looks like one. */
const EMAIL_HEADER = /^(e-?mail|email[ _-]?address|address|mail)$/i;

export function looksLikeEmail(value: string): boolean {
  return LOOKS_LIKE_EMAIL.test(value.trim());
}

export interface ExtractedAddresses {
  /** The addresses to check, in input order, each once. */
  emails: string[];
  /** Which column they came from (0-based), and its header when the file has one. */
  column: { index: number; header: string | null };
  /** How many columns the widest row had. */
  columnCount: number;
  /** How many repeated addresses were left out. */
  duplicates: number;
}

/** The column whose cells (without the first row, when there are others) look most like addresses. */
export function detectEmailColumn(rows: string[][]): { index: number; hasHeader: boolean } {
  const width = Math.max(0, ...rows.map((row) => row.length));
  if (rows.length === 0 || width === 0) return { index: 0, hasHeader: false };
  const body = rows.length > 1 ? rows.slice(1) : rows;
  let best = 0;
  let bestShare = 0;
  for (let index = 0; index < width; index++) {
    const cells = body.map((row) => (row[index] ?? '').trim()).filter((cell) => cell !== '');
    const share = cells.length === 0 ? 0 : cells.filter(looksLikeEmail).length / cells.length;
    if (share > bestShare) {
      best = index;
      bestShare = share;
    }
  }
  const first = (rows[0]?.[best] ?? '').trim();
  if (bestShare === 0) {
    // Nothing looks like an address: a column named like one, else the first column.
    const named = (rows[0] ?? []).findIndex((cell) => EMAIL_HEADER.test(cell.trim()));
    return named >= 0 ? { index: named, hasHeader: true } : { index: 0, hasHeader: EMAIL_HEADER.test(first) };
  }
  return { index: best, hasHeader: rows.length > 1 && !looksLikeEmail(first) };
}

/** The rows of CSV (or plain lines) text, as strings; empty lines dropped. */
export function parseRows(text: string): string[][] {
  const parsed = Papa.parse<string[]>(text.replace(/^\uFEFF/, ''), {
    skipEmptyLines: 'greedy',
    delimitersToGuess: [',', ';', '\t', '|'],
  });
  return parsed.data.map((row) => row.map((cell) => String(cell ?? '')));
}

export function extractAddresses(text: string): ExtractedAddresses {
  const rows = parseRows(text);
  const { index, hasHeader } = detectEmailColumn(rows);
  const seen = new Set<string>();
  const emails: string[] = [];
  let duplicates = 0;
  for (const row of hasHeader ? rows.slice(1) : rows) {
    const email = (row[index] ?? '').trim();
    if (email === '') continue;
    const key = email.toLowerCase();
    if (seen.has(key)) {
      duplicates++;
      continue;
    }
    seen.add(key);
    emails.push(email);
  }
  return {
    emails,
    column: { index, header: hasHeader ? (rows[0]?.[index] ?? '').trim() || null : null },
    columnCount: Math.max(0, ...rows.map((row) => row.length)),
    duplicates,
  };
}
