import { labelValueProblems, qualifiedNameProblems } from '@slicekeeper/contracts';
import { FieldPath, aggregateMessage, fieldError } from './field-errors';
import type { FieldError } from './field-errors';

/**
 * Label and field selectors with apimachinery's grammar, semantics and error messages
 * (`k8s.io/apimachinery/pkg/labels` and `pkg/fields`).
 */

export class SelectorError extends Error {
  override readonly name = 'SelectorError';
}

type Operator = 'in' | 'notin' | '=' | '==' | '!=' | 'exists' | '!' | 'gt' | 'lt';

export interface LabelRequirement {
  readonly key: string;
  readonly operator: Operator;
  readonly values: readonly string[];
}

/** A parsed label selector; the empty selector matches everything. */
export class LabelSelector {
  constructor(readonly requirements: readonly LabelRequirement[]) {}

  get empty(): boolean {
    return this.requirements.length === 0;
  }

  matches(labels: Readonly<Record<string, string>>): boolean {
    for (const r of this.requirements) {
      const has = Object.hasOwn(labels, r.key);
      const value = has ? labels[r.key] : undefined;
      switch (r.operator) {
        case 'in':
        case '=':
        case '==':
          if (value === undefined || !r.values.includes(value)) return false;
          break;
        case 'notin':
        case '!=':
          if (value !== undefined && r.values.includes(value)) return false;
          break;
        case 'exists':
          if (!has) return false;
          break;
        case '!':
          if (has) return false;
          break;
        case 'gt':
        case 'lt': {
          if (value === undefined || !/^[+-]?\d+$/.test(value)) return false;
          const bound = Number(r.values[0]);
          const n = Number(value);
          if (r.operator === 'gt' ? !(n > bound) : !(n < bound)) return false;
          break;
        }
      }
    }
    return true;
  }
}

type TokenKind =
  | 'id'
  | 'end'
  | ','
  | '('
  | ')'
  | '!'
  | '='
  | '=='
  | '!='
  | '>'
  | '<'
  | 'in'
  | 'notin'
  | 'error';

interface Token {
  kind: TokenKind;
  text: string;
}

const SPECIAL = new Set(['=', '!', '(', ')', ',', '>', '<']);
const WHITESPACE = new Set([' ', '\t', '\r', '\n']);
const SPECIAL_TOKENS = new Set(['!', '!=', '==', '=', '>', '<', '(', ')', ',']);

function lex(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  for (;;) {
    while (i < input.length && WHITESPACE.has(input[i] ?? '')) i++;
    if (i >= input.length) {
      tokens.push({ kind: 'end', text: '' });
      return tokens;
    }
    const ch = input[i] ?? '';
    if (SPECIAL.has(ch)) {
      let text = ch;
      let j = i + 1;
      while (
        j < input.length &&
        SPECIAL.has(input[j] ?? '') &&
        SPECIAL_TOKENS.has(text + (input[j] ?? ''))
      ) {
        text += input[j] ?? '';
        j++;
      }
      i = j;
      tokens.push(
        SPECIAL_TOKENS.has(text)
          ? { kind: text as TokenKind, text }
          : { kind: 'error', text: `error expected: keyword found '${text}'` },
      );
      continue;
    }
    let j = i;
    while (j < input.length && !WHITESPACE.has(input[j] ?? '') && !SPECIAL.has(input[j] ?? '')) j++;
    const text = input.slice(i, j);
    i = j;
    tokens.push({ kind: text === 'in' || text === 'notin' ? text : 'id', text });
  }
}

const BINARY_OPERATORS = 'in, notin, =, ==, !=, gt, lt';

class LabelParser {
  private pos = 0;
  constructor(private readonly tokens: Token[]) {}

  /** In the Values context, `in`/`notin` are plain identifiers. */
  private peek(values = true): Token {
    const t = this.tokens[this.pos] ?? { kind: 'end', text: '' };
    return values && (t.kind === 'in' || t.kind === 'notin') ? { kind: 'id', text: t.text } : t;
  }

  private next(values = true): Token {
    const t = this.peek(values);
    this.pos = Math.min(this.pos + 1, this.tokens.length - 1);
    return t;
  }

