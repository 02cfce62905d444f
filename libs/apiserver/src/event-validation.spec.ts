import { errorString } from './field-errors';
import { validateEventCreate, validateEventUpdate } from './event-validation';
import type { EventApi } from './event-validation';
import { normalize } from './object-schema';
import type { JsonObject } from './object-schema';
import { eventSchema } from './api-schemas';

/** A stored-shape (core/v1) Event as the event recorder's events.k8s.io/v1 create makes it. */
function recorded(overrides: JsonObject = {}): JsonObject {
  return normalize(eventSchema, {
    metadata: { name: 'node-a.17a0c0ffee000001', namespace: 'default' },
    involvedObject: { kind: 'Node', name: 'node-a', uid: 'u1', apiVersion: 'v1' },
    reason: 'SlicesPublished',
    message: 'published 2 ResourceSlices',
    type: 'Normal',
    eventTime: '2026-11-24T18:55:37.123456Z',
    action: 'PublishSlices',
    reportingComponent: 'slicekeeper.dev/slice-syncer',
    reportingInstance: 'slice-syncer-0',
    ...overrides,
  });
}

const SERIES = { count: 2, lastObservedTime: '2026-11-24T18:56:37.000000Z' };

describe('validateEventCreate', () => {
  const cases: [name: string, api: EventApi, event: JsonObject, errors: string[]][] = [
    ['recorder-event', 'events.k8s.io/v1', recorded(), []],
    ['recorder-event-core', 'core/v1', recorded(), []],
    [
      'legacy-event-core',
      'core/v1',
      recorded({ eventTime: null, reportingComponent: '', reportingInstance: '', action: '' }),
      [],
    ],
    [
      'legacy-event-v1-needs-event-time',
      'events.k8s.io/v1',
      recorded({ eventTime: null, reportingComponent: '', reportingInstance: '', action: '' }),
      ['eventTime: Required value'],
    ],
    [
      'series-too-short',
      'events.k8s.io/v1',
      recorded({ series: { count: 1 } }),
      [
        'series.count: Invalid value: "": should be at least 2',
        'series.lastObservedTime: Required value',
      ],
    ],
    ['series-ok', 'events.k8s.io/v1', recorded({ series: SERIES }), []],
    [
      'long-fields',
      'core/v1',
      recorded({
        reportingInstance: 'i'.repeat(129),
        action: 'a'.repeat(129),
        reason: 'r'.repeat(129),
        message: 'm'.repeat(1025),
      }),
      [
        'reportingInstance: Invalid value: "": can have at most 128 characters',
        'action: Invalid value: "": can have at most 128 characters',
        'reason: Invalid value: "": can have at most 128 characters',
        'message: Invalid value: "": can have at most 1024 characters',
      ],
    ],
    [
      'deprecated-fields-on-v1',
      'events.k8s.io/v1',
      recorded({
        firstTimestamp: '2026-11-24T18:55:37Z',
        lastTimestamp: '2026-11-24T18:55:37Z',
        count: 2,
        source: { component: 'kubelet' },
      }),
      [
        'firstTimestamp: Invalid value: "": needs to be unset',
        'lastTimestamp: Invalid value: "": needs to be unset',
        'count: Invalid value: "": needs to be unset',
        'source: Invalid value: "": needs to be unset',
      ],
    ],
    [
      'namespaced-object-elsewhere',
      'core/v1',
      recorded({ involvedObject: { kind: 'Pod', name: 'p', namespace: 'other' } }),
      [],
    ],
    [
      'cluster-object-in-kube-public',
      'core/v1',
      recorded({ metadata: { name: 'x', namespace: 'kube-public' } }),
      ['involvedObject.namespace: Invalid value: "": does not match event.namespace'],
    ],
    [
      'v1-name-must-be-subdomain',
      'events.k8s.io/v1',
      recorded({ metadata: { name: 'Node_A', namespace: 'default' } }),
      [
        "metadata.name: Invalid value: \"Node_A\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
      ],
    ],
    [
      'core-name-only-path-segment',
      'core/v1',
      recorded({ metadata: { name: 'Node_A', namespace: 'default' } }),
      [],
    ],
    [
      'core-name-with-slash',
      'core/v1',
      recorded({ metadata: { name: 'a/b', namespace: 'default' } }),
      ['metadata.name: Invalid value: "a/b": may not contain \'/\''],
    ],
  ];

  it.each(cases)('%s', (_name, api, event, errors) => {
    expect(validateEventCreate(event, api).map(errorString)).toEqual(errors);
  });
});

/**
 * Which fields an update may change (pkg/apis/core/validation/events.go `ValidateEventUpdate`,
 * after the registry's `validateCommonFields`): through core/v1 anything the legacy rules allow;
 * through events.k8s.io/v1 only the series and metadata, every other field immutable.
 */
