import { z } from 'zod';

/** One environment variable of a service, as its config schema declares it. */
export interface ConfigField {
  name: string;
  /** The field's `.describe()` text; empty when it has none. */
  description: string;
  /** What an unset variable becomes, as written in the environment; undefined: none. */
  defaultValue: string | undefined;
  /** True when the variable may be left unset (it has a default or is optional). */
  optional: boolean;
  /** The values an enum variable accepts. */
  choices: readonly string[] | undefined;
}

/** A service and the zod schema its `config.ts` parses the environment with. */
export interface ServiceConfig {
  name: string;
  schema: z.ZodObject;
}

export const CONFIG_START = '<!-- config:start -->';
export const CONFIG_END = '<!-- config:end -->';

/**
 * Every variable of a config schema: description, default and whether it is required, read
 * through the wrappers the `@slicekeeper/config` helpers add (default, optional, transform).
 */
export function describeConfig(schema: z.ZodObject): ConfigField[] {
  return Object.entries(schema.shape as Record<string, z.ZodType>).map(([name, field]) =>
    describeField(name, field),
  );
}

function describeField(name: string, field: z.ZodType): ConfigField {
  let description = field.description;
  let defaultValue: string | undefined;
  let optional = false;
  let choices: readonly string[] | undefined;
  let current: z.ZodType | undefined = field;
  while (current !== undefined) {
    description ??= current.description;
    if (current instanceof z.ZodDefault || current instanceof z.ZodPrefault) {
      optional = true;
      defaultValue ??= formatDefault(current.def.defaultValue);
      current = current.def.innerType as z.ZodType;
    } else if (current instanceof z.ZodOptional) {
      optional = true;
      current = current.def.innerType as z.ZodType;
    } else if (current instanceof z.ZodPipe) {
      current = current.def.in as z.ZodType;
    } else {
      if (current instanceof z.ZodEnum) choices = current.options.map(String);
      current = undefined;
    }
  }
  return { name, description: description ?? '', defaultValue, optional, choices };
}

function formatDefault(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/**
 * A markdown table of a schema's variables: variable, default (or "required"), description.
 * Columns are padded as prettier pads them, so that formatting the README changes nothing.
 */
export function renderConfigTable(schema: z.ZodObject): string {
  const rows = describeConfig(schema).map((field) => {
    const defaultCell = !field.optional
      ? '**required**'
      : field.defaultValue === undefined
        ? 'unset'
        : field.defaultValue === ''
          ? 'empty'
          : code(field.defaultValue);
    const choices =
      field.choices === undefined ? '' : ` One of ${field.choices.map(code).join(', ')}.`;
    return [code(field.name), defaultCell, cell(field.description + choices)];
  });
  return markdownTable(['variable', 'default', 'description'], rows);
}

function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, column) =>
    Math.max(3, width(title), ...rows.map((row) => width(row[column] ?? ''))),
  );
  const line = (cells: readonly string[]): string =>
    `| ${widths.map((w, column) => pad(cells[column] ?? '', w)).join(' | ')} |`;
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** Display width in a monospace font (code points; the texts here have no wide characters). */
function width(text: string): number {
  return Array.from(text).length;
}

function pad(text: string, to: number): string {
  return text + ' '.repeat(Math.max(0, to - width(text)));
}

/** The README's configuration section: one heading and table per service, in the given order. */
export function renderConfigSection(services: readonly ServiceConfig[]): string {
  const intro =
    'Every service reads its settings from environment variables, parsed once at start; a bad value stops it with every bad variable named. Durations take `ms`, `s`, `m` or `h`. Generated from the config schemas by `npm run docs:config`.';
  const tables = services.map(
    (service) => `### ${service.name}\n\n${renderConfigTable(service.schema)}`,
  );
  return [intro, ...tables].join('\n\n');
}

/** The README with `section` between the config markers (replacing what was there). */
export function replaceConfigSection(readme: string, section: string): string {
  const start = readme.indexOf(CONFIG_START);
  const end = readme.indexOf(CONFIG_END);
  if (start === -1 || end === -1 || end < start) {
    throw new Error(`the README has no ${CONFIG_START} … ${CONFIG_END} markers`);
  }
  return `${readme.slice(0, start + CONFIG_START.length)}\n\n${section}\n\n${readme.slice(end)}`;
}

/** The text between the config markers, or undefined when there are none. */
export function configSectionOf(readme: string): string | undefined {
  const start = readme.indexOf(CONFIG_START);
  const end = readme.indexOf(CONFIG_END);
  if (start === -1 || end === -1 || end < start) return undefined;
  return readme.slice(start + CONFIG_START.length, end).trim();
}

function code(text: string): string {
  return text.includes('`') ? `\`\` ${text} \`\`` : `\`${text}\``;
}

/**
 * Table cells cannot hold a pipe or a line break; an asterisk outside code would start emphasis
 * (prettier escapes it the same way).
 */
function cell(text: string): string {
  return text
    .replace(/\s*\n\s*/g, ' ')
    .split(/(`[^`]*`)/)
    .map((part, index) => (index % 2 === 1 ? part : part.replace(/([|*])/g, '\\$1')))
    .join('');
}
