export { DriverServer } from './driver-server';
export type { DriverFault, DriverServerOptions, PublishOptions } from './driver-server';
export type { PublishFeedback } from '@slicekeeper/proto';
