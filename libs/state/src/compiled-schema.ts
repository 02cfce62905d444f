import Ajv from 'ajv';
import type { ValidateFunction } from 'ajv';
import { z } from 'zod';

/** What a schema's root may add that JSON Schema cannot say: a rule over the whole value. */
type Refinement<T> = (value: T) => boolean;

export interface CompiledSchemaOptions<T> {
  /**
   * The predicates behind the schema's own refinements (its root's `superRefine`s), in any
   * order: JSON Schema cannot express them, so the compiled check runs them on what it accepts.
   * Their count must match the schema's; the schema's refinements must call the same functions.
   */
  refinements?: readonly Refinement<T>[];
}

/**
 * A record schema with a compiled check: the JSON Schema of the zod schema, compiled by ajv into
 * straight-line code. Accepting a snapshot of 8 devices costs it a few microseconds where zod's
 * parse costs tens when hot and hundreds when decodes come 10 ms apart (issue 29: a change at
 * 100 changes/s reads one snapshot, one stream state and sometimes a status).
 *
 * zod stays the authority. A value the compiled check refuses goes to zod, for its error naming
 * the field and the rule (or its data, should zod accept it after all); so the compiled check
 * must never accept what zod refuses. The constructor throws for a schema it cannot translate
 * exactly: anything that changes a value (transforms, defaults, trimming), objects that strip
 * unknown keys instead of refusing them, regular expressions with flags, checks JSON Schema has no
 * word for, and refinements whose predicates are not given.
 */
export class CompiledSchema<T> {
  private readonly validate: ValidateFunction;
  private readonly refinements: readonly Refinement<T>[];

  constructor(
    readonly zod: z.ZodType<T>,
    options: CompiledSchemaOptions<T> = {},
  ) {
    this.refinements = options.refinements ?? [];
    const refined = exactChecks(zod, 'the root', true);
    if (refined !== this.refinements.length) {
      throw new Error(
        `the schema has ${refined} refinement(s) at its root, ${this.refinements.length} predicate(s) were given`,
      );
    }
    this.validate = compiler.compile(z.toJSONSchema(zod, { target: 'draft-7' }));
  }

  /** Whether zod accepts the value, when the compiled check says so; false means "ask zod". */
  accepts(value: unknown): value is T {
    return this.validate(value) && this.refinements.every((refined) => refined(value as T));
  }

  /** The value as zod decodes it: the value itself when the compiled check accepts it. */
  safeParse(value: unknown): z.ZodSafeParseResult<T> {
    return this.accepts(value) ? { success: true, data: value } : this.zod.safeParse(value);
  }
}

/**
 * Lengths as JavaScript counts them (UTF-16 code units, as zod does, not code points: ajv's
 * `unicode: false`, which it calls deprecated and still honours), patterns without the `u` flag
 * (as zod's are compiled), formats left to their patterns (zod emits one with every format it
 * checks, which `exactChecks` requires). Strict, a schema problem throws; so the logger would
 * only carry the notice about `unicode`.
 */
const compiler = new Ajv({
  logger: false,
  strict: true,
  unicode: false,
  unicodeRegExp: false,
  validateFormats: false,
});

/** zod's internal definition of a schema, the parts this module reads. */
interface Definition {
  type: string;
  checks?: { _zod: { def: CheckDefinition } }[];
  shape?: Record<string, z.ZodType>;
  catchall?: z.ZodType;
  innerType?: z.ZodType;
  element?: z.ZodType;
  options?: z.ZodType[];
  keyType?: z.ZodType;
  valueType?: z.ZodType;
  format?: string;
  pattern?: RegExp;
}

interface CheckDefinition {
  check: string;
  format?: string;
  pattern?: RegExp;
}

const definition = (schema: z.ZodType): Definition => schema._zod.def as unknown as Definition;

/** The checks JSON Schema says exactly (bounds of numbers, lengths, sizes). */
const EXACT_CHECKS = new Set([
  'less_than',
  'greater_than',
  'max_length',
  'min_length',
  'length_equals',
]);

/**
 * Throws unless the schema's JSON Schema accepts exactly what it accepts, refinements aside;
 * returns how many refinements its root has (`root`: whether `schema` is the root).
 */
function exactChecks(schema: z.ZodType, at: string, root: boolean): number {
  const def = definition(schema);
  const refuse = (what: string): never => {
    throw new Error(`cannot compile ${what} at ${at} exactly`);
  };
  const patternOf = (pattern: RegExp | undefined, what: string): void => {
    if (pattern === undefined) refuse(`${what} without a pattern`);
    else if (pattern.flags !== '') refuse(`the pattern /${pattern.source}/${pattern.flags}`);
  };
  let refinements = 0;
  for (const { _zod: check } of def.checks ?? []) {
    const { check: kind } = check.def;
    if (kind === 'custom' && root) refinements += 1;
    else if (kind === 'string_format')
      patternOf(check.def.pattern, `the format ${check.def.format}`);
    else if (kind === 'number_format' && check.def.format === 'safeint') continue;
    else if (!EXACT_CHECKS.has(kind)) refuse(`a ${kind} check`);
  }
  switch (def.type) {
    case 'object':
      if (def.catchall === undefined || definition(def.catchall).type !== 'never') {
        refuse('an object that strips unknown keys (make it strict)');
      }
      for (const [name, field] of Object.entries(def.shape ?? {})) {
        exactChecks(field, `${at}.${name}`, false);
      }
      break;
    case 'string':
      if (def.format !== undefined) patternOf(def.pattern, `the format ${def.format}`);
      break;
    case 'optional':
    case 'nullable':
      exactChecks(def.innerType as z.ZodType, at, false);
      break;
    case 'array':
      exactChecks(def.element as z.ZodType, `${at}[]`, false);
      break;
    case 'union':
      for (const option of def.options ?? []) exactChecks(option, at, false);
      break;
    case 'record': {
      const key = definition(def.keyType as z.ZodType);
      if (key.type !== 'string' || (key.checks ?? []).length > 0)
        refuse('a record with checked keys');
      exactChecks(def.valueType as z.ZodType, `${at}[*]`, false);
      break;
    }
    case 'number':
    case 'boolean':
    case 'enum':
    case 'literal':
    case 'null':
    case 'unknown':
      break;
    default:
      refuse(`a ${def.type}`);
  }
  return refinements;
}
