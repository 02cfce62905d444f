import {
  C_IDENTIFIER_MESSAGE,
  dns1123LabelProblems,
  dns1123SubdomainProblems,
  isCIdentifier,
  labelValueProblems,
  qualifiedNameProblems,
  utf8ByteLength,
} from '@slicekeeper/contracts';
import { isJsonObject } from './object-schema';
import type { JsonObject, JsonValue } from './object-schema';
import { jsonEqual, listAt, numAt, objAt, strAt } from './api-schemas';
import { FieldPath, fieldError } from './field-errors';
import type { FieldError } from './field-errors';
import {
  MAX_COUNTERS_PER_COUNTER_SET,
  haveListAttributes,
  truncateKey,
  validateAttributeString,
  validateAttributeValueCount,
  validateConsumesCounters,
  validateCounters,
  validateDeviceBindingParameters,
  validateDeviceCapacity,
  validateListAttributeValues,
  validateNodeAllocatableResourceMappings,
  validateNodeAllocatableResources,
} from './device-validation';

/**
 * Validation with kube-apiserver 1.34's rules and messages (apimachinery's `validation` package,
 * `pkg/apis/core/validation` for metadata and Nodes, `pkg/apis/resource/validation` for
 * ResourceSlices), device taints with 1.36's and the later device fields with the rules of
 * device-validation.ts. Messages are copied, not paraphrased: clients and tests match on them.
 */

const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

/** apimachinery's `NameIsDNSSubdomain`: a generateName prefix may end with a dash. */
export function nameIsDnsSubdomain(name: string, prefix: boolean): readonly string[] {
  return dns1123SubdomainProblems(prefix && name.endsWith('-') ? `${name.slice(0, -1)}a` : name);
}

function validateLabels(labels: JsonValue | undefined, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (!isJsonObject(labels)) return errs;
  for (const [k, v] of Object.entries(labels)) {
    for (const msg of qualifiedNameProblems(k)) errs.push(fieldError.invalid(path, k, msg));
    if (typeof v === 'string') {
      for (const msg of labelValueProblems(v)) errs.push(fieldError.invalid(path, v, msg));
    }
  }
  return errs;
}

const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;

function validateAnnotations(annotations: JsonValue | undefined, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (!isJsonObject(annotations)) return errs;
  let total = 0;
  for (const [k, v] of Object.entries(annotations)) {
    for (const msg of qualifiedNameProblems(k.toLowerCase()))
      errs.push(fieldError.invalid(path, k, msg));
    total += k.length + (typeof v === 'string' ? v.length : 0);
  }
  if (total > TOTAL_ANNOTATION_SIZE_LIMIT)
    errs.push(fieldError.tooLong(path, TOTAL_ANNOTATION_SIZE_LIMIT));
  return errs;
}

function validateOwnerReferences(refs: JsonValue[] | undefined, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  let firstController = '';
  for (const ref of refs ?? []) {
    if (!isJsonObject(ref)) continue;
    const apiVersion = strAt(ref, 'apiVersion') ?? '';
    const kind = strAt(ref, 'kind') ?? '';
    const name = strAt(ref, 'name') ?? '';
    const uid = strAt(ref, 'uid') ?? '';
    const version = apiVersion.includes('/')
      ? apiVersion.slice(apiVersion.indexOf('/') + 1)
      : apiVersion;
    if (version === '')
      errs.push(
        fieldError.invalid(path.child('apiVersion'), apiVersion, 'version must not be empty'),
      );
    if (kind === '') errs.push(fieldError.invalid(path.child('kind'), kind, 'must not be empty'));
    if (name === '') errs.push(fieldError.invalid(path.child('name'), name, 'must not be empty'));
    if (uid === '') errs.push(fieldError.invalid(path.child('uid'), uid, 'must not be empty'));
    if (ref.controller === true) {
      const current = `${kind}/${name}`;
      if (firstController === '') firstController = current;
      else {
        errs.push(
          fieldError.invalid(
            path,
            refs,
            `Only one reference can have Controller set to true. Found "true" in references for ${firstController} and ${current}`,
          ),
        );
      }
    }
  }
  return errs;
}

