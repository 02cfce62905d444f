import type { NodeSelector } from '@slicekeeper/contracts';
import { DNS1123_SUBDOMAIN_MESSAGE, labelValueProblems } from '@slicekeeper/contracts';
import { formatFieldError } from './field-error';
import type { FieldError } from './field-error';
import { validateNodeSelector } from './validate-node-selector';

const PATH = 'pools[0].scope.nodeSelector';
const TERMS = `${PATH}.nodeSelectorTerms`;
const LABEL_VALUE_MESSAGE = labelValueProblems('Not Valid!')[0] ?? '';

/** A selector of one term with these requirements. */
function term(requirements: NodeSelector['nodeSelectorTerms'][number]): NodeSelector {
  return { nodeSelectorTerms: [requirements] };
}

const cases: [name: string, selector: NodeSelector, errors: string[]][] = [
  [
    'ValidateNodeSelector: one term of label and field requirements',
    term({
      matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }],
      matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-1'] }],
    }),
    [],
  ],
  [
    'ValidateNodeSelector: at least one term (and resource.k8s.io: exactly one)',
    { nodeSelectorTerms: [] },
    [
      `${TERMS}: Required value: must have at least one node selector term`,
      `${TERMS}: Invalid value: []: must have exactly one node selector term`,
    ],
  ],
  [
    'resource.k8s.io: exactly one term, each term checked',
    { nodeSelectorTerms: [{}, { matchExpressions: [{ key: 'zone', operator: 'Gt' }] }] },
    [
      `${TERMS}[1].matchExpressions[0].values: Required value: must be specified single value when \`operator\` is 'Lt' or 'Gt'`,
      `${TERMS}: Invalid value: [{},{"matchExpressions":[{"key":"zone","operator":"Gt"}]}]: must have exactly one node selector term`,
    ],
  ],
  [
    'ValidateNodeSelectorRequirement: no values with Exists',
    term({ matchExpressions: [{ key: 'zone', operator: 'Exists', values: ['a'] }] }),
    [
      `${TERMS}[0].matchExpressions[0].values: Forbidden: may not be specified when \`operator\` is 'Exists' or 'DoesNotExist'`,
    ],
  ],
  [
    'ValidateNodeSelectorRequirement: each value a label value',
    term({
      matchExpressions: [
        { key: 'zone', operator: 'In', values: ['a'] },
        { key: 'zone', operator: 'NotIn', values: ['ok', 'Not Valid!'] },
      ],
    }),
    [
      `${TERMS}[0].matchExpressions[1].values[1]: Invalid value: "Not Valid!": ${LABEL_VALUE_MESSAGE}`,
    ],
  ],
  [
    'ValidateNodeFieldSelectorRequirement: In or NotIn only',
    term({ matchFields: [{ key: 'metadata.name', operator: 'Exists', values: ['a'] }] }),
    [`${TERMS}[0].matchFields[0].operator: Invalid value: "Exists": not a valid selector operator`],
  ],
  [
    'ValidateNodeFieldSelectorRequirement: one value',
    term({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['a', 'b'] }] }),
    [
      `${TERMS}[0].matchFields[0].values: Required value: must be only one value when \`operator\` is 'In' or 'NotIn' for node field selector`,
    ],
  ],
  [
    'ValidateNodeFieldSelectorRequirement: metadata.name only',
    term({
      matchFields: [
        { key: 'metadata.name', operator: 'In', values: ['node-1'] },
        { key: 'metadata.uid', operator: 'In', values: ['x'] },
      ],
    }),
    [
      `${TERMS}[0].matchFields[1].key: Invalid value: "metadata.uid": not a valid field selector key`,
    ],
  ],
  [
    'ValidateNodeFieldSelectorRequirement: the value a node name',
    term({ matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['Bad_Name'] }] }),
    [
      `${TERMS}[0].matchFields[0].values[0]: Invalid value: "Bad_Name": ${DNS1123_SUBDOMAIN_MESSAGE}`,
    ],
  ],
];

describe('validateNodeSelector', () => {
  it.each(cases)('%s', (_, selector, expected) => {
    const errors: FieldError[] = [];
    validateNodeSelector(selector, PATH, errors);
    expect(errors.map(formatFieldError)).toEqual(expected);
  });
});
