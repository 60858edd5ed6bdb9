// One body of an exchange, with the views that suit it: pretty JSON (coloured) or XML, a form as a
// table, an image inline, raw text, or a hex dump. A gzip or deflate body is decoded first (as much of
// it as was captured). A body cut at the capture limit carries a badge saying how much was kept.
import { useEffect, useMemo, useState } from 'react';
import type { HeaderList } from '../../../../shared/api/tunnels.js';
import { CopyButton } from '../../components/CopyButton';
import {
  base64ToBytes,
  bodyKind,
  bodyViews,
  bytesToBase64,
  contentTypeOf,
  decodeUtf8,
  headerValue,
  hexDump,
  imageDataUrl,
  jsonTokens,
  prettyJson,
  prettyXml,
  type BodyViewName,
} from '../../lib/body-format';
import { parseForm } from '../../../../shared/form.js';
import { formatBytes } from '../../lib/format';

const VIEW_LABELS: Record<BodyViewName, string> = {
  pretty: 'Pretty',
  form: 'Form',
  image: 'Image',
  raw: 'Raw',
  hex: 'Hex',
};

/** Pretty JSON longer than this is shown without colours (a span per token would be too many). */
const MAX_HIGHLIGHT_CHARS = 200_000;
/** The hex dump shows this much until "Show all". */
const HEX_PREVIEW_BYTES = 64 * 1024;

interface Decoded {
  bytes: Uint8Array;
  /** How the body was decoded, or why it could not be. */
  note: string | null;
}

/** The body with its Content-Encoding undone where the browser can (gzip, deflate). */
function useDecoded(raw: Uint8Array, encoding: string | null): Decoded {
  const format =
    encoding === 'gzip' || encoding === 'x-gzip' ? 'gzip' : encoding === 'deflate' ? 'deflate' : null;
  const [result, setResult] = useState<{ raw: Uint8Array; decoded: Decoded } | null>(null);
  useEffect(() => {
    if (!format || raw.length === 0) return;
    let cancelled = false;
    void decompress(raw, format).then((decoded) => {
      if (!cancelled) setResult({ raw, decoded });
    });
    return () => {
      cancelled = true;
    };
  }, [raw, format]);
  if (!encoding || encoding === 'identity' || raw.length === 0) return { bytes: raw, note: null };
  if (!format) return { bytes: raw, note: `${encoding}-encoded: shown as captured` };
  if (result?.raw === raw) return result.decoded;
  return { bytes: raw, note: `decoding ${format}…` };
}

async function decompress(raw: Uint8Array, format: 'gzip' | 'deflate'): Promise<Decoded> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  let failed = false;
  try {
    const reader = new Blob([raw as Uint8Array<ArrayBuffer>])
      .stream()
      .pipeThrough(new DecompressionStream(format))
      .getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } catch {
    failed = true;
  }
  if (failed && size === 0)
    return { bytes: raw, note: `${format} data that could not be decoded: shown as captured` };
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return {
    bytes,
    note: failed ? `decoded from ${format} as far as it was captured` : `decoded from ${format}`,
  };
}

export function BodyView({
  title,
  body,
  headers,
  truncated,
  size,
  testId,
  showTitle = true,
}: {
  title: string;
  /** base64, or null for no body. */
  body: string | null;
  headers: HeaderList;
  truncated: boolean;
  /** The whole body's size, as it crossed the tunnel. */
  size: number;
  testId: string;
  /** Off where a heading above already names the body. */
  showTitle?: boolean;
}) {
  const raw = useMemo(() => base64ToBytes(body), [body]);
  const encoding = headerValue(headers, 'content-encoding')?.trim().toLowerCase() ?? null;
  const decoded = useDecoded(raw, encoding);
  const { mime } = contentTypeOf(headers);
  const kind = useMemo(() => bodyKind(mime, decoded.bytes), [mime, decoded.bytes]);
  const views = bodyViews(kind);
  const [chosen, setChosen] = useState<BodyViewName | null>(null);
  const view = chosen && views.includes(chosen) ? chosen : (views[0] ?? null);

  if (view === null) {
    return (
      <p className="body-empty body-none muted" data-testid={testId} data-kind="empty">
        No body
      </p>
    );
  }

  return (
    <div className="body-view" data-testid={testId} data-kind={kind} data-view={view ?? ''}>
      <div className="body-toolbar">
        {showTitle ? <span className="body-title">{title}</span> : <span className="sr-only">{title}</span>}
        {mime ? <span className="tag mono">{mime}</span> : null}
        {raw.length > 0 ? <span className="muted body-size">{formatBytes(size)}</span> : null}
        {truncated ? (
          <span
            className="truncated-badge"
            data-testid={`${testId}-truncated`}
            title="Wharf keeps the first 1 MiB of each body"
          >
            Truncated: kept {formatBytes(raw.length)} of {formatBytes(size)}
          </span>
        ) : null}
        {decoded.note ? <span className="muted body-note">{decoded.note}</span> : null}
        <span className="body-toolbar-end">
          {views.length > 1 ? (
            <span className="view-toggles" role="group" aria-label={`${title} view`}>
              {views.map((name) => (
                <button
                  key={name}
                  type="button"
                  className="view-toggle"
                  aria-pressed={view === name}
                  onClick={() => setChosen(name)}
                  data-testid={`${testId}-view-${name}`}
                >
                  {VIEW_LABELS[name]}
                </button>
              ))}
            </span>
          ) : null}
          {view !== 'image' ? (
            <CopyButton
              text={() => viewText(view, decoded.bytes)}
              iconOnly
              ariaLabel={`Copy the ${title.toLowerCase()}`}
              className="icon-button"
              testId={`${testId}-copy`}
            />
          ) : null}
        </span>
      </div>
      <BodyContent
        view={view}
        bytes={decoded.bytes}
        mime={mime}
        base64={decoded.bytes === raw ? body : null}
        testId={testId}
      />
    </div>
  );
}