function validateFinalizers(finalizers: JsonValue[] | undefined, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  for (const f of finalizers ?? []) {
    if (typeof f !== 'string') continue;
    for (const msg of qualifiedNameProblems(f)) errs.push(fieldError.invalid(path, f, msg));
    if (!f.includes('/') && !['orphan', 'foregroundDeletion', 'kubernetes'].includes(f)) {
      errs.push(
        fieldError.invalid(
          path,
          f,
          'name is neither a standard finalizer name nor is it fully qualified',
        ),
      );
    }
    if (seen.has(f)) errs.push(fieldError.duplicate(path, f));
    seen.add(f);
  }
  return errs;
}

/** apimachinery's `IsPathSegmentName` / `IsPathSegmentPrefix`: the generic registry's name rule. */
export function pathSegmentProblems(name: string, prefix: boolean): readonly string[] {
  const problems: string[] = [];
  if (!prefix)
    for (const bad of ['.', '..']) if (name === bad) problems.push(`may not be '${bad}'`);
  for (const bad of ['/', '%']) if (name.includes(bad)) problems.push(`may not contain '${bad}'`);
  return problems;
}

/**
 * The name check run with the type's own validation (`ValidateObjectMeta`); a namespaced type's
 * objects also need a namespace that is a DNS label.
 */
export function validateObjectMeta(
  meta: JsonObject,
  nameFn = nameIsDnsSubdomain,
  namespaced = false,
): FieldError[] {
  const path = FieldPath.root('metadata');
  const errs: FieldError[] = [];
  const generateName = strAt(meta, 'generateName') ?? '';
  if (generateName !== '') {
    for (const msg of nameFn(generateName, true)) {
      errs.push(fieldError.invalid(path.child('generateName'), generateName, msg));
    }
  }
  const name = strAt(meta, 'name') ?? '';
  if (name === '')
    errs.push(fieldError.required(path.child('name'), 'name or generateName is required'));
  else
    for (const msg of nameFn(name, false))
      errs.push(fieldError.invalid(path.child('name'), name, msg));
  if (namespaced) {
    const namespace = strAt(meta, 'namespace') ?? '';
    if (namespace === '') errs.push(fieldError.required(path.child('namespace')));
    else
      for (const msg of dns1123LabelProblems(namespace))
        errs.push(fieldError.invalid(path.child('namespace'), namespace, msg));
  }
  const generation = numAt(meta, 'generation') ?? 0;
  if (generation < 0) {
    errs.push(
      fieldError.invalid(
        path.child('generation'),
        generation,
        'must be greater than or equal to 0',
      ),
    );
  }
  errs.push(...validateLabels(meta.labels, path.child('labels')));
  errs.push(...validateAnnotations(meta.annotations, path.child('annotations')));
  errs.push(
    ...validateOwnerReferences(listAt(meta, 'ownerReferences'), path.child('ownerReferences')),
  );
  errs.push(...validateFinalizers(listAt(meta, 'finalizers'), path.child('finalizers')));
  return errs;
}

/** The path-segment check the generic registry runs after the type's validation. */
export function validatePathSegmentName(meta: JsonObject): FieldError[] {
  const path = FieldPath.root('metadata');
  const errs: FieldError[] = [];
  const name = strAt(meta, 'name') ?? '';
  for (const bad of ['.', '..']) {
    if (name === bad)
      errs.push(fieldError.invalid(path.child('name'), name, `may not be '${bad}'`));
  }
  for (const bad of ['/', '%']) {
    if (name.includes(bad))
      errs.push(fieldError.invalid(path.child('name'), name, `may not contain '${bad}'`));
  }
  return errs;
}

function immutable(
  newValue: JsonValue | undefined,
  oldValue: JsonValue | undefined,
  path: FieldPath,
): FieldError[] {
  return jsonEqual(newValue ?? null, oldValue ?? null)
    ? []
    : [fieldError.invalid(path, newValue ?? null, 'field is immutable')];
}

