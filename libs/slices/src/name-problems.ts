import {
  DNS1123_LABEL_MAX_LENGTH,
  DNS1123_SUBDOMAIN_MAX_LENGTH,
  isDns1123Label,
  isDns1123Subdomain,
} from '@slicekeeper/contracts';

/**
 * Name rules of k8s.io/apimachinery/pkg/util/validation with the API server's messages, built on
 * the DNS-1123 predicates of @slicekeeper/contracts. Each function returns what is wrong (empty
 * when nothing is), like the `IsXxx` functions upstream, so that callers choose the field path.
 */

export const DNS1123_LABEL_MESSAGE =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

export const DNS1123_SUBDOMAIN_MESSAGE =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

export const C_IDENTIFIER_MESSAGE =
  "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')";

const QUALIFIED_NAME_MESSAGE =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

const LABEL_VALUE_MESSAGE =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/** Returned when nothing is wrong, so that the common case allocates nothing. */
const NO_PROBLEMS: readonly string[] = Object.freeze([]);

const C_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const QUALIFIED_NAME_MAX_LENGTH = 63;
const LABEL_VALUE_MAX_LENGTH = 63;

/** The API server's message for a string over `max` characters (`validation.MaxLenError`). */
export function maxLengthMessage(max: number): string {
  return `must be no more than ${max} characters`;
}

/**
 * What makes `value` no DNS-1123 label. A value that is also too long gets only the length
 * message, where the API server would add the pattern message too: the contracts predicate
 * answers for both at once, and the length is the actionable part.
 */
export function dns1123LabelProblems(value: string): readonly string[] {
  if (isDns1123Label(value)) return NO_PROBLEMS;
  if (value.length > DNS1123_LABEL_MAX_LENGTH) return [maxLengthMessage(DNS1123_LABEL_MAX_LENGTH)];
  return [DNS1123_LABEL_MESSAGE];
}

/** What makes `value` no DNS-1123 subdomain (length first, as for labels). */
export function dns1123SubdomainProblems(value: string): readonly string[] {
  if (isDns1123Subdomain(value)) return NO_PROBLEMS;
  if (value.length > DNS1123_SUBDOMAIN_MAX_LENGTH) {
    return [maxLengthMessage(DNS1123_SUBDOMAIN_MAX_LENGTH)];
  }
  return [DNS1123_SUBDOMAIN_MESSAGE];
}

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
  if (!QUALIFIED_NAME_PART.test(name)) problems.push(`name part ${QUALIFIED_NAME_MESSAGE}`);
  return problems;
}

/** What makes `value` no label value (`validation.IsValidLabelValue`); empty is valid. */
export function labelValueProblems(value: string): string[] {
  const problems: string[] = [];
  if (value.length > LABEL_VALUE_MAX_LENGTH) {
    problems.push(maxLengthMessage(LABEL_VALUE_MAX_LENGTH));
  }
  if (value !== '' && !QUALIFIED_NAME_PART.test(value)) problems.push(LABEL_VALUE_MESSAGE);
  return problems;
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
