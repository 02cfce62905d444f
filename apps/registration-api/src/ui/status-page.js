// @ts-check
/**
 * The slicekeeper status page (served at /ui): a nodes × drivers grid of every registered key,
 * refreshed by polling the registration API's `GET /v1/plugins`.
 *
 * Polling, not server-sent events: the list endpoint already exists, is authenticated, rate
 * limited and paged, and answers from any API replica; an event stream would need a second,
 * long-lived endpoint, a change feed from Redis that nothing publishes today, and a token in its
 * URL (EventSource cannot send an Authorization header), where it would be logged. At one
 * request per 500 keys every 2 s, a page costs a few requests a second at most.
 *
 * The token comes from the URL fragment (`#token=…`, never sent to the server; removed from the
 * address bar at once) or the form, and is kept in sessionStorage: this tab only, gone when it
 * closes. Data is only ever written with textContent.
 */

/** Between the end of one refresh and the start of the next, ms. */
const POLL_INTERVAL_MS = 2000;
/** Keys per request (the API's maximum). */
const PAGE_LIMIT = 500;
/** Pages followed per refresh at most (50 000 keys): the grid is for people, not a dump. */
const MAX_PAGES = 100;
/** One request's bound, ms; an API that does not answer shows as unreachable. */
const REQUEST_TIMEOUT_MS = 10_000;
const TOKEN_STORAGE_KEY = 'slicekeeper.status-page.token';
/** Where a trace id links to, `{traceId}` standing for it (the API's TRACE_URL_TEMPLATE); '' for none. */
const TRACE_URL_TEMPLATE =
  document.querySelector('meta[name="slicekeeper-trace-url"]')?.getAttribute('content') ?? '';

/** Sync outcomes that need someone to act (see libs/contracts/src/status.ts). */
const PROBLEM_OUTCOMES = new Set(['invalid', 'corrupt', 'failed', 'node-missing']);
/** Stream states in which the driver's devices are not being published as it has them. */
const PROBLEM_STREAMS = new Set(['backoff', 'unimplemented', 'wiped']);

/** @typedef {'healthy' | 'pending' | 'problem'} Health */

/**
 * What the page uses of a `GET /v1/plugins` item (the API's `pluginStatusSchema`).
 * @typedef {{
 *   node: string,
 *   driver: string,
 *   registrations: { endpoint: string }[],
 *   stream?: {
 *     state: string, since: string, lastMessageAt?: string, reconnects: number,
 *     error?: string, unreachableSince?: string
 *   },
 *   snapshot?: {
 *     generation: number, receivedAt: string, devices: number, rejected?: string
 *   },
 *   sync?: {
 *     outcome: string, snapshotGeneration: number, slices: string[],
 *     pools: { name: string, generation: number, sliceCount: number, devices: number }[],
 *     error?: string, attempt: number, finishedAt: string, droppedFields?: string[],
 *     problems?: { field: string, message: string }[], problemsOmitted?: number, api?: string,
 *     taints?: {
 *       unreachable?: string, unhealthy: number, healthUnknown: number, notApplied?: string
 *     },
 *     traceId?: string
 *   }
 * }} PluginStatus
 */

/** @typedef {{ items: PluginStatus[], next?: string }} PluginList */

/**
 * Why a refresh failed.
 * @typedef {{ kind: 'unauthorized' }
 *   | { kind: 'forbidden', message: string }
 *   | { kind: 'rate-limited', retryAfterMs: number }
 *   | { kind: 'unavailable', message: string }} Failure
 */

const view = {
  summary: element('summary'),
  freshness: element('freshness'),
  message: element('message'),
  signIn: /** @type {HTMLFormElement} */ (element('sign-in')),
  tokenInput: /** @type {HTMLInputElement} */ (element('token')),
  status: element('status'),
  grid: /** @type {HTMLTableElement} */ (element('grid')),
  empty: element('empty'),
  forget: /** @type {HTMLButtonElement} */ (element('forget')),
};

/** Incremented when the token changes, so that an answer for the previous one is dropped. */
let session = 0;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let timer;
/** The session whose refresh is under way, or -1: one refresh at a time per session. */
let running = -1;
/**
 * When the shown data was read; undefined until the first successful refresh.
 * @type {Date | undefined}
 */
