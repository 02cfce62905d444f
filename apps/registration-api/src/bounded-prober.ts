import type { PluginProber } from '@slicekeeper/admission';
import { TransientError, errorMessage } from '@slicekeeper/errors';
import { boundedText } from './bounded-text';

/**
 * The prober, with what a plugin answers to `NotifyRegistrationStatus` when it fails escaped and
 * bounded: that text only reaches the API's log ("plugin not told of its registration"), which
 * must stay one safe line. (GetInfo failures are admission errors, bounded where the error
 * handler answers and logs them.)
 */
export function boundedProber(prober: PluginProber): PluginProber {
  return {
    connect: async (endpoint) => {
      const session = await prober.connect(endpoint);
      return {
        getInfo: () => session.getInfo(),
        notify: (outcome) =>
          session.notify(outcome).catch((error: unknown) => {
            throw new TransientError(boundedText(errorMessage(error)), { cause: error });
          }),
        close: () => {
          session.close();
        },
      };
    },
  };
}
