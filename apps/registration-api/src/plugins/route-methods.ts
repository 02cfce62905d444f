/**
 * The methods each registered URL pattern answers, so that a request the router did not match
 * can be told apart: a path that exists with other methods (405 and `Allow`) or no path at all
 * (404). fastify's router answers 404 to both.
 */
export class RouteMethods {
  private readonly routes = new Map<string, { pattern: RegExp; methods: Set<string> }>();

  /** Records a route as fastify's `onRoute` hook sees it (`url` with its prefix). */
  add(url: string, methods: string | readonly string[]): void {
    const route = this.routes.get(url) ?? { pattern: compile(url), methods: new Set<string>() };
    for (const method of typeof methods === 'string' ? [methods] : methods) {
      route.methods.add(method.toUpperCase());
    }
    this.routes.set(url, route);
  }

  /** The methods some route answers on `path` (a query string is ignored), sorted. */
  allowed(path: string): string[] {
    const pathname = path.split('?', 1)[0] ?? '';
    const methods = new Set<string>();
    for (const route of this.routes.values()) {
      if (route.pattern.test(pathname)) for (const method of route.methods) methods.add(method);
    }
    return [...methods].sort();
  }
}

/**
 * A fastify URL pattern as a regular expression over a raw path: `:name` (with an optional
 * `(regex)`, not checked here) is one non-empty segment, `*` is the rest of the path, `::` a
 * colon; everything else is literal and case-sensitive, as fastify's router is by default.
 */
function compile(url: string): RegExp {
  let source = '';
  for (let i = 0; i < url.length; i++) {
    const char = url.charAt(i);
    if (char === ':' && url.charAt(i + 1) === ':') {
      source += ':';
      i++;
    } else if (char === ':') {
      while (/[\w-]/.test(url.charAt(i + 1))) i++;
      if (url.charAt(i + 1) === '(') i = closingParenthesis(url, i + 1);
      source += '[^/]+';
    } else if (char === '*') {
      source += '.*';
    } else {
      source += char.replace(/[.+?^${}()|[\]\\/]/g, '\\$&');
    }
  }
  return new RegExp(`^${source}$`);
}

function closingParenthesis(url: string, open: number): number {
  let depth = 0;
  for (let i = open; i < url.length; i++) {
    if (url.charAt(i) === '\\') i++;
    else if (url.charAt(i) === '(') depth++;
    else if (url.charAt(i) === ')' && --depth === 0) return i;
  }
  return url.length - 1;
}
