/**
 * Admission policy of the registration API, kept out of the app so that it can be unit-tested:
 * who may call (bearer tokens, node binding), which endpoints may be dialled (the allowlist,
 * also checked by the plugin-watcher before each of its dials), which ResourcePublisher version
 * is spoken, and the kubelet-style probe of a new plugin.
 */
export { admissionError, admissionErrorCodes, isAdmissionErrorCode } from './admission-error';
export type { AdmissionErrorCode } from './admission-error';
export { admitPlugin } from './admit-plugin';
export type {
  AdmitPluginOptions,
  AdmitPluginResult,
  AdmittedPlugin,
  DeclaredPlugin,
} from './admit-plugin';
export { EndpointPolicy } from './endpoint-policy';
export type {
  AdmittedEndpoint,
  EndpointCheck,
  EndpointPolicyOptions,
  SocketFileSystem,
} from './endpoint-policy';
export { parseIp, parseIpRange, rangeContains } from './ip-range';
export type { IpAddress, IpRange } from './ip-range';
export { negotiateVersion, unsupportedVersionsMessage } from './negotiate-version';
export { GrpcPluginProber } from './plugin-prober';
export type {
  GrpcPluginProberOptions,
  PluginInfo,
  PluginProber,
  PluginSession,
  RegistrationOutcome,
} from './plugin-prober';
export {
  MIN_TOKEN_LENGTH,
  TokenAuthority,
  mayAccessNode,
  tokenFileSchema,
} from './token-authority';
export type { Principal, TokenFile } from './token-authority';