  parse(): LabelRequirement[] {
    const requirements: LabelRequirement[] = [];
    for (;;) {
      const t = this.peek();
      if (t.kind === 'id' || t.kind === '!') {
        let r: LabelRequirement;
        try {
          r = this.requirement();
        } catch (error) {
          throw new SelectorError(
            `unable to parse requirement: ${error instanceof Error ? error.message : String(error)}`,
          );
        }
        requirements.push(r);
        const after = this.next();
        if (after.kind === 'end') return requirements;
        if (after.kind === ',') {
          const t2 = this.peek();
          if (t2.kind !== 'id' && t2.kind !== '!') {
            throw new SelectorError(`found '${t2.text}', expected: identifier after ','`);
          }
          continue;
        }
        throw new SelectorError(`found '${after.text}', expected: ',' or 'end of string'`);
      }
      if (t.kind === 'end') return requirements;
      throw new SelectorError(`found '${t.text}', expected: !, identifier, or 'end of string'`);
    }
  }

  private requirement(): LabelRequirement {
    let t = this.next();
    let operator: Operator | undefined;
    if (t.kind === '!') {
      operator = '!';
      t = this.next();
    }
    if (t.kind !== 'id') throw new Error(`found '${t.text}', expected: identifier`);
    const key = t.text;
    const keyErrors = qualifiedNameProblems(key);
    if (keyErrors.length > 0) {
      throw new Error(
        aggregateMessage([fieldError.invalid(FieldPath.root('key'), key, keyErrors.join('; '))]),
      );
    }
    const ahead = this.peek();
    if (ahead.kind === 'end' || ahead.kind === ',') {
      return build(key, operator ?? 'exists', []);
    }
    if (operator === '!') {
      // `!key` followed by an operator: apimachinery parses the operator and rejects the values.
    }
    const opToken = this.next(false);
    let op: Operator;
    switch (opToken.kind) {
      case 'in':
        op = 'in';
        break;
      case 'notin':
        op = 'notin';
        break;
      case '=':
        op = '=';
        break;
      case '==':
        op = '==';
        break;
      case '!=':
        op = '!=';
        break;
      case '>':
        op = 'gt';
        break;
      case '<':
        op = 'lt';
        break;
      default:
        throw new Error(`found '${opToken.text}', expected: ${BINARY_OPERATORS}`);
    }
    const values = op === 'in' || op === 'notin' ? this.setValues() : this.exactValue();
    return build(key, op, values);
  }

  private setValues(): string[] {
    const open = this.next();
    if (open.kind !== '(') throw new Error(`found '${open.text}' expected: '('`);
    const first = this.peek();
    if (first.kind === ')') {
      this.next();
      return [''];
    }
    if (first.kind !== 'id' && first.kind !== ',') {
      throw new Error(`found '${first.text}', expected: ',', ')' or identifier`);
    }
    const values = new Set<string>();
    for (;;) {
      const t = this.next();
      if (t.kind === 'id') {
        values.add(t.text);
        const t2 = this.peek();
        if (t2.kind === ',') continue;
        if (t2.kind === ')') break;
        throw new Error(`found '${t2.text}', expected: ',' or ')'`);
      } else if (t.kind === ',') {
        if (values.size === 0) values.add('');
        const t2 = this.peek();
        if (t2.kind === ')') {
          values.add('');
          break;
        }
        if (t2.kind === ',') {
          this.next();
          values.add('');
        }
      } else {
        throw new Error(`found '${t.text}', expected: ',', or identifier`);
      }
    }
    const close = this.next();
    if (close.kind !== ')') throw new Error(`found '${first.text}', expected: ')'`);
    return [...values].sort();
  }

  private exactValue(): string[] {
    const t = this.peek();
    if (t.kind === 'end' || t.kind === ',') return [''];
    const v = this.next();
    if (v.kind === 'id') return [v.text];
    throw new Error(`found '${v.text}', expected: identifier`);
  }
}

function build(key: string, operator: Operator, values: string[]): LabelRequirement {
  const errs: FieldError[] = [];
  const valuesPath = FieldPath.root('values');
  if ((operator === 'in' || operator === 'notin') && values.length === 0) {
    errs.push(
      fieldError.invalid(
        valuesPath,
        values,
        "for 'in', 'notin' operators, values set can't be empty",
      ),
    );
  }
  if ((operator === 'gt' || operator === 'lt') && values.length === 1) {
    values.forEach((v, i) => {
      if (!/^[+-]?\d+$/.test(v)) {
        errs.push(
          fieldError.invalid(
            valuesPath.index(i),
            v,
            "for 'Gt', 'Lt' operators, the value must be an integer",
          ),
        );
      }
    });
  }
  values.forEach((v, i) => {
    const msgs = labelValueProblems(v);
    if (msgs.length > 0)
      errs.push(fieldError.invalid(valuesPath.index(i).key(key), v, msgs.join('; ')));
  });
  if (errs.length > 0) throw new Error(aggregateMessage(errs));
  return { key, operator, values };
}

