import { MAX_LISTED_PROBLEMS, MAX_PROBLEM_LENGTH, listProblems } from './list-problems';

const problems = (count: number) => Array.from({ length: count }, (_, i) => `p${i}`);

describe('listProblems', () => {
  it.each([
    ['none', [], ''],
    ['one', ['a: bad'], 'a: bad'],
    ['several', ['a: bad', 'b: worse'], 'a: bad; b: worse'],
  ])('lists %s as given', (_, list, text) => {
    expect(listProblems(list)).toBe(text);
  });

  it('lists exactly the maximum without a count', () => {
    const text = listProblems(problems(MAX_LISTED_PROBLEMS));
    expect(text.split('; ')).toEqual(problems(MAX_LISTED_PROBLEMS));
  });

  it('lists the first problems and counts the others', () => {
    const text = listProblems(problems(10_000));
    expect(text.split('; ')).toEqual([...problems(MAX_LISTED_PROBLEMS), '… and 9980 more']);
  });

  it('cuts a long problem in the middle, keeping the field and the rule', () => {
    const long = `pools[0].name: Invalid value: "${'x'.repeat(1_000_000)}": must be short`;
    const text = listProblems([long]);
    expect(text).toHaveLength(MAX_PROBLEM_LENGTH);
    expect(text).toMatch(/^pools\[0\]\.name: Invalid value: "x+…x+": must be short$/);
  });

  it('joins with the separator given', () => {
    expect(listProblems(['a', 'b'], '\n')).toBe('a\nb');
  });
});
