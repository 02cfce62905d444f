import type { ServerResponse } from 'node:http';
import { apiErrors } from './api-error';
import type { ApiError } from './api-error';
import { JSON_TYPE } from './handler-context';
import type { ApiRequest, HandlerContext, WatchResult } from './handler-context';
import {
  TOO_LARGE_RV_WAIT_MS,
  matcher,
  parseRv,
  queryBool,
  scope,
  selectors,
  validateListOptions,
} from './list-options';
import { normalize } from './object-schema';
import type { JsonObject } from './object-schema';
import { ExpiredError } from './object-store';
import type { EventType, StoredObject, WatchSink } from './object-store';
import { partialMetadata, table, view } from './response-encoding';

/**
 * Watch: the initial events or the replay from a resourceVersion, then live events, bookmarks
 * and the server-side timeout, on one newline-delimited JSON stream.
 */

const WATCH_DEFAULT_TIMEOUT_S = 1800;
const BOOKMARK_INTERVAL_MS = 60_000;

interface StreamPlan {
  initial: StoredObject[];
  replay: { type: EventType; object: StoredObject }[];
  expired: ApiError | undefined;
  initialEventsEnd: boolean;
  bookmarks: boolean;
  timeoutS: number;
  matches: (s: StoredObject) => boolean;
}

export function watch(ctx: HandlerContext, req: ApiRequest): WatchResult | Promise<WatchResult> {
  validateListOptions(req, true);
  const { labels, fields } = selectors(req);
  const q = req.query;
  const rvText = q.get('resourceVersion') ?? '';
  const timeoutText = q.get('timeoutSeconds') ?? '';
  const timeoutS = timeoutText === '' ? WATCH_DEFAULT_TIMEOUT_S : Number.parseInt(timeoutText, 10);
  const bookmarks = queryBool(q.get('allowWatchBookmarks'));
  // SetListOptionsDefaults (`apimachinery/pkg/apis/meta/internalversion/defaults.go`, WatchList
  // on in 1.34): a watch from "" or "0" that does not say otherwise is a watch-list, so its
  // initial events end with the annotated bookmark when bookmarks are allowed.
  const sendParam = q.get('sendInitialEvents');
  const legacyStart = rvText === '' || rvText === '0';
  const sendInitialEvents =
    sendParam === null
      ? legacyStart && (q.get('resourceVersionMatch') ?? '') === ''
      : queryBool(sendParam);
  // A malformed version fails the request before the stream starts (`cacher.go` `Watch`).
  const requestedRv = parseRv(rvText);
  const matchFn = matcher(labels, fields) ?? (() => true);
  const nameFilter = req.name;
  const namespaceFilter = req.namespace;
  const matches = (s: StoredObject) =>
    (namespaceFilter === '' || s.namespace === namespaceFilter) &&
    (nameFilter === '' || s.name === nameFilter) &&
    matchFn(s);
  const start = (): WatchResult => {
    const initial: StoredObject[] = [];
    let replay: { type: EventType; object: StoredObject }[] = [];
    let expired: ApiError | undefined;
    let initialEventsEnd = false;
    if (sendInitialEvents) {
      const listed = ctx.store.list(req.type.resource, { ...scope(req), match: matches });
      initial.push(...listed.items);
      // The cacher annotates the first bookmark only for a watch-list that allows bookmarks
      // (`cacher.go` `isListWatchRequest`, `cache_watcher.go` `convertToWatchEvent`).
      initialEventsEnd = bookmarks;
    } else if (!legacyStart) {
      const rv = requestedRv;
      try {
        replay = ctx.store
          .eventsSince(req.type.resource, rv)
          .flatMap((event): { type: EventType; object: StoredObject }[] => {
            const cur = event.type !== 'DELETED' && matches(event.object);
            const prev = event.prev !== undefined && matches(event.prev);
            if (cur && prev) return [{ type: 'MODIFIED', object: event.object }];
            if (cur) return [{ type: 'ADDED', object: event.object }];
            if (prev) {
              return [
                {
                  type: 'DELETED',
                  object:
                    event.type === 'DELETED'
                      ? event.object
                      : ctx.store.restamp(event.prev, event.rv),
                },
              ];
            }
            return [];
          });
      } catch (error) {
        if (!(error instanceof ExpiredError)) throw error;
        expired = apiErrors.expired(error.message);
      }
    }
    return {
      watch: (res) => {
        stream(ctx, req, res, {
          initial,
          replay,
          expired,
          initialEventsEnd,
          bookmarks,
          timeoutS,
          matches,
        });
      },
    };
  };
  if (requestedRv > ctx.store.resourceVersion) {
    const wanted = requestedRv;
    return ctx.store.waitForResourceVersion(wanted, TOO_LARGE_RV_WAIT_MS).then((reached) => {
      if (!reached) {
        const error = apiErrors.tooLargeResourceVersion(wanted, ctx.store.resourceVersion);
        return {
          watch: (res) => {
            stream(ctx, req, res, {
              initial: [],
              replay: [],
              expired: error,
              initialEventsEnd: false,
              bookmarks,
              timeoutS,
              matches,
            });
          },
        };
      }
      return start();
    });
  }
  return start();
}

