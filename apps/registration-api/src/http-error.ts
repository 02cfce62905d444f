import { TerminalError } from '@slicekeeper/errors';

/** One invalid field of a request: where (`body.node`, `query.limit`) and what is wrong. */
export interface FieldProblem {
  field: string;
  message: string;
}

/**
 * An error the API answers with a 4xx/5xx status and the uniform `{ code, message, details }`
 * body. Part of the one hierarchy (terminal: the same request fails the same way again).
 */
export class HttpError extends TerminalError {
  readonly statusCode: number;
  readonly details: readonly FieldProblem[];

  constructor(
    statusCode: number,
    code: string,
    message: string,
    details: readonly FieldProblem[] = [],
  ) {
    super(message, { code });
    this.statusCode = statusCode;
    this.details = details;
  }
}
