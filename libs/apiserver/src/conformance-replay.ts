import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeRelease } from './kube-release';

/**
 * Replays the kube-conformance transcripts (recorded from a real kube-apiserver 1.34) against a
 * server and reports every difference outside the volatile fields. The rules are those of the
 * transcripts' README: placeholders into earlier live responses, volatile pointers and patterns,
 * newline-delimited watch streams compared as event arrays, and `forgetHistory` action steps.
 */

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

interface RecordedRequest {
  method: string;
  path: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: Json;
  bodyText?: string;
}

interface RecordedResponse {
  status: number;
  headers: Record<string, string>;
  body?: Json;
  bodyText?: string;
}

type Step =
  | { request: RecordedRequest; response: RecordedResponse }
  | { action: string; description?: string };

export interface ConformanceCase {
  file: string;
  name: string;
  /** Our own cases only: the release the server passes for (kube-release.ts). */
  release?: KubeRelease;
  description: string;
  steps: Step[];
  volatile: string[];
  volatilePatterns?: Record<string, string>;
}

export interface ReplayTarget {
  /** Base URL of the server under test. */
  url: string;
  /** Bearer token of a `system:masters` user. */
  token: string;
  /** Performs an action step (only `forgetHistory` exists). */
  action(name: string): void | Promise<void>;
}

export function loadCases(dir: string): ConformanceCase[] {
  return readdirSync(dir)
    .filter((f) => /^\d+-.*\.json$/.test(f))
    .sort()
    .map((file) => ({
      file,
      ...(JSON.parse(readFileSync(join(dir, file), 'utf8')) as Omit<ConformanceCase, 'file'>),
    }));
}

function isObject(value: Json | undefined): value is { [key: string]: Json } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function escapeToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

function resolvePointer(doc: Json, pointer: string): Json | undefined {
  let node: Json | undefined = doc;
  for (const raw of pointer.split('/').slice(1)) {
    const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(node)) node = node[Number(token)];
    else if (isObject(node)) node = node[token];
    else return undefined;
  }
  return node;
}

const PLACEHOLDER = /\{\{(\/steps\/[^}]*)\}\}/g;

function substitute(value: Json | undefined, live: Json): Json | undefined {
  if (typeof value === 'string') {
    const whole = /^\{\{(\/steps\/[^}]*)\}\}$/.exec(value);
    if (whole !== null) return resolvePointer(live, whole[1] ?? '') ?? null;
    return value.replace(PLACEHOLDER, (_, pointer: string) => {
      const found = resolvePointer(live, pointer);
      return typeof found === 'string' ? found : JSON.stringify(found);
    });
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, live) ?? null);
  if (isObject(value)) {
    const out: { [key: string]: Json } = {};
    for (const [k, v] of Object.entries(value)) out[k] = substitute(v, live) ?? null;
    return out;
  }
  return value;
}

interface LiveResponse {
  status: number;
  headers: Record<string, string>;
  body?: Json;
  bodyText?: string;
}

async function send(target: ReplayTarget, request: RecordedRequest): Promise<LiveResponse> {
  const query = Object.entries(request.query ?? {})
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
    .join('&');
  const url = `${target.url}${request.path}${query === '' ? '' : `?${query}`}`;
  const headers: Record<string, string> = {
    Authorization: `Bearer ${target.token}`,
    Accept: 'application/json',
    'User-Agent': 'kube-conformance/1.0',
    ...(request.headers ?? {}),
  };
  const body =
    request.bodyText ?? (request.body === undefined ? undefined : JSON.stringify(request.body));
  const isWatch = request.query?.watch === 'true';
  const timeoutSeconds = Number(request.query?.timeoutSeconds ?? '30');
  const response = await fetch(url, {
    method: request.method,
    headers,
    ...(body === undefined ? {} : { body }),
    signal: AbortSignal.timeout(isWatch ? (timeoutSeconds + 6) * 1000 : 30_000),
  });
  const text = await response.text();
  const live: LiveResponse = { status: response.status, headers: {} };
  const contentType = response.headers.get('content-type');
  if (contentType !== null) live.headers['Content-Type'] = contentType;
  const warning = response.headers.get('warning');
  if (warning !== null) live.headers.Warning = warning;
  if (isWatch && response.status === 200) {
    live.body = text
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as Json);
    return live;
  }
  try {
    live.body = JSON.parse(text) as Json;
  } catch {
    live.bodyText = text;
  }
  return live;
}

