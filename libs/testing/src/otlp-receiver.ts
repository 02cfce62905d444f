import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { waitFor } from './wait-for';
import { z } from 'zod';

const gunzipped = promisify(gunzip);

/** An attribute's value, flattened from OTLP's AnyValue (an int64 beyond 2^53 stays a string). */
export type AttributeValue =
  | string
  | number
  | boolean
  | null
  | readonly AttributeValue[]
  | { readonly [key: string]: AttributeValue };

/** OTLP's span kinds (`Span.SpanKind`, 0..5), by name. */
const SPAN_KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'] as const;
export type SpanKindName = (typeof SPAN_KINDS)[number];

/** OTLP's status codes (`Status.StatusCode`, 0..2), by name. */
export type StatusCodeName = 'unset' | 'ok' | 'error';
const STATUS_CODES: readonly StatusCodeName[] = ['unset', 'ok', 'error'];

/** A link of a span to another span (e.g. to a message a sync absorbed). */
export interface ReceivedLink {
  traceId: string;
  spanId: string;
  attributes: Record<string, AttributeValue>;
}

/** One span as the receiver keeps it: ids in lowercase hex, attributes as plain values. */
export interface ReceivedSpan {
  /** The `service.name` of the resource that sent it. */
  service: string;
  name: string;
  kind: SpanKindName;
  traceId: string;
  spanId: string;
  /** Absent for a root span. */
  parentSpanId?: string;
  links: ReceivedLink[];
  attributes: Record<string, AttributeValue>;
  status: { code: StatusCodeName; message?: string };
  /** The names of the span's events (e.g. `exception`). */
  events: string[];
  /** ns since the epoch. */
  startTimeUnixNano: bigint;
  endTimeUnixNano: bigint;
}

const TRACE_ID = /^[0-9a-fA-F]{32}$/;
const SPAN_ID = /^[0-9a-fA-F]{16}$/;
const NANOS = /^\d+$/;

const nanos = z.union([
  z.string().regex(NANOS, 'must be a decimal count of nanoseconds'),
  z.number().int().nonnegative(),
]);

type AnyValueWire = {
  stringValue?: string | undefined;
  boolValue?: boolean | undefined;
  intValue?: string | number | undefined;
  doubleValue?: number | string | undefined;
  bytesValue?: string | undefined;
  arrayValue?: { values?: AnyValueWire[] | undefined } | undefined;
  kvlistValue?:
    | { values?: { key: string; value?: AnyValueWire | undefined }[] | undefined }
    | undefined;
};

const anyValue: z.ZodType<AnyValueWire> = z.lazy(() =>
  z.object({
    stringValue: z.string().optional(),
    boolValue: z.boolean().optional(),
    intValue: z
      .union([z.number().int(), z.string().regex(/^-?\d+$/, 'must be an integer')])
      .optional(),
    doubleValue: z.union([z.number(), z.enum(['NaN', 'Infinity', '-Infinity'])]).optional(),
    bytesValue: z.string().optional(),
    arrayValue: z.object({ values: z.array(anyValue).optional() }).optional(),
    kvlistValue: z.object({ values: z.array(keyValue).optional() }).optional(),
  }),
);
const keyValue: z.ZodType<{ key: string; value?: AnyValueWire | undefined }> = z.lazy(() =>
  z.object({ key: z.string(), value: anyValue.optional() }),
);
const attributes = z.array(keyValue).default([]);

const span = z.object({
  traceId: z.string().regex(TRACE_ID, 'must be 32 hex digits'),
  spanId: z.string().regex(SPAN_ID, 'must be 16 hex digits'),
  parentSpanId: z
    .string()
    .refine((id) => id === '' || SPAN_ID.test(id), 'must be empty or 16 hex digits')
    .optional(),
  name: z.string().min(1, 'must not be empty'),
  kind: z.number().int().min(0).max(5).default(0),
  startTimeUnixNano: nanos,
  endTimeUnixNano: nanos,
  attributes,
  events: z.array(z.object({ name: z.string() })).default([]),
  links: z
    .array(
      z.object({
        traceId: z.string().regex(TRACE_ID, 'must be 32 hex digits'),
        spanId: z.string().regex(SPAN_ID, 'must be 16 hex digits'),
        attributes,
      }),
    )
    .default([]),
  status: z
    .object({ code: z.number().int().min(0).max(2).default(0), message: z.string().optional() })
    .default({ code: 0 }),
});

