import {
  dns1123SubdomainProblems,
  qualifiedNameProblems,
  utf8ByteLength,
} from '@slicekeeper/contracts';
import { jsonEqual, numAt, objAt, strAt } from './api-schemas';
import { FieldPath, GoValue, fieldError } from './field-errors';
import type { FieldError } from './field-errors';
import { isJsonObject } from './object-schema';
import type { JsonObject, JsonValue } from './object-schema';
import {
  nameIsDnsSubdomain,
  pathSegmentProblems,
  validateObjectMeta,
  validateObjectMetaUpdate,
} from './validation';

/**
 * Event validation as kube-apiserver 1.34 runs it (pkg/apis/core/validation/events.go and the
 * event registry's strategy): the legacy rules for every Event, the strict ones for writes through
 * events.k8s.io/v1. Objects are validated in the stored (core/v1) shape, so field paths use core
 * names (`message`, `involvedObject.namespace`, `firstTimestamp`) whichever API was used, as
 * upstream's do; `reportingController` is the internal name of `reportingComponent`.
 */

/** Which API a write came through: the strict rules apply to events.k8s.io/v1 only. */
export type EventApi = 'core/v1' | 'events.k8s.io/v1';

const REPORTING_INSTANCE_LENGTH_LIMIT = 128;
const ACTION_LENGTH_LIMIT = 128;
const REASON_LENGTH_LIMIT = 128;
const NOTE_LENGTH_LIMIT = 1024;

function root(name: string): FieldPath {
  return FieldPath.root(name);
}

function isUnset(value: JsonValue | undefined): boolean {
  return value === undefined || value === null;
}

function tooLong(path: string, limit: number): FieldError {
  return fieldError.invalid(root(path), '', `can have at most ${limit} characters`);
}

/** `legacyValidateEvent`: what every Event must satisfy, whichever API wrote it. */
function legacyValidateEvent(event: JsonObject): FieldError[] {
  const errs: FieldError[] = [];
  const namespace = strAt(objAt(event, 'metadata'), 'namespace') ?? '';
  const involved = objAt(event, 'involvedObject') ?? {};
  const involvedNamespace = strAt(involved, 'namespace') ?? '';
  const mismatch = () =>
    fieldError.invalid(
      root('involvedObject').child('namespace'),
      involvedNamespace,
      'does not match event.namespace',
    );
  if (isUnset(event.eventTime)) {
    // Old-style events: the involved object's namespace is the event's ("default" also goes
    // for cluster-scoped objects, for old clients).
    if (involvedNamespace === '') {
      if (namespace !== '' && namespace !== 'default') errs.push(mismatch());
    } else if (namespace !== involvedNamespace) errs.push(mismatch());
  } else {
    if (involvedNamespace === '' && namespace !== 'default' && namespace !== 'kube-system')
      errs.push(mismatch());
    const controller = strAt(event, 'reportingComponent') ?? '';
    if (controller === '') errs.push(fieldError.required(root('reportingController')));
    for (const msg of qualifiedNameProblems(controller))
      errs.push(fieldError.invalid(root('reportingController'), controller, msg));
    const limits: [field: string, path: string, limit: number, required: boolean][] = [
      ['reportingInstance', 'reportingInstance', REPORTING_INSTANCE_LENGTH_LIMIT, true],
      ['action', 'action', ACTION_LENGTH_LIMIT, true],
      ['reason', 'reason', REASON_LENGTH_LIMIT, true],
      ['message', 'message', NOTE_LENGTH_LIMIT, false],
    ];
    for (const [field, path, limit, required] of limits) {
      const value = strAt(event, field) ?? '';
      if (required && value === '') errs.push(fieldError.required(root(path)));
      if (utf8ByteLength(value) > limit) errs.push(tooLong(path, limit));
    }
  }
  for (const msg of dns1123SubdomainProblems(namespace))
    errs.push(fieldError.invalid(root('namespace'), namespace, msg));
  return errs;
}

/** `validateV1EventSeries`. */
function validateSeries(event: JsonObject): FieldError[] {
  const series = objAt(event, 'series');
  if (series === undefined) return [];
  const errs: FieldError[] = [];
  if ((numAt(series, 'count') ?? 0) < 2)
    errs.push(fieldError.invalid(root('series.count'), '', 'should be at least 2'));
  if (isUnset(series.lastObservedTime))
    errs.push(fieldError.required(root('series.lastObservedTime')));
  return errs;
}

function sourceSet(event: JsonObject): boolean {
  const source = objAt(event, 'source');
  return (strAt(source, 'component') ?? '') !== '' || (strAt(source, 'host') ?? '') !== '';
}

/** The generic registry's metadata check (`ValidateObjectMetaAccessor` with path-segment names). */
function validateCommonMeta(event: JsonObject): FieldError[] {
  return validateObjectMeta(objAt(event, 'metadata') ?? {}, pathSegmentProblems, true);
}

/**
 * `ValidateEventCreate` for the request's API, then (only when it passed, as `BeforeCreate` does)
 * the generic metadata checks.
 */
