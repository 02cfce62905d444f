export { describeObject, parseKubeObjects, renderKustomization } from './kube-object';
export type { KubeObject } from './kube-object';
export { unknownFields, validateKubeObject } from './validate-kube-object';
export { dockerfileStages } from './dockerfile-stages';
export type { DockerfileStage } from './dockerfile-stages';
export { interpolateCompose, interpolateComposeFile, parseEnvFile } from './interpolate-compose';
export type { ComposeVariables } from './interpolate-compose';