let shownAt;

view.signIn.addEventListener('submit', (event) => {
  event.preventDefault();
  const token = view.tokenInput.value.trim();
  view.tokenInput.value = '';
  if (token !== '') useToken(token);
});
view.forget.addEventListener('click', () => {
  forgetToken();
  showSignIn();
});
window.addEventListener('hashchange', () => {
  takeTokenFromFragment();
});
document.addEventListener('visibilitychange', () => {
  // A hidden tab does not poll; it catches up as soon as it is shown again.
  if (document.visibilityState === 'visible') void refresh(session);
});
if (!takeTokenFromFragment()) void refresh(session);

/**
 * @param {string} id
 * @returns {HTMLElement}
 */
function element(id) {
  const found = document.getElementById(id);
  if (found === null) throw new Error(`status page: no element #${id}`);
  return found;
}

/**
 * Moves a `#token=…` out of the address bar (and history) into sessionStorage.
 * @returns {boolean} whether there was one (and a refresh with it started)
 */
function takeTokenFromFragment() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const token = fragment.get('token')?.trim();
  if (token === undefined) return false;
  history.replaceState(null, '', `${location.pathname}${location.search}`);
  if (token === '') return false;
  useToken(token);
  return true;
}

/** @param {string} token */
function useToken(token) {
  sessionStorage.setItem(TOKEN_STORAGE_KEY, token);
  session++;
  view.message.hidden = true;
  void refresh(session);
}

function forgetToken() {
  sessionStorage.removeItem(TOKEN_STORAGE_KEY);
  session++;
  clearTimeout(timer);
  shownAt = undefined;
  view.grid.replaceChildren();
  view.status.hidden = true;
  view.summary.textContent = '';
  view.freshness.textContent = '';
}

/**
 * Reads every page of the list and shows it, then schedules the next refresh (after this one
 * ended: refreshes never overlap, and a slow API is not asked faster than it answers).
 * @param {number} forSession
 */
async function refresh(forSession) {
  if (running === forSession) return;
  clearTimeout(timer);
  const token = sessionStorage.getItem(TOKEN_STORAGE_KEY);
  if (token === null) {
    showSignIn();
    return;
  }
  if (document.visibilityState === 'hidden') return;
  running = forSession;
  /** @type {Awaited<ReturnType<typeof readAll>>} */
  let result;
  try {
    result = await readAll(token);
  } finally {
    if (running === forSession) running = -1;
  }
  if (forSession !== session) return;
  if ('items' in result) {
    try {
      show(result.items, result.truncated);
    } catch (error) {
      // A bug of this page, or data it does not know: say so, and keep refreshing.
      showProblem(`The page could not show the answer: ${errorText(error)}`);
    }
    schedule(POLL_INTERVAL_MS);
    return;
  }
  switch (result.failure.kind) {
    case 'unauthorized':
      forgetToken();
      showSignIn(
        'The token was refused (401): it is wrong, or no longer in the API’s token file. Enter an admin token.',
      );
      return;
    case 'forbidden':
      forgetToken();
      showSignIn(`The token may not read this (403): ${result.failure.message}`);
      return;
    case 'rate-limited':
      showProblem(
        `The API’s rate limit for this token was reached; retrying in ${Math.ceil(result.failure.retryAfterMs / 1000)} s.`,
      );
      schedule(Math.max(result.failure.retryAfterMs, POLL_INTERVAL_MS));
      return;
    case 'unavailable':
      showProblem(`The API could not be read: ${result.failure.message}. Retrying.`);
      schedule(POLL_INTERVAL_MS);
      return;
  }
}

/** @param {number} delayMs */
function schedule(delayMs) {
  // Two refreshes of one session can end close together (one started by the tab being shown
  // again): the later one's timer replaces the other's, so that one loop stays.
  clearTimeout(timer);
  const forSession = session;
  timer = setTimeout(() => void refresh(forSession), delayMs);
}

/**
 * Every page of `GET /v1/plugins`, following `next`.
 * @param {string} token
 * @returns {Promise<{ items: PluginStatus[], truncated: boolean } | { failure: Failure }>}
 */
