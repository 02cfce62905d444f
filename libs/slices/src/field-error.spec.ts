import { isTerminal, TerminalError } from '@slicekeeper/errors';
import { formatFieldError, InvalidDriverResourcesError, toTerminalError } from './field-error';
import type { FieldError } from './field-error';
import { planSync } from './plan-sync';
import { gpu, planInput, pool } from './testing/fixtures';

describe('formatFieldError', () => {
  const cases: [name: string, error: FieldError, text: string][] = [
    [
      'invalid-string-is-quoted',
      { path: 'pools[0].devices[3].name', type: 'Invalid value', value: 'GPU_0', message: 'bad' },
      'pools[0].devices[3].name: Invalid value: "GPU_0": bad',
    ],
    [
      'invalid-number-is-plain',
      { path: 'pools[0].generation', type: 'Invalid value', value: -1, message: 'must be >= 0' },
      'pools[0].generation: Invalid value: -1: must be >= 0',
    ],
    [
      'invalid-object-is-json',
      { path: 'a', type: 'Invalid value', value: { int: 1 }, message: 'one value' },
      'a: Invalid value: {"int":1}: one value',
    ],
    [
      'required-has-no-value',
      { path: 'driver', type: 'Required value', message: '' },
      'driver: Required value',
    ],
    [
      'too-long-hides-the-value',
      {
        path: 'x.string',
        type: 'Too long',
        value: 'a'.repeat(70),
        message: 'may not be more than 64 bytes',
      },
      'x.string: Too long: may not be more than 64 bytes',
    ],
    [
      'duplicate-without-message',
      { path: 'pools[1].name', type: 'Duplicate value', value: 'p', message: '' },
      'pools[1].name: Duplicate value: "p"',
    ],
    [
      'string-escapes',
      { path: 'k', type: 'Invalid value', value: 'a"b\n', message: 'm' },
      'k: Invalid value: "a\\"b\\n": m',
    ],
  ];

  it.each(cases)('%s', (_, error, text) => {
    expect(formatFieldError(error)).toBe(text);
  });
});

describe('toTerminalError', () => {
  const errors: FieldError[] = [
    { path: 'driver', type: 'Required value', message: '' },
    { path: 'pools[0].name', type: 'Duplicate value', value: 'p', message: '' },
  ];

  it('is a terminal error with code invalid that lists every problem', () => {
    const error = toTerminalError(errors);
    expect(error).toBeInstanceOf(TerminalError);
    expect(error).toBeInstanceOf(InvalidDriverResourcesError);
    expect(isTerminal(error)).toBe(true);
    expect(error?.code).toBe('invalid');
    expect(error?.message).toBe(
      'invalid driver resources: driver: Required value; pools[0].name: Duplicate value: "p"',
    );
    expect(error?.fieldErrors).toEqual(errors);
  });

  it('takes a context', () => {
    expect(
      toTerminalError(errors, { context: 'driver gpu.example.com on node-1' })?.message,
    ).toMatch(/^driver gpu\.example\.com on node-1: driver: Required value; /);
  });

  it('is undefined when nothing is wrong', () => {
    expect(toTerminalError([])).toBeUndefined();
  });

  it('bounds its message while keeping every problem', () => {
    // The message is stored in the key's status, returned by the API and logged.
    const devices = Array.from({ length: 10_000 }, (_, i) => gpu(i, { name: `GPU_${i}` }));
    let thrown: unknown;
    try {
      planSync(planInput({ pools: [pool({ devices })] }));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidDriverResourcesError);
    const error = thrown as InvalidDriverResourcesError;
    expect(error.fieldErrors).toHaveLength(10_000);
    expect(error.message.length).toBeLessThan(8 * 1024);
    expect(error.message).toMatch(
      /^invalid driver resources: pools\[0\]\.devices\[0\]\.name: Invalid value: "GPU_0": /,
    );
    expect(error.message).toContain('pools[0].devices[19].name: Invalid value: "GPU_19"');
    expect(error.message).not.toContain('devices[20]');
    expect(error.message).toMatch(/; … and 9980 more$/);
  });
});
