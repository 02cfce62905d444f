/**
 * What discovery must do about one entry of the registration directory, from what is there
 * (`present`: the socket's identity, which changes when the socket is replaced) and what was
 * registered for it (`registered`: the identity it was registered as). Pure: the one decision of
 * {@link PluginDiscovery}, table-tested.
 *
 * - `register`: a socket not registered yet, or replaced since (a restarted driver: kubelet
 *   registers it again, as its socket's timestamp changed);
 * - `deregister`: the socket went, its registration is still there;
 * - `none`: registered as it is, or refused as it is (a refusal is not retried until the socket
 *   is replaced);
 * - `forget`: nothing there and nothing registered.
 */
export type SocketAction = 'register' | 'deregister' | 'none' | 'forget';

export interface SocketFacts {
  /** The socket's identity now; undefined when it is gone. */
  present: string | undefined;
  /** The identity it was last registered as; undefined when it is not registered. */
  registered: string | undefined;
  /** The identity the policy or the plugin's own answer refused; not tried again. */
  refused: string | undefined;
}

export function planSocket({ present, registered, refused }: SocketFacts): SocketAction {
  if (present === undefined) return registered === undefined ? 'forget' : 'deregister';
  if (present === registered || present === refused) return 'none';
  return 'register';
}
