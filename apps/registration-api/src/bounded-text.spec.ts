import { boundedText } from './bounded-text';

/**
 * C0 and C1 controls, DEL, bidi marks, overrides and isolates, line and paragraph separators,
 * lone surrogates.
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069\p{Cs}]/u;

describe('boundedText', () => {
  it.each([
    ['plain text as it is', 'GetInfo: unavailable', 'GetInfo: unavailable'],
    ['newlines and tabs as escapes', 'a\nb\r\nc\td', 'a\\nb\\r\\nc\\td'],
    ['a terminal escape sequence', '\u001b[31mred\u001b[0m', '\\u001b[31mred\\u001b[0m'],
    [
      'NUL, BEL, DEL and C1 controls',
      'a\u0000b\u0007c\u007fd\u009be',
      'a\\u0000b\\u0007c\\u007fd\\u009be',
    ],
    ['bidi overrides that reorder what people read', 'abc\u202Efdp.exe', 'abc\\u202efdp.exe'],
    ['line separators that split log lines', 'a\u2028b\u2029c', 'a\\u2028b\\u2029c'],
    ['a lone surrogate, which is not text', 'a\ud800b', 'a\\ud800b'],
    ['non-ASCII letters and emoji as they are', 'größe 🚀', 'größe 🚀'],
  ])('renders %s', (_name, text, expected) => {
    expect(boundedText(text)).toBe(expected);
  });

  it('bounds long text to 512 characters with a marker saying how much was cut', () => {
    const bounded = boundedText('x'.repeat(10_000));
    expect(bounded).toBe(`${'x'.repeat(512)}… (9488 more characters)`);
  });

  it('counts the bound on what is shown, escapes included, and never cuts an escape in two', () => {
    const bounded = boundedText('\u001b'.repeat(100), 20);
    // Each escape is 6 characters: 3 fit into 20.
    expect(bounded).toBe(`${'\\u001b'.repeat(3)}… (97 more characters)`);
  });

  it('never cuts a character made of two UTF-16 units in two', () => {
    const bounded = boundedText('🚀'.repeat(10), 5);
    expect(bounded).toBe('🚀🚀… (8 more characters)');
    expect(bounded).not.toMatch(/\p{Cs}/u);
  });

  it('leaves text at the bound whole', () => {
    expect(boundedText('y'.repeat(512))).toBe('y'.repeat(512));
  });

  it('never returns anything unsafe, whatever it is given', () => {
    let all = '';
    for (let code = 0; code < 0x10000; code++) all += String.fromCharCode(code);
    const bounded = boundedText(all, 1_000_000);
    expect(bounded).not.toMatch(UNSAFE);
    expect(bounded).toContain('\\u0000');
  });
});
