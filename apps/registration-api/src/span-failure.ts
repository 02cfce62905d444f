import { SlicekeeperError, errorMessage } from '@slicekeeper/errors';
import { ATTR_ERROR_TYPE, SpanStatusCode } from '@slicekeeper/telemetry';
import type { Span } from '@slicekeeper/telemetry';
import { boundedText } from './bounded-text';

/**
 * Marks a span failed: status ERROR with the error's message, `error.type` the error's code (an
 * admission code such as `plugin-unreachable`) or class name unless `errorType` says. The
 * message is bounded and escaped as the API's answers are ({@link boundedText}): it may repeat
 * a plugin's own error text, which leaves the cluster with the span. No exception event: a stack
 * of the API's own frames says nothing the message does not.
 */
export function failSpanBounded(span: Span, error: unknown, errorType?: string): void {
  span.setAttribute(ATTR_ERROR_TYPE, errorType ?? errorTypeOf(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: boundedText(errorMessage(error)) });
}

function errorTypeOf(error: unknown): string {
  if (error instanceof SlicekeeperError) return error.code;
  return error instanceof Error ? error.name : '_OTHER';
}