export function validateEventCreate(event: JsonObject, api: EventApi): FieldError[] {
  const errs = legacyValidateEvent(event);
  if (api === 'events.k8s.io/v1') {
    errs.push(...validateObjectMeta(objAt(event, 'metadata') ?? {}, nameIsDnsSubdomain, true));
    errs.push(...validateSeries(event));
    if (isUnset(event.eventTime)) errs.push(fieldError.required(root('eventTime')));
    const type = strAt(event, 'type') ?? '';
    if (type !== 'Normal' && type !== 'Warning')
      errs.push(fieldError.invalid(root('type'), '', `has invalid value: ${type}`));
    if (!isUnset(event.firstTimestamp))
      errs.push(fieldError.invalid(root('firstTimestamp'), '', 'needs to be unset'));
    if (!isUnset(event.lastTimestamp))
      errs.push(fieldError.invalid(root('lastTimestamp'), '', 'needs to be unset'));
    if ((numAt(event, 'count') ?? 0) !== 0)
      errs.push(fieldError.invalid(root('count'), '', 'needs to be unset'));
    if (sourceSet(event)) errs.push(fieldError.invalid(root('source'), '', 'needs to be unset'));
  }
  return errs.length > 0 ? errs : validateCommonMeta(event);
}

// Go's rendering of the values `ValidateImmutableField` reports (`%#v`, or `String()`).

function goTime(value: JsonValue | undefined): GoValue {
  if (typeof value !== 'string') return new GoValue('0001-01-01 00:00:00 +0000 UTC');
  const [date = '', time = ''] = value.replace(/Z$/, '').split('T');
  const [whole = '', fraction = ''] = time.split('.');
  // time.Time's String() drops the trailing zeros of the fraction.
  const trimmed = fraction.replace(/0+$/, '');
  return new GoValue(`${date} ${whole}${trimmed === '' ? '' : `.${trimmed}`} +0000 UTC`);
}

function goStruct(goType: string, fields: readonly [string, string][], obj: JsonValue | undefined) {
  const o = isJsonObject(obj) ? obj : {};
  const parts = fields.map(([goName, json]) => `${goName}:${JSON.stringify(strAt(o, json) ?? '')}`);
  return `${goType}{${parts.join(', ')}}`;
}

const OBJECT_REFERENCE_FIELDS: readonly [string, string][] = [
  ['Kind', 'kind'],
  ['Namespace', 'namespace'],
  ['Name', 'name'],
  ['UID', 'uid'],
  ['APIVersion', 'apiVersion'],
  ['ResourceVersion', 'resourceVersion'],
  ['FieldPath', 'fieldPath'],
];

function goValueOf(field: string, value: JsonValue | undefined): unknown {
  switch (field) {
    case 'involvedObject':
      return new GoValue(goStruct('core.ObjectReference', OBJECT_REFERENCE_FIELDS, value));
    case 'related':
      // A pointer is printed as what it points to, a nil one as null (`field.Error.ErrorBody`).
      return isJsonObject(value)
        ? new GoValue(goStruct('core.ObjectReference', OBJECT_REFERENCE_FIELDS, value))
        : null;
    case 'source':
      return new GoValue(
        goStruct(
          'core.EventSource',
          [
            ['Component', 'component'],
            ['Host', 'host'],
          ],
          value,
        ),
      );
    case 'firstTimestamp':
    case 'lastTimestamp':
    case 'eventTime':
      return goTime(value);
    case 'count':
      return typeof value === 'number' ? value : 0;
    default:
      return typeof value === 'string' ? value : '';
  }
}

/** The fields `ValidateEventUpdate` holds immutable through events.k8s.io/v1, in its order. */
const IMMUTABLE_FIELDS: readonly [field: string, path: string][] = [
  ['involvedObject', 'involvedObject'],
  ['reason', 'reason'],
  ['message', 'message'],
  ['source', 'source'],
  ['firstTimestamp', 'firstTimestamp'],
  ['lastTimestamp', 'lastTimestamp'],
  ['count', 'count'],
  // Upstream checks reason twice.
  ['reason', 'reason'],
  ['type', 'type'],
  ['eventTime', 'eventTime'],
  ['action', 'action'],
  ['related', 'related'],
  ['reportingComponent', 'reportingController'],
  ['reportingInstance', 'reportingInstance'],
];

/** Go's zero value of a field, as the stored JSON shows it when unset. */
function comparable(value: JsonValue | undefined): JsonValue {
  if (value === undefined || value === '' || value === 0) return null;
  if (isJsonObject(value) && Object.values(value).every((v) => v === '')) return null;
  return value;
}

/** The generic update checks (`validateCommonFields`) and `ValidateEventUpdate` for the API. */
export function validateEventUpdate(
  event: JsonObject,
  old: JsonObject,
  api: EventApi,
): FieldError[] {
  const meta = objAt(event, 'metadata') ?? {};
  const oldMeta = objAt(old, 'metadata') ?? {};
  const errs = [
    ...validateCommonMeta(event),
    ...validateObjectMetaUpdate(meta, oldMeta),
    ...legacyValidateEvent(event),
  ];
  if (api !== 'events.k8s.io/v1') return errs;
  errs.push(...validateObjectMetaUpdate(meta, oldMeta));
  if (!jsonEqual(event.series ?? null, old.series ?? null)) errs.push(...validateSeries(event));
  for (const [field, path] of IMMUTABLE_FIELDS) {
    if (!jsonEqual(comparable(event[field]), comparable(old[field])))
      errs.push(
        fieldError.invalid(root(path), goValueOf(field, event[field]), 'field is immutable'),
      );
  }
  return errs;
}
