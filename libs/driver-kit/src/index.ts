export { DriverServer } from './driver-server';
export type { DriverFault, DriverServerOptions } from './driver-server';
export type { PublishFeedback } from '@slicekeeper/proto';
