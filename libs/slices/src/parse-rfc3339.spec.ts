import { parseRfc3339 } from './parse-rfc3339';

describe('parseRfc3339', () => {
  const valid: [name: string, text: string, millis: number][] = [
    ['utc', '2025-01-01T00:00:00Z', Date.UTC(2025, 0, 1)],
    ['fraction', '2025-01-01T00:00:00.250Z', Date.UTC(2025, 0, 1) + 250],
    ['nanoseconds', '2025-01-01T00:00:00.123456789Z', Date.UTC(2025, 0, 1) + 123.456789],
    ['positive-offset', '2025-01-01T02:00:00+02:00', Date.UTC(2025, 0, 1)],
    ['negative-offset', '2024-12-31T19:30:00-04:30', Date.UTC(2025, 0, 1)],
    ['leap-day', '2024-02-29T00:00:00Z', Date.UTC(2024, 1, 29)],
  ];

  it.each(valid)('%s: %s', (_, text, millis) => {
    expect(parseRfc3339(text)).toBeCloseTo(millis, 3);
  });

  const invalid: [name: string, text: string][] = [
    ['no-zone', '2025-01-01T00:00:00'],
    ['space-separator', '2025-01-01 00:00:00Z'],
    ['date-only', '2025-01-01'],
    ['february-30', '2025-02-30T00:00:00Z'],
    ['month-13', '2025-13-01T00:00:00Z'],
    ['hour-24', '2025-01-01T24:00:00Z'],
    ['free-text', 'yesterday'],
  ];

  it.each(invalid)('%s: rejects %s', (_, text) => {
    expect(parseRfc3339(text)).toBeUndefined();
  });
});
