import { owesSync } from '@slicekeeper/contracts';
import { useRedisServer } from '@slicekeeper/testing';
import { OWES_SYNC_LUA } from './owes-sync-lua';

describe('the Lua mirror of owesSync', () => {
  const db = useRedisServer();

  /** Runs the Lua rule on the values as Redis holds them (decimal strings, `''` for none). */
  async function lua(stored: number, synced: string): Promise<boolean> {
    const script = `${OWES_SYNC_LUA}
if owes_sync(tonumber(ARGV[1]), tonumber(ARGV[2])) then return 1 end
return 0`;
    return Number(await db.redis.eval(script, 0, String(stored), synced)) === 1;
  }

  it.each<[string, number, number | undefined]>([
    ['none-synced-yet', 1, undefined],
    ['synced-older', 5, 4],
    ['synced-much-older', 5, 0],
    ['synced-same', 5, 5],
    ['synced-newer', 5, 6],
    ['large-generations', 9_007_199_254, 9_007_199_253],
  ])('agrees with the TypeScript rule: %s', async (_name, stored, synced) => {
    const expected = owesSync(stored, synced);
    expect(await lua(stored, synced === undefined ? '' : String(synced))).toBe(expected);
  });

  it('takes an unreadable synced generation as none: a sync is owed', async () => {
    expect(await lua(3, 'seven')).toBe(true);
  });
});
