import type { SliceKey } from '@slicekeeper/contracts';
import type { ResourceSlice, StoredResourceSlice } from '@slicekeeper/slices';

/** A slice to delete, with the preconditions that make a stale delete fail instead of land. */
export interface SliceTarget {
  name: string;
  uid: string;
  resourceVersion: string;
}

/**
 * The syncer's view of the cluster: watch-fed caches of the managed slices and of the Nodes
 * (`ClusterCache` in libs/kube), overlaid with the objects our own writes returned until the
 * watch delivers them (a mutation cache, as upstream's resourceslice controller keeps).
 */
export interface ClusterView {
  /** The key's managed slices. */
  slicesOf(key: SliceKey): StoredResourceSlice[];
  /** The Node's UID; undefined when no such Node exists. */
  nodeUid(node: string): string | undefined;
  /** What a create or update returned: it wins over the cache until the watch catches up. */
  recordWrite(slice: StoredResourceSlice): void;
  /**
   * A slice we delete: hidden from the view even before the watch says so. Recorded before the
   * call, since the watch may deliver the deletion before the API server's answer.
   */
  recordDelete(target: SliceTarget): void;
  /** A recorded delete the API server refused: the slice is shown again. */
  forgetDelete(name: string): void;
}

/**
 * The writes the syncer makes to the Kubernetes API (`KubeSliceClient` in libs/kube). Every
 * method throws only classified slicekeeper errors.
 */
export interface SliceApi {
  /**
   * The key's managed slices, read from the API server: only after a write found the view
   * stale (a 409), when waiting for the watch would cost a round of backoff.
   */
  listSlices(key: SliceKey): Promise<StoredResourceSlice[]>;
  createSlice(slice: ResourceSlice): Promise<StoredResourceSlice>;
  updateSlice(slice: StoredResourceSlice): Promise<StoredResourceSlice>;
  /** Deletes with preconditions; an already deleted slice is success. */
  deleteSlice(target: SliceTarget): Promise<void>;
}
