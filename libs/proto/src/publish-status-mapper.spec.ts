import { syncOutcomes } from '@slicekeeper/contracts';
import type { SyncOutcome, SyncStatus } from '@slicekeeper/contracts';
import { publishFeedback, publishStatusRequest } from './publish-status-mapper';
import { publisher } from './index';

const { PublishOutcome } = publisher;

function status(outcome: SyncOutcome, fields: Partial<SyncStatus> = {}): SyncStatus {
  return {
    outcome,
    snapshotGeneration: 12,
    slices: [],
    pools: [{ name: 'node-a', generation: 3, sliceCount: 1, devices: 8 }],
    attempt: 1,
    startedAt: '2026-01-02T03:04:05.000Z',
    finishedAt: '2026-01-02T03:04:05.100Z',
    writes: 1,
    ...fields,
  };
}

/** The request as the driver decodes it. */
function overTheWire(request: publisher.NotifyPublishStatusRequest) {
  const bytes = publisher.NotifyPublishStatusRequest.encode(request).finish();
  return publisher.NotifyPublishStatusRequest.decode(bytes);
}

describe('publishStatusRequest', () => {
  it.each<[SyncOutcome, keyof typeof PublishOutcome]>([
    ['synced', 'PUBLISH_OUTCOME_PUBLISHED'],
    ['withdrawn', 'PUBLISH_OUTCOME_WITHDRAWN'],
    ['removing', 'PUBLISH_OUTCOME_REMOVING'],
    ['invalid', 'PUBLISH_OUTCOME_INVALID'],
    ['corrupt', 'PUBLISH_OUTCOME_CORRUPT'],
    ['node-missing', 'PUBLISH_OUTCOME_NODE_MISSING'],
    ['failed', 'PUBLISH_OUTCOME_FAILED'],
    ['retrying', 'PUBLISH_OUTCOME_RETRYING'],
  ])('sends %s as %s', (outcome, wire) => {
    expect(publishStatusRequest('node-a', status(outcome)).outcome).toBe(PublishOutcome[wire]);
  });

  it('has a wire outcome for every sync outcome', () => {
    const sent = syncOutcomes.map((o) => publishStatusRequest('n', status(o)).outcome);
    expect(new Set(sent).size).toBe(syncOutcomes.length);
    expect(sent).not.toContain(PublishOutcome.PUBLISH_OUTCOME_UNSPECIFIED);
  });

  it('carries the slices, dropped fields and snapshot generation of a published inventory', () => {
    const request = publishStatusRequest(
      'node-a',
      status('synced', {
        slices: ['00000-gpu.example.com-node-a-x7k2p'],
        droppedFields: ['spec.devices[*].taints (DRADeviceTaints)'],
      }),
    );
    expect(request).toEqual({
      nodeName: 'node-a',
      snapshotGeneration: 12n,
      outcome: PublishOutcome.PUBLISH_OUTCOME_PUBLISHED,
      problems: [],
      droppedFields: ['spec.devices[*].taints (DRADeviceTaints)'],
      sliceNames: ['00000-gpu.example.com-node-a-x7k2p'],
      error: '',
    });
  });

  it('carries every problem of an invalid inventory with its field', () => {
    const request = publishStatusRequest(
      '',
      status('invalid', {
        error: 'pools[0].devices[0].name: must be a DNS-1123 label',
        problems: [{ field: 'pools[0].devices[0].name', message: 'must be a DNS-1123 label' }],
      }),
    );
    expect(request).toMatchObject({
      nodeName: '',
      outcome: PublishOutcome.PUBLISH_OUTCOME_INVALID,
      problems: [{ field: 'pools[0].devices[0].name', message: 'must be a DNS-1123 label' }],
      error: 'pools[0].devices[0].name: must be a DNS-1123 label',
    });
  });
});

describe('publishFeedback', () => {
  it.each(syncOutcomes)('gives the driver back %s as slicekeeper recorded it', (outcome) => {
    const recorded = status(outcome, {
      slices: ['00000-gpu.example.com-node-a-x7k2p', '00001-gpu.example.com-node-a-q9z4m'],
      droppedFields: ['spec.devices[*].taints (DRADeviceTaints)'],
      problems: [{ field: 'pools[0].devices[3].name', message: 'must be at most 63 characters' }],
      error: 'something went wrong',
    });
    expect(publishFeedback(overTheWire(publishStatusRequest('node-a', recorded)))).toEqual({
      nodeName: 'node-a',
      snapshotGeneration: 12,
      outcome,
      problems: [{ field: 'pools[0].devices[3].name', message: 'must be at most 63 characters' }],
      droppedFields: ['spec.devices[*].taints (DRADeviceTaints)'],
      sliceNames: ['00000-gpu.example.com-node-a-x7k2p', '00001-gpu.example.com-node-a-q9z4m'],
      error: 'something went wrong',
    });
  });

  it('leaves out the error of a sync that succeeded', () => {
    const feedback = publishFeedback(
      overTheWire(publishStatusRequest('node-a', status('withdrawn', { snapshotGeneration: 0 }))),
    );
    expect(feedback).toEqual({
      nodeName: 'node-a',
      snapshotGeneration: 0,
      outcome: 'withdrawn',
      problems: [],
      droppedFields: [],
      sliceNames: [],
    });
  });

  function request(fields: Partial<publisher.NotifyPublishStatusRequest>) {
    return overTheWire(
      publisher.NotifyPublishStatusRequest.fromPartial({
        nodeName: 'n',
        snapshotGeneration: 1n,
        outcome: PublishOutcome.PUBLISH_OUTCOME_PUBLISHED,
        ...fields,
      }),
    );
  }

  const OUTCOMES =
    'PUBLISH_OUTCOME_PUBLISHED, PUBLISH_OUTCOME_WITHDRAWN, PUBLISH_OUTCOME_REMOVING, ' +
    'PUBLISH_OUTCOME_INVALID, PUBLISH_OUTCOME_CORRUPT, PUBLISH_OUTCOME_NODE_MISSING, ' +
    'PUBLISH_OUTCOME_FAILED, PUBLISH_OUTCOME_RETRYING';

  it.each<[string, Partial<publisher.NotifyPublishStatusRequest>, string]>([
    [
      'unset-outcome',
      { outcome: PublishOutcome.PUBLISH_OUTCOME_UNSPECIFIED },
      `outcome: must be one of ${OUTCOMES} (is 0)`,
    ],
    [
      'unknown-outcome',
      { outcome: 42 as publisher.PublishOutcome },
      `outcome: must be one of ${OUTCOMES} (is 42)`,
    ],
    [
      'negative-generation',
      { snapshotGeneration: -1n },
      'snapshotGeneration: must be within 0 and 9007199254740991 (is -1)',
    ],
    [
      'inexact-generation',
      { snapshotGeneration: 2n ** 53n },
      'snapshotGeneration: must be within 0 and 9007199254740991 (is 9007199254740992)',
    ],
  ])('refuses a request with %s, naming the field and the rule', (_, fields, problem) => {
    expect(() => publishFeedback(request(fields))).toThrow(problem);
  });

  it('names every problem of a request at once', () => {
    expect(() =>
      publishFeedback(
        request({ outcome: PublishOutcome.PUBLISH_OUTCOME_UNSPECIFIED, snapshotGeneration: -2n }),
      ),
    ).toThrow(
      `outcome: must be one of ${OUTCOMES} (is 0); ` +
        'snapshotGeneration: must be within 0 and 9007199254740991 (is -2)',
    );
  });
});
