/**
 * Compose's variable interpolation, for checking docker-compose.yml as `docker compose` would
 * see it with a given environment (the shell's, or an `--env-file`).
 */

/** Compose variables: name → value. A name that is absent is unset; `''` is set but empty. */
export type ComposeVariables = Readonly<Record<string, string>>;

const REFERENCE =
  /\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])((?:[^{}]|\{[^{}]*\})*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g;

/**
 * Interpolates one string: `$$` (a literal `$`), `$VAR`, `${VAR}`, `${VAR-default}` (default if
 * unset), `${VAR:-default}` (also if empty), `${VAR?message}` / `${VAR:?message}` (an error
 * instead), `${VAR+other}` / `${VAR:+other}` (other if set / non-empty). Unset variables without
 * a default become `''`, as in Compose. Defaults are interpolated too.
 */
export function interpolateCompose(text: string, variables: ComposeVariables): string {
  return text.replace(
    REFERENCE,
    (
      _match,
      dollar: string | undefined,
      braced: string | undefined,
      operator: string | undefined,
      operand: string | undefined,
      bare: string | undefined,
    ) => {
      if (dollar !== undefined) return '$';
      const name = braced ?? bare ?? '';
      const value = variables[name];
      if (operator === undefined) return value ?? '';
      const missing = operator.startsWith(':')
        ? value === undefined || value === ''
        : value === undefined;
      const argument = interpolateCompose(operand ?? '', variables);
      switch (operator.slice(-1)) {
        case '-':
          return missing ? argument : (value ?? '');
        case '?':
          if (missing) throw new Error(`${name}: ${argument === '' ? 'required' : argument}`);
          return value ?? '';
        default:
          return missing ? '' : argument;
      }
    },
  );
}

/** Every string in a parsed compose file (keys stay as they are), interpolated. */
export function interpolateComposeFile<T>(value: T, variables: ComposeVariables): T {
  if (typeof value === 'string') return interpolateCompose(value, variables) as T;
  if (Array.isArray(value)) {
    return value.map((item: unknown) => interpolateComposeFile(item, variables)) as T;
  }
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, interpolateComposeFile(item, variables)]),
    ) as T;
  }
  return value;
}

/**
 * An env file as `docker compose --env-file` reads it: `NAME=value` lines, `#` comments and
 * blank lines ignored, one pair of surrounding quotes removed. `NAME=` sets NAME to `''`.
 */
export function parseEnvFile(text: string): Record<string, string> {
  const variables: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (match === null) throw new Error(`not NAME=value: ${line}`);
    const [, name = '', value = ''] = match;
    variables[name] = /^(["']).*\1$/.test(value)
      ? value.slice(1, -1)
      : value.replace(/\s+#.*$/, '');
  }
  return variables;
}
