import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';

/** A Kubernetes object as kustomize renders it. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

function isKubeObject(value: unknown): value is KubeObject {
  if (typeof value !== 'object' || value === null) return false;
  const { apiVersion, kind, metadata } = value as Record<string, unknown>;
  return (
    typeof apiVersion === 'string' &&
    typeof kind === 'string' &&
    typeof metadata === 'object' &&
    metadata !== null &&
    typeof (metadata as Record<string, unknown>)['name'] === 'string'
  );
}

/** Parses a multi-document YAML stream of Kubernetes objects; throws on anything else. */
export function parseKubeObjects(text: string): KubeObject[] {
  return parseAllDocuments(text)
    .map((document) => {
      if (document.errors.length > 0) throw new Error(document.errors.map(String).join('\n'));
      return document.toJS() as unknown;
    })
    .filter((value) => value !== null)
    .map((value, index) => {
      if (!isKubeObject(value)) throw new Error(`document ${index} is not a Kubernetes object`);
      return value;
    });
}

/** `kubectl kustomize <dir>` (kustomize built into kubectl), parsed. */
export async function renderKustomization(
  dir: string,
  kubectl = '/usr/bin/kubectl',
): Promise<KubeObject[]> {
  const { stdout } = await promisify(execFile)(kubectl, ['kustomize', dir], {
    maxBuffer: 16 * 1024 * 1024,
  });
  return parseKubeObjects(stdout);
}

/** `Kind/namespace/name`, for messages. */
export function describeObject(object: KubeObject): string {
  return [object.kind, object.metadata.namespace, object.metadata.name]
    .filter((part) => part !== undefined)
    .join('/');
}
