/** Most problems an error text lists; the others are only counted. */
export const MAX_LISTED_PROBLEMS = 20;

/** Longest problem an error text carries, characters; a longer one is cut in the middle. */
export const MAX_PROBLEM_LENGTH = 512;

/**
 * Joins problems into one error text of bounded size: the first {@link MAX_LISTED_PROBLEMS},
 * each cut to {@link MAX_PROBLEM_LENGTH} characters, then `… and N more`. Error texts are
 * stored in statuses, returned by APIs and logged, so a driver that sends 10,000 bad devices
 * (or one 1 MB name) must not turn each of those into megabytes. Keep the complete list beside
 * the text where a caller needs it.
 */
export function listProblems(problems: readonly string[], separator = '; '): string {
  const listed = problems.slice(0, MAX_LISTED_PROBLEMS).map(shortenProblem);
  const more = problems.length - listed.length;
  if (more > 0) listed.push(`… and ${more} more`);
  return listed.join(separator);
}

/**
 * Cuts the middle out of a long problem: its start names the field and its end the rule, and
 * what lies between is usually the offending value.
 */
export function shortenProblem(problem: string): string {
  if (problem.length <= MAX_PROBLEM_LENGTH) return problem;
  const kept = MAX_PROBLEM_LENGTH - 1;
  const head = Math.ceil(kept / 2);
  return `${problem.slice(0, head)}…${problem.slice(problem.length - (kept - head))}`;
}