/** Parses a `labelSelector` query value. @throws SelectorError with apimachinery's message. */
export function parseLabelSelector(input: string): LabelSelector {
  const tokens = lex(input);
  const error = tokens.find((t) => t.kind === 'error');
  const parser = new LabelParser(tokens);
  if (error !== undefined) {
    // The lexer error surfaces where the parser meets it; parsing up to it keeps the message.
    try {
      parser.parse();
    } catch (e) {
      if (e instanceof SelectorError) throw e;
    }
    throw new SelectorError(
      `unable to parse requirement: found '${error.text}', expected: identifier`,
    );
  }
  return new LabelSelector(parser.parse());
}

export interface FieldRequirement {
  readonly field: string;
  readonly value: string;
  readonly negate: boolean;
}

/** A parsed field selector: the AND of `field=value` and `field!=value` terms. */
export class FieldSelector {
  constructor(readonly requirements: readonly FieldRequirement[]) {}

  get empty(): boolean {
    return this.requirements.length === 0;
  }

  /** The value a term requires for `field`, when the selector pins it with `=`. */
  exact(field: string): string | undefined {
    return this.requirements.find((r) => r.field === field && !r.negate)?.value;
  }

  matches(fields: Readonly<Record<string, string>>): boolean {
    for (const r of this.requirements) {
      const value = fields[r.field] ?? '';
      if (r.negate ? value === r.value : value !== r.value) return false;
    }
    return true;
  }
}

function splitTerms(input: string): string[] {
  const terms: string[] = [];
  let current = '';
  let escaped = false;
  for (const ch of input) {
    if (escaped) {
      current += ch;
      escaped = false;
    } else if (ch === '\\') {
      current += ch;
      escaped = true;
    } else if (ch === ',') {
      terms.push(current);
      current = '';
    } else {
      current += ch;
    }
  }
  terms.push(current);
  return terms;
}

function unescape(value: string): string {
  let out = '';
  let escaped = false;
  for (const ch of value) {
    if (escaped) {
      if (ch !== '\\' && ch !== ',' && ch !== '=')
        throw new SelectorError(`invalid field selector: invalid escape sequence: \\${ch}`);
      out += ch;
      escaped = false;
    } else if (ch === '\\') {
      escaped = true;
    } else if (ch === ',' || ch === '=') {
      throw new SelectorError(
        `invalid field selector: unescaped character in value: ${ch.codePointAt(0) ?? 0}`,
      );
    } else {
      out += ch;
    }
  }
  if (escaped) throw new SelectorError('invalid field selector: invalid escape sequence: \\');
  return out;
}

/**
 * Parses a `fieldSelector` query value; `convert` maps each field label to the field it selects
 * (returning nothing keeps the label) or throws the resource's "field label not supported" error.
 * @throws SelectorError
 */
export function parseFieldSelector(
  input: string,
  convert: (label: string) => string | undefined,
): FieldSelector {
  const parts = splitTerms(input).sort();
  const requirements: FieldRequirement[] = [];
  for (const part of parts) {
    if (part === '') continue;
    let found: { index: number; op: string } | undefined;
    for (let i = 0; i < part.length && found === undefined; i++) {
      for (const op of ['!=', '==', '=']) {
        if (part.startsWith(op, i)) {
          found = { index: i, op };
          break;
        }
      }
    }
    if (found === undefined) {
      throw new SelectorError(`invalid selector: '${input}'; can't understand '${part}'`);
    }
    const field = part.slice(0, found.index);
    const value = unescape(part.slice(found.index + found.op.length));
    requirements.push({ field, value, negate: found.op === '!=' });
  }
  return new FieldSelector(
    requirements.map((r) => {
      const field = convert(r.field) ?? r.field;
      return field === r.field ? r : { ...r, field };
    }),
  );
}
