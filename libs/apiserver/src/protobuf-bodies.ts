import { apiErrors } from './api-error';
import type { JsonObject, JsonValue } from './object-schema';

/**
 * Request bodies in `application/vnd.kubernetes.protobuf`, decoded to the JSON the handlers
 * take, for the identity kinds only: kubectl's typed clients (`kubectl create token`, `create
 * serviceaccount`, `create role|clusterrole|rolebinding|clusterrolebinding`, `auth can-i`) send
 * protobuf and accept JSON back. The envelope is apimachinery's `runtime.Unknown` after the
 * `k8s\0` magic (runtime/serializer/protobuf); the messages follow each API's generated.proto.
 * Only the fields those types carry are read; others are skipped.
 */

/** The protobuf media type kube-apiserver accepts. */
export const PROTOBUF_TYPE = 'application/vnd.kubernetes.protobuf';

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

type FieldKind =
  | 'string'
  | 'strings'
  | 'int'
  | 'bool'
  | { message: Message }
  | { messages: Message }
  | { stringMap: true }
  | { extraMap: true };

/** A message: field number → [JSON name, kind]. */
type Message = Readonly<Record<number, readonly [string, FieldKind]>>;

const OBJECT_REFERENCE: Message = {
  1: ['kind', 'string'],
  2: ['namespace', 'string'],
  3: ['name', 'string'],
  4: ['uid', 'string'],
  5: ['apiVersion', 'string'],
  6: ['resourceVersion', 'string'],
  7: ['fieldPath', 'string'],
};

const OWNER_REFERENCE: Message = {
  1: ['kind', 'string'],
  3: ['name', 'string'],
  4: ['uid', 'string'],
  5: ['apiVersion', 'string'],
  6: ['controller', 'bool'],
  7: ['blockOwnerDeletion', 'bool'],
};

/** meta/v1 ObjectMeta: what a client may set (timestamps and managed fields are the server's). */
const OBJECT_META: Message = {
  1: ['name', 'string'],
  2: ['generateName', 'string'],
  3: ['namespace', 'string'],
  5: ['uid', 'string'],
  6: ['resourceVersion', 'string'],
  11: ['labels', { stringMap: true }],
  12: ['annotations', { stringMap: true }],
  13: ['ownerReferences', { messages: OWNER_REFERENCE }],
  14: ['finalizers', 'strings'],
};

const META: readonly [string, FieldKind] = ['metadata', { message: OBJECT_META }];

const POLICY_RULE: Message = {
  1: ['verbs', 'strings'],
  2: ['apiGroups', 'strings'],
  3: ['resources', 'strings'],
  4: ['resourceNames', 'strings'],
  5: ['nonResourceURLs', 'strings'],
};

const ROLE: Message = { 1: META, 2: ['rules', { messages: POLICY_RULE }] };

const BINDING: Message = {
  1: META,
  2: [
    'subjects',
    {
      messages: {
        1: ['kind', 'string'],
        2: ['apiGroup', 'string'],
        3: ['name', 'string'],
        4: ['namespace', 'string'],
      },
    },
  ],
  3: [
    'roleRef',
    { message: { 1: ['apiGroup', 'string'], 2: ['kind', 'string'], 3: ['name', 'string'] } },
  ],
};

const RESOURCE_ATTRIBUTES: Message = {
  1: ['namespace', 'string'],
  2: ['verb', 'string'],
  3: ['group', 'string'],
  4: ['version', 'string'],
  5: ['resource', 'string'],
  6: ['subresource', 'string'],
  7: ['name', 'string'],
};

const NON_RESOURCE_ATTRIBUTES: Message = { 1: ['path', 'string'], 2: ['verb', 'string'] };

const ACCESS_REVIEW_SPEC: Message = {
  1: ['resourceAttributes', { message: RESOURCE_ATTRIBUTES }],
  2: ['nonResourceAttributes', { message: NON_RESOURCE_ATTRIBUTES }],
  3: ['user', 'string'],
  4: ['groups', 'strings'],
  5: ['extra', { extraMap: true }],
  6: ['uid', 'string'],
};

const review = (spec: Message): Message => ({ 1: META, 2: ['spec', { message: spec }] });

/** The messages by kind (the envelope's `typeMeta.kind`). */
const MESSAGES: Readonly<Record<string, Message>> = {
  ServiceAccount: {
    1: META,
    2: ['secrets', { messages: OBJECT_REFERENCE }],
    3: ['imagePullSecrets', { messages: { 1: ['name', 'string'] } }],
    4: ['automountServiceAccountToken', 'bool'],
  },
  Role: ROLE,
  ClusterRole: ROLE,
  RoleBinding: BINDING,
  ClusterRoleBinding: BINDING,
  TokenRequest: review({
    1: ['audiences', 'strings'],
    4: ['expirationSeconds', 'int'],
    3: [
      'boundObjectRef',
      {
        message: {
          1: ['kind', 'string'],
          2: ['apiVersion', 'string'],
          3: ['name', 'string'],
          4: ['uid', 'string'],
        },
      },
    ],
  }),
  SelfSubjectReview: { 1: META },
  TokenReview: review({ 1: ['token', 'string'], 2: ['audiences', 'strings'] }),
  SelfSubjectAccessReview: review({
    1: ['resourceAttributes', { message: RESOURCE_ATTRIBUTES }],
    2: ['nonResourceAttributes', { message: NON_RESOURCE_ATTRIBUTES }],
  }),
  SubjectAccessReview: review(ACCESS_REVIEW_SPEC),
  LocalSubjectAccessReview: review(ACCESS_REVIEW_SPEC),
};

