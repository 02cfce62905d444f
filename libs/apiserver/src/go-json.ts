/**
 * Go's encoding/json syntax errors, so that a malformed body gets the real server's message
 * ("invalid character '}' looking for beginning of value", "unexpected end of JSON input").
 * Only used after `JSON.parse` has already failed.
 */

function quoteChar(ch: string): string {
  if (ch === "'") return "'\\''";
  if (ch === '"') return "'\"'";
  const s = JSON.stringify(ch);
  return `'${s.slice(1, -1)}'`;
}

class Scanner {
  private i = 0;
  constructor(private readonly text: string) {}

  private fail(context: string): never {
    if (this.i >= this.text.length) throw new Error('unexpected end of JSON input');
    throw new Error(`invalid character ${quoteChar(this.text[this.i] ?? '')} ${context}`);
  }

  private ws(): void {
    while (this.i < this.text.length && ' \t\r\n'.includes(this.text[this.i] ?? '')) this.i++;
  }

  private literal(word: string): void {
    for (let k = 0; k < word.length; k++) {
      if (this.text[this.i] !== word[k])
        this.fail(`in literal ${word} (expecting '${word[k] ?? ''}')`);
      this.i++;
    }
  }

  private string(): void {
    this.i++;
    while (this.i < this.text.length) {
      const ch = this.text[this.i] ?? '';
      if (ch === '"') {
        this.i++;
        return;
      }
      if (ch === '\\') {
        this.i++;
        const esc = this.text[this.i];
        if (esc === undefined) this.fail('');
        if (esc === 'u') {
          for (let k = 0; k < 4; k++) {
            this.i++;
            if (!/[0-9a-fA-F]/.test(this.text[this.i] ?? ''))
              this.fail('in \\u hexadecimal character escape');
          }
        } else if (!'"\\/bfnrt'.includes(esc)) {
          this.fail('in string escape code');
        }
        this.i++;
        continue;
      }
      if (ch < ' ') this.fail('in string literal');
      this.i++;
    }
    this.fail('');
  }

  private number(): void {
    if (this.text[this.i] === '-') this.i++;
    if (this.text[this.i] === '0') this.i++;
    else if (/[1-9]/.test(this.text[this.i] ?? ''))
      while (/[0-9]/.test(this.text[this.i] ?? '')) this.i++;
    else this.fail('in numeric literal');
    if (this.text[this.i] === '.') {
      this.i++;
      if (!/[0-9]/.test(this.text[this.i] ?? ''))
        this.fail('after decimal point in numeric literal');
      while (/[0-9]/.test(this.text[this.i] ?? '')) this.i++;
    }
    if (this.text[this.i] === 'e' || this.text[this.i] === 'E') {
      this.i++;
      if (this.text[this.i] === '+' || this.text[this.i] === '-') this.i++;
      if (!/[0-9]/.test(this.text[this.i] ?? '')) this.fail('in exponent of numeric literal');
      while (/[0-9]/.test(this.text[this.i] ?? '')) this.i++;
    }
  }

  value(): void {
    this.ws();
    const ch = this.text[this.i];
    if (ch === undefined) this.fail('');
    if (ch === '{') {
      this.i++;
      this.ws();
      if (this.text[this.i] === '}') {
        this.i++;
        return;
      }
      for (;;) {
        this.ws();
        if (this.text[this.i] !== '"') this.fail('looking for beginning of object key string');
        this.string();
        this.ws();
        if (this.text[this.i] !== ':') this.fail('after object key');
        this.i++;
        this.value();
        this.ws();
        if (this.text[this.i] === ',') {
          this.i++;
          continue;
        }
        if (this.text[this.i] === '}') {
          this.i++;
          return;
        }
        this.fail('after object key:value pair');
      }
    }
    if (ch === '[') {
      this.i++;
      this.ws();
      if (this.text[this.i] === ']') {
        this.i++;
        return;
      }
      for (;;) {
        this.value();
        this.ws();
        if (this.text[this.i] === ',') {
          this.i++;
          continue;
        }
        if (this.text[this.i] === ']') {
          this.i++;
          return;
        }
        this.fail('after array element');
      }
    }
    if (ch === '"') this.string();
    else if (ch === 't') this.literal('true');
    else if (ch === 'f') this.literal('false');
    else if (ch === 'n') this.literal('null');
    else if (ch === '-' || (ch >= '0' && ch <= '9')) this.number();
    else this.fail('looking for beginning of value');
  }