/** `ValidateObjectMetaUpdate`. */
export function validateObjectMetaUpdate(meta: JsonObject, old: JsonObject): FieldError[] {
  const path = FieldPath.root('metadata');
  const errs: FieldError[] = [];
  if (old.deletionTimestamp !== undefined) {
    const oldFinalizers = new Set(
      (listAt(old, 'finalizers') ?? []).filter((f) => typeof f === 'string'),
    );
    for (const f of listAt(meta, 'finalizers') ?? []) {
      if (typeof f === 'string' && !oldFinalizers.has(f)) {
        errs.push(
          fieldError.forbidden(
            path.child('finalizers'),
            `no new finalizers can be added if the object is being deleted, found new finalizers ${JSON.stringify([f])}`,
          ),
        );
      }
    }
  }
  const rv = strAt(meta, 'resourceVersion') ?? '';
  if (rv === '')
    errs.push(
      fieldError.invalid(path.child('resourceVersion'), rv, 'must be specified for an update'),
    );
  if ((numAt(meta, 'generation') ?? 0) < (numAt(old, 'generation') ?? 0)) {
    errs.push(
      fieldError.invalid(
        path.child('generation'),
        numAt(meta, 'generation') ?? 0,
        'must not be decremented',
      ),
    );
  }
  errs.push(...immutable(meta.name, old.name, path.child('name')));
  errs.push(...immutable(meta.uid, old.uid, path.child('uid')));
  errs.push(
    ...immutable(meta.creationTimestamp, old.creationTimestamp, path.child('creationTimestamp')),
  );
  errs.push(
    ...immutable(meta.deletionTimestamp, old.deletionTimestamp, path.child('deletionTimestamp')),
  );
  errs.push(
    ...immutable(
      meta.deletionGracePeriodSeconds,
      old.deletionGracePeriodSeconds,
      path.child('deletionGracePeriodSeconds'),
    ),
  );
  errs.push(...validateLabels(meta.labels, path.child('labels')));
  errs.push(...validateAnnotations(meta.annotations, path.child('annotations')));
  errs.push(
    ...validateOwnerReferences(listAt(meta, 'ownerReferences'), path.child('ownerReferences')),
  );
  errs.push(...validateFinalizers(listAt(meta, 'finalizers'), path.child('finalizers')));
  return errs;
}

// ---------------------------------------------------------------------------------------------
// ResourceSlice

const MAX_DEVICES = 128;
const MAX_DEVICES_WITH_ADVANCED_FEATURES = 64;
const MAX_ATTRIBUTES_AND_CAPACITIES = 32;
const ATTRIBUTE_MAX_VALUE_LENGTH = 64;
const DEVICE_MAX_ID_LENGTH = 32;
const DEVICE_MAX_DOMAIN_LENGTH = 63;
const POOL_NAME_MAX_LENGTH = 253;
const MAX_SHARED_COUNTERS = 8;
/** `DeviceTaintsMaxLength`: 16 since 1.35 (4 before). */
const MAX_DEVICE_TAINTS = 16;
/** `validDeviceTaintEffects` as `sets.List` sorts them; `None` is valid since 1.35. */
const DEVICE_TAINT_EFFECTS = ['NoExecute', 'NoSchedule', 'None'];

/** `ValidateCSIDriverName`, which DRA driver names reuse: lowercased before the subdomain check. */
function validateDriverName(driver: string, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (driver.length === 0) errs.push(fieldError.required(path));
  if (driver.length > 63) errs.push(fieldError.tooLong(path, 63));
  for (const msg of dns1123SubdomainProblems(driver.toLowerCase()))
    errs.push(fieldError.invalid(path, driver, msg));
  return errs;
}

function validatePoolName(name: string, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (name === '') return [fieldError.required(path)];
  if (name.length > POOL_NAME_MAX_LENGTH) errs.push(fieldError.tooLong(path, POOL_NAME_MAX_LENGTH));
  for (const part of name.split('/')) {
    for (const msg of dns1123SubdomainProblems(part))
      errs.push(fieldError.invalid(path, part, msg));
  }
  return errs;
}

function validateNodeName(name: string, path: FieldPath): FieldError[] {
  return nameIsDnsSubdomain(name, false).map((msg) => fieldError.invalid(path, name, msg));
}

function validateCIdentifier(id: string, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (id.length > DEVICE_MAX_ID_LENGTH) errs.push(fieldError.tooLong(path, DEVICE_MAX_ID_LENGTH));
  if (!isCIdentifier(id)) errs.push(fieldError.invalid(path, id, C_IDENTIFIER_MESSAGE));
  return errs;
}

