/** A field of an object, in the API's field-path syntax: `spec.devices[3].taints`. */
export interface FieldRef {
  readonly path: string;
}

/**
 * A copy of `object` without the fields at `fields` (paths as the API server names them, e.g.
 * `spec.devices[3].taints`, `spec.sharedCounters`). A path that does not exist is ignored.
 */
export function withoutFields<T extends object>(object: T, fields: readonly FieldRef[]): T {
  const copy = structuredClone(object);
  for (const { path } of fields) {
    const steps = parsePath(path);
    const last = steps.pop();
    if (last === undefined) continue;
    let parent: unknown = copy;
    for (const step of steps) parent = child(parent, step);
    if (parent !== null && typeof parent === 'object') Reflect.deleteProperty(parent, last);
  }
  return copy;
}

function child(value: unknown, step: string | number): unknown {
  if (value === null || typeof value !== 'object') return undefined;
  return (value as Record<string | number, unknown>)[step];
}

/**
 * `spec.devices[3].capacity[example.com/x].requestPolicy` →
 * `['spec', 'devices', 3, 'capacity', 'example.com/x', 'requestPolicy']`: a bracket holds a list
 * index (digits) or a map key (anything but `]`, dots included). A path that does not parse
 * gives no steps.
 */
function parsePath(path: string): (string | number)[] {
  const steps: (string | number)[] = [];
  const token = /([^.[\]]+)|\[([^\]]*)\]|\./gy;
  let expectName = true;
  while (token.lastIndex < path.length) {
    const at = token.lastIndex;
    const match = token.exec(path);
    if (match === null || match.index !== at) return [];
    const [whole, name, bracket] = match;
    if (whole === '.') {
      expectName = true;
    } else if (name !== undefined) {
      if (!expectName) return [];
      steps.push(name);
      expectName = false;
    } else if (bracket !== undefined) {
      steps.push(/^\d+$/.test(bracket) ? Number(bracket) : bracket);
    }
  }
  return steps;
}
