/**
 * `owesSync` of `@slicekeeper/contracts` in Lua, for scripts that decide inside Redis whether a
 * key's stored snapshot still owes a sync: `owes_sync(stored, synced)`, where `synced` is nil when
 * no sync has finished (or the record predates `RedisKeys.syncedGeneration`). The one mirror of
 * the rule; `owes-sync-lua.int.spec.ts` checks that both agree on a table of cases.
 */
export const OWES_SYNC_LUA = `
local function owes_sync(stored, synced)
  return synced == nil or synced < stored
end
`;
