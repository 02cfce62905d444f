export { RegistrationClient, RegistrationError } from './registration-client';
export type {
  DeregisterOptions,
  PluginIdentity,
  RegisterRequest,
  RegistrationClientOptions,
} from './registration-client';
