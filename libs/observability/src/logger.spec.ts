import { Writable } from 'node:stream';
import { recordedTracing } from '@slicekeeper/telemetry/testing';
import { createLogger } from './logger';

/** A logger whose lines are read back as objects. */
function capture(traceIds: boolean) {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger({ service: 'spec', traceIds, destination }) };
}

describe('createLogger', () => {
  const recorded = recordedTracing('logger-spec');
  afterAll(() => recorded.shutdown());

  it('writes the ids of the span a line is written in, and none outside a span', async () => {
    const { lines, logger } = capture(true);
    logger.info({ node: 'node-a' }, 'outside');
    const ids = await recorded.tracing.inSpan('sync', {}, async (span) => {
      await new Promise((resolve) => setImmediate(resolve));
      logger.child({ driver: 'gpu.example.com' }).info({ writes: 1 }, 'inside');
      return span.spanContext();
    });
    logger.info('after');
    expect(lines.map((l) => [l.msg, l.trace_id, l.span_id])).toEqual([
      ['outside', undefined, undefined],
      ['inside', ids.traceId, ids.spanId],
      ['after', undefined, undefined],
    ]);
    expect(lines[1]).toMatchObject({ driver: 'gpu.example.com', writes: 1 });
    expect(lines[0]).toMatchObject({ node: 'node-a' });
  });

  it('writes no ids when tracing is off, even inside a span', async () => {
    const { lines, logger } = capture(false);
    await recorded.tracing.inSpan('sync', {}, () => {
      logger.info({ writes: 1 }, 'inside');
      return Promise.resolve();
    });
    expect(lines[0]).not.toHaveProperty('trace_id');
    expect(lines[0]).toMatchObject({ msg: 'inside', writes: 1 });
  });
});
