import type { z } from 'zod';
import { TerminalError } from '@slicekeeper/errors';

/**
 * A record in Redis that does not parse: not JSON, or not what its schema says. The one
 * corrupt-value policy of every repository: the record is never used half-read, nor repaired
 * behind the operator's back; the reader fails with this error (code `corrupt`), a sync records
 * the outcome `corrupt` (never `invalid`, which is the driver's fault) and is not retried until
 * something new arrives, and the API answers 500 naming the record.
 */
export class CorruptRecordError extends TerminalError {
  constructor(
    /** What the record is and whose, e.g. `snapshot of node-a/gpu.example.com`. */
    readonly record: string,
    detail: string,
  ) {
    super(`corrupt ${record}: ${detail}`, { code: 'corrupt' });
  }
}

/** A record's schema: zod's, or a `CompiledSchema` of it. */
export interface RecordSchema<T> {
  safeParse(value: unknown): z.ZodSafeParseResult<T>;
}

/** Decodes a JSON record with its schema; throws {@link CorruptRecordError} naming `record`. */
export function decodeRecord<T>(schema: RecordSchema<T>, raw: string, record: string): T {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new CorruptRecordError(record, 'not JSON');
  }
  return decodeFields(schema, json, record);
}

/** Checks an already split record (a stream entry's fields) with its schema. */
export function decodeFields<T>(schema: RecordSchema<T>, value: unknown, record: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new CorruptRecordError(record, parsed.error.message);
  return parsed.data;
}

/** The records a repository skips rather than fails on, since nothing depends on them. */
export function decodeOrUndefined<T>(schema: RecordSchema<T>, raw: string | null): T | undefined {
  if (raw === null) return undefined;
  try {
    return schema.safeParse(JSON.parse(raw)).data;
  } catch {
    return undefined;
  }
}
