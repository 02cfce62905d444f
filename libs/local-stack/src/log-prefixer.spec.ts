import { LogPrefixer } from './log-prefixer';

describe('LogPrefixer', () => {
  const prefixer = new LogPrefixer({ names: ['redis', 'slice-syncer-1'] });

  it('unpacks a pino line into level, message and fields, behind an aligned prefix', () => {
    const line = JSON.stringify({
      level: 30,
      time: '2026-01-01T00:00:00.000Z',
      pid: 1,
      hostname: 'h',
      service: 'slice-syncer',
      msg: 'started',
      probes: 'http://127.0.0.1:9464',
      concurrency: 8,
    });
    expect(prefixer.format('slice-syncer-1', line)).toBe(
      '[slice-syncer-1] INFO  started probes=http://127.0.0.1:9464 concurrency=8',
    );
    expect(prefixer.format('redis', JSON.stringify({ level: 50, msg: 'failed', err: 'a b' }))).toBe(
      '[redis]          ERROR failed err="a b"',
    );
  });

  it('shows other lines as they are', () => {
    expect(prefixer.format('redis', 'Ready to accept connections')).toBe(
      '[redis]          Ready to accept connections',
    );
    expect(prefixer.format('redis', '{not json')).toBe('[redis]          {not json');
  });

  it('colours the prefix per process only when asked', () => {
    const colored = new LogPrefixer({ names: ['a', 'b'], color: true });
    expect(colored.format('a', 'x')).toBe('\u001b[36m[a]\u001b[0m x');
    expect(colored.format('b', 'x')).toBe('\u001b[35m[b]\u001b[0m x');
  });
});
