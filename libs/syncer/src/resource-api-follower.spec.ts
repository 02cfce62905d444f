import { createMetricsRegistry } from '@slicekeeper/observability';
import type { ResourceApi, ResourceApiVersion } from '@slicekeeper/kube';
import { ManualClock } from '@slicekeeper/time/testing';
import { ResourceApiFollower } from './resource-api-follower';
import { SyncerMetrics } from './syncer-metrics';
import { silentLogger } from './testing/fakes';

function api(version: ResourceApiVersion, gitVersion: string, minor: number): ResourceApi {
  return { version, served: [version], release: { major: 1, minor, gitVersion } };
}

describe('ResourceApiFollower', () => {
  it('switches to a newly served version after an upgrade, resyncs, and says so in its metric', async () => {
    const clock = new ManualClock();
    const registry = createMetricsRegistry('test');
    const metrics = new SyncerMetrics(registry);
    const answers: (ResourceApi | Error)[] = [
      api('v1beta2', 'v1.33.4', 33),
      new Error('connection refused'),
      api('v1', 'v1.34.1', 34),
    ];
    const used: ResourceApiVersion[] = [];
    const resynced: string[] = [];
    const follower = new ResourceApiFollower({
      initial: api('v1beta2', 'v1.33.4', 33),
      discover: () => {
        const next = answers.shift();
        if (next === undefined) throw new Error('asked too often');
        return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
      },
      speakers: [{ useApiVersion: (version) => used.push(version) }],
      onChange: (found) => {
        resynced.push(found.version);
        return Promise.resolve();
      },
      intervalMs: 60_000,
      metrics,
      logger: silentLogger,
      clock,
    });
    follower.start();
    expect(follower.describe()).toBe('resource.k8s.io/v1beta2 (Kubernetes v1.33.4)');

    await clock.advance(60_000); // the same: nothing happens
    await clock.advance(60_000); // unreachable: the version in use stays
    expect(used).toEqual([]);
    await clock.advance(60_000); // upgraded
    expect(used).toEqual(['v1']);
    expect(resynced).toEqual(['v1']);
    expect(follower.describe()).toBe('resource.k8s.io/v1 (Kubernetes v1.34.1)');
    const text = await registry.metrics();
    expect(text).toMatch(
      /slicekeeper_resource_api_info\{group_version="resource.k8s.io\/v1",release="v1.34.1"[^}]*\} 1/,
    );
    expect(text).not.toContain('release="v1.33.4"');
    await follower.close();
  });
});