  document(): void {
    this.value();
    this.ws();
    if (this.i < this.text.length) this.fail('after top-level value');
  }
}

/** The message Go's json.Unmarshal gives for a syntactically invalid document. */
export function goJsonSyntaxError(text: string): string {
  try {
    new Scanner(text).document();
    return 'invalid JSON';
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** Go's `%v` of a float64: the shortest `%g`, which turns to an exponent from 1e+06 on. */
function goFloat(n: number): string {
  if (Number.isInteger(n)) return String(n);
  const [mantissa = '', exponent = '0'] = n.toExponential().split('e');
  const exp = Number(exponent);
  if (exp >= -4 && exp < 6) return String(n);
  return `${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
}

/**
 * Go's `%v` of a value decoded from JSON, as apimachinery's error messages print patches:
 * `map[key:value]` with sorted keys, `[a b]`, strings bare, `<nil>`. JSON integers print as
 * integers (the server decodes them as int64), other numbers as float64.
 */
export function goFormatValue(value: unknown): string {
  if (value === null || value === undefined) return '<nil>';
  if (typeof value === 'number') return goFloat(value);
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `[${value.map((v) => goFormatValue(v)).join(' ')}]`;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
    a < b ? -1 : a > b ? 1 : 0,
  );
  return `map[${entries.map(([k, v]) => `${k}:${goFormatValue(v)}`).join(' ')}]`;
}

/**
 * A JSON document as written, before a decoder folds it into a value: every member of an object
 * in document order, repeated keys included. Strict decoding needs this to report what
 * `JSON.parse` silently drops (sigs.k8s.io/json's `duplicate field`).
 */
export type JsonNode =
  | { readonly kind: 'object'; readonly members: readonly (readonly [string, JsonNode])[] }
  | { readonly kind: 'array'; readonly items: readonly JsonNode[] }
  | { readonly kind: 'scalar' };

const SCALAR: JsonNode = { kind: 'scalar' };

/** Reads the members of a document `JSON.parse` has already accepted. */
class TreeReader {
  private i = 0;
  constructor(private readonly text: string) {}

  private ws(): void {
    while (' \t\r\n'.includes(this.text[this.i] ?? 'x')) this.i++;
  }

  /** The end of the string literal starting at `this.i` (its closing quote excluded). */
  private stringEnd(): number {
    let j = this.i + 1;
    while (this.text[j] !== '"') j += this.text[j] === '\\' ? 2 : 1;
    return j;
  }

  value(): JsonNode {
    this.ws();
    const ch = this.text[this.i];
    if (ch === '{') {
      this.i++;
      const members: [string, JsonNode][] = [];
      this.ws();
      while (this.text[this.i] === '"') {
        const end = this.stringEnd();
        const key = JSON.parse(this.text.slice(this.i, end + 1)) as string;
        this.i = end + 1;
        this.ws();
        this.i++; // ':'
        members.push([key, this.value()]);
        this.ws();
        if (this.text[this.i] === ',') this.i++;
        this.ws();
      }
      this.i++; // '}'
      return { kind: 'object', members };
    }
    if (ch === '[') {
      this.i++;
      const items: JsonNode[] = [];
      this.ws();
      while (this.text[this.i] !== ']') {
        items.push(this.value());
        this.ws();
        if (this.text[this.i] === ',') this.i++;
        this.ws();
      }
      this.i++;
      return { kind: 'array', items };
    }
    if (ch === '"') this.i = this.stringEnd() + 1;
    else
      while (this.i < this.text.length && !',]} \t\r\n'.includes(this.text[this.i] ?? '')) this.i++;
    return SCALAR;
  }
}

/** The members of a JSON document `JSON.parse` accepted, repeated keys kept. */
export function jsonTree(text: string): JsonNode {
  return new TreeReader(text).value();
}

/** Whether any object of the document repeats a key (the cheap check before a strict walk). */
export function hasDuplicateKeys(node: JsonNode): boolean {
  if (node.kind === 'array') return node.items.some(hasDuplicateKeys);
  if (node.kind !== 'object') return false;
  const seen = new Set<string>();
  for (const [key, value] of node.members) {
    if (seen.has(key)) return true;
    seen.add(key);
    if (hasDuplicateKeys(value)) return true;
  }
  return false;
}
