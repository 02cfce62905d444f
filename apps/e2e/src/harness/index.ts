export { ExampleDriverProcess, InProcessDriver } from './drivers';
export { EmulatorClient, isSliceWrite } from './emulator-client';
export type {
  Fault,
  LoggedRequest,
  RequestCount,
  ResourceSlice,
  ResourceSliceVersion,
} from './emulator-client';
export { inParallel } from './in-parallel';
export { Kubelet130Driver } from './kubelet-130-driver';
export type { Kubelet130DriverOptions } from './kubelet-130-driver';
export { deviceRevs, gpuInventory, publishes } from './inventories';
export type { GpuInventoryOptions } from './inventories';
export { MemoryCgroup, manifestMemoryLimit } from './memory-cgroup';
export { ProductionTree } from './production-tree';
export { System } from './system';
export type { NodeEvent, PluginStatus, ServiceName, SystemOptions } from './system';