/** `ExportTraceServiceRequest` in OTLP/JSON (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding). */
const exportRequest = z.object({
  resourceSpans: z
    .array(
      z.object({
        resource: z.object({ attributes }).default({ attributes: [] }),
        scopeSpans: z.array(z.object({ spans: z.array(span).default([]) })).default([]),
      }),
    )
    .default([]),
});

function flatten(value: AnyValueWire | undefined): AttributeValue {
  if (value === undefined) return null;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) {
    const n = Number(value.intValue);
    return Number.isSafeInteger(n) ? n : String(value.intValue);
  }
  if (value.doubleValue !== undefined) return Number(value.doubleValue);
  if (value.bytesValue !== undefined) return value.bytesValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(flatten);
  if (value.kvlistValue !== undefined) return flattenAll(value.kvlistValue.values ?? []);
  return null;
}

function flattenAll(
  pairs: readonly { key: string; value?: AnyValueWire | undefined }[],
): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const { key, value } of pairs) out[key] = flatten(value);
  return out;
}

/** What a body that is no ExportTraceServiceRequest is told: each problem with its path. */
function problems(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`)
    .join('; ');
}

export interface OtlpReceiverOptions {
  /**
   * Keep every span (`'spans'`, for assertions) or only count them by service and name
   * (`'count'`, for a bench: each body is parsed, counted and dropped). @defaultValue 'spans'
   */
  keep?: 'spans' | 'count';
  /** @defaultValue a free port */
  port?: number;
}

/**
 * An OTLP/HTTP trace receiver for tests, as an OpenTelemetry Collector's `otlp` receiver on
 * port 4318 would take them: `POST /v1/traces` with an OTLP/JSON body (gzip accepted), answered
 * `200 {}`; a body that is no ExportTraceServiceRequest gets 400 naming what is wrong. Every
 * service pointed at {@link url} (see {@link otelEnv}) sends its spans here.
 */
export class OtlpReceiver {
  private readonly received: ReceivedSpan[] = [];
  private readonly counts = new Map<string, number>();
  private requestCount = 0;
  private rejectedCount = 0;

  private constructor(
    private readonly server: http.Server,
    /** The base URL, for `OTEL_EXPORTER_OTLP_ENDPOINT` (spans go to `<url>/v1/traces`). */
    readonly url: string,
    private readonly keep: 'spans' | 'count',
  ) {}

  /** Listens on a loopback port: `options.port`, or a free one. */
  static async start(options: OtlpReceiverOptions = {}): Promise<OtlpReceiver> {
    const server = http.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    const { port } = server.address() as AddressInfo;
    const receiver = new OtlpReceiver(server, `http://127.0.0.1:${port}`, options.keep ?? 'spans');
    server.on('request', (req, res) => {
      receiver.handle(req, res).catch((error: unknown) => {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ code: 13, message: String(error) }));
      });
    });
    return receiver;
  }

  /**
   * The settings that have a service (or the example driver) send every span here at once:
   * the endpoint, a 100 ms batch delay, and every trace sampled.
   */
  otelEnv(): Record<string, string> {
    return {
      OTEL_EXPORTER_OTLP_ENDPOINT: this.url,
      OTEL_BSP_SCHEDULE_DELAY: '100ms',
      OTEL_TRACES_SAMPLER: 'always_on',
    };
  }

  /** Every span received so far, in the order received. */
  spans(): ReceivedSpan[] {
    return [...this.received];
  }

  /** Spans received (kept or counted) so far. */
  get spanCount(): number {
    let total = 0;
    for (const count of this.counts.values()) total += count;
    return total;
  }

  /** Spans received so far by `<service> <span name>`. */
  countsByName(): Map<string, number> {
    return new Map(this.counts);
  }

  /** Export requests answered 200, and those refused with 400. */
  get requests(): { accepted: number; rejected: number } {
    return { accepted: this.requestCount, rejected: this.rejectedCount };
  }

  /** The spans of one trace. */
  trace(traceId: string): ReceivedSpan[] {
    return this.received.filter((s) => s.traceId === traceId);
  }

  /** The spans received so far, grouped by trace id (traces in the order first seen). */
  traces(): Map<string, ReceivedSpan[]> {
    const byTrace = new Map<string, ReceivedSpan[]>();
    for (const s of this.received) {
      const group = byTrace.get(s.traceId);
      if (group === undefined) byTrace.set(s.traceId, [s]);
      else group.push(s);
    }
    return byTrace;
  }

  /**
   * Polls the spans received until `check` returns something (not undefined), and resolves
   * with it; fails naming `what` after `timeoutMs`.
   */
  async waitFor<T>(
    what: string,
    check: (spans: readonly ReceivedSpan[]) => T | undefined,
    timeoutMs = 30_000,
  ): Promise<NonNullable<T>> {
    return waitFor(() => check(this.received), { timeoutMs, intervalMs: 50, description: what });
  }

  /** Forgets every span and count received so far. */
  reset(): void {
    this.received.length = 0;
    this.counts.clear();
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => {
      this.server.close(() => {
        resolve();
      });
    });
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const answer = (status: number, body: object): void => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const path = new URL(req.url ?? '/', this.url).pathname;
    if (path !== '/v1/traces') {
      req.resume();
      answer(404, { code: 5, message: `${path}: only /v1/traces is served` });
      return;
    }
    if (req.method !== 'POST') {
      req.resume();
      res.setHeader('allow', 'POST');
      answer(405, { code: 12, message: `${req.method ?? ''} /v1/traces: only POST` });
      return;
    }
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim();
    if (type !== 'application/json') {
      req.resume();
      answer(415, {
        code: 3,
        message: `content-type ${type === '' ? '(none)' : type}: only application/json (OTLP/JSON)`,
      });
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body = Buffer.concat(chunks);
    const encoding = req.headers['content-encoding'];
    const reject = (message: string): void => {
      this.rejectedCount++;
      answer(400, { code: 3, message });
    };
    if (encoding === 'gzip') {
      try {
        body = await gunzipped(body);
      } catch (error) {
        reject(`content-encoding gzip: ${error instanceof Error ? error.message : String(error)}`);
        return;
      }
    } else if (encoding !== undefined && encoding !== 'identity') {
      reject(`content-encoding ${encoding}: only gzip or none`);
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch (error) {
      reject(`body is not JSON: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    const parsed = exportRequest.safeParse(json);
    if (!parsed.success) {
      reject(`not an ExportTraceServiceRequest: ${problems(parsed.error)}`);
      return;
    }
    this.take(parsed.data);
    this.requestCount++;
    answer(200, {});
  }

  private take(request: z.infer<typeof exportRequest>): void {
    for (const resourceSpans of request.resourceSpans) {
      const resource = flattenAll(resourceSpans.resource.attributes);
      const name = resource['service.name'];
      const service = typeof name === 'string' ? name : 'unknown_service';
      for (const { spans } of resourceSpans.scopeSpans) {
        for (const s of spans) {
          const key = `${service} ${s.name}`;
          this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
          if (this.keep === 'count') continue;
          const parent = s.parentSpanId?.toLowerCase() ?? '';
          this.received.push({
            service,
            name: s.name,
            kind: SPAN_KINDS[s.kind] ?? 'unspecified',
            traceId: s.traceId.toLowerCase(),
            spanId: s.spanId.toLowerCase(),
            ...(parent === '' ? {} : { parentSpanId: parent }),
            links: s.links.map((l) => ({
              traceId: l.traceId.toLowerCase(),
              spanId: l.spanId.toLowerCase(),
              attributes: flattenAll(l.attributes),
            })),
            attributes: flattenAll(s.attributes),
            status: {
              code: STATUS_CODES[s.status.code] ?? 'unset',
              ...(s.status.message === undefined || s.status.message === ''
                ? {}
                : { message: s.status.message }),
            },
            events: s.events.map((e) => e.name),
            startTimeUnixNano: BigInt(s.startTimeUnixNano),
            endTimeUnixNano: BigInt(s.endTimeUnixNano),
          });
        }
      }
    }
  }
}