interface WireField {
  readonly number: number;
  /** The varint of wire type 0, or the bytes of wire type 2. */
  readonly value: bigint | Buffer;
}

function readVarint(buf: Buffer, at: number): [bigint, number] {
  let result = 0n;
  let shift = 0n;
  let pos = at;
  for (;;) {
    const byte = buf[pos];
    if (byte === undefined) throw new Error('truncated varint');
    pos++;
    result |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [result, pos];
    shift += 7n;
  }
}

function fields(buf: Buffer): WireField[] {
  const out: WireField[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const [tag, afterTag] = readVarint(buf, pos);
    const number = Number(tag >> 3n);
    const wireType = Number(tag & 7n);
    pos = afterTag;
    if (wireType === 0) {
      const [value, next] = readVarint(buf, pos);
      out.push({ number, value });
      pos = next;
    } else if (wireType === 2) {
      const [length, next] = readVarint(buf, pos);
      const end = next + Number(length);
      if (end > buf.length) throw new Error('truncated field');
      out.push({ number, value: buf.subarray(next, end) });
      pos = end;
    } else if (wireType === 1) pos += 8;
    else if (wireType === 5) pos += 4;
    else throw new Error(`unsupported wire type ${wireType}`);
  }
  return out;
}

function text(value: bigint | Buffer): string {
  return Buffer.isBuffer(value) ? value.toString('utf8') : '';
}

function decodeMessage(buf: Buffer, message: Message): JsonObject {
  const out: JsonObject = {};
  for (const field of fields(buf)) {
    const spec = message[field.number];
    if (spec === undefined) continue;
    const [name, kind] = spec;
    const { value } = field;
    // Go's generated code writes every string, empty or not; JSON's omitempty drops the empty.
    if (kind === 'string') {
      if (text(value) !== '') out[name] = text(value);
    } else if (kind === 'strings')
      out[name] = [...((out[name] as JsonValue[] | undefined) ?? []), text(value)];
    else if (kind === 'int')
      out[name] = typeof value === 'bigint' ? Number(BigInt.asIntN(64, value)) : 0;
    else if (kind === 'bool') out[name] = value === 1n;
    else if (!Buffer.isBuffer(value)) continue;
    else if ('message' in kind) out[name] = decodeMessage(value, kind.message);
    else if ('messages' in kind)
      out[name] = [
        ...((out[name] as JsonValue[] | undefined) ?? []),
        decodeMessage(value, kind.messages),
      ];
    else {
      // A map is a repeated entry {1: key, 2: value}.
      const entry = decodeMessage(
        value,
        'stringMap' in kind
          ? { 1: ['key', 'string'], 2: ['value', 'string'] }
          : { 1: ['key', 'string'], 2: ['value', { message: { 1: ['items', 'strings'] } }] },
      );
      const map = (out[name] as JsonObject | undefined) ?? {};
      const key = typeof entry.key === 'string' ? entry.key : '';
      const mapValue = entry.value ?? ('stringMap' in kind ? '' : {});
      map[key] =
        'stringMap' in kind
          ? mapValue
          : (((mapValue as JsonObject).items as JsonValue[] | undefined) ?? []);
      out[name] = map;
    }
  }
  return out;
}

/**
 * Decodes a protobuf body of one of the identity kinds to its JSON form (with `kind` and
 * `apiVersion` from the envelope).
 * @throws ApiError 400 for a body that is not an envelope of a kind decoded here
 */
export function decodeProtobufBody(body: Buffer): JsonObject {
  try {
    if (!body.subarray(0, 4).equals(MAGIC))
      throw new Error(
        'provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]',
      );
    const envelope = decodeMessage(body.subarray(4), {
      1: ['typeMeta', { message: { 1: ['apiVersion', 'string'], 2: ['kind', 'string'] } }],
    });
    const raw = fields(body.subarray(4)).find((f) => f.number === 2)?.value;
    const typeMeta = (envelope.typeMeta ?? {}) as JsonObject;
    const kind = typeof typeMeta.kind === 'string' ? typeMeta.kind : '';
    const message = MESSAGES[kind];
    if (message === undefined || !Buffer.isBuffer(raw))
      throw new Error(`no protobuf decoding of kind ${JSON.stringify(kind)} in the emulator`);
    return { kind, apiVersion: typeMeta.apiVersion ?? '', ...decodeMessage(raw, message) };
  } catch (error) {
    throw apiErrors.badRequest(error instanceof Error ? error.message : String(error));
  }
}

/** Whether the emulator decodes protobuf bodies of this kind. */
export function decodesProtobuf(kind: string): boolean {
  return MESSAGES[kind] !== undefined;
}
