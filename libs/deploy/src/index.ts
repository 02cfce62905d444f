export { describeObject, parseKubeObjects, renderKustomization } from './kube-object';
export type { KubeObject } from './kube-object';
export { unknownFields, validateKubeObject } from './validate-kube-object';
export { dockerfileStages } from './dockerfile-stages';
export type { DockerfileStage } from './dockerfile-stages';
