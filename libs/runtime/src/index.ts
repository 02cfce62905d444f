export { runService } from './run-service';
export type {
  Closable,
  ProbeSettings,
  RunServiceOptions,
  RunningService,
  ServiceConfig,
  ServiceContext,
  ServiceParts,
} from './run-service';
