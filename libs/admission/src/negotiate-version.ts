/**
 * Picks the ResourcePublisher version to speak with a plugin: the first version in the plugin's
 * list (its order of preference) that slicekeeper supports too, as kubelet does. Returns
 * `undefined` when there is none; {@link unsupportedVersionsMessage} then says why.
 */
export function negotiateVersion(
  pluginVersions: readonly string[],
  supported: readonly string[],
): string | undefined {
  return pluginVersions.find((version) => supported.includes(version));
}

/** Names both lists, so that whoever reads the error can tell which side must change. */
export function unsupportedVersionsMessage(
  pluginVersions: readonly string[],
  supported: readonly string[],
): string {
  const list = (versions: readonly string[]) =>
    versions.length === 0 ? '(none)' : versions.map((v) => `"${v}"`).join(', ');
  return `none of the plugin's supported versions [${list(pluginVersions)}] is supported by slicekeeper [${list(supported)}]`;
}