function validateQualifiedAttributeName(name: string, path: FieldPath): FieldError[] {
  const parts = name.split('/');
  if (parts.length === 1) return validateCIdentifier(name, path);
  if (parts.length > 2)
    return [fieldError.invalid(path, name, 'must not contain more than one slash')];
  const [domain = '', id = ''] = parts;
  const errs: FieldError[] = [];
  if (domain === '') errs.push(fieldError.invalid(path, '', 'the domain must not be empty'));
  else errs.push(...validateDriverName(domain, path));
  if (id === '') errs.push(fieldError.invalid(path, '', 'the name must not be empty'));
  else errs.push(...validateCIdentifier(id, path));
  return errs;
}

function validateAttributeVersion(version: string, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (!SEMVER.test(version))
    errs.push(
      fieldError.invalid(path, version, 'must be a string compatible with semver.org spec 2.0.0'),
    );
  if (utf8ByteLength(version) > ATTRIBUTE_MAX_VALUE_LENGTH)
    errs.push(fieldError.tooLong(path, ATTRIBUTE_MAX_VALUE_LENGTH));
  return errs;
}

/** `validateDeviceAttribute`: exactly one value, scalar or (1.36) list. */
function validateDeviceAttribute(attribute: JsonObject, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  let set = 0;
  if (attribute.bool !== undefined) set++;
  if (attribute.int !== undefined) set++;
  const str = strAt(attribute, 'string');
  if (str !== undefined) {
    errs.push(...validateAttributeString(str, path.child('string')));
    set++;
  }
  const version = strAt(attribute, 'version');
  if (version !== undefined) {
    set++;
    errs.push(...validateAttributeVersion(version, path.child('version')));
  }
  const lists = validateListAttributeValues(
    attribute,
    path,
    validateAttributeString,
    validateAttributeVersion,
  );
  errs.push(...lists.errors);
  set += lists.set;
  if (set === 0) errs.push(fieldError.required(path, 'exactly one value must be specified'));
  else if (set > 1) {
    // The value printed is the internal Go struct, which has no JSON tags.
    const printed: Record<string, JsonValue> = {
      IntValue: attribute.int ?? null,
      BoolValue: attribute.bool ?? null,
      StringValue: attribute.string ?? null,
      VersionValue: attribute.version ?? null,
    };
    if (lists.set > 0) {
      printed.IntValues = attribute.ints ?? null;
      printed.BoolValues = attribute.bools ?? null;
      printed.StringValues = attribute.strings ?? null;
      printed.VersionValues = attribute.versions ?? null;
    }
    errs.push(fieldError.invalid(path, printed, 'exactly one value must be specified'));
  }
  return errs;
}

/**
 * `validateDeviceTaint` of kube-apiserver 1.36: the key is a label name (so required), the value
 * an optional label value, the effect required and one of {@link DEVICE_TAINT_EFFECTS}.
 */
function validateDeviceTaint(taint: JsonObject, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const key = strAt(taint, 'key') ?? '';
  for (const msg of qualifiedNameProblems(key))
    errs.push(fieldError.invalid(path.child('key'), key, msg));
  const value = strAt(taint, 'value') ?? '';
  if (value !== '')
    for (const msg of labelValueProblems(value))
      errs.push(fieldError.invalid(path.child('value'), value, msg));
  const effect = strAt(taint, 'effect') ?? '';
  if (effect === '') errs.push(fieldError.required(path.child('effect')));
  else if (!DEVICE_TAINT_EFFECTS.includes(effect))
    errs.push(fieldError.notSupported(path.child('effect'), effect, DEVICE_TAINT_EFFECTS));
  return errs;
}

const NODE_SELECTOR_OPERATORS = ['DoesNotExist', 'Exists', 'Gt', 'In', 'Lt', 'NotIn'];

