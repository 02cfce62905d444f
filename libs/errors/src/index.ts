export {
  SlicekeeperError,
  TerminalError,
  TransientError,
  errorMessage,
  isTerminal,
  withContext,
} from './errors';
export type { ErrorKind, SlicekeeperErrorOptions, TransientErrorOptions } from './errors';
export {
  MAX_LISTED_PROBLEMS,
  MAX_PROBLEM_LENGTH,
  listProblems,
  shortenProblem,
} from './list-problems';
