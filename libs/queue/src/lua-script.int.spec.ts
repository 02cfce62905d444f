import { uniquePrefix, useRedisServer } from '@slicekeeper/testing';
import { LuaScript, execPipeline, replyOf } from './lua-script';

// Appends ARGV[1] to the list KEYS[1] and returns the list's length.
const PUSH = new LuaScript(`return redis.call('RPUSH', KEYS[1], ARGV[1])`, 1);

describe('LuaScript', () => {
  const db = useRedisServer();

  it('runs again after Redis forgot its scripts', async () => {
    const list = `${uniquePrefix('run')}:list`;
    expect(await PUSH.run(db.redis, [list], ['a'])).toBe(1);
    await db.redis.script('FLUSH');
    expect(await PUSH.run(db.redis, [list], ['b'])).toBe(2);
    expect(await db.redis.lrange(list, 0, -1)).toEqual(['a', 'b']);
  });

  it('runs in a pipeline, and again after Redis forgot its scripts', async () => {
    const prefix = uniquePrefix('pipeline');
    const list = `${prefix}:list`;
    const send = (item: string) =>
      execPipeline(db.redis, (pipeline) => {
        pipeline.set(`${prefix}:last`, item);
        PUSH.queue(pipeline, [list], [item]);
        pipeline.get(`${prefix}:last`);
      });

    expect((await send('a')).map(replyOf)).toEqual(['OK', 1, 'a']);
    await db.redis.script('FLUSH');
    expect((await send('b')).map(replyOf)).toEqual(['OK', 2, 'b']);
    // The script ran once per batch, even when its batch was sent twice.
    expect(await db.redis.lrange(list, 0, -1)).toEqual(['a', 'b']);
  });

  it('gives each of the pipelines sent together its own replies, after a script flush too', async () => {
    const prefix = uniquePrefix('together');
    const send = (list: string, items: readonly string[]) =>
      execPipeline(db.redis, (pipeline) => {
        for (const item of items) PUSH.queue(pipeline, [`${prefix}:${list}`], [item]);
        pipeline.get(`${prefix}:missing`);
      });

    await db.redis.script('FLUSH');
    const [a, b, c] = await Promise.all([
      send('a', ['a1', 'a2']),
      send('b', []),
      send('c', ['c1']),
    ]);
    expect(a.map(replyOf)).toEqual([1, 2, null]);
    expect(b.map(replyOf)).toEqual([null]);
    expect(c.map(replyOf)).toEqual([1, null]);
    expect(await db.redis.lrange(`${prefix}:a`, 0, -1)).toEqual(['a1', 'a2']);
  });

  it("reports each command's error in its reply", async () => {
    const key = `${uniquePrefix('errors')}:string`;
    await db.redis.set(key, 'not a list');
    const [pushed, read] = await execPipeline(db.redis, (pipeline) => {
      PUSH.queue(pipeline, [key], ['a']);
      pipeline.get(key);
    });
    expect(pushed?.[0]?.message).toMatch(/^WRONGTYPE/);
    expect(read).toEqual([null, 'not a list']);
  });
});