/** `ValidateNodeSelector` (terms, requirement keys, operators and their values). */
function validateNodeSelector(selector: JsonObject, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const terms = listAt(selector, 'nodeSelectorTerms') ?? [];
  const termsPath = path.child('nodeSelectorTerms');
  if (terms.length === 0)
    errs.push(fieldError.required(termsPath, 'must have at least one node selector term'));
  terms.forEach((term, i) => {
    if (!isJsonObject(term)) return;
    for (const kind of ['matchExpressions', 'matchFields'] as const) {
      (listAt(term, kind) ?? []).forEach((req, j) => {
        if (!isJsonObject(req)) return;
        const reqPath = termsPath.index(i).child(kind).index(j);
        const operator = strAt(req, 'operator') ?? '';
        const values = listAt(req, 'values') ?? [];
        if (operator === 'In' || operator === 'NotIn') {
          if (values.length === 0)
            errs.push(
              fieldError.required(
                reqPath.child('values'),
                "must be specified when `operator` is 'In' or 'NotIn'",
              ),
            );
        } else if (operator === 'Exists' || operator === 'DoesNotExist') {
          if (values.length > 0)
            errs.push(
              fieldError.forbidden(
                reqPath.child('values'),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
              ),
            );
        } else if (operator === 'Gt' || operator === 'Lt') {
          if (values.length !== 1)
            errs.push(
              fieldError.required(
                reqPath.child('values'),
                "must be specified single value when `operator` is 'Lt' or 'Gt'",
              ),
            );
        } else {
          errs.push(
            fieldError.invalid(
              reqPath.child('operator'),
              operator,
              'not a valid selector operator',
            ),
          );
        }
        const key = strAt(req, 'key') ?? '';
        if (kind === 'matchExpressions') {
          for (const msg of qualifiedNameProblems(key))
            errs.push(fieldError.invalid(reqPath.child('key'), key, msg));
        } else if (key !== 'metadata.name') {
          errs.push(
            fieldError.invalid(reqPath.child('key'), key, 'not a valid field selector key'),
          );
        }
      });
    }
  });
  void NODE_SELECTOR_OPERATORS;
  return errs;
}

/**
 * `validateDevice`. `oldDevice` is the stored device of the same name on update: a capacity map
 * or a taint list unchanged from it is not validated again, as upstream skips them.
 */
function validateDevice(
  device: JsonObject,
  oldDevice: JsonObject | undefined,
  path: FieldPath,
  perDeviceNodeSelection: boolean,
): FieldError[] {
  const errs: FieldError[] = [];
  const name = strAt(device, 'name') ?? '';
  for (const msg of dns1123LabelProblems(name))
    errs.push(fieldError.invalid(path.child('name'), name, msg));
  const attributes = objAt(device, 'attributes') ?? {};
  const capacity = objAt(device, 'capacity') ?? {};
  const total = Object.keys(attributes).length + Object.keys(capacity).length;
  if (total > MAX_ATTRIBUTES_AND_CAPACITIES) {
    errs.push(
      fieldError.invalid(
        path,
        total,
        `the total number of attributes and capacities must not exceed ${MAX_ATTRIBUTES_AND_CAPACITIES}`,
      ),
    );
  }
  errs.push(...validateAttributeValueCount(device, path));
  const keyMax = DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH;
  const attrPath = path.child('attributes');
  // validateMap: the key's own errors name the entry too (`attributes[<key>]`).
  for (const [key, attribute] of Object.entries(attributes)) {
    const keyPath = attrPath.key(truncateKey(key, keyMax));
    errs.push(...validateQualifiedAttributeName(key, keyPath));
    if (isJsonObject(attribute)) errs.push(...validateDeviceAttribute(attribute, keyPath));
  }
  if (oldDevice === undefined || !jsonEqual(capacity, objAt(oldDevice, 'capacity') ?? {})) {
    const capPath = path.child('capacity');
    const multi = device.allowMultipleAllocations === true;
    for (const [key, cap] of Object.entries(capacity)) {
      const keyPath = capPath.key(truncateKey(key, keyMax));
      errs.push(...validateQualifiedAttributeName(key, keyPath));
      if (isJsonObject(cap)) errs.push(...validateDeviceCapacity(cap, multi, keyPath));
    }
  }
  const taints = listAt(device, 'taints') ?? [];
  if (oldDevice === undefined || !jsonEqual(taints, listAt(oldDevice, 'taints') ?? [])) {
    if (taints.length > MAX_DEVICE_TAINTS)
      errs.push(fieldError.tooMany(path.child('taints'), taints.length, MAX_DEVICE_TAINTS));
    else
      taints.forEach((t, i) => {
        if (isJsonObject(t)) errs.push(...validateDeviceTaint(t, path.child('taints').index(i)));
      });
  }
  errs.push(...validateConsumesCounters(device, path));
  const hasNodeName = device.nodeName !== undefined;
  const hasSelector = device.nodeSelector !== undefined;
  const hasAllNodes = device.allNodes !== undefined;
  if (perDeviceNodeSelection) {
    const setFields: string[] = [];
    const nodeName = strAt(device, 'nodeName');
    if (nodeName !== undefined) {
      if (nodeName !== '') {
        setFields.push('`nodeName`');
        errs.push(...validateNodeName(nodeName, path.child('nodeName')));
      } else {
        errs.push(fieldError.invalid(path.child('nodeName'), nodeName, 'must not be empty'));
      }
    }
    const selector = objAt(device, 'nodeSelector');
    if (selector !== undefined) {
      setFields.push('`nodeSelector`');
      errs.push(...validateNodeSelector(selector, path.child('nodeSelector')));
    }
    if (device.allNodes === true) setFields.push('`allNodes`');
    else if (device.allNodes === false)
      errs.push(
        fieldError.invalid(path.child('allNodes'), false, 'must be either unset or set to true'),
      );
    const msg =
      'exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec';
    if (setFields.length === 0) errs.push(fieldError.required(path, msg));
    else if (setFields.length > 1)
      errs.push(fieldError.invalid(path, `{${setFields.join(', ')}}`, msg));
  } else if (hasNodeName || hasSelector || hasAllNodes) {
    errs.push(
      fieldError.invalid(
        path,
        null,
        '`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec',
      ),
    );
  }
  errs.push(...validateDeviceBindingParameters(device, path));
  errs.push(...validateNodeAllocatableResourceMappings(device, path));
  errs.push(...validateNodeAllocatableResources(device, path));
  return errs;
}