async function readAll(token) {
  /** @type {PluginStatus[]} */
  const items = [];
  /** @type {string | undefined} */
  let after;
  for (let page = 0; page < MAX_PAGES; page++) {
    const query = new URLSearchParams({ limit: String(PAGE_LIMIT) });
    if (after !== undefined) query.set('after', after);
    const answer = await get(`/v1/plugins?${query.toString()}`, token);
    if ('failure' in answer) return answer;
    if (!isPluginList(answer.body)) {
      return { failure: { kind: 'unavailable', message: 'the answer is not a list of plugins' } };
    }
    const list = answer.body;
    items.push(...list.items);
    if (list.next === undefined) return { items, truncated: false };
    after = list.next;
  }
  return { items, truncated: true };
}

/**
 * Enough of a check that a proxy's or an older API's answer gives a message, not a broken grid.
 * @param {unknown} body
 * @returns {body is PluginList}
 */
function isPluginList(body) {
  return (
    typeof body === 'object' &&
    body !== null &&
    'items' in body &&
    Array.isArray(body.items) &&
    body.items.every(
      (/** @type {unknown} */ item) =>
        typeof item === 'object' &&
        item !== null &&
        'node' in item &&
        typeof item.node === 'string' &&
        'driver' in item &&
        typeof item.driver === 'string' &&
        'registrations' in item &&
        Array.isArray(item.registrations),
    )
  );
}

/**
 * @param {string} path
 * @param {string} token
 * @returns {Promise<{ body: unknown } | { failure: Failure }>}
 */
