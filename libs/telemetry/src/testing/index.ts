export { recordedTracing } from './recorded-spans';
export type { RecordedTracing } from './recorded-spans';
