/** pino's numeric levels, as names a human reads. */
const LEVEL_NAMES: Readonly<Record<number, string>> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};

/** Fields every pino line has, which the prefix and the message already say. */
const OMITTED_FIELDS = new Set(['level', 'time', 'pid', 'hostname', 'service', 'msg']);

const COLORS = [36, 35, 33, 32, 34, 96, 95, 93, 92, 94] as const;
const LEVEL_COLORS: Readonly<Record<string, number>> = { WARN: 33, ERROR: 31, FATAL: 31 };

export interface LogPrefixerOptions {
  /** Every process name the stack runs, so that the prefixes line up. */
  names: readonly string[];
  /** ANSI colours (when writing to a terminal). @defaultValue false */
  color?: boolean;
}

/**
 * Turns the processes' output into lines for a human: `[name] LEVEL message key=value …`, one
 * colour per process. pino JSON lines are unpacked; anything else is shown as it is.
 */
export class LogPrefixer {
  private readonly width: number;
  private readonly color: boolean;
  private readonly colorOf = new Map<string, number>();

  constructor(options: LogPrefixerOptions) {
    this.width = Math.max(0, ...options.names.map((name) => name.length));
    this.color = options.color ?? false;
    options.names.forEach((name, index) => {
      this.colorOf.set(name, COLORS[index % COLORS.length] ?? 36);
    });
  }

  /** One line of process `name`'s output, formatted. `stderr` lines are marked as such. */
  format(name: string, line: string, stream: 'stdout' | 'stderr' = 'stdout'): string {
    const prefix = this.paint(this.colorOf.get(name) ?? 0, `[${name}]`.padEnd(this.width + 2));
    const entry = parseJsonObject(line);
    if (entry === undefined) {
      return `${prefix} ${stream === 'stderr' ? this.paint(31, line) : line}`;
    }
    const level = typeof entry.level === 'number' ? (LEVEL_NAMES[entry.level] ?? 'INFO') : 'INFO';
    const message = typeof entry.msg === 'string' ? entry.msg : '';
    const fields = Object.entries(entry)
      .filter(([key]) => !OMITTED_FIELDS.has(key))
      .map(([key, value]) => `${key}=${formatValue(value)}`);
    const levelText = this.paint(LEVEL_COLORS[level] ?? 0, level.padEnd(5));
    const fieldText = fields.length === 0 ? '' : ` ${this.paint(2, fields.join(' '))}`;
    return `${prefix} ${levelText} ${message}${fieldText}`;
  }

  private paint(code: number, text: string): string {
    return this.color && code !== 0 ? `\u001b[${code}m${text}\u001b[0m` : text;
  }
}

function parseJsonObject(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function formatValue(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  // JSON.stringify gives undefined for undefined and functions, whatever its types say.
  const json = JSON.stringify(value) as string | undefined;
  return json ?? String(value);
}