/** The ResourceSlice layout rules that depend on the release. */
export interface SliceLayoutRules {
  /**
   * From 1.35: `sharedCounters` only in a slice without `devices`, and at most 64 devices once a
   * device has taints or consumes counters (before, 128 in any case and counter sets could sit
   * beside devices; ResourceSliceSpec.devices in the 1.34 and 1.35 API reference).
   */
  readonly separateCounterSets: boolean;
}

/** The layout rules of the newest releases. */
export const CURRENT_SLICE_LAYOUT: SliceLayoutRules = { separateCounterSets: true };

function validateResourceSliceSpec(
  spec: JsonObject,
  oldSpec: JsonObject | undefined,
  rules: SliceLayoutRules,
): FieldError[] {
  const path = FieldPath.root('spec');
  const errs: FieldError[] = [];
  const driver = strAt(spec, 'driver') ?? '';
  errs.push(...validateDriverName(driver, path.child('driver')));
  const pool = objAt(spec, 'pool') ?? {};
  const poolPath = path.child('pool');
  errs.push(...validatePoolName(strAt(pool, 'name') ?? '', poolPath.child('name')));
  const sliceCount = numAt(pool, 'resourceSliceCount') ?? 0;
  if (sliceCount <= 0)
    errs.push(
      fieldError.invalid(
        poolPath.child('resourceSliceCount'),
        sliceCount,
        'must be greater than zero',
      ),
    );
  const generation = numAt(pool, 'generation') ?? 0;
  if (generation < 0)
    errs.push(
      fieldError.invalid(
        poolPath.child('generation'),
        generation,
        'must be greater than or equal to zero',
      ),
    );
  if (oldSpec !== undefined) {
    const oldPool = objAt(oldSpec, 'pool') ?? {};
    errs.push(...immutable(pool.name, oldPool.name, poolPath.child('name')));
    errs.push(...immutable(spec.driver, oldSpec.driver, path.child('driver')));
    errs.push(...immutable(spec.nodeName, oldSpec.nodeName, path.child('nodeName')));
  }
  const setFields: string[] = [];
  const nodeName = strAt(spec, 'nodeName');
  if (nodeName !== undefined) {
    if (nodeName !== '') {
      setFields.push('`nodeName`');
      errs.push(...validateNodeName(nodeName, path.child('nodeName')));
    } else {
      errs.push(
        fieldError.invalid(
          path.child('nodeName'),
          nodeName,
          'must be either unset or set to a non-empty string',
        ),
      );
    }
  }
  const selector = objAt(spec, 'nodeSelector');
  if (selector !== undefined) {
    setFields.push('`nodeSelector`');
    errs.push(...validateNodeSelector(selector, path.child('nodeSelector')));
    const terms = listAt(selector, 'nodeSelectorTerms') ?? [];
    if (terms.length !== 1) {
      errs.push(
        fieldError.invalid(
          path.child('nodeSelector', 'nodeSelectorTerms'),
          terms,
          'must have exactly one node selector term',
        ),
      );
    }
  }
  if (spec.allNodes === true) setFields.push('`allNodes`');
  else if (spec.allNodes === false)
    errs.push(
      fieldError.invalid(path.child('allNodes'), false, 'must be either unset or set to true'),
    );
  const perDevice = spec.perDeviceNodeSelection;
  if (perDevice === true) setFields.push('`perDeviceNodeSelection`');
  else if (perDevice === false) {
    errs.push(
      fieldError.invalid(
        path.child('perDeviceNodeSelection'),
        false,
        'must be either unset or set to true',
      ),
    );
  }
  const oneOf =
    'exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required';
  if (setFields.length === 0) errs.push(fieldError.required(path, oneOf));
  else if (setFields.length > 1) {
    errs.push(
      fieldError.invalid(
        path,
        `{${setFields.join(', ')}}`,
        `${oneOf}, but multiple fields are set`,
      ),
    );
  }
  const devices = listAt(spec, 'devices') ?? [];
  const sharedCounters = listAt(spec, 'sharedCounters');
  if (
    rules.separateCounterSets &&
    sharedCounters !== undefined &&
    spec.devices !== null &&
    spec.devices !== undefined
  ) {
    errs.push(fieldError.invalid(path, '', 'only one of `sharedCounters` or `devices` is allowed'));
  }
  // haveDeviceTaints || haveConsumesCounters (a non-empty list on any device) ||
  // haveListAttributes (1.36; a release without list attributes never decodes one).
  const advanced =
    rules.separateCounterSets &&
    (devices.some(
      (d) =>
        isJsonObject(d) &&
        ((listAt(d, 'taints') ?? []).length > 0 ||
          (listAt(d, 'consumesCounters') ?? []).length > 0),
    ) ||
      haveListAttributes(devices));
  const maxDevices = advanced ? MAX_DEVICES_WITH_ADVANCED_FEATURES : MAX_DEVICES;
  const devicesPath = path.child('devices');
  if (devices.length > maxDevices) {
    errs.push(fieldError.tooMany(devicesPath, devices.length, maxDevices));
  } else {
    const oldDevices = (listAt(oldSpec, 'devices') ?? []).filter(isJsonObject);
    devices.forEach((d, i) => {
      if (!isJsonObject(d)) return;
      // lookupDevice: the first stored device of the same name.
      const oldDevice =
        oldSpec === undefined ? undefined : oldDevices.find((o) => o.name === d.name);
      errs.push(...validateDevice(d, oldDevice, devicesPath.index(i), perDevice === true));
    });
    const seen = new Set<string>();
    devices.forEach((d, i) => {
      const name = isJsonObject(d) ? (strAt(d, 'name') ?? '') : '';
      if (seen.has(name)) errs.push(fieldError.duplicate(devicesPath.index(i).child('name'), name));
      seen.add(name);
    });
  }
  if (sharedCounters !== undefined) {
    const countersPath = path.child('sharedCounters');
    if (sharedCounters.length > MAX_SHARED_COUNTERS) {
      errs.push(fieldError.tooMany(countersPath, sharedCounters.length, MAX_SHARED_COUNTERS));
    } else {
      const seen = new Set<string>();
      sharedCounters.forEach((set, i) => {
        if (!isJsonObject(set)) return;
        const name = strAt(set, 'name') ?? '';
        const setPath = countersPath.index(i);
        if (name === '') errs.push(fieldError.required(setPath.child('name')));
        else
          for (const msg of dns1123LabelProblems(name))
            errs.push(fieldError.invalid(setPath.child('name'), name, msg));
        const counters = objAt(set, 'counters') ?? {};
        if (Object.keys(counters).length === 0)
          errs.push(fieldError.required(setPath.child('counters')));
        else
          errs.push(
            ...validateCounters(counters, MAX_COUNTERS_PER_COUNTER_SET, setPath.child('counters')),
          );
        if (seen.has(name)) errs.push(fieldError.duplicate(setPath.child('name'), name));
        seen.add(name);
      });
    }
  }
  return errs;
}