function compare(
  recorded: Json | undefined,
  live: Json | undefined,
  pointer: string,
  volatile: ReadonlySet<string>,
  patterns: Readonly<Record<string, string>>,
  out: string[],
): void {
  if (volatile.has(pointer)) {
    const pattern = patterns[pointer];
    if (
      pattern !== undefined &&
      !(typeof live === 'string' && new RegExp(`^(?:${pattern})$`).test(live))
    ) {
      out.push(`${pointer}: ${JSON.stringify(live)} does not match /${pattern}/`);
    }
    return;
  }
  if (Array.isArray(recorded)) {
    if (!Array.isArray(live)) {
      out.push(`${pointer}: expected an array, got ${JSON.stringify(live)}`);
      return;
    }
    if (recorded.length !== live.length)
      out.push(`${pointer}: expected ${recorded.length} items, got ${live.length}`);
    recorded.forEach((item, i) => {
      compare(item, live[i], `${pointer}/${i}`, volatile, patterns, out);
    });
    return;
  }
  if (isObject(recorded)) {
    if (!isObject(live)) {
      out.push(`${pointer}: expected an object, got ${JSON.stringify(live)}`);
      return;
    }
    for (const key of Object.keys(live)) {
      if (!(key in recorded))
        out.push(
          `${pointer}/${escapeToken(key)}: unexpected key (value ${JSON.stringify(live[key])})`,
        );
    }
    for (const [key, value] of Object.entries(recorded)) {
      const child = `${pointer}/${escapeToken(key)}`;
      if (!(key in live)) {
        out.push(`${child}: missing (expected ${JSON.stringify(value)})`);
        continue;
      }
      compare(value, live[key], child, volatile, patterns, out);
    }
    return;
  }
  if (recorded !== live)
    out.push(`${pointer}: expected ${JSON.stringify(recorded)}, got ${JSON.stringify(live)}`);
}

/** Runs one case; returns the differences (empty when the server behaved as recorded). */
export async function replayCase(
  testCase: ConformanceCase,
  target: ReplayTarget,
): Promise<string[]> {
  const volatile = new Set(testCase.volatile);
  const patterns = testCase.volatilePatterns ?? {};
  const liveSteps: Json[] = [];
  const liveDoc: Json = { steps: liveSteps };
  const differences: string[] = [];
  for (const [i, step] of testCase.steps.entries()) {
    if ('action' in step) {
      if (step.action !== 'forgetHistory') throw new Error(`unknown action ${step.action}`);
      await target.action(step.action);
      liveSteps.push({});
      continue;
    }
    const raw = substitute(step.request as unknown as Json, liveDoc);
    const response = await send(target, raw as unknown as RecordedRequest);
    liveSteps.push({ response: response as unknown as Json });
    const base = `/steps/${i}/response`;
    if (response.status !== step.response.status) {
      differences.push(
        `${base}/status: expected ${step.response.status}, got ${response.status} (${JSON.stringify(response.body ?? response.bodyText)})`,
      );
      continue;
    }
    for (const header of ['Content-Type', 'Warning']) {
      const expected = step.response.headers[header];
      const got = response.headers[header];
      if (expected !== got)
        differences.push(
          `${base}/headers/${header}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(got)}`,
        );
    }
    if (step.response.bodyText !== undefined) {
      if (response.bodyText !== step.response.bodyText) {
        differences.push(
          `${base}/bodyText: expected ${JSON.stringify(step.response.bodyText)}, got ${JSON.stringify(response.bodyText ?? response.body)}`,
        );
      }
    } else {
      compare(step.response.body, response.body, `${base}/body`, volatile, patterns, differences);
    }
  }
  return differences;
}
