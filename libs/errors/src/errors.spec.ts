import { TerminalError, TransientError, errorMessage, isTerminal, withContext } from './errors';

describe('errors', () => {
  it('classifies terminal and transient errors', () => {
    expect(isTerminal(new TerminalError('bad device name', { code: 'invalid' }))).toBe(true);
    expect(isTerminal(new TransientError('connection refused'))).toBe(false);
  });

  it('treats unknown errors as transient so that they are retried, not dropped', () => {
    expect(isTerminal(new Error('socket hang up'))).toBe(false);
    expect(isTerminal('boom')).toBe(false);
    expect(withContext('list ResourceSlices', new Error('socket hang up'))).toBeInstanceOf(
      TransientError,
    );
  });

  it('adds context while keeping kind, code and Retry-After', () => {
    const wrapped = withContext(
      'update ResourceSlice "a"',
      new TransientError('too many requests', { code: 'throttled', retryAfterMs: 2000 }),
    );
    expect(wrapped).toBeInstanceOf(TransientError);
    expect(wrapped.message).toBe('update ResourceSlice "a": too many requests');
    expect(wrapped.code).toBe('throttled');
    expect((wrapped as TransientError).retryAfterMs).toBe(2000);

    const terminal = withContext(
      'create ResourceSlice',
      new TerminalError('forbidden', { code: 'forbidden' }),
    );
    expect(terminal).toBeInstanceOf(TerminalError);
    expect(terminal.message).toBe('create ResourceSlice: forbidden');
    expect(terminal.name).toBe('TerminalError');
  });

  it('describes anything thrown', () => {
    expect(errorMessage(new Error('x'))).toBe('x');
    expect(errorMessage('y')).toBe('y');
    expect(errorMessage({ code: 5 })).toBe('{"code":5}');
    expect(errorMessage(undefined)).toBe('undefined');
  });
});
