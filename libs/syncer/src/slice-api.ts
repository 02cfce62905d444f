import type { SliceKey } from '@slicekeeper/contracts';
import type { ResourceSlice, StoredResourceSlice } from '@slicekeeper/slices';

/**
 * What the syncer needs from the Kubernetes API (implemented by `KubeSliceClient` in
 * libs/kube). Every method throws only classified slicekeeper errors.
 */
export interface SliceApi {
  /** The key's managed slices. */
  listSlices(key: SliceKey): Promise<StoredResourceSlice[]>;
  /** Every managed slice of the cluster, page by page. */
  listManagedSlices(pageSize?: number): AsyncIterable<StoredResourceSlice[]>;
  /**
   * The Node's UID, or undefined when it does not exist; possibly cached, unless older than
   * `maxAgeMs`.
   */
  getNodeUid(node: string, options?: { maxAgeMs?: number }): Promise<string | undefined>;
  forgetNode(node: string): void;
  createSlice(slice: ResourceSlice): Promise<StoredResourceSlice>;
  updateSlice(slice: StoredResourceSlice): Promise<StoredResourceSlice>;
  /** Deletes with preconditions; an already deleted slice is success. */
  deleteSlice(target: { name: string; uid: string; resourceVersion: string }): Promise<void>;
}
