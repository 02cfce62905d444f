import { firstChoice } from './lease-manager';

describe('firstChoice (rendezvous hashing)', () => {
  const keys = Array.from({ length: 3000 }, (_, i) => `node-${i}/gpu.example.com`);

  it('spreads keys evenly over the replicas', () => {
    const counts = new Map<string, number>();
    for (const key of keys) {
      const owner = firstChoice(key, ['r1', 'r2', 'r3']) ?? '';
      counts.set(owner, (counts.get(owner) ?? 0) + 1);
    }
    for (const replica of ['r1', 'r2', 'r3']) {
      expect(counts.get(replica)).toBeGreaterThan(850);
      expect(counts.get(replica)).toBeLessThan(1150);
    }
  });

  it('moves only the keys of a replica that leaves', () => {
    for (const key of keys) {
      const before = firstChoice(key, ['r1', 'r2', 'r3']);
      const after = firstChoice(key, ['r1', 'r3']);
      if (before !== 'r2') expect(after).toBe(before);
    }
  });

  it('has no choice without replicas', () => {
    expect(firstChoice('n/d', [])).toBeUndefined();
  });
});
