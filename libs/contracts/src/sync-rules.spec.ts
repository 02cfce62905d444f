import type { SyncStatus } from './status';
import { feedbackOf, owesSync, tellsNews } from './sync-rules';

function status(overrides: Partial<SyncStatus> = {}): SyncStatus {
  return {
    outcome: 'synced',
    snapshotGeneration: 3,
    slices: ['node-a-gpu-1', 'node-a-gpu-2'],
    pools: [{ name: 'node-a', generation: 1, sliceCount: 2, devices: 8 }],
    attempt: 1,
    startedAt: '2026-01-01T00:00:00.000Z',
    finishedAt: '2026-01-01T00:00:01.000Z',
    writes: 2,
    ...overrides,
  };
}

describe('tellsNews', () => {
  const problem = { field: 'devices[0].name', message: 'a lowercase RFC 1123 label' };
  it.each<[string, SyncStatus | undefined, SyncStatus, boolean]>([
    ['first-status-is-news', undefined, status(), true],
    ['same-status-is-not-news', status(), status(), false],
    [
      'new-generation-same-slices-is-not-news',
      status(),
      status({ snapshotGeneration: 4, attempt: 2, writes: 7, finishedAt: '2026-01-01T00:00:09Z' }),
      false,
    ],
    ['outcome-changed', status(), status({ outcome: 'retrying' }), true],
    ['slices-changed', status(), status({ slices: ['node-a-gpu-1'] }), true],
    ['slices-reordered', status(), status({ slices: ['node-a-gpu-2', 'node-a-gpu-1'] }), true],
    ['dropped-field-added', status(), status({ droppedFields: ['spec.devices[*].taints'] }), true],
    ['absent-dropped-fields-equal-empty', status(), status({ droppedFields: [] }), false],
    ['problem-added', status(), status({ problems: [problem] }), true],
    [
      'problem-message-changed',
      status({ problems: [problem] }),
      status({ problems: [{ ...problem, message: 'too long' }] }),
      true,
    ],
    [
      'same-problems',
      status({ problems: [problem] }),
      status({ problems: [{ ...problem }] }),
      false,
    ],
    ['error-appeared', status(), status({ error: 'connection refused' }), true],
    [
      'error-changed',
      status({ outcome: 'retrying', error: 'connection refused' }),
      status({ outcome: 'retrying', error: 'timeout' }),
      true,
    ],
    [
      'same-error-again',
      status({ outcome: 'retrying', error: 'timeout', attempt: 1 }),
      status({ outcome: 'retrying', error: 'timeout', attempt: 2 }),
      false,
    ],
    ['error-cleared', status({ error: 'x' }), status(), true],
    ['empty-error-equals-none', status(), status({ error: '' }), false],
  ])('%s', (_name, before, after, news) => {
    expect(tellsNews(before, after)).toBe(news);
  });
});

describe('feedbackOf', () => {
  it('keeps what a driver acts on and fills absent lists', () => {
    expect(feedbackOf(status({ error: 'e' }))).toEqual({
      outcome: 'synced',
      slices: ['node-a-gpu-1', 'node-a-gpu-2'],
      droppedFields: [],
      problems: [],
      error: 'e',
    });
  });
});

describe('owesSync', () => {
  it.each<[string, number, number | undefined, boolean]>([
    ['none-synced-yet', 1, undefined, true],
    ['synced-older', 5, 4, true],
    ['synced-much-older', 5, 0, true],
    ['synced-same', 5, 5, false],
    ['synced-newer', 5, 6, false],
  ])('%s', (_name, stored, synced, owes) => {
    expect(owesSync(stored, synced)).toBe(owes);
  });
});
