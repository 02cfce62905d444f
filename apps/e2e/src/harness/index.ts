export { ExampleDriverProcess, InProcessDriver } from './drivers';
export { EmulatorClient, isSliceWrite } from './emulator-client';
export type { Fault, LoggedRequest, RequestCount, ResourceSlice } from './emulator-client';
export { inParallel } from './in-parallel';
export { deviceRevs, gpuInventory, publishes } from './inventories';
export type { GpuInventoryOptions } from './inventories';
export { System } from './system';
export type { PluginStatus, ServiceName, SystemOptions } from './system';
