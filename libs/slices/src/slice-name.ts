/**
 * ResourceSlice names, as upstream's controller writes them:
 * `generateName = <index in hex>-<driver>-<node>-`. The index comes first so that the
 * scheduler, which tries slices in name order, follows the driver's slice order, and so that an
 * existing slice can be matched back to the desired slice it publishes without reading it.
 */

/** Shortest index prefix (upstream `resourceSliceIndexMinLength`). */
export const SLICE_INDEX_MIN_LENGTH = 5;

/**
 * Hex digits of the index prefix for a pool of `sliceCount` slices: enough for the highest
 * index, at least 5. All slices of a pool share one length, so that names sort in index order.
 */
export function sliceIndexLength(sliceCount: number): number {
  const highest = Math.max(sliceCount - 1, 0);
  return Math.max(SLICE_INDEX_MIN_LENGTH, highest.toString(16).length);
}

/** `index` as `length` lowercase hex digits. */
export function encodeSliceIndex(index: number, length: number): string {
  return index.toString(16).padStart(length, '0');
}

/**
 * The index a slice name starts with, or undefined when the name has no index prefix of
 * exactly `length` hex digits followed by `-` (upstream `decodeIndex`): such a slice was named
 * by an older layout (random names, or fewer slices) and is obsolete.
 */
export function decodeSliceIndex(name: string, length: number): number | undefined {
  if (name.length <= length || name.charCodeAt(length) !== 0x2d /* - */) return undefined;
  let index = 0;
  for (let i = 0; i < length; i++) {
    const code = name.charCodeAt(i);
    let digit: number;
    if (code >= 0x30 && code <= 0x39) digit = code - 0x30;
    else if (code >= 0x61 && code <= 0x66) digit = code - 0x61 + 10;
    else return undefined;
    index = index * 16 + digit;
  }
  return index;
}

export interface SliceGenerateNameOptions {
  index: number;
  /** From {@link sliceIndexLength}. */
  indexLength: number;
  driver: string;
  /** The key's node; empty for a cluster-scoped pool, which then has no node part. */
  node: string;
}

/** `<index>-<driver>-<node>-`, or `<index>-<driver>-` without a node (upstream, no owner). */
export function sliceGenerateName(options: SliceGenerateNameOptions): string {
  const prefix = `${encodeSliceIndex(options.index, options.indexLength)}-${options.driver}-`;
  return options.node === '' ? prefix : `${prefix}${options.node}-`;
}
