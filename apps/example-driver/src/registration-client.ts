// The client moved to @slicekeeper/registration-client, shared with the node-mode watcher's
// discovery; main.ts imports it from here until it imports the lib itself.
export { RegistrationClient, RegistrationError } from '@slicekeeper/registration-client';
export type { PluginIdentity, RegistrationClientOptions } from '@slicekeeper/registration-client';
