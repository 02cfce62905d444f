/**
 * Name rules of k8s.io/apimachinery/pkg/util/validation with kube-apiserver 1.34's messages,
 * for the job contract, the registration API, the slice validator and the kube emulator alike: messages are copied, not paraphrased,
 * since clients and tests match on them. Each function returns what is wrong (empty when
 * nothing is), like the `IsXxx` functions upstream, so that callers choose the field path.
 * Every pattern is written once, as the format its message quotes.
 */

/** Longest DNS-1123 label, characters. */
export const DNS1123_LABEL_MAX_LENGTH = 63;
/** Longest DNS-1123 subdomain, characters. */
export const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;

const DNS1123_LABEL_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const QUALIFIED_NAME_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const LABEL_VALUE_FMT = `(${QUALIFIED_NAME_FMT})?`;
const C_IDENTIFIER_FMT = '[A-Za-z_][A-Za-z0-9_]*';

const DNS1123_LABEL = anchored(DNS1123_LABEL_FMT);
const DNS1123_SUBDOMAIN = anchored(DNS1123_SUBDOMAIN_FMT);
const QUALIFIED_NAME = anchored(QUALIFIED_NAME_FMT);
const LABEL_VALUE = anchored(LABEL_VALUE_FMT);
const C_IDENTIFIER = anchored(C_IDENTIFIER_FMT);

const QUALIFIED_NAME_MAX_LENGTH = 63;
const LABEL_VALUE_MAX_LENGTH = 63;

/** apimachinery's `RegexError`, including its double space between examples. */
function regexError(message: string, fmt: string, ...examples: string[]): string {
  const shown = examples.map((example) => `'${example}', `).join(' or ');
  return `${message} (e.g. ${shown}regex used for validation is '${fmt}')`;
}

export const DNS1123_LABEL_MESSAGE = regexError(
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
  DNS1123_LABEL_FMT,
  'my-name',
  '123-abc',
);

export const DNS1123_SUBDOMAIN_MESSAGE = regexError(
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
  DNS1123_SUBDOMAIN_FMT,
  'example.com',
);

export const C_IDENTIFIER_MESSAGE = regexError(
  "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_'",
  C_IDENTIFIER_FMT,
  'my_name',
  'MY_NAME',
  'MyName',
);

const QUALIFIED_NAME_MESSAGE = regexError(
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
  QUALIFIED_NAME_FMT,
  'MyName',
  'my.name',
  '123-abc',
);

const LABEL_VALUE_MESSAGE = regexError(
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
  LABEL_VALUE_FMT,
  'MyValue',
  'my_value',
  '12345',
);

/** Returned when nothing is wrong, so that the common case allocates nothing. */
const NO_PROBLEMS: readonly string[] = Object.freeze([]);

/** The API server's message for a string over `max` characters (`validation.MaxLenError`). */
export function maxLengthMessage(max: number): string {
  return `must be no more than ${max} characters`;
}

/** What makes `value` no DNS-1123 label (`validation.IsDNS1123Label`). */
export function dns1123LabelProblems(value: string): readonly string[] {
  return lengthAndPattern(value, DNS1123_LABEL_MAX_LENGTH, DNS1123_LABEL, DNS1123_LABEL_MESSAGE);
}

/** What makes `value` no DNS-1123 subdomain (`validation.IsDNS1123Subdomain`). */
export function dns1123SubdomainProblems(value: string): readonly string[] {
  return lengthAndPattern(
    value,
    DNS1123_SUBDOMAIN_MAX_LENGTH,
    DNS1123_SUBDOMAIN,
    DNS1123_SUBDOMAIN_MESSAGE,
  );
}

/** Whether `value` is a C identifier (`validation.IsCIdentifier`); else C_IDENTIFIER_MESSAGE. */
export function isCIdentifier(value: string): boolean {
  return C_IDENTIFIER.test(value);
}

/**
 * What makes `value` no qualified name (`[prefix/]name`, a label key or a taint key):
 * `validation.IsQualifiedName`.
 */
export function qualifiedNameProblems(value: string): string[] {
  const parts = value.split('/');
  let name: string;
  const problems: string[] = [];
  if (parts.length === 1) {
    name = value;
  } else if (parts.length === 2) {
    const [prefix = '', rest = ''] = parts;
    name = rest;
    if (prefix === '') {
      problems.push('prefix part must be non-empty');
    } else {
      for (const problem of dns1123SubdomainProblems(prefix))
        problems.push(`prefix part ${problem}`);
    }
  } else {
    return [
      `a qualified name ${QUALIFIED_NAME_MESSAGE} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name === '') {
    problems.push('name part must be non-empty');
  } else if (name.length > QUALIFIED_NAME_MAX_LENGTH) {
    problems.push(`name part ${maxLengthMessage(QUALIFIED_NAME_MAX_LENGTH)}`);
  }
  if (!QUALIFIED_NAME.test(name)) problems.push(`name part ${QUALIFIED_NAME_MESSAGE}`);
  return problems;
}

/** What makes `value` no label value (`validation.IsValidLabelValue`); empty is valid. */
export function labelValueProblems(value: string): readonly string[] {
  return lengthAndPattern(value, LABEL_VALUE_MAX_LENGTH, LABEL_VALUE, LABEL_VALUE_MESSAGE);
}

/** Length of `value` in UTF-8 bytes, which is what the API server's byte limits count. */
export function utf8ByteLength(value: string): number {
  let bytes = 0;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < value.length) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else {
        bytes += 3;
      }
    } else bytes += 3;
  }
  return bytes;
}

/** Upstream's shape: the length message when too long, and the pattern's when it does not match. */
function lengthAndPattern(
  value: string,
  maxLength: number,
  pattern: RegExp,
  message: string,
): readonly string[] {
  const tooLong = value.length > maxLength;
  const matches = pattern.test(value);
  if (!tooLong && matches) return NO_PROBLEMS;
  const problems: string[] = [];
  if (tooLong) problems.push(maxLengthMessage(maxLength));
  if (!matches) problems.push(message);
  return problems;
}

function anchored(fmt: string): RegExp {
  return new RegExp(`^${fmt}$`);
}