export function validateResourceSlice(
  slice: JsonObject,
  rules: SliceLayoutRules = CURRENT_SLICE_LAYOUT,
): FieldError[] {
  return [
    ...validateObjectMeta(objAt(slice, 'metadata') ?? {}),
    ...validateResourceSliceSpec(objAt(slice, 'spec') ?? {}, undefined, rules),
  ];
}

export function validateResourceSliceUpdate(
  slice: JsonObject,
  old: JsonObject,
  rules: SliceLayoutRules = CURRENT_SLICE_LAYOUT,
): FieldError[] {
  return [
    ...validateObjectMetaUpdate(objAt(slice, 'metadata') ?? {}, objAt(old, 'metadata') ?? {}),
    ...validateResourceSliceSpec(objAt(slice, 'spec') ?? {}, objAt(old, 'spec'), rules),
  ];
}

// ---------------------------------------------------------------------------------------------
// Node

const TAINT_EFFECTS = ['NoExecute', 'NoSchedule', 'PreferNoSchedule'];

function validateNodeSpec(spec: JsonObject): FieldError[] {
  const errs: FieldError[] = [];
  const path = FieldPath.root('spec').child('taints');
  const seen = new Set<string>();
  (listAt(spec, 'taints') ?? []).forEach((t, i) => {
    if (!isJsonObject(t)) return;
    const key = strAt(t, 'key') ?? '';
    const effect = strAt(t, 'effect') ?? '';
    const taintPath = path.index(i);
    for (const msg of qualifiedNameProblems(key))
      errs.push(fieldError.invalid(taintPath.child('key'), key, msg));
    const value = strAt(t, 'value') ?? '';
    for (const msg of labelValueProblems(value))
      errs.push(fieldError.invalid(taintPath.child('value'), value, msg));
    if (effect === '') errs.push(fieldError.required(taintPath.child('effect')));
    else if (!TAINT_EFFECTS.includes(effect))
      errs.push(fieldError.notSupported(taintPath.child('effect'), effect, TAINT_EFFECTS));
    const id = `${key}:${effect}`;
    if (seen.has(id)) {
      errs.push(fieldError.duplicate(path, `${key}=${value}:${effect}`));
    }
    seen.add(id);
  });
  return errs;
}

