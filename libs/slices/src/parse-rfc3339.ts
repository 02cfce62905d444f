/**
 * RFC 3339 timestamps as Kubernetes writes them (`metav1.Time`, e.g. a taint's `timeAdded`).
 * `Date.parse` is not used because it also accepts other formats that the API server rejects.
 */
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:Z|([+-])(\d{2}):(\d{2}))$/;

/** Milliseconds since the epoch, or undefined when `text` is not an RFC 3339 time. */
export function parseRfc3339(text: string): number | undefined {
  const match = RFC3339.exec(text);
  if (match === null) return undefined;
  const [
    ,
    year,
    month,
    day,
    hour,
    minute,
    second,
    fraction,
    offsetSign,
    offsetHours,
    offsetMinutes,
  ] = match;
  const [y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0] = [year, month, day, hour, minute, second].map(
    Number,
  );
  if (mo < 1 || mo > 12 || h > 23 || mi > 59 || s > 59) return undefined;
  const midnight = Date.UTC(y, mo - 1, d);
  // Date.UTC rolls 31 February over into March; a real date survives the round trip.
  if (new Date(midnight).getUTCDate() !== d || d < 1) return undefined;
  let millis = midnight + ((h * 60 + mi) * 60 + s) * 1000;
  if (fraction !== undefined) millis += Number(`0.${fraction}`) * 1000;
  if (offsetSign !== undefined) {
    const offsetH = Number(offsetHours);
    const offsetM = Number(offsetMinutes);
    if (offsetH > 23 || offsetM > 59) return undefined;
    const offset = (offsetH * 60 + offsetM) * 60_000;
    millis += offsetSign === '+' ? -offset : offset;
  }
  return millis;
}