describe('validateEventUpdate', () => {
  const liveMeta = {
    name: 'e',
    namespace: 'default',
    uid: 'uid-1',
    resourceVersion: '5',
    creationTimestamp: '2026-11-24T18:55:37Z',
  };
  const live = (overrides: JsonObject = {}) => recorded({ metadata: liveMeta, ...overrides });

  const cases: [name: string, api: EventApi, next: JsonObject, errors: string[]][] = [
    ['series-added', 'events.k8s.io/v1', live({ series: SERIES }), []],
    [
      'series-invalid',
      'events.k8s.io/v1',
      live({ series: { count: 1, lastObservedTime: SERIES.lastObservedTime } }),
      ['series.count: Invalid value: "": should be at least 2'],
    ],
    [
      'note-changed',
      'events.k8s.io/v1',
      live({ message: 'other' }),
      ['message: Invalid value: "other": field is immutable'],
    ],
    [
      'regarding-changed',
      'events.k8s.io/v1',
      live({ involvedObject: { kind: 'Node', name: 'node-b' } }),
      [
        'involvedObject: Invalid value: core.ObjectReference{Kind:"Node", Namespace:"", Name:"node-b", UID:"", APIVersion:"", ResourceVersion:"", FieldPath:""}: field is immutable',
      ],
    ],
    [
      'event-time-changed',
      'events.k8s.io/v1',
      live({ eventTime: '2026-11-24T18:55:38.120000Z' }),
      ['eventTime: Invalid value: 2026-11-24 18:55:38.12 +0000 UTC: field is immutable'],
    ],
    ['note-changed-through-core', 'core/v1', live({ message: 'other' }), []],
    [
      // Upstream checks reason twice; the 422's message shows it once, its causes twice.
      'reason-changed',
      'events.k8s.io/v1',
      live({ reason: 'Other' }),
      [
        'reason: Invalid value: "Other": field is immutable',
        'reason: Invalid value: "Other": field is immutable',
      ],
    ],
    [
      'type-changed',
      'events.k8s.io/v1',
      live({ type: 'Warning' }),
      ['type: Invalid value: "Warning": field is immutable'],
    ],
    [
      'action-changed',
      'events.k8s.io/v1',
      live({ action: 'Other' }),
      ['action: Invalid value: "Other": field is immutable'],
    ],
    [
      'reporting-controller-changed',
      'events.k8s.io/v1',
      live({ reportingComponent: 'example.com/other' }),
      ['reportingController: Invalid value: "example.com/other": field is immutable'],
    ],
    [
      'reporting-instance-changed',
      'events.k8s.io/v1',
      live({ reportingInstance: 'slice-syncer-1' }),
      ['reportingInstance: Invalid value: "slice-syncer-1": field is immutable'],
    ],
    [
      'related-set',
      'events.k8s.io/v1',
      live({ related: { kind: 'Pod', name: 'p1', namespace: 'default' } }),
      [
        'related: Invalid value: core.ObjectReference{Kind:"Pod", Namespace:"default", Name:"p1", UID:"", APIVersion:"", ResourceVersion:"", FieldPath:""}: field is immutable',
      ],
    ],
    [
      'deprecated-count-set',
      'events.k8s.io/v1',
      live({ count: 3 }),
      ['count: Invalid value: 3: field is immutable'],
    ],
    [
      'deprecated-source-set',
      'events.k8s.io/v1',
      live({ source: { component: 'kubelet' } }),
      ['source: Invalid value: core.EventSource{Component:"kubelet", Host:""}: field is immutable'],
    ],
    [
      'deprecated-last-timestamp-set',
      'events.k8s.io/v1',
      live({ lastTimestamp: '2026-11-24T18:56:00Z' }),
      ['lastTimestamp: Invalid value: 2026-11-24 18:56:00 +0000 UTC: field is immutable'],
    ],
    [
      'labels-changed',
      'events.k8s.io/v1',
      live({ metadata: { ...liveMeta, labels: { a: 'b' } } }),
      [],
    ],
    [
      // validateCommonFields and ValidateEventUpdate both hold the uid.
      'uid-changed',
      'events.k8s.io/v1',
      live({ metadata: { ...liveMeta, uid: 'uid-2' } }),
      [
        'metadata.uid: Invalid value: "uid-2": field is immutable',
        'metadata.uid: Invalid value: "uid-2": field is immutable',
      ],
    ],
    [
      'uid-changed-through-core',
      'core/v1',
      live({ metadata: { ...liveMeta, uid: 'uid-2' } }),
      ['metadata.uid: Invalid value: "uid-2": field is immutable'],
    ],
    [
      'everything-but-meta-changed-through-core',
      'core/v1',
      live({
        involvedObject: { kind: 'Node', name: 'node-b' },
        reason: 'Other',
        type: 'Warning',
        action: 'Other',
        eventTime: '2026-11-24T18:59:00.000000Z',
        reportingComponent: 'example.com/other',
        reportingInstance: 'other-0',
        related: { kind: 'Pod', name: 'p1' },
        count: 3,
        source: { component: 'kubelet' },
      }),
      [],
    ],
    [
      'legacy-rules-still-apply-through-core',
      'core/v1',
      live({ action: '', reportingComponent: 'Not A Name' }),
      [
        "reportingController: Invalid value: \"Not A Name\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        'action: Required value',
      ],
    ],
  ];

  it.each(cases)('%s', (_name, api, next, errors) => {
    expect(validateEventUpdate(next, live(), api).map(errorString)).toEqual(errors);
  });
});
