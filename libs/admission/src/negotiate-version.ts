/**
 * Picks the plugin API version to speak with a plugin: the first version of slicekeeper's list
 * (its order of preference, `SUPPORTED_PLUGIN_VERSIONS`) that the plugin lists too. The
 * plugin's order does not matter: a driver that offers both ResourcePublisher and kubelet 1.30's
 * `1.0.0` is streamed with ResourcePublisher, which carries more. Returns `undefined` when there
 * is none; {@link unsupportedVersionsMessage} then says why.
 */
export function negotiateVersion(
  pluginVersions: readonly string[],
  supported: readonly string[],
): string | undefined {
  return supported.find((version) => pluginVersions.includes(version));
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
