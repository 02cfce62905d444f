import { RouteMethods } from './route-methods';

function table(): RouteMethods {
  const routes = new RouteMethods();
  routes.add('/v1/plugins', 'GET');
  routes.add('/v1/plugins', 'HEAD');
  routes.add('/v1/plugins', 'POST');
  routes.add('/v1/plugins/:node/:driver', ['GET', 'HEAD']);
  routes.add('/v1/plugins/:node/:driver', 'DELETE');
  routes.add('/docs/static/*', ['GET', 'HEAD']);
  routes.add('/docs/static/index.html', 'GET');
  routes.add('/docs', 'GET');
  routes.add('/docs/', 'GET');
  return routes;
}

describe('RouteMethods', () => {
  it.each([
    ['a static path', '/v1/plugins', ['GET', 'HEAD', 'POST']],
    ['a path with parameters', '/v1/plugins/node-a/gpu.example.com', ['DELETE', 'GET', 'HEAD']],
    ['encoded parameters', '/v1/plugins/node%2Da/gpu', ['DELETE', 'GET', 'HEAD']],
    [
      'a wildcard, merged with the static route it covers',
      '/docs/static/index.html',
      ['GET', 'HEAD'],
    ],
    ['a wildcard below its prefix', '/docs/static/a/b.css', ['GET', 'HEAD']],
    ['a trailing slash the route has', '/docs/', ['GET']],
    ['a path with a query string', '/v1/plugins?limit=1', ['GET', 'HEAD', 'POST']],
  ])('lists the methods of %s, sorted', (_name, path, methods) => {
    expect(table().allowed(path)).toEqual(methods);
  });

  it.each([
    ['an unknown path', '/nowhere'],
    ['a path with a segment too many', '/v1/plugins/node-a/gpu/extra'],
    ['a path with a segment too few', '/v1/plugins/node-a'],
    ['an empty parameter', '/v1/plugins//gpu'],
    ['a trailing slash the route does not have', '/v1/plugins/'],
    ['another case', '/V1/plugins'],
  ])('lists nothing for %s', (_name, path) => {
    expect(table().allowed(path)).toEqual([]);
  });
});