async function get(path, token) {
  /** @type {Response} */
  let response;
  try {
    response = await fetch(path, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      cache: 'no-store',
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    return { failure: { kind: 'unavailable', message: errorText(error) } };
  }
  if (response.ok) {
    try {
      return { body: /** @type {unknown} */ (await response.json()) };
    } catch (error) {
      // Cut off, or a proxy's page instead of the API's answer.
      return {
        failure: { kind: 'unavailable', message: `unreadable answer: ${errorText(error)}` },
      };
    }
  }
  const message = await apiErrorMessage(response);
  switch (response.status) {
    case 401:
      return { failure: { kind: 'unauthorized' } };
    case 403:
      return { failure: { kind: 'forbidden', message } };
    case 429: {
      const seconds = Number(response.headers.get('retry-after'));
      const retryAfterMs = Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 10_000;
      return { failure: { kind: 'rate-limited', retryAfterMs } };
    }
    default:
      return { failure: { kind: 'unavailable', message: `${response.status} ${message}` } };
  }
}

/**
 * The `message` of the API's error body (`{ code, message, details }`), or the status text.
 * @param {Response} response
 * @returns {Promise<string>}
 */
async function apiErrorMessage(response) {
  try {
    const body = /** @type {unknown} */ (await response.json());
    if (typeof body === 'object' && body !== null && 'message' in body) {
      return String(body.message);
    }
  } catch {
    // Not JSON (a proxy's page): the status text says enough.
  }
  return response.statusText;
}

/** @param {unknown} error */
function errorText(error) {
  if (error instanceof DOMException && error.name === 'TimeoutError') {
    return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  }
  return error instanceof Error ? error.message : String(error);
}

/**
 * The form, with why it is shown when that is news (a refused token), else on its own.
 * @param {string} [text]
 */
function showSignIn(text) {
  view.message.textContent = text ?? '';
  view.message.hidden = text === undefined;
  view.signIn.hidden = false;
  view.forget.hidden = true;
  view.status.hidden = true;
  view.tokenInput.focus();
}

/**
 * A refresh failed; the last data stays, marked stale.
 * @param {string} text
 */
function showProblem(text) {
  view.message.textContent = text;
  view.message.hidden = false;
  document.body.classList.add('stale');
  view.freshness.textContent =
    shownAt === undefined ? 'No data yet.' : `Stale: showing data read at ${clock(shownAt)}.`;
}

/**
 * @param {PluginStatus[]} items
 * @param {boolean} truncated
 */
function show(items, truncated) {
  shownAt = new Date();
  const now = shownAt.getTime();
  view.signIn.hidden = true;
  view.forget.hidden = false;
  view.status.hidden = false;
  document.body.classList.remove('stale');
  view.message.hidden = !truncated;
  view.message.textContent = truncated
    ? `Showing the first ${MAX_PAGES * PAGE_LIMIT} keys only.`
    : '';

  const nodes = [...new Set(items.map((i) => i.node))].sort();
  const drivers = [...new Set(items.map((i) => i.driver))].sort();
  /** @type {Map<string, PluginStatus>} */
  const byKey = new Map(items.map((i) => [keyOf(i.node, i.driver), i]));

  const caption = view.grid.caption ?? view.grid.createCaption();
  const head = document.createElement('thead');
  const headRow = head.insertRow();
  headRow.append(cellElement('th', 'node \\ driver', 'corner', 'col'));
  for (const driver of drivers) headRow.append(cellElement('th', driver, 'driver', 'col'));
  const body = document.createElement('tbody');
  for (const node of nodes) {
    const row = body.insertRow();
    row.dataset['node'] = node;
    row.append(cellElement('th', node, 'node', 'row'));
    for (const driver of drivers) {
      const item = byKey.get(keyOf(node, driver));
      row.append(item === undefined ? absentCell(node, driver) : keyCell(item, now));
    }
  }
  view.grid.replaceChildren(caption, head, body);
  view.empty.hidden = items.length > 0;
  view.summary.textContent = summaryOf(items, nodes.length, drivers.length);
  view.freshness.textContent = `Updated ${clock(shownAt)}.`;
}

/**
 * @param {string} node
 * @param {string} driver
 */
function keyOf(node, driver) {
  return `${node}\u0000${driver}`;
}

/**
 * "12 keys (3 nodes × 2 drivers): 10 synced, 1 invalid, 1 not synced yet — 1 needs attention".
 * @param {PluginStatus[]} items
 * @param {number} nodes
 * @param {number} drivers
 */
function summaryOf(items, nodes, drivers) {
  /** @type {Map<string, number>} */
  const byOutcome = new Map();
  let problems = 0;
  for (const item of items) {
    const outcome = item.sync?.outcome ?? 'not synced yet';
    byOutcome.set(outcome, (byOutcome.get(outcome) ?? 0) + 1);
    if (healthOf(item) === 'problem') problems++;
  }
  const outcomes = [...byOutcome]
    .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
    .map(([outcome, count]) => `${count} ${outcome}`)
    .join(', ');
  const keys = `${items.length} ${plural(items.length, 'key')} (${plural(nodes, 'node', true)} × ${plural(drivers, 'driver', true)})`;
  const attention =
    problems === 0 ? 'no problems' : `${problems} ${problems === 1 ? 'needs' : 'need'} attention`;
  return items.length === 0 ? '0 keys' : `${keys}: ${outcomes} — ${attention}`;
}

/**
 * @param {number} count
 * @param {string} noun
 * @param {boolean} [withCount]
 */
function plural(count, noun, withCount = false) {
  const word = count === 1 ? noun : `${noun}s`;
  return withCount ? `${count} ${word}` : word;
}

/**
 * Healthy: synced and streaming. Problem: something a person must fix or look at (the driver's
 * data was refused, the API server refused, the stream is failing or gone). Pending: on its way
 * (connecting, retrying, removing, not synced yet).
 * @param {PluginStatus} item
 * @returns {Health}
 */
function healthOf(item) {
  const outcome = item.sync?.outcome;
  const stream = item.stream?.state;
  if (outcome !== undefined && PROBLEM_OUTCOMES.has(outcome)) return 'problem';
  if (stream !== undefined && PROBLEM_STREAMS.has(stream)) return 'problem';
  if (item.stream?.unreachableSince !== undefined) return 'problem';
  if (item.snapshot?.rejected !== undefined) return 'problem';
  if (outcome === 'synced' && stream === 'streaming') return 'healthy';
  return 'pending';
}

/** The text label beside the colour, so that the state never depends on colour alone. */
const HEALTH_LABELS = {
  healthy: '✓ healthy',
  pending: '… pending',
  problem: '✗ problem',
};

/**
 * @param {PluginStatus} item
 * @param {number} now
 */
function keyCell(item, now) {
  const health = healthOf(item);
  const cell = document.createElement('td');
  cell.className = `key key--${health}`;
  cell.dataset['node'] = item.node;
  cell.dataset['driver'] = item.driver;
  cell.dataset['health'] = health;
  cell.dataset['outcome'] = item.sync?.outcome ?? 'none';

  const heading = part('p', 'key__heading');
  heading.append(
    part('span', `badge badge--${health}`, HEALTH_LABELS[health]),
    part('span', 'key__outcome', item.sync?.outcome ?? 'not synced yet'),
  );
  cell.append(heading);

  const facts = document.createElement('dl');
  facts.className = 'facts';
  fact(facts, 'stream', streamFacts(item, now));
  fact(facts, 'snapshot', snapshotFacts(item, now));
  fact(facts, 'sync', syncFacts(item, now));
  // With tracing on: the trace to look up in Jaeger or Tempo for why the last sync went as it did.
  const traceId = item.sync?.traceId;
  if (traceId !== undefined) fact(facts, 'last sync trace', [traceLink(traceId)]);
  fact(facts, 'slices', slicesFacts(item));
  fact(facts, 'pools', poolFacts(item));
  fact(facts, 'endpoints', [
    list(
      item.registrations.map((r) => r.endpoint),
      'endpoints',
    ),
  ]);
  cell.append(facts);
  return cell;
}

/**
 * The trace id, linked to the tracing UI when the API names one (TRACE_URL_TEMPLATE). The id is
 * 32 hex digits (the API's schema), safe in a URL as it is.
 * @param {string} traceId
 * @returns {HTMLElement}
 */
function traceLink(traceId) {
  const id = part('code', 'trace-id', traceId);
  if (TRACE_URL_TEMPLATE === '') return id;
  const link = part('a', 'trace-link');
  link.href = TRACE_URL_TEMPLATE.replaceAll('{traceId}', traceId);
  link.target = '_blank';
  link.rel = 'noopener noreferrer';
  link.append(id);
  return link;
}

/**
 * @param {PluginStatus} item
 * @param {number} now
 * @returns {Node[]}
 */
function streamFacts(item, now) {
  const stream = item.stream;
  if (stream === undefined) return [text('no stream yet')];
  const facts = [
    line(
      `${stream.state} since ${when(stream.since, now)}` +
        (stream.reconnects > 0 ? ` · ${plural(stream.reconnects, 'reconnect', true)}` : ''),
    ),
  ];
  if (stream.unreachableSince !== undefined) {
    facts.push(line(`unreachable since ${when(stream.unreachableSince, now)}`, 'error'));
  }
  if (stream.error !== undefined) facts.push(line(stream.error, 'error'));
  return facts;
}

/**
 * @param {PluginStatus} item
 * @param {number} now
 * @returns {Node[]}
 */
function snapshotFacts(item, now) {
  const snapshot = item.snapshot;
  if (snapshot === undefined) return [text('none received yet')];
  const facts = [
    line(
      `generation ${snapshot.generation} · ${plural(snapshot.devices, 'device', true)} · received ${when(snapshot.receivedAt, now)}`,
    ),
  ];
  if (snapshot.rejected !== undefined) {
    facts.push(line(`rejected: ${snapshot.rejected}`, 'error'));
  }
  return facts;
}

/**
 * @param {PluginStatus} item
 * @param {number} now
 * @returns {Node[]}
 */
function syncFacts(item, now) {
  const sync = item.sync;
  if (sync === undefined) return [text('not synced yet')];
  const facts = [
    line(
      `${sync.outcome} (snapshot generation ${sync.snapshotGeneration}) at ${when(sync.finishedAt, now)}` +
        (sync.attempt > 1 ? ` · attempt ${sync.attempt}` : ''),
    ),
  ];
  const problems = sync.problems ?? [];
  // The error of an invalid inventory repeats its problems: listed one by one, they say more.
  if (sync.error !== undefined && problems.length === 0) facts.push(line(sync.error, 'error'));
  if (problems.length > 0) {
    const entries = part('ul', 'problems');
    for (const problem of problems) {
      const entry = document.createElement('li');
      entry.append(
        part('code', 'field', problem.field),
        text(`: ${withoutPrefix(problem.message, `${problem.field}: `)}`),
      );
      entries.append(entry);
    }
    if (sync.problemsOmitted !== undefined) {
      entries.append(part('li', 'more', `… and ${sync.problemsOmitted} more`));
    }
    facts.push(entries);
  }
  if (sync.droppedFields !== undefined && sync.droppedFields.length > 0) {
    facts.push(line(`dropped by the API server: ${sync.droppedFields.join(', ')}`, 'warning'));
  }
  const taints = sync.taints;
  if (taints !== undefined) {
    const parts = [];
    if (taints.unreachable !== undefined) parts.push(`unreachable ${taints.unreachable}`);
    if (taints.unhealthy > 0) parts.push(`${taints.unhealthy} unhealthy`);
    if (taints.healthUnknown > 0) parts.push(`${taints.healthUnknown} health unknown`);
    if (parts.length > 0) facts.push(line(`taints: ${parts.join(' · ')}`, 'warning'));
    if (taints.notApplied !== undefined) {
      facts.push(line(`not tainted: ${taints.notApplied}`, 'warning'));
    }
  }
  if (sync.api !== undefined) facts.push(line(sync.api, 'quiet'));
  return facts;
}

/**
 * A problem's message often begins with its field path, which the page shows beside it already.
 * @param {string} message
 * @param {string} prefix
 */
function withoutPrefix(message, prefix) {
  return message.startsWith(prefix) ? message.slice(prefix.length) : message;
}

/**
 * @param {PluginStatus} item
 * @returns {Node[]}
 */
function slicesFacts(item) {
  const slices = item.sync?.slices ?? [];
  if (slices.length === 0) return [text('none published')];
  return [list(slices, 'slices')];
}

/**
 * @param {PluginStatus} item
 * @returns {Node[]}
 */
function poolFacts(item) {
  const pools = item.sync?.pools ?? [];
  if (pools.length === 0) return [text('none')];
  return [
    list(
      pools.map(
        (pool) =>
          `${pool.name === '' ? '(unnamed)' : pool.name}: generation ${pool.generation} · ${plural(pool.sliceCount, 'slice', true)} · ${plural(pool.devices, 'device', true)}`,
      ),
      'pools',
    ),
  ];
}

/**
 * @param {string} node
 * @param {string} driver
 */
function absentCell(node, driver) {
  const cell = part('td', 'key key--absent', 'not registered');
  cell.dataset['node'] = node;
  cell.dataset['driver'] = driver;
  return cell;
}

/**
 * @param {HTMLDListElement} facts
 * @param {string} term
 * @param {Node[]} details
 */
function fact(facts, term, details) {
  const description = document.createElement('dd');
  description.append(...details);
  facts.append(part('dt', '', term), description);
}

/**
 * @param {'th'} tag
 * @param {string} content
 * @param {string} className
 * @param {'row' | 'col'} scope
 */
function cellElement(tag, content, className, scope) {
  const cell = part(tag, className, content);
  cell.scope = scope;
  return cell;
}

/**
 * An element with a class and, optionally, its text (always as text, never as markup).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {string} className
 * @param {string} [content]
 * @returns {HTMLElementTagNameMap[K]}
 */
function part(tag, className, content) {
  const created = document.createElement(tag);
  if (className !== '') created.className = className;
  if (content !== undefined) created.textContent = content;
  return created;
}

/** @param {string} content */
function text(content) {
  return document.createTextNode(content);
}

/**
 * @param {string} content
 * @param {'error' | 'warning' | 'quiet'} [kind]
 */
function line(content, kind) {
  return part('span', kind === undefined ? 'line' : `line line--${kind}`, content);
}

/**
 * @param {string[]} entries
 * @param {string} className
 */
function list(entries, className) {
  const created = part('ul', className);
  for (const entry of entries) created.append(part('li', '', entry));
  return created;
}

/**
 * "14:02:11 (35 s ago)"
 * @param {string} iso
 * @param {number} now
 */
function when(iso, now) {
  const at = new Date(iso);
  return `${clock(at)} (${age(now - at.getTime())})`;
}

/** @param {Date} at */
function clock(at) {
  return at.toLocaleTimeString([], {
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
  });
}

/** @param {number} ms */
function age(ms) {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ago`;
  return `${Math.floor(seconds / 86_400)} d ago`;
}
