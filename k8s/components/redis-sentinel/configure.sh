# Init container of each Redis pod (k8s/components/redis-sentinel): writes the pod's redis.conf
# and sentinel.conf before either server starts. Every pod runs a Redis and a Sentinel and is
# known by its stable name <pod>.<headless service>, which both announce instead of the pod IP.
#
# Which Redis is the master: whatever the Sentinels already running say (after a failover it is
# no longer the seed), else the seed (SEED_MASTER, the first pod) when none answers, i.e. on the
# first start or after every pod was down. This pod becomes a replica of the master unless it
# is the master.
#
# Environment: REDIS_SENTINELS and REDIS_SENTINEL_NAME (the services' own settings),
# HEADLESS_SERVICE, SEED_MASTER, SENTINEL_QUORUM; REDIS_CONF and SENTINEL_CONF (output files).
set -eu

self="$(hostname).${HEADLESS_SERVICE}"
name="${REDIS_SENTINEL_NAME}"
master=""
master_port=6379

for sentinel in $(printf '%s' "${REDIS_SENTINELS}" | tr ',' ' '); do
  host="${sentinel%:*}"
  port="${sentinel##*:}"
  [ "${host}" = "${self}" ] && continue
  # Two lines, host and port, from a Sentinel that knows the master; anything else is no answer.
  # shellcheck disable=SC2046
  set -- $(timeout 5 redis-cli -h "${host}" -p "${port}" --raw \
    sentinel get-master-addr-by-name "${name}" 2>/dev/null || true)
  if [ "$#" -eq 2 ] && [ "$2" -eq "$2" ] 2>/dev/null; then
    master="$1"
    master_port="$2"
    echo "configure: sentinel ${host} names ${master} the master"
    break
  fi
done

if [ -z "${master}" ]; then
  master="${SEED_MASTER}"
  echo "configure: no sentinel answered, starting from the seed ${master}"
fi

# Sentinel refuses to start when a host it is given does not resolve yet. The pods' names are
# published before they are ready (publishNotReadyAddresses), but only once they have an IP.
tries=0
until getent hosts "${master}" >/dev/null 2>&1; do
  tries=$((tries + 1))
  if [ "${tries}" -ge 60 ]; then
    echo "configure: ${master} does not resolve" >&2
    exit 1
  fi
  sleep 1
done

{
  echo "replica-announce-ip ${self}"
  if [ "${master}" != "${self}" ]; then echo "replicaof ${master} ${master_port}"; fi
} >"${REDIS_CONF}"

cat >"${SENTINEL_CONF}" <<CONF
port 26379
sentinel resolve-hostnames yes
sentinel announce-hostnames yes
sentinel announce-ip ${self}
sentinel monitor ${name} ${master} ${master_port} ${SENTINEL_QUORUM}
sentinel down-after-milliseconds ${name} 5000
sentinel failover-timeout ${name} 60000
sentinel parallel-syncs ${name} 1
CONF

echo "configure: ${self} starts as $([ "${master}" = "${self}" ] && echo master || echo "replica of ${master}")"
