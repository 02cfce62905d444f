import { labelValueProblems, nodeNameProblem, qualifiedNameProblems } from '@slicekeeper/contracts';
import type { NodeSelector } from '@slicekeeper/contracts';
import type { FieldError } from './field-error';
import { invalid, required } from './field-error';

/** An absent list of values, without a new array for each requirement that has none. */
const NO_VALUES: readonly string[] = [];

/**
 * Checks a node selector as `corevalidation.ValidateNodeSelector` plus the one-term rule. The
 * rule holds for a slice's selector and, as resource.k8s.io/v1 documents it, for a device's own
 * (per-device node selection), although the API server checks it on the slice's only. As the
 * device's validator, it builds a path only for a problem it reports.
 */
export function validateNodeSelector(
  nodeSelector: NodeSelector,
  path: string,
  errors: FieldError[],
): void {
  const terms = nodeSelector.nodeSelectorTerms;
  if (terms.length === 0) {
    errors.push(required(`${path}.nodeSelectorTerms`, 'must have at least one node selector term'));
  }
  for (let i = 0; i < terms.length; i++) {
    const term = terms[i];
    if (term === undefined) continue;
    const expressions = term.matchExpressions;
    if (expressions !== undefined) {
      for (let j = 0; j < expressions.length; j++) {
        const requirement = expressions[j];
        if (requirement === undefined) continue;
        validateLabelRequirement(requirement, path, i, j, errors);
      }
    }
    const fields = term.matchFields;
    if (fields !== undefined) {
      for (let j = 0; j < fields.length; j++) {
        const requirement = fields[j];
        if (requirement === undefined) continue;
        validateFieldRequirement(requirement, path, i, j, errors);
      }
    }
  }
  if (terms.length !== 1) {
    // resource.k8s.io adds this to keep merging selectors of devices from several slices simple.
    errors.push(
      invalid(`${path}.nodeSelectorTerms`, terms, 'must have exactly one node selector term'),
    );
  }
}

type NodeSelectorRequirement = NonNullable<
  NodeSelector['nodeSelectorTerms'][number]['matchExpressions']
>[number];

/**
 * `path.nodeSelectorTerms[term].<list>[index].<field>`: a field of requirement `index` in a
 * list of term `term` of the selector at `path`, built for a problem only.
 */
function requirementPath(
  path: string,
  term: number,
  list: 'matchExpressions' | 'matchFields',
  index: number,
  field: string,
): string {
  return `${path}.nodeSelectorTerms[${term}].${list}[${index}].${field}`;
}

/** `corevalidation.ValidateNodeSelectorRequirement`: a node label expression. */
function validateLabelRequirement(
  requirement: NodeSelectorRequirement,
  path: string,
  term: number,
  index: number,
  errors: FieldError[],
): void {
  const values = requirement.values ?? NO_VALUES;
  switch (requirement.operator) {
    case 'In':
    case 'NotIn':
      if (values.length === 0) {
        errors.push(
          required(
            requirementPath(path, term, 'matchExpressions', index, 'values'),
            "must be specified when `operator` is 'In' or 'NotIn'",
          ),
        );
      }
      break;
    case 'Exists':
    case 'DoesNotExist':
      if (values.length > 0) {
        errors.push({
          path: requirementPath(path, term, 'matchExpressions', index, 'values'),
          type: 'Forbidden',
          message: "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        });
      }
      break;
    case 'Gt':
    case 'Lt':
      if (values.length !== 1) {
        errors.push(
          required(
            requirementPath(path, term, 'matchExpressions', index, 'values'),
            "must be specified single value when `operator` is 'Lt' or 'Gt'",
          ),
        );
      }
      break;
    default:
      errors.push(
        invalid(
          requirementPath(path, term, 'matchExpressions', index, 'operator'),
          requirement.operator,
          'not a valid selector operator',
        ),
      );
  }
  for (const problem of qualifiedNameProblems(requirement.key)) {
    errors.push(
      invalid(
        requirementPath(path, term, 'matchExpressions', index, 'key'),
        requirement.key,
        problem,
      ),
    );
  }
  for (let k = 0; k < values.length; k++) {
    const value = values[k] ?? '';
    for (const problem of labelValueProblems(value)) {
      errors.push(
        invalid(
          requirementPath(path, term, 'matchExpressions', index, `values[${k}]`),
          value,
          problem,
        ),
      );
    }
  }
}

/** `corevalidation.ValidateNodeFieldSelectorRequirement`: only `metadata.name In/NotIn`. */
function validateFieldRequirement(
  requirement: NodeSelectorRequirement,
  path: string,
  term: number,
  index: number,
  errors: FieldError[],
): void {
  const values = requirement.values ?? NO_VALUES;
  if (requirement.operator === 'In' || requirement.operator === 'NotIn') {
    if (values.length !== 1) {
      errors.push(
        required(
          requirementPath(path, term, 'matchFields', index, 'values'),
          "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
        ),
      );
    }
  } else {
    errors.push(
      invalid(
        requirementPath(path, term, 'matchFields', index, 'operator'),
        requirement.operator,
        'not a valid selector operator',
      ),
    );
  }
  if (requirement.key !== 'metadata.name') {
    errors.push(
      invalid(
        requirementPath(path, term, 'matchFields', index, 'key'),
        requirement.key,
        'not a valid field selector key',
      ),
    );
    return;
  }
  for (let k = 0; k < values.length; k++) {
    const value = values[k] ?? '';
    const problem = nodeNameProblem(value);
    if (problem !== undefined) {
      errors.push(
        invalid(requirementPath(path, term, 'matchFields', index, `values[${k}]`), value, problem),
      );
    }
  }
}