export function validateNode(node: JsonObject): FieldError[] {
  return [
    ...validateObjectMeta(objAt(node, 'metadata') ?? {}),
    ...validateNodeSpec(objAt(node, 'spec') ?? {}),
  ];
}

export function validateNodeUpdate(node: JsonObject, old: JsonObject): FieldError[] {
  const errs = [
    ...validateObjectMetaUpdate(objAt(node, 'metadata') ?? {}, objAt(old, 'metadata') ?? {}),
    ...validateNodeSpec(objAt(node, 'spec') ?? {}),
  ];
  const spec = objAt(node, 'spec') ?? {};
  const oldSpec = objAt(old, 'spec') ?? {};
  const oldCidr = strAt(oldSpec, 'podCIDR') ?? '';
  if (oldCidr !== '' && !jsonEqual(spec.podCIDRs ?? null, oldSpec.podCIDRs ?? null)) {
    errs.push(
      fieldError.forbidden(
        FieldPath.root('spec').child('podCIDRs'),
        'node updates may not change podCIDR except from "" to valid',
      ),
    );
  }
  const oldProvider = strAt(oldSpec, 'providerID') ?? '';
  if (oldProvider !== '' && strAt(spec, 'providerID') !== oldProvider) {
    errs.push(
      fieldError.forbidden(
        FieldPath.root('spec').child('providerID'),
        'node updates may not change providerID except from "" to valid',
      ),
    );
  }
  return errs;
}
