import {
  DRA_PLUGIN_TYPE,
  SUPPORTED_PLUGIN_VERSIONS,
  driverNameProblem,
} from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';
import { admissionError } from './admission-error';
import type { AdmittedEndpoint, EndpointPolicy } from './endpoint-policy';
import { negotiateVersion, unsupportedVersionsMessage } from './negotiate-version';
import type { PluginInfo, PluginProber } from './plugin-prober';

/** What the registration request says about the plugin. */
export interface DeclaredPlugin {
  /** Must match the plugin's own name when it serves the registration service. */
  driver?: string;
  /** Used only when the plugin does not serve the registration service. */
  supportedVersions?: readonly string[];
}

/** A plugin that passed every check, about to be stored. */
export interface AdmittedPlugin {
  driver: string;
  /** The plugin API version agreed on (`Registration.version`). */
  version: string;
  /** Where the plugin serves ResourcePublisher: the probed endpoint unless GetInfo named another. */
  endpoint: string;
  /** False when the plugin answered Unimplemented and the request's declaration was used. */
  servesRegistration: boolean;
}

/** What both ways of admitting a plugin share. */
interface AdmissionBase<T> {
  /** Checks an endpoint before it is stored: one GetInfo names, or one probed on its node. */
  policy: EndpointPolicy;
  /**
   * The plugin API versions accepted, most preferred first.
   * @defaultValue `SUPPORTED_PLUGIN_VERSIONS` (ResourcePublisher, then kubelet 1.30's `1.0.0`)
   */
  supportedVersions?: readonly string[];
  /**
   * Stores the registration. Runs after every check and before the plugin is told; if it
   * throws, the plugin is told the error and it is rethrown.
   */
  register: (plugin: AdmittedPlugin) => Promise<T>;
}

/** The API dials the plugin itself: GetInfo, checks, store, NotifyRegistrationStatus. */
export interface DialAdmission<T> extends AdmissionBase<T> {
  probedOnNode?: false;
  endpoint: AdmittedEndpoint;
  declared?: DeclaredPlugin;
  prober: PluginProber;
}

/**
 * An agent on the plugin's node (the node-mode watcher's discovery) has dialled it, asked
 * GetInfo, checked its socket's real path and will tell it the outcome: the API cannot reach a
 * socket on another node, nor see that node's file system. Nothing is dialled; the endpoint is
 * checked as written (a unix socket inside the allowed directories) and the version negotiated
 * from the declared list. The caller must have made sure that its principal is bound to the
 * registration's node.
 */
export interface ProbedOnNodeAdmission<T> extends AdmissionBase<T> {
  probedOnNode: true;
  endpoint: string;
  declared: Required<DeclaredPlugin>;
}

export type AdmitPluginOptions<T> = DialAdmission<T> | ProbedOnNodeAdmission<T>;

export interface AdmitPluginResult<T> {
  plugin: AdmittedPlugin;
  registered: T;
  /** Set when the plugin could not be told it was registered (the registration stands). */
  notifyError?: string;
}

/**
 * Registers a plugin as kubelet's plugin watcher does: dial, `GetInfo`, check the type, the
 * driver name and the versions, store, then `NotifyRegistrationStatus` — true, or false with
 * the reason, so that the driver can log why it was refused (kubelet tells it only of failed
 * checks; slicekeeper also of a failed GetInfo). Failures throw admission errors.
 */
export async function admitPlugin<T>(
  options: AdmitPluginOptions<T>,
): Promise<AdmitPluginResult<T>> {
  if (options.probedOnNode === true) return admitProbedOnNode(options);
  const session = await options.prober.connect(options.endpoint);
  try {
    let plugin: AdmittedPlugin;
    let registered: T;
    try {
      // A plugin too slow to answer GetInfo is still told why it was refused: its notify may
      // well get through, and the driver's log is where its operator looks first.
      plugin = await checkPlugin(await session.getInfo(), options);
      registered = await options.register(plugin);
    } catch (error) {
      await session
        .notify({ registered: false, error: errorMessage(error) })
        .catch(() => undefined);
      throw error;
    }
    try {
      await session.notify({ registered: true });
      return { plugin, registered };
    } catch (error) {
      return { plugin, registered, notifyError: errorMessage(error) };
    }
  } finally {
    session.close();
  }
}

/**
 * Admits a plugin an agent on its node probed: the endpoint checked lexically (its real path
 * was checked on the node, where the file system is), then the same checks of the declared
 * driver and versions as of a plugin without the registration service. Nobody is told here:
 * the agent tells the plugin.
 */
async function admitProbedOnNode<T>(
  options: ProbedOnNodeAdmission<T>,
): Promise<AdmitPluginResult<T>> {
  const checked = options.policy.check(options.endpoint);
  if (!checked.ok) throw admissionError(checked.code, checked.message);
  if (checked.parsed.kind !== 'unix') {
    throw admissionError(
      'endpoint-forbidden',
      `endpoint "${options.endpoint}": a plugin probed on its node must be a unix socket; a TCP endpoint is registered without probedOnNode, and the API dials it`,
    );
  }
  const checkedPlugin = await checkPlugin(undefined, {
    ...options,
    endpoint: { endpoint: options.endpoint },
  });
  // The agent found it through its registration service; only the API did not ask it.
  const plugin = { ...checkedPlugin, servesRegistration: true };
  return { plugin, registered: await options.register(plugin) };
}

/** What {@link checkPlugin} needs of either way of admitting. */
interface CheckOptions<T> extends AdmissionBase<T> {
  endpoint: { endpoint: string };
  declared?: DeclaredPlugin;
}

async function checkPlugin<T>(
  info: PluginInfo | undefined,
  options: CheckOptions<T>,
): Promise<AdmittedPlugin> {
  const supported = options.supportedVersions ?? SUPPORTED_PLUGIN_VERSIONS;
  const declared = options.declared ?? {};
  if (info === undefined) {
    if (declared.driver === undefined || declared.supportedVersions === undefined) {
      throw admissionError(
        'missing-plugin-info',
        'the plugin does not serve the registration service: the request must name its driver and supportedVersions',
      );
    }
  } else if (info.type !== DRA_PLUGIN_TYPE) {
    throw admissionError(
      'wrong-plugin-type',
      `the plugin is a "${info.type}", not a "${DRA_PLUGIN_TYPE}"`,
    );
  }
  const driver = info?.name ?? declared.driver ?? '';
  const problem = driverNameProblem(driver);
  if (problem !== undefined) {
    throw admissionError('invalid-driver-name', `driver name "${driver}": ${problem}`);
  }
  if (declared.driver !== undefined && declared.driver !== driver) {
    throw admissionError(
      'driver-mismatch',
      `the plugin is driver "${driver}", the request says "${declared.driver}"`,
    );
  }
  const pluginVersions = info?.supportedVersions ?? declared.supportedVersions ?? [];
  const version = negotiateVersion(pluginVersions, supported);
  if (version === undefined) {
    throw admissionError(
      'unsupported-versions',
      unsupportedVersionsMessage(pluginVersions, supported),
    );
  }
  let endpoint = options.endpoint.endpoint;
  const named = info?.endpoint ?? '';
  if (named !== '') {
    // kubelet accepts a bare socket path here; slicekeeper stores endpoints as URIs.
    const serviceEndpoint = named.startsWith('/') ? `unix://${named}` : named;
    if (serviceEndpoint !== endpoint)
      endpoint = (await options.policy.admit(serviceEndpoint)).endpoint;
  }
  return { driver, version, endpoint, servesRegistration: info !== undefined };
}
