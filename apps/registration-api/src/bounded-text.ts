/**
 * Characters that must not reach a reader as they are: controls (C0, DEL, C1: terminal escape
 * sequences, carriage returns that forge log lines), format characters (bidi overrides and
 * isolates that make text read differently from what it is), line and paragraph separators,
 * and lone surrogates.
 */
const UNSAFE = /^[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]$/u;

const SHORT_ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** Longest text the API repeats from elsewhere, characters. */
export const MAX_ECHOED_TEXT = 512;

/**
 * Text the API did not write — a plugin's GetInfo or NotifyRegistrationStatus error, the names
 * and versions it reports, fastify's echo of a request — made safe to put in a response or a
 * log line: unsafe characters become visible escapes (`\n`, `\u001b`), and text longer than
 * `maxLength` characters (escapes counted as shown) is cut at a character boundary and ends
 * with `… (N more characters)`.
 */
export function boundedText(text: string, maxLength = MAX_ECHOED_TEXT): string {
  let shown = '';
  let omitted = 0;
  for (const char of text) {
    if (omitted > 0) {
      omitted++;
      continue;
    }
    const piece = escaped(char);
    if (shown.length + piece.length > maxLength) omitted = 1;
    else shown += piece;
  }
  return omitted === 0 ? shown : `${shown}… (${omitted} more characters)`;
}

function escaped(char: string): string {
  if (!UNSAFE.test(char)) return char;
  const short = SHORT_ESCAPES[char];
  if (short !== undefined) return short;
  const code = char.codePointAt(0) ?? 0;
  return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, '0')}`;
}
