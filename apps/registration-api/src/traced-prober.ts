import { ATTR_NETWORK_TRANSPORT, ATTR_RPC_STATUS_CODE } from '@opentelemetry/semantic-conventions';
import type { AdmittedEndpoint, PluginProber, PluginSession } from '@slicekeeper/admission';
import { parseEndpoint } from '@slicekeeper/proto';
import {
  ATTR_RPC_METHOD,
  ATTR_RPC_SYSTEM_NAME,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_SLICEKEEPER_DRIVER,
  ATTR_SLICEKEEPER_OUTCOME,
  SpanKind,
} from '@slicekeeper/telemetry';
import type { Span, Tracing } from '@slicekeeper/telemetry';
import { failSpanBounded } from './span-failure';

/** The registration service's methods, fully qualified as the conventions' `rpc.method`. */
export const GET_INFO_METHOD = 'pluginregistration.Registration/GetInfo';
export const NOTIFY_METHOD = 'pluginregistration.Registration/NotifyRegistrationStatus';

/**
 * The prober, with a CLIENT span per call to the plugin, named by its RPC method as
 * OpenTelemetry's RPC conventions say. The first `GetInfo` span begins with the dial, so a
 * plugin that cannot be reached is a failed `GetInfo` (error.type `plugin-unreachable`) and a
 * slow connection shows in its duration; a plugin without the registration service is a
 * `GetInfo` answered `UNIMPLEMENTED`, which is no failure.
 */
export function tracedProber(prober: PluginProber, tracing: Tracing): PluginProber {
  return {
    connect: async (endpoint) => {
      let dial: Span | undefined = startCall(tracing, GET_INFO_METHOD, endpoint);
      let session: PluginSession;
      try {
        session = await prober.connect(endpoint);
      } catch (error) {
        failSpanBounded(dial, error);
        dial.end();
        throw error;
      }
      return {
        getInfo: async () => {
          const span = dial ?? startCall(tracing, GET_INFO_METHOD, endpoint);
          dial = undefined;
          try {
            const info = await session.getInfo();
            span.setAttribute(ATTR_RPC_STATUS_CODE, info === undefined ? 'UNIMPLEMENTED' : 'OK');
            if (info !== undefined) span.setAttribute(ATTR_SLICEKEEPER_DRIVER, info.name);
            return info;
          } catch (error) {
            failSpanBounded(span, error);
            throw error;
          } finally {
            span.end();
          }
        },
        notify: async (outcome) => {
          const span = startCall(tracing, NOTIFY_METHOD, endpoint);
          span.setAttribute(
            ATTR_SLICEKEEPER_OUTCOME,
            outcome.registered ? 'registered' : 'refused',
          );
          try {
            await session.notify(outcome);
            span.setAttribute(ATTR_RPC_STATUS_CODE, 'OK');
          } catch (error) {
            failSpanBounded(span, error);
            throw error;
          } finally {
            span.end();
          }
        },
        close: () => {
          // A session closed before its GetInfo: the dial was all there was.
          dial?.end();
          dial = undefined;
          session.close();
        },
      };
    },
  };
}

function startCall(tracing: Tracing, method: string, endpoint: AdmittedEndpoint): Span {
  return tracing.start(method, {
    kind: SpanKind.CLIENT,
    attributes: {
      [ATTR_RPC_SYSTEM_NAME]: 'grpc',
      [ATTR_RPC_METHOD]: method,
      ...serverAttributes(endpoint.endpoint),
    },
  });
}

/**
 * Where the plugin is, as the conventions say it: the socket path for a unix socket, the name
 * and port as registered for TCP (the conventions prefer the name to the address it resolved to).
 */
function serverAttributes(endpoint: string) {
  const parsed = parseEndpoint(endpoint);
  if (typeof parsed === 'string') return {};
  return parsed.kind === 'unix'
    ? { [ATTR_SERVER_ADDRESS]: parsed.path, [ATTR_NETWORK_TRANSPORT]: 'unix' }
    : {
        [ATTR_SERVER_ADDRESS]: parsed.host,
        [ATTR_SERVER_PORT]: parsed.port,
        [ATTR_NETWORK_TRANSPORT]: 'tcp',
      };
}
