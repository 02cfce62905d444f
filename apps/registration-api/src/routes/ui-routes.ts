import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';

/**
 * Where the status page's files are: `src/ui` when run from the sources, `dist/ui` in the build
 * (the build target copies them there; `routes/` sits at the same depth in both).
 */
const UI_DIRECTORY = join(__dirname, '..', 'ui');

/** The page's files, each under one URL. Nothing else under /ui is served. */
const FILES = [
  { urls: ['/ui', '/ui/'], file: 'index.html', contentType: 'text/html; charset=utf-8' },
  {
    urls: ['/ui/status-page.js'],
    file: 'status-page.js',
    contentType: 'text/javascript; charset=utf-8',
  },
  {
    urls: ['/ui/status-page.css'],
    file: 'status-page.css',
    contentType: 'text/css; charset=utf-8',
  },
  // Its own icon, or the browser asks for /favicon.ico (a 404 on every visit).
  { urls: ['/ui/favicon.svg'], file: 'favicon.svg', contentType: 'image/svg+xml' },
] as const;

/**
 * The page's own Content-Security-Policy, stricter than helmet's default: its script and style
 * come from files of this origin and it talks only to this origin. Without helmet's
 * `upgrade-insecure-requests`: the API is often reached over plain HTTP (a port-forward, a
 * Service inside the cluster), where upgraded requests for the script and `/v1` would fail.
 * `form-action 'none'`: the token form is handled by the script and is never submitted, so a
 * token cannot end up in a URL (and a log line) even when the script did not load.
 */
const CONTENT_SECURITY_POLICY = {
  useDefaults: false,
  directives: {
    defaultSrc: ["'none'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'"],
    connectSrc: ["'self'"],
    imgSrc: ["'self'"],
    baseUri: ["'none'"],
    formAction: ["'none'"],
    frameAncestors: ["'none'"],
  },
};

export interface UiRoutesOptions {
  /** A link to a trace, `{traceId}` standing for its id (TRACE_URL_TEMPLATE); none: no links. */
  traceUrlTemplate?: string | undefined;
}

/** The shell's placeholder for the trace link template, which the script reads. */
const TRACE_URL_META = '<meta name="slicekeeper-trace-url" content="" />';

/**
 * The shell with the trace link template in its meta element (escaped for an attribute): a
 * setting of the server, so the page, which holds no data, still needs no request for it.
 */
function withTraceUrlTemplate(shell: Buffer, template: string | undefined): Buffer {
  const html = shell.toString('utf8');
  if (!html.includes(TRACE_URL_META)) throw new Error(`index.html has no ${TRACE_URL_META}`);
  if (template === undefined) return shell;
  const escaped = template.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
  return Buffer.from(
    html.replace(TRACE_URL_META, `<meta name="slicekeeper-trace-url" content="${escaped}" />`),
  );
}

/**
 * The live status page at `/ui`: a static shell, its script and its stylesheet, served without
 * a token because they hold no data. The page asks the `/v1` API for the data with the bearer
 * token the user gives it, in the browser. The files are read once at start (a missing file
 * fails the start, not a request) and revalidated by their ETag (`no-cache`), so a browser never
 * runs an old script against a newer API.
 */
export async function uiRoutes(app: FastifyInstance, options: UiRoutesOptions): Promise<void> {
  for (const { urls, file, contentType } of FILES) {
    const read = await readFile(join(UI_DIRECTORY, file));
    const body =
      file === 'index.html' ? withTraceUrlTemplate(read, options.traceUrlTemplate) : read;
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
    for (const url of urls) {
      app.get(
        url,
        {
          schema: { hide: true },
          helmet: { contentSecurityPolicy: CONTENT_SECURITY_POLICY },
        },
        (request, reply) => {
          void reply
            .header('content-type', contentType)
            .header('cache-control', 'no-cache')
            .header('etag', etag);
          if (request.headers['if-none-match'] === etag) void reply.code(304).send();
          else void reply.send(body);
        },
      );
    }
  }
}
