import { z } from 'zod';
import { TerminalError } from '@slicekeeper/errors';

/** Raised when the environment does not satisfy a service's config schema. */
export class ConfigError extends TerminalError {
  /** Every problem, one `NAME: rule` line each. */
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`, {
      code: 'invalid-config',
    });
    this.problems = problems;
  }
}

export type Environment = Readonly<Record<string, string | undefined>>;

/**
 * Parses the environment with a service's schema, once, at the edge. Fails with every bad
 * variable named at once (not just the first), each with the rule it broke. Empty strings count
 * as unset, so `FOO=` falls back to the default as an unset variable does.
 */
export function parseConfig<Schema extends z.ZodObject>(
  schema: Schema,
  env: Environment,
): z.output<Schema> {
  const input: Record<string, string> = {};
  for (const name of Object.keys(schema.shape)) {
    const value = env[name];
    if (value !== undefined && value !== '') input[name] = value;
  }
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new ConfigError(
    result.error.issues.map((issue) => {
      const name = issue.path.map(String).join('.');
      const value = input[name];
      const rule =
        value === undefined && issue.code === 'invalid_type' ? 'required' : issue.message;
      return value === undefined
        ? `${name}: ${rule}`
        : `${name}: ${rule} (got ${shown(name, value)})`;
    }),
  );
}

/** Variables whose values are never echoed in an error. */
const SECRET_NAME = /PASSWORD|SECRET/;

/** A bad value as an error shows it: quoted, with secrets (and a URL's password) masked. */
function shown(name: string, value: string): string {
  if (SECRET_NAME.test(name)) return 'a value, not shown';
  try {
    const url = new URL(value);
    if (url.password !== '') {
      url.password = '***';
      return `"${url.toString()}"`;
    }
  } catch {
    // Not a URL: nothing in it to mask.
  }
  return `"${value}"`;
}
