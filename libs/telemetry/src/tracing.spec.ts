import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { recordedTracing } from './testing';
import { formatTraceparent } from '@slicekeeper/contracts';
import { linksTo, parseTraceparent } from './trace-context';

const DRIVER = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('trace context', () => {
  it.each([
    ['a sampled traceparent', DRIVER, true],
    ['an unsampled one', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00', true],
    ['an all-zero trace id', '00-00000000000000000000000000000000-00f067aa0ba902b7-01', false],
    ['an all-zero span id', '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', false],
    ['upper-case hex', '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01', false],
    ['version ff', 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', false],
    ['a short span id', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902-01', false],
  ])('%s parses: %s', (_, traceparent, valid) => {
    expect(parseTraceparent(traceparent) !== undefined).toBe(valid);
  });

  it('formats what it parses back to the same text, marked remote', () => {
    const context = parseTraceparent(DRIVER);
    expect(context?.isRemote).toBe(true);
    expect(context === undefined ? '' : formatTraceparent(context)).toBe(DRIVER);
  });

  it('links to every traceparent that parses and leaves the rest out', () => {
    const other = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    expect(linksTo([DRIVER, 'garbage', other]).map((l) => l.context.spanId)).toEqual([
      '00f067aa0ba902b7',
      'b7ad6b7169203331',
    ]);
  });
});

describe('Tracing', () => {
  const recorded = recordedTracing('tracing-spec');
  afterEach(() => {
    recorded.reset();
  });
  afterAll(() => recorded.shutdown());

  it('makes a span active for the work it awaits, as a child of a remote parent', async () => {
    const parent = parseTraceparent(DRIVER);
    const seen = await recorded.tracing.inSpan(
      'receive',
      { kind: SpanKind.CONSUMER, ...(parent === undefined ? {} : { parent }) },
      async () => {
        await new Promise((resolve) => setImmediate(resolve));
        return trace.getActiveSpan()?.spanContext().traceId;
      },
    );
    const [span] = recorded.named('receive');
    expect(seen).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(span?.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
    expect(span?.kind).toBe(SpanKind.CONSUMER);
    expect(span?.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('ends a span whose work throws with status error and the exception recorded', async () => {
    await expect(
      recorded.tracing.inSpan('write', {}, () => Promise.reject(new Error('409 conflict'))),
    ).rejects.toThrow('409 conflict');
    const [span] = recorded.named('write');
    expect(span?.status).toEqual({ code: SpanStatusCode.ERROR, message: '409 conflict' });
    expect(span?.events.map((e) => e.name)).toEqual(['exception']);
  });

  it('starts a new trace for a root span, even inside an active one', async () => {
    const outer = await recorded.tracing.inSpan('outer', {}, (span) => {
      recorded.tracing.start('detached', { root: true }).end();
      recorded.tracing.start('nested').end();
      return Promise.resolve(span.spanContext().traceId);
    });
    const [detached] = recorded.named('detached');
    const [nested] = recorded.named('nested');
    expect(nested?.spanContext().traceId).toBe(outer);
    expect(detached?.spanContext().traceId).not.toBe(outer);
    expect(detached?.parentSpanContext).toBeUndefined();
  });
});
