/**
 * Admission policy of the registration API, kept out of the app so that it can be unit-tested:
 * who may call (static bearer tokens or Kubernetes identities by TokenReview, node binding,
 * SubjectAccessReview), which endpoints may be dialled (the allowlist,
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
  bearerTokenOf,
  mayAccessNode,
  tokenDigest,
  tokenFileSchema,
} from './token-authority';
export type { KubernetesUser, Principal, PrincipalScope, TokenFile } from './token-authority';
export { ExpiringCache } from './expiring-cache';
export type { ExpiringCacheOptions } from './expiring-cache';
export {
  KubernetesAuthenticator,
  KubernetesAuthorizer,
  NODE_NAME_CLAIM,
  PLUGINS_GROUP,
  PLUGINS_RESOURCE,
  expiryOf,
} from './kubernetes-identities';
export type {
  AccessReviewer,
  KubeAuthentication,
  KubeAuthorization,
  KubernetesAuthenticatorOptions,
  KubernetesAuthorizerOptions,
  PluginVerb,
  TokenReviewer,
} from './kubernetes-identities';
