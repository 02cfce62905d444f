// Completes package-lock.json after `npm install`.
//
// The npm registry reachable from our machines serves only the linux-x64 builds of packages
// that ship native binaries (buf, msgpackr-extract, unrs-resolver, ...). `npm install` silently
// leaves the other platforms' optional packages out of the lockfile, and `npm ci` then rejects
// the lockfile as out of sync. This adds each missing optional package as an entry with its
// pinned version, so that `npm ci` accepts the lockfile here (where it skips them) and installs
// them on other platforms. Run `npm run lockfile:complete` after every dependency change.
import { readFileSync, writeFileSync } from 'node:fs';

const path = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(path, 'utf8'));
const packages = lock.packages;
const added = [];

for (const [location, entry] of Object.entries(packages)) {
  for (const [name, range] of Object.entries(entry.optionalDependencies ?? {})) {
    const nested = `${location}/node_modules/${name}`;
    const hoisted = `node_modules/${name}`;
    if (packages[nested] !== undefined || packages[hoisted] !== undefined) continue;
    if (!/^\d+\.\d+\.\d+(-[\w.]+)?$/.test(range)) {
      console.error(`${name}@${range} (wanted by ${location}) is not pinned: add it by hand`);
      process.exitCode = 1;
      continue;
    }
    packages[hoisted] = {
      version: range,
      ...(entry.dev === true ? { dev: true } : {}),
      optional: true,
    };
    added.push(`${name}@${range}`);
  }
}

lock.packages = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) =>
    a === '' ? -1 : b === '' ? 1 : a.localeCompare(b, 'en'),
  ),
);
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(
  `package-lock.json: ${added.length} missing optional packages added${added.length > 0 ? `: ${added.join(', ')}` : ''}`,
);