function stream(ctx: HandlerContext, req: ApiRequest, res: ServerResponse, plan: StreamPlan): void {
  // A watch's stream serializer is JSON's, whatever `as=` was asked for (`serveWatch`).
  res.writeHead(200, { 'Content-Type': JSON_TYPE, 'Cache-Control': 'no-cache, private' });
  // Clients (informers) wait for the headers before they consider the watch established.
  res.flushHeaders();
  ctx.openStreams.add(res);
  let headersSent = false;
  const encode = (type: string, stored: StoredObject): string => {
    if (req.format === 'table') {
      const tableObject = table(
        ctx,
        req,
        [stored],
        { resourceVersion: String(stored.rv) },
        !headersSent,
      );
      headersSent = true;
      return `{"type":"${type}","object":${JSON.stringify(tableObject)}}\n`;
    }
    if (req.format === 'metadata')
      return `{"type":"${type}","object":${JSON.stringify(partialMetadata(stored))}}\n`;
    return `{"type":"${type}","object":${view(req, stored).json}}\n`;
  };
  const bookmark = (annotate: boolean): string => {
    const meta: JsonObject = { resourceVersion: String(ctx.store.resourceVersion) };
    if (annotate) meta.annotations = { 'k8s.io/initial-events-end': 'true' };
    const empty = normalize(req.type.schema, { metadata: meta });
    return `{"type":"BOOKMARK","object":${JSON.stringify({ kind: req.type.kind, apiVersion: req.type.apiVersion, ...empty })}}\n`;
  };
  let closed = false;
  const timers: NodeJS.Timeout[] = [];
  let unregister: (() => void) | undefined = undefined;
  const finish = () => {
    if (closed) return;
    closed = true;
    for (const t of timers) clearTimeout(t);
    unregister?.();
    ctx.openStreams.delete(res);
    if (!res.writableEnded) res.end();
  };
  res.on('close', finish);
  if (plan.expired !== undefined) {
    res.write(`{"type":"ERROR","object":${JSON.stringify(plan.expired.body)}}\n`);
    finish();
    return;
  }
  const chunks: string[] = [];
  for (const s of plan.initial) chunks.push(encode('ADDED', s));
  for (const e of plan.replay) chunks.push(encode(e.type, e.object));
  if (plan.initialEventsEnd) chunks.push(bookmark(true));
  if (chunks.length > 0) res.write(chunks.join(''));
  const sink: WatchSink = {
    resource: req.type.resource,
    lastRv: ctx.store.resourceVersion,
    matches: plan.matches,
    deliver: (type, stored, shared) => {
      if (closed) return;
      // A consumer that stops reading is cut off, as the real watch cache does, instead of
      // buffering without bound.
      if (res.writableLength > 64 * 1024 * 1024) {
        finish();
        return;
      }
      if (req.format !== 'json') {
        res.write(encode(type, stored));
        return;
      }
      // Watchers of one resource in different versions share the event, not its encoding.
      const key = `${req.type.apiVersion} ${type}`;
      let line = shared.get(key);
      if (line === undefined) {
        line = Buffer.from(encode(type, stored));
        shared.set(key, line);
      }
      res.write(line);
    },
    terminate: finish,
  };
  unregister = ctx.store.watch(sink);
  const deadline = Date.now() + plan.timeoutS * 1000;
  timers.push(setTimeout(finish, Math.max(0, plan.timeoutS * 1000)));
  if (plan.bookmarks) {
    // Every minute, and a last one two seconds before the deadline; once that last one is
    // written nothing is scheduled after it (a timer may fire a millisecond before the wall
    // clock says it is due, which must not read as time for another).
    const schedule = (from: number) => {
      const last = deadline - 2000 < from + BOOKMARK_INTERVAL_MS;
      const at = last ? deadline - 2000 : from + BOOKMARK_INTERVAL_MS;
      if (at <= Date.now()) return;
      timers.push(
        setTimeout(() => {
          if (closed) return;
          res.write(bookmark(false));
          if (!last) schedule(Date.now());
        }, at - Date.now()),
      );
    };
    schedule(Date.now());
  }
}