/** The text a view shows, for Copy. */
function viewText(view: BodyViewName, bytes: Uint8Array): string {
  const text = decodeUtf8(bytes).text;
  if (view === 'pretty') return prettyJson(text) ?? prettyXml(text) ?? text;
  if (view === 'hex') return hexDump(bytes);
  return text;
}

function BodyContent({
  view,
  bytes,
  mime,
  base64,
  testId,
}: {
  view: BodyViewName;
  bytes: Uint8Array;
  mime: string;
  /** The bytes as base64 when they are the captured ones (saves encoding them again). */
  base64: string | null;
  testId: string;
}) {
  const text = useMemo(
    () => (view === 'hex' || view === 'image' ? '' : decodeUtf8(bytes).text),
    [view, bytes],
  );
  const [allHex, setAllHex] = useState(false);

  if (view === 'pretty') return <PrettyText text={text} mime={mime} testId={testId} />;
  if (view === 'form') {
    const rows = parseForm(text);
    return <NameValueTable rows={rows} caption="Form fields" testId={`${testId}-form`} />;
  }
  if (view === 'image') {
    const url = imageDataUrl(mime, base64 ?? bytesToBase64(bytes));
    return url ? (
      <div className="body-image">
        <img
          src={url}
          alt={`Body image (${mime}, ${formatBytes(bytes.length)})`}
          data-testid={`${testId}-image`}
        />
      </div>
    ) : (
      <p className="body-empty muted">Not an image type that can be shown.</p>
    );
  }
  if (view === 'hex') {
    const limit = allHex ? bytes.length : HEX_PREVIEW_BYTES;
    return (
      <>
        <pre className="body-text body-hex" data-testid={`${testId}-hex`}>
          {hexDump(bytes, limit)}
        </pre>
        {bytes.length > limit ? (
          <button type="button" className="btn btn-sm btn-ghost body-more" onClick={() => setAllHex(true)}>
            Show all {formatBytes(bytes.length)}
          </button>
        ) : null}
      </>
    );
  }
  return (
    <pre className="body-text" data-testid={`${testId}-raw`}>
      {text}
    </pre>
  );
}

function PrettyText({ text, mime, testId }: { text: string; mime: string; testId: string }) {
  const json = useMemo(() => (mime.includes('xml') ? null : prettyJson(text)), [text, mime]);
  const xml = useMemo(() => (json === null ? prettyXml(text) : null), [json, text]);
  if (json !== null) {
    return (
      <pre className="body-text body-json" data-testid={`${testId}-pretty`}>
        {json.length > MAX_HIGHLIGHT_CHARS
          ? json
          : jsonTokens(json).map((token, i) =>
              token.kind === 'plain' ? (
                token.text
              ) : (
                <span key={i} className={`json-${token.kind}`}>
                  {token.text}
                </span>
              ),
            )}
      </pre>
    );
  }
  return (
    <>
      {xml === null ? <p className="body-note-line muted">Not well-formed: shown as sent.</p> : null}
      <pre className="body-text" data-testid={`${testId}-pretty`}>
        {xml ?? text}
      </pre>
    </>
  );
}

export function NameValueTable({
  rows,
  caption,
  testId,
  nameLabel = 'Name',
}: {
  rows: ReadonlyArray<{ name: string; value: string }>;
  caption: string;
  testId?: string;
  nameLabel?: string;
}) {
  if (rows.length === 0) return <p className="body-empty muted">None</p>;
  return (
    <table className="kv-table" data-testid={testId}>
      <caption className="sr-only">{caption}</caption>
      <thead className="sr-only">
        <tr>
          <th scope="col">{nameLabel}</th>
          <th scope="col">Value</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((row, i) => (
          <tr key={i}>
            <th scope="row" className="mono">
              {row.name}
            </th>
            <td className="mono">{row.value}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
