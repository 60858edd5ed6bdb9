// Pieces every offline template shares: the Python HTTP prelude (standard library only, so an app runs
// with no pip install and no network), literals that are safe to embed in Python and HTML, and the
// Dockerfile, README and .gitignore of each kind of app. The Dockerfiles start FROM the platform's
// configured base images, the ones its container runtime can build from, and work on the official
// images as on Debian's (which have `python3` but no `python`).
import type { BaseImages } from '../types.js';

/** A Python (and JavaScript) string literal: JSON's escapes are valid in both languages. */
export const lit = (value: string): string => JSON.stringify(value);

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** "Coffee Shop" → "coffee-shop"; never empty. */
export function slug(text: string, fallback = 'app'): string {
  const value = text
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/g, '');
  return value || fallback;
}

/** An identifier usable as a URL segment, a table name and a Python/JS name: "to-dos" → "to_dos". */
export function identifier(text: string, fallback = 'items'): string {
  const value = text
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, '_')
    .replace(/^[^a-z]+|_+$/g, '')
    .slice(0, 40);
  return value || fallback;
}

/**
 * The top of every Python web app: logging that reaches the platform's log at once (stdout is a pipe,
 * so it is line-buffered explicitly), a JSON/HTML handler base and `serve`, which binds `$PORT` on
 * 0.0.0.0 and stops cleanly on SIGTERM (the runtime's stop signal).
 */
export const PYTHON_PRELUDE = `import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.stdout.reconfigure(line_buffering=True)

MAX_BODY_BYTES = 1_000_000


def log(message):
    print(time.strftime("%Y-%m-%dT%H:%M:%S"), message, flush=True)


class BadRequest(Exception):
    """A request the client must fix: answered with 400 and this message."""


class AppHandler(BaseHTTPRequestHandler):
    server_version = "WharfApp/1.0"

    def send_body(self, status, body, content_type, headers=None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_json(self, status, payload, headers=None):
        body = (json.dumps(payload, indent=2, ensure_ascii=False) + "\\n").encode("utf-8")
        self.send_body(status, body, "application/json; charset=utf-8", headers)

    def send_html(self, status, html):
        self.send_body(status, html.encode("utf-8"), "text/html; charset=utf-8")

    def send_error_json(self, status, code, message, field=None):
        error = {"code": code, "message": message}
        if field:
            error["field"] = field
        self.send_json(status, {"error": error})

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            raise BadRequest(f"the body is larger than {MAX_BODY_BYTES} bytes")
        return self.rfile.read(length) if length > 0 else b""

    def read_json(self):
        raw = self.read_body()
        if not raw:
            raise BadRequest("the body is empty: send a JSON object")
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise BadRequest(f"the body is not valid JSON ({error})")

    def path_only(self):
        return self.path.split("?", 1)[0].rstrip("/") or "/"

    def log_message(self, format, *args):
        if not self.path.startswith("/health"):
            log(f"{self.command} {self.path} -> {args[1] if len(args) > 1 else ''}")


def serve(handler, name):
    port = int(os.environ.get("PORT", "8000"))
    server = ThreadingHTTPServer(("0.0.0.0", port), handler)
    server.daemon_threads = True

    def stop(signum, frame):
        log("stopping")
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log(f"{name} listening on 0.0.0.0:{port}")
    server.serve_forever()
    server.server_close()
`;

/**
 * A standard-library Python app: nothing to install. A web app EXPOSEs 8000, its default port; the
 * platform sets PORT to the port it runs it on either way.
 */
export function pythonDockerfile(images: BaseImages, entry: string, web: boolean): string {
  return `FROM ${images.python}
WORKDIR /app
COPY . .
ENV PYTHONUNBUFFERED=1
${web ? 'ENV PORT=8000\nEXPOSE 8000\n' : ''}CMD ["python3", "${entry}"]
`;
}

export const PYTHON_GITIGNORE = `__pycache__/
*.pyc
.venv/
`;

export const NODE_GITIGNORE = `node_modules/
`;

/**
 * A Node app started with `node <entry>`. `install`: its package.json has dependencies, installed at
 * build time (which needs the npm registry); an app without any runs no npm at all, so its image builds
 * with no network.
 */
export function nodeDockerfile(images: BaseImages, entry: string, options: { install: boolean }): string {
  const install = options.install
    ? 'COPY package.json ./\nRUN npm install --omit=dev --no-audit --no-fund\n'
    : '';
  return `FROM ${images.node}
WORKDIR /app
${install}COPY . .
ENV PORT=8000
EXPOSE 8000
CMD ["node", "${entry}"]
`;
}

export interface ReadmeParts {
  title: string;
  intro: string;
  sections: Array<{ heading: string; body: string }>;
}

export function readme({ title, intro, sections }: ReadmeParts): string {
  return [`# ${title}`, '', intro, '', ...sections.flatMap((s) => [`## ${s.heading}`, '', s.body.trim(), ''])]
    .join('\n')
    .replace(/\n{3,}/g, '\n\n');
}
