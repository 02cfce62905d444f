export {
  SlicekeeperError,
  TerminalError,
  TransientError,
  errorMessage,
  isTerminal,
  withContext,
} from './errors';
export type { ErrorKind, SlicekeeperErrorOptions, TransientErrorOptions } from './errors';
