import type { SliceKey } from '@slicekeeper/contracts';
import { ATTR_SLICEKEEPER_DRIVER, ATTR_SLICEKEEPER_NODE } from '@slicekeeper/telemetry';
import type { Span, SpanStart, Tracing } from '@slicekeeper/telemetry';

/** A driver's message as the watcher took it: decoded, checked, handed on (CONSUMER). */
export const RECEIVE_SPAN = 'receive inventory';
/** One Redis write of a key's snapshot, standing for the messages merged into it (INTERNAL). */
export const STORE_SPAN = 'store snapshot';

/**
 * Starts a span that is a child of `start.parent` when given, else a root: never of whatever
 * span happens to be active. The watcher's long-lived loops (a key's write drain, a stream's
 * callbacks, timers) run in the context they were started in, so an implicit parent would tie
 * unrelated messages into one trace.
 */
export function startSpan(tracing: Tracing, name: string, start: SpanStart): Span {
  return tracing.start(name, { ...start, root: true });
}

/** The key's attributes, on every span of the key. */
export function keyAttributes(key: SliceKey): Record<string, string> {
  return { [ATTR_SLICEKEEPER_NODE]: key.node, [ATTR_SLICEKEEPER_DRIVER]: key.driver };
}
