import { SupervisedProcess } from './supervised-process';

/** A Node.js child running `script`, with the test's PATH only. */
function node(script: string, options: { onMessage?: (message: unknown) => void } = {}) {
  return new SupervisedProcess({
    name: 'child',
    command: process.execPath,
    args: ['-e', script],
    env: { PATH: process.env.PATH },
    ...options,
  });
}

const LOG_THEN_IDLE = `
  console.log(JSON.stringify({ msg: 'started', port: 1234 }));
  setInterval(() => {}, 1000);
`;

describe('SupervisedProcess', () => {
  it('finds a log entry by its message or by a test, also one logged before the wait', async () => {
    const child = node(LOG_THEN_IDLE);
    try {
      expect((await child.waitForLog('started')).port).toBe(1234);
      expect((await child.waitForLog((entry) => entry.port === 1234)).msg).toBe('started');
    } finally {
      await child.stop();
    }
  });

  it('fails a wait with the last words on stderr when the process exits first', async () => {
    const child = node(`console.error('no config'); process.exit(3);`);
    await expect(child.waitForLog('started')).rejects.toThrow(
      /child exited \(3\) before it logged "started":\nno config/,
    );
  });

  it('stops a process that ignores SIGTERM with SIGKILL after the grace period', async () => {
    const child = node(`process.on('SIGTERM', () => {}); ${LOG_THEN_IDLE}`);
    await child.waitForLog('started');
    const stopping = child.stop(200);
    expect(child.stop(200)).toBe(stopping);
    expect(await stopping).toBe('SIGKILL');
    expect(child.running).toBe(false);
  });

  it('kills a process as a crash would', async () => {
    const child = node(LOG_THEN_IDLE);
    await child.waitForLog('started');
    await child.kill();
    expect(await child.exited).toBe('SIGKILL');
  });

  it('talks to a Node.js child over IPC', async () => {
    const received = new Promise<unknown>((resolve) => {
      const child = node(`process.on('message', (m) => { process.send(m); process.exit(0); });`, {
        onMessage: resolve,
      });
      child.send({ kind: 'ping' });
    });
    expect(await received).toEqual({ kind: 'ping' });
  });

  it('says why a command could not be started', async () => {
    const child = new SupervisedProcess({
      name: 'missing',
      command: 'slicekeeper-no-such-command',
      args: [],
      env: { PATH: process.env.PATH },
    });
    expect(await child.exited).toBe(-1);
    expect((child.startError as NodeJS.ErrnoException | undefined)?.code).toBe('ENOENT');
    expect(child.running).toBe(false);
  });
});
