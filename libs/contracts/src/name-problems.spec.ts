import {
  C_IDENTIFIER_MESSAGE,
  DNS1123_LABEL_MESSAGE,
  DNS1123_SUBDOMAIN_MESSAGE,
  dns1123LabelProblems,
  dns1123SubdomainProblems,
  isCIdentifier,
  labelValueProblems,
  qualifiedNameProblems,
} from './name-problems';

describe('name problems (apimachinery validation, with the API server messages)', () => {
  const cases: [name: string, problems: readonly string[], expected: string[]][] = [
    ['label-valid', dns1123LabelProblems('gpu-0'), []],
    ['label-pattern', dns1123LabelProblems('GPU_0'), [DNS1123_LABEL_MESSAGE]],
    [
      'label-too-long',
      dns1123LabelProblems('g'.repeat(64)),
      ['must be no more than 63 characters'],
    ],
    [
      'label-too-long-and-pattern',
      dns1123LabelProblems('G'.repeat(64)),
      ['must be no more than 63 characters', DNS1123_LABEL_MESSAGE],
    ],
    ['subdomain-valid', dns1123SubdomainProblems('gpu.example.com'), []],
    [
      'subdomain-too-long-and-pattern',
      dns1123SubdomainProblems(`${'a'.repeat(253)}.`),
      ['must be no more than 253 characters', DNS1123_SUBDOMAIN_MESSAGE],
    ],
    ['qualified-valid', qualifiedNameProblems('example.com/MyName'), []],
    ['qualified-empty-prefix', qualifiedNameProblems('/name'), ['prefix part must be non-empty']],
    [
      'qualified-bad-prefix',
      qualifiedNameProblems('Example.com/name'),
      [`prefix part ${DNS1123_SUBDOMAIN_MESSAGE}`],
    ],
    ['label-value-empty', labelValueProblems(''), []],
    [
      'label-value-too-long',
      labelValueProblems('v'.repeat(64)),
      ['must be no more than 63 characters'],
    ],
  ];

  it.each(cases)('%s', (_, problems, expected) => {
    expect(problems).toEqual(expected);
  });

  it('tells C identifiers', () => {
    expect(isCIdentifier('my_name')).toBe(true);
    expect(isCIdentifier('1name')).toBe(false);
    expect(C_IDENTIFIER_MESSAGE).toContain("regex used for validation is '[A-Za-z_][A-Za-z0-9_]*'");
  });
});
